/* The tuner's search (tune.h): every valid point, or successive halving on
 * a random sample of them; the built-in default is always among the
 * candidates, so the report can say what tuning gained over it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/tune.h"

/* Spaces above this many valid points are searched by halving under AUTO. */
#define EXHAUSTIVE_MAX 64

void ptreg_tune_options_default(ptreg_tune_options *o)
{
    memset(o, 0, sizeof *o);
    o->method = PTREG_TUNE_AUTO;
    o->sample_fraction = 0.25;
    o->reps = 5;
    o->tolerance = 1e-5;
    o->seed = 0x74756e65u; /* "tune" */
}

void ptreg_tune_result_free(ptreg_tune_result *r)
{
    if (!r)
        return;
    free(r->candidates);
    memset(r, 0, sizeof *r);
}

typedef struct search {
    const ptreg_tune_space *s;
    ptreg_tune_measure_fn measure;
    void *ctx;
    const ptreg_tune_options *o;
    ptreg_tune_result *r;
    double t0;
    size_t planned;
} search;

static int over_budget(const search *x)
{
    return x->o->budget_s > 0 && (ptreg_time_ms() - x->t0) * 1e-3 > x->o->budget_s;
}

/* Measures candidate c with reps repetitions. */
static ptreg_status measure(search *x, ptreg_tune_candidate *c, int reps, ptreg_error *err)
{
    ptreg_status st = x->measure(x->ctx, c->point, reps, &c->seconds, &c->error, err);
    if (st)
        return st;
    c->reps = reps;
    c->rounds++;
    c->passed = c->error <= x->o->tolerance;
    x->r->measurements++;
    if (x->o->progress)
        x->o->progress(x->o->progress_ctx, x->r->measurements, x->planned, c->point, c->seconds);
    return PTREG_OK;
}

/* The faster of two passed candidates (failed ones never win). */
static int better(const ptreg_tune_candidate *a, const ptreg_tune_candidate *b)
{
    if (a->passed != b->passed)
        return a->passed;
    return a->seconds < b->seconds;
}

static void pick_best(ptreg_tune_result *r)
{
    r->best = r->count;
    for (size_t i = 0; i < r->count; i++)
        if (r->candidates[i].passed && (r->best == r->count || better(&r->candidates[i], &r->candidates[r->best])))
            r->best = i;
}

static int same_point(const double *a, const double *b, int n)
{
    return !memcmp(a, b, (size_t)n * sizeof *a);
}

/* The built-in default's point, when the space holds it. */
static size_t find_fallback(const ptreg_tune_space *s, const double *points, size_t valid)
{
    double f[PTREG_TUNE_MAX_PARAMS];
    for (int p = 0; p < s->param_count; p++)
        f[p] = s->params[p].fallback;
    for (size_t i = 0; i < valid; i++)
        if (same_point(points + i * (size_t)s->param_count, f, s->param_count))
            return i;
    return valid;
}

