/* Global registration (global.h): feature matches, RANSAC with Open3D's
 * checkers, and the pipeline from two clouds to a refined transform. */
#include "ptreg/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/global/global_impl.h"
#include "reg/global/global_kernels.h"
#include "reg/global/match_device.h"
#include "reg/global/ransac_device.h"
#include "ptreg/features.h"
#include "reg/icp/icp_impl.h"
#include "core/numeric.h"
#include "core/testing.h"

void ptreg_matches_free(ptreg_matches *m)
{
    if (!m)
        return;
    free(m->source);
    free(m->target);
    memset(m, 0, sizeof *m);
}

/* ---- nearest descriptors ---- */

static int row_is_nan(const float *row, int dim)
{
    for (int k = 0; k < dim; k++)
        if (isnan(row[k]))
            return 1;
    return 0;
}

/* b's rows as columns (dim x nb), a NaN row as infinities: it is then
 * nobody's nearest. */
static float *columns_of(const float *b, size_t nb, int dim, const unsigned char *b_nan)
{
    float *bt = malloc((size_t)dim * (nb ? nb : 1) * sizeof *bt);
    for (size_t j = 0; bt && j < nb; j++)
        for (int k = 0; k < dim; k++)
            bt[(size_t)k * nb + j] = b_nan[j] ? INFINITY : b[j * (size_t)dim + k];
    return bt;
}

#define MATCH_UNITS 64 /* units of work, each with its own columns' best: memory 64 x 8 bytes per column */

/* (d, i) beats (bd, bi): nearer, or as near and a lower index. */
static int nearer(float d, uint32_t i, float bd, uint32_t bi) { return d < bd || (d == bd && i < bi); }

/* Every row's nearest column and, with col_best, every column's nearest
 * row, from one pass over the distances: MATCH_UNITS runs of rows go to
 * threads, each with its own columns' best, merged in unit order: the
 * same answer for any thread count. */
static ptreg_status nearest_both(const float *a, size_t na, const unsigned char *a_nan, const float *bt, size_t nb,
                                 int dim, uint32_t *row_best, uint32_t *col_best, ptreg_error *err)
{
    const size_t units = na < MATCH_UNITS ? na : MATCH_UNITS, per_unit = units ? (na + units - 1) / units : 0;
    float *cd = col_best ? malloc((units ? units : 1) * nb * sizeof *cd) : NULL;
    uint32_t *ci = col_best ? malloc((units ? units : 1) * nb * sizeof *ci) : NULL;
    if (col_best && (!cd || !ci)) {
        free(cd), free(ci);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    }
    for (size_t k = 0; cd && k < units * nb; k++)
        cd[k] = INFINITY, ci[k] = UINT32_MAX;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long u = 0; u < (long)units; u++) {
        const size_t r0 = (size_t)u * per_unit, r1 = r0 + per_unit < na ? r0 + per_unit : na;
        const desc_scan scan = {a, bt, a_nan, r0, r1, nb, dim, row_best, cd ? cd + (size_t)u * nb : NULL,
                                      ci ? ci + (size_t)u * nb : NULL};
        global_cpu_kernels()->desc_scan_rows(&scan);
    }
    for (size_t j = 0; col_best && j < nb; j++) {
        float bd = INFINITY;
        uint32_t bi = UINT32_MAX;
        for (size_t u = 0; u < units; u++)
            if (ci[u * nb + j] != UINT32_MAX && nearer(cd[u * nb + j], ci[u * nb + j], bd, bi))
                bd = cd[u * nb + j], bi = ci[u * nb + j];
        col_best[j] = bi;
    }
    free(cd), free(ci);
    return PTREG_OK;
}

/* Where the matching runs: the CPU, or a GPU whose arithmetic is the
 * CPU's (match_device.c). */
static const engine *const match_engines[] = {&engine_cpu, &match_device_engine};

/* Every row's nearest column (and with col_best every column's nearest
 * row) on device `on`: the CPU's scan, or the device's, with one answer. */
static ptreg_status nearest_on(const ptreg_device *on, const float *source, size_t ns, const unsigned char *s_nan,
                               const float *target, size_t nt, const unsigned char *t_nan, int dim,
                               uint32_t *row_best, uint32_t *col_best, ptreg_error *err)
{
    if (on->backend != PTREG_BACKEND_CPU)
        return match_device_nearest(on, source, ns, s_nan, target, nt, t_nan, dim, row_best, col_best, err);
    float *tt = columns_of(target, nt, dim, t_nan);
    ptreg_status st = tt ? nearest_both(source, ns, s_nan, tt, nt, dim, row_best, col_best, err)
                         : ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    free(tt);
    return st;
}

