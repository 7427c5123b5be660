/* 3-D Harris on a GPU device (harris3d_impl.h; kernels: harris3d.cl). The
 * volume goes up once as it is stored (u8, u16, f32) and stays; one
 * method's kernels score every voxel into a resident score buffer with the
 * CPU's bits; the keypoints' maximum (partials, the host takes the
 * largest), peaks (keys of score and voxel, counted per group, then
 * written in raster order) and their order (runs sorted in local memory,
 * then merged by rank) are found on the device in four or five launches;
 * the greedy min-distance
 * thinning and the top-N cut run on the host over the sorted list, as on
 * the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feat/harris3d_impl.h"
#include "core/numeric.h"

static const char *const harris_files[] = {"feat/harris3d.cl", NULL};
const kernel_program harris3d_kernels = {"harris3d", harris_files};

#define WG PTREG_HARRIS_DEVICE_WG
#define MAX_GROUPS 256    /* of the max reduction */
#define PEAK_GROUPS 2048  /* at most, of the peaks' launches: each adds up the earlier groups' counts */
#define SORT_RUN (8 * WG) /* keys a group sorts in local memory: 16 KiB */
#define MERGE_FAN 64      /* most runs one merge launch joins */
#define KEYPOINT_KERNELS 5

static const char *const method_names[] = {"direct", "tile", "separable", "zchunk"};

const char *harris3d_method_name(int method)
{
    return method >= 0 && method < PTREG_HARRIS_METHODS ? method_names[method] : "auto";
}

ptreg_status harris3d_method_env(int *method, ptreg_error *err)
{
    const char *env = getenv("PTREG_HARRIS_METHOD");
    *method = PTREG_HARRIS_AUTO;
    if (!env || !*env)
        return PTREG_OK;
    for (int m = 0; m < PTREG_HARRIS_METHODS; m++)
        if (!strcmp(env, method_names[m])) {
            *method = m;
            return PTREG_OK;
        }
    return ptreg_error_set(err, PTREG_ERR_ARG, "PTREG_HARRIS_METHOD='%.32s' is not direct, tile, separable or zchunk",
                           env);
}

/* ---- builds ---- */

typedef struct tile_shape {
    int tx, ty, tz, zc;
} tile_shape;

static uint64_t tile_local_bytes(int method, tile_shape s, int r)
{
    uint64_t ix = (uint64_t)(s.tx + 2 * r + 2), iy = (uint64_t)(s.ty + 2 * r + 2);
    uint64_t px = (uint64_t)(s.tx + 2 * r), py = (uint64_t)(s.ty + 2 * r);
    if (method == PTREG_HARRIS_TILE)
        return 4 * 6 * px * py * (uint64_t)(s.tz + 2 * r);
    return 4 * (3 * ix * iy + 6 * px * py + 6 * (uint64_t)s.tx * py);
}

/* The largest tile (most threads first) whose local memory fits. */
static int pick_tile(int method, int r, uint64_t local_bytes, size_t max_wg, tile_shape *out)
{
    static const tile_shape bricks[] = {{8, 8, 4, 0}, {8, 4, 4, 0}, {4, 4, 4, 0}};
    static const tile_shape columns[] = {{32, 8, 1, 0}, {16, 8, 1, 0}, {8, 8, 1, 0}};
    const tile_shape *list = method == PTREG_HARRIS_TILE ? bricks : columns;
    for (int i = 0; i < 3; i++)
        if (tile_local_bytes(method, list[i], r) <= local_bytes &&
            (size_t)(list[i].tx * list[i].ty * list[i].tz) <= max_wg) {
            *out = list[i];
            return 1;
        }
    return 0;
}

/* Planes per z chunk: long chunks halve the 2r planes of halo each group
 * recomputes, but there must be enough groups to fill the device. */
static int pick_chunk(const size_t dims[3], tile_shape s, size_t units)
{
    size_t tiles = ((dims[0] + (size_t)s.tx - 1) / (size_t)s.tx) * ((dims[1] + (size_t)s.ty - 1) / (size_t)s.ty);
    int zc = 64;
    while (zc > 4 && tiles * ((dims[2] + (size_t)zc - 1) / (size_t)zc) < 4 * (units ? units : 1))
        zc /= 2;
    return zc;
}

