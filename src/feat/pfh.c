/* PFH and FPFH with PCL's pair feature and binning (Rusu et al., ICRA 2009;
 * PCL's PFHEstimation and FPFHEstimation). Arithmetic follows PCL's order
 * where a different rounding could move a value across a bin edge: float
 * pair features, 4-lane dot products summed as (x + z) + y (Eigen's SSE
 * reduction of a 4-vector whose w is 0), bin indices in double.
 *
 * Two paths give the same bits: the reference (one k-d tree search and one
 * scalar pair feature at a time) and the fast path (neighborhoods found in
 * the tree's order, pair bins in batches by the per-ISA kernels). Bins are
 * counted and turned into values once, count * 100 / pairs, where PCL adds
 * 100 / pairs per pair in float; the two differ by float rounding only. */
#include "ptreg/features.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/large_alloc.h"
#include "feat/neighborhood.h"
#include "feat/pfh_impl.h"
#include "feat/pfh_kernels.h"
#include "nn/kdtree_query.h"
#include "feat/testing.h"

#define PFH_SPLIT 5
#define PFH_PI 3.14159265358979323846 /* M_PI, which strict C11 lacks */
#define FPFH_SPLIT 11

void ptreg_features_options_default(ptreg_features_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->neighbors.k = 30;
    opt->convention = PTREG_FPFH_PCL;
    opt->reference = 0;
}

static const ptreg_option_name convention_names[] = {{"pcl", PTREG_FPFH_PCL}, {"open3d", PTREG_FPFH_OPEN3D}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_features_options, convention);
static const ptreg_option feature_rows[] = {
    FEAT_NEIGHBORHOOD_ROWS(ptreg_features_options, neighbors),
    OPTION_ENUM(ptreg_features_options, convention, "convention", NULL, convention_names, 0,
                "FPFH: pcl (blocks sum to 100) or open3d (the point's own SPFH added: blocks sum to 200)"),
    OPTION_NUMBER(ptreg_features_options, gpu.wg, "wg", NULL, INT, 64, 256,
                  PTREG_OPTION_POW2 | PTREG_OPTION_KNOB | PTREG_OPTION_AUTO, "N",
                  "on a GPU, the threads of each point's work-group (default 64)"),
    OPTION_NUMBER(ptreg_features_options, gpu.search_wg, "search_wg", NULL, INT, 32, 256,
                  PTREG_OPTION_POW2 | PTREG_OPTION_KNOB | PTREG_OPTION_AUTO, "N",
                  "on a GPU, the neighbor searches' work-group "
                  "(default 256)"),
};
OPTION_TABLE(ptreg_features_option_table, "features", ptreg_features_options, ptreg_features_options_default,
             feature_rows)

static float dot3(const float a[3], const float b[3]) { return (a[0] * b[0] + a[2] * b[2]) + a[1] * b[1]; }

static void cross3(const float a[3], const float b[3], float out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

int ptreg_pair_feature(const float p1[3], const float n1[3], const float p2[3], const float n2[3], float f[4])
{
    float d[3] = {p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]};
    float dist = sqrtf(dot3(d, d));
    if (dist == 0.0f)
        return 0;
    /* The source is the point whose normal makes the smaller angle with d. */
    float a1 = dot3(n1, d) / dist, a2 = dot3(n2, d) / dist;
    const float *u = n1, *target = n2;
    float phi = a1;
    if (acosf(fabsf(a1)) > acosf(fabsf(a2))) {
        u = n2;
        target = n1;
        for (int a = 0; a < 3; a++)
            d[a] = -d[a];
        phi = -a2;
    }
    float v[3], w[3];
    cross3(d, u, v);
    float vn = sqrtf(dot3(v, v));
    if (vn == 0.0f)
        return 0;
    for (int a = 0; a < 3; a++)
        v[a] /= vn;
    cross3(u, v, w);
    f[0] = atan2f(dot3(w, target), dot3(u, target)); /* theta */
    f[1] = dot3(v, target);                          /* alpha */
    f[2] = phi;                                      /* phi */
    f[3] = dist;
    return 1;
}

/* PCL's bin of an angle in [-pi, pi] and of a cosine in [-1, 1], in double
 * as PCL computes them (float + M_PI promotes), clamped to the range. */