/* ptreg_match_features on device `on` (resolved over match_engines). */
static ptreg_status match_features_on(const ptreg_device *on, const float *source, size_t ns, const float *target,
                                      size_t nt, int dim, int mutual, ptreg_matches *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    if (dim < 1 || ns >= UINT32_MAX || nt >= UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "feature matching: dimension %d or sizes out of range", dim);
    uint32_t *fwd = malloc((ns ? ns : 1) * sizeof *fwd), *back = malloc((nt ? nt : 1) * sizeof *back);
    unsigned char *s_nan = malloc(ns ? ns : 1), *t_nan = malloc(nt ? nt : 1);
    out->source = malloc((ns ? ns : 1) * sizeof *out->source);
    out->target = malloc((ns ? ns : 1) * sizeof *out->target);
    ptreg_status st = fwd && back && s_nan && t_nan && out->source && out->target
                          ? PTREG_OK
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    for (size_t i = 0; !st && i < ns; i++)
        s_nan[i] = (unsigned char)row_is_nan(source + i * (size_t)dim, dim);
    for (size_t j = 0; !st && j < nt; j++)
        t_nan[j] = (unsigned char)row_is_nan(target + j * (size_t)dim, dim);
    st = st ? st : nearest_on(on, source, ns, s_nan, target, nt, t_nan, dim, fwd, mutual ? back : NULL, err);
    for (size_t i = 0; !st && i < ns; i++) {
        const uint32_t j = fwd[i];
        /* a NaN target row is at infinity: only a NaN-free source row can
         * be matched, and only to a finite distance */
        if (j == UINT32_MAX || t_nan[j] || (mutual && back[j] != (uint32_t)i))
            continue;
        out->source[out->count] = (uint32_t)i;
        out->target[out->count++] = j;
    }
    free(fwd), free(back), free(s_nan), free(t_nan);
    if (st)
        ptreg_matches_free(out);
    return st;
}

ptreg_status ptreg_match_features(const float *source, size_t ns, const float *target, size_t nt, int dim,
                                  int mutual, ptreg_matches *out, ptreg_error *err)
{
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    return match_features_on(&cpu, source, ns, target, nt, dim, mutual, out, err);
}

/* ---- RANSAC ---- */

void ptreg_ransac_options_default(ptreg_ransac_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->edge_length = 0.9;
    opt->check_distance = 0.0;
    opt->max_iter = 100000;
    opt->confidence = 0.999;
    opt->seed = 1;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

static const engine *const ransac_engines[] = {&engine_cpu, &ransac_device_engine};

ptreg_status ptreg_ransac_resolve_device(const ptreg_ransac_options *opt, ptreg_device *on, ptreg_error *err)
{
    return engine_choose(ransac_engines, 2, &opt->device, opt, "RANSAC", on, NULL, err);
}

/* Hypotheses are drawn in batches from one generator and scored in
 * parallel; the stopping rule is tested between batches, so the result is
 * the same for any thread count. */
#define RANSAC_BATCH 256

typedef struct ransac_ctx {
    const float *src, *src_n, *tgt, *tgt_n;
    const ptreg_matches *m;
    const ptreg_ransac_options *opt;
    double max_d2, check_d2, cos_normal;
} ransac_ctx;

static void point_of(const float *xyz, uint32_t i, double p[3])
{
    for (int k = 0; k < 3; k++)
        p[k] = xyz[3 * (size_t)i + k];
}

static void apply(const double T[16], const double p[3], double out[3])
{
    for (int r = 0; r < 3; r++)
        out[r] = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
}

static double dist2(const double a[3], const double b[3])
{
    return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
}

/* Open3D's edge-length checker: every edge of the sample agrees between
 * the clouds to the ratio. */
static int edges_agree(const ransac_ctx *c, const uint32_t pick[3])
{
    if (c->opt->edge_length <= 0.0)
        return 1;
    double p[3][3], q[3][3];
    for (int a = 0; a < 3; a++) {
        point_of(c->src, c->m->source[pick[a]], p[a]);
        point_of(c->tgt, c->m->target[pick[a]], q[a]);
    }
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++) {
            const double ds = sqrt(dist2(p[a], p[b])), dt = sqrt(dist2(q[a], q[b]));
            if (ds < c->opt->edge_length * dt || dt < c->opt->edge_length * ds)
                return 0;
        }
    return 1;
}

/* Horn's transform of the matches listed (all when list is NULL); 0 when
 * they do not fix it. */
static int fit(const ransac_ctx *c, const uint32_t *list, size_t n, double T[16])
{
    const double zero[3] = {0, 0, 0};
    ptreg_moments mom;
    ptreg_moments_init(&mom, zero, zero);
    for (size_t i = 0; i < n; i++) {
        const uint32_t k = list[i];
        double p[3], q[3];
        point_of(c->src, c->m->source[k], p);
        point_of(c->tgt, c->m->target[k], q);
        ptreg_moments_add(&mom, p, q, 1.0);
    }
    int degenerate = 1;
    return ptreg_horn_solve(&mom, T, &degenerate, NULL) == PTREG_OK && !degenerate;
}

/* Open3D's distance and normal checkers on the sample under T. */
static int sample_checks(const ransac_ctx *c, const uint32_t pick[3], const double T[16])
{
    for (int a = 0; a < 3; a++) {
        double p[3], q[3], tp[3];
        point_of(c->src, c->m->source[pick[a]], p);
        point_of(c->tgt, c->m->target[pick[a]], q);
        apply(T, p, tp);
        if (c->check_d2 >= 0.0 && dist2(tp, q) > c->check_d2)
            return 0;
        if (c->cos_normal > -2.0) {
            double n[3], tn[3], nq[3];
            point_of(c->src_n, c->m->source[pick[a]], n);
            point_of(c->tgt_n, c->m->target[pick[a]], nq);
            for (int r = 0; r < 3; r++)
                tn[r] = T[4 * r] * n[0] + T[4 * r + 1] * n[1] + T[4 * r + 2] * n[2];
            if (tn[0] * nq[0] + tn[1] * nq[1] + tn[2] * nq[2] < c->cos_normal)
                return 0;
        }
    }
    return 1;
}

