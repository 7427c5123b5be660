/* The voxel grid of ptreg_voxel_downsample and its reading-in-pieces twin
 * (src/io/voxel_stream.c): one grid and one table of voxel sums, so that
 * both give the same bits. */
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

/* The occupied voxels' sums, in the order of each voxel's first point:
 * points are added in cloud order, each to its voxel's double sums, so a
 * centroid is the same whether the cloud came whole or in pieces. An open-
 * addressing table finds a key's voxel. */
typedef struct voxel_sum {
    uint64_t key;
    uint64_t count;
    double xyz[3];
} voxel_sum;

typedef struct voxel_sums {
    voxel_grid grid;
    int normals;          /* sum normals as well */
    voxel_sum *sums;      /* count of them, cap allocated */
    double *normal_sums;  /* 3 per voxel when normals */
    int colors;           /* sum colours as well */
    uint64_t *color_sums; /* 3 per voxel when colors */
    size_t count, cap;
    uint64_t *table; /* a fingerprint and 1 + a voxel's index, 0 when free; table_size a power of 2 */
    size_t table_size;
} voxel_sums;

/* An empty set of sums over the grid (nothing allocated yet). */
void voxel_sums_init(voxel_sums *v, const voxel_grid *grid, int normals, int colors);
/* Adds n points (and their normals and colours, when v->normals and
 * v->colors) in order. */
ptreg_status voxel_sums_add(voxel_sums *v, const float *xyz, const float *normals, const uint8_t *rgb, size_t n,
                            ptreg_error *err);
/* The centroids (and unit mean normals, mean colours rounded) into out
 * (allocated); the table is
 * freed first, so the peak holds the sums and the cloud only. */
ptreg_status voxel_sums_cloud(voxel_sums *v, ptreg_cloud *out, ptreg_error *err);
void voxel_sums_free(voxel_sums *v);

#endif
