/* Global registration against a target prepared once (the tracker's
 * recovery): the target's voxel-grid centroids, their normals and FPFH
 * descriptors are what ptreg_register computes of the target on every call;
 * a caller that registers many sources onto one target keeps them here. */
#ifndef PTREG_REG_GLOBAL_IMPL_H
#define PTREG_REG_GLOBAL_IMPL_H

#include "ptreg/global.h"
#include "ptreg/device.h"

/* The public ptreg_register_cloud (global.h): centroids, normals, FPFH, the voxel. */
typedef ptreg_register_cloud register_target;

/* The target's half of ptreg_register (opt may be NULL: the defaults; the
 * options are checked here). */
ptreg_status register_target_prepare(const float *target, const float *target_normals, size_t nt,
                                     const ptreg_register_options *opt, register_target *t, ptreg_error *err);
void register_target_free(register_target *t);

/* ptreg_register's source half and global stage onto a prepared target
 * (prepared with the same options): r->transformation is RANSAC's (or
 * FGR's) and nothing is refined: r->fitness, r->rmse and refine_ms stay 0.
 * The same bits as ptreg_register's global stage. */
ptreg_status register_global_prepared(const float *source, const float *source_normals, size_t ns,
                                      const register_target *t, const ptreg_register_options *opt,
                                      ptreg_register_result *r, ptreg_error *err);

/* Matches on device `on` (ptreg_match_features's, global_match.c), and
 * the device they run on for a request (the CPU where the GPU's engine
 * cannot). */
ptreg_status match_features_on(const ptreg_device *on, const float *source, size_t ns, const float *target, size_t nt,
                               int dim, int mutual, double ratio, ptreg_matches *out, ptreg_error *err);
ptreg_status match_choose_device(const ptreg_device *request, ptreg_device *on, ptreg_error *err);

/* Point i of xyz in double, and two points' squared distance (RANSAC's
 * and FGR's arithmetic). */
static inline void point_of(const float *xyz, uint32_t i, double p[3])
{
    for (int k = 0; k < 3; k++)
        p[k] = xyz[3 * (size_t)i + k];
}

static inline double dist2(const double a[3], const double b[3])
{
    return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
}

#endif
