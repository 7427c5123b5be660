/* RANSAC over feature matches with Open3D's checkers (global.h,
 * ptreg_ransac): hypotheses drawn and fitted on the host, scored on the
 * CPU or a device. */
#include "ptreg/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/global/global_impl.h"
#include "reg/global/global_kernels.h"
#include "reg/global/ransac_device.h"
#include "core/numeric.h"

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

static void apply(const double T[16], const double p[3], double out[3])
{
    for (int r = 0; r < 3; r++)
        out[r] = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
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
static ptreg_status score_batch(const ransac_ctx *c, ransac_scorer *sc, uint32_t (*picks)[3], int batch, size_t *counts,
                                ptreg_error *err)
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
    ptreg_status st = ptreg_options_check(ptreg_ransac_option_table(), opt, err);
    if (st)
        return st;
    if (!(opt->max_dist > 0.0)) /* the table's "not set": a distance has no default here */
        return ptreg_error_set(err, PTREG_ERR_ARG, "RANSAC: max_dist %g is not a positive number", opt->max_dist);
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
    const ransac_ctx c = {source,
                          source_normals,
                          target,
                          target_normals,
                          matches,
                          opt,
                          opt->max_dist * opt->max_dist,
                          check < 0.0 ? -1.0 : check * check,
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
