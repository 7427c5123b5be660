/* PFH and FPFH on a GPU device (pfh_impl.h). The k-d tree is built on the
 * CPU (as the CPU path builds it) and its arrays uploaded; the
 * neighborhoods are found on the device (neighbors.cl), their lengths
 * come back once (the radius lists' offsets are summed here, in order, and
 * the longest list picks the descriptor program's local arrays), then the
 * descriptors run (pfh.cl) and only the rows come back. */
#include "feat/pfh_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_device.h"

static const char *const knn_files[] = {"nn/kdtree.cl", "feat/neighbors.cl", NULL};
static const char *const feat_files[] = {"feat/pfh.cl", NULL};
const kernel_program knn_kernels = {"neighborhoods", knn_files};
const kernel_program feat_kernels = {"point-features", feat_files};

#define FEAT_CAP_MIN 32

/* pfh.cl's local arrays for lists of up to cap entries: the points and
 * normals (6 floats each), the indices, PFH's 125 bins and two flags. */
static uint64_t feat_local_bytes(size_t cap) { return 4u * (7u * (uint64_t)cap + 125u + 2u); }

ptreg_status feat_device_defines(size_t cap, int wg, uint64_t local_bytes, char *defines, size_t size,
                                       ptreg_error *err)
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

/* One run's device state: the cloud, the tree, the lists. */
typedef struct feat_run {
    dev_handle *dev;
    size_t wg, search_wg; /* threads per point's group; per search group */
    size_t n, total, max_count;
    dbuf *xyz, *normals;
    nn_device_tree tree;
    dbuf *start, *count, *index, *dist2;
    uint32_t *host_start, *host_count;
} feat_run;

static void run_free(feat_run *r)
{
    dbuf *bufs[] = {r->xyz, r->normals, r->start, r->count, r->index, r->dist2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    nn_device_tree_free(&r->tree);
    free(r->host_start);
    free(r->host_count);
    memset(r, 0, sizeof *r);
}

static ptreg_status knn_kernel(feat_run *r, const char *name, dkernel **k, ptreg_error *err)
{
    char defines[1024];
    dprogram *p;
    nn_device_layout(r->dev, defines, sizeof defines);
    ptreg_status st = dev_program(r->dev, &knn_kernels, defines, &p, err);
    return st ? st : dev_kernel(p, name, k, err);
}

/* The lists' lengths back on the host: the longest, and (radius) the
 * offsets, summed in index order. */
static ptreg_status read_counts(feat_run *r, int offsets, ptreg_error *err)
{
    r->host_count = malloc(r->n * sizeof *r->host_count);
    r->host_start = malloc(r->n * sizeof *r->host_start);
    if (!r->host_count || !r->host_start)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "PFH/FPFH: out of memory for %zu lists", r->n);
    ptreg_status st = dbuf_read(r->count, 0, r->host_count, r->n * sizeof *r->host_count, err);
    if (st)
        return st;
    uint64_t sum = 0;
    for (size_t i = 0; i < r->n; i++) {
        r->max_count = r->host_count[i] > r->max_count ? r->host_count[i] : r->max_count;
        if (offsets)
            r->host_start[i] = (uint32_t)sum;
        sum += r->host_count[i];
        if (sum > UINT32_MAX)
            return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                                   "%s: PFH/FPFH's neighbor lists hold more than %u entries", r->dev->label,
                                   UINT32_MAX);
    }
    if (offsets)
        r->total = (size_t)sum;
    return PTREG_OK;
}

static ptreg_status knn_lists(feat_run *r, const ptreg_neighborhood *nb, ptreg_error *err)
{
    const size_t kk = nb->k < r->n ? nb->k : r->n;
    if (kk * r->n > UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: %zu points x %zu neighbors is too many for PFH/FPFH",
                               r->dev->label, r->n, kk);
    r->total = kk * r->n;
    const float r2 = nb->radius > 0 ? (float)(nb->radius * nb->radius) : 0.0f;
    dkernel *k;
    ptreg_status st = knn_kernel(r, "ptreg_knn_lists", &k, err);
    st = st ? st : dbuf_alloc(r->dev, r->total * sizeof(uint32_t), &r->index, err);
    st = st ? st : dbuf_alloc(r->dev, r->total * sizeof(float), &r->dist2, err);
    st = st ? st : dbuf_alloc(r->dev, r->n * sizeof(uint32_t), &r->count, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(r->xyz),   KARG_U32(r->n),      KARG_U32(kk),         KARG_F32(r2),
                         KARG_BUF(r->index), KARG_BUF(r->dist2),  KARG_BUF(r->count),   KARG_BUF(r->tree.nodes),
                         KARG_BUF(r->tree.leaves), KARG_BUF(r->tree.chunks), KARG_BUF(r->tree.index_of_slot)};
    st = dev_launch(k, r->n, r->search_wg, sizeof args / sizeof args[0], args, err);
    st = st ? st : read_counts(r, 0, err);
    if (st)
        return st;
    for (size_t i = 0; i < r->n; i++)
        r->host_start[i] = (uint32_t)(i * kk);
    return dbuf_upload(r->dev, r->host_start, r->n * sizeof(uint32_t), &r->start, err);
}