static int32_t clamp_bin(double b, int bins) { return b < 0 ? 0 : b >= bins ? bins - 1 : (int32_t)b; }

static int32_t angle_bin(float f, int bins)
{
    const float inv_2pi = 1.0f / (2.0f * (float)PFH_PI);
    return clamp_bin(floor(bins * ((f + PFH_PI) * inv_2pi)), bins);
}

static int32_t cosine_bin(float f, int bins) { return clamp_bin(floor(bins * ((f + 1.0) * 0.5)), bins); }

void feat_pair_bins_exact(const float p1[3], const float n1[3], const float p2[3], const float n2[3], int split,
                          int32_t bins[3])
{
    float f[4];
    if (!ptreg_pair_feature(p1, n1, p2, n2, f))
        f[0] = f[1] = f[2] = f[3] = 0.0f; /* binned as zeros, as PCL's estimators do */
    bins[0] = angle_bin(f[0], split);
    bins[1] = cosine_bin(f[1], split);
    bins[2] = cosine_bin(f[2], split);
}

typedef void (*pair_bins_fn)(const feat_pair_batch *b);

static int finite3(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

static ptreg_status features_choose(const ptreg_features_options *o, ptreg_device *on, const features_engine **chosen,
                                    ptreg_error *err);

/* The inputs and options; *on and *chosen: the device they run on and the
 * engine that runs them there. */
static ptreg_status check_inputs(const float *xyz, const float *normals, size_t n, const ptreg_features_options *o,
                                 const float *out, ptreg_device *on, const features_engine **chosen, ptreg_error *err)
{
    if (!xyz || !normals || !out || !n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "features: no points, normals or output");
    ptreg_status st = kd_check_points("features", n, err);
    st = st ? st : ptreg_check_shape("features: the cloud", xyz, n, err);
    st = st ? st : ptreg_options_check(ptreg_features_option_table(), o, err);
    st = st ? st : features_choose(o, on, chosen, err);
    return st ? st : nn_check_neighborhood(&o->neighbors, err);
}

static void fill(float *row, int bins, float value)
{
    for (int b = 0; b < bins; b++)
        row[b] = value;
}

/* A neighbor with a non-finite normal has no pair feature: its point's
 * PFH or SPFH is NaN (PCL would bin its NaN features into bin 0). */
static int normals_finite(const float *normals, const nn_list *nb)
{
    for (size_t i = 0; i < nb->count; i++)
        if (!finite3(normals + 3 * (size_t)nb->index[i]))
            return 0;
    return 1;
}

/* What a thread needs for one point: the neighbors side by side (all of
 * them, or all but the query), the bins of one batch, the bin counts. */
typedef struct pair_scratch {
    float *soa;    /* x, y, z, nx, ny, nz: 6 * cap */
    int32_t *bins; /* theta, alpha, phi: 3 * cap */
    uint32_t count[PTREG_PFH_BINS];
    size_t cap;
} pair_scratch;

static int scratch_init(pair_scratch *s, size_t cap)
{
    s->cap = cap ? cap : 1;
    s->soa = malloc(6 * s->cap * sizeof *s->soa);
    s->bins = malloc(3 * s->cap * sizeof *s->bins);
    return s->soa && s->bins;
}

static void scratch_free(pair_scratch *s)
{
    free(s->soa);
    free(s->bins);
}

/* The neighbors of a list (but `skip`, an index or SIZE_MAX) side by side;
 * returns how many. *finite: whether every neighbor's normal (skip's
 * too) is finite, found on the way (one pass over the neighbors' memory
 * instead of two). */
static size_t gather(const float *xyz, const float *normals, const nn_list *nb, size_t skip, pair_scratch *s,
                     int *finite)
{
    size_t m = 0, c = s->cap;
    int ok = 1;
    for (size_t j = 0; j < nb->count; j++) {
        size_t q = nb->index[j];
        ok &= finite3(normals + 3 * q);
        if (q == skip)
            continue;
        for (int a = 0; a < 3; a++) {
            s->soa[(size_t)a * c + m] = xyz[3 * q + (size_t)a];
            s->soa[(size_t)(3 + a) * c + m] = normals[3 * q + (size_t)a];
        }
        m++;
    }
    *finite = ok;
    return m;
}

/* Bins of the pairs between (p, n) and gathered neighbors from..to. */
static void batch_bins(pair_bins_fn kernel, pair_scratch *s, const float *p, const float *n, int fixed_first,
                       size_t from, size_t to, int split)
{
    size_t c = s->cap;
    feat_pair_batch b = {p,
                         n,
                         fixed_first,
                         s->soa + from,
                         s->soa + c + from,
                         s->soa + 2 * c + from,
                         s->soa + 3 * c + from,
                         s->soa + 4 * c + from,
                         s->soa + 5 * c + from,
                         to - from,
                         split,
                         s->bins,
                         s->bins + c,
                         s->bins + 2 * c};
    kernel(&b);
}

static void counts_to_values(const uint32_t *count, int bins, size_t pairs, float *hist)
{
    double per = 100.0 / (double)pairs;
    for (int b = 0; b < bins; b++)
        hist[b] = (float)(count[b] * per);
}

/* ---- PFH ----------------------------------------------------------------- */

/* All unordered pairs of the neighborhood (the query included), counted
 * in bin theta + 5 alpha + 25 phi. PCL's order: of neighbors i < j in the
 * list, the later one, j, is the pair feature's first point. */
static void pfh_counts_reference(const float *xyz, const float *normals, const nn_list *nb, uint32_t *count)
{
    for (size_t i = 0; i < nb->count; i++) {
        const float *pi = xyz + 3 * (size_t)nb->index[i], *ni = normals + 3 * (size_t)nb->index[i];
        for (size_t j = i + 1; j < nb->count; j++) {
            int32_t bins[3];
            size_t q = nb->index[j];
            feat_pair_bins_exact(xyz + 3 * q, normals + 3 * q, pi, ni, PFH_SPLIT, bins);
            count[bins[0] + PFH_SPLIT * bins[1] + PFH_SPLIT * PFH_SPLIT * bins[2]]++;
        }
    }
}

static void pfh_counts_fast(pair_bins_fn kernel, const float *xyz, const float *normals, const nn_list *nb,
                            pair_scratch *s)
{
    int finite; /* checked by the caller */
    size_t m = gather(xyz, normals, nb, SIZE_MAX, s, &finite), c = s->cap;
    for (size_t i = 0; i + 1 < m; i++) {
        float p[3] = {s->soa[i], s->soa[c + i], s->soa[2 * c + i]};
        float n[3] = {s->soa[3 * c + i], s->soa[4 * c + i], s->soa[5 * c + i]};
        batch_bins(kernel, s, p, n, 0, i + 1, m, PFH_SPLIT);
        for (size_t j = 0; j < m - i - 1; j++)
            s->count[s->bins[j] + PFH_SPLIT * s->bins[c + j] + PFH_SPLIT * PFH_SPLIT * s->bins[2 * c + j]]++;
    }
}

/* A point alone in its neighborhood has no pair: an all-zero row, as PCL
 * and Open3D give it. */
static void pfh_of(pair_bins_fn kernel, const float *xyz, const float *normals, const nn_list *nb, pair_scratch *s,
                   float *hist)
{
    memset(s->count, 0, sizeof s->count);
    if (kernel)
        pfh_counts_fast(kernel, xyz, normals, nb, s);
    else
        pfh_counts_reference(xyz, normals, nb, s->count);
    size_t m = nb->count;
    counts_to_values(s->count, PTREG_PFH_BINS, m > 1 ? m * (m - 1) / 2 : 1, hist);
}

/* What both descriptors start with on the CPU (the checks made): every
 * point's neighborhood (radius lists sorted, or in the tree's order where
 * no result depends on it: FPFH), and the pair kernel (NULL for the
 * reference). */
static ptreg_status begin_features(const float *xyz, size_t n, const ptreg_features_options *opt, nn_order order,
                                   feat_table *table, pair_bins_fn *kernel, ptreg_error *err)
{
    memset(table, 0, sizeof *table);
    ptreg_kdtree *tree = NULL;
    ptreg_status s = ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    if (!s)
        s = feat_table_build(tree, xyz, n, &opt->neighbors, opt->reference, order, table, err);
    ptreg_kdtree_destroy(tree);
    *kernel = opt->reference ? NULL : pfh_cpu_kernels()->pair_bins;
    return s;
}

/* Every point's PFH on the CPU. */
static ptreg_status cpu_pfh_all(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt,
                                float *out, size_t *missing, ptreg_error *err)
{
    feat_table table;
    pair_bins_fn kernel;
    ptreg_status s = begin_features(xyz, n, opt, NN_SORTED, &table, &kernel, err);
    if (s)
        return s;
    size_t lacking = 0;
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(+ : lacking) reduction(| : failed)
    {
        pair_scratch scratch;
        failed = !scratch_init(&scratch, table.max_count);
#pragma omp for schedule(dynamic, 64)
        for (size_t i = 0; i < n; i++) {
            float *row = out + PTREG_PFH_BINS * i;
            const nn_list *nb = &table.list[i];
            if (failed) {
                continue;
            } else if (!finite3(normals + 3 * i) || !normals_finite(normals, nb)) {
                fill(row, PTREG_PFH_BINS, NAN);
                lacking++;
            } else {
                pfh_of(kernel, xyz, normals, nb, &scratch, row);
            }
        }
        scratch_free(&scratch);
    }
    feat_table_free(&table);
    if (failed)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pfh: out of memory");
    if (missing)
        *missing = lacking;
    return PTREG_OK;
}

/* ---- FPFH ---------------------------------------------------------------- */

/* SPFH of point i: its pairs with every other neighbor (i first; the
 * query is skipped by index, as PCL does), 11 bins per feature, each block
 * summing to 100. All zero for a point alone. Returns 0 (hist untouched)
 * when a neighbor's normal is not finite. */
static int spfh_of(pair_bins_fn kernel, const float *xyz, const float *normals, size_t i, const nn_list *nb,
                   pair_scratch *s, float *hist)
{
    uint32_t *count = s->count;
    memset(count, 0, PTREG_FPFH_BINS * sizeof *count);
    const float *p = xyz + 3 * i, *np = normals + 3 * i;
    size_t pairs = 0;
    if (kernel) {
        size_t c = s->cap;
        int finite;
        pairs = gather(xyz, normals, nb, i, s, &finite);
        if (!finite)
            return 0;
        batch_bins(kernel, s, p, np, 1, 0, pairs, FPFH_SPLIT);
        for (size_t j = 0; j < pairs; j++) {
            count[s->bins[j]]++;
            count[FPFH_SPLIT + s->bins[c + j]]++;
            count[2 * FPFH_SPLIT + s->bins[2 * c + j]]++;
        }
    } else {
        if (!normals_finite(normals, nb))
            return 0;
        for (size_t j = 0; j < nb->count; j++) {
            size_t q = nb->index[j];
            int32_t bins[3];
            if (q == i)
                continue;
            feat_pair_bins_exact(p, np, xyz + 3 * q, normals + 3 * q, FPFH_SPLIT, bins);
            count[bins[0]]++;
            count[FPFH_SPLIT + bins[1]]++;
            count[2 * FPFH_SPLIT + bins[2]]++;
            pairs++;
        }
    }
    counts_to_values(count, PTREG_FPFH_BINS, pairs ? pairs : 1, hist);
    return 1;
}

/* FPFH of a query from its neighbors' SPFHs weighted by 1 / d^2 (d^2 the
 * squared distance; neighbors at distance 0, the query among them, are
 * left out), each 11-bin block scaled to sum to 100 (float values, block
 * sums in double, a float scale, as PCL; PCL sums the weighted values as
 * they come, here the block's bins are summed at the end, which differs by
 * rounding only; a block with nothing stays 0); the Open3D convention then
 * adds the query's own SPFH. Returns 0 when a neighbor's SPFH is NaN. */
static int fpfh_of(const float *spfh, const nn_list *nb, size_t query, ptreg_fpfh_convention conv, int fast,
                   float *hist)
{
    if (fast) {
        feat_fpfh_gather g = {spfh, nb->index, nb->dist2, nb->count, hist, 0};
        pfh_cpu_kernels()->fpfh_sum(&g);
        if (g.any_nan)
            return 0;
    } else {
        for (size_t j = 0; j < nb->count; j++)
            if (isnan(spfh[PTREG_FPFH_BINS * (size_t)nb->index[j]]))
                return 0;
        memset(hist, 0, PTREG_FPFH_BINS * sizeof *hist);
        for (size_t j = 0; j < nb->count; j++) {
            if (nb->dist2[j] == 0.0f)
                continue;
            float weight = 1.0f / nb->dist2[j];
            const float *s = spfh + PTREG_FPFH_BINS * (size_t)nb->index[j];
            for (int b = 0; b < PTREG_FPFH_BINS; b++)
                hist[b] += s[b] * weight;
        }
    }
    for (int block = 0; block < 3; block++) {
        float *h = hist + FPFH_SPLIT * block;
        double total = 0;
        for (int b = 0; b < FPFH_SPLIT; b++)
            total += h[b];
        float scale = total != 0.0 ? (float)(100.0 / total) : 1.0f;
        for (int b = 0; b < FPFH_SPLIT; b++)
            h[b] *= scale;
    }
    if (conv == PTREG_FPFH_OPEN3D)
        for (int b = 0; b < PTREG_FPFH_BINS; b++)
            hist[b] += spfh[PTREG_FPFH_BINS * query + (size_t)b];
    return 1;
}

typedef struct feature_job {
    const float *xyz, *normals;
    size_t n;
    const ptreg_features_options *opt;
    const feat_table *table;
    pair_bins_fn kernel;
    float *spfh, *out;
} feature_job;

/* Every point's SPFH: NaN when its normal or a neighbor's is not finite. */
static int spfh_pass(const feature_job *job)
{
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed)
    {
        pair_scratch scratch;
        failed = !scratch_init(&scratch, job->table->max_count);
#pragma omp for schedule(dynamic, 64)
        for (size_t i = 0; i < job->n; i++) {
            const nn_list *nb = &job->table->list[i];
            float *row = job->spfh + PTREG_FPFH_BINS * i;
            if (failed)
                continue;
            if (!finite3(job->normals + 3 * i) || !spfh_of(job->kernel, job->xyz, job->normals, i, nb, &scratch, row))
                fill(row, PTREG_FPFH_BINS, NAN);
        }
        scratch_free(&scratch);
    }
    return !failed;
}

