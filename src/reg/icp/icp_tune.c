/* Measuring the nearest-neighbor methods on a model (`ptreg index
 * --tune`): which is fastest depends on the model's shape and the machine
 * (on the thin 40k aircraft the k-d tree beats the Delaunay walk that the
 * rule picks), so auto should come from a measurement, made once and kept
 * with the index.
 *
 * The measure is an ICP run, not a batch of queries: the seeded walks (pnn,
 * pnnopt) and the tree's seeded search exist for the short moves between
 * consecutive passes, and a single batch would hide exactly that. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reg/icp/icp_impl.h"
#include "ptreg/icp.h"
#include "core/numeric.h"
#include "nn/index_impl.h"

#define SLOTS PTREG_INDEX_NN_SLOTS

void ptreg_nn_tune_options_default(ptreg_nn_tune_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->sample = 40000;
    opt->noise = 0.002;
    opt->angle_deg = 5.0;
    opt->shift = 0.01;
    opt->seed = 1;
    opt->iterations = 30;
    opt->warmup = 1;
    opt->repeat = 5;
    opt->prune = 3.0; /* a slow spell on a shared machine can double a warm-up */
    opt->brute_max = 5e7;
}

static ptreg_status check_options(const ptreg_nn_tune_options *o, ptreg_error *err)
{
    if (o->sample < 1 || !(o->noise >= 0.0) || !isfinite(o->noise) || !isfinite(o->angle_deg) || !isfinite(o->shift) ||
        o->iterations < 1 || o->iterations > 1000 || o->warmup < 1 || o->warmup > 100 || o->repeat < 1 ||
        o->repeat > 1000 || isnan(o->prune) || isnan(o->brute_max))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "nearest-neighbor tuning: an option is out of range (sample >= 1, iterations "
                               "1..1000, warmup 1..100, repeat 1..1000, finite noise, angle and shift)");
    return PTREG_OK;
}

/* The default queries: `count` model points picked without repetition (a
 * partial Fisher-Yates shuffle), each moved by Gaussian noise, then all by
 * one small rigid motion: a sensed copy of the model, off its pose. */
static float *make_queries(const ptreg_model_index *idx, const ptreg_nn_tune_options *o, size_t count)
{
    size_t n;
    const float *points = ptreg_model_index_points(idx, &n);
    uint32_t *pick = malloc(n * sizeof *pick);
    float *q = malloc(3 * count * sizeof *q);
    if (!pick || !q) {
        free(pick), free(q);
        return NULL;
    }
    double centre[3], diag2;
    icp_target_extent(points, n, centre, &diag2);
    double sigma = o->noise * sqrt(diag2);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, o->seed);
    for (size_t i = 0; i < n; i++)
        pick[i] = (uint32_t)i;
    for (size_t i = 0; i < count; i++) {
        size_t j = i + (size_t)(ptreg_rng_uniform(&rng) * (double)(n - i));
        j = j < n ? j : n - 1;
        uint32_t t = pick[i];
        pick[i] = pick[j], pick[j] = t;
        for (int k = 0; k < 3; k++)
            q[3 * i + k] = (float)(points[3 * (size_t)pick[i] + k] + sigma * ptreg_rng_normal(&rng));
    }
    double axis[3], shift[3], T[16];
    for (int k = 0; k < 3; k++)
        axis[k] = ptreg_rng_normal(&rng);
    for (int k = 0; k < 3; k++)
        shift[k] = o->shift * sqrt(diag2) * ptreg_rng_normal(&rng) / sqrt(3.0);
    if (axis[0] == 0.0 && axis[1] == 0.0 && axis[2] == 0.0)
        axis[2] = 1.0;
    ptreg_transform_from_axis_angle(axis, o->angle_deg, shift, T);
    ptreg_transform_points(T, q, q, count);
    free(pick);
    return q;
}

/* The methods worth timing on this index, in ptreg_nn_method order. */
static int list_methods(const ptreg_model_index *idx, size_t nq, const ptreg_nn_tune_options *o,
                        ptreg_nn_method *methods)
{
    ptreg_model_index_info info;
    ptreg_model_index_get_info(idx, &info);
    int k = 0;
    methods[k++] = PTREG_NN_KDTREE; /* first: the reference the others are checked against */
    if ((double)info.points * (double)nq <= o->brute_max)
        methods[k++] = PTREG_NN_BRUTE;
    if (info.has_delaunay)
        for (int m = PTREG_NN_DELAUNAY_ZERO; m <= PTREG_NN_DELAUNAY_PNNOPT; m++)
            methods[k++] = (ptreg_nn_method)m;
    return k;
}

