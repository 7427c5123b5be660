/* Voxel-grid downsampling of a file read in pieces: ptreg_voxel_downsample's
 * cloud, bit for bit, while memory holds one piece and the occupied voxels
 * rather than every point. Two passes: the bounds anchor the grid (Open3D's
 * voxel_min_bound), then each point is added to its voxel's sums in file
 * order, so each centroid is summed in the same order as the whole-cloud
 * version's and voxels come out in the order of their first point. */
#include "core/voxel_impl.h"
#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>

/* Points per piece: 12 MB of coordinates, few enough calls. */
#define PIECE_POINTS (1u << 20)

typedef struct bounds_pass {
    double lo[3], hi[3];
    size_t points;
    int normals, colors;
} bounds_pass;

static ptreg_status take_bounds(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    (void)err;
    bounds_pass *b = ctx;
    ptreg_points_bounds(piece->xyz, piece->n, b->lo, b->hi);
    b->points += piece->n;
    b->normals = piece->normals != NULL;
    b->colors = piece->rgb != NULL;
    return PTREG_OK;
}

typedef struct sum_pass {
    voxel_sums sums;
    double origin[3];
} sum_pass;

static ptreg_status add_piece(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    sum_pass *p = ctx;
    memcpy(p->origin, piece->origin, sizeof p->origin);
    return voxel_sums_add(&p->sums, piece->xyz, piece->normals, piece->rgb, piece->n, err);
}

ptreg_status ptreg_voxel_downsample_file(const char *path, const ptreg_read_options *opt, double voxel,
                                         ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    if (!(voxel > 0.0) || !isfinite(voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: the voxel size %g is not a positive number",
                               voxel);
    bounds_pass b = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0, 0, 0};
    ptreg_status st = ptreg_cloud_read_pieces(path, opt, PIECE_POINTS, take_bounds, &b, err);
    voxel_grid grid;
    if (!st)
        st = voxel_grid_init(b.lo, b.hi, voxel, &grid, err);
    if (st)
        return st;
    sum_pass p;
    memset(&p, 0, sizeof p);
    voxel_sums_init(&p.sums, &grid, b.normals, b.colors);
    st = ptreg_cloud_read_pieces(path, opt, PIECE_POINTS, add_piece, &p, err);
    if (!st)
        st = voxel_sums_cloud(&p.sums, out, err);
    if (!st)
        memcpy(out->origin, p.origin, sizeof out->origin);
    voxel_sums_free(&p.sums);
    return st;
}
