/* PFH and FPFH on a GPU device (pfh_impl.h), on a resident cloud: the
 * points, normals and k-d tree (built on the CPU, as the CPU path builds
 * it) go up once; the neighborhoods are found on the device
 * (neighbors.cl) and kept there with the SPFH rows of the last
 * neighborhood, so a repeated call launches only the descriptor kernels.
 * k-NN lists need nothing back (their longest is k); radius lists bring
 * their lengths back once (the offsets are summed here, in order, and the
 * longest picks the descriptor program's local arrays). The descriptors
 * run (pfh.cl) and only the rows asked for come back. */
#include "feat/pfh_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/counts.h"
#include "nn/kdtree_impl.h"
#include "nn/kdtree_query.h"
#include "nn/nn_device.h"

static const char *const knn_files[] = {"nn/kdtree.cl", "feat/neighbors.cl", NULL};
static const char *const feat_files[] = {"feat/pfh.cl", NULL};
const kernel_program knn_kernels = {"neighborhoods", knn_files};
const kernel_program feat_kernels = {"point-features", feat_files};

#define FEAT_CAP_MIN 32

/* pfh.cl's local arrays for lists of up to cap entries: the points and
 * normals (6 floats each), the indices, PFH's 125 bins and two flags. */
static uint64_t feat_local_bytes(size_t cap) { return 4u * (7u * (uint64_t)cap + 125u + 2u); }

ptreg_status feat_device_defines(size_t cap, int wg, uint64_t local_bytes, char *defines, size_t size, ptreg_error *err)
{
    if (cap > PTREG_FEAT_DEVICE_CAP_MAX)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "PFH/FPFH on a device: a neighborhood of %zu points is more than the %d the kernels "
                               "hold (use a smaller k or radius, or the CPU)",
                               cap, PTREG_FEAT_DEVICE_CAP_MAX);
    size_t c = FEAT_CAP_MIN;
    while (c < cap)
        c *= 2;
    if (local_bytes && feat_local_bytes(c) > local_bytes)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "PFH/FPFH on a device: neighborhoods of up to %zu points need %llu bytes of local "
                               "memory per work-group; the device has %llu (use a smaller k or radius, or the CPU)",
                               cap, (unsigned long long)feat_local_bytes(c), (unsigned long long)local_bytes);
    snprintf(defines, size, "-DFEAT_WG=%d -DFEAT_CAP=%zu", wg ? wg : PTREG_FEAT_DEVICE_WG, c);
    return PTREG_OK;
}

/* A cloud on the device: its points, normals and tree; the neighbor lists
 * of `lists_of` (when have_lists) and their SPFH rows (when have_spfh). */
struct feat_device_model {
    dev_handle *dev;
    size_t n;
    dbuf *xyz, *normals;
    nn_device_tree tree;
    int have_lists, have_spfh;
    int borrowed; /* xyz and tree are the caller's (feat_device_model_borrow) */
    ptreg_neighborhood lists_of;
    size_t total, max_count;
    dbuf *start, *count, *index, *dist2; /* start: uint64, as the lists pass 2^32 entries */
    uint64_t *host_start;                /* radius lists only */
    uint32_t *host_count;
    dbuf *spfh, *rows, *which;
};

static void drop_lists(feat_device_model *m)
{
    dbuf *bufs[] = {m->start, m->count, m->index, m->dist2, m->spfh};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    m->start = m->count = m->index = m->dist2 = m->spfh = NULL;
    free(m->host_start);
    free(m->host_count);
    m->host_start = NULL;
    m->host_count = NULL;
    m->have_lists = m->have_spfh = 0;
    m->total = m->max_count = 0;
}

void feat_device_model_free(feat_device_model *m)
{
    if (!m)
        return;
    drop_lists(m);
    dbuf *bufs[] = {m->borrowed ? NULL : m->xyz, m->normals, m->rows, m->which};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    if (!m->borrowed)
        nn_device_tree_free(&m->tree);
    free(m);
}

