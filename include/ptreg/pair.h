/* ptreg pair engine: fused reductions over all (row, column) point pairs,
 * "for each a_i, reduce f(a_i, b_j) over every b_j", in O(n + m) memory.
 * Rows are processed a vector of them at a time, columns in tiles that stay
 * in L1; each tile's sums are kept in float32 and added to float64 row sums,
 * tile by tile, in column order. Row blocks run in parallel, and no sum
 * depends on which thread ran it: results are the same bits for any thread
 * count. See docs/ALGORITHMS.md, "Pair engine". */
#ifndef PTREG_PAIR_H
#define PTREG_PAIR_H

#include "core.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Arithmetic of the pair terms. Sums across tiles are float64 in every mode. */
typedef enum ptreg_precision {
    PTREG_PRECISION_FP32 = 0, /* float32 pair arithmetic, vectorised (default) */
    PTREG_PRECISION_FP64,     /* float64 throughout with libm exp: the reference */
    PTREG_PRECISION_FP16      /* points stored as float16, widened (F16C) to float32 per tile */
} ptreg_precision;

PTREG_API const char *ptreg_precision_name(ptreg_precision precision);
/* Returns -1 for an unknown name (fp32, fp64, fp16). */
PTREG_API int ptreg_precision_parse(const char *name, ptreg_precision *precision);

/* Which loop runs outside inside one row block. Both give the same bits;
 * they differ in what stays in cache. */
typedef enum ptreg_pair_order {
    PTREG_PAIR_TILES_INSIDE = 0, /* per group of row vectors, sweep every column tile */
    PTREG_PAIR_TILES_OUTSIDE     /* per column tile, sweep every row group of the block */
} ptreg_pair_order;

/* The pair kernels' knobs on a GPU device (EM-ICP's E-steps, LDDMM's flow
 * and adjoint; `ptreg tune --device` picks them). Speed only, except the
 * exp's last bits and where column splits add their partial sums. */
typedef struct ptreg_pair_gpu {
    int wg;     /* rows per work-group and columns per local tile: 32, 64, 128 or 256 (0: 128) */
    int exp;    /* -1 (default): env PTREG_PAIR_EXP, else native on CUDA; 0 the engine's
                 * polynomial; 1 the device's fast exp */
    int groups; /* column splits until this many groups per compute unit, 1..64 (0: 8) */
} ptreg_pair_gpu;

/* The engine's tuning knobs (the autotuner's search space). Only col_tile
 * changes results (it sets where float32 tile sums are added into float64);
 * the others change speed only. */
typedef struct ptreg_pair_options {
    int row_block;   /* rows per parallel work item, rounded up to the vector width (default 512) */
    int col_tile;    /* columns per tile, 16..8192 (default 1024) */
    int row_vectors; /* row vectors swept together over a tile: 1, 2 or 4 (default 2) */
    ptreg_pair_order order;
    ptreg_precision precision;
    ptreg_pair_gpu gpu; /* on a GPU device */
} ptreg_pair_options;

PTREG_API void ptreg_pair_options_default(ptreg_pair_options *opt);

/* Columns packed once (centred on their centroid, in the options'
 * precision) and reused for many row sets, as EM-ICP does each iteration. */
typedef struct ptreg_pair_plan ptreg_pair_plan;

#ifdef __cplusplus
}
#endif

#endif
