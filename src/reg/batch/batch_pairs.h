/* The pair set of batched EM-ICP (batch_pairs.c): what its CPU path
 * (batch.c) and device path (batch_device.c) take from it first. Private
 * to the library and its tests. */
#ifndef PTREG_REG_BATCH_PAIRS_H
#define PTREG_REG_BATCH_PAIRS_H

#include "ptreg/batch.h"

/* Pair i's points (a shared target: every pair's). */
static inline size_t batch_source_points(const ptreg_pair_set *p, size_t i)
{
    return p->source_offset[i + 1] - p->source_offset[i];
}

static inline size_t batch_target_points(const ptreg_pair_set *p, size_t i)
{
    return p->target_offset ? p->target_offset[i + 1] - p->target_offset[i] : p->target_points;
}

static inline const float *batch_target_of(const ptreg_pair_set *p, size_t i)
{
    return p->target + 3 * (p->target_offset ? p->target_offset[i] : 0);
}

static inline const float *batch_source_of(const ptreg_pair_set *p, size_t i)
{
    return p->source + 3 * p->source_offset[i];
}

/* The pairs' checks: points and offsets given, every point finite, the
 * schedule's values in range; the first faulty pair named. */
ptreg_status batch_check_pairs(const ptreg_pair_set *p, const ptreg_batch_options *o, ptreg_error *err);

/* One pair's schedule and reference points: ptreg_emicp's, from its
 * target. */
typedef struct batch_setup {
    double source_c[3], target_c[3], radius;
    double sigma2_init, sigma2_final, d02;
} batch_setup;

/* Pair i's setup; 0 when its target has no extent and the schedule was
 * not given. */
int batch_setup_pair(const ptreg_pair_set *p, size_t i, const ptreg_batch_options *o, batch_setup *s);
/* The most source or target points of a pair. */
size_t batch_largest_pair(const ptreg_pair_set *p);
/* The message for a pair that batch_setup_pair refuses. */
ptreg_status batch_no_extent(size_t pair, ptreg_error *err);

/* Declared in the public headers before 1.x; the library's own (not exported). */
/* The schedule a pair with this target runs: sigma^2 from and to, and d0^2
 * (the options', or ptreg_emicp's defaults from the target's RMS radius
 * about its centroid, *radius); PTREG_ERR_ARG when the target has no
 * extent and the options give none. */
ptreg_status ptreg_batch_schedule(const float *target, size_t m, const ptreg_batch_options *opt, double *sigma2_init,
                                  double *sigma2_final, double *d02, double *radius, ptreg_error *err);

#endif
