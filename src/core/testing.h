/* The library's test and fuzz hooks, and the reference paths the tests
 * compare against: not part of the public API (docs/API.md, "Tiers").
 * This header is not installed and not in <ptreg/ptreg.h>; its functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_TESTING_H
#define PTREG_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/apt.h"
#include "ptreg/core.h"
#include "ptreg/features.h"
#include "ptreg/global.h"
#include "ptreg/harris3d.h"
#include "ptreg/icp.h"
#include "ptreg/io.h"
#include "ptreg/lddmm.h"
#include "ptreg/motif.h"
#include "ptreg/nn.h"
#include "ptreg/pair.h"
#include "ptreg/results.h"
#include "ptreg/synth_apt.h"
#include "ptreg/track.h"
#include "ptreg/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the readers from memory (the fuzzers): each reads what its file
 * reader (io.h, apt.h, lddmm.h, nn.h) reads, from data; name is used in
 * messages ---- */

ptreg_status ptreg_cloud_read_memory(const void *data, size_t size, ptreg_format format, const char *name,
                                     ptreg_cloud *cloud, ptreg_error *err);
ptreg_status ptreg_cloud_read_memory_with(const void *data, size_t size, const ptreg_read_options *opt,
                                          const char *name, ptreg_cloud *cloud, ptreg_error *err);
ptreg_status ptreg_las_header_read_memory(const void *data, size_t size, const char *name, ptreg_las_header *header,
                                          ptreg_error *err);
ptreg_status ptreg_transform_read_memory(const void *data, size_t size, const char *name, double T[16],
                                         ptreg_error *err);
/* A detached NRRD header cannot be read this way. */
ptreg_status ptreg_volume_read_memory(const void *data, size_t size, ptreg_volume_format format, const char *name,
                                      const ptreg_raw_options *raw, ptreg_volume *vol, ptreg_error *err);
ptreg_status ptreg_pairs_read_memory(const void *data, size_t size, const char *name, ptreg_pairs_file *pf,
                                     ptreg_error *err);
ptreg_status ptreg_poses_read_memory(const void *data, size_t size, const char *name, double **poses, size_t *count,
                                     ptreg_error *err);
ptreg_status ptreg_index_pairs_read_memory(const void *data, size_t size, const char *name, size_t limit,
                                           size_t **pairs, size_t *count, ptreg_error *err);
ptreg_status ptreg_correspondences_read_memory(const void *data, size_t size, const char *name, size_t ns, size_t nt,
                                               uint32_t **source, uint32_t **target, double **weights, size_t *count,
                                               ptreg_error *err);
ptreg_status ptreg_apt_read_memory(const void *data, size_t size, ptreg_apt_format format, const char *name,
                                   ptreg_apt *apt, ptreg_error *err);
ptreg_status ptreg_ranges_read_memory(const void *data, size_t size, const char *name, ptreg_ranges *ranges,
                                      ptreg_error *err);
ptreg_status ptreg_lddmm_model_read_memory(const void *data, size_t size, const char *name, ptreg_lddmm_model *model,
                                           ptreg_error *err);
ptreg_status ptreg_landmark_table_read_memory(const void *data, size_t size, const char *name, size_t row,
                                              double **xyz, size_t *n, ptreg_error *err);
ptreg_status ptreg_model_index_load_memory(const void *data, size_t size, const char *name,
                                           ptreg_model_index **index, ptreg_error *err);
/* ptreg_tune_cache_lookup on the cache's text (path names it in the
 * warning). */
int ptreg_tune_cache_lookup_text(const char *text, const char *path, const ptreg_tune_space *space,
                                 const ptreg_tune_machine *m, const char *size_class, double *point,
                                 char *found_class, size_t class_size);

/* ---- references and parity measures ---- */

/* The largest difference between the components of A's and B's rotation
 * quaternions (4x4 transforms), q and -q being one rotation: the parity
 * measure of the batch device suites. NaN when either rotation has an entry
 * that is not finite, so that `difference <= tol` fails it. */
double ptreg_transform_quaternion_difference(const double A[16], const double B[16]);
/* The pair engine's vectorised exp on n floats (out may alias in):
 * relative error under 1e-6 for x in [-87.3, 0], 0 below. The Gaussian
 * sums and LDDMM's kernels fold log2(e) into their scale and take 2^t
 * instead (docs/ALGORITHMS.md, "Pair engine"), with the same 0 below. */
