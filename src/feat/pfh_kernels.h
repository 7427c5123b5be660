/* The fast path of PFH and FPFH, built once per ISA (pfh_kernels_isa.c):
 * the bins of a batch of pair features, one point fixed and the others
 * side by side. The bins equal those of the scalar reference
 * (feat_pair_bins_exact) for every pair: the kernel computes alpha and phi
 * with the reference's float operations, theta with a polynomial atan2
 * whose error (about 1e-6 rad) is far below the margin it checks, and hands
 * every pair whose bin or source choice that margin cannot settle to the
 * reference. */
#ifndef PTREG_FEAT_PFH_KERNELS_H
#define PTREG_FEAT_PFH_KERNELS_H

#include "core/cpu.h"

#include <stddef.h>
#include <stdint.h>

#include "ptreg/features.h"

typedef struct feat_pair_batch {
    const float *p, *n;                    /* the fixed point and its normal */
    int fixed_first;                       /* 1: pairs (fixed, other); 0: (other, fixed) */
    const float *x, *y, *z, *nx, *ny, *nz; /* the others, side by side */
    size_t m;
    int split;                    /* bins per feature: 5 (PFH) or 11 (FPFH) */
    int32_t *theta, *alpha, *phi; /* out: m bins each */
} feat_pair_batch;

/* The reference: PCL's pair feature of (p1, n1), (p2, n2) (zeros when it
 * has none, as PCL bins such pairs) and its three bins. */
void feat_pair_bins_exact(const float p1[3], const float n1[3], const float p2[3], const float n2[3], int split,
                          int32_t bins[3]);

/* FPFH's weighted sum of its neighbors' SPFH rows (PTREG_FPFH_BINS floats
 * each): hist[b] = sum over j of row_j[b] * (1 / d_j^2), in list order,
 * neighbors at d^2 = 0 left out; each term a multiply then an add, as the
 * scalar loop rounds them, so the bits are the reference's. any_nan: whether
 * some neighbor's row (at d^2 = 0 too) is NaN, which makes the FPFH NaN. */
typedef struct feat_fpfh_gather {
    const float *spfh; /* n rows */
    const uint32_t *index;
    const float *dist2;
    size_t count;
    float *hist; /* out: PTREG_FPFH_BINS */
    int any_nan; /* out */
} feat_fpfh_gather;

#define PTREG_DECLARE_PFH_KERNELS(sfx)                  \
    void feat_pair_bins##sfx(const feat_pair_batch *b); \
    void feat_fpfh_sum##sfx(feat_fpfh_gather *g);

PTREG_DECLARE_PFH_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_PFH_KERNELS(_avx2)
PTREG_DECLARE_PFH_KERNELS(_avx512)
#endif

/* The copies one ISA built (pfh_cpu_kernels(): this CPU's; defined in
 * pfh.c). */
typedef struct pfh_cpu_kernel_table {
    void (*pair_bins)(const feat_pair_batch *b);
    void (*fpfh_sum)(feat_fpfh_gather *g);
} pfh_cpu_kernel_table;

#define PFH_CPU_KERNELS(sfx)                    \
    {                                           \
        feat_pair_bins##sfx, feat_fpfh_sum##sfx \
    }
PTREG_DECLARE_ISA_TABLE(pfh_cpu_kernel_table, pfh_cpu_kernels)

#endif
