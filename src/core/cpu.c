#include "core/cpu.h"

#include <stdlib.h>
#include <string.h>

static int isa_cap = -1;

const char *ptreg_isa_name(ptreg_isa isa)
{
    switch (isa) {
    case PTREG_ISA_AVX512: return "avx512";
    case PTREG_ISA_AVX2: return "avx2";
    case PTREG_ISA_GENERIC: break;
    }
    return "generic";
}

ptreg_isa ptreg_cpu_best_isa(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
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

void ptreg_cpu_set_isa(int isa) { isa_cap = isa; }

ptreg_isa ptreg_cpu_isa(void)
{
    int best = (int)ptreg_cpu_best_isa();
    int cap = isa_cap >= 0 ? isa_cap : env_cap();
    return (ptreg_isa)(cap >= 0 && cap < best ? cap : best);
}
