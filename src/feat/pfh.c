/* PFH and FPFH with PCL's pair feature and binning (Rusu et al., ICRA 2009;
 * PCL's PFHEstimation and FPFHEstimation). Arithmetic follows PCL's order
 * where a different rounding could move a value across a bin edge: float
 * pair features, 4-lane dot products summed as (x + z) + y (Eigen's SSE
 * reduction of a 4-vector whose w is 0), bin indices in double. */
#include "ptreg/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "feat/neighborhood.h"

#define PFH_SPLIT 5
#define PFH_PI 3.14159265358979323846 /* M_PI, which strict C11 lacks */
#define FPFH_SPLIT 11

void ptreg_feature_options_default(ptreg_feature_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->neighbors.k = 30;
    opt->convention = PTREG_FPFH_PCL;
}

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
static int clamp_bin(double b, int bins) { return b < 0 ? 0 : b >= bins ? bins - 1 : (int)b; }

static int angle_bin(float f, int bins)
{
    const float inv_2pi = 1.0f / (2.0f * (float)PFH_PI);
    return clamp_bin(floor(bins * ((f + PFH_PI) * inv_2pi)), bins);
}

static int cosine_bin(float f, int bins) { return clamp_bin(floor(bins * ((f + 1.0) * 0.5)), bins); }

static int finite3(const float *v) { return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]); }

static ptreg_status check_inputs(const float *xyz, const float *normals, size_t n, const ptreg_feature_options *o,
                                 const float *out, ptreg_error *err)
{
    if (!xyz || !normals || !out || !n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "features: no points, normals or output");
    if (o->convention != PTREG_FPFH_PCL && o->convention != PTREG_FPFH_OPEN3D)
        return ptreg_error_set(err, PTREG_ERR_ARG, "features: unknown convention %d", (int)o->convention);
    return feat_check_neighborhood(&o->neighbors, err);
}

static void fill_nan(float *row, int bins)
{
    for (int b = 0; b < bins; b++)
        row[b] = NAN;
}

/* ---- PFH ----------------------------------------------------------------- */

/* All unordered pairs of the neighbourhood (the query included), each
 * adding 100 / (number of pairs) to bin i_theta + 5 i_alpha + 25 i_phi. */
static void pfh_of(const float *xyz, const float *normals, const ptreg_neighbors *nb, float *hist)
{
    memset(hist, 0, PTREG_PFH_BINS * sizeof *hist);
    size_t m = nb->count;
    float incr = 100.0f / (float)(m * (m - 1) / 2);
    for (size_t i = 0; i < m; i++) {
        const float *pi = xyz + 3 * (size_t)nb->index[i], *ni = normals + 3 * (size_t)nb->index[i];
        for (size_t j = i + 1; j < m; j++) {
            float f[4];
            const float *pj = xyz + 3 * (size_t)nb->index[j], *nj = normals + 3 * (size_t)nb->index[j];
            /* PCL's order: the later (farther) neighbour first. A pair without
             * a feature is binned as zeros, as PCL's estimators do. */
            if (!ptreg_pair_feature(pj, nj, pi, ni, f))
                f[0] = f[1] = f[2] = f[3] = 0.0f;
            int bin = angle_bin(f[0], PFH_SPLIT) + PFH_SPLIT * cosine_bin(f[1], PFH_SPLIT) +
                      PFH_SPLIT * PFH_SPLIT * cosine_bin(f[2], PFH_SPLIT);
            hist[bin] += incr;
        }
    }
}

/* Every point's neighbourhood has a finite normal where it matters: a
 * neighbour with a NaN normal gives NaN features, which land in bin 0 after
 * clamping in PCL; here such pairs are skipped. */
static int normals_finite(const float *normals, const ptreg_neighbors *nb)
{
    for (size_t i = 0; i < nb->count; i++)
        if (!finite3(normals + 3 * (size_t)nb->index[i]))
            return 0;
    return 1;
}

/* What both descriptors start with: the options (defaults for NULL, kept
 * in *storage), the checks, and the k-d tree over the points. */
static ptreg_status begin_features(const float *xyz, const float *normals, size_t n,
                                   const ptreg_feature_options **opt, ptreg_feature_options *storage,
                                   const float *out, ptreg_kdtree **tree, ptreg_error *err)
{
    if (!*opt) {
        ptreg_feature_options_default(storage);
        *opt = storage;
    }
    ptreg_status s = check_inputs(xyz, normals, n, *opt, out, err);
    return s ? s : ptreg_kdtree_create(xyz, n, NULL, tree, err);
}

typedef struct feature_job {
    const float *xyz, *normals;
    size_t n;
    const ptreg_feature_options *opt;
    const ptreg_kdtree *tree;
} feature_job;

ptreg_status ptreg_pfh(const float *xyz, const float *normals, size_t n, const ptreg_feature_options *opt,
                       float *out, size_t *missing, ptreg_error *err)
{
    ptreg_feature_options d;
    ptreg_kdtree *tree = NULL;
    ptreg_status s = begin_features(xyz, normals, n, &opt, &d, out, &tree, err);
    if (s)
        return s;
    size_t lacking = 0;
    int nt = ptreg_get_num_threads(), failed = 0;
#pragma omp parallel num_threads(nt) reduction(+ : lacking) reduction(| : failed)
    {
        ptreg_neighbors nb = {0};
#pragma omp for schedule(dynamic, 64)
        for (size_t i = 0; i < n; i++) {
            float *row = out + PTREG_PFH_BINS * i;
            if (failed || feat_neighbors(tree, &opt->neighbors, xyz + 3 * i, &nb, NULL)) {
                failed = 1;
                continue;
            }
            if (nb.count < 2 || !finite3(normals + 3 * i) || !normals_finite(normals, &nb)) {
                fill_nan(row, PTREG_PFH_BINS);
                lacking++;
                continue;
            }
            pfh_of(xyz, normals, &nb, row);
        }
        ptreg_neighbors_free(&nb);
    }
    ptreg_kdtree_destroy(tree);
    if (failed)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pfh: out of memory for neighbourhoods");
    if (missing)
        *missing = lacking;
    return PTREG_OK;
}

