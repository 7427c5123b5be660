/* 3-D Harris: options, the literal reference loop, the driver of the fast
 * path (tiles of rows over threads, kernels per ISA) and keypoint
 * selection. Formulas: docs/ALGORITHMS.md, "3-D Harris". */
#include "ptreg/harris3d.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/cpu.h"
#include "core/large_alloc.h"
#include "core/options_table.h"
#include "feat/harris3d_impl.h"
#include "feat/harris3d_kernels.h"
#include "feat/testing.h"
#include "core/numeric.h"

static const ptreg_option_name border_names[] = {
    {"skip", PTREG_HARRIS_BORDER_SKIP}, {"clamp", PTREG_HARRIS_BORDER_CLAMP}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_harris3d_options, border);
/* The threshold and its mode are the front ends' to set (the command line's
 * --threshold and --relative); the device's method and the tile rows are
 * the tuner's. */
static const ptreg_option harris_rows[] = {
    OPTION_FIELD(ptreg_harris3d_options, window, NULL, INT, 3, PTREG_HARRIS_MAX_WINDOW, PTREG_OPTION_ODD, "W",
                 "window of W x W x W voxels"),
    OPTION_FIELD(ptreg_harris3d_options, sigma, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET, "S",
                 "Gaussian weight's sigma in voxels; default (W - 1) / 4"),
    OPTION_NUMBER(ptreg_harris3d_options, k, "kappa", NULL, DOUBLE, -DBL_MAX, DBL_MAX, 0, "K",
                  "Harris's free parameter (k in most texts): score det(M) - K trace(M)^3; corners need K < 1/27"),
    OPTION_ENUM(ptreg_harris3d_options, border, "border", NULL, border_names, 0,
                "skip: voxels within W/2 + 1 of an edge score 0; clamp: the edge voxels repeat outward"),
    OPTION_FIELD(ptreg_harris3d_options, min_distance, NULL, DOUBLE, 0, DBL_MAX, 0, "D",
                 "drop a keypoint closer than D voxels to a better one"),
    OPTION_FIELD(ptreg_harris3d_options, top, NULL, SIZE, 1, (double)SIZE_MAX, PTREG_OPTION_AUTO, "N",
                 "keep the N best keypoints (with no threshold given: of all positive maxima); default all")};
OPTION_TABLE(ptreg_harris3d_option_table, "harris3d", ptreg_harris3d_options, ptreg_harris3d_options_default,
             harris_rows)

void ptreg_harris3d_options_default(ptreg_harris3d_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->window = 5;
    opt->k = 0.01;
    opt->border = PTREG_HARRIS_BORDER_SKIP;
    opt->threshold_mode = PTREG_HARRIS_RELATIVE;
    opt->threshold = 0.01;
    opt->device_method = -1;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

static ptreg_status harris_choose(const ptreg_harris3d_options *o, ptreg_device *on, const harris3d_engine **chosen,
                                  ptreg_error *err);

/* The options checked; *on and *chosen: the device they run on and the
 * engine that runs them there. */
static ptreg_status check_options(const ptreg_harris3d_options *o, ptreg_device *on, const harris3d_engine **chosen,
                                  ptreg_error *err)
{
    ptreg_status st = ptreg_options_check(ptreg_harris3d_option_table(), o, err);
    if (st)
        return st;
    if (o->device_method < -1 || o->device_method > 3)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: device method %d is not -1 (auto) or 0..3",
                               o->device_method);
    if (!isfinite(o->threshold))
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: threshold %g is not finite", o->threshold);
    return harris_choose(o, on, chosen, err);
}

static ptreg_status check_volume(const ptreg_volume *v, ptreg_error *err)
{
    if (!v || !v->data || !v->nx || !v->ny || !v->nz || !ptreg_voxel_size(v->type))
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no volume");
    if (v->nx > UINT32_MAX || v->ny > UINT32_MAX || v->nz > UINT32_MAX || v->ny > SIZE_MAX / v->nx ||
        v->nz > SIZE_MAX / (v->nx * v->ny))
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: volume too large");
    if (v->type != PTREG_VOXEL_F32 && v->type != PTREG_VOXEL_F64)
        return PTREG_OK;
    size_t n = ptreg_volume_count(v);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(ptreg_volume_voxel(v, i)))
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "harris3d: voxel (%zu, %zu, %zu) is not a finite float32 value", i % v->nx,
                                   i / v->nx % v->ny, i / (v->nx * v->ny));
    return PTREG_OK;
}