/* Every point's FPFH: NaN when its own SPFH or a neighbor's is. */
static size_t fpfh_pass(const feature_job *job)
{
    size_t lacking = 0;
#pragma omp parallel for schedule(dynamic, 64) num_threads(ptreg_get_num_threads()) reduction(+ : lacking)
    for (size_t i = 0; i < job->n; i++) {
        const nn_list *nb = &job->table->list[i];
        float *row = job->out + PTREG_FPFH_BINS * i;
        if (isnan(job->spfh[PTREG_FPFH_BINS * i]) ||
            !fpfh_of(job->spfh, nb, i, job->opt->convention, job->kernel != NULL, row)) {
            fill(row, PTREG_FPFH_BINS, NAN);
            lacking++;
        }
    }
    return lacking;
}

/* Every point's FPFH on the CPU. */
static ptreg_status cpu_fpfh_all(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt,
                                 float *out, size_t *missing, ptreg_error *err)
{
    feat_table table;
    pair_bins_fn kernel;
    ptreg_status s = begin_features(xyz, n, opt, NN_TREE_ORDER, &table, &kernel, err);
    if (s)
        return s;
    float *spfh = core_alloc_large(n * PTREG_FPFH_BINS * sizeof(float));
    feature_job job = {xyz, normals, n, opt, &table, kernel, spfh, out};
    int ok = job.spfh && spfh_pass(&job);
    size_t lacking = ok ? fpfh_pass(&job) : 0;
    free(job.spfh);
    feat_table_free(&table);
    if (!ok)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "fpfh: out of memory");
    if (missing)
        *missing = lacking;
    return PTREG_OK;
}