/* The matches within max_dist under T (into list when not NULL). */
static size_t count_inliers(const ransac_ctx *c, const double T[16], uint32_t *list)
{
    size_t count = 0;
    for (size_t k = 0; k < c->m->count; k++) {
        double p[3], q[3], tp[3];
        point_of(c->src, c->m->source[k], p);
        point_of(c->tgt, c->m->target[k], q);
        apply(T, p, tp);
        if (dist2(tp, q) <= c->max_d2) {
            if (list)
                list[count] = (uint32_t)k;
            count++;
        }
    }
    return count;
}

/* Three distinct matches. */
static void draw(ptreg_rng *rng, size_t count, uint32_t pick[3])
{
    for (int a = 0; a < 3; a++) {
        int fresh;
        do {
            pick[a] = (uint32_t)(ptreg_rng_next(rng) % count);
            fresh = 1;
            for (int b = 0; b < a; b++)
                fresh &= pick[b] != pick[a];
        } while (!fresh);
    }
}

/* Whether a hypothesis passes the checkers and fixes a transform, in T. */
static int hypothesis(const ransac_ctx *c, const uint32_t pick[3], double T[16])
{
    return edges_agree(c, pick) && fit(c, pick, 3, T) && sample_checks(c, pick, T);
}

/* One hypothesis: its inliers (0 when a checker or the fit refused it). */
static size_t score(const ransac_ctx *c, const uint32_t pick[3], double T[16])
{
    return hypothesis(c, pick, T) ? count_inliers(c, T, NULL) : 0;
}

/* ---- scoring a batch: on the CPU, or on a device ---- */

/* A device's scorer: the matches' points there, and a batch's transforms
 * (three rows each), whether each passed, and the device's counts. */
typedef struct ransac_scorer {
    ransac_device *rd;
    double *rows;
    unsigned char *passed;
    uint64_t *counts;
} ransac_scorer;

static void scorer_free(ransac_scorer *sc)
{
    ransac_device_destroy(sc->rd);
    free(sc->rows), free(sc->passed), free(sc->counts);
}

/* On device `on`: the matches' points (the points they name, in match
 * order) up once. */
static ptreg_status scorer_create(const ptreg_device *on, const ransac_ctx *c, ransac_scorer *sc, ptreg_error *err)
{
    const size_t n = c->m->count;
    float *p = malloc(3 * n * sizeof *p), *q = malloc(3 * n * sizeof *q);
    sc->rows = malloc(12 * RANSAC_BATCH * sizeof *sc->rows);
    sc->passed = malloc(RANSAC_BATCH);
    sc->counts = malloc(RANSAC_BATCH * sizeof *sc->counts);
    ptreg_status st = PTREG_OK;
    if (!p || !q || !sc->rows || !sc->passed || !sc->counts)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "RANSAC: out of memory");
    for (size_t k = 0; !st && k < n; k++) {
        memcpy(p + 3 * k, c->src + 3 * (size_t)c->m->source[k], 3 * sizeof(float));
        memcpy(q + 3 * k, c->tgt + 3 * (size_t)c->m->target[k], 3 * sizeof(float));
    }
    st = st ? st : ransac_device_create(on, p, q, n, RANSAC_BATCH, &sc->rd, err);
    free(p), free(q);
    return st;
}

/* counts[h]: hypothesis h's inliers, as score() gives them. */
static ptreg_status score_batch(const ransac_ctx *c, ransac_scorer *sc, uint32_t (*picks)[3], int batch,
                                size_t *counts, ptreg_error *err)
{
    if (!sc->rd) {
#pragma omp parallel for schedule(dynamic, 8) num_threads(ptreg_get_num_threads())
        for (int h = 0; h < batch; h++) {
            double T[16];
            counts[h] = score(c, picks[h], T);
        }
        return PTREG_OK;
    }
#pragma omp parallel for schedule(dynamic, 8) num_threads(ptreg_get_num_threads())
    for (int h = 0; h < batch; h++) {
        double T[16];
        sc->passed[h] = (unsigned char)hypothesis(c, picks[h], T);
        if (!sc->passed[h])
            ptreg_transform_identity(T); /* counted, never used */
        memcpy(sc->rows + 12 * (size_t)h, T, 12 * sizeof(double));
    }
    ptreg_status st = ransac_device_count(sc->rd, sc->rows, (size_t)batch, c->max_d2, sc->counts, err);
    for (int h = 0; !st && h < batch; h++)
        counts[h] = sc->passed[h] ? (size_t)sc->counts[h] : 0;
    return st;
}