void ptreg_pair_exp(const float *in, float *out, size_t n);
/* 1-NN of nq queries against m target points by brute force, blocked over
 * the target, OpenMP over queries: the exact reference of the searches. */
ptreg_status ptreg_brute_nearest(const float *target, size_t m, const float *queries, size_t nq, uint32_t *index,
                                 float *dist2, ptreg_error *err);
size_t ptreg_kdtree_size(const ptreg_kdtree *tree);
/* PCL's pair feature of (p1, n1) and (p2, n2): theta, alpha, phi and the
 * distance. Returns 0 (features unset) when the points coincide or the
 * source normal is parallel to p2 - p1. */
int ptreg_pair_feature(const float p1[3], const float n1[3], const float p2[3], const float n2[3], float f[4]);
/* ptreg_pfh / ptreg_fpfh of the model's cloud on the model's device (opt's
 * device is not read): the rows of the `count` points `which` (their
 * indices, any order, repeats allowed), in that order, into out; which
 * NULL: every point's (count is then not read). *missing counts the NaN
 * rows among them. */
ptreg_status ptreg_features_model_pfh(ptreg_features_model *m, const ptreg_features_options *opt,
                                      const uint32_t *which, size_t count, float *out, size_t *missing,
                                      ptreg_error *err);
/* A new volume (any size) in place of the handle's. */
ptreg_status ptreg_harris3d_volume_set(ptreg_harris3d_volume *hv, const ptreg_volume *vol, ptreg_error *err);
/* The number of points in the first shells: the k values that close a shell
 * (up to max, written to shells[]; returns how many). */
size_t ptreg_lattice_shells(ptreg_lattice lattice, size_t *shells, size_t max);
/* w(r) of the kernel with scale k (1 for NONE). */
double ptreg_robust_weight(ptreg_robust_kernel kernel, double k, double r);

/* ---- small helpers the API tests check ---- */

size_t ptreg_npy_type_size(ptreg_npy_type type);
const char *ptreg_volume_format_name(ptreg_volume_format format);
void ptreg_pairs_file_init(ptreg_pairs_file *pf);
void ptreg_apt_init(ptreg_apt *apt);
void ptreg_apt_synth_init(ptreg_apt_synth *s);
/* The field called name, or NULL (the front ends loop over a table). */
const ptreg_result_field *ptreg_result_find(const ptreg_result_table *table, const char *name);
/* Enum parsers whose enums are options: a front end sets them through the
 * options table's row (ptreg_option_parse). -1 for an unknown name. */
int ptreg_nn_method_parse(const char *name, ptreg_nn_method *method);
int ptreg_track_predict_parse(const char *name, ptreg_track_predict *predict);

/* ---- public before 1.x, now called by the tests alone: the front ends
 * reach these through other entries (FGR through ptreg_register, the
 * keypoints through ptreg_harris3d) ---- */

void ptreg_error_clear(ptreg_error *err);
/* Fewer than 10 matches after the tuple test leave the identity (as
 * Open3D). The same result for every run and thread count. */
ptreg_status ptreg_fgr(const float *source, size_t ns, const float *target, size_t nt, const ptreg_matches *matches,
                       const ptreg_fgr_options *opt, ptreg_fgr_result *result, ptreg_error *err);
void ptreg_fgr_options_default(ptreg_fgr_options *opt);
/* Keypoints from a score volume (see the options). *keypoints is malloc'ed
 * (NULL when none); threshold_used and local_maxima may be NULL. */
ptreg_status ptreg_harris3d_keypoints(const float *scores, size_t nx, size_t ny, size_t nz,
                                      const ptreg_harris3d_options *opt, ptreg_keypoint **keypoints,
                                      size_t *count, double *threshold_used, size_t *local_maxima,
                                      ptreg_error *err);
/* "none", "huber", "cauchy", "tukey" or "gm"; -1 for another name. */
int ptreg_robust_kernel_parse(const char *name, ptreg_robust_kernel *kernel);
ptreg_status ptreg_pairs_write(const char *path, const ptreg_pairs_file *pf, ptreg_error *err);
/* Reads and checks the header block as the reader does (the same errors,
 * PTREG_ERR_FORMAT naming the byte; LAZ and versions past 1.4
 * PTREG_ERR_UNSUPPORTED). */
ptreg_status ptreg_las_header_read(const char *path, ptreg_las_header *header, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
