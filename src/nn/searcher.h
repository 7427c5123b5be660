/* One searcher for every nearest-neighbor method on the CPU: a query
 * set's nearest model points by brute force, the k-d tree or the Delaunay
 * walks of a model index, found range by range (the callers spread ranges
 * over threads and choose them, so a range's answers are the same bits
 * whoever asks). Its answers are its own handles (a k-d tree slot, or
 * brute force's index): each is the next search's seed for the same query,
 * and nn_searcher_index and _point turn it into the model's index and
 * point. What a method keeps between searches (the brute-force layout, the
 * walks' certificates) stays inside. */
#ifndef PTREG_NN_SEARCHER_H
#define PTREG_NN_SEARCHER_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/nn.h"
#include "ptreg/options.h"

typedef struct nn_searcher nn_searcher;

/* A searcher on idx's model by method (auto: the k-d tree). remembered > 0:
 * the seeded walks (pnn, pnnopt) keep each of that many queries' walk
 * certificate for the next search of the same query moved a little (ICP's
 * passes). PTREG_ERR_UNSUPPORTED for a walk on an index without a graph
 * (its note says why), PTREG_ERR_ARG for an unknown method. */
ptreg_status nn_searcher_create(const ptreg_model_index *idx, ptreg_nn_method method, size_t remembered,
                                nn_searcher **out, ptreg_error *err);
void nn_searcher_destroy(nn_searcher *s);

/* Queries [i0, i0 + cnt) of the set q (3 floats each): their nearest
 * model points, into answer[i0..] and their squared distances into d2[i0..].
 * answer holds each query's seed on entry (PTREG_NO_NEIGHBOR: none);
 * seeded: whether the set has been searched before (pnnopt's first search
 * starts from the k-d tree's descent instead). limit bounds the k-d tree's
 * search (a squared distance; INFINITY: none): a query with nothing within
 * it gets PTREG_NO_NEIGHBOR and INFINITY; the other methods answer every
 * query. walk (the walks' statistics, may be NULL) is added to. */
void nn_searcher_nearest(const nn_searcher *s, const float *q, size_t i0, size_t cnt, int seeded, float limit,
                         uint32_t *answer, float *d2, ptreg_walk_stats *walk);

/* An answer's model index and point; the answer that seeds a search with
 * model point `index` (PTREG_NO_NEIGHBOR when there is none). */
uint32_t nn_searcher_index(const nn_searcher *s, uint32_t answer);
void nn_searcher_point(const nn_searcher *s, uint32_t answer, float xyz[3]);
uint32_t nn_searcher_seed(const nn_searcher *s, uint32_t index);

/* Adds b's counts to a. */
void nn_walk_stats_merge(ptreg_walk_stats *a, const ptreg_walk_stats *b);

/* Whether the searcher walks the Delaunay graph (has walk statistics). */
int nn_searcher_walks(const nn_searcher *s);

/* Where the walks of a method start (the device kernels' start code):
 * seeded as for nn_searcher_nearest. */
int nn_walk_start(ptreg_nn_method method, int seeded);

/* The methods' names (ICP's `nn` option). */
extern const ptreg_option_name nn_method_names[];

/* The index's k-d tree, for the neighborhoods that features search on the
 * model itself (its normals). */
const ptreg_kdtree *nn_index_tree(const ptreg_model_index *idx);

#endif