static int border_of(const ptreg_harris3d_options *o) { return (o->window - 1) / 2 + 1; }

static int in_border(size_t i, size_t n, int b) { return i < (size_t)b || i + (size_t)b >= n; }

/* ---- the literal loop -------------------------------------------------- */

static double voxel_clamped(const ptreg_volume *v, long x, long y, long z)
{
    size_t cx = x < 0 ? 0 : (size_t)x >= v->nx ? v->nx - 1 : (size_t)x;
    size_t cy = y < 0 ? 0 : (size_t)y >= v->ny ? v->ny - 1 : (size_t)y;
    size_t cz = z < 0 ? 0 : (size_t)z >= v->nz ? v->nz - 1 : (size_t)z;
    return ptreg_volume_voxel(v, cx + v->nx * (cy + v->ny * cz));
}

/* The study's loop: every window voxel's gradient from six reads, its
 * products weighted and summed, in double. */
static float reference_voxel(const ptreg_volume *v, long x, long y, long z, int r, const double *w, double k)
{
    double m[6] = {0, 0, 0, 0, 0, 0};
    for (long dz = -r; dz <= r; dz++)
        for (long dy = -r; dy <= r; dy++)
            for (long dx = -r; dx <= r; dx++) {
                long px = x + dx, py = y + dy, pz = z + dz;
                double gx = voxel_clamped(v, px + 1, py, pz) - voxel_clamped(v, px - 1, py, pz);
                double gy = voxel_clamped(v, px, py + 1, pz) - voxel_clamped(v, px, py - 1, pz);
                double gz = voxel_clamped(v, px, py, pz + 1) - voxel_clamped(v, px, py, pz - 1);
                double wt = w[dz + r] * w[dy + r] * w[dx + r];
                m[0] += wt * gx * gx;
                m[1] += wt * gy * gy;
                m[2] += wt * gz * gz;
                m[3] += wt * gx * gy;
                m[4] += wt * gx * gz;
                m[5] += wt * gy * gz;
            }
    double det = m[0] * (m[1] * m[2] - m[5] * m[5]) - m[3] * (m[3] * m[2] - m[4] * m[5]) +
                 m[4] * (m[3] * m[5] - m[1] * m[4]);
    double tr = m[0] + m[1] + m[2];
    return (float)(det - k * tr * tr * tr);
}