/* ---- the CPU's engine ---------------------------------------------------- */

/* The rows of `which` out of every point's (the CPU's descriptors). */
static void gather_rows(const float *all, size_t bins, const uint32_t *which, size_t count, float *out, size_t *missing)
{
    size_t lacking = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(out + i * bins, all + (size_t)which[i] * bins, bins * sizeof(float));
        lacking += isnan(out[i * bins]) != 0;
    }
    if (missing)
        *missing = lacking;
}

typedef ptreg_status (*features_fn)(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt,
                                    float *out, size_t *missing, ptreg_error *err);

/* On the CPU: every row, then those asked for. */
static ptreg_status cpu_rows(features_fn fn, size_t bins, const float *xyz, const float *normals, size_t n,
                             const ptreg_features_options *opt, const uint32_t *which, size_t count, float *out,
                             size_t *missing, ptreg_error *err)
{
    if (!which)
        return fn(xyz, normals, n, opt, out, missing, err);
    float *all = core_alloc_large(n * bins * sizeof *all);
    if (!all)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "features: out of memory for %zu rows", n);
    ptreg_status s = fn(xyz, normals, n, opt, all, NULL, err);
    if (!s)
        gather_rows(all, bins, which, count, out, missing);
    free(all);
    return s;
}

static ptreg_status cpu_pfh(void *ctx, const float *xyz, const float *normals, size_t n,
                            const ptreg_features_options *opt, const uint32_t *which, size_t count, float *out,
                            size_t *missing, ptreg_error *err)
{
    (void)ctx;
    return cpu_rows(cpu_pfh_all, PTREG_PFH_BINS, xyz, normals, n, opt, which, count, out, missing, err);
}

