/* Normals on a GPU device (normals_device.c; kernels feat/neighbors.cl,
 * feat/normals.cl): every point's neighbor list found on the device (the
 * feature code's searches, pfh_device.c), then per point its covariance,
 * smallest eigenvector, curvature and the viewpoint's or direction's flip
 * (normals.c's arithmetic: with double on the device, the CPU's bits).
 * Private to the library and its tests. */
#ifndef PTREG_FEAT_NORMALS_DEVICE_H
#define PTREG_FEAT_NORMALS_DEVICE_H

#include "device/backend.h"
#include "device/engine.h"
#include "nn/nn_device.h"
#include "ptreg/features.h"

/* The estimates of normals.cl (one program, no -D options of its own). */
extern const kernel_program normals_kernels;

/* The device engine of ptreg_normals: every neighborhood and the
 * viewpoint, direction and none orientations; tangent-plane (a spanning
 * tree grown one edge after another) is refused, PTREG_ERR_UNSUPPORTED
 * naming it. */
extern const engine normals_device_engine;

/* The normals of a cloud resident on dev, left there: for a caller that
 * keeps working on the same device (ICP's point-to-plane target).
 * - xyz: the cloud's 3n floats on dev, in the cloud's order; tree: a k-d
 *   tree of the same points on dev (nn_device_tree_upload; any build: the
 *   neighbor lists are exact). Both are only read.
 * - opt: as ptreg_normals checked them (orientation not tangent-plane).
 * - *normals_out: a new buffer of 3n floats (NaN where a point has no
 *   normal), the caller's to dbuf_free; curvature_out (may be NULL): n
 *   floats likewise.
 * - missing (may be NULL): the points without a normal (4 bytes come back;
 *   NULL: nothing comes back and nothing is waited for).
 * Launches: 2 with k-NN (the lists, the estimate), 3 with a radius alone
 * (its lists count, then write; the counts come back to sum the offsets).
 * The list buffers are freed before it returns. */
ptreg_status feat_device_normals(dev_handle *dev, const dbuf *xyz, const nn_device_tree *tree, size_t n,
                                 const ptreg_normals_options *opt, dbuf **normals_out, dbuf **curvature_out,
                                 size_t *missing, ptreg_error *err);

/* ptreg_normals on a resolved GPU device (normals.c has checked the
 * inputs): the cloud and its k-d tree (built on the CPU) go up, the
 * normals (and curvature when not NULL) come back. */
ptreg_status feat_device_normals_host(const ptreg_device *device, const float *xyz, size_t n,
                                      const ptreg_normals_options *opt, float *normals, float *curvature,
                                      size_t *missing, ptreg_error *err);

#endif
