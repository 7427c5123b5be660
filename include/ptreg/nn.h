/* ptreg nearest neighbours: brute force and a 3-D k-d tree, both exact.
 *
 * Every method computes the squared distance the same way in float,
 * d = (dx*dx + dy*dy) + dz*dz with d_ = q_ - p_ and no fused multiply-add,
 * and breaks ties by the lowest target index, so all methods return the
 * same bits. Indices are uint32_t: at most 2^32 - 1 target points. */
#ifndef PTREG_NN_H
#define PTREG_NN_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTREG_NO_NEIGHBOR UINT32_MAX

/* 1-NN of nq queries against m target points by brute force, blocked over
 * the target, OpenMP over queries. */
ptreg_status ptreg_brute_nearest(const float *target, size_t m, const float *queries, size_t nq,
                                 uint32_t *index, float *dist2, ptreg_error *err);

typedef struct ptreg_kdtree ptreg_kdtree;

typedef struct ptreg_kdtree_options {
    int leaf_size; /* most points in a leaf, 4..256 (default 256) */
} ptreg_kdtree_options;

void ptreg_kdtree_options_default(ptreg_kdtree_options *opt);
/* Builds the tree over a copy of the points (one reordered array); the
 * caller's array is not kept. */
ptreg_status ptreg_kdtree_create(const float *xyz, size_t n, const ptreg_kdtree_options *opt,
                                 ptreg_kdtree **tree, ptreg_error *err);
void ptreg_kdtree_destroy(ptreg_kdtree *tree);
size_t ptreg_kdtree_size(const ptreg_kdtree *tree);

/* Exact 1-NN for nq queries, OpenMP over queries. hint (may be NULL) gives
 * a candidate per query, e.g. last iteration's neighbour, or
 * PTREG_NO_NEIGHBOR: its distance bounds the search from the start; the
 * answer does not depend on it. */
void ptreg_kdtree_nearest(const ptreg_kdtree *tree, const float *queries, size_t nq,
                          const uint32_t *hint, uint32_t *index, float *dist2);

/* The k nearest points of q, sorted by (distance, index); returns how many
 * were found (min(k, n)). */
size_t ptreg_kdtree_knn(const ptreg_kdtree *tree, const float q[3], size_t k, uint32_t *index,
                        float *dist2);

/* A growable list of neighbours the caller owns; reuse it across queries. */
typedef struct ptreg_neighbors {
    uint32_t *index;
    float *dist2;
    size_t count, capacity;
} ptreg_neighbors;

void ptreg_neighbors_free(ptreg_neighbors *nb);
/* All points with d <= radius^2, sorted by (distance, index); replaces
 * nb's contents. */
ptreg_status ptreg_kdtree_radius(const ptreg_kdtree *tree, const float q[3], float radius,
                                 ptreg_neighbors *nb, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
