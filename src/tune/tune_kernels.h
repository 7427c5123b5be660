/* The tuner's kernels and search internals: each kernel's spaces, jobs
 * and apply functions (src/tune/kernels.c publishes them through
 * ptreg_tune_kernels), the enumeration, and the cache lookup that
 * ptreg_tune_variant goes through. Not installed; the tests
 * reach them through the static library. */
#ifndef PTREG_TUNE_KERNELS_H
#define PTREG_TUNE_KERNELS_H

#include <stddef.h>

#include "ptreg/tune.h"

struct ptreg_pair_options;
struct ptreg_pair_gpu;
struct ptreg_harris3d_options;
struct ptreg_features_gpu;

typedef struct ptreg_tune_pair_job ptreg_tune_pair_job;
typedef struct ptreg_tune_pair_device_job ptreg_tune_pair_device_job;
typedef struct ptreg_tune_lddmm_device_job ptreg_tune_lddmm_device_job;
typedef struct ptreg_tune_feature_job ptreg_tune_feature_job;

/* The values parameter p takes, in order, into out (PTREG_TUNE_MAX_VALUES
 * at most); returns how many. */
int ptreg_tune_param_values(const ptreg_tune_param *p, double *out);
/* The valid points in lexicographic order (the first parameter slowest):
 * up to cap points of param_count doubles each into points (may be NULL to
 * count); returns how many are valid. A constraint is tested as soon as its
 * parameters are bound. */
size_t ptreg_tune_enumerate(const ptreg_tune_space *space, const ptreg_tune_machine *m, double *points, size_t cap,
                            ptreg_tune_enum_stats *stats);
/* Whether a whole point satisfies every constraint (the plain filter the
 * enumeration is tested against). */
int ptreg_tune_valid(const ptreg_tune_space *space, const ptreg_tune_machine *m, const double *point);
/* ptreg_tune_method_name's inverse: 0, or -1 for an unknown name. */
int ptreg_tune_method_parse(const char *name, ptreg_tune_method *m);
/* The pair engine (pair.h): threads, col_tile, row_block, row_vectors and
 * the loop order (0 tiles inside, 1 outside), on n x n Gaussian sums in
 * the given precision. */
void ptreg_tune_space_pair(ptreg_tune_space *space);
/* A point of that space as the engine's options and a thread count. */
void ptreg_tune_pair_apply(const double *point, struct ptreg_pair_options *opt, int *threads);
/* Inputs for the pair engine's candidates: n random rows and columns
 * (fixed seed), the reference sums (the built-in defaults' options). */
ptreg_status ptreg_tune_pair_job_create(size_t n, int precision, ptreg_tune_pair_job **job, ptreg_error *err);
void ptreg_tune_pair_job_destroy(ptreg_tune_pair_job *job);
/* ptreg_tune_measure_fn for the pair engine (error: the sums' normalised
 * distance from the reference's). */
ptreg_status ptreg_tune_pair_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                     ptreg_error *err);
/* 3-D Harris's CPU fast path (harris3d.h): threads and rows per tile
 * (0: the built-in rule); the scores' bits never change. */
void ptreg_tune_space_harris(ptreg_tune_space *space);
void ptreg_tune_harris_apply(const double *point, struct ptreg_harris3d_options *opt, int *threads);
/* FPFH (features.h): threads (its work is per point, with no tile to
 * choose). */
void ptreg_tune_space_fpfh(ptreg_tune_space *space);
void ptreg_tune_fpfh_apply(const double *point, int *threads);
/* The pair engine on a GPU device (EM-ICP's E-steps there): work-group
 * size, the exp (0 the engine's polynomial, 1 the device's), the column
 * splits' groups per compute unit; wg within the device's work-group and
 * local memory. */
void ptreg_tune_space_pair_device(ptreg_tune_space *space);
void ptreg_tune_pair_device_apply(const double *point, struct ptreg_pair_gpu *gpu);
/* n random rows and columns; the reference: the CPU engine's sums in the
 * same precision. */
