/* The tuner's search (tune.h): every valid point, or successive halving on
 * a random sample of them; the built-in default is always among the
 * candidates, so the report can say what tuning gained over it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "ptreg/tune.h"
#include "tune/tune_kernels.h"

/* Spaces above this many valid points are searched by halving under AUTO. */
#define EXHAUSTIVE_MAX 64

void ptreg_tune_options_default(ptreg_tune_options *o)
{
    memset(o, 0, sizeof *o);
    o->method = PTREG_TUNE_AUTO;
    o->sample_fraction = 0.25;
    o->reps = 5;
    o->tolerance = 1e-5;
    o->confirm = 3;
    o->min_gain = 1.02;
    o->seed = 0x74756e65u; /* "tune" */
    o->budget_s = 300;
}

static const ptreg_option_name tune_method_names[] = {{"auto", PTREG_TUNE_AUTO},
                                                      {"exhaustive", PTREG_TUNE_EXHAUSTIVE},
                                                      {"halving", PTREG_TUNE_HALVING},
                                                      {"coordinate", PTREG_TUNE_COORDINATE},
                                                      {NULL, 0}};
OPTION_ENUM_FUNCTIONS(ptreg_tune_method, tune_method_names, "auto", ptreg_tune_method_name, ptreg_tune_method_parse)

OPTION_ENUM_IS_INT(ptreg_tune_options, method);
/* The tolerance is each kernel's; the seed (64 bits) and the progress
 * callback are the front ends'. */
static const ptreg_option tune_rows[] = {
    OPTION_ENUM(ptreg_tune_options, method, "method", "search", tune_method_names, 0,
                "auto (exhaustive up to 64 candidates, else coordinate), exhaustive, coordinate or halving"),
    OPTION_FIELD(ptreg_tune_options, sample_fraction, "sample", DOUBLE, 0, 1, PTREG_OPTION_OPEN_LO, "F",
                 "coordinate, halving: the share of the valid candidates measured"),
    OPTION_FIELD(ptreg_tune_options, reps, NULL, INT, 1, 64, 0, "N", "repetitions of a final measurement, median"),
    OPTION_FIELD(ptreg_tune_options, budget_s, "budget", DOUBLE, 0, 1e7, 0, "SECONDS",
                 "stop starting new measurements after this long (0: no limit)"),
    OPTION_FIELD(ptreg_tune_options, confirm, NULL, INT, 0, 1000, 0, "N",
                 "rounds of the winner and the default measured in turn at the end (0: none)"),
    OPTION_FIELD(ptreg_tune_options, min_gain, NULL, DOUBLE, 1, 1e3, 0, "G",
                 "the winner must then beat the default by this factor, else the default is kept"),
};
OPTION_TABLE(ptreg_tune_option_table, "tune", ptreg_tune_options, ptreg_tune_options_default, tune_rows)

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

static int same_point(const double *a, const double *b, int n) { return !memcmp(a, b, (size_t)n * sizeof *a); }

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

/* The candidate at point p, measured now when it is new and the budget
 * allows; NULL when it is not valid or there is no budget left. */
static ptreg_tune_candidate *at_point(search *x, const ptreg_tune_machine *m, const double *p, size_t budget,
                                      ptreg_status *st, ptreg_error *err)
{
    ptreg_tune_result *r = x->r;
    for (size_t i = 0; i < r->count; i++)
        if (same_point(r->candidates[i].point, p, x->s->param_count))
            return &r->candidates[i];
    if (!ptreg_tune_valid(x->s, m, p) || r->count >= budget || over_budget(x))
        return NULL;
    ptreg_tune_candidate *c = &r->candidates[r->count++];
    memcpy(c->point, p, (size_t)x->s->param_count * sizeof *p);
    *st = measure(x, c, x->o->reps, err);
    return c;
}

/* Coordinate descent from the start point: for each parameter in turn,
 * every value of it with the others held, the fastest passed one kept;
 * sweeps until one changes nothing or `budget` points are measured. Why:
 * the kernels' costs are nearly separable in their knobs (a tile size, a
 * thread count, a slab), so a line search per knob finds the valley that a
 * random sample may never touch, and every measurement is a full one. */
static ptreg_status descend(search *x, const ptreg_tune_machine *m, const double *start, size_t budget,
                            ptreg_error *err)
{
    double cur[PTREG_TUNE_MAX_PARAMS], values[PTREG_TUNE_MAX_VALUES];
    memcpy(cur, start, (size_t)x->s->param_count * sizeof *cur);
    ptreg_status st = PTREG_OK;
    ptreg_tune_candidate *best = at_point(x, m, cur, budget, &st, err);
    for (int moved = 1; !st && best && moved;) {
        moved = 0;
        for (int p = 0; !st && p < x->s->param_count; p++) {
            const int n = ptreg_tune_param_values(&x->s->params[p], values);
            double line[PTREG_TUNE_MAX_PARAMS];
            memcpy(line, cur, sizeof line);
            for (int v = 0; !st && v < n; v++) {
                line[p] = values[v];
                ptreg_tune_candidate *c = at_point(x, m, line, budget, &st, err);
                if (c && better(c, best) && !same_point(c->point, cur, x->s->param_count)) {
                    best = c;
                    moved = 1;
                }
            }
            memcpy(cur, best->point, sizeof cur);
        }
    }
    return st;
}