static ptreg_status radius_lists(feat_run *r, const ptreg_neighborhood *nb, ptreg_error *err)
{
    const float r2 = (float)(nb->radius * nb->radius); /* as the CPU's strict test */
    dkernel *counter, *writer;
    ptreg_status st = knn_kernel(r, "ptreg_knn_radius_count", &counter, err);
    st = st ? st : knn_kernel(r, "ptreg_knn_radius_lists", &writer, err);
    st = st ? st : dbuf_alloc(r->dev, r->n * sizeof(uint32_t), &r->count, err);
    if (st)
        return st;
    karg count_args[] = {KARG_BUF(r->xyz),   KARG_U32(r->n),       KARG_F32(r2),
                               KARG_BUF(r->count), KARG_BUF(r->tree.nodes),   KARG_BUF(r->tree.leaves),
                               KARG_BUF(r->tree.chunks), KARG_BUF(r->tree.index_of_slot)};
    st = dev_launch(counter, r->n, r->search_wg, sizeof count_args / sizeof count_args[0], count_args, err);
    st = st ? st : read_counts(r, 1, err);
    st = st ? st : dbuf_upload(r->dev, r->host_start, r->n * sizeof(uint32_t), &r->start, err);
    /* every point finds itself: total >= n > 0 */
    st = st ? st : dbuf_alloc(r->dev, r->total * sizeof(uint32_t), &r->index, err);
    st = st ? st : dbuf_alloc(r->dev, r->total * sizeof(float), &r->dist2, err);
    if (st)
        return st;
    karg args[] = {KARG_BUF(r->xyz),   KARG_U32(r->n),     KARG_F32(r2),          KARG_BUF(r->start),
                         KARG_BUF(r->count), KARG_BUF(r->index), KARG_BUF(r->dist2),    KARG_BUF(r->tree.nodes),
                         KARG_BUF(r->tree.leaves), KARG_BUF(r->tree.chunks), KARG_BUF(r->tree.index_of_slot)};
    return dev_launch(writer, r->n, r->search_wg, sizeof args / sizeof args[0], args, err);
}

/* The reference path is the CPU's by definition; the work-groups must fit. */
static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    const ptreg_feature_options *o = options;
    if (o->reference)
        return engine_cpu_only("PFH/FPFH: the reference path", device, err);
    const size_t wg = o->gpu.wg ? (size_t)o->gpu.wg : PTREG_FEAT_DEVICE_WG;
    const size_t search_wg = o->gpu.search_wg ? (size_t)o->gpu.search_wg : PTREG_FEAT_SEARCH_WG;
    if (wg > device->max_work_group || search_wg > device->max_work_group)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "PFH/FPFH on %s: work-groups of %zu and %zu threads; the "
                               "device takes %zu", device->name, wg, search_wg, device->max_work_group);
    return PTREG_OK;
}

const engine feat_device_engine = {ENGINE_GPU_BACKENDS, device_supports};

/* The cloud (and normals, when given) on the device, its tree, and every
 * point's neighbor list. */
static ptreg_status run_begin(feat_run *r, const ptreg_device *device, const float *xyz, const float *normals,
                              size_t n, const ptreg_neighborhood *nb, const ptreg_feature_gpu *gpu,
                              ptreg_error *err)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    r->wg = gpu->wg ? (size_t)gpu->wg : PTREG_FEAT_DEVICE_WG;
    r->search_wg = gpu->search_wg ? (size_t)gpu->search_wg : PTREG_FEAT_SEARCH_WG;
    if (n > UINT32_MAX / 4)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "PFH/FPFH on a device: %zu points is too many", n);
    ptreg_status st = dev_get(device, &r->dev, err);
    ptreg_kdtree *tree = NULL;
    st = st ? st : ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    st = st ? st : nn_device_tree_upload(r->dev, tree, 0, &r->tree, err);
    ptreg_kdtree_destroy(tree);
    st = st ? st : dbuf_upload(r->dev, xyz, 3 * n * sizeof(float), &r->xyz, err);
    if (!st && normals)
        st = dbuf_upload(r->dev, normals, 3 * n * sizeof(float), &r->normals, err);
    if (!st)
        st = nb->k ? knn_lists(r, nb, err) : radius_lists(r, nb, err);
    return st;
}

static ptreg_status feat_kernel(feat_run *r, const char *name, dkernel **k, ptreg_error *err)
{
    char defines[256];
    dprogram *p;
    ptreg_status st = feat_device_defines(r->max_count, (int)r->wg, r->dev->info.local_memory_bytes, defines,
                                                sizeof defines, err);
    st = st ? st : dev_program(r->dev, &feat_kernels, defines, &p, err);
    return st ? st : dev_kernel(p, name, k, err);
}

/* One group per point. */
static ptreg_status launch_per_point(feat_run *r, const dkernel *k, size_t nargs, const karg *args,
                                     ptreg_error *err)
{
    const size_t groups[3] = {r->n, 1, 1}, local[3] = {r->wg, 1, 1};
    return dev_launch_groups(k, 1, groups, local, nargs, args, err);
}