/* One ICP run with `method`, on the CPU; its time in *ms. */
static ptreg_status run_icp(const ptreg_model_index *idx, const float *q, size_t nq, ptreg_nn_method method,
                            int iterations, ptreg_icp_result *r, double *ms, ptreg_error *err)
{
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.nn = method;
    opt.max_iter = iterations;
    opt.tol = 0.0; /* every iteration runs: the same work for every method */
    opt.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_status st = ptreg_icp_indexed(q, nq, idx, &opt, r, err);
    if (!st && r->nn != method) {
        ptreg_icp_result_free(r);
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "nearest-neighbor tuning: %s asked for, %s ran",
                               ptreg_nn_method_name(method), ptreg_nn_method_name(r->nn));
    }
    *ms = st ? 0.0 : r->time_ms;
    return st;
}

/* The same bits as the reference: transform, per-pass MSE, pairs. */
static int same_result(const ptreg_icp_result *a, const ptreg_icp_result *b)
{
    return a->iterations == b->iterations && a->pairs == b->pairs &&
           !memcmp(a->transformation, b->transformation, sizeof a->transformation) &&
           !memcmp(a->mse, b->mse, ((size_t)a->iterations + 1) * sizeof *a->mse);
}

/* Warm-up: each method's first run(s), untimed but kept for pruning, and
 * its result checked against the k-d tree's (methods[0]). */
static ptreg_status warm_up(const ptreg_model_index *idx, const float *q, size_t nq, const ptreg_nn_tune_options *o,
                            const ptreg_nn_method *methods, int count, double *warm_ms, ptreg_nn_tune_report *rep,
                            ptreg_error *err)
{
    ptreg_icp_result ref;
    memset(&ref, 0, sizeof ref);
    ptreg_status st = PTREG_OK;
    for (int i = 0; i < count && !st; i++)
        for (int w = 0; w < o->warmup && !st; w++) {
            ptreg_icp_result r;
            st = run_icp(idx, q, nq, methods[i], o->iterations, &r, &warm_ms[i], err);
            if (st)
                break;
            if (i == 0 && w == 0) {
                ref = r;
                continue;
            }
            if (w == 0)
                rep->differs[methods[i]] = !same_result(&ref, &r);
            ptreg_icp_result_free(&r);
        }
    ptreg_icp_result_free(&ref);
    return st;
}

/* The timed rounds, interleaved (every method once per round, the order
 * rotated each round) so that a noisy machine's slow spells fall on all of
 * them alike. */
static ptreg_status timed_rounds(const ptreg_model_index *idx, const float *q, size_t nq,
                                 const ptreg_nn_tune_options *o, const ptreg_nn_method *methods, int count,
                                 const int *keep, double *times, ptreg_nn_tune_report *rep, ptreg_error *err)
{
    for (int round = 0; round < o->repeat; round++)
        for (int j = 0; j < count; j++) {
            int i = (j + round) % count;
            if (!keep[i])
                continue;
            ptreg_icp_result r;
            double ms = 0.0;
            ptreg_status st = run_icp(idx, q, nq, methods[i], o->iterations, &r, &ms, err);
            if (st)
                return st;
            ptreg_icp_result_free(&r);
            times[i * o->repeat + rep->runs[methods[i]]++] = ms;
        }
    return PTREG_OK;
}

/* Medians, and the fastest method that gave the reference bits. */
static void conclude(const ptreg_nn_method *methods, int count, const int *keep, const double *warm_ms, double *times,
                     int repeat, ptreg_nn_tune_report *rep)
{
    double best = INFINITY;
    rep->choice = PTREG_NN_KDTREE;
    for (int i = 0; i < count; i++) {
        ptreg_nn_method m = methods[i];
        rep->median_ms[m] = keep[i] ? ptreg_median(times + (size_t)i * (size_t)repeat, (size_t)rep->runs[m])
                                    : warm_ms[i];
        if (keep[i] && !rep->differs[m] && rep->median_ms[m] < best) {
            best = rep->median_ms[m];
            rep->choice = m;
        }
    }
}