ptreg_status feat_device_model_create(const ptreg_device *device, const float *xyz, const float *normals, size_t n,
                                      feat_device_model **out, ptreg_error *err)
{
    *out = NULL;
    /* the tree's limit (< 2^31) also keeps one work-group per point within
     * a CUDA grid and n within the kernels' u32 point indices */
    ptreg_status st = kd_check_points("PFH/FPFH on a device", n, err);
    if (st)
        return st;
    feat_device_model *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "PFH/FPFH: out of memory");
    m->n = n;
    st = dev_get(device, &m->dev, err);
    ptreg_kdtree *tree = NULL;
    st = st ? st : ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    st = st ? st : nn_device_tree_upload(m->dev, tree, 0, &m->tree, err);
    ptreg_kdtree_destroy(tree);
    st = st ? st : dbuf_upload(m->dev, xyz, 3 * n * sizeof(float), &m->xyz, err);
    if (!st && normals)
        st = dbuf_upload(m->dev, normals, 3 * n * sizeof(float), &m->normals, err);
    if (st) {
        feat_device_model_free(m);
        return st;
    }
    *out = m;
    return PTREG_OK;
}

ptreg_status feat_device_model_borrow(dev_handle *dev, const dbuf *xyz, const nn_device_tree *tree, size_t n,
                                      feat_device_model **out, ptreg_error *err)
{
    *out = NULL;
    ptreg_status st = kd_check_points("neighborhoods on a device", n, err);
    if (st)
        return st;
    feat_device_model *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods on a device: out of memory");
    m->dev = dev;
    m->n = n;
    m->xyz = (dbuf *)xyz; /* only read, never freed (borrowed) */
    m->tree = *tree;
    m->borrowed = 1;
    *out = m;
    return PTREG_OK;
}

static ptreg_status knn_kernel(feat_device_model *m, const char *name, dkernel **k, ptreg_error *err)
{
    char defines[1024];
    dprogram *p;
    nn_device_layout(m->dev, defines, sizeof defines);
    ptreg_status st = dev_program(m->dev, &knn_kernels, defines, &p, err);
    return st ? st : dev_kernel(p, name, k, err);
}

/* The lists' lengths back on the host: the longest, and (radius) the
 * offsets, summed in index order. */
static ptreg_status read_counts(feat_device_model *m, int offsets, ptreg_error *err)
{
    m->host_count = malloc(m->n * sizeof *m->host_count);
    m->host_start = malloc(m->n * sizeof *m->host_start);
    if (!m->host_count || !m->host_start)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "PFH/FPFH: out of memory for %zu lists", m->n);
    ptreg_status st = dbuf_read(m->count, 0, m->host_count, m->n * sizeof *m->host_count, err);
    if (st)
        return st;
    uint64_t sum = 0; /* below n x the longest list, < 2^63 */
    m->max_count = 0;
    for (size_t i = 0; i < m->n; i++) {
        m->max_count = m->host_count[i] > m->max_count ? m->host_count[i] : m->max_count;
        if (offsets)
            m->host_start[i] = sum;
        sum += m->host_count[i];
    }
    if (offsets)
        m->total = (size_t)sum;
    return PTREG_OK;
}

/* Does the descriptor program take lists of up to cap entries? */
static int cap_fits(const feat_device_model *m, size_t cap)
{
    char defines[256];
    return !feat_device_defines(cap, 0, m->dev->info.local_memory_bytes, defines, sizeof defines, NULL);
}

/* The k-NN lists' kernel: by groups of a tree chunk's points (the
 * default), or one search per point (PTREG_NN_DEVICE_KNN=single; the GPU
 * run measures both). */
static ptreg_status knn_grouped_env(int *grouped, ptreg_error *err)
{
    const char *env = getenv("PTREG_NN_DEVICE_KNN");
    *grouped = !env || !*env || !strcmp(env, "grouped");
    if (*grouped || !strcmp(env, "single"))
        return PTREG_OK;
    return ptreg_error_set(err, PTREG_ERR_ARG, "PTREG_NN_DEVICE_KNN='%.32s' is not grouped or single", env);
}

/* k-NN lists: kk entries from i * kk (the kernel writes the 64-bit
 * offsets: n x kk passes 2^32 at 100 M points and k 43); the longest is
 * kk, unless kk does not fit and a radius cuts the lists: then their
 * lengths come back to find the longest. */