static ptreg_status cpu_fpfh(void *ctx, const float *xyz, const float *normals, size_t n,
                             const ptreg_features_options *opt, const uint32_t *which, size_t count, float *out,
                             size_t *missing, ptreg_error *err)
{
    (void)ctx;
    return cpu_rows(cpu_fpfh_all, PTREG_FPFH_BINS, xyz, normals, n, opt, which, count, out, missing, err);
}

/* The CPU keeps nothing between calls: it reads the caller's arrays. */
static ptreg_status cpu_open(const ptreg_device *on, const float *xyz, const float *normals, size_t n, void **ctx,
                             ptreg_error *err)
{
    (void)on, (void)xyz, (void)normals, (void)n, (void)err;
    *ctx = NULL;
    return PTREG_OK;
}

static void cpu_close(void *ctx) { (void)ctx; }

/* Every option. */
static const features_engine feat_cpu_engine = {
    .base = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL},
    .take_turns = 0,
    .open = cpu_open,
    .pfh = cpu_pfh,
    .fpfh = cpu_fpfh,
    .close = cpu_close,
};

static const engine *const feature_engines[] = {&feat_cpu_engine.base, &feat_device_engine.base};

/* The device the options name and the engine that runs them there: the
 * one choice a call makes. */
static ptreg_status features_choose(const ptreg_features_options *o, ptreg_device *on, const features_engine **chosen,
                                    ptreg_error *err)
{
    const engine *e = NULL;
    ptreg_status st = engine_choose(feature_engines, 2, &o->device, o, "PFH/FPFH", on, &e, err);
    /* every engine in the list is a features_engine, its base first */
    *chosen = (const features_engine *)e;
    return st;
}

