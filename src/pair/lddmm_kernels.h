/* The pair sums of landmark shooting, built once per ISA
 * (lddmm_kernels_isa.c). With K_ij = exp(-s |q_i - q_j|^2 / 2), s = 1/sigma^2,
 * d_ij = q_i - q_j, for each row i over every column j:
 *
 *   flow (rows may be other points than the columns, e.g. a warped cloud):
 *     v_i = sum_j K_ij p_j                    (the velocity, dH/dp_i)
 *     f_i = sum_j K_ij (p_i . p_j) d_ij       (dp_i/dt = s f_i)
 *   adjoint, the transpose of the flow's Jacobian applied to (a, b), the
 *   cotangents of (dq/dt, dp/dt) (rows are the columns):
 *     A_i  = sum_j K_ij a_j
 *     P_i  = sum_j K_ij ((b_i - b_j) . d_ij) p_j
 *     Q1_i = sum_j K_ij ((a_i . p_j) + (a_j . p_i)) d_ij
 *     Q2_i = sum_j K_ij (p_i . p_j) (b_i - b_j)
 *     Q3_i = sum_j K_ij (p_i . p_j) ((b_i - b_j) . d_ij) d_ij
 *   so that g_p = A + s P and g_q = -s Q1 + s Q2 - s^2 Q3.
 * Rows sit in vector lanes, columns are broadcast; each column tile's sums
 * are float32 and are added into float64 row sums tile by tile, in column
 * order, so a row's sums never depend on the thread that ran it. */
#ifndef PTREG_PAIR_LDDMM_KERNELS_H
#define PTREG_PAIR_LDDMM_KERNELS_H

#include "core/cpu.h"

#include <stddef.h>

/* Rows are padded to a multiple of this (the widest vector). */
#define PTREG_LDDMM_ROW_PAD 16

/* Points side by side in float32: x y z of q, then of p, a and b (a and b
 * only for the adjoint). Padding rows hold zeros and a far-away q. */
typedef struct lddmm_points {
    const float *q[3], *p[3], *a[3], *b[3];
    size_t n;
} lddmm_points;

typedef struct lddmm_block {
    lddmm_points rows; /* rows.n a multiple of PTREG_LDDMM_ROW_PAD */
    lddmm_points cols;
    float exp2_factor; /* -s / 2 * log2(e) (pair_exp2_factor): each term's weight is 2^(factor d^2) */
    int col_tile;
    /* outputs, rows.n each, overwritten: flow v, f; adjoint A, P, Q1..Q3 */
    double *out[15];
} lddmm_block;

#define PTREG_DECLARE_LDDMM_KERNELS(sfx)              \
    void lddmm_flow_block##sfx(const lddmm_block *b); \
    void lddmm_adjoint_block##sfx(const lddmm_block *b);

PTREG_DECLARE_LDDMM_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_LDDMM_KERNELS(_avx2)
PTREG_DECLARE_LDDMM_KERNELS(_avx512)
#endif

/* The copies one ISA built (lddmm_cpu_kernels(): this CPU's; defined in
 * pair.c). */
typedef struct lddmm_cpu_kernel_table {
    void (*flow_block)(const lddmm_block *b);
    void (*adjoint_block)(const lddmm_block *b);
} lddmm_cpu_kernel_table;

#define LDDMM_CPU_KERNELS(sfx)                          \
    {                                                   \
        lddmm_flow_block##sfx, lddmm_adjoint_block##sfx \
    }
PTREG_DECLARE_ISA_TABLE(lddmm_cpu_kernel_table, lddmm_cpu_kernels)

#endif
