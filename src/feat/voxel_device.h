/* The voxel grid on a GPU device (voxel_device.c; kernels feat/voxel.cl):
 * ptreg_voxel_downsample's output, the same bits (the same centroids,
 * normals, colours and order), on a device with double precision. Private
 * to the library and its tests. */
#ifndef PTREG_FEAT_VOXEL_DEVICE_H
#define PTREG_FEAT_VOXEL_DEVICE_H

#include "device/backend.h"
#include "ptreg/core.h"

extern const kernel_program voxel_kernels;

/* The -D options of voxel_kernels (for the NVRTC build test). */
#define VOXEL_DEVICE_DEFINES "-DVOXEL_WG=256 -DVOXEL_ITEMS=4"

/* The voxel centroids of a cloud resident on dev, left there (for a
 * caller that registers them on the same device: ICP's --voxel).
 * - xyz: n points (3n floats); normals (3n floats) and rgb (3n bytes) may
 *   be NULL: then no output of theirs.
 * - *count: the voxels; *out_xyz (3 count floats), *out_normals and
 *   *out_rgb (when normals, rgb) are new buffers, the caller's to free
 *   (NULL when count is 0).
 * Errors as ptreg_voxel_downsample's (PTREG_ERR_ARG: a voxel that is not a
 * positive number, a non-finite point, 2^21 cells along an axis);
 * PTREG_ERR_UNSUPPORTED on a device without double precision.
 * Launches: 6 (bounds, keys into a table, a scan in 2, scatter, sums); 32
 * bytes come back (the bounds and the count of voxels). */
ptreg_status voxel_device_downsample(dev_handle *dev, const dbuf *xyz, const dbuf *normals, const dbuf *rgb, size_t n,
                                     double voxel, size_t *count, dbuf **out_xyz, dbuf **out_normals, dbuf **out_rgb,
                                     ptreg_error *err);

/* ptreg_voxel_downsample on the device named (resolved, a GPU): the cloud
 * goes up, the voxels come back into out (allocated, with the cloud's
 * origin). */
ptreg_status voxel_device_downsample_host(const ptreg_device *device, const ptreg_cloud *in, double voxel,
                                          ptreg_cloud *out, ptreg_error *err);

#endif