static ptreg_status measure(ptreg_model_index *idx, const float *q, size_t nq, const ptreg_nn_tune_options *o,
                            ptreg_nn_tune_report *rep, ptreg_error *err)
{
    ptreg_nn_method methods[SLOTS];
    int count = list_methods(idx, nq, o, methods), keep[SLOTS];
    double warm_ms[SLOTS] = {0};
    double *times = malloc((size_t)count * (size_t)o->repeat * sizeof *times);
    if (!times)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "nearest-neighbor tuning: out of memory");
    ptreg_status st = warm_up(idx, q, nq, o, methods, count, warm_ms, rep, err);
    if (!st) {
        double fastest = INFINITY;
        for (int i = 0; i < count; i++)
            fastest = !rep->differs[methods[i]] && warm_ms[i] < fastest ? warm_ms[i] : fastest;
        for (int i = 0; i < count; i++)
            keep[i] = !rep->differs[methods[i]] && (o->prune <= 0.0 || warm_ms[i] <= o->prune * fastest);
        st = timed_rounds(idx, q, nq, o, methods, count, keep, times, rep, err);
    }
    if (!st)
        conclude(methods, count, keep, warm_ms, times, o->repeat, rep);
    free(times);
    return st;
}

static ptreg_status store(ptreg_model_index *idx, const ptreg_nn_tune_report *rep, int repeat, ptreg_error *err)
{
    ptreg_index_nn_tuning t = {(int)rep->choice, rep->threads, rep->iterations, repeat, rep->queries, {0}};
    memcpy(t.median_ms, rep->median_ms, sizeof t.median_ms);
    return ptreg_model_index_set_nn_tuning(idx, &t, err);
}

ptreg_status ptreg_model_index_tune(ptreg_model_index *idx, const float *queries, size_t nq,
                                    const ptreg_nn_tune_options *opt, ptreg_nn_tune_report *rep, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_nn_tune_options def;
    if (!opt) {
        ptreg_nn_tune_options_default(&def);
        opt = &def;
    }
    memset(rep, 0, sizeof *rep);
    for (int k = 0; k < SLOTS; k++)
        rep->median_ms[k] = -1.0;
    ptreg_status st = check_options(opt, err);
    if (st)
        return st;
    if (queries && (nq == 0 || nq >= PTREG_NO_NEIGHBOR))
        return ptreg_error_set(err, PTREG_ERR_ARG, "nearest-neighbor tuning: %zu queries", nq);
    float *made = NULL;
    if (!queries) {
        size_t m;
        ptreg_model_index_points(idx, &m);
        nq = opt->sample < m ? opt->sample : m;
        if (!(made = make_queries(idx, opt, nq)))
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "nearest-neighbor tuning: out of memory for %zu queries", nq);
    }
    rep->queries = nq, rep->threads = ptreg_get_num_threads(), rep->iterations = opt->iterations;
    st = measure(idx, queries ? queries : made, nq, opt, rep, err);
    free(made);
    if (st)
        return st;
    st = store(idx, rep, opt->repeat, err);
    if (st)
        return st;
    rep->total_ms = ptreg_time_ms() - t0;
    return PTREG_OK;
}

ptreg_status ptreg_model_index_tune_leaf(const float *xyz, size_t n, const ptreg_nn_tune_options *opt, int *leaf,
                                         int sizes[PTREG_LEAF_CANDIDATES], double median_ms[PTREG_LEAF_CANDIDATES],
                                         ptreg_error *err)
{
    static const int candidates[PTREG_LEAF_CANDIDATES] = {16, 32, 64, 128, 256};
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    const int fallback = io.leaf_size;
    io.delaunay = 0;
    double ms[PTREG_LEAF_CANDIDATES], best = INFINITY, at_default = INFINITY;
    *leaf = fallback;
    ptreg_status st = PTREG_OK;
    for (int c = 0; !st && c < PTREG_LEAF_CANDIDATES; c++) {
        ptreg_model_index *idx = NULL;
        ptreg_nn_tune_report rep;
        io.leaf_size = candidates[c];
        st = ptreg_model_index_create(xyz, n, &io, &idx, err);
        st = st ? st : ptreg_model_index_tune(idx, NULL, 0, opt, &rep, err);
        ptreg_model_index_destroy(idx);
        ms[c] = st ? -1.0 : rep.median_ms[PTREG_NN_KDTREE];
        if (!st && ms[c] >= 0 && ms[c] < best) {
            best = ms[c];
            *leaf = candidates[c];
        }
        if (!st && candidates[c] == fallback)
            at_default = ms[c];
    }
    if (st)
        return st;
    if (best > at_default / 1.02) /* within the noise of the default */
        *leaf = fallback;
    for (int c = 0; c < PTREG_LEAF_CANDIDATES; c++) {
        if (sizes)
            sizes[c] = candidates[c];
        if (median_ms)
            median_ms[c] = ms[c];
    }
    return PTREG_OK;
}