static void reference_scores(const ptreg_volume *v, const ptreg_harris3d_options *o, float *scores)
{
    int r = (o->window - 1) / 2, b = border_of(o), nt = ptreg_get_num_threads();
    double w[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    harris3d_gaussian_weights(r, ptreg_harris3d_sigma(o), w);
    long nz = (long)v->nz;
    (void)nt;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (long z = 0; z < nz; z++)
        for (size_t y = 0; y < v->ny; y++)
            for (size_t x = 0; x < v->nx; x++) {
                int skip = o->border == PTREG_HARRIS_BORDER_SKIP &&
                           (in_border(x, v->nx, b) || in_border(y, v->ny, b) || in_border((size_t)z, v->nz, b));
                scores[x + v->nx * (y + v->ny * (size_t)z)] = skip
                                                                  ? 0.0f
                                                                  : reference_voxel(v, (long)x, (long)y, z, r, w, o->k);
            }
}

/* ---- the fast path ------------------------------------------------------ */

/* Rows per tile: the ring of 2r + 1 smoothed planes stays within about
 * 512 KiB (half of a 1-2 MiB L2), and there are at least 4 tiles per
 * thread to balance; at least 4 rows, since each tile recomputes 2r rows
 * of halo. The choice never changes the result. */
static size_t tile_rows(const ptreg_harris3d_options *o, size_t nx, size_t ny, int r, int threads)
{
    if (o->tile_rows)
        return o->tile_rows < ny ? o->tile_rows : ny;
    size_t per_row = (2 * (size_t)r + 1) * 6 * harris_stride(nx, r) * sizeof(float);
    size_t rows = (512u << 10) / per_row;
    size_t balanced = (ny + 4 * (size_t)threads - 1) / (4 * (size_t)threads);
    if (rows > balanced)
        rows = balanced;
    if (rows < 4)
        rows = 4;
    return rows < ny ? rows : ny;
}

static ptreg_status fast_scores(const ptreg_volume *v, const ptreg_harris3d_options *o, float *scores, float *row_max,
                                float *max, ptreg_error *err)
{
    int r = (o->window - 1) / 2, nt = ptreg_get_num_threads(), failed = 0;
    float w[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    harris3d_weights(r, ptreg_harris3d_sigma(o), w);
    size_t rows = tile_rows(o, v->nx, v->ny, r, nt), tiles = (v->ny + rows - 1) / rows;
    size_t scratch_bytes = harris_pad(harris_scratch_floats(v->nx, r, rows)) * sizeof(float);
    void (*kernel)(ptreg_harris_tile *) = harris_cpu_kernels()->tile;
    int border = o->border == PTREG_HARRIS_BORDER_SKIP ? border_of(o) : 0;
    float best = -INFINITY;
#pragma omp parallel num_threads(nt) reduction(| : failed) reduction(max : best)
    {
        float *scratch = aligned_alloc(64, scratch_bytes);
        failed = !scratch;
        if (scratch) /* the rest is written before it is read */
            memset(scratch, 0, harris_scratch_zeroed_floats(v->nx, r, rows) * sizeof(float));
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < tiles; i++) {
            if (!scratch)
                continue;
            size_t y1 = (i + 1) * rows < v->ny ? (i + 1) * rows : v->ny;
            ptreg_harris_tile t = {v->data,  v->type, v->nx,  v->ny,  v->nz,   r,       w,   (float)o->k,
                                   i * rows, y1,      border, scores, row_max, scratch, 0.0f};
            kernel(&t);
            best = t.max > best ? t.max : best;
        }
        free(scratch);
    }
    if (failed)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for %zu bytes of tile buffers",
                               scratch_bytes);
    *max = best;
    return PTREG_OK;
}

static float max_score(const float *s, size_t n);
static void rows_max(const float *s, size_t nx, size_t rows, float *row_max);

/* Scores, each row's maximum (row_max: ny * nz floats) and the overall
 * maximum, which the fast path finds on the way. The caller has checked
 * the options and the volume. */
static ptreg_status compute_scores(const ptreg_volume *vol, const ptreg_harris3d_options *opt, float *scores,
                                   float *row_max, float *max, ptreg_error *err)
{
    if (!opt->reference)
        return fast_scores(vol, opt, scores, row_max, max, err);
    reference_scores(vol, opt, scores);
    rows_max(scores, vol->nx, vol->ny * vol->nz, row_max);
    *max = max_score(row_max, vol->ny * vol->nz);
    return PTREG_OK;
}

ptreg_status ptreg_harris3d_scores(const ptreg_volume *vol, const ptreg_harris3d_options *opt, float *scores,
                                   ptreg_error *err)
{
    ptreg_harris3d_options d;
    if (!opt) {
        ptreg_harris3d_options_default(&d);
        opt = &d;
    }
    ptreg_device on;
    const harris3d_engine *e = NULL;
    ptreg_status s = check_options(opt, &on, &e, err);
    if (!s)
        s = check_volume(vol, err);
    if (!s && !scores)
        s = ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no score buffer");
    if (s)
        return s;
    void *ctx = NULL;
    s = e->open(&on, &ctx, err);
    s = s ? s : e->set_volume(ctx, vol, err);
    s = s ? s : e->scores(ctx, vol, opt, scores, err);
    e->close(ctx);
    return s;
}

/* ---- keypoints ---------------------------------------------------------- */

