/* Feature matching's distance scan, built once per ISA
 * (global_kernels_isa.c). */
#ifndef PTREG_REG_GLOBAL_KERNELS_H
#define PTREG_REG_GLOBAL_KERNELS_H

#include "core/cpu.h"

#include <stddef.h>
#include <stdint.h>

/* Rows [r0, r1) of a (dim floats each; a_nan marks rows without a
 * descriptor) against every column of bt (dim x nb, a missing column all
 * infinities): each row's nearest column into row_best[i] (ties: the lower
 * index; UINT32_MAX for a NaN row) and, when col_d is not NULL, each
 * column's nearest of these rows into col_d/col_i (kept when strictly
 * nearer: rows come in increasing order), and when row_second is not NULL
 * each row's second least distance (over every column but its nearest; a
 * tie with the nearest counts: Lowe's ratio test). Each distance is summed
 * over the dimensions in order, with separate multiplies and adds: every
 * ISA gives the same bits. */
typedef struct desc_scan {
    const float *a, *bt;
    const unsigned char *a_nan;
    size_t r0, r1, nb;
    int dim;
    uint32_t *row_best;
    float *row_second;
    float *col_d;
    uint32_t *col_i;
    float *rows; /* scratch: DESC_SCAN_ROWS x dim floats */
} desc_scan;

/* The most rows a scan takes at once (a tile's rows, side by side). */
#define DESC_SCAN_ROWS 4

#define PTREG_DECLARE_GLOBAL_KERNELS(sfx) void desc_scan_rows##sfx(const desc_scan *s);

PTREG_DECLARE_GLOBAL_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_GLOBAL_KERNELS(_avx2)
PTREG_DECLARE_GLOBAL_KERNELS(_avx512)
#endif

/* The copies one ISA built (global_cpu_kernels(): this CPU's; defined in
 * global_match.c). */
typedef struct global_cpu_kernel_table {
    void (*desc_scan_rows)(const desc_scan *s);
} global_cpu_kernel_table;

#define GLOBAL_CPU_KERNELS(sfx) \
    {                           \
        desc_scan_rows##sfx     \
    }
PTREG_DECLARE_ISA_TABLE(global_cpu_kernel_table, global_cpu_kernels)

#endif
