/* Localization's submap (odometry_impl.h's odo_prior): which tiles of the
 * prior map are held around the predicted pose, read as the path reaches
 * them and dropped behind it, and the recovery of a frame that does not
 * fit by global registration against them. Coordinates are local: the
 * map's less the anchor, the corner of the first prediction's tile (and the
 * map's lowest height), so that every voxel lies in one tile.
 * docs/ALGORITHMS.md, "Localization". */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/global.h"
#include "ptreg/transform.h"
#include "reg/odometry/odometry_impl.h"
#include "reg/odometry/tiled_map.h"

struct odo_prior {
    const ptreg_tiled_map *map;
    ptreg_tiled_map_info info;
    const map_tile *tiles;
    int32_t anchor_tile[2];
    int32_t cells_per_tile;
    double radius, prefetch;
    uint8_t *held;
    size_t held_count;
    double *buf;
    size_t cap;
};

ptreg_status odo_prior_create(const ptreg_tiled_map *map, const ptreg_localize_options *loc, double max_range,
                              odo_prior **out, double anchor[3], ptreg_error *err)
{
    *out = NULL;
    ptreg_tiled_map_info info;
    ptreg_tiled_map_get_info(map, &info);
    if (!(fabs(loc->init[3] / info.tile) < 1e9 && fabs(loc->init[7] / info.tile) < 1e9))
        return ptreg_error_set(err, PTREG_ERR_ARG, "localize: the initial pose (%g, %g) is beyond a tiled map's reach",
                               loc->init[3], loc->init[7]);
    odo_prior *p = calloc(1, sizeof *p);
    if (!p)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "localize: out of memory");
    p->map = map;
    p->info = info;
    p->tiles = tiled_map_tiles(map);
    p->held = calloc(p->info.tiles ? p->info.tiles : 1, 1);
    if (!p->held) {
        odo_prior_free(p);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "localize: out of memory");
    }
    const double s = p->info.tile;
    p->cells_per_tile = (int32_t)nearbyint(s / p->info.voxel);
    p->radius = loc->radius > 0.0 ? loc->radius : max_range;
    p->prefetch = loc->prefetch > 0.0 ? loc->prefetch : s;
    p->anchor_tile[0] = (int32_t)floor(loc->init[3] / s);
    p->anchor_tile[1] = (int32_t)floor(loc->init[7] / s);
    anchor[0] = p->anchor_tile[0] * s, anchor[1] = p->anchor_tile[1] * s, anchor[2] = tiled_map_z0(map);
    *out = p;
    return PTREG_OK;
}

void odo_prior_free(odo_prior *p)
{
    if (!p)
        return;
    free(p->held), free(p->buf);
    free(p);
}

size_t odo_prior_held(const odo_prior *p) { return p->held_count; }

/* The tile's square in local coordinates: its lower corner. */
static void tile_corner(const odo_prior *p, const map_tile *t, double c[2])
{
    c[0] = (double)(t->ix - p->anchor_tile[0]) * p->info.tile;
    c[1] = (double)(t->iy - p->anchor_tile[1]) * p->info.tile;
}

static double square_distance(const odo_prior *p, const map_tile *t, double x, double y)
{
    double c[2];
    tile_corner(p, t, c);
    const double s = p->info.tile;
    const double dx = x < c[0] ? c[0] - x : x > c[0] + s ? x - c[0] - s : 0.0;
    const double dy = y < c[1] ? c[1] - y : y > c[1] + s ? y - c[1] - s : 0.0;
    return sqrt(dx * dx + dy * dy);
}

static ptreg_status load_tile(odo_prior *p, odo_map *m, size_t t, ptreg_error *err)
{
    const size_t n = (size_t)p->tiles[t].count;
    if (3 * n > p->cap) {
        double *buf = realloc(p->buf, 3 * n * sizeof *buf);
        if (!buf)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "localize: out of memory (a tile of %zu points)", n);
        p->buf = buf, p->cap = 3 * n;
    }
    double shift[3] = {0.0, 0.0, 0.0};
    tile_corner(p, &p->tiles[t], shift);
    ptreg_status st = tiled_map_read(p->map, t, shift, p->buf, err);
    if (st)
        return st;
    if (odo_map_add(m, p->buf, n))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "localize: out of memory (the submap has %zu points)", m->points);
    p->held[t] = 1;
    p->held_count++;
    return PTREG_OK;
}

