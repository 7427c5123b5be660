/* Multiway registration's stages, shared by its two files: the scans
 * prepared, the pairs registered (multiway.c), the graph built and solved
 * (multiway_graph.c). */
#ifndef PTREG_MULTIWAY_IMPL_H
#define PTREG_MULTIWAY_IMPL_H

#include "ptreg/multiway.h"

/* One edge's record, the unit ranks exchange: T (16), information (36),
 * fitness (both ways), rmse, pairs, 1 where the pair was registered, and
 * the share of its pairs that lie on the target's surface (overlap() in
 * multiway.c). */
enum { MW_RECORD = 57, MW_FITNESS = 52, MW_RMSE = 53, MW_PAIRS = 54, MW_VALID = 55, MW_SHARP = 56 };
/* A pair with a smaller share on the surface is a wrong pose, not an edge. */
#define MW_MIN_SHARP 0.5

typedef struct multiway_prepared {
    ptreg_register_cloud features; /* empty when the edges come from a graph */
    ptreg_cloud fine;              /* the joint refinement's: cubes of half a voxel, with normals */
} multiway_prepared;

ptreg_status multiway_prepare(const ptreg_multiway_scan *scans, size_t count, double voxel, int features,
                              multiway_prepared **out, ptreg_error *err);
void multiway_prepared_free(multiway_prepared *p, size_t count);
ptreg_status multiway_candidates(const multiway_prepared *p, size_t count, int k, ptreg_scan_pair **pairs, size_t *n,
                                 ptreg_error *err);
/* The joint refinement's ICP runs at the pairs' distance halved, then
 * halved again, ..., this many times. */
enum { MW_JOINT_FINER = 2 };
/* Each pair's record: the global registration and ICP of the pair's
 * voxel-grid centroids; or, with starts (n x 16), the joint refinement's
 * ICP of all points from these (a pair whose start is not finite is
 * skipped: its record stays 0). */
ptreg_status multiway_register_pairs(const multiway_prepared *p, const ptreg_scan_pair *pairs, size_t n,
                                     const ptreg_multiway_options *opt, double voxel, double dist, const double *starts,
                                     const ptreg_ranks *ranks, double *records, ptreg_error *err);
ptreg_status multiway_agree(const ptreg_ranks *ranks, ptreg_status st, ptreg_error *err);

#endif