ptreg_status harris3d_device_defines(int method, int input_bits, int r, uint64_t local_bytes, size_t max_wg,
                                     size_t units, const size_t dims[3], char *defines, size_t size, size_t *kernels,
                                     ptreg_error *err)
{
    tile_shape s = {1, 1, 1, 1};
    if ((method == PTREG_HARRIS_TILE || method == PTREG_HARRIS_ZCHUNK) &&
        !pick_tile(method, r, local_bytes, max_wg, &s))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "harris3d: method %s with window %d needs more than the device's %llu bytes of local "
                               "memory (use separable or direct)",
                               harris3d_method_name(method), 2 * r + 1, (unsigned long long)local_bytes);
    if (method == PTREG_HARRIS_ZCHUNK)
        s.zc = pick_chunk(dims, s, units);
    snprintf(defines, size,
             "-DWG=%d -DHARRIS_INPUT=%d -DHARRIS_R=%d -DHARRIS_METHOD=%d -DHARRIS_TX=%d -DHARRIS_TY=%d "
             "-DHARRIS_TZ=%d -DHARRIS_ZC=%d -DSORT_RUN=%d",
             WG, input_bits, r, method, s.tx, s.ty, s.tz, s.zc, SORT_RUN);
    if (kernels)
        *kernels = KEYPOINT_KERNELS + (method == PTREG_HARRIS_SEPARABLE ? 3 : 1);
    return PTREG_OK;
}

/* ---- the handle ---- */

struct harris3d_device_state {
    dev_handle *dev;
    ptreg_device device;
    size_t dims[3], n;
    int input_bits; /* of the resident volume; 0: none */
    tile_shape tile;
    dprogram *program; /* the last build: its keypoint kernels serve the keypoints */
    int weights_r;     /* the resident window's radius and sigma (-1: none) */
    double weights_sigma;
    dbuf *vol, *scores, *weights, *xs, *ys, *partial, *counts, *total, *keys, *merged;
};

void harris3d_device_close(harris3d_device_state *hd)
{
    if (!hd)
        return;
    dbuf *bufs[] = {hd->vol,     hd->scores, hd->weights, hd->xs,   hd->ys,
                    hd->partial, hd->counts, hd->total,   hd->keys, hd->merged};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    free(hd);
}

ptreg_status harris3d_device_open(const ptreg_device *device, harris3d_device_state **out, ptreg_error *err)
{
    *out = NULL;
    dev_handle *dev;
    ptreg_status st = dev_get(device, &dev, err);
    if (st)
        return st;
    harris3d_device_state *hd = calloc(1, sizeof *hd);
    if (!hd)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory");
    hd->dev = dev;
    hd->device = *device;
    hd->weights_r = -1;
    *out = hd;
    return PTREG_OK;
}

/* *buf holds at least bytes (contents not kept). */
static ptreg_status ensure(harris3d_device_state *hd, dbuf **buf, size_t bytes, ptreg_error *err)
{
    if (*buf && (*buf)->bytes >= bytes)
        return PTREG_OK;
    dbuf_free(*buf);
    *buf = NULL;
    return dbuf_alloc(hd->dev, bytes ? bytes : 4, buf, err);
}

/* Kernels index voxels with 32 bits; the separable scratch is larger. */
static ptreg_status check_dims(const harris3d_device_state *hd, size_t nx, size_t ny, size_t nz, ptreg_error *err)
{
    if (nx * ny * nz >= UINT32_MAX / 2)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "harris3d on %s: %zu x %zu x %zu voxels is more than the device path's 2^31",
                               hd->dev->label, nx, ny, nz);
    return PTREG_OK;
}

static void set_dims(harris3d_device_state *hd, size_t nx, size_t ny, size_t nz)
{
    hd->dims[0] = nx, hd->dims[1] = ny, hd->dims[2] = nz;
    hd->n = nx * ny * nz;
}