/* The rows back, and the NaN rows counted (the CPU's missing). */
static ptreg_status read_rows(feat_run *r, const dbuf *rows, size_t bins, float *out, size_t *missing,
                              ptreg_error *err)
{
    ptreg_status st = dbuf_read(rows, 0, out, r->n * bins * sizeof(float), err);
    if (st || !missing)
        return st;
    size_t lacking = 0;
    for (size_t i = 0; i < r->n; i++)
        lacking += isnan(out[bins * i]) != 0;
    *missing = lacking;
    return PTREG_OK;
}

ptreg_status feat_device_pfh(const ptreg_device *device, const float *xyz, const float *normals, size_t n,
                                   const ptreg_feature_options *opt, float *out, size_t *missing, ptreg_error *err)
{
    feat_run r;
    dkernel *k;
    dbuf *rows = NULL;
    ptreg_status st = run_begin(&r, device, xyz, normals, n, &opt->neighbors, &opt->gpu, err);
    st = st ? st : feat_kernel(&r, "ptreg_feat_pfh", &k, err);
    st = st ? st : dbuf_alloc(r.dev, n * PTREG_PFH_BINS * sizeof(float), &rows, err);
    if (!st) {
        karg args[] = {KARG_BUF(r.xyz),   KARG_BUF(r.normals), KARG_U32(n),  KARG_BUF(r.start),
                             KARG_BUF(r.count), KARG_BUF(r.index),   KARG_BUF(rows)};
        st = launch_per_point(&r, k, sizeof args / sizeof args[0], args, err);
    }
    st = st ? st : read_rows(&r, rows, PTREG_PFH_BINS, out, missing, err);
    dbuf_free(rows);
    run_free(&r);
    return st;
}

ptreg_status feat_device_fpfh(const ptreg_device *device, const float *xyz, const float *normals, size_t n,
                                    const ptreg_feature_options *opt, float *out, size_t *missing, ptreg_error *err)
{
    feat_run r;
    dkernel *spfh_k, *fpfh_k;
    dbuf *spfh = NULL, *rows = NULL;
    ptreg_status st = run_begin(&r, device, xyz, normals, n, &opt->neighbors, &opt->gpu, err);
    st = st ? st : feat_kernel(&r, "ptreg_feat_spfh", &spfh_k, err);
    st = st ? st : feat_kernel(&r, "ptreg_feat_fpfh", &fpfh_k, err);
    st = st ? st : dbuf_alloc(r.dev, n * PTREG_FPFH_BINS * sizeof(float), &spfh, err);
    st = st ? st : dbuf_alloc(r.dev, n * PTREG_FPFH_BINS * sizeof(float), &rows, err);
    if (!st) {
        karg args[] = {KARG_BUF(r.xyz),   KARG_BUF(r.normals), KARG_U32(n),  KARG_BUF(r.start),
                             KARG_BUF(r.count), KARG_BUF(r.index),   KARG_BUF(spfh)};
        st = launch_per_point(&r, spfh_k, sizeof args / sizeof args[0], args, err);
    }
    if (!st) {
        karg args[] = {KARG_BUF(spfh),    KARG_U32(n),        KARG_BUF(r.start),
                             KARG_BUF(r.count), KARG_BUF(r.index),  KARG_BUF(r.dist2),
                             KARG_U32(opt->convention == PTREG_FPFH_OPEN3D), KARG_BUF(rows)};
        st = launch_per_point(&r, fpfh_k, sizeof args / sizeof args[0], args, err);
    }
    st = st ? st : read_rows(&r, rows, PTREG_FPFH_BINS, out, missing, err);
    dbuf_free(spfh);
    dbuf_free(rows);
    run_free(&r);
    return st;
}

void feat_device_lists_free(feat_device_lists *l)
{
    free(l->start);
    free(l->count);
    free(l->index);
    free(l->dist2);
    memset(l, 0, sizeof *l);
}

ptreg_status feat_device_neighbors(const ptreg_device *device, const float *xyz, size_t n,
                                         const ptreg_neighborhood *nb, feat_device_lists *out,
                                         ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    feat_run r;
    const ptreg_feature_gpu defaults = {0, 0};
    ptreg_status st = run_begin(&r, device, xyz, NULL, n, nb, &defaults, err);
    if (!st) {
        out->n = n;
        out->total = r.total;
        out->max_count = r.max_count;
        out->start = r.host_start;
        out->count = r.host_count;
        r.host_start = r.host_count = NULL;
        out->index = malloc(r.total * sizeof *out->index);
        out->dist2 = malloc(r.total * sizeof *out->dist2);
        if (!out->index || !out->dist2)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu neighbors", r.total);
    }
    st = st ? st : dbuf_read(r.index, 0, out->index, r.total * sizeof *out->index, err);
    st = st ? st : dbuf_read(r.dist2, 0, out->dist2, r.total * sizeof *out->dist2, err);
    run_free(&r);
    if (st)
        feat_device_lists_free(out);
    return st;
}
