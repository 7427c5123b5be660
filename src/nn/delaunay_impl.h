/* The Delaunay graph of a model and the walk over it (the aerial-refuelling
 * study's nearest-neighbor method). Private to the library: built by
 * delaunay.c, walked by the per-ISA kernels, stored in model indexes. */
#ifndef PTREG_NN_DELAUNAY_IMPL_H
#define PTREG_NN_DELAUNAY_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "nn/kdtree_impl.h"

/* Rows are the k-d tree's slots, so a walk and a tree search name points
 * the same way and either can finish what the other started. Exact
 * duplicates share one row (the lowest original index, which is the answer
 * brute force gives among them); the other duplicates' rows are empty. For
 * the edge to neighbor j of point i: nbr = j's slot, (ex, ey, ez) the unit
 * vector from x_i to x_j, half = |x_j - x_i| / 2. */
/* The walk reads a row as one run of cache lines: a 64-byte head (the
 * point, its degree, where its neighbors' slots are) and blocks of 16
 * edges (ex, ey, ez, half: 256 bytes). Lanes past the degree hold a zero
 * vector and half = +inf, which never qualify and never lower a minimum.
 * Built from the CSR arrays (which the index file stores). */
#define PTREG_DT_LANES 16

typedef struct dt_head {
    float x, y, z;
    uint32_t degree;
    uint32_t nbr_first; /* the row's neighbors: nbr[nbr_first ...] */
    uint32_t unused[11];
} dt_head;

typedef struct dt_block {
    float ex[PTREG_DT_LANES], ey[PTREG_DT_LANES], ez[PTREG_DT_LANES], half[PTREG_DT_LANES];
} dt_block;

typedef struct delaunay_graph {
    size_t slots;     /* rows: the tree's slot count */
    uint32_t *offset; /* slots + 1: row i is edges [offset[i], offset[i + 1]) */
    size_t edges;
    uint32_t *nbr;
    float *ex, *ey, *ez, *half;
    uint32_t start;      /* delaunay-zero's start: the point nearest the centroid */
    size_t duplicates;   /* points merged into another */
    int borrowed;        /* the CSR arrays live in a loaded index's buffer */
    unsigned char *rows; /* the walk's rows (always owned) */
    size_t row_units;    /* their size in 64-byte units */
    uint32_t *row_at;    /* per slot: its row, in 64-byte units; UINT32_MAX: none */
} delaunay_graph;

/* Builds the walk's rows from the CSR arrays; -1 when out of memory, 1
 * when they are more than uint32 row offsets name (nothing allocated). */
int delaunay_make_rows(delaunay_graph *g, const ptreg_kdtree *t);

/* Whether a graph of this many directed edges and 64-byte row units fits
 * its uint32 offsets (offset, nbr_first, row_at: the index file's layout
 * and the device's), with UINT32_MAX kept for "no row". */
int delaunay_fits(size_t directed_edges, size_t row_units);

/* Builds the graph of the tree's points with Qhull. Returns PTREG_OK, or
 * PTREG_ERR_UNSUPPORTED with a message saying why there is no graph (fewer
 * than 5 distinct points, all coplanar or collinear, Qhull left points
 * out), or PTREG_ERR_NOMEM. */
ptreg_status delaunay_create(const ptreg_kdtree *tree, delaunay_graph **out, ptreg_error *err);
void delaunay_destroy(delaunay_graph *g);


/* What a certain walk leaves for the next query of the same source point
 * (ICP's next pass, seeded by this answer): the query, its margin inside
 * the answer's Voronoi cell (a lower bound of its distance to the cell's
 * boundary) and 4 x the answer's shortest half edge. A query that has moved
 * less than the margin is still in the cell (ALGORITHMS.md). margin <= 0:
 * nothing to reuse. */
typedef struct dt_memory {
    float q[3], margin;
    float p[3], scale; /* the answer's point: no lookup when it is kept */
} dt_memory;

/* How a walk starts (ptreg_nn_method's Delaunay choices). */
typedef enum walk_start {
    PTREG_WALK_FIXED = 0, /* the graph's start point */
    PTREG_WALK_KDANN,     /* the best point of the leaf the tree's descent reaches */
    PTREG_WALK_SEED       /* the slot given (last answer); PTREG_WALK_FIXED without one */
} walk_start;

#endif
