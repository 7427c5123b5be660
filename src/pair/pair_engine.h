/* The pair engine's entries (pair.h keeps its options and types): the
 * Gaussian sums over point pairs that EM-ICP's E-steps, LDDMM and the
 * tuner run. The library's own since 1.x (not exported); the tests and
 * bench/roofline_kernels.c reach them through the static library. */
#ifndef PTREG_PAIR_ENGINE_H
#define PTREG_PAIR_ENGINE_H

#include <stddef.h>

#include "ptreg/options.h"
#include "pair/pair_kernels.h"
#include "ptreg/pair.h"

/* The defaults: {0, -1, 0}. */
void ptreg_pair_gpu_default(ptreg_pair_gpu *gpu);
/* PTREG_ERR_ARG naming `who` and the field when a knob is out of range. */
ptreg_status ptreg_pair_gpu_check(const ptreg_pair_gpu *gpu, const char *who, ptreg_error *err);
/* PTREG_ERR_ARG naming the field when an option is out of range. */
ptreg_status ptreg_pair_options_check(const ptreg_pair_options *opt, ptreg_error *err);
/* The table of its options (options.h): precision, col_tile, row_block,
 * row_vectors, loop. */
const ptreg_option_table *ptreg_pair_option_table(void);
ptreg_status ptreg_pair_plan_create(const float *cols, size_t m, const ptreg_pair_options *opt, ptreg_pair_plan **plan,
                                    ptreg_error *err);
void ptreg_pair_plan_destroy(ptreg_pair_plan *plan);
/* The instruction set the plan's kernels run with: "avx512", "avx2" or "generic". */
const char *ptreg_pair_plan_isa(const ptreg_pair_plan *plan);
/* Gaussian sums for each row point a_i (n of them, xyz in double) over the
 * plan's columns b_j, with e_ij = exp(-scale * |a_i - b_j|^2):
 *   sum_e[i] = sum_j e_ij, sum_e2[i] = sum_j e_ij^2, sum_eb[3i+k] = sum_j e_ij b_jk.
 * scale must be finite and > 0. Terms below float32's smallest normal
 * (about 1e-38) count as 0 in the float32 and float16 modes. */
ptreg_status ptreg_pair_gauss(ptreg_pair_plan *plan, const double *rows, size_t n, double scale, double *sum_e,
                              double *sum_e2, double *sum_eb, ptreg_error *err);
/* One-shot form of the above for float rows and columns. */
ptreg_status ptreg_pair_gauss_sums(const float *rows, size_t n, const float *cols, size_t m, double scale,
                                   const ptreg_pair_options *opt, double *sum_e, double *sum_e2, double *sum_eb,
                                   ptreg_error *err);

/* The Gauss transform: for each row r_i (n of them, xyz in double) and each
 * of `channels` weights (1, 3 or 4),
 *   out[channels i + c] = sum_j exp(-scale |r_i - s_j|^2) w[channels j + c]
 * over the columns s_j (m, xyz in double) and their weights w (m x
 * channels); or, with channels PTREG_PAIR_MOMENTS (5) and one weight per
 * column, the weighted moments about the row, d = r_i - s_j:
 *   out[5 i .. 5 i + 4] = sum_j e_ij w_j (1, d_x, d_y, d_z, |d|^2),
 * small numbers where sums of w s_j would cancel (CPD's fit). Both are
 * centred on the columns' centroid first. In fp32
 * (opt->precision) the vector kernels run with float32 tile sums added
 * into double, and a (row group, column tile) sweep whose terms are all
 * below float32's smallest normal is skipped (they would add 0: the same
 * bits); give rows and columns in a spatial order (ptreg_morton_order)
 * for it to skip. cull (may be NULL) counts the (row group, column tile)
 * sweeps and those skipped. fp64 is the reference, libm exp and every sum
 * in double; fp16 is refused. */
typedef struct ptreg_pair_cull {
    double sweeps, skipped; /* out, added to */
    int drop_below_log2;    /* in, fp64 only: < 0 also skips a sweep whose terms are all below
                             * 2^drop_below_log2 (0: only sweeps that add 0) */
} ptreg_pair_cull;
ptreg_status ptreg_pair_gauss_transform(const double *rows, size_t n, const double *cols, size_t m,
                                        const double *weights, int channels, double scale,
                                        const ptreg_pair_options *opt, double *out, ptreg_pair_cull *cull,
                                        ptreg_error *err);

#endif
