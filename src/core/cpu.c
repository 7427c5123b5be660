#include "core/cpu.h"
#include "ptreg/device.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The CPU and the environment stay put while the process runs, so the best
 * ISA and the default (the best capped by env PTREG_ISA) are found on first
 * use and kept: cpu_isa_level runs before every kernel call. -1 until then;
 * threads that meet the first use together store the same value. */
static atomic_int best_isa = -1, default_isa = -1;
/* cpu_set_isa's cap, which replaces the environment's; -1: none. */
static atomic_int isa_cap = -1;

const char *isa_level_name(isa_level isa)
{
    switch (isa) {
    case PTREG_ISA_AVX512: return "avx512";
    case PTREG_ISA_AVX2: return "avx2";
    case PTREG_ISA_GENERIC: break;
    }
    return "generic";
}

const char *ptreg_cpu_isa_name(void) { return isa_level_name(cpu_isa_level()); }

static isa_level detect_best_isa(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw"))
        return PTREG_ISA_AVX512;
    /* The avx2 kernels also use F16C, which every AVX2 + FMA CPU has (clang 14
     * cannot test for it here). */
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return PTREG_ISA_AVX2;
#endif
    return PTREG_ISA_GENERIC;
}

static int env_cap(void)
{
    const char *env = getenv("PTREG_ISA");
    if (!env)
        return -1;
    if (!strcmp(env, "generic"))
        return PTREG_ISA_GENERIC;
    if (!strcmp(env, "avx2"))
        return PTREG_ISA_AVX2;
    if (!strcmp(env, "avx512"))
        return PTREG_ISA_AVX512;
    return -1;
}

isa_level cpu_best_isa(void)
{
    int isa = atomic_load_explicit(&best_isa, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)detect_best_isa();
        atomic_store_explicit(&best_isa, isa, memory_order_relaxed);
    }
    return (isa_level)isa;
}

static isa_level capped(int cap)
{
    int best = (int)cpu_best_isa();
    return (isa_level)(cap >= 0 && cap < best ? cap : best);
}

static isa_level default_cpu_isa(void)
{
    int isa = atomic_load_explicit(&default_isa, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)capped(env_cap());
        atomic_store_explicit(&default_isa, isa, memory_order_relaxed);
    }
    return (isa_level)isa;
}

void cpu_set_isa(int isa) { atomic_store_explicit(&isa_cap, isa, memory_order_relaxed); }

isa_level cpu_isa_level(void)
{
    int cap = atomic_load_explicit(&isa_cap, memory_order_relaxed);
    return cap >= 0 ? capped(cap) : default_cpu_isa();
}