static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* The points to measure, as indices into the valid ones: all of them, or
 * a seeded random sample (the default's first). */
static size_t choose(const search *x, size_t valid, size_t fallback, int sample, size_t *pick)
{
    size_t want = valid;
    if (sample) {
        want = (size_t)ceil(x->o->sample_fraction * (double)valid);
        want = want < 4 ? (valid < 4 ? valid : 4) : want;
    }
    for (size_t i = 0; i < valid; i++)
        pick[i] = i;
    uint64_t state = x->o->seed;
    for (size_t i = valid; sample && i > 1; i--) { /* Fisher-Yates */
        size_t j = (size_t)(next_random(&state) % i), t = pick[i - 1];
        pick[i - 1] = pick[j], pick[j] = t;
    }
    for (size_t i = 0; sample && fallback < valid && i < want; i++)
        if (pick[i] == fallback)
            return want;
    if (sample && fallback < valid)
        pick[want - 1] = fallback;
    return want;
}

static int by_speed(const void *a, const void *b)
{
    const ptreg_tune_candidate *x = a, *y = b;
    return better(x, y) ? -1 : better(y, x) ? 1 : 0;
}

/* Successive halving: everyone once, the better half twice as long, ...,
 * the last one or two at full repetitions. */
static ptreg_status halve(search *x, ptreg_error *err)
{
    ptreg_tune_result *r = x->r;
    size_t alive = r->count;
    ptreg_tune_candidate *order = malloc(r->count * sizeof *order);
    if (!order)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory");
    memcpy(order, r->candidates, r->count * sizeof *order);
    ptreg_status st = PTREG_OK;
    for (int reps = 1; !st && alive > 0 && !over_budget(x); reps = reps * 2 < x->o->reps ? reps * 2 : x->o->reps) {
        for (size_t i = 0; !st && i < alive; i++)
            st = measure(x, &order[i], reps, err);
        qsort(order, alive, sizeof *order, by_speed);
        if (alive <= 2 && reps == x->o->reps)
            break;
        alive = alive > 2 ? (alive + 1) / 2 : alive;
    }
    /* the survivors' last measurements back into the record */
    for (size_t i = 0; i < r->count; i++)
        for (size_t j = 0; j < r->count; j++)
            if (same_point(order[j].point, r->candidates[i].point, x->s->param_count))
                r->candidates[i] = order[j];
    free(order);
    return st;
}

static ptreg_status exhaust(search *x, ptreg_error *err)
{
    ptreg_status st = PTREG_OK;
    for (size_t i = 0; !st && i < x->r->count && !over_budget(x); i++)
        st = measure(x, &x->r->candidates[i], x->o->reps, err);
    return st;
}

ptreg_status ptreg_tune_search(const ptreg_tune_space *s, const ptreg_tune_machine *m, ptreg_tune_measure_fn fn,
                               void *ctx, const ptreg_tune_options *opt, ptreg_tune_result *r, ptreg_error *err)
{
    memset(r, 0, sizeof *r);
    ptreg_tune_options defaults;
    if (!opt) {
        ptreg_tune_options_default(&defaults);
        opt = &defaults;
    }
    if (opt->reps < 1 || !(opt->sample_fraction > 0 && opt->sample_fraction <= 1))
        return ptreg_error_set(err, PTREG_ERR_ARG, "tune: reps must be >= 1 and the sample fraction in (0, 1]");
    const size_t valid = ptreg_tune_enumerate(s, m, NULL, 0, &r->stats);
    if (!valid)
        return ptreg_error_set(err, PTREG_ERR_ARG, "tune %s: no point of the space satisfies its constraints",
                               s->kernel);
    double *points = malloc(valid * (size_t)s->param_count * sizeof *points);
    size_t *pick = malloc(valid * sizeof *pick);
    r->candidates = calloc(valid, sizeof *r->candidates);
    if (!points || !pick || !r->candidates) {
        free(points), free(pick);
        ptreg_tune_result_free(r);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory for %zu candidates", valid);
    }
    ptreg_tune_enumerate(s, m, points, valid, NULL);
    r->method = opt->method != PTREG_TUNE_AUTO ? opt->method
                : valid <= EXHAUSTIVE_MAX     ? PTREG_TUNE_EXHAUSTIVE
                                              : PTREG_TUNE_HALVING;
    const size_t fallback = find_fallback(s, points, valid);
    r->count = choose(&(search){.o = opt}, valid, fallback, r->method == PTREG_TUNE_HALVING, pick);
    r->fallback = r->count;
    for (size_t i = 0; i < r->count; i++) {
        memcpy(r->candidates[i].point, points + pick[i] * (size_t)s->param_count,
               (size_t)s->param_count * sizeof(double));
        if (pick[i] == fallback)
            r->fallback = i;
    }
    free(points), free(pick);
    search x = {s, fn, ctx, opt, r, ptreg_time_ms(), r->method == PTREG_TUNE_HALVING ? 2 * r->count : r->count};
    ptreg_status st = r->method == PTREG_TUNE_HALVING ? halve(&x, err) : exhaust(&x, err);
    r->elapsed_s = (ptreg_time_ms() - x.t0) * 1e-3;
    if (st) {
        ptreg_tune_result_free(r);
        return st;
    }
    pick_best(r);
    return PTREG_OK;
}