static ptreg_status knn_lists(feat_device_model *m, const ptreg_neighborhood *nb, size_t search_wg, ptreg_error *err)
{
    const size_t kk = nb->k < m->n ? nb->k : m->n; /* <= 2^20 (nn_check_neighborhood) */
    m->total = count_slot(m->n, kk, 0);
    const float r2 = nb->radius > 0 ? (float)(nb->radius * nb->radius) : 0.0f;
    dkernel *k;
    int grouped;
    ptreg_status st = knn_grouped_env(&grouped, err);
    st = st ? st : knn_kernel(m, grouped ? "ptreg_knn_lists_grouped" : "ptreg_knn_lists", &k, err);
    st = st ? st : dbuf_alloc(m->dev, m->total * sizeof(uint32_t), &m->index, err);
    st = st ? st : dbuf_alloc(m->dev, m->total * sizeof(float), &m->dist2, err);
    st = st ? st : dbuf_alloc(m->dev, m->n * sizeof(uint32_t), &m->count, err);
    st = st ? st : dbuf_alloc(m->dev, m->n * sizeof(uint64_t), &m->start, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(m->xyz),
                   KARG_U32(m->n),
                   KARG_U32(m->tree.slots),
                   KARG_U32(kk),
                   KARG_F32(r2),
                   KARG_BUF(m->start),
                   KARG_BUF(m->index),
                   KARG_BUF(m->dist2),
                   KARG_BUF(m->count),
                   KARG_BUF(m->tree.nodes),
                   KARG_BUF(m->tree.leaves),
                   KARG_BUF(m->tree.chunks),
                   KARG_BUF(m->tree.index_of_slot)};
    /* a group's sub-groups are whole chunks (search_wg >= 32) */
    const size_t wg = search_wg / PTREG_KD_LANES * PTREG_KD_LANES;
    st = dev_launch(k, m->tree.slots, wg, sizeof args / sizeof args[0], args, err);
    m->max_count = kk;
    if (!st && r2 > 0 && !cap_fits(m, kk))
        st = read_counts(m, 0, err);
    return st;
}

static ptreg_status radius_lists(feat_device_model *m, const ptreg_neighborhood *nb, size_t search_wg, ptreg_error *err)
{
    const float r2 = (float)(nb->radius * nb->radius); /* as the CPU's strict test */
    dkernel *counter, *writer;
    ptreg_status st = knn_kernel(m, "ptreg_knn_radius_count", &counter, err);
    st = st ? st : knn_kernel(m, "ptreg_knn_radius_lists", &writer, err);
    st = st ? st : dbuf_alloc(m->dev, m->n * sizeof(uint32_t), &m->count, err);
    if (st)
        return st;
    karg count_args[] = {KARG_BUF(m->xyz),
                         KARG_U32(m->n),
                         KARG_F32(r2),
                         KARG_BUF(m->count),
                         KARG_BUF(m->tree.nodes),
                         KARG_BUF(m->tree.leaves),
                         KARG_BUF(m->tree.chunks),
                         KARG_BUF(m->tree.index_of_slot)};
    st = dev_launch(counter, m->n, search_wg, sizeof count_args / sizeof count_args[0], count_args, err);
    st = st ? st : read_counts(m, 1, err);
    st = st ? st : dbuf_upload(m->dev, m->host_start, m->n * sizeof(uint64_t), &m->start, err);
    /* every point finds itself: total >= n > 0 */
    st = st ? st : dbuf_alloc(m->dev, m->total * sizeof(uint32_t), &m->index, err);
    st = st ? st : dbuf_alloc(m->dev, m->total * sizeof(float), &m->dist2, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(m->xyz),
                   KARG_U32(m->n),
                   KARG_F32(r2),
                   KARG_BUF(m->start),
                   KARG_BUF(m->count),
                   KARG_BUF(m->index),
                   KARG_BUF(m->dist2),
                   KARG_BUF(m->tree.nodes),
                   KARG_BUF(m->tree.leaves),
                   KARG_BUF(m->tree.chunks),
                   KARG_BUF(m->tree.index_of_slot)};
    return dev_launch(writer, m->n, search_wg, sizeof args / sizeof args[0], args, err);
}