ptreg_status ptreg_features_resolve_device(const ptreg_features_options *o, ptreg_device *on, ptreg_error *err)
{
    const features_engine *unused;
    return features_choose(o, on, &unused, err);
}

/* ---- the calls ------------------------------------------------------------ */

/* A descriptor's rows of every point, for one call: the options (defaults
 * for NULL) and the inputs checked, the engine chosen, set up on the
 * cloud, its rows (fpfh: FPFH's, else PFH's), its end. */
static ptreg_status features_once(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt,
                                  float *out, size_t *missing, int fpfh, ptreg_error *err)
{
    ptreg_features_options d;
    if (!opt) {
        ptreg_features_options_default(&d);
        opt = &d;
    }
    ptreg_device on;
    const features_engine *e = NULL;
    ptreg_status s = check_inputs(xyz, normals, n, opt, out, &on, &e, err);
    if (s)
        return s;
    void *ctx = NULL;
    s = e->open(&on, xyz, normals, n, &ctx, err);
    s = s ? s : (fpfh ? e->fpfh : e->pfh)(ctx, xyz, normals, n, opt, NULL, n, out, missing, err);
    e->close(ctx);
    return s;
}

ptreg_status ptreg_pfh(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt, float *out,
                       size_t *missing, ptreg_error *err)
{
    return features_once(xyz, normals, n, opt, out, missing, 0, err);
}

ptreg_status ptreg_fpfh(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt, float *out,
                        size_t *missing, ptreg_error *err)
{
    return features_once(xyz, normals, n, opt, out, missing, 1, err);
}

/* ---- a resident cloud ---------------------------------------------------- */

