/* The k-d tree's private layout, shared by kdtree.c (build, k-NN, radius),
 * the per-ISA 1-NN kernels (nn_kernels_isa.c) and ICP, which works in the
 * tree's own point order ("slots") to skip index translation. */
#ifndef PTREG_NN_KDTREE_IMPL_H
#define PTREG_NN_KDTREE_IMPL_H

#include <stdint.h>

#include "nn/kdtree_query.h"
#include "ptreg/nn.h"

/* Leaf points are stored in SoA chunks of PTREG_KD_LANES points so a chunk's
 * distances are one vector operation; unused lanes hold NaN coordinates,
 * whose distances compare false with everything. A point's slot is
 * chunk * PTREG_KD_LANES + lane. */
#define PTREG_KD_LANES 16
#define PTREG_KD_LEAF_CHUNKS 16 /* at most, so a leaf holds up to 256 points */
#define PTREG_KD_MAX_LEAF (PTREG_KD_LANES * PTREG_KD_LEAF_CHUNKS)

/* What lies outside a node: every point not in its subtree has, on some
 * axis k, coordinate <= lo[k] or >= hi[k] (the extents of the siblings of
 * its ancestors). A ball around the query that stays strictly inside
 * (lo, hi) holds no point of any other subtree, so a search seeded with a
 * good candidate can start at that node instead of the root. */
typedef struct kd_cell {
    float lo[3], lo_pad; /* the pads (0) let x y z load as one vector */
    float hi[3], hi_pad;
} kd_cell;

/* 256 bytes, four cache lines, 16 lanes: one AVX-512 operation or two AVX2
 * ones per coordinate. */
typedef struct kd_chunk {
    float x[PTREG_KD_LANES], y[PTREG_KD_LANES], z[PTREG_KD_LANES];
    uint32_t leaf;       /* the leaf holding the chunk */
    uint32_t unused[15]; /* keeps every chunk 64-byte aligned */
} kd_chunk;

/* A leaf's points are ordered by further k-d splits into its chunks, so
 * each chunk is a compact cluster. The leaf keeps its chunks' boxes side by
 * side (lanes of 8; missing chunks have empty boxes, lo = +inf, hi = -inf)
 * so one vector operation tells which chunks can hold a point within the
 * best distance. 256 bytes. */
typedef struct kd_leaf {
    float lo[3][PTREG_KD_LEAF_CHUNKS], hi[3][PTREG_KD_LEAF_CHUNKS];
    kd_cell cell; /* the leaf's outside bounds */
    uint32_t first_chunk;
    uint32_t chunks;
    uint32_t parent;            /* the internal node holding the leaf */
    float box_lo[3], box_hi[3]; /* the leaf's tight box */
    double reach;               /* 0: no neighbor list */
    uint32_t near_first;        /* its neighbors: blocks of t->near */
    uint32_t near_blocks;
    uint32_t unused[10]; /* 512 bytes */
} kd_leaf;

/* A leaf's neighbors: every leaf whose box comes within `reach` of its box
 * (itself included), in blocks of 8 with their boxes side by side. For a
 * query q at distance g from the leaf's box, a point of any other leaf is
 * farther than reach - g, so once the neighbors that can beat the best
 * distance are scanned, a best distance below reach - g is final: the slow
 * case of a seeded query (the ball leaves the seed's leaf) then needs no
 * tree walk either. Missing lanes have empty boxes and leaf
 * PTREG_NO_NEIGHBOR. 256 bytes. */
#define PTREG_KD_NEAR_LANES 8
typedef struct kd_near {
    float lo[3][PTREG_KD_NEAR_LANES], hi[3][PTREG_KD_NEAR_LANES];
    uint32_t leaf[PTREG_KD_NEAR_LANES];
    uint32_t unused[8];
} kd_near;


/* A child reference: an internal node's index, or a leaf's
 * (PTREG_KD_LEAF_BIT | leaf index). */
#define PTREG_KD_LEAF_BIT 0x80000000u

