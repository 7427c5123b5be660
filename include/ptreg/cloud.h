/* ptreg's point clouds: the cloud, its origin, voxel downsampling and selecting points.
 * (<ptreg/core.h> includes it too.) */
#ifndef PTREG_CLOUD_H
#define PTREG_CLOUD_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A point cloud: interleaved float xyz (NumPy's N x 3 layout), optional
 * normals in the same layout. Point i sits at origin + xyz[3i..3i+2] in
 * the world: float32 keeps about 7 digits, so georeferenced data (UTM
 * northings in the millions of metres) is stored relative to a float64
 * origin that the readers choose and the writers add back
 * (docs/FORMATS.md, "Coordinates far from zero"). The caller owns it; free
 * with ptreg_cloud_free. */
typedef struct ptreg_cloud {
    size_t n;
    float *xyz;
    float *normals;           /* NULL when the cloud has none */
    float *curvature;         /* NULL when none: set by the caller (ptreg normals), written by the
                               * PLY and PCD writers next to the normals; readers skip it */
    size_t dropped_nonfinite; /* points dropped on load (NaN/inf coordinates) */
    double origin[3];         /* world position of xyz's zero (default 0, 0, 0) */
    uint16_t *intensity;      /* NULL when none: LAS intensity, kept when a reader is asked to */
    uint8_t *classification;  /* NULL when none: LAS classification, likewise */
    uint8_t *rgb;             /* NULL when none: 3 per point (red, green, blue, 0-255), from PLY, PCD, LAS,
                               * text or OBJ/OFF colours; kept by the readers unless asked not to and
                               * written where the format has a place for it (docs/FORMATS.md) */
} ptreg_cloud;

/* A coordinate at least this large (in magnitude) loses more than 1 mm
 * (half a float32 step) when stored as float32: the readers give a cloud
 * whose first point has one an origin (docs/FORMATS.md). */
#define PTREG_ORIGIN_THRESHOLD 16384.0

PTREG_API void ptreg_cloud_init(ptreg_cloud *cloud);
PTREG_API ptreg_status ptreg_cloud_alloc(ptreg_cloud *cloud, size_t n, int with_normals, ptreg_error *err);
PTREG_API void ptreg_cloud_free(ptreg_cloud *cloud);
/* Expresses the points relative to a new origin: each coordinate becomes
 * (old origin - new origin) + xyz in double, rounded once to float. A
 * point that lands beyond float range is PTREG_ERR_ARG (nothing changed). */
PTREG_API ptreg_status ptreg_cloud_set_origin(ptreg_cloud *cloud, const double origin[3], ptreg_error *err);
/* Removes points with a non-finite coordinate (normals do not decide: a NaN
 * normal is a valid "unknown") and adds the count to dropped_nonfinite. */
PTREG_API void ptreg_cloud_drop_nonfinite(ptreg_cloud *cloud);
/* Whether n points can carry a shape: a pose, a normal or a descriptor needs
 * at least 3 points, not all one point (compared by value: -0 is 0).
 * Otherwise PTREG_ERR_ARG, "WHAT: 1 point: at least 3 are needed" or "WHAT:
 * all 64 points are the same point". The registrations and the feature
 * estimators check their clouds with it; without it such a cloud gave an
 * arbitrary pose or normals with a success status. */
PTREG_API ptreg_status ptreg_check_shape(const char *what, const float *xyz, size_t n, ptreg_error *err);

/* Voxel-grid downsampling as Open3D's VoxelDownSample: cubes of side voxel
 * (> 0) from half a voxel below the cloud's minimum; each occupied cube's
 * points become their centroid (in double, in point order) and, when the
 * cloud has normals, their mean normal made unit (NaN where they cancel;
 * Open3D leaves the mean unnormalised) and, when it has colours, their mean
 * colour rounded (intensity and classification are not kept). The same output for every run: in
 * the order of each cube's first point (Open3D's is a hash map's). A voxel
 * so small that an axis holds 2^21 cubes, or a non-finite point, is
 * PTREG_ERR_ARG. out is allocated (ptreg_cloud_free). */
PTREG_API ptreg_status ptreg_voxel_downsample(const ptreg_cloud *in, double voxel, ptreg_cloud *out, ptreg_error *err);

struct ptreg_device; /* device.h */
/* ptreg_voxel_downsample on a device: the CPU (cpu; auto takes a GPU where
 * one is found, as ptreg_device_resolve does), or a GPU named (cuda:N,
 * opencl:N) with double precision, which gives the same output bit for bit
 * (the same count, order, centroids, normals and colours); a GPU without
 * double precision is PTREG_ERR_UNSUPPORTED. *on (may be NULL) receives
 * where it ran; ptreg_voxel_resolve_device says where beforehand (or why
 * not). */
PTREG_API ptreg_status ptreg_voxel_resolve_device(const struct ptreg_device *request, struct ptreg_device *on,
                                                  ptreg_error *err);
PTREG_API ptreg_status ptreg_voxel_downsample_on(const ptreg_cloud *in, double voxel, const struct ptreg_device *device,
                                                 struct ptreg_device *on, ptreg_cloud *out, ptreg_error *err);

/* ---- selecting points: downsampling and filters (nn.h has the outlier
 * filters, whose masks this applies) ---- */

/* out holds the points of in whose keep[i] is nonzero, in their order, with
 * every attribute in carries (normals, curvature, intensity, classification)
 * and its origin. out is allocated (ptreg_cloud_free); in and out must differ. */
PTREG_API ptreg_status ptreg_cloud_select(const ptreg_cloud *in, const unsigned char *keep, ptreg_cloud *out,
                                          ptreg_error *err);
/* Random downsampling: keep[i] set for exactly count of the n points
 * (count <= n), drawn without replacement by a Fisher-Yates shuffle seeded
 * with seed (ptreg_rng), the same points for every run and thread count;
 * selecting by the mask keeps the cloud's order (Open3D's
 * RandomDownSample keeps floor(ratio * n) points from an unseeded shuffle,
 * in shuffled order). count > n is PTREG_ERR_ARG. */
PTREG_API ptreg_status ptreg_random_downsample(size_t n, size_t count, uint64_t seed, unsigned char *keep,
                                               ptreg_error *err);
/* The count a fraction in [0, 1] of n points keeps, as Open3D's
 * RandomDownSample: floor(fraction * n). */
PTREG_API size_t ptreg_random_downsample_count(size_t n, double fraction);
/* Uniform downsampling as Open3D's UniformDownSample: points 0, every,
 * 2 every, ... (every >= 1, else PTREG_ERR_ARG). */
PTREG_API ptreg_status ptreg_uniform_downsample(size_t n, size_t every, unsigned char *keep, ptreg_error *err);

/* Grows lo, hi to hold n points (interleaved xyz): start them at +inf,
 * -inf, or at the bounds of the pieces before. NaN coordinates are passed
 * over; on a tie the bound held stays (of -0 and +0, the first seen). */
PTREG_API void ptreg_points_bounds(const float *xyz, size_t n, double lo[3], double hi[3]);

#ifdef __cplusplus
}
#endif

#endif