static int same_neighborhood(const ptreg_neighborhood *a, const ptreg_neighborhood *b)
{
    return a->k == b->k && a->radius == b->radius;
}

/* Every point's neighbor list of nb on the device, unless they are there. */
static ptreg_status ensure_lists(feat_device_model *m, const ptreg_neighborhood *nb, size_t search_wg, ptreg_error *err)
{
    if (m->have_lists && same_neighborhood(&m->lists_of, nb))
        return PTREG_OK;
    drop_lists(m);
    ptreg_status st = nb->k ? knn_lists(m, nb, search_wg, err) : radius_lists(m, nb, search_wg, err);
    if (st) {
        drop_lists(m);
        return st;
    }
    m->lists_of = *nb;
    m->have_lists = 1;
    return PTREG_OK;
}

ptreg_status feat_device_model_lists(feat_device_model *m, const ptreg_neighborhood *nb, size_t search_wg,
                                     const dbuf **start, const dbuf **count, const dbuf **index, ptreg_error *err)
{
    ptreg_status st = ensure_lists(m, nb, search_wg, err);
    if (st)
        return st;
    *start = m->start, *count = m->count, *index = m->index;
    return PTREG_OK;
}

/* The reference path is the CPU's by definition; the work-groups must fit. */
static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    const ptreg_features_options *o = options;
    if (o->reference)
        return engine_cpu_only("PFH/FPFH: the reference path", device, err);
    const size_t wg = o->gpu.wg ? (size_t)o->gpu.wg : PTREG_FEAT_DEVICE_WG;
    const size_t search_wg = o->gpu.search_wg ? (size_t)o->gpu.search_wg : PTREG_FEAT_SEARCH_WG;
    if (wg > device->max_work_group || search_wg > device->max_work_group)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "PFH/FPFH on %s: work-groups of %zu and %zu threads; the "
                               "device takes %zu",
                               device->name, wg, search_wg, device->max_work_group);
    return PTREG_OK;
}

static ptreg_status feat_kernel(feat_device_model *m, size_t wg, const char *name, dkernel **k, ptreg_error *err)
{
    char defines[256];
    dprogram *p;
    ptreg_status st = feat_device_defines(m->max_count, (int)wg, m->dev->info.local_memory_bytes, defines,
                                          sizeof defines, err);
    st = st ? st : dev_program(m->dev, &feat_kernels, defines, &p, err);
    return st ? st : dev_kernel(p, name, k, err);
}

/* The points a call asks for: `picked` of them in *named (0: all n, and
 * *named a buffer the kernels name but do not read). */
static ptreg_status pick_points(feat_device_model *m, const uint32_t *which, size_t count, uint32_t *picked,
                                const dbuf **named, ptreg_error *err)
{
    *picked = 0;
    *named = m->start;
    if (!which)
        return PTREG_OK;
    if (count > DEV_GRID_GROUPS_MAX) /* a work-group per point asked for */
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: PFH/FPFH of %zu points in one call: more than %u",
                               m->dev->label, count, DEV_GRID_GROUPS_MAX);
    if (!m->which || m->which->bytes < count * sizeof(uint32_t)) {
        dbuf_free(m->which);
        m->which = NULL;
        ptreg_status st = dbuf_alloc(m->dev, count * sizeof(uint32_t), &m->which, err);
        if (st)
            return st;
    }
    *picked = (uint32_t)count;
    *named = m->which;
    return dbuf_write(m->which, 0, which, count * sizeof(uint32_t), err);
}

/* m->rows holds at least rows x bins floats. */
static ptreg_status ensure_rows(feat_device_model *m, size_t rows, size_t bins, ptreg_error *err)
{
    if (m->rows && m->rows->bytes >= rows * bins * sizeof(float))
        return PTREG_OK;
    dbuf_free(m->rows);
    m->rows = NULL;
    return dbuf_alloc(m->dev, rows * bins * sizeof(float), &m->rows, err);
}