/* ---- FPFH ---------------------------------------------------------------- */

/* SPFH of point i: its pairs with every other neighbour (i first), 11 bins
 * per feature, each pair adding 100 / (neighbours - 1). */
static void spfh_of(const float *xyz, const float *normals, size_t i, const ptreg_neighbors *nb, float *hist)
{
    memset(hist, 0, PTREG_FPFH_BINS * sizeof *hist);
    float incr = 100.0f / (float)(nb->count - 1);
    const float *p = xyz + 3 * i, *np = normals + 3 * i;
    for (size_t j = 0; j < nb->count; j++) {
        size_t q = nb->index[j];
        float f[4];
        if (q == i)
            continue;
        if (!ptreg_pair_feature(p, np, xyz + 3 * q, normals + 3 * q, f))
            f[0] = f[1] = f[2] = f[3] = 0.0f; /* binned as zeros, as PCL does */
        hist[angle_bin(f[0], FPFH_SPLIT)] += incr;
        hist[FPFH_SPLIT + cosine_bin(f[1], FPFH_SPLIT)] += incr;
        hist[2 * FPFH_SPLIT + cosine_bin(f[2], FPFH_SPLIT)] += incr;
    }
}

/* FPFH of a query from its neighbours' SPFHs weighted by 1 / d^2 (d^2 the
 * squared distance; neighbours at distance 0, the query among them, are
 * left out), each 11-bin block scaled to sum to 100; the Open3D convention
 * then adds the query's own SPFH. */
static void fpfh_of(const float *spfh, const ptreg_neighbors *nb, size_t query, ptreg_fpfh_convention conv,
                    float *hist)
{
    float sum[3] = {0, 0, 0};
    memset(hist, 0, PTREG_FPFH_BINS * sizeof *hist);
    for (size_t j = 0; j < nb->count; j++) {
        if (nb->dist2[j] == 0.0f)
            continue;
        float weight = 1.0f / nb->dist2[j];
        const float *s = spfh + PTREG_FPFH_BINS * (size_t)nb->index[j];
        for (int b = 0; b < PTREG_FPFH_BINS; b++) {
            float v = s[b] * weight;
            sum[b / FPFH_SPLIT] += v;
            hist[b] += v;
        }
    }
    for (int b = 0; b < PTREG_FPFH_BINS; b++) {
        float total = sum[b / FPFH_SPLIT];
        hist[b] *= total != 0.0f ? 100.0f / total : 1.0f;
    }
    if (conv == PTREG_FPFH_OPEN3D)
        for (int b = 0; b < PTREG_FPFH_BINS; b++)
            hist[b] += spfh[PTREG_FPFH_BINS * query + (size_t)b];
}

/* One pass over every point: SPFHs (pass 0) or FPFHs (pass 1). A point's
 * SPFH is NaN when it cannot have one; an FPFH is NaN when its own SPFH is,
 * or when a neighbour's is. */
static int feature_pass(const feature_job *job, int pass, float *spfh, float *out, size_t *lacking)
{
    int nt = ptreg_get_num_threads(), failed = 0;
    size_t count = 0;
#pragma omp parallel num_threads(nt) reduction(+ : count) reduction(| : failed)
    {
        ptreg_neighbors nb = {0};
#pragma omp for schedule(dynamic, 64)
        for (size_t i = 0; i < job->n; i++) {
            if (failed || feat_neighbors(job->tree, &job->opt->neighbors, job->xyz + 3 * i, &nb, NULL)) {
                failed = 1;
                continue;
            }
            if (pass == 0) {
                float *row = spfh + PTREG_FPFH_BINS * i;
                if (nb.count < 2 || !normals_finite(job->normals, &nb) || !finite3(job->normals + 3 * i))
                    fill_nan(row, PTREG_FPFH_BINS);
                else
                    spfh_of(job->xyz, job->normals, i, &nb, row);
                continue;
            }
            float *row = out + PTREG_FPFH_BINS * i;
            int usable = !isnan(spfh[PTREG_FPFH_BINS * i]);
            for (size_t j = 0; j < nb.count && usable; j++)
                usable = !isnan(spfh[PTREG_FPFH_BINS * (size_t)nb.index[j]]);
            if (!usable) {
                fill_nan(row, PTREG_FPFH_BINS);
                count++;
                continue;
            }
            fpfh_of(spfh, &nb, i, job->opt->convention, row);
        }
        ptreg_neighbors_free(&nb);
    }
    *lacking = count;
    return !failed;
}

ptreg_status ptreg_fpfh(const float *xyz, const float *normals, size_t n, const ptreg_feature_options *opt,
                        float *out, size_t *missing, ptreg_error *err)
{
    ptreg_feature_options d;
    ptreg_kdtree *tree = NULL;
    ptreg_status s = begin_features(xyz, normals, n, &opt, &d, out, &tree, err);
    if (s)
        return s;
    float *spfh = malloc(n * PTREG_FPFH_BINS * sizeof *spfh);
    feature_job job = {xyz, normals, n, opt, tree};
    size_t lacking = 0;
    int ok = spfh && feature_pass(&job, 0, spfh, out, &lacking) && feature_pass(&job, 1, spfh, out, &lacking);
    free(spfh);
    ptreg_kdtree_destroy(tree);
    if (!ok)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "fpfh: out of memory");
    if (missing)
        *missing = lacking;
    return PTREG_OK;
}