static ptreg_status check_ransac(const float *source_normals, const float *target_normals, const ptreg_matches *m,
                                 const ptreg_ransac_options *opt, ptreg_error *err)
{
    if (m->count < 3)
        return ptreg_error_set(err, PTREG_ERR_ARG, "RANSAC: %zu correspondences; at least 3 are needed", m->count);
    if (!(opt->max_dist > 0.0) || !isfinite(opt->max_dist))
        return ptreg_error_set(err, PTREG_ERR_ARG, "RANSAC: max_dist %g is not a positive number", opt->max_dist);
    if (!(opt->confidence > 0.0 && opt->confidence < 1.0) || opt->max_iter < 1 || !(opt->edge_length < 1.0) ||
        isnan(opt->check_distance) || !(opt->normal_angle >= 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "RANSAC: confidence in (0, 1), max_iter >= 1, edge_length < 1, a distance and a "
                               "normal angle >= 0 are needed");
    if (opt->normal_angle > 0.0 && (!source_normals || !target_normals))
        return ptreg_error_set(err, PTREG_ERR_ARG, "RANSAC: the normal checker needs both clouds' normals");
    return PTREG_OK;
}

ptreg_status ptreg_ransac(const float *source, const float *source_normals, size_t ns, const float *target,
                          const float *target_normals, size_t nt, const ptreg_matches *matches,
                          const ptreg_ransac_options *opt, ptreg_ransac_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    ptreg_status st = check_ransac(source_normals, target_normals, matches, opt, err);
    for (size_t k = 0; !st && k < matches->count; k++)
        if (matches->source[k] >= ns || matches->target[k] >= nt)
            st = ptreg_error_set(err, PTREG_ERR_ARG, "RANSAC: correspondence %zu names a point out of range", k);
    uint32_t(*picks)[3] = st ? NULL : malloc(RANSAC_BATCH * sizeof *picks);
    size_t *counts = st ? NULL : malloc(RANSAC_BATCH * sizeof *counts);
    uint32_t *list = st ? NULL : malloc(matches->count * sizeof *list);
    if (!st && (!picks || !counts || !list))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "RANSAC: out of memory");
    const double check = opt->check_distance == 0.0 ? opt->max_dist : opt->check_distance;
    const ransac_ctx c = {source, source_normals, target, target_normals, matches, opt,
                          opt->max_dist * opt->max_dist, check < 0.0 ? -1.0 : check * check,
                          opt->normal_angle > 0.0 ? cos(opt->normal_angle) : -3.0};
    ptreg_device on;
    ransac_scorer scorer = {NULL, NULL, NULL, NULL};
    st = st ? st : ptreg_ransac_resolve_device(opt, &on, err);
    if (!st && on.backend != PTREG_BACKEND_CPU)
        st = scorer_create(&on, &c, &scorer, err);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, opt->seed);
    double needed = opt->max_iter, best_T[16];
    size_t best = 0;
    while (!st && r->hypotheses < opt->max_iter && r->hypotheses < needed) {
        const int batch = opt->max_iter - r->hypotheses < RANSAC_BATCH ? opt->max_iter - r->hypotheses : RANSAC_BATCH;
        for (int h = 0; h < batch; h++)
            draw(&rng, matches->count, picks[h]);
        if ((st = score_batch(&c, &scorer, picks, batch, counts, err)))
            break;
        for (int h = 0; h < batch; h++) {
            r->checked += counts[h] > 0;
            if (counts[h] > best) {
                best = counts[h];
                score(&c, picks[h], best_T);
                /* Open3D's rule: enough samples for this inlier ratio */
                const double w = (double)best / (double)matches->count;
                const double miss = 1.0 - w * w * w;
                needed = miss <= 0.0 ? 0.0 : fmin(needed, log(1.0 - opt->confidence) / log(miss));
            }
        }
        r->hypotheses += batch;
    }
    if (!st && best >= 3) {
        /* the winner refit on all its inliers, kept when it holds as many */
        double T[16];
        const size_t n = count_inliers(&c, best_T, list);
        if (fit(&c, list, n, T) && count_inliers(&c, T, NULL) >= best)
            memcpy(best_T, T, sizeof T);
        memcpy(r->transformation, best_T, sizeof best_T);
        r->inliers = count_inliers(&c, best_T, NULL);
    }
    free(picks), free(counts), free(list);
    scorer_free(&scorer);
    r->time_ms = ptreg_time_ms() - t0;
    return st;
}

/* ---- Fast Global Registration ---- */

void ptreg_fgr_options_default(ptreg_fgr_options *opt)
{
    opt->division_factor = 1.4;
    opt->max_dist = 0.025;
    opt->iterations = 64;
    opt->tuple_scale = 0.95;
    opt->max_tuples = 1000;
    opt->seed = 1;
}

/* Open3D's tuple test: the kept matches (three per passing triple, in the
 * order drawn) into keep; returns the triples. */
static size_t tuple_test(const float *src, const float *tgt, const ptreg_matches *m, const ptreg_fgr_options *opt,
                         uint32_t *keep)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, opt->seed);
    const double s = opt->tuple_scale;
    size_t tuples = 0;
    const uint64_t trials = 100 * (uint64_t)m->count;
    for (uint64_t t = 0; t < trials && tuples < (size_t)opt->max_tuples; t++) {
        uint32_t pick[3];
        double ls[3], lt[3];
        for (int a = 0; a < 3; a++)
            pick[a] = (uint32_t)(ptreg_rng_next(&rng) % m->count);
        for (int a = 0; a < 3; a++) {
            double p0[3], p1[3], q0[3], q1[3];
            point_of(src, m->source[pick[a]], p0), point_of(src, m->source[pick[(a + 1) % 3]], p1);
            point_of(tgt, m->target[pick[a]], q0), point_of(tgt, m->target[pick[(a + 1) % 3]], q1);
            ls[a] = sqrt(dist2(p0, p1)), lt[a] = sqrt(dist2(q0, q1));
        }
        int pass = 1;
        for (int a = 0; a < 3; a++)
            pass &= ls[a] * s < lt[a] && lt[a] < ls[a] / s;
        if (!pass)
            continue;
        for (int a = 0; a < 3; a++)
            keep[3 * tuples + (size_t)a] = pick[a];
        tuples++;
    }
    return tuples;
}

