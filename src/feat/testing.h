/* The features' test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_FEAT_TESTING_H
#define PTREG_FEAT_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/features.h"
#include "ptreg/harris3d.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PCL's pair feature of (p1, n1) and (p2, n2): theta, alpha, phi and the
 * distance. Returns 0 (features unset) when the points coincide or the
 * source normal is parallel to p2 - p1. */
int ptreg_pair_feature(const float p1[3], const float n1[3], const float p2[3], const float n2[3], float f[4]);

/* ptreg_pfh / ptreg_fpfh of the model's cloud on the model's device (opt's
 * device is not read): the rows of the `count` points `which` (their
 * indices, any order, repeats allowed), in that order, into out; which
 * NULL: every point's (count is then not read). *missing counts the NaN
 * rows among them. */
ptreg_status ptreg_features_model_pfh(ptreg_features_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                      size_t count, float *out, size_t *missing, ptreg_error *err);

/* A new volume (any size) in place of the handle's. */
ptreg_status ptreg_harris3d_volume_set(ptreg_harris3d_volume *hv, const ptreg_volume *vol, ptreg_error *err);

/* Keypoints from a score volume (see the options). *keypoints is malloc'ed
 * (NULL when none); threshold_used and local_maxima may be NULL. */
ptreg_status ptreg_harris3d_keypoints(const float *scores, size_t nx, size_t ny, size_t nz,
                                      const ptreg_harris3d_options *opt, ptreg_keypoint **keypoints, size_t *count,
                                      double *threshold_used, size_t *local_maxima, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
