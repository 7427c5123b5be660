/* ICP's per-block sums, built once per ISA (icp_kernels_isa.c). */
#ifndef PTREG_REG_ICP_KERNELS_H
#define PTREG_REG_ICP_KERNELS_H

#include <stddef.h>

#include "core/cpu.h"

/* Sums over the pairs i < n with use[i]: w (the count), sp = sum(p - ref),
 * sq = sum(q - ref), spq = sum (p - ref)(q - ref)^T (row-major) and d2sum =
 * sum(d2), each summed in pair order in double, so every ISA gives the
 * same bits. */
typedef struct pair_sums {
    double w, sp[3], sq[3], spq[9], d2sum, spp;
} pair_sums;

#define PTREG_DECLARE_ICP_KERNELS(sfx)                                                                             \
    void pair_sums_range##sfx(const float *p, const float *q, const float *d2, const unsigned char *use, size_t n, \
                              const double ref[3], pair_sums *out);

PTREG_DECLARE_ICP_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_ICP_KERNELS(_avx2)
PTREG_DECLARE_ICP_KERNELS(_avx512)
#endif

/* The copies one ISA built (icp_cpu_kernels(): this CPU's; defined in
 * icp_cpu.c). */
typedef struct icp_cpu_kernel_table {
    void (*pair_sums_range)(const float *p, const float *q, const float *d2, const unsigned char *use, size_t n,
                            const double ref[3], pair_sums *out);
} icp_cpu_kernel_table;

#define ICP_CPU_KERNELS(sfx) \
    {                        \
        pair_sums_range##sfx \
    }
PTREG_DECLARE_ISA_TABLE(icp_cpu_kernel_table, icp_cpu_kernels)

#endif
