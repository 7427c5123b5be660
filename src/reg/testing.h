/* The registrations' test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_REG_TESTING_H
#define PTREG_REG_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/global.h"
#include "ptreg/icp.h"
#include "ptreg/track.h"

#ifdef __cplusplus
extern "C" {
#endif

/* w(r) of the kernel with scale k (1 for NONE). */
double ptreg_robust_weight(ptreg_robust_kernel kernel, double k, double r);

int ptreg_track_predict_parse(const char *name, ptreg_track_predict *predict);

/* Fewer than 10 matches after the tuple test leave the identity (as
 * Open3D). The same result for every run and thread count. */
ptreg_status ptreg_fgr(const float *source, size_t ns, const float *target, size_t nt, const ptreg_matches *matches,
                       const ptreg_fgr_options *opt, ptreg_fgr_result *result, ptreg_error *err);

void ptreg_fgr_options_default(ptreg_fgr_options *opt);

/* "none", "huber", "cauchy", "tukey" or "gm"; -1 for another name. */
int ptreg_robust_kernel_parse(const char *name, ptreg_robust_kernel *kernel);

#ifdef __cplusplus
}
#endif

#endif