/* Sixteen running maxima per thread, so the loop vectorises; the maximum
 * does not depend on the order. */
static float max_score(const float *s, size_t n)
{
    float best = -INFINITY;
    size_t chunks = n / 16;
    int nt = ptreg_get_num_threads();
    (void)nt;
#pragma omp parallel num_threads(nt) reduction(max : best)
    {
        float m[16];
        for (int j = 0; j < 16; j++)
            m[j] = -INFINITY;
#pragma omp for schedule(static)
        for (size_t c = 0; c < chunks; c++)
            for (int j = 0; j < 16; j++)
                m[j] = s[16 * c + (size_t)j] > m[j] ? s[16 * c + (size_t)j] : m[j];
        for (int j = 0; j < 16; j++)
            best = m[j] > best ? m[j] : best;
    }
    for (size_t i = 16 * chunks; i < n; i++)
        best = s[i] > best ? s[i] : best;
    return best;
}

static void rows_max(const float *s, size_t nx, size_t rows, float *row_max)
{
    int nt = ptreg_get_num_threads();
    (void)nt;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t y = 0; y < rows; y++) {
        float best = -INFINITY;
        for (size_t x = 0; x < nx; x++)
            best = s[nx * y + x] > best ? s[nx * y + x] : best;
        row_max[y] = best;
    }
}

typedef struct keypoint_list {
    ptreg_keypoint *v;
    size_t n, cap;
} keypoint_list;

static int push(keypoint_list *l, size_t x, size_t y, size_t z, float score)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        ptreg_keypoint *p = realloc(l->v, cap * sizeof *p);
        if (!p)
            return 0;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = (ptreg_keypoint){(uint32_t)x, (uint32_t)y, (uint32_t)z, score};
    return 1;
}

/* Local maxima above thr (which is at least 0), in raster order: planes in
 * parallel, each into its own list, joined in plane order. Rows whose
 * maximum is not above thr are skipped. */
static int local_maxima(const float *s, const float *row_max, size_t nx, size_t ny, size_t nz, float thr,
                        keypoint_list *out)
{
    keypoint_list *planes = calloc(nz, sizeof *planes);
    int failed = !planes, nt = ptreg_get_num_threads();
    if (failed)
        return 0;
    void (*peaks)(const harris_peak_row *) = harris_cpu_kernels()->peaks;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        harris_peak_row row = {s, nx, ny, nz, 0, 0, thr, malloc(nx * sizeof(int32_t))};
        failed = !row.peak;
#pragma omp for schedule(dynamic, 4)
        for (size_t z = 0; z < nz; z++)
            for (size_t y = 0; y < ny && row.peak; y++) {
                if (!(row_max[y + ny * z] > thr))
                    continue;
                row.y = y;
                row.z = z;
                peaks(&row);
                for (size_t x = 0; x < nx; x++)
                    if (row.peak[x])
                        failed |= !push(&planes[z], x, y, z, s[x + nx * (y + ny * z)]);
            }
        free(row.peak);
    }
    size_t total = 0;
    for (size_t z = 0; z < nz; z++)
        total += planes[z].n;
    out->v = failed ? NULL : malloc((total ? total : 1) * sizeof *out->v);
    out->n = 0;
    for (size_t z = 0; z < nz; z++) {
        if (out->v && planes[z].n) /* an empty plane has no array: memcpy's NULL is undefined */
            memcpy(out->v + out->n, planes[z].v, planes[z].n * sizeof *out->v);
        out->n += planes[z].n;
        free(planes[z].v);
    }
    free(planes);
    return out->v != NULL;
}

/* Best score first, equal scores in raster order: a stable LSD radix sort
 * (4 passes of 8 bits) of the keypoints, which arrive in raster order, by
 * their score's bits. Every score is above 0, where the bits of a float
 * order as the float does. 5-10x faster than qsort on 50k keypoints. */