/* One group per point: groups of them. */
static ptreg_status launch_per_point(const dkernel *k, size_t groups, size_t wg, size_t nargs, const karg *args,
                                     ptreg_error *err)
{
    const size_t grid[3] = {groups, 1, 1}, local[3] = {wg, 1, 1};
    return dev_launch_groups(k, 1, grid, local, nargs, args, err);
}

/* The rows back, and the NaN rows counted (the CPU's missing). */
static ptreg_status read_rows(const feat_device_model *m, size_t rows, size_t bins, float *out, size_t *missing,
                              ptreg_error *err)
{
    ptreg_status st = dbuf_read(m->rows, 0, out, rows * bins * sizeof(float), err);
    if (st || !missing)
        return st;
    size_t lacking = 0;
    for (size_t i = 0; i < rows; i++)
        lacking += isnan(out[bins * i]) != 0;
    *missing = lacking;
    return PTREG_OK;
}

static size_t point_wg(const ptreg_features_options *opt)
{
    return opt->gpu.wg ? (size_t)opt->gpu.wg : PTREG_FEAT_DEVICE_WG;
}

static size_t search_wg(const ptreg_features_options *opt)
{
    return opt->gpu.search_wg ? (size_t)opt->gpu.search_wg : PTREG_FEAT_SEARCH_WG;
}

/* Every point's SPFH row on the device, unless it is there. */
static ptreg_status ensure_spfh(feat_device_model *m, size_t wg, ptreg_error *err)
{
    if (m->have_spfh)
        return PTREG_OK;
    dkernel *k;
    ptreg_status st = feat_kernel(m, wg, "ptreg_feat_spfh", &k, err);
    st = st ? st : dbuf_alloc(m->dev, m->n * PTREG_FPFH_BINS * sizeof(float), &m->spfh, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(m->xyz),   KARG_BUF(m->normals), KARG_U32(m->n),   KARG_BUF(m->start),
                   KARG_BUF(m->count), KARG_BUF(m->index),   KARG_BUF(m->spfh)};
    st = launch_per_point(k, m->n, wg, sizeof args / sizeof args[0], args, err);
    m->have_spfh = !st;
    return st;
}

/* What a descriptor call needs before its launch: the lists (and, for
 * FPFH, the SPFH rows), its kernel, the points asked for and room for
 * their rows. */
typedef struct rows_call {
    dkernel *kernel;
    uint32_t picked;
    const dbuf *named;
    size_t rows, wg;
} rows_call;

static ptreg_status begin_rows(feat_device_model *m, const ptreg_features_options *opt, const uint32_t *which,
                               size_t count, const char *kernel, size_t bins, rows_call *c, ptreg_error *err)
{
    c->rows = which ? count : m->n;
    c->wg = point_wg(opt);
    ptreg_status st = ensure_lists(m, &opt->neighbors, search_wg(opt), err);
    st = st || bins != PTREG_FPFH_BINS ? st : ensure_spfh(m, c->wg, err);
    st = st ? st : feat_kernel(m, c->wg, kernel, &c->kernel, err);
    st = st ? st : pick_points(m, which, count, &c->picked, &c->named, err);
    return st ? st : ensure_rows(m, c->rows, bins, err);
}

ptreg_status feat_device_model_pfh(feat_device_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                   size_t count, float *out, size_t *missing, ptreg_error *err)
{
    rows_call c;
    ptreg_status st = begin_rows(m, opt, which, count, "ptreg_feat_pfh", PTREG_PFH_BINS, &c, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(m->xyz),   KARG_BUF(m->normals), KARG_U32(m->n),     KARG_BUF(m->start), KARG_BUF(m->count),
                   KARG_BUF(m->index), KARG_BUF(c.named),    KARG_U32(c.picked), KARG_BUF(m->rows)};
    st = launch_per_point(c.kernel, c.rows, c.wg, sizeof args / sizeof args[0], args, err);
    return st ? st : read_rows(m, c.rows, PTREG_PFH_BINS, out, missing, err);
}