/* Internal nodes hold both children's tight bounding boxes (one cache line),
 * so a visit bounds the distance to each child on all three axes at once.
 * Nodes are in depth-first order. A missing child (a tree of one leaf) has
 * an empty box, which no search enters. */
typedef struct kd_node {
    float lo[3][2], hi[3][2]; /* [axis][child] */
    uint32_t child[2];
    uint32_t unused[2];
} kd_node;

/* Vector loads from these need every element 64-byte aligned. */
_Static_assert(sizeof(kd_chunk) % 64 == 0, "chunk size");
_Static_assert(sizeof(kd_leaf) % 64 == 0, "leaf size");
_Static_assert(sizeof(kd_near) % 64 == 0, "neighbor block size");
_Static_assert(sizeof(kd_node) % 64 == 0, "node size");

/* Splits into halves of whole leaves keep the tree balanced: at most
 * log2(2^31 / 4) + 1 = 30 internal nodes on any path. */
#define PTREG_KD_MAX_DEPTH 64

struct ptreg_kdtree {
    size_t n;
    uint32_t leaf_size;
    kd_node *nodes;   /* the root is node 0 */
    kd_cell *cells;   /* per node */
    uint32_t *parent; /* per node; the root's is itself */
    size_t node_count;
    kd_leaf *leaves;
    size_t leaf_count;
    kd_near *near;     /* the leaves' neighbor lists */
    size_t near_count; /* blocks */
    kd_chunk *chunks;
    size_t chunk_count;
    uint32_t *index; /* per slot: original index; PTREG_NO_NEIGHBOR in padding */
    uint32_t *slot;  /* per original index: its slot */
    int borrowed;    /* the arrays live in a loaded index's buffer */
};

/* A point while building: coordinates and original index. */
typedef struct kd_point {
    float p[3];
    uint32_t index;
} kd_point;

/* (d, i) < (best_d, best_i) in the order that makes all methods agree. */
static inline int kd_better(float d, uint32_t i, float best_d, uint32_t best_i)
{
    return d < best_d || (d == best_d && i < best_i);
}

/* Lower bound of the distance from any point of the box [qlo, qhi] to any
 * point in box `lane`: per axis the gap between the boxes (rounded exactly
 * as a coordinate difference to points inside would be, or more: float
 * subtraction is monotone), combined by the distance formula, so it never
 * exceeds a computed distance of two points inside them. Boxes are stored
 * side by side: box `lane`'s lower corner on axis k is lo[k * stride +
 * lane]. */
static inline float kd_lane_box_bound(const float *lo, const float *hi, unsigned stride, unsigned lane,
                                      const float qlo[3], const float qhi[3])
{
    float g[3];
    for (unsigned k = 0; k < 3; k++) {
        float below = lo[k * stride + lane] - qhi[k], above = qlo[k] - hi[k * stride + lane];
        float gap = below > above ? below : above;
        g[k] = gap > 0.0f ? gap : 0.0f;
    }
    return (g[0] * g[0] + g[1] * g[1]) + g[2] * g[2];
}

/* The same bound from the point q. */
static inline float kd_lane_bound(const float *lo, const float *hi, unsigned stride, unsigned lane, const float q[3])
{
    return kd_lane_box_bound(lo, hi, stride, lane, q, q);
}

/* Builds every leaf's neighbor list (kdtree_near.c); -1 when out of
 * memory. */
int kd_build_neighbors(ptreg_kdtree *t);

/* The bound for child c of a node, and for chunk c of a leaf. */
static inline float kd_box_bound(const kd_node *nd, unsigned c, const float q[3])
{
    return kd_lane_bound(&nd->lo[0][0], &nd->hi[0][0], 2, c, q);
}

static inline float kd_chunk_bound(const kd_leaf *leaf, unsigned c, const float q[3])
{
    return kd_lane_bound(&leaf->lo[0][0], &leaf->hi[0][0], PTREG_KD_LEAF_CHUNKS, c, q);
}

#endif