ptreg_status harris3d_device_upload(harris3d_device_state *hd, const ptreg_volume *vol, ptreg_error *err)
{
    ptreg_status st = check_dims(hd, vol->nx, vol->ny, vol->nz, err);
    if (st)
        return st;
    size_t n = ptreg_volume_count(vol);
    const void *src = vol->data;
    float *converted = NULL;
    int bits = vol->type == PTREG_VOXEL_U8 ? 8 : vol->type == PTREG_VOXEL_U16 ? 16 : 32;
    if (vol->type != PTREG_VOXEL_U8 && vol->type != PTREG_VOXEL_U16 && vol->type != PTREG_VOXEL_F32) {
        if (!(converted = malloc(n * sizeof *converted)))
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory to convert %zu voxels", n);
        for (size_t i = 0; i < n; i++)
            converted[i] = ptreg_volume_voxel(vol, i);
        src = converted;
    }
    size_t bytes = n * (size_t)(bits / 8);
    hd->input_bits = 0;
    st = ensure(hd, &hd->vol, bytes, err);
    st = st ? st : dbuf_write(hd->vol, 0, src, bytes, err);
    st = st ? st : ensure(hd, &hd->scores, n * sizeof(float), err);
    free(converted);
    if (!st) {
        hd->input_bits = bits;
        set_dims(hd, vol->nx, vol->ny, vol->nz);
    }
    return st;
}

/* ---- scores ---- */

static const char *const single_kernels[] = {"ptreg_harris_direct", "ptreg_harris_tile", NULL, "ptreg_harris_zchunk"};

/* The program for the method, its tile within the device's work-group
 * limit, and again within the tile kernel's own where that is lower
 * (ROCm, Intel; a tile that still does not fit is refused at its launch,
 * naming both limits). */
static ptreg_status build(harris3d_device_state *hd, int method, int r, ptreg_error *err)
{
    const ptreg_device_info *info = &hd->dev->info;
    size_t max_wg = info->max_work_group;
    for (;;) {
        char defines[320];
        ptreg_status st = harris3d_device_defines(method, hd->input_bits ? hd->input_bits : 32, r,
                                                  info->local_memory_bytes, max_wg, info->compute_units, hd->dims,
                                                  defines, sizeof defines, NULL, err);
        if (st)
            return st;
        sscanf(strstr(defines, "-DHARRIS_TX="), "-DHARRIS_TX=%d -DHARRIS_TY=%d -DHARRIS_TZ=%d -DHARRIS_ZC=%d",
               &hd->tile.tx, &hd->tile.ty, &hd->tile.tz, &hd->tile.zc);
        st = dev_program(hd->dev, &harris3d_kernels, defines, &hd->program, err);
        if (st || (method != PTREG_HARRIS_TILE && method != PTREG_HARRIS_ZCHUNK))
            return st;
        dkernel *k;
        st = dev_kernel(hd->program, single_kernels[method], &k, err);
        const size_t threads = (size_t)(hd->tile.tx * hd->tile.ty * hd->tile.tz);
        if (st || threads <= dev_kernel_limit(k) || dev_kernel_limit(k) >= max_wg)
            return st;
        max_wg = dev_kernel_limit(k);
    }
}

static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

static ptreg_status launch_separable(harris3d_device_state *hd, int r, float k, uint32_t border, ptreg_error *err)
{
    const size_t nx = hd->dims[0], ny = hd->dims[1], nz = hd->dims[2];
    const size_t xs_n = nx * (ny + 2 * (size_t)r) * (nz + 2 * (size_t)r), ys_n = nx * ny * (nz + 2 * (size_t)r);
    if (xs_n >= UINT32_MAX / 2)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "harris3d on %s: separable scratch of %zu voxels is more "
                               "than 2^31 (use zchunk)",
                               hd->dev->label, xs_n);
    dkernel *kx, *ky, *kz;
    ptreg_status st = ensure(hd, &hd->xs, 6 * xs_n * sizeof(float), err);
    st = st ? st : ensure(hd, &hd->ys, 6 * ys_n * sizeof(float), err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_sep_x", &kx, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_sep_y", &ky, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_sep_z", &kz, err);
    if (st)
        return st;
    const karg ax[] = {KARG_BUF(hd->vol), KARG_U32(nx),          KARG_U32(ny),
                       KARG_U32(nz),      KARG_BUF(hd->weights), KARG_BUF(hd->xs)};
    const karg ay[] = {KARG_BUF(hd->xs), KARG_U32(nx),          KARG_U32(ny),
                       KARG_U32(nz),     KARG_BUF(hd->weights), KARG_BUF(hd->ys)};
    const karg az[] = {KARG_BUF(hd->ys),      KARG_U32(nx), KARG_U32(ny),     KARG_U32(nz),
                       KARG_BUF(hd->weights), KARG_F32(k),  KARG_U32(border), KARG_BUF(hd->scores)};
    st = dev_launch(kx, xs_n, WG, 6, ax, err);
    st = st ? st : dev_launch(ky, ys_n, WG, 6, ay, err);
    return st ? st : dev_launch(kz, hd->n, WG, 8, az, err);
}