ptreg_status ptreg_tune_pair_device_job_create(const ptreg_device *device, size_t n, int precision,
                                               ptreg_tune_pair_device_job **job, ptreg_error *err);
void ptreg_tune_pair_device_job_destroy(ptreg_tune_pair_device_job *job);
ptreg_status ptreg_tune_pair_device_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                            ptreg_error *err);
/* LDDMM's shooting and adjoint on a GPU device: the pair engine's device
 * space (ptreg_tune_pair_device_apply sets its points), wg within the
 * adjoint's local memory too; wg also orders LDDMM's reductions. Measured
 * on one objective and gradient evaluation of n landmarks over 10 steps. */
void ptreg_tune_space_lddmm_device(ptreg_tune_space *space);
/* The reference: the CPU's gradient in the same precision (fp32 or fp64). */
ptreg_status ptreg_tune_lddmm_device_job_create(const ptreg_device *device, size_t n, int precision,
                                                ptreg_tune_lddmm_device_job **job, ptreg_error *err);
void ptreg_tune_lddmm_device_job_destroy(ptreg_tune_lddmm_device_job *job);
/* ptreg_tune_measure_fn (error: the gradient's normalised distance from
 * the reference). */
ptreg_status ptreg_tune_lddmm_device_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                             ptreg_error *err);
/* Harris (harris != 0): an n x n x n/2 uint8 volume of boxes, W = 5; FPFH:
 * a blob of n points with normals, radius 0.12 (about fifty neighbors);
 * the reference: the built-in defaults' output. */
ptreg_status ptreg_tune_feature_job_create(int harris, size_t n, ptreg_tune_feature_job **job, ptreg_error *err);
void ptreg_tune_feature_job_destroy(ptreg_tune_feature_job *job);
/* The candidates on a GPU from here on, the spaces of
 * ptreg_tune_space_harris_device and ptreg_tune_space_fpfh_device. Harris's
 * reference stays the CPU's scores (the device's are the same bits);
 * FPFH's becomes the device's default output (its knobs keep the bits). */
ptreg_status ptreg_tune_feature_job_on(ptreg_tune_feature_job *job, const ptreg_device *device, ptreg_error *err);
/* Harris on a GPU: its kernels, direct, tile, separable or zchunk (0..3). */
void ptreg_tune_space_harris_device(ptreg_tune_space *space);
/* FPFH on a GPU: threads per point's work-group (64, 128, 256) and per
 * neighbor-search group (32..256), within the device's work-group. */
void ptreg_tune_space_fpfh_device(ptreg_tune_space *space);
void ptreg_tune_fpfh_device_apply(const double *point, struct ptreg_features_gpu *gpu);
/* ptreg_tune_measure_fn (error: the largest difference relative to the
 * reference's largest value). */
ptreg_status ptreg_tune_feature_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                        ptreg_error *err);
/* The winner for (machine, the space's kernel, size class), or for the
 * nearest size class stored, into point (a parameter missing from the
 * entry keeps its fallback); its class into found_class. 1 when found, 0
 * when not (each value must be one its parameter takes and the point
 * within the constraints on m, else the entry is ignored), -1 when the
 * cache could not be read for want of memory. */
int ptreg_tune_cache_lookup(const ptreg_tune_space *space, const ptreg_tune_machine *m, const char *size_class,
                            double *point, char *found_class, size_t class_size);
/* The variant of space's kernel for a problem of `work` units on `on` (the
 * CPU or a resolved device): the machine's winner from the cache, else the
 * fallbacks. PTREG_ERR_NOMEM leaves the fallbacks; a device that cannot be
 * queried is left to the algorithm to report (the fallbacks, PTREG_OK). */
ptreg_status ptreg_tune_choose(const ptreg_tune_space *space, const ptreg_device *on, double work,
                               ptreg_tune_choice *choice, ptreg_error *err);

#endif