static void drop_tile(odo_prior *p, odo_map *m, size_t t)
{
    const int32_t lo[2] = {(p->tiles[t].ix - p->anchor_tile[0]) * p->cells_per_tile,
                           (p->tiles[t].iy - p->anchor_tile[1]) * p->cells_per_tile};
    const int32_t hi[2] = {lo[0] + p->cells_per_tile, lo[1] + p->cells_per_tile};
    odo_map_drop_columns(m, lo, hi);
    p->held[t] = 0;
    p->held_count--;
}

ptreg_status odo_prior_update(odo_prior *p, odo_map *m, const double P[16], size_t *read, ptreg_error *err)
{
    const double x = P[3], y = P[7], keep = p->radius + p->prefetch + p->info.tile;
    size_t ahead = SIZE_MAX;
    double ahead_d = INFINITY;
    *read = 0;
    for (size_t t = 0; t < p->info.tiles; t++) {
        const double d = square_distance(p, &p->tiles[t], x, y);
        if (p->held[t]) {
            if (d > keep)
                drop_tile(p, m, t);
        } else if (d <= p->radius) {
            ptreg_status st = load_tile(p, m, t, err);
            if (st)
                return st;
            ++*read;
        } else if (d <= p->radius + p->prefetch && d < ahead_d) {
            ahead = t, ahead_d = d;
        }
    }
    if (ahead == SIZE_MAX)
        return PTREG_OK;
    ++*read;
    return load_tile(p, m, ahead, err);
}

/* The submap's points within the radius of c, as floats about c. */
static float *submap_near(const odo_map *m, const double c[3], double radius, size_t *count)
{
    double *all = malloc(3 * (m->points ? m->points : 1) * sizeof *all);
    float *near = malloc(3 * (m->points ? m->points : 1) * sizeof *near);
    size_t k = 0;
    const int ok = all && near;
    if (ok) {
        odo_map_points(m, all);
        for (size_t i = 0; i < m->points; i++) {
            const double *q = all + 3 * i;
            if (hypot(q[0] - c[0], q[1] - c[1]) > radius)
                continue;
            for (int r = 0; r < 3; r++)
                near[3 * k + r] = (float)(q[r] - c[r]);
            k++;
        }
    }
    free(all);
    if (!ok) {
        free(near);
        return NULL;
    }
    *count = k;
    return near;
}

ptreg_status odo_prior_recover(const odo_map *m, const double *src, size_t n, const double P[16],
                               const odo_recover_icp *icp, double T[16], size_t *pairs, ptreg_error *err)
{
    *pairs = 0;
    const double c[3] = {P[3], P[7], P[11]};
    size_t nt = 0;
    float *target = submap_near(m, c, icp->range, &nt);
    float *source = malloc(3 * (n ? n : 1) * sizeof *source);
    if (!target || !source) {
        free(target), free(source);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "localize: out of memory");
    }
    for (size_t i = 0; i < 3 * n; i++)
        source[i] = (float)src[i];
    ptreg_status st = PTREG_OK;
    if (nt >= 16 && n >= 16) {
        ptreg_register_options ro;
        ptreg_register_options_default(&ro);
        ro.no_refine = 1;
        ro.voxel = 2.0 * m->voxel; /* FPFH over 10 voxels: a street's poles, trunks and corners */
        ptreg_register_result rr;
        st = ptreg_register(source, NULL, n, target, NULL, nt, &ro, &rr, err);
        if (!st) { /* coarse (RANSAC's voxel), then fine (the map's) */
            double shift[16];
            ptreg_transform_identity(shift);
            shift[3] = c[0], shift[7] = c[1], shift[11] = c[2];
            ptreg_transform_mul(shift, rr.transformation, T);
            odo_icp_out r = {0, 0};
            /* on the CPU: a few frames of a run, against a map made for them */
            st = odo_register(m, src, n, T, 1.5 * rr.voxel, rr.voxel / 3.0, icp->max_iter, icp->tol, NULL, &r, err);
            st = st ? st : odo_register(m, src, n, T, m->voxel, m->voxel / 3.0, icp->max_iter, icp->tol, NULL, &r, err);
            *pairs = r.pairs;
        } else if (st == PTREG_ERR_ARG || st == PTREG_ERR_FORMAT) {
            st = PTREG_OK; /* nothing to match: not recovered */
        }
    }
    free(target), free(source);
    return st;
}