/* The one-kernel methods: direct (a thread per voxel), tile (a brick per
 * group), zchunk (a column tile and z chunk per group). */
static ptreg_status launch_single(harris3d_device_state *hd, int method, float k, uint32_t border, ptreg_error *err)
{
    const size_t nx = hd->dims[0], ny = hd->dims[1], nz = hd->dims[2];
    const tile_shape s = hd->tile;
    size_t threads = hd->n, local = WG;
    if (method == PTREG_HARRIS_TILE || method == PTREG_HARRIS_ZCHUNK) {
        local = (size_t)(s.tx * s.ty * s.tz);
        size_t depth = method == PTREG_HARRIS_TILE ? (size_t)s.tz : (size_t)s.zc;
        threads = cdiv(nx, (size_t)s.tx) * cdiv(ny, (size_t)s.ty) * cdiv(nz, depth) * local;
    }
    dkernel *kernel;
    ptreg_status st = dev_kernel(hd->program, single_kernels[method], &kernel, err);
    const karg args[] = {KARG_BUF(hd->vol),     KARG_U32(nx), KARG_U32(ny),     KARG_U32(nz),
                         KARG_BUF(hd->weights), KARG_F32(k),  KARG_U32(border), KARG_BUF(hd->scores)};
    return st ? st : dev_launch(kernel, threads, local, 8, args, err);
}