/* A cloud's mean and its largest distance from it. */
static double mean_and_radius(const float *xyz, size_t n, double mean[3])
{
    ptreg_points_centroid(xyz, n, mean);
    double r2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
            d2 += (xyz[3 * i + k] - mean[k]) * (xyz[3 * i + k] - mean[k]);
        r2 = fmax(r2, d2);
    }
    return sqrt(r2);
}

/* Gauss-Newton on the kept pairs (in the unit ball): the Geman-McClure
 * weights (mu / (mu + r^2))^2 are ICP's GM kernel with k = mu times mu, a
 * factor the step does not see; so each step is ICP's point-to-point
 * Gauss-Newton step with that kernel. */
static ptreg_status fgr_optimise(const float *p, const float *q, size_t n, const ptreg_fgr_options *opt, double T[16],
                                 ptreg_error *err)
{
    float *moved = malloc(3 * (n ? n : 1) * sizeof *moved);
    unsigned char *use = malloc(n ? n : 1);
    if (!moved || !use) {
        free(moved), free(use);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "FGR: out of memory");
    }
    memset(use, 1, n);
    ptreg_icp_options io;
    ptreg_icp_options_default(&io);
    io.kernel = PTREG_KERNEL_GM;
    const double origin[3] = {0, 0, 0};
    double mu = 1.0;
    ptreg_transform_identity(T);
    for (int it = 0; it < opt->iterations; it++) {
        ptreg_transform_points(T, p, moved, n);
        io.kernel_scale = mu;
        const icp_gn_pairs pairs = {moved, q, NULL, NULL, use, n};
        icp_normal_eq eq;
        double r2, dT[16];
        size_t used;
        icp_gn_block(&io, origin, &pairs, &eq, &r2, &used);
        if (!icp_gn_step(&eq, origin, 0, 0.0, dT))
            break;
        ptreg_transform_mul(dT, T, T);
        if (it % 4 == 0 && mu > opt->max_dist)
            mu /= opt->division_factor;
    }
    free(moved), free(use);
    return PTREG_OK;
}

ptreg_status ptreg_fgr(const float *source, size_t ns, const float *target, size_t nt, const ptreg_matches *m,
                       const ptreg_fgr_options *opt, ptreg_fgr_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    if (!(opt->division_factor > 1.0) || !(opt->max_dist > 0.0) || opt->iterations < 1 ||
        !(opt->tuple_scale > 0.0 && opt->tuple_scale < 1.0) || opt->max_tuples < 1)
        return ptreg_error_set(err, PTREG_ERR_ARG, "FGR: division_factor > 1, max_dist > 0, iterations >= 1, "
                                                   "tuple_scale in (0, 1) and max_tuples >= 1 are needed");
    if (!ns || !nt || m->count == 0) {
        r->time_ms = ptreg_time_ms() - t0;
        return PTREG_OK;
    }
    double ms[3], mt[3];
    const double radius = fmax(mean_and_radius(source, ns, ms), mean_and_radius(target, nt, mt));
    const double scale = radius > 0.0 ? radius : 1.0;
    uint32_t *keep = malloc(3 * (size_t)opt->max_tuples * sizeof *keep);
    float *p = malloc(9 * (size_t)opt->max_tuples * sizeof *p), *q = malloc(9 * (size_t)opt->max_tuples * sizeof *q);
    ptreg_status st = keep && p && q ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "FGR: out of memory");
    if (!st) {
        r->tuples = tuple_test(source, target, m, opt, keep);
        const size_t n = 3 * r->tuples;
        for (size_t k = 0; k < n; k++)
            for (int a = 0; a < 3; a++) {
                p[3 * k + a] = (float)(((double)source[3 * (size_t)m->source[keep[k]] + a] - ms[a]) / scale);
                q[3 * k + a] = (float)(((double)target[3 * (size_t)m->target[keep[k]] + a] - mt[a]) / scale);
            }
        double T[16];
        if (n >= 10 && !(st = fgr_optimise(p, q, n, opt, T, err))) {
            /* back from the unit ball: x -> R (x - mean_s) + scale t + mean_t */
            for (int i = 0; i < 3; i++) {
                double rm = 0.0;
                for (int j = 0; j < 3; j++) {
                    r->transformation[4 * i + j] = T[4 * i + j];
                    rm += T[4 * i + j] * ms[j];
                }
                r->transformation[4 * i + 3] = scale * T[4 * i + 3] + mt[i] - rm;
            }
        }
    }
    free(keep), free(p), free(q);
    r->time_ms = ptreg_time_ms() - t0;
    return st;
}

/* ---- the pipeline ---- */