ptreg_status feat_device_model_fpfh(feat_device_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                    size_t count, float *out, size_t *missing, ptreg_error *err)
{
    rows_call c;
    ptreg_status st = begin_rows(m, opt, which, count, "ptreg_feat_fpfh", PTREG_FPFH_BINS, &c, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(m->spfh),  KARG_U32(m->n),     KARG_BUF(m->start),
                   KARG_BUF(m->count), KARG_BUF(m->index), KARG_BUF(m->dist2),
                   KARG_BUF(c.named),  KARG_U32(c.picked), KARG_U32(opt->convention == PTREG_FPFH_OPEN3D),
                   KARG_BUF(m->rows)};
    st = launch_per_point(c.kernel, c.rows, c.wg, sizeof args / sizeof args[0], args, err);
    return st ? st : read_rows(m, c.rows, PTREG_FPFH_BINS, out, missing, err);
}

/* ---- the engine ---- */

static ptreg_status device_open(const ptreg_device *on, const float *xyz, const float *normals, size_t n, void **ctx,
                                ptreg_error *err)
{
    feat_device_model *m;
    ptreg_status st = feat_device_model_create(on, xyz, normals, n, &m, err);
    *ctx = m;
    return st;
}

/* The model's rows (the cloud is the one it holds). */
static ptreg_status device_pfh(void *ctx, const float *xyz, const float *normals, size_t n,
                               const ptreg_features_options *opt, const uint32_t *which, size_t count, float *out,
                               size_t *missing, ptreg_error *err)
{
    (void)xyz, (void)normals, (void)n;
    return feat_device_model_pfh(ctx, opt, which, count, out, missing, err);
}

static ptreg_status device_fpfh(void *ctx, const float *xyz, const float *normals, size_t n,
                                const ptreg_features_options *opt, const uint32_t *which, size_t count, float *out,
                                size_t *missing, ptreg_error *err)
{
    (void)xyz, (void)normals, (void)n;
    return feat_device_model_fpfh(ctx, opt, which, count, out, missing, err);
}

static void device_close(void *ctx) { feat_device_model_free(ctx); }

const features_engine feat_device_engine = {
    .base = {ENGINE_GPU_BACKENDS, device_supports},
    .take_turns = 1,
    .open = device_open,
    .pfh = device_pfh,
    .fpfh = device_fpfh,
    .close = device_close,
};

void feat_device_lists_free(feat_device_lists *l)
{
    free(l->start);
    free(l->count);
    free(l->index);
    free(l->dist2);
    memset(l, 0, sizeof *l);
}

/* The lists' offsets and lengths on the host (k-NN lists keep theirs on
 * the device only). */
static ptreg_status host_offsets(feat_device_model *m, ptreg_error *err)
{
    if (m->host_start && m->host_count)
        return PTREG_OK;
    free(m->host_start);
    free(m->host_count);
    m->host_start = malloc(m->n * sizeof *m->host_start);
    m->host_count = malloc(m->n * sizeof *m->host_count);
    if (!m->host_start || !m->host_count)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "PFH/FPFH: out of memory for %zu lists", m->n);
    ptreg_status st = dbuf_read(m->start, 0, m->host_start, m->n * sizeof(uint64_t), err);
    return st ? st : dbuf_read(m->count, 0, m->host_count, m->n * sizeof(uint32_t), err);
}

ptreg_status feat_device_neighbors(const ptreg_device *device, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                                   feat_device_lists *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    feat_device_model *m;
    ptreg_status st = feat_device_model_create(device, xyz, NULL, n, &m, err);
    st = st ? st : ensure_lists(m, nb, PTREG_FEAT_SEARCH_WG, err);
    st = st ? st : host_offsets(m, err);
    if (!st) {
        out->n = n;
        out->total = m->total;
        out->max_count = m->max_count;
        out->start = m->host_start;
        out->count = m->host_count;
        m->host_start = NULL;
        m->host_count = NULL;
        out->index = malloc(m->total * sizeof *out->index);
        out->dist2 = malloc(m->total * sizeof *out->dist2);
        if (!out->index || !out->dist2)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu neighbors", m->total);
    }
    st = st ? st : dbuf_read(m->index, 0, out->index, m->total * sizeof *out->index, err);
    st = st ? st : dbuf_read(m->dist2, 0, out->dist2, m->total * sizeof *out->dist2, err);
    feat_device_model_free(m);
    if (st)
        feat_device_lists_free(out);
    return st;
}