/* Every candidate in order, the default first: a budget that runs out
 * must still leave the default measured, for the winner to be compared
 * with (confirm_winner). */
static ptreg_status exhaust(search *x, ptreg_error *err)
{
    ptreg_tune_result *r = x->r;
    ptreg_status st = r->fallback < r->count ? measure(x, &r->candidates[r->fallback], x->o->reps, err) : PTREG_OK;
    for (size_t i = 0; !st && i < r->count && !over_budget(x); i++)
        if (i != r->fallback)
            st = measure(x, &r->candidates[i], x->o->reps, err);
    return st;
}

static int by_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The winner and the default measured in turn, `confirm` rounds each (the
 * order alternating, so a slow spell falls on both): the winner stays only
 * if its median beats the default's by min_gain. */
static ptreg_status confirm_winner(search *x, ptreg_error *err)
{
    ptreg_tune_result *r = x->r;
    r->gain = 1.0;
    if (x->o->confirm < 1 || r->best == r->count || r->fallback == r->count || r->best == r->fallback ||
        !r->candidates[r->fallback].passed)
        return PTREG_OK;
    double tw[64], td[64];
    const int rounds = x->o->confirm < 64 ? x->o->confirm : 64;
    ptreg_tune_candidate w = r->candidates[r->best], d = r->candidates[r->fallback];
    ptreg_status st = PTREG_OK;
    for (int k = 0; !st && k < rounds; k++) {
        ptreg_tune_candidate *first = k % 2 ? &d : &w, *second = k % 2 ? &w : &d;
        st = measure(x, first, x->o->reps, err);
        st = st ? st : measure(x, second, x->o->reps, err);
        tw[k] = w.seconds, td[k] = d.seconds;
    }
    if (st)
        return st;
    qsort(tw, (size_t)rounds, sizeof *tw, by_double);
    qsort(td, (size_t)rounds, sizeof *td, by_double);
    w.seconds = tw[rounds / 2], d.seconds = td[rounds / 2];
    r->candidates[r->best] = w, r->candidates[r->fallback] = d;
    r->gain = w.seconds > 0 ? d.seconds / w.seconds : 1.0;
    if (r->gain < x->o->min_gain) {
        r->best = r->fallback;
        r->default_kept = 1;
    }
    return PTREG_OK;
}

/* After the search: the winner, its confirmation, the time taken. */
static ptreg_status finish(search *x, ptreg_status st, ptreg_error *err)
{
    if (!st) {
        pick_best(x->r);
        st = confirm_winner(x, err);
    }
    x->r->elapsed_s = (ptreg_time_ms() - x->t0) * 1e-3;
    if (st)
        ptreg_tune_result_free(x->r);
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
    if (ptreg_options_check(ptreg_tune_option_table(), opt, err))
        return PTREG_ERR_ARG;
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
                : valid <= EXHAUSTIVE_MAX      ? PTREG_TUNE_EXHAUSTIVE
                                               : PTREG_TUNE_COORDINATE;
    const size_t fallback = find_fallback(s, points, valid);
    search x = {s, fn, ctx, opt, r, 0.0, 0};
    ptreg_status st;
    if (r->method == PTREG_TUNE_COORDINATE) {
        const size_t budget = (size_t)ceil(opt->sample_fraction * (double)valid);
        x.planned = budget;
        x.t0 = ptreg_time_ms();
        st = descend(&x, m, points + (fallback < valid ? fallback : 0) * (size_t)s->param_count,
                     budget < 2 ? 2 : budget, err);
        r->fallback = fallback < valid ? 0 : r->count; /* the start is the first measured */
        free(points), free(pick);
        return finish(&x, st, err);
    }
    r->count = choose(&(search){.o = opt}, valid, fallback, r->method == PTREG_TUNE_HALVING, pick);
    r->fallback = r->count;
    for (size_t i = 0; i < r->count; i++) {
        memcpy(r->candidates[i].point, points + pick[i] * (size_t)s->param_count,
               (size_t)s->param_count * sizeof(double));
        if (pick[i] == fallback)
            r->fallback = i;
    }
    free(points), free(pick);
    x.planned = r->method == PTREG_TUNE_HALVING ? 2 * r->count : r->count;
    x.t0 = ptreg_time_ms();
    st = r->method == PTREG_TUNE_HALVING ? halve(&x, err) : exhaust(&x, err);
    return finish(&x, st, err);
}