void ptreg_register_options_default(ptreg_register_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->mutual = 1;
    opt->global = PTREG_GLOBAL_RANSAC;
    ptreg_ransac_options_default(&opt->ransac);
    ptreg_fgr_options_default(&opt->fgr);
    opt->refine = PTREG_ICP_PLANE;
    opt->refine_iter = 30;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

static const ptreg_option_name global_names[] = {{"ransac", PTREG_GLOBAL_RANSAC}, {"fgr", PTREG_GLOBAL_FGR}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_register_options, global);
OPTION_ENUM_IS_INT(ptreg_register_options, refine);
/* Python's keywords (the rows' names) came first; the command line spells
 * several its own way. The seed (64 bits) and the flags are the front ends'. */
static const ptreg_option register_rows[] = {
    OPTION_FIELD(ptreg_register_options, voxel, NULL, DOUBLE, 0, 1e30, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "V",
                 "the downsampling cube; the neighborhoods scale with it; default the target's bounding-box "
                 "diagonal / 80"),
    OPTION_ENUM(ptreg_register_options, global, "method", "global", global_names, 0,
                "ransac (RANSAC over the feature matches) or fgr (Fast Global Registration, as Open3D's)"),
    OPTION_ENUM(ptreg_register_options, refine, "refine", "method", icp_method_names, 0,
                "the refinement on all points: plane, gicp, symmetric or point"),
    OPTION_FIELD(ptreg_register_options, refine_dist, NULL, DOUBLE, 0, 1e30, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO,
                 "D", "the refinement's pair distance; default 0.4 voxels"),
    OPTION_FIELD(ptreg_register_options, refine_iter, NULL, INT, 1, 1000000, 0, "N", "the refinement's iterations"),
    OPTION_NUMBER(ptreg_register_options, ransac.max_dist, "max_dist", "ransac-dist", DOUBLE, 0, 1e30,
                  PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "D", "RANSAC's inlier distance; default 1.5 voxels"),
    OPTION_NUMBER(ptreg_register_options, ransac.max_iter, "ransac_max_iter", "ransac-iter", INT, 1, 100000000, 0,
                  "N", "RANSAC's most hypotheses"),
    OPTION_NUMBER(ptreg_register_options, ransac.confidence, "confidence", NULL, DOUBLE, 0, 1,
                  PTREG_OPTION_OPEN_LO | PTREG_OPTION_OPEN_HI, "C", "RANSAC stops once this sure of an all-inlier sample"),
    OPTION_NUMBER(ptreg_register_options, ransac.edge_length, "edge_length", NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_HI,
                  "E", "RANSAC's edge-length checker: a sample's edges agree to this ratio (0: off)"),
    OPTION_NUMBER(ptreg_register_options, ransac.check_distance, "check_distance", NULL, DOUBLE, -DBL_MAX, DBL_MAX,
                  0, "D", "RANSAC's distance checker: every sampled pair within D (0: the inlier distance; < 0: off)"),
    OPTION_NUMBER(ptreg_register_options, ransac.normal_angle, "normal_angle", NULL, DOUBLE, 0, DBL_MAX, 0, "A",
                  "RANSAC's normal checker: sampled pairs' normals within A radians (0: off)"),
    OPTION_NUMBER(ptreg_register_options, fgr.iterations, "fgr_iter", NULL, INT, 1, 1000000, 0, "N",
                  "FGR's Gauss-Newton steps"),
    OPTION_NUMBER(ptreg_register_options, fgr.division_factor, "fgr_division_factor", NULL, DOUBLE, 1, DBL_MAX,
                  PTREG_OPTION_OPEN_LO, "F", "FGR's graduated non-convexity divides its scale by F"),
};
OPTION_TABLE(ptreg_register_option_table, "register", ptreg_register_options, ptreg_register_options_default,
             register_rows)

/* A cloud's voxel-grid centroids with normals from their hybrid (2 voxels,
 * 30) neighborhoods, turned to agree with the given normals' mean where
 * the cloud came with normals (Open3D's EstimateNormals does the same), else
 * to face the origin (a scan's sensor). */
static ptreg_status prepare_cloud(const char *which, const float *xyz, const float *normals, size_t n, double voxel,
                                  ptreg_cloud *down, double *normals_ms, ptreg_error *err)
{
    const ptreg_cloud in = {n, (float *)xyz, (float *)normals, NULL, 0, {0, 0, 0}, NULL, NULL, NULL};
    ptreg_status st = ptreg_voxel_downsample(&in, voxel, down, err);
    if (!st && down->n < 3)
        st = ptreg_error_set(err, PTREG_ERR_ARG,
                             "register: voxel %g leaves %zu point%s of the %s's %zu: at least 3 are needed", voxel,
                             down->n, down->n == 1 ? "" : "s", which, n);
    float *est = st ? NULL : malloc(3 * (down->n ? down->n : 1) * sizeof *est);
    if (!st && !est)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "register: out of memory");
    const double t0 = ptreg_time_ms();
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){30, 2.0 * voxel};
    no.device = (ptreg_device){PTREG_BACKEND_CPU, 0}; /* the pipeline runs on the CPU (global.h) */
    st = st ? st : ptreg_normals(down->xyz, down->n, &no, est, NULL, NULL, err);
    for (size_t i = 0; !st && down->normals && i < down->n; i++) {
        const float *g = down->normals + 3 * i;
        float *e = est + 3 * i;
        if (e[0] * g[0] + e[1] * g[1] + e[2] * g[2] < 0.0f)
            e[0] = -e[0], e[1] = -e[1], e[2] = -e[2];
    }
    *normals_ms += ptreg_time_ms() - t0;
    if (!st) {
        free(down->normals);
        down->normals = est;
    } else {
        free(est);
    }
    return st;
}

