/* The batched EM-ICP kernel, built once per ISA (batch_kernels_isa.c): one
 * pair per SIMD lane, the whole annealing schedule of a block of pairs in
 * one call. Every lane computes what ptreg_emicp computes for its pair, in
 * the same order: the E-step through the pair engine's float32 arithmetic
 * (the target centred on its centroid, float32 sums per row), the weighted
 * moments and Horn's solution (Jacobi on the 4x4 matrix) in double. */
#ifndef PTREG_REG_BATCH_KERNELS_H
#define PTREG_REG_BATCH_KERNELS_H

#include "core/cpu.h"

#include <stddef.h>
#include <stdint.h>

/* The widest block any ISA uses. */
#define PTREG_BATCH_MAX_LANES 16

/* Why a lane stopped (ptreg_stop_reason values). */
typedef struct batch_block {
    int lanes;     /* lanes in use, <= the kernel's width W */
    int width;     /* W: the stride of every per-lane array below */
    size_t ns, nt; /* source points per lane (padded), target points: 3 ns W passes 2^31 at 45 M */
    /* source point j of lane l, coordinate c: src[(3 * j + c) * W + l];
     * smask[j * W + l]: 1 for a point, 0 for padding (NULL: no padding) */
    const float *src, *smask;
    /* the target, centred on its centroid (center): shared by every lane,
     * tgt[3 * i + c]; or per lane, tgt[(3 * i + c) * W + l] with tmask */
    const float *tgt, *tmask;
    int shared_target;
    double center[3][PTREG_BATCH_MAX_LANES];
    /* the moments' reference points (the source's and the target's
     * centroids; zero when rotation_only) */
    double ref_p[3][PTREG_BATCH_MAX_LANES], ref_q[3][PTREG_BATCH_MAX_LANES];
    int rotation_only; /* no translation: Horn without centring, t = 0 */
    /* the schedule per lane (ptreg_emicp's meaning) */
    double sigma2_init[PTREG_BATCH_MAX_LANES], sigma2_final[PTREG_BATCH_MAX_LANES];
    double d02[PTREG_BATCH_MAX_LANES], radius[PTREG_BATCH_MAX_LANES];
    double factor, tol;
    int max_iter;
    /* in: the initial transform, out: the result; rows 0..2 of a 4x4,
     * T[k][l] = T_l[k] */
    double T[12][PTREG_BATCH_MAX_LANES];
    int iterations[PTREG_BATCH_MAX_LANES], stop[PTREG_BATCH_MAX_LANES], converged[PTREG_BATCH_MAX_LANES];
    double sigma2_last[PTREG_BATCH_MAX_LANES];
} batch_block;

#define PTREG_DECLARE_BATCH_KERNELS(sfx) \
    int batch_lanes##sfx(void);          \
    void batch_block_run##sfx(batch_block *b);

PTREG_DECLARE_BATCH_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_BATCH_KERNELS(_avx2)
PTREG_DECLARE_BATCH_KERNELS(_avx512)
#endif

/* The copies one ISA built (batch_cpu_kernels(): this CPU's; defined in
 * batch.c): the lanes of a block, and one block's schedule. */
typedef struct batch_cpu_kernel_table {
    int (*lanes)(void);
    void (*block)(batch_block *b);
} batch_cpu_kernel_table;

#define BATCH_CPU_KERNELS(sfx)                 \
    {                                          \
        batch_lanes##sfx, batch_block_run##sfx \
    }
PTREG_DECLARE_ISA_TABLE(batch_cpu_kernel_table, batch_cpu_kernels)

#endif
