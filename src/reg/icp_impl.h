/* What ICP's CPU path (icp.c) and device path (icp_device.c) share: the
 * checks, the choice of method, the source's order, the iterations. */
#ifndef PTREG_REG_ICP_IMPL_H
#define PTREG_REG_ICP_IMPL_H

#include "device/backend.h"
#include "nn/delaunay_impl.h"
#include "nn/index_impl.h"
#include "ptreg/icp.h"

ptreg_status ptreg_icp_check_inputs(const float *source, size_t n, const float *target, size_t m,
                                    const ptreg_icp_options *opt, ptreg_error *err);
/* The method that runs: the one asked for, unless it needs a Delaunay
 * graph the model has not got (then the k-d tree, and r->nn_note says why).
 * auto: the index's measured method (ptreg_model_index_tune) when
 * use_measured, the index has one and opt->no_tune is off (r->nn_measured
 * set), else the rule. */
ptreg_nn_method ptreg_icp_choose_nn(const ptreg_icp_options *opt, size_t n, const ptreg_model_index *idx,
                                    int use_measured, ptreg_icp_result *r);
/* Bounding-box centre and squared diagonal of the target. */
void ptreg_icp_target_extent(const float *t, size_t m, double centre[3], double *diag2);
/* The convergence tolerance: opt->tol, or the default for a target of
 * squared diagonal diag2. */
double ptreg_icp_tolerance(const ptreg_icp_options *opt, double diag2);
/* order[i]: the source point at position i of a Morton curve (stable); -1
 * when out of memory. */
int ptreg_icp_morton_order(const float *p, size_t n, uint32_t *order);
/* Where the Delaunay walks of correspondence pass `pass` start. */
ptreg_walk_start ptreg_icp_walk_start(ptreg_nn_method nn, int pass);
/* The result's per-iteration arrays (mse; walk statistics when walks). */
ptreg_status ptreg_icp_result_alloc(ptreg_icp_result *r, int max_iter, int walks, ptreg_error *err);

/* One pass of correspondences under T: the pairs kept after the filters
 * (iteration decides whether the sigma filter applies), their moments and
 * summed squared distance, and (walk not NULL) the walks' statistics. */
typedef ptreg_status (*ptreg_icp_correspond_fn)(void *ctx, const double T[16], int iteration, ptreg_moments *total,
                                                double *sum_d2, size_t *used, ptreg_walk_stats *walk,
                                                ptreg_error *err);
/* Besl & McKay's iterations from opt->init: correspondences, Horn, until
 * the MSE settles (tol), max_iter, too few pairs or a degenerate set. Fills
 * r's transformation, mse, rmse, fitness, pairs, iterations and stop. */
ptreg_status ptreg_icp_iterate(ptreg_icp_correspond_fn correspond, void *ctx, size_t n, const ptreg_icp_options *opt,
                               double tol, ptreg_icp_result *r, ptreg_error *err);

/* The program of ICP's steps (icp.cl); built with ptreg_nn_device_layout's
 * options. */
extern const ptreg_kernel_program ptreg_icp_kernels;

/* One registration on a GPU device, the model uploaded first (icp_device.c). */
ptreg_status ptreg_icp_device_once(const ptreg_device *device, const float *source, size_t n,
                                   const ptreg_model_index *idx, const ptreg_icp_options *opt, double t0,
                                   ptreg_icp_result *r, ptreg_error *err);

#endif
