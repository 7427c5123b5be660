/* The pair engine's kernels, built once per ISA (pair_kernels_isa.c). */
#ifndef PTREG_PAIR_KERNELS_H
#define PTREG_PAIR_KERNELS_H

#include "core/cpu.h"

#include <float.h>
#include <stddef.h>
#include <stdint.h>

/* Rows are padded to a multiple of this (the widest vector). */
#define PTREG_PAIR_ROW_PAD 16
#define PTREG_PAIR_MAX_COL_TILE 8192

/* The kernels' exp(-scale d^2) is 2^(f d^2) with f = -scale log2(e)
 * (vec_isa.h's v_exp2), f rounded to float once, from double, and kept
 * finite (an infinite one would make 0 * -inf a NaN where a row meets its
 * column). Everything that must give the engine's bits (batch_kernels_isa.c)
 * takes f from here. */
static inline float pair_exp2_factor(double scale)
{
    const double f = -scale * 1.4426950408889634;
    /* finite, and never -0: -0 times an infinite d^2 would be NaN, not 0 */
    return f < -FLT_MAX ? -FLT_MAX : f > -FLT_MIN ? -FLT_MIN : (float)f;
}

/* One row block's Gaussian sums over all columns. Row coordinates are
 * float32 (the driver widens float16 rows); columns are float32 (cx, cy, cz)
 * or float16 (hx, hy, hz, widened tile by tile). */
typedef struct pair_gauss_block {
    const float *rx, *ry, *rz; /* nr rows, nr a multiple of PTREG_PAIR_ROW_PAD */
    size_t nr;
    const float *cx, *cy, *cz;    /* float32 columns, or NULL */
    const uint16_t *hx, *hy, *hz; /* float16 columns, or NULL */
    size_t m;
    float neg_scale_log2e; /* e = 2^(neg_scale_log2e * d^2) = exp(-scale d^2) */
    int col_tile, row_vectors, tiles_outside;
    float *tile;                        /* 3 * col_tile floats of scratch (float16 columns) */
    double *se, *se2, *sbx, *sby, *sbz; /* nr each, overwritten */
} pair_gauss_block;

/* The Gauss transform's outputs per row (pair_engine.h): 1, 3 or 4
 * weighted channels, or the 5 moments about the row (PTREG_PAIR_MOMENTS). */
#define PTREG_PAIR_MAX_CHANNELS 5
#define PTREG_PAIR_MOMENTS 5

/* One row block's weighted Gaussian sums, the Gauss transform:
 * out[c][i] = sum_j 2^(f |r_i - c_j|^2) w[c][j] for each channel c. A
 * column tile whose bounding box (tile_box: lo xyz, hi xyz per tile; NULL:
 * none) is so far from a row group's that every term is below float32's
 * smallest normal is skipped: its terms would all be 0. */
typedef struct pair_wsum_block {
    const float *rx, *ry, *rz; /* nr rows, nr a multiple of PTREG_PAIR_ROW_PAD */
    size_t nr;
    const float *cx, *cy, *cz;
    const float *w[PTREG_PAIR_MAX_CHANNELS];
    int channels; /* 1, 3 or 4, or PTREG_PAIR_MOMENTS (w[0] alone) */
    size_t m;
    float neg_scale_log2e;
    int col_tile;
    const float *tile_box;
    double *out[PTREG_PAIR_MAX_CHANNELS]; /* nr each, overwritten */
    size_t sweeps, skipped;               /* out: (row group, column tile) sweeps, and those culled */
} pair_wsum_block;

/* The same in float64 (the reference precision): rows, columns and weights
 * in double, every sum in double, exp as a degree-13 polynomial of 2^u
 * (|u| <= 1/2; relative error about 2e-16) scaled by 2^n. Terms below
 * 2^-1022 are 0, and a sweep all of whose terms are is skipped (or all
 * below 2^skip_below, where the caller allows it). */
typedef struct pair_wsum64_block {
    const double *rx, *ry, *rz; /* nr rows, nr a multiple of PTREG_PAIR_ROW_PAD */
    size_t nr;
    const double *cx, *cy, *cz;
    const double *w[PTREG_PAIR_MAX_CHANNELS];
    int channels;
    size_t m;
    double neg_scale_log2e;
    int col_tile;
    const double *tile_box;
    double skip_below; /* a sweep whose terms are all below 2^skip_below is skipped (-1023: only zeros) */
    double *out[PTREG_PAIR_MAX_CHANNELS];
    size_t sweeps, skipped;
} pair_wsum64_block;

#define PTREG_DECLARE_PAIR_KERNELS(sfx)                              \
    void pair_gauss_block##sfx(const pair_gauss_block *blk);         \
    void pair_wsum_block##sfx(pair_wsum_block *blk);                 \
    void pair_wsum64_block##sfx(pair_wsum64_block *blk);             \
    void pair_exp_array##sfx(const float *in, float *out, size_t n); \
    void pair_exp2_array##sfx(const float *in, float *out, size_t n);

PTREG_DECLARE_PAIR_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_PAIR_KERNELS(_avx2)
PTREG_DECLARE_PAIR_KERNELS(_avx512)
#endif

/* The copies one ISA built (pair_cpu_kernels(): this CPU's; defined in
 * pair.c). */
typedef struct pair_cpu_kernel_table {
    void (*pair_gauss_block)(const pair_gauss_block *blk);
    void (*pair_wsum_block)(pair_wsum_block *blk);
    void (*pair_wsum64_block)(pair_wsum64_block *blk);
    void (*pair_exp_array)(const float *in, float *out, size_t n);
    void (*pair_exp2_array)(const float *in, float *out, size_t n); /* the kernel's 2^t, t <= 0 (tests) */
} pair_cpu_kernel_table;

#define PAIR_CPU_KERNELS(sfx)                                                                                          \
    {                                                                                                                  \
        pair_gauss_block##sfx, pair_wsum_block##sfx, pair_wsum64_block##sfx, pair_exp_array##sfx, pair_exp2_array##sfx \
    }
PTREG_DECLARE_ISA_TABLE(pair_cpu_kernel_table, pair_cpu_kernels)

/* IEEE binary16 conversions, round to nearest even (as F16C does). */
uint16_t half_from_float(float f);
float half_to_float(uint16_t h);

#endif