static int sort_by_score(ptreg_keypoint *kp, size_t n)
{
    ptreg_keypoint *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp)
        return 0;
    ptreg_keypoint *src = kp, *dst = tmp;
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &src[i].score, sizeof bits);
            count[((~bits >> shift) & 0xff) + 1]++;
        }
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &src[i].score, sizeof bits);
            dst[count[(~bits >> shift) & 0xff]++] = src[i];
        }
        ptreg_keypoint *t = src;
        src = dst;
        dst = t;
    }
    /* Four passes: the sorted keypoints are back in kp. */
    free(tmp);
    return 1;
}

/* Keypoints, given the scores' maximum. */
static ptreg_status select_keypoints(const float *scores, const float *row_max, size_t nx, size_t ny, size_t nz,
                                     const ptreg_harris3d_options *opt, float max, ptreg_keypoint **keypoints,
                                     size_t *count, double *threshold_used, size_t *local_maxima_count,
                                     ptreg_error *err)
{
    double thr = opt->threshold;
    if (opt->threshold_mode == PTREG_HARRIS_RELATIVE)
        thr *= max;
    if (threshold_used)
        *threshold_used = thr;
    keypoint_list all = {0};
    if (!local_maxima(scores, row_max, nx, ny, nz, thr > 0 ? ptreg_double_to_float(thr) : 0.0f, &all))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for keypoints");
    if (local_maxima_count)
        *local_maxima_count = all.n;
    if (!sort_by_score(all.v, all.n)) {
        free(all.v);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for keypoints");
    }
    size_t n = all.n;
    if (opt->min_distance > 0)
        n = harris3d_thin(all.v, all.n, opt->min_distance, opt->top, nx, ny, nz);
    if (n == SIZE_MAX) {
        free(all.v);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for keypoints");
    }
    if (opt->top && n > opt->top)
        n = opt->top;
    if (n == 0) {
        free(all.v);
        all.v = NULL;
    }
    *keypoints = all.v;
    *count = n;
    return PTREG_OK;
}

ptreg_status ptreg_harris3d_keypoints(const float *scores, size_t nx, size_t ny, size_t nz,
                                      const ptreg_harris3d_options *opt, ptreg_keypoint **keypoints, size_t *count,
                                      double *threshold_used, size_t *local_maxima_count, ptreg_error *err)
{
    ptreg_harris3d_options d;
    if (!opt) {
        ptreg_harris3d_options_default(&d);
        opt = &d;
    }
    if (!keypoints || !count || !scores || !nx || !ny || !nz)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d keypoints: no scores or no output");
    *keypoints = NULL;
    *count = 0;
    ptreg_device on;
    const harris3d_engine *e = NULL;
    ptreg_status s = check_options(opt, &on, &e, err);
    if (s)
        return s;
    void *ctx = NULL;
    s = e->open(&on, &ctx, err);
    s = s ? s : e->select(ctx, scores, nx, ny, nz, opt, keypoints, count, threshold_used, local_maxima_count, err);
    e->close(ctx);
    return s;
}

/* ---- the CPU's engine ----------------------------------------------------- */

/* The CPU keeps nothing between calls: it reads the caller's volume. */
static ptreg_status cpu_open(const ptreg_device *on, void **ctx, ptreg_error *err)
{
    (void)on, (void)err;
    *ctx = NULL;
    return PTREG_OK;
}

static ptreg_status cpu_set_volume(void *ctx, const ptreg_volume *vol, ptreg_error *err)
{
    (void)ctx, (void)vol, (void)err;
    return PTREG_OK;
}

static void cpu_close(void *ctx) { (void)ctx; }

static ptreg_status cpu_scores(void *ctx, const ptreg_volume *vol, const ptreg_harris3d_options *opt, float *scores,
                               ptreg_error *err)
{
    (void)ctx;
    float max, *row_max = malloc(vol->ny * vol->nz * sizeof *row_max);
    ptreg_status s = row_max ? compute_scores(vol, opt, scores, row_max, &max, err)
                             : ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory");
    free(row_max);
    return s;
}

