/* Voxel-grid downsampling with Open3D's semantics (core.h): the grid
 * anchored half a voxel below the cloud's minimum, each occupied voxel's
 * points replaced by their centroid. docs/ALGORITHMS.md, "Voxel-grid
 * downsampling". */
#include "core/voxel_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AXIS_BITS VOXEL_AXIS_BITS
#define AXIS_CELLS ((double)(1u << AXIS_BITS))

typedef struct voxel_point {
    uint64_t key;
    uint32_t index;
} voxel_point;

/* Sorts by key, equal keys in index order: a stable LSD radix sort (11-bit
 * digits) of points given in index order; tmp holds n more. A comparison
 * sort took longer than the registration it prepares. */
#define DIGIT_BITS 11
static void sort_by_key(voxel_point *pts, voxel_point *tmp, size_t n)
{
    const uint64_t mask = (1u << DIGIT_BITS) - 1;
    for (int shift = 0; shift < 3 * AXIS_BITS; shift += DIGIT_BITS) {
        size_t count[(1u << DIGIT_BITS) + 1] = {0};
        for (size_t i = 0; i < n; i++)
            count[((pts[i].key >> shift) & mask) + 1]++;
        for (size_t d = 0; d < mask + 1; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            tmp[count[(pts[i].key >> shift) & mask]++] = pts[i];
        memcpy(pts, tmp, n * sizeof *pts);
    }
}

/* An occupied voxel: its first point (the output's order) and its run in
 * the sorted points. */
typedef struct voxel_run {
    uint32_t first, start, count;
} voxel_run;

static int by_first(const void *a, const void *b)
{
    const voxel_run *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

ptreg_status voxel_grid_init(const double lo[3], const double hi[3], double voxel, voxel_grid *g, ptreg_error *err)
{
    g->voxel = voxel;
    for (int k = 0; k < 3; k++) {
        if (!((hi[k] - lo[k]) / voxel + 1.0 < AXIS_CELLS))
            return ptreg_error_set(err, PTREG_ERR_ARG,
                                   "voxel downsampling: a voxel of %g makes more than 2^%d cells along an axis of "
                                   "extent %g",
                                   voxel, AXIS_BITS, hi[k] - lo[k]);
        g->lo[k] = lo[k] - 0.5 * voxel;
    }
    return PTREG_OK;
}

/* The grid's origin (Open3D's voxel_min_bound) and each point's key. */
static ptreg_status voxel_keys(const ptreg_cloud *in, double voxel, voxel_point *pts, ptreg_error *err)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < in->n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], in->xyz[3 * i + k]);
            hi[k] = fmax(hi[k], in->xyz[3 * i + k]);
        }
    voxel_grid g;
    ptreg_status st = voxel_grid_init(lo, hi, voxel, &g, err);
    for (size_t i = 0; !st && i < in->n; i++)
        pts[i] = (voxel_point){voxel_key(&g, in->xyz + 3 * i), (uint32_t)i};
    return st;
}

/* The mean of a voxel's vectors (points or normals), in double, in point
 * order; normals are then made unit (NaN where they cancel). */
static void voxel_mean(const float *v, const voxel_point *pts, const voxel_run *run, int unit, float out[3])
{
    double s[3] = {0, 0, 0};
    for (uint32_t j = 0; j < run->count; j++)
        for (int k = 0; k < 3; k++)
            s[k] += v[3 * (size_t)pts[run->start + j].index + k];
    voxel_finish(s, run->count, unit, out);
}

ptreg_status ptreg_voxel_downsample(const ptreg_cloud *in, double voxel, ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    if (!(voxel > 0.0) || !isfinite(voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: the voxel size %g is not a positive number",
                               voxel);
    if (in->n > UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: %zu points is too many", in->n);
    for (size_t i = 0; i < 3 * in->n; i++)
        if (!isfinite(in->xyz[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: point %zu is not finite", i / 3);
    voxel_point *pts = malloc((in->n ? in->n : 1) * sizeof *pts), *tmp = malloc((in->n ? in->n : 1) * sizeof *tmp);
    voxel_run *runs = malloc((in->n ? in->n : 1) * sizeof *runs);
    ptreg_status st = pts && tmp && runs ? voxel_keys(in, voxel, pts, err)
                                         : ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory");
    size_t voxels = 0;
    if (!st) {
        sort_by_key(pts, tmp, in->n);
        for (size_t i = 0; i < in->n; i++) {
            if (i == 0 || pts[i].key != pts[i - 1].key)
                runs[voxels++] = (voxel_run){pts[i].index, (uint32_t)i, 0};
            runs[voxels - 1].count++;
        }
        qsort(runs, voxels, sizeof *runs, by_first);
        st = ptreg_cloud_alloc(out, voxels, in->normals != NULL, err);
    }
    if (!st)
        memcpy(out->origin, in->origin, sizeof out->origin);
    for (size_t v = 0; !st && v < voxels; v++) {
        voxel_mean(in->xyz, pts, &runs[v], 0, out->xyz + 3 * v);
        if (in->normals)
            voxel_mean(in->normals, pts, &runs[v], 1, out->normals + 3 * v);
    }
    free(pts);
    free(tmp);
    free(runs);
    return st;
}