struct ptreg_features_model {
    ptreg_device on;
    const features_engine *engine; /* chosen once, at create */
    void *ctx;                     /* the engine's: a GPU's copy of the cloud */
    const float *xyz, *normals;    /* the caller's */
    size_t n;
    /* The device copy keeps the last neighborhood's lists and SPFH rows:
     * threads sharing the model take their turns on it where the engine
     * says so. */
    pthread_mutex_t device_turn;
};

ptreg_status ptreg_features_model_create(const float *xyz, const float *normals, size_t n,
                                         const ptreg_features_options *opt, ptreg_features_model **out,
                                         ptreg_error *err)
{
    ptreg_features_options d;
    if (!opt) {
        ptreg_features_options_default(&d);
        opt = &d;
    }
    if (!out)
        return ptreg_error_set(err, PTREG_ERR_ARG, "features: no model");
    *out = NULL;
    ptreg_features_model *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "features: out of memory");
    pthread_mutex_init(&m->device_turn, NULL);
    const float no_output = 0;
    ptreg_status s = check_inputs(xyz, normals, n, opt, &no_output, &m->on, &m->engine, err);
    s = s ? s : m->engine->open(&m->on, xyz, normals, n, &m->ctx, err);
    if (s) {
        ptreg_features_model_destroy(m);
        return s;
    }
    m->xyz = xyz, m->normals = normals, m->n = n;
    *out = m;
    return PTREG_OK;
}

/* The options on the model's device, checked; the points asked for within the cloud. */
static ptreg_status check_model_call(const ptreg_features_model *m, const ptreg_features_options *opt,
                                     const uint32_t *which, size_t count, const float *out, ptreg_features_options *o,
                                     ptreg_error *err)
{
    if (!m || !out)
        return ptreg_error_set(err, PTREG_ERR_ARG, "features: no model or output");
    if (opt)
        *o = *opt;
    else
        ptreg_features_options_default(o);
    o->device = m->on;
    ptreg_device on;
    ptreg_status s = ptreg_options_check(ptreg_features_option_table(), o, err);
    s = s ? s : ptreg_features_resolve_device(o, &on, err);
    s = s ? s : nn_check_neighborhood(&o->neighbors, err);
    if (s || !which)
        return s;
    if (!count)
        return ptreg_error_set(err, PTREG_ERR_ARG, "features: no points asked for");
    for (size_t i = 0; i < count; i++)
        if (which[i] >= m->n)
            return ptreg_error_set(err, PTREG_ERR_ARG, "features: point %u asked for (entry %zu); the cloud has %zu",
                                   (unsigned)which[i], i, m->n);
    return PTREG_OK;
}

/* One descriptor's rows of the model, on the engine it keeps. */
static ptreg_status model_rows(ptreg_features_model *m, const ptreg_features_options *opt, const uint32_t *which,
                               size_t count, float *out, size_t *missing, int fpfh, ptreg_error *err)
{
    ptreg_features_options o;
    ptreg_status s = check_model_call(m, opt, which, count, out, &o, err);
    if (s)
        return s;
    const features_engine *e = m->engine;
    if (e->take_turns)
        pthread_mutex_lock(&m->device_turn);
    s = (fpfh ? e->fpfh : e->pfh)(m->ctx, m->xyz, m->normals, m->n, &o, which, count, out, missing, err);
    if (e->take_turns)
        pthread_mutex_unlock(&m->device_turn);
    return s;
}

ptreg_status ptreg_features_model_pfh(ptreg_features_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                      size_t count, float *out, size_t *missing, ptreg_error *err)
{
    return model_rows(m, opt, which, count, out, missing, 0, err);
}

ptreg_status ptreg_features_model_fpfh(ptreg_features_model *m, const ptreg_features_options *opt,
                                       const uint32_t *which, size_t count, float *out, size_t *missing,
                                       ptreg_error *err)
{
    return model_rows(m, opt, which, count, out, missing, 1, err);
}

void ptreg_features_model_destroy(ptreg_features_model *m)
{
    if (!m)
        return;
    if (m->engine)
        m->engine->close(m->ctx);
    pthread_mutex_destroy(&m->device_turn);
    free(m);
}

PTREG_ISA_TABLE(pfh_cpu_kernel_table, pfh_cpu_kernels, PFH_CPU_KERNELS)