static ptreg_status cpu_select(void *ctx, const float *scores, size_t nx, size_t ny, size_t nz,
                               const ptreg_harris3d_options *opt, ptreg_keypoint **keypoints, size_t *count,
                               double *threshold_used, size_t *local_maxima_count, ptreg_error *err)
{
    (void)ctx;
    float *row_max = malloc(ny * nz * sizeof *row_max);
    if (!row_max)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory");
    rows_max(scores, nx, ny * nz, row_max);
    ptreg_status s = select_keypoints(scores, row_max, nx, ny, nz, opt, max_score(row_max, ny * nz), keypoints, count,
                                      threshold_used, local_maxima_count, err);
    free(row_max);
    return s;
}

/* Both steps on the CPU, into a zeroed result; the scores freed unless
 * with_scores. Nothing was uploaded: upload_ms is 0 or a no-op's. */
static ptreg_status cpu_detect(void *ctx, const ptreg_volume *vol, const ptreg_harris3d_options *opt, int with_scores,
                               double upload_ms, ptreg_harris3d_result *result, ptreg_error *err)
{
    (void)ctx, (void)upload_ms;
    size_t n = ptreg_volume_count(vol);
    result->scores = core_alloc_large(n * sizeof(float)); /* written once: on huge pages */
    float *row_max = malloc(vol->ny * vol->nz * sizeof *row_max);
    if (!result->scores || !row_max) {
        free(row_max);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory for %zu scores", n);
    }
    double t0 = ptreg_time_ms();
    ptreg_status s = compute_scores(vol, opt, result->scores, row_max, &result->max_score, err);
    double t1 = ptreg_time_ms();
    if (!s)
        s = select_keypoints(result->scores, row_max, vol->nx, vol->ny, vol->nz, opt, result->max_score,
                             &result->keypoints, &result->keypoint_count, &result->threshold, &result->local_maxima,
                             err);
    double t2 = ptreg_time_ms();
    free(row_max);
    if (s)
        return s;
    if (!with_scores) {
        free(result->scores);
        result->scores = NULL;
    }
    result->sigma = ptreg_harris3d_sigma(opt);
    result->scores_ms = t1 - t0;
    result->keypoints_ms = t2 - t1;
    result->time_ms = t2 - t0;
    result->isa = opt->reference ? "reference" : isa_level_name(cpu_isa_level());
    return PTREG_OK;
}

/* Every option. */
static const harris3d_engine harris3d_cpu_engine = {
    .base = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL},
    .take_turns = 0,
    .open = cpu_open,
    .set_volume = cpu_set_volume,
    .detect = cpu_detect,
    .scores = cpu_scores,
    .select = cpu_select,
    .close = cpu_close,
};

static const engine *const harris3d_engines[] = {&harris3d_cpu_engine.base, &harris3d_device_engine.base};

/* The device the options name and the engine that runs them there: the
 * one choice a call makes. */
static ptreg_status harris_choose(const ptreg_harris3d_options *o, ptreg_device *on, const harris3d_engine **chosen,
                                  ptreg_error *err)
{
    const engine *e = NULL;
    ptreg_status st = engine_choose(harris3d_engines, 2, &o->device, o, "harris3d", on, &e, err);
    /* every engine in the list is a harris3d_engine, its base first */
    *chosen = (const harris3d_engine *)e;
    return st;
}

ptreg_status ptreg_harris3d_resolve_device(const ptreg_harris3d_options *o, ptreg_device *on, ptreg_error *err)
{
    const harris3d_engine *unused;
    return harris_choose(o, on, &unused, err);
}

ptreg_status ptreg_harris3d(const ptreg_volume *vol, const ptreg_harris3d_options *opt, ptreg_harris3d_result *result,
                            ptreg_error *err)
{
    ptreg_harris3d_options d;
    if (!opt) {
        ptreg_harris3d_options_default(&d);
        opt = &d;
    }
    if (!result)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no result");
    memset(result, 0, sizeof *result);
    ptreg_device on;
    const harris3d_engine *e = NULL;
    ptreg_status s = check_options(opt, &on, &e, err);
    if (!s)
        s = check_volume(vol, err);
    if (s)
        return s;
    void *ctx = NULL;
    s = e->open(&on, &ctx, err);
    double t0 = ptreg_time_ms();
    s = s ? s : e->set_volume(ctx, vol, err);
    s = s ? s : e->detect(ctx, vol, opt, 1, ptreg_time_ms() - t0, result, err);
    e->close(ctx);
    if (s)
        ptreg_harris3d_result_free(result);
    return s;
}

