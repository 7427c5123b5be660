/* The voxel grid of ptreg_voxel_downsample, shared with its reading-in-
 * pieces twin (src/io/voxel_stream.c) so that both give the same bits. */
#ifndef PTREG_VOXEL_IMPL_H
#define PTREG_VOXEL_IMPL_H

#include "ptreg/core.h"

#include <math.h>
#include <stdint.h>

/* 21 bits per axis in one 63-bit key. */
#define VOXEL_AXIS_BITS 21

/* Open3D's voxel_min_bound: half a voxel below the points' minimum. */
typedef struct voxel_grid {
    double lo[3];
    double voxel;
} voxel_grid;

/* The grid of points whose bounds are lo, hi (as read from floats);
 * PTREG_ERR_ARG when an axis would hold 2^21 cubes. */
ptreg_status voxel_grid_init(const double lo[3], const double hi[3], double voxel, voxel_grid *g, ptreg_error *err);

static inline uint64_t voxel_key(const voxel_grid *g, const float p[3])
{
    uint64_t key = 0;
    for (int k = 0; k < 3; k++)
        key = key << VOXEL_AXIS_BITS | (uint64_t)floor(((double)p[k] - g->lo[k]) / g->voxel);
    return key;
}

/* A voxel's centroid from its sum in double, or its normal made unit (NaN
 * where the normals cancel). */
static inline void voxel_finish(const double s[3], uint64_t count, int unit, float out[3])
{
    double scale = 1.0 / (double)count;
    if (unit) {
        const double len = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
        scale = len > 0 ? 1.0 / len : NAN;
    }
    for (int k = 0; k < 3; k++)
        out[k] = (float)(s[k] * scale);
}

#endif
