/* 3-D Harris on a GPU device (harris3d_impl.h; kernels: harris3d.cl). The
 * volume goes up once as it is stored (u8, u16, f32); one method's kernels
 * score every voxel into a resident score buffer with the CPU's bits; the
 * keypoints' maximum, peaks (in raster order, by per-group counts and a
 * fixed-order scan) and their order (a bitonic sort of (score, position)
 * keys) are found on the device; the greedy min-distance thinning and the
 * top-N cut run on the host over the sorted list, as on the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feat/harris3d_impl.h"

static const char *const harris_files[] = {"feat/harris3d.cl", NULL};
const kernel_program harris3d_kernels = {"harris3d", harris_files};

#define WG PTREG_HARRIS_DEVICE_WG
#define MAX_GROUPS 256 /* of the max reduction's first launch */
#define KEYPOINT_KERNELS 6

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
                                           size_t units, const size_t dims[3], char *defines, size_t size,
                                           size_t *kernels, ptreg_error *err)
{
    tile_shape s = {1, 1, 1, 1};
    if ((method == PTREG_HARRIS_TILE || method == PTREG_HARRIS_ZCHUNK) && !pick_tile(method, r, local_bytes, max_wg, &s))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "harris3d: method %s with window %d needs more than the device's %llu bytes of local "
                               "memory (use separable or direct)",
                               harris3d_method_name(method), 2 * r + 1, (unsigned long long)local_bytes);
    if (method == PTREG_HARRIS_ZCHUNK)
        s.zc = pick_chunk(dims, s, units);
    snprintf(defines, size,
             "-DWG=%d -DHARRIS_INPUT=%d -DHARRIS_R=%d -DHARRIS_METHOD=%d -DHARRIS_TX=%d -DHARRIS_TY=%d "
             "-DHARRIS_TZ=%d -DHARRIS_ZC=%d",
             WG, input_bits, r, method, s.tx, s.ty, s.tz, s.zc);
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
    dbuf *vol, *scores, *weights, *xs, *ys, *partial, *counts, *total, *voxel, *keys;
};