/* ---- a resident volume -------------------------------------------------- */

struct ptreg_harris3d_volume {
    ptreg_device on;
    const harris3d_engine *engine; /* chosen once, at create */
    void *ctx;                     /* the engine's: a GPU's copy of the volume */
    const ptreg_volume *volume;    /* the caller's, last set */
    /* A detection on the GPU fills the copy's buffers (and may rebuild its
     * program for new options): threads sharing the handle take turns
     * where the engine says so. */
    pthread_mutex_t device_turn;
};

static void turn_take(ptreg_harris3d_volume *hv)
{
    if (hv->engine->take_turns)
        pthread_mutex_lock(&hv->device_turn);
}

static void turn_give(ptreg_harris3d_volume *hv)
{
    if (hv->engine->take_turns)
        pthread_mutex_unlock(&hv->device_turn);
}

ptreg_status ptreg_harris3d_volume_create(const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                          ptreg_harris3d_volume **out, ptreg_error *err)
{
    ptreg_harris3d_options d;
    if (!opt) {
        ptreg_harris3d_options_default(&d);
        opt = &d;
    }
    if (!out)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no handle");
    *out = NULL;
    ptreg_harris3d_volume *hv = calloc(1, sizeof *hv);
    if (!hv)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "harris3d: out of memory");
    pthread_mutex_init(&hv->device_turn, NULL);
    ptreg_status s = check_options(opt, &hv->on, &hv->engine, err);
    s = s ? s : hv->engine->open(&hv->on, &hv->ctx, err);
    s = s ? s : ptreg_harris3d_volume_set(hv, vol, err);
    if (s) {
        ptreg_harris3d_volume_destroy(hv);
        return s;
    }
    *out = hv;
    return PTREG_OK;
}

ptreg_status ptreg_harris3d_volume_set(ptreg_harris3d_volume *hv, const ptreg_volume *vol, ptreg_error *err)
{
    if (!hv)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no handle");
    ptreg_status s = check_volume(vol, err);
    hv->volume = NULL;
    if (!s) {
        turn_take(hv);
        s = hv->engine->set_volume(hv->ctx, vol, err);
        turn_give(hv);
    }
    if (!s)
        hv->volume = vol;
    return s;
}

ptreg_status ptreg_harris3d_volume_run(ptreg_harris3d_volume *hv, const ptreg_harris3d_options *opt, int with_scores,
                                       ptreg_harris3d_result *result, ptreg_error *err)
{
    ptreg_harris3d_options o;
    ptreg_harris3d_options_default(&o);
    if (opt)
        o = *opt;
    if (!result)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no result");
    memset(result, 0, sizeof *result);
    if (!hv || !hv->volume)
        return ptreg_error_set(err, PTREG_ERR_ARG, "harris3d: no volume in the handle");
    o.device = hv->on;
    ptreg_device on;
    const harris3d_engine *again = NULL; /* the handle's, or the options' error on its device */
    ptreg_status s = check_options(&o, &on, &again, err);
    if (!s) {
        turn_take(hv);
        s = hv->engine->detect(hv->ctx, hv->volume, &o, with_scores, 0, result, err);
        turn_give(hv);
    }
    if (s)
        ptreg_harris3d_result_free(result);
    return s;
}

void ptreg_harris3d_volume_destroy(ptreg_harris3d_volume *hv)
{
    if (!hv)
        return;
    if (hv->engine)
        hv->engine->close(hv->ctx);
    pthread_mutex_destroy(&hv->device_turn);
    free(hv);
}

void ptreg_harris3d_result_free(ptreg_harris3d_result *result)
{
    if (!result)
        return;
    free(result->scores);
    free(result->keypoints);
    memset(result, 0, sizeof *result);
}

PTREG_ISA_TABLE(harris_cpu_kernel_table, harris_cpu_kernels, HARRIS_CPU_KERNELS)