static ptreg_status fpfh_of(const ptreg_cloud *c, double voxel, float **out, ptreg_error *err)
{
    ptreg_features_options fo;
    ptreg_features_options_default(&fo);
    fo.neighbors = (ptreg_neighborhood){100, 5.0 * voxel};
    fo.convention = PTREG_FPFH_OPEN3D;
    fo.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    if (!(*out = malloc((c->n ? c->n : 1) * PTREG_FPFH_BINS * sizeof **out)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "register: out of memory for %zu descriptors", c->n);
    return ptreg_fpfh(c->xyz, c->normals, c->n, &fo, *out, NULL, err);
}

/* The bounding-box diagonal of n points. */
static double diagonal(const float *xyz, size_t n)
{
    double centre[3], d2;
    icp_target_extent(xyz, n, centre, &d2);
    return sqrt(d2);
}

/* ICP from RANSAC's transform on all points (max_iter 0 with no_refine:
 * only the fitness and rmse there). */
static ptreg_status refine(const float *source, const float *source_normals, size_t ns, const float *target,
                           const float *target_normals, size_t nt, const ptreg_register_options *opt,
                           ptreg_register_result *r, ptreg_error *err)
{
    ptreg_icp_options io;
    ptreg_icp_options_default(&io);
    memcpy(io.init, opt->global == PTREG_GLOBAL_FGR ? r->fgr.transformation : r->ransac.transformation,
           sizeof io.init);
    io.method = opt->no_refine ? PTREG_ICP_POINT : opt->refine;
    io.max_iter = opt->no_refine ? 0 : opt->refine_iter;
    io.max_dist = opt->refine_dist > 0.0 ? opt->refine_dist : 0.4 * r->voxel;
    io.target_normals = target_normals;
    io.source_normals = source_normals;
    io.device = opt->device;
    ptreg_icp_result ir;
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_icp(source, ns, target, nt, &io, &ir, err);
    r->refine_ms = ptreg_time_ms() - t0;
    if (st)
        return st;
    memcpy(r->transformation, ir.transformation, sizeof r->transformation);
    r->fitness = ir.fitness;
    r->rmse = ir.rmse;
    ptreg_icp_result_free(&ir);
    return PTREG_OK;
}

void register_target_free(register_target *t)
{
    if (!t)
        return;
    ptreg_cloud_free(&t->down);
    free(t->fpfh);
    memset(t, 0, sizeof *t);
    ptreg_cloud_init(&t->down);
}

void ptreg_register_cloud_free(ptreg_register_cloud *c) { register_target_free(c); }

/* One cloud's centroids, normals and descriptors at the voxel. */
static ptreg_status prepare_side(const char *which, const float *xyz, const float *normals, size_t n, double voxel,
                                 register_target *c, ptreg_error *err)
{
    memset(c, 0, sizeof *c);
    ptreg_cloud_init(&c->down);
    c->voxel = voxel;
    double t0 = ptreg_time_ms();
    ptreg_status st = prepare_cloud(which, xyz, normals, n, voxel, &c->down, &c->normals_ms, err);
    c->downsample_ms = ptreg_time_ms() - t0 - c->normals_ms;
    t0 = ptreg_time_ms();
    st = st ? st : fpfh_of(&c->down, voxel, &c->fpfh, err);
    c->features_ms = ptreg_time_ms() - t0;
    if (st)
        register_target_free(c);
    return st;
}

static ptreg_register_options options_or_default(const ptreg_register_options *opt_in)
{
    ptreg_register_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        ptreg_register_options_default(&opt);
    return opt;
}

ptreg_status register_target_prepare(const float *target, const float *target_normals, size_t nt,
                                     const ptreg_register_options *opt_in, register_target *t, ptreg_error *err)
{
    memset(t, 0, sizeof *t);
    ptreg_cloud_init(&t->down);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status st = ptreg_check_shape("register: the target", target, nt, err);
    if (st || (st = ptreg_options_check(ptreg_register_option_table(), &opt, err)))
        return st;
    const double voxel = opt.voxel > 0.0 ? opt.voxel : diagonal(target, nt) / 80.0;
    if (!(voxel > 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "register: the target has no extent to scale a voxel by");
    return prepare_side("target", target, target_normals, nt, voxel, t, err);
}

/* Matches of the two prepared clouds' descriptors, then RANSAC or FGR:
 * r->transformation is its transform. */
static ptreg_status global_stage(const register_target *s, const register_target *t, ptreg_register_options opt,
                                 ptreg_register_result *r, ptreg_error *err)
{
    const ptreg_cloud *ds = &s->down, *dt = &t->down;
    ptreg_matches m = {0, NULL, NULL};
    double t1 = ptreg_time_ms();
    ptreg_device on;
    ptreg_status st = engine_choose(match_engines, 2, &opt.device, NULL, "feature matching", &on, NULL, err);
    r->device = on;
    st = st ? st : match_features_on(&on, s->fpfh, ds->n, t->fpfh, dt->n, PTREG_FPFH_BINS, opt.mutual, &m, err);
    r->match_ms = ptreg_time_ms() - t1;
    r->matches = m.count;
    if (opt.ransac.max_dist <= 0.0)
        opt.ransac.max_dist = 1.5 * r->voxel;
    opt.ransac.device = opt.device;
    if (opt.global == PTREG_GLOBAL_FGR) {
        st = st ? st : ptreg_fgr(ds->xyz, ds->n, dt->xyz, dt->n, &m, &opt.fgr, &r->fgr, err);
        r->global_ms = r->fgr.time_ms;
        if (!st)
            memcpy(r->transformation, r->fgr.transformation, sizeof r->transformation);
    } else {
        st = st ? st
                : ptreg_ransac(ds->xyz, ds->normals, ds->n, dt->xyz, dt->normals, dt->n, &m, &opt.ransac,
                               &r->ransac, err);
        r->global_ms = r->ransac.time_ms;
        if (!st)
            memcpy(r->transformation, r->ransac.transformation, sizeof r->transformation);
    }
    ptreg_matches_free(&m);
    return st;
}

/* The stage times and sizes of the two prepared clouds into r. */
static void add_prepared(ptreg_register_result *r, const register_target *s, const register_target *t)
{
    r->voxel = t->voxel;
    r->source_down = s->down.n, r->target_down = t->down.n;
    r->downsample_ms = s->downsample_ms + t->downsample_ms;
    r->normals_ms = s->normals_ms + t->normals_ms;
    r->features_ms = s->features_ms + t->features_ms;
}

ptreg_status register_global_prepared(const float *source, const float *source_normals, size_t ns,
                                      const register_target *t, const ptreg_register_options *opt_in,
                                      ptreg_register_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status st = ptreg_check_shape("register: the source", source, ns, err);
    if (st || (st = ptreg_options_check(ptreg_register_option_table(), &opt, err)))
        return st;
    register_target s;
    if (!(st = prepare_side("source", source, source_normals, ns, t->voxel, &s, err))) {
        /* the source's stage times only: the target's were spent once, before */
        add_prepared(r, &s, t);
        r->downsample_ms = s.downsample_ms, r->normals_ms = s.normals_ms, r->features_ms = s.features_ms;
        st = global_stage(&s, t, opt, r, err);
        register_target_free(&s);
    }
    r->total_ms = ptreg_time_ms() - t0;
    return st;
}

ptreg_status ptreg_register(const float *source, const float *source_normals, size_t ns, const float *target,
                            const float *target_normals, size_t nt, const ptreg_register_options *opt_in,
                            ptreg_register_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status shape = ptreg_check_shape("register: the source", source, ns, err);
    if (shape || (shape = ptreg_check_shape("register: the target", target, nt, err)))
        return shape;
    if ((shape = ptreg_options_check(ptreg_register_option_table(), &opt, err)))
        return shape;
    r->voxel = opt.voxel > 0.0 ? opt.voxel : diagonal(target, nt) / 80.0;
    if (!(r->voxel > 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "register: the target has no extent to scale a voxel by");
    register_target s, t;
    ptreg_status st = prepare_side("source", source, source_normals, ns, r->voxel, &s, err);
    if (!st && (st = prepare_side("target", target, target_normals, nt, r->voxel, &t, err)))
        register_target_free(&s);
    if (!st) {
        add_prepared(r, &s, &t);
        st = global_stage(&s, &t, opt, r, err);
        register_target_free(&s), register_target_free(&t);
    }
    st = st ? st : refine(source, source_normals, ns, target, target_normals, nt, &opt, r, err);
    r->total_ms = ptreg_time_ms() - t0;
    return st;
}

ptreg_status ptreg_register_cloud_prepare(const float *xyz, const float *normals, size_t n, double voxel,
                                          ptreg_register_cloud *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    ptreg_cloud_init(&out->down);
    ptreg_status st = ptreg_check_shape("register: the cloud", xyz, n, err);
    if (!st && (!(voxel > 0.0) || !isfinite(voxel)))
        st = ptreg_error_set(err, PTREG_ERR_ARG, "register: voxel %g: must be > 0", voxel);
    return st ? st : prepare_side("cloud", xyz, normals, n, voxel, out, err);
}

ptreg_status ptreg_register_prepared(const float *source, const float *source_normals, size_t ns,
                                     const ptreg_register_cloud *sp, const float *target,
                                     const float *target_normals, size_t nt, const ptreg_register_cloud *tp,
                                     const ptreg_register_options *opt_in, ptreg_register_result *r,
                                     ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_register_options opt = options_or_default(opt_in);
    ptreg_status st = ptreg_check_shape("register: the source", source, ns, err);
    st = st ? st : ptreg_check_shape("register: the target", target, nt, err);
    st = st ? st : ptreg_options_check(ptreg_register_option_table(), &opt, err);
    if (!st && (!sp || !tp || !sp->fpfh || !tp->fpfh || sp->voxel != tp->voxel))
        st = ptreg_error_set(err, PTREG_ERR_ARG, "register: the prepared clouds are missing or of two voxels");
    if (st)
        return st;
    add_prepared(r, sp, tp);
    /* the preparation's times are the caller's, spent once for many pairs */
    r->downsample_ms = r->normals_ms = r->features_ms = 0.0;
    st = global_stage(sp, tp, opt, r, err);
    st = st ? st : refine(source, source_normals, ns, target, target_normals, nt, &opt, r, err);
    r->total_ms = ptreg_time_ms() - t0;
    return st;
}

PTREG_ISA_TABLE(global_cpu_kernel_table, global_cpu_kernels, GLOBAL_CPU_KERNELS)