void harris3d_device_close(harris3d_device_state *hd)
{
    if (!hd)
        return;
    dbuf *bufs[] = {hd->vol,    hd->scores, hd->weights, hd->xs,    hd->ys,
                          hd->partial, hd->counts, hd->total,  hd->voxel, hd->keys};
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

static ptreg_status build(harris3d_device_state *hd, int method, int r, ptreg_error *err)
{
    char defines[320];
    const ptreg_device_info *info = &hd->dev->info;
    ptreg_status st = harris3d_device_defines(method, hd->input_bits ? hd->input_bits : 32, r,
                                                    info->local_memory_bytes, info->max_work_group,
                                                    info->compute_units, hd->dims, defines, sizeof defines, NULL, err);
    if (st)
        return st;
    sscanf(strstr(defines, "-DHARRIS_TX="), "-DHARRIS_TX=%d -DHARRIS_TY=%d -DHARRIS_TZ=%d -DHARRIS_ZC=%d", &hd->tile.tx,
           &hd->tile.ty, &hd->tile.tz, &hd->tile.zc);
    return dev_program(hd->dev, &harris3d_kernels, defines, &hd->program, err);
}

static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

static ptreg_status launch_separable(harris3d_device_state *hd, int r, float k, uint32_t border, ptreg_error *err)
{
    const size_t nx = hd->dims[0], ny = hd->dims[1], nz = hd->dims[2];
    const size_t xs_n = nx * (ny + 2 * (size_t)r) * (nz + 2 * (size_t)r), ys_n = nx * ny * (nz + 2 * (size_t)r);
    if (xs_n >= UINT32_MAX / 2)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "harris3d on %s: separable scratch of %zu voxels is more "
                               "than 2^31 (use zchunk)", hd->dev->label, xs_n);
    dkernel *kx, *ky, *kz;
    ptreg_status st = ensure(hd, &hd->xs, 6 * xs_n * sizeof(float), err);
    st = st ? st : ensure(hd, &hd->ys, 6 * ys_n * sizeof(float), err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_sep_x", &kx, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_sep_y", &ky, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_sep_z", &kz, err);
    if (st)
        return st;
    const karg ax[] = {KARG_BUF(hd->vol), KARG_U32(nx), KARG_U32(ny), KARG_U32(nz), KARG_BUF(hd->weights),
                             KARG_BUF(hd->xs)};
    const karg ay[] = {KARG_BUF(hd->xs), KARG_U32(nx), KARG_U32(ny), KARG_U32(nz), KARG_BUF(hd->weights),
                             KARG_BUF(hd->ys)};
    const karg az[] = {KARG_BUF(hd->ys),      KARG_U32(nx), KARG_U32(ny),      KARG_U32(nz),
                             KARG_BUF(hd->weights), KARG_F32(k),  KARG_U32(border), KARG_BUF(hd->scores)};
    st = dev_launch(kx, xs_n, WG, 6, ax, err);
    st = st ? st : dev_launch(ky, ys_n, WG, 6, ay, err);
    return st ? st : dev_launch(kz, hd->n, WG, 8, az, err);
}

/* The one-kernel methods: direct (a thread per voxel), tile (a brick per
 * group), zchunk (a column tile and z chunk per group). */
static ptreg_status launch_single(harris3d_device_state *hd, int method, float k, uint32_t border, ptreg_error *err)
{
    static const char *const names[] = {"ptreg_harris_direct", "ptreg_harris_tile", NULL, "ptreg_harris_zchunk"};
    const size_t nx = hd->dims[0], ny = hd->dims[1], nz = hd->dims[2];
    const tile_shape s = hd->tile;
    size_t threads = hd->n, local = WG;
    if (method == PTREG_HARRIS_TILE || method == PTREG_HARRIS_ZCHUNK) {
        local = (size_t)(s.tx * s.ty * s.tz);
        size_t depth = method == PTREG_HARRIS_TILE ? (size_t)s.tz : (size_t)s.zc;
        threads = cdiv(nx, (size_t)s.tx) * cdiv(ny, (size_t)s.ty) * cdiv(nz, depth) * local;
    }
    dkernel *kernel;
    ptreg_status st = dev_kernel(hd->program, names[method], &kernel, err);
    const karg args[] = {KARG_BUF(hd->vol),     KARG_U32(nx), KARG_U32(ny),      KARG_U32(nz),
                               KARG_BUF(hd->weights), KARG_F32(k),  KARG_U32(border), KARG_BUF(hd->scores)};
    return st ? st : dev_launch(kernel, threads, local, 8, args, err);
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

ptreg_status harris3d_device_scores(harris3d_device_state *hd, const ptreg_harris3d_options *opt, int method,
                                          int *used, ptreg_error *err)
{
    if (!hd->input_bits)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d on %s: no volume uploaded", hd->dev->label);
    const int r = (opt->window - 1) / 2;
    float w[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    harris3d_weights(r, ptreg_harris3d_sigma(opt), w);
    int m = 0;
    ptreg_status st = choose_method(hd, method, r, &m, err);
    st = st ? st : build(hd, m, r, err);
    st = st ? st : ensure(hd, &hd->weights, (size_t)(2 * r + 1) * sizeof(float), err);
    st = st ? st : dbuf_write(hd->weights, 0, w, (size_t)(2 * r + 1) * sizeof(float), err);
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

ptreg_status harris3d_device_set_scores(harris3d_device_state *hd, const float *scores, size_t nx, size_t ny,
                                              size_t nz, ptreg_error *err)
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

static ptreg_status device_max(harris3d_device_state *hd, float *max, ptreg_error *err)
{
    dkernel *kernel;
    size_t groups = cdiv(hd->n, WG) < MAX_GROUPS ? cdiv(hd->n, WG) : MAX_GROUPS;
    ptreg_status st = dev_kernel(hd->program, "ptreg_harris_max_partial", &kernel, err);
    st = st ? st : ensure(hd, &hd->partial, (MAX_GROUPS + 1) * sizeof(float), err);
    if (st)
        return st;
    const karg first[] = {KARG_BUF(hd->scores), KARG_U32(hd->n), KARG_BUF(hd->partial)};
    st = dev_launch(kernel, groups * WG, WG, 3, first, err);
    /* the partials' maximum, by the same kernel in one group, into a second buffer */
    dbuf *out = NULL;
    st = st ? st : dbuf_alloc(hd->dev, sizeof(float), &out, err);
    const karg second[] = {KARG_BUF(hd->partial), KARG_U32(groups), KARG_BUF(out)};
    st = st ? st : dev_launch(kernel, WG, WG, 3, second, err);
    st = st ? st : dbuf_read(out, 0, max, sizeof *max, err);
    dbuf_free(out);
    return st;
}

/* The peaks above thr, compacted in raster order: *count of them in
 * hd->voxel, their keys in hd->keys. */
static ptreg_status device_peaks(harris3d_device_state *hd, float thr, uint32_t *count, ptreg_error *err)
{
    const size_t groups = cdiv(hd->n, WG);
    const uint32_t nx = (uint32_t)hd->dims[0], ny = (uint32_t)hd->dims[1], nz = (uint32_t)hd->dims[2];
    dkernel *kc, *ko, *kw;
    ptreg_status st = dev_kernel(hd->program, "ptreg_harris_peak_count", &kc, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_offsets", &ko, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_peak_write", &kw, err);
    st = st ? st : ensure(hd, &hd->counts, groups * sizeof(uint32_t), err);
    st = st ? st : ensure(hd, &hd->total, sizeof(uint32_t), err);
    if (st)
        return st;
    const karg ac[] = {KARG_BUF(hd->scores), KARG_U32(nx), KARG_U32(ny), KARG_U32(nz), KARG_F32(thr),
                             KARG_BUF(hd->counts)};
    const karg ao[] = {KARG_BUF(hd->counts), KARG_U32(groups), KARG_BUF(hd->total)};
    st = dev_launch(kc, groups * WG, WG, 6, ac, err);
    st = st ? st : dev_launch(ko, WG, WG, 3, ao, err);
    st = st ? st : dbuf_read(hd->total, 0, count, sizeof *count, err);
    if (st || !*count)
        return st;
    size_t pow2 = 1;
    while (pow2 < *count)
        pow2 *= 2;
    st = ensure(hd, &hd->voxel, *count * sizeof(uint32_t), err);
    st = st ? st : ensure(hd, &hd->keys, pow2 * sizeof(uint64_t), err);
    const karg aw[] = {KARG_BUF(hd->scores), KARG_U32(nx),        KARG_U32(ny),      KARG_U32(nz),
                             KARG_F32(thr),        KARG_BUF(hd->counts), KARG_BUF(hd->voxel), KARG_BUF(hd->keys)};
    return st ? st : dev_launch(kw, groups * WG, WG, 8, aw, err);
}

/* The keys (score descending, raster position ascending) sorted in place:
 * a bitonic network over the next power of two, padded with the largest key. */
static ptreg_status device_sort(harris3d_device_state *hd, uint32_t count, ptreg_error *err)
{
    size_t pow2 = 1;
    while (pow2 < count)
        pow2 *= 2;
    dkernel *kp, *kb;
    ptreg_status st = dev_kernel(hd->program, "ptreg_harris_sort_pad", &kp, err);
    st = st ? st : dev_kernel(hd->program, "ptreg_harris_bitonic", &kb, err);
    const karg ap[] = {KARG_BUF(hd->keys), KARG_U32(count), KARG_U32(pow2)};
    st = st ? st : dev_launch(kp, pow2, WG, 3, ap, err);
    for (size_t k = 2; !st && k <= pow2; k *= 2)
        for (size_t j = k / 2; !st && j > 0; j /= 2) {
            const karg ab[] = {KARG_BUF(hd->keys), KARG_U32(pow2), KARG_U32(k), KARG_U32(j)};
            st = dev_launch(kb, pow2, WG, 4, ab, err);
        }
    return st;
}

/* The sorted keys and the voxels back, as keypoints best first. */
static ptreg_status read_sorted(harris3d_device_state *hd, uint32_t count, ptreg_keypoint **out, ptreg_error *err)
{
    uint64_t *keys = malloc(count * sizeof *keys);
    uint32_t *voxel = malloc(count * sizeof *voxel);
    ptreg_keypoint *kp = malloc(count * sizeof *kp);
    ptreg_status st = keys && voxel && kp ? PTREG_OK
                                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for %u "
                                                            "keypoints", (unsigned)count);
    st = st ? st : dbuf_read(hd->keys, 0, keys, count * sizeof *keys, err);
    st = st ? st : dbuf_read(hd->voxel, 0, voxel, count * sizeof *voxel, err);
    const size_t nx = hd->dims[0], ny = hd->dims[1];
    for (uint32_t i = 0; !st && i < count; i++) {
        uint32_t v = voxel[(uint32_t)keys[i]], bits = ~(uint32_t)(keys[i] >> 32);
        float score;
        memcpy(&score, &bits, sizeof score);
        kp[i] = (ptreg_keypoint){(uint32_t)(v % nx), (uint32_t)(v / nx % ny), (uint32_t)(v / nx / ny), score};
    }
    free(keys);
    free(voxel);
    if (st)
        free(kp);
    *out = st ? NULL : kp;
    return st;
}

ptreg_status harris3d_device_keypoints(harris3d_device_state *hd, const ptreg_harris3d_options *opt,
                                             ptreg_keypoint **keypoints, size_t *count, double *threshold_used,
                                             size_t *local_maxima, float *max_score, ptreg_error *err)
{
    *keypoints = NULL;
    *count = 0;
    float max = 0.0f;
    uint32_t found = 0;
    ptreg_status st = hd->program && hd->n ? device_max(hd, &max, err)
                                           : ptreg_error_set(err, PTREG_ERR_ARG, "harris3d on %s: no scores",
                                                             hd->dev->label);
    double thr = opt->threshold * (opt->threshold_mode == PTREG_HARRIS_RELATIVE ? max : 1.0);
    st = st ? st : device_peaks(hd, thr > 0 ? ptreg_double_to_float(thr) : 0.0f, &found, err);
    st = st || !found ? st : device_sort(hd, found, err);
    ptreg_keypoint *kp = NULL;
    st = st || !found ? st : read_sorted(hd, found, &kp, err);
    if (st)
        return st;
    size_t n = found;
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

/* ---- the public calls ---- */

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    if (!((const ptreg_harris3d_options *)options)->reference)
        return PTREG_OK;
    return engine_cpu_only("harris3d: the reference loop", device, err);
}

const engine harris3d_device_engine = {ENGINE_GPU_BACKENDS, device_supports};

ptreg_status harris3d_device_run(const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                       const ptreg_device *on, ptreg_harris3d_result *result, ptreg_error *err)
{
    harris3d_device_state *hd;
    ptreg_status st = harris3d_device_open(on, &hd, err);
    if (st)
        return st;
    size_t n = ptreg_volume_count(vol);
    if (!(result->scores = malloc(n * sizeof(float))))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for %zu scores", n);
    double t0 = ptreg_time_ms();
    st = st ? st : harris3d_device_upload(hd, vol, err);
    st = st ? st : harris3d_device_scores(hd, opt, opt->device_method, NULL, err);
    double t1 = ptreg_time_ms();
    st = st ? st : harris3d_device_keypoints(hd, opt, &result->keypoints, &result->keypoint_count,
                                                   &result->threshold, &result->local_maxima, &result->max_score, err);
    double t2 = ptreg_time_ms();
    st = st ? st : harris3d_device_read_scores(hd, result->scores, err);
    double t3 = ptreg_time_ms();
    harris3d_device_close(hd);
    if (st)
        return st;
    /* the score volume's copy back counts with the scores */
    result->scores_ms = (t1 - t0) + (t3 - t2);
    result->keypoints_ms = t2 - t1;
    result->time_ms = t3 - t0;
    result->sigma = ptreg_harris3d_sigma(opt);
    result->isa = ptreg_device_name(on);
    return PTREG_OK;
}

ptreg_status harris3d_device_scores_only(const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                               const ptreg_device *on, float *scores, ptreg_error *err)
{
    harris3d_device_state *hd;
    ptreg_status st = harris3d_device_open(on, &hd, err);
    st = st ? st : harris3d_device_upload(hd, vol, err);
    st = st ? st : harris3d_device_scores(hd, opt, opt->device_method, NULL, err);
    st = st ? st : harris3d_device_read_scores(hd, scores, err);
    harris3d_device_close(hd);
    return st;
}

ptreg_status harris3d_device_select(const float *scores, size_t nx, size_t ny, size_t nz,
                                          const ptreg_harris3d_options *opt, const ptreg_device *on,
                                          ptreg_keypoint **keypoints, size_t *count, double *threshold_used,
                                          size_t *local_maxima, ptreg_error *err)
{
    harris3d_device_state *hd;
    ptreg_status st = harris3d_device_open(on, &hd, err);
    st = st ? st : harris3d_device_set_scores(hd, scores, nx, ny, nz, err);
    st = st ? st : harris3d_device_keypoints(hd, opt, keypoints, count, threshold_used, local_maxima, NULL, err);
    harris3d_device_close(hd);
    return st;
}
