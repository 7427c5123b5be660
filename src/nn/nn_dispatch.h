/* The brute-force target for the nearest-neighbor kernels, which run
 * through their table (nn_cpu_kernels(), nn/nn_kernels.h). */
#ifndef PTREG_NN_DISPATCH_H
#define PTREG_NN_DISPATCH_H

#include "nn/nn_kernels.h"

/* The target as brute force wants it (SoA, NaN-padded), made once and
 * reused across query batches. */
ptreg_status brute_target_init(brute_target *t, const float *xyz, size_t m, ptreg_error *err);
void brute_target_free(brute_target *t);

#endif