/* The window's weights, uploaded only when they change. */
static ptreg_status upload_weights(harris3d_device_state *hd, int r, double sigma, ptreg_error *err)
{
    if (hd->weights_r == r && hd->weights_sigma == sigma)
        return PTREG_OK;
    float w[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    harris3d_weights(r, sigma, w);
    hd->weights_r = -1;
    ptreg_status st = ensure(hd, &hd->weights, (size_t)(2 * r + 1) * sizeof(float), err);
    st = st ? st : dbuf_write(hd->weights, 0, w, (size_t)(2 * r + 1) * sizeof(float), err);
    if (!st)
        hd->weights_r = r, hd->weights_sigma = sigma;
    return st;
}

/* AUTO: the env's method, else zchunk (the cheapest per voxel on a GPU:
 * harris3d.cl), else separable where zchunk's planes do not fit. */
static ptreg_status choose_method(harris3d_device_state *hd, int method, int r, int *used, ptreg_error *err)
{
    ptreg_status st = method == PTREG_HARRIS_AUTO ? harris3d_method_env(&method, err) : PTREG_OK;
    if (st)
        return st;
    if (method < PTREG_HARRIS_AUTO || method >= PTREG_HARRIS_METHODS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: unknown device method %d", method);
    tile_shape s;
    if (method == PTREG_HARRIS_AUTO)
        method = pick_tile(PTREG_HARRIS_ZCHUNK, r, hd->dev->info.local_memory_bytes, hd->dev->info.max_work_group, &s)
                     ? PTREG_HARRIS_ZCHUNK
                     : PTREG_HARRIS_SEPARABLE;
    *used = method;
    return PTREG_OK;
}

ptreg_status harris3d_device_scores(harris3d_device_state *hd, const ptreg_harris3d_options *opt, int method, int *used,
                                    ptreg_error *err)
{
    if (!hd->input_bits)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d on %s: no volume uploaded", hd->dev->label);
    const int r = (opt->window - 1) / 2;
    int m = 0;
    ptreg_status st = choose_method(hd, method, r, &m, err);
    st = st ? st : build(hd, m, r, err);
    st = st ? st : upload_weights(hd, r, ptreg_harris3d_sigma(opt), err);
    if (st)
        return st;
    const float k = (float)opt->k;
    const uint32_t border = opt->border == PTREG_HARRIS_BORDER_SKIP ? (uint32_t)(r + 1) : 0;
    st = m == PTREG_HARRIS_SEPARABLE ? launch_separable(hd, r, k, border, err) : launch_single(hd, m, k, border, err);
    st = st ? st : dev_finish(hd->dev, err);
    if (used)
        *used = m;
    return st;
}

ptreg_status harris3d_device_set_scores(harris3d_device_state *hd, const float *scores, size_t nx, size_t ny, size_t nz,
                                        ptreg_error *err)
{
    ptreg_status st = check_dims(hd, nx, ny, nz, err);
    st = st ? st : ensure(hd, &hd->scores, nx * ny * nz * sizeof(float), err);
    st = st ? st : dbuf_write(hd->scores, 0, scores, nx * ny * nz * sizeof(float), err);
    if (st)
        return st;
    set_dims(hd, nx, ny, nz);
    return hd->program ? PTREG_OK : build(hd, PTREG_HARRIS_DIRECT, 1, err); /* any build has the keypoint kernels */
}

ptreg_status harris3d_device_read_scores(harris3d_device_state *hd, float *scores, ptreg_error *err)
{
    return dbuf_read(hd->scores, 0, scores, hd->n * sizeof(float), err);
}

/* ---- keypoints ---- */

/* The largest score: the partials' largest, taken on the host (the same
 * bits in any order: the scores are finite). */
static ptreg_status device_max(harris3d_device_state *hd, float *max, ptreg_error *err)
{
    dkernel *kernel;
    float partial[MAX_GROUPS];
    size_t groups = cdiv(hd->n, WG) < MAX_GROUPS ? cdiv(hd->n, WG) : MAX_GROUPS;
    ptreg_status st = dev_kernel(hd->program, "ptreg_harris_max_partial", &kernel, err);
    st = st ? st : ensure(hd, &hd->partial, MAX_GROUPS * sizeof(float), err);
    if (st)
        return st;
    const karg args[] = {KARG_BUF(hd->scores), KARG_U32(hd->n), KARG_BUF(hd->partial)};
    st = dev_launch(kernel, groups * WG, WG, 3, args, err);
    st = st ? st : dbuf_read(hd->partial, 0, partial, groups * sizeof(float), err);
    *max = -INFINITY;
    for (size_t g = 0; !st && g < groups; g++)
        *max = partial[g] > *max ? partial[g] : *max;
    return st;
}

/* No two neighbors are both peaks: at most one per 2 x 2 x 2 block. */
static size_t most_peaks(const size_t dims[3]) { return cdiv(dims[0], 2) * cdiv(dims[1], 2) * cdiv(dims[2], 2); }

/* The peaks above thr: *count keys in hd->keys, in raster order. */
static ptreg_status device_peaks(harris3d_device_state *hd, float thr, uint32_t *count, ptreg_error *err)
{
    const uint32_t nx = (uint32_t)hd->dims[0], ny = (uint32_t)hd->dims[1], nz = (uint32_t)hd->dims[2];
    const size_t items = cdiv(hd->n, (size_t)PEAK_GROUPS * WG), groups = cdiv(hd->n, items * WG);
    dkernel *kc, *kw;
    ptreg_status st = dev_kernel(hd->program, "ptreg_harris_peak_count", &kc, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_peak_write", &kw, err);
    st = st ? st : ensure(hd, &hd->counts, groups * sizeof(uint32_t), err);
    st = st ? st : ensure(hd, &hd->total, sizeof(uint32_t), err);
    st = st ? st : ensure(hd, &hd->keys, most_peaks(hd->dims) * sizeof(uint64_t), err);
    if (st)
        return st;
    const karg ac[] = {KARG_BUF(hd->scores), KARG_U32(nx),    KARG_U32(ny),        KARG_U32(nz),
                       KARG_F32(thr),        KARG_U32(items), KARG_BUF(hd->counts)};
    const karg aw[] = {KARG_BUF(hd->scores), KARG_U32(nx),       KARG_U32(ny),
                       KARG_U32(nz),         KARG_F32(thr),      KARG_U32(items),
                       KARG_BUF(hd->counts), KARG_BUF(hd->keys), KARG_BUF(hd->total)};
    st = dev_launch(kc, groups * WG, WG, 7, ac, err);
    st = st ? st : dev_launch(kw, groups * WG, WG, 9, aw, err);
    return st ? st : dbuf_read(hd->total, 0, count, sizeof *count, err);
}

/* Runs per merge launch: the fewest launches, then the fewest runs each
 * (a key searches every other run of its group). */
static size_t merge_fan(size_t runs)
{
    size_t levels = 1, reach = MERGE_FAN;
    while (reach < runs)
        reach *= MERGE_FAN, levels++;
    size_t fan = 2;
    for (;;) {
        size_t covered = 1;
        for (size_t l = 0; l < levels; l++)
            covered *= fan;
        if (covered >= runs)
            return fan;
        fan++;
    }
}

/* The keys (score descending, voxel ascending) sorted: runs of SORT_RUN in
 * local memory, then merges of up to MERGE_FAN runs per launch; *sorted:
 * the buffer that holds them. */
static ptreg_status device_sort(harris3d_device_state *hd, uint32_t count, dbuf **sorted, ptreg_error *err)
{
    dkernel *ks, *km;
    ptreg_status st = dev_kernel(hd->program, "ptreg_harris_sort_runs", &ks, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_merge_runs", &km, err);
    const karg as[] = {KARG_BUF(hd->keys), KARG_U32(count)};
    st = st ? st : dev_launch(ks, cdiv(count, SORT_RUN) * WG, WG, 2, as, err);
    dbuf *src = hd->keys;
    size_t runs = cdiv(count, SORT_RUN), run = SORT_RUN, fan = runs > 1 ? merge_fan(runs) : 0;
    if (!st && runs > 1)
        st = ensure(hd, &hd->merged, (size_t)count * sizeof(uint64_t), err);
    for (; !st && runs > 1; runs = cdiv(runs, fan), run *= fan) {
        dbuf *dst = src == hd->keys ? hd->merged : hd->keys;
        const karg am[] = {KARG_BUF(src), KARG_U32(count), KARG_U32(run), KARG_U32(fan), KARG_BUF(dst)};
        st = dev_launch(km, count, WG, 5, am, err);
        src = dst;
    }
    *sorted = src;
    return st;
}

/* The first `count` sorted keys back, as keypoints best first. */
static ptreg_status read_sorted(harris3d_device_state *hd, const dbuf *sorted, size_t count, ptreg_keypoint **out,
                                ptreg_error *err)
{
    uint64_t *keys = malloc(count * sizeof *keys);
    ptreg_keypoint *kp = malloc(count * sizeof *kp);
    ptreg_status st = keys && kp
                          ? PTREG_OK
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for %zu keypoints", count);
    st = st ? st : dbuf_read(sorted, 0, keys, count * sizeof *keys, err);
    const size_t nx = hd->dims[0], ny = hd->dims[1];
    for (size_t i = 0; !st && i < count; i++) {
        uint32_t v = (uint32_t)keys[i], bits = ~(uint32_t)(keys[i] >> 32);
        float score;
        memcpy(&score, &bits, sizeof score);
        kp[i] = (ptreg_keypoint){(uint32_t)(v % nx), (uint32_t)(v / nx % ny), (uint32_t)(v / nx / ny), score};
    }
    free(keys);
    if (st)
        free(kp);
    *out = st ? NULL : kp;
    return st;
}

/* The keys the host needs: all of them for the thinning, else the top. */
static size_t keys_needed(const ptreg_harris3d_options *opt, uint32_t found)
{
    if (opt->min_distance > 0 || !opt->top || opt->top > found)
        return found;
    return opt->top;
}

ptreg_status harris3d_device_keypoints(harris3d_device_state *hd, const ptreg_harris3d_options *opt,
                                       ptreg_keypoint **keypoints, size_t *count, double *threshold_used,
                                       size_t *local_maxima, float *max_score, ptreg_error *err)
{
    *keypoints = NULL;
    *count = 0;
    float max = 0.0f;
    uint32_t found = 0;
    ptreg_status st = hd->program && hd->n
                          ? device_max(hd, &max, err)
                          : ptreg_error_set(err, PTREG_ERR_ARG, "harris3d on %s: no scores", hd->dev->label);
    double thr = opt->threshold * (opt->threshold_mode == PTREG_HARRIS_RELATIVE ? max : 1.0);
    st = st ? st : device_peaks(hd, thr > 0 ? ptreg_double_to_float(thr) : 0.0f, &found, err);
    dbuf *sorted = NULL;
    st = st || !found ? st : device_sort(hd, found, &sorted, err);
    ptreg_keypoint *kp = NULL;
    size_t n = keys_needed(opt, found);
    st = st || !found ? st : read_sorted(hd, sorted, n, &kp, err);
    if (st)
        return st;
    if (opt->min_distance > 0 && found)
        n = harris3d_thin(kp, found, opt->min_distance, opt->top, hd->dims[0], hd->dims[1], hd->dims[2]);
    if (n == SIZE_MAX) {
        free(kp);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for keypoints");
    }
    if (opt->top && n > opt->top)
        n = opt->top;
    if (!n) {
        free(kp);
        kp = NULL;
    }
    *keypoints = kp;
    *count = n;
    if (threshold_used)
        *threshold_used = thr;
    if (local_maxima)
        *local_maxima = found;
    if (max_score)
        *max_score = max;
    return PTREG_OK;
}

/* ---- the engine ---- */

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    if (!((const ptreg_harris3d_options *)options)->reference)
        return PTREG_OK;
    return engine_cpu_only("harris3d: the reference loop", device, err);
}

static ptreg_status device_open(const ptreg_device *on, void **ctx, ptreg_error *err)
{
    harris3d_device_state *hd;
    ptreg_status st = harris3d_device_open(on, &hd, err);
    *ctx = hd;
    return st;
}

static ptreg_status device_set_volume(void *ctx, const ptreg_volume *vol, ptreg_error *err)
{
    return harris3d_device_upload(ctx, vol, err);
}

/* Scores and keypoints of the resident volume (vol is its source). */
static ptreg_status device_detect(void *ctx, const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                  int with_scores, double upload_ms, ptreg_harris3d_result *result, ptreg_error *err)
{
    (void)vol;
    harris3d_device_state *hd = ctx;
    ptreg_status st = PTREG_OK;
    if (with_scores && !(result->scores = malloc(hd->n * sizeof(float))))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for %zu scores", hd->n);
    double t0 = ptreg_time_ms();
    st = st ? st : harris3d_device_scores(hd, opt, opt->device_method, NULL, err);
    double t1 = ptreg_time_ms();
    st = st ? st
            : harris3d_device_keypoints(hd, opt, &result->keypoints, &result->keypoint_count, &result->threshold,
                                        &result->local_maxima, &result->max_score, err);
    double t2 = ptreg_time_ms();
    st = st || !with_scores ? st : harris3d_device_read_scores(hd, result->scores, err);
    double t3 = ptreg_time_ms();
    if (st)
        return st;
    /* the score volume's copy back counts with the scores */
    result->scores_ms = upload_ms + (t1 - t0) + (t3 - t2);
    result->keypoints_ms = t2 - t1;
    result->time_ms = upload_ms + (t3 - t0);
    result->sigma = ptreg_harris3d_sigma(opt);
    result->isa = ptreg_device_name(&hd->device);
    return PTREG_OK;
}

/* The resident volume's scores, copied back. */
static ptreg_status device_scores_back(void *ctx, const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                       float *scores, ptreg_error *err)
{
    (void)vol;
    ptreg_status st = harris3d_device_scores(ctx, opt, opt->device_method, NULL, err);
    return st ? st : harris3d_device_read_scores(ctx, scores, err);
}

static ptreg_status device_select(void *ctx, const float *scores, size_t nx, size_t ny, size_t nz,
                                  const ptreg_harris3d_options *opt, ptreg_keypoint **keypoints, size_t *count,
                                  double *threshold_used, size_t *local_maxima, ptreg_error *err)
{
    ptreg_status st = harris3d_device_set_scores(ctx, scores, nx, ny, nz, err);
    return st ? st : harris3d_device_keypoints(ctx, opt, keypoints, count, threshold_used, local_maxima, NULL, err);
}

static void device_close(void *ctx) { harris3d_device_close(ctx); }

const harris3d_engine harris3d_device_engine = {
    .base = {ENGINE_GPU_BACKENDS, device_supports},
    .take_turns = 1,
    .open = device_open,
    .set_volume = device_set_volume,
    .detect = device_detect,
    .scores = device_scores_back,
    .select = device_select,
    .close = device_close,
};
