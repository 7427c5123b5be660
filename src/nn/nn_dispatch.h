/* Entry points that run the nearest-neighbour kernel of the ISA chosen by
 * ptreg_cpu_isa() on one range of queries (the callers spread ranges over
 * threads). */
#ifndef PTREG_NN_DISPATCH_H
#define PTREG_NN_DISPATCH_H

#include "nn/nn_kernels.h"

void ptreg_brute_range(const ptreg_brute_target *t, const float *q, size_t nq, uint32_t *index,
                       float *dist2);
void ptreg_kd_nearest_range(const ptreg_kdtree *tree, const float *q, size_t nq,
                            const uint32_t *hint_slot, uint32_t *out_slot, float *dist2);

/* Nearest points by Delaunay walks from `start` (with PTREG_WALK_SEED,
 * slot holds the seeds; PTREG_NO_NEIGHBOR starts at the graph's start);
 * slot receives the answers, tally the walk statistics (added to). mem
 * (NULL, or one per query) carries each answer's certificate to the next
 * call for the same queries moved a little (ptreg_dt_memory). */
void ptreg_dt_nearest_range(const ptreg_kdtree *t, const ptreg_delaunay *g, const float *q, size_t nq,
                            ptreg_walk_start start, uint32_t *slot, float *dist2, ptreg_dt_memory *mem,
                            ptreg_walk_stats *tally);

/* The k nearest points of q within squared distance limit, 0 < k <= n,
 * sorted by (distance, index) (knn_kernels_isa.c). */
size_t ptreg_kd_knn(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2);
/* Every point within squared distance limit (d <= limit), sorted; -1 when
 * out of memory. */
int ptreg_kd_radius(const ptreg_kdtree *t, const float q[3], float limit, ptreg_neighbors *nb);

/* The target as brute force wants it (SoA, NaN-padded), made once and
 * reused across query batches. */
ptreg_status ptreg_brute_target_init(ptreg_brute_target *t, const float *xyz, size_t m, ptreg_error *err);
void ptreg_brute_target_free(ptreg_brute_target *t);

#endif
