/* Multiway registration's stages, shared by its two files: the scans
 * prepared, the pairs registered (multiway.c), the graph built and solved
 * (multiway_graph.c). */
#ifndef PTREG_MULTIWAY_IMPL_H
#define PTREG_MULTIWAY_IMPL_H

#include "ptreg/multiway.h"

/* One edge's record, the unit ranks exchange: T (16), information (36),
 * fitness, rmse, pairs, and 1 where the pair was registered. */
enum { MW_RECORD = 56, MW_FITNESS = 52, MW_RMSE = 53, MW_PAIRS = 54, MW_VALID = 55 };

typedef struct multiway_prepared {
    ptreg_register_cloud features; /* empty when the edges come from a graph */
    const float *normals;          /* the scan's own, or owned_normals */
    float *owned_normals;
} multiway_prepared;

ptreg_status multiway_prepare(const ptreg_multiway_scan *scans, size_t count, double voxel, int features,
                              multiway_prepared **out, ptreg_error *err);
void multiway_prepared_free(multiway_prepared *p, size_t count);
ptreg_status multiway_candidates(const multiway_prepared *p, size_t count, int k, ptreg_scan_pair **pairs,
                                 size_t *n, ptreg_error *err);
/* The joint refinement's ICP narrows its distance this many times (halving it). */
enum { MW_JOINT_FINER = 2 };
ptreg_status multiway_refine_pair(const ptreg_multiway_scan *scans, const multiway_prepared *p, size_t s, size_t t,
                                  const double init[16], const ptreg_multiway_options *opt, double dist, int finer,
                                  double rec[MW_RECORD], ptreg_error *err);
/* starts (n x 16, may be NULL): ICP from these instead of a global registration;
 * a pair whose start is not finite is skipped (its record stays 0). */
ptreg_status multiway_register_pairs(const ptreg_multiway_scan *scans, const multiway_prepared *p,
                                     const ptreg_scan_pair *pairs, size_t n, const ptreg_multiway_options *opt,
                                     double voxel, double dist, const double *starts, const ptreg_ranks *ranks,
                                     double *records, ptreg_error *err);
ptreg_status multiway_agree(const ptreg_ranks *ranks, ptreg_status st, ptreg_error *err);

#endif
