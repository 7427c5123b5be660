/* What the kernels' candidate runs share (src/tune/). */
#ifndef PTREG_TUNE_IMPL_H
#define PTREG_TUNE_IMPL_H

#include "ptreg/tune.h"

/* One run of a candidate on its job's inputs, its output kept for the check. */
typedef ptreg_status (*tune_run_fn)(void *ctx, ptreg_error *err);

/* With `threads` threads: one warm-up run (its output the one checked),
 * then reps timed runs (at most 64); *seconds their median. */
ptreg_status tune_time_runs(tune_run_fn run, void *ctx, int threads, int reps, double *seconds, ptreg_error *err);

/* ||got - ref|| / ||ref||. */
double tune_normalised_error(const double *ref, const double *got, size_t len);

#endif
