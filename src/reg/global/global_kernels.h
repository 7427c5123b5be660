/* Feature matching's distance scan, built once per ISA
 * (global_kernels_isa.c). */
#ifndef PTREG_REG_GLOBAL_KERNELS_H
#define PTREG_REG_GLOBAL_KERNELS_H

#include "core/cpu.h"

#include <stddef.h>
#include <stdint.h>

/* Rows [r0, r1) of a (dim floats each; a_nan marks rows without a
 * descriptor) against every column of b (nb rows of dim floats; b_nan marks
 * those without one, at infinity): each row's nearest column into
 * row_best[i] (ties: the lower index; UINT32_MAX for a NaN row or none
 * finite) and, when row_second is not NULL, its second least distance
 * (over every column but its nearest; a tie with the nearest counts:
 * Lowe's ratio test). The answers are those of exact distances, each
 * summed over the dimensions in order with separate multiplies and adds
 * (every ISA and the device give the same bits). The scan estimates first
 * from bt (b transposed, dim x nb, a missing column zeros) and b2 (the
 * columns' squared norms, a missing column infinite), and measures exactly
 * where an estimate could reach a best so far (bound: the estimates' error
 * bound, desc_scan_bound). When col is not NULL, each
 * column's three least estimates over these rows and the rows of the first
 * two go to col (ties: the lower row first): the host measures a column's
 * nearest row from them (global_match.c). */
/* Each column's three least estimates and the rows of the first two,
 * column by column. */
typedef struct desc_columns {
    float *least[3];
    uint32_t *row[2];
} desc_columns;

typedef struct desc_scan {
    const float *a, *b, *bt, *b2;
    const unsigned char *a_nan, *b_nan;
    float bound;
    size_t r0, r1, nb;
    int dim;
    uint32_t *row_best;
    float *row_second;
    struct desc_columns *col;
    float *rows; /* scratch: DESC_SCAN_ROWS x dim floats */
} desc_scan;

/* The exact squared distance of two descriptors: the sum of squared
 * differences over the dimensions in order, separate multiplies and adds
 * (the device's match.cl sums the same): the bits every scan answers by. */
static inline float desc_dist2(const float *a, const float *b, int dim)
{
    float d = 0.0f;
    for (int k = 0; k < dim; k++) {
        const float diff = a[k] - b[k];
        d += diff * diff;
    }
    return d;
}

/* The bound on |estimate - exact| for a row and a column whose squared
 * norms are at most a2max and b2max: 4 gamma(dim + 3) (a2max + b2max) (the
 * estimate's norms, dot product and two roundings, the exact sum's
 * roundings; gamma(n) = n 2^-24 to first order). Infinite when the norms
 * overflow: then every column is measured. */
static inline float desc_scan_bound(int dim, float a2max, float b2max)
{
    return 4.0f * (float)(dim + 3) * 0x1p-24f * (a2max + b2max);
}

/* The most rows a scan takes at once (a tile's rows, side by side). */
#define DESC_SCAN_ROWS 8

/* est[i]: every row's estimate against one column y (dim floats, squared
 * norm y2): at is a transposed (dim x na; a row without a descriptor
 * zeros), a2 the rows' squared norms (such a row infinite). */
#define PTREG_DECLARE_GLOBAL_KERNELS(sfx)                                                                           \
    void desc_scan_rows##sfx(const desc_scan *s);                                                                   \
    void desc_column_estimates##sfx(const float *at, const float *a2, size_t na, const float *y, float y2, int dim, \
                                    float *est);

PTREG_DECLARE_GLOBAL_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_GLOBAL_KERNELS(_avx2)
PTREG_DECLARE_GLOBAL_KERNELS(_avx512)
#endif

/* The copies one ISA built (global_cpu_kernels(): this CPU's; defined in
 * global_match.c). */
typedef struct global_cpu_kernel_table {
    void (*desc_scan_rows)(const desc_scan *s);
    void (*desc_column_estimates)(const float *at, const float *a2, size_t na, const float *y, float y2, int dim,
                                  float *est);
} global_cpu_kernel_table;

#define GLOBAL_CPU_KERNELS(sfx)                         \
    {                                                   \
        desc_scan_rows##sfx, desc_column_estimates##sfx \
    }
PTREG_DECLARE_ISA_TABLE(global_cpu_kernel_table, global_cpu_kernels)

#endif
