/* Global registration against a target prepared once (the tracker's
 * recovery): the target's voxel-grid centroids, their normals and FPFH
 * descriptors are what ptreg_register computes of the target on every call;
 * a caller that registers many sources onto one target keeps them here. */
#ifndef PTREG_REG_GLOBAL_IMPL_H
#define PTREG_REG_GLOBAL_IMPL_H

#include "ptreg/global.h"

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

#endif
