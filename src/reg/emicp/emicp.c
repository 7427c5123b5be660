/* EM-ICP (Granger & Pennec 2002) as the GPU study of Tamaki et al. runs it;
 * formulas and the weight derivation in docs/ALGORITHMS.md, "EM-ICP". */
#include "ptreg/emicp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/nn.h"
#include "pair/pair_options.h"
#include "reg/emicp/emicp_impl.h"
#include "reg/emicp/emicp_options.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"

/* Rows whose normaliser C_i falls below this get uniform weights (1/m each),
 * the study's guard against dividing by ~0. */
#define EMICP_MIN_NORMALISER 1e-6

static const ptreg_option emicp_rows[] = {EMICP_SCHEDULE_ROWS(ptreg_emicp_options),
                                          PAIR_OPTION_ROWS(offsetof(ptreg_emicp_options, pair))};
OPTION_TABLE(ptreg_emicp_option_table, "EM-ICP", ptreg_emicp_options, ptreg_emicp_options_default, emicp_rows)

void ptreg_emicp_options_default(ptreg_emicp_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->sigma2_init = 0.0;
    opt->sigma2_final = 0.0;
    opt->sigma_factor = 0.9;
    opt->d02 = -1.0;
    opt->max_iter = 1000;
    opt->tol = 1e-7;
    ptreg_transform_identity(opt->init);
    ptreg_pair_options_default(&opt->pair);
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

void ptreg_emicp_options_tamaki(ptreg_emicp_options *opt)
{
    ptreg_emicp_options_default(opt);
    opt->sigma2_init = 0.01;
    opt->sigma2_final = 1e-5;
    opt->d02 = 0.01;
}


/* The schedule actually used: explicit values, or the defaults scaled by r. */
static ptreg_status resolve_schedule(const ptreg_emicp_options *opt, double r, ptreg_emicp_result *res,
                                     ptreg_error *err)
{
    const ptreg_status st = ptreg_options_check(ptreg_emicp_option_table(), opt, err);
    if (st)
        return st;
    const int needs_scale = !(opt->sigma2_init > 0) || !(opt->sigma2_final > 0);
    if (needs_scale && !(r > 0))
        return ptreg_error_set(err, PTREG_ERR_FORMAT,
                               "EM-ICP: the target has no extent (all points equal): give sigma2 values");
    res->sigma2_init = opt->sigma2_init > 0 ? opt->sigma2_init : PTREG_EMICP_SIGMA2_INIT_REL * r * r;
    res->sigma2_final = opt->sigma2_final > 0 ? opt->sigma2_final : PTREG_EMICP_SIGMA2_FINAL_REL * r * r;
    res->d02 = opt->d02 >= 0 ? opt->d02 : res->sigma2_init;
    if (!isfinite(res->sigma2_init) || !isfinite(res->sigma2_final) || !isfinite(res->d02))
        return ptreg_error_set(err, PTREG_ERR_ARG, "EM-ICP: sigma2 and d02 must be finite");
    return PTREG_OK;
}

/* Per-row Gaussian sums of one E-step, and the rows they were taken for. */
typedef struct estep {
    double *moved;          /* T y_i, n x 3 */
    double *se, *se2, *seb; /* sum e, sum e^2, sum e x_j (e = exp(-d^2 / 2 sigma^2)) */
} estep;

static void estep_free(estep *e)
{
    free(e->moved);
    free(e->se);
    free(e->se2);
    free(e->seb);
}

static ptreg_status estep_alloc(estep *e, size_t n, ptreg_error *err)
{
    e->moved = malloc(3 * n * sizeof(double));
    e->se = malloc(n * sizeof(double));
    e->se2 = malloc(n * sizeof(double));
    e->seb = malloc(3 * n * sizeof(double));
    if (!e->moved || !e->se || !e->se2 || !e->seb)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "EM-ICP: out of memory for %zu points", n);
    return PTREG_OK;
}

static void move_points(const double T[16], const float *y, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < 3; r++)
            out[3 * i + r] = T[4 * r] * y[3 * i] + T[4 * r + 1] * y[3 * i + 1] + T[4 * r + 2] * y[3 * i + 2] +
                             T[4 * r + 3];
}

/* The M-step's moments: pairs y_i -> x'_i with weights lambda_i, where
 * A_ij = e_ij^2, C_i = sum_j A_ij + exp(-d0^2 / sigma^2), and the weights
 * sqrt(A_ij / C_i) = e_ij / sqrt(C_i) give lambda_i = sum e / sqrt(C_i) and
 * x'_i = sum e x_j / sum e. */
static void weighted_moments(const estep *e, const float *y, size_t n, double outlier, const double target_c[3],
                             ptreg_moments *mom)
{
    for (size_t i = 0; i < n; i++) {
        const double c = e->se2[i] + outlier;
        const double p[3] = {y[3 * i], y[3 * i + 1], y[3 * i + 2]};
        if (c < EMICP_MIN_NORMALISER) {
            ptreg_moments_add(mom, p, target_c, 1.0); /* uniform weights: lambda 1, the centroid */
            continue;
        }
        if (!(e->se[i] > 0))
            continue; /* only the outlier term: no weight */
        const double lambda = e->se[i] / sqrt(c);
        const double q[3] = {e->seb[3 * i] / e->se[i], e->seb[3 * i + 1] / e->se[i], e->seb[3 * i + 2] / e->se[i]};
        ptreg_moments_add(mom, p, q, lambda);
    }
}

/* Fitness and RMSE of the result by exact nearest neighbors. */
static ptreg_status evaluate(const float *source, size_t n, const float *target, size_t m, ptreg_emicp_result *res,
                             ptreg_error *err)
{
    ptreg_kdtree *tree;
    ptreg_status st = ptreg_kdtree_create(target, m, NULL, &tree, err);
    if (st)
        return st;
    float *moved = malloc(3 * n * sizeof(float)), *d2 = malloc(n * sizeof(float));
    uint32_t *idx = malloc(n * sizeof(uint32_t));
    if (!moved || !d2 || !idx) {
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "EM-ICP: out of memory for %zu points", n);
    } else {
        ptreg_transform_points(res->transformation, source, moved, n);
        ptreg_kdtree_nearest(tree, moved, n, NULL, idx, d2);
        const double limit = 9.0 * res->sigma2_final;
        double sum = 0.0;
        size_t pairs = 0;
        for (size_t i = 0; i < n; i++)
            if (d2[i] <= limit) {
                sum += d2[i];
                pairs++;
            }
        res->pairs = pairs;
        res->fitness = (double)pairs / (double)n;
        res->rmse = pairs ? sqrt(sum / (double)pairs) : 0.0;
    }
    free(moved);
    free(d2);
    free(idx);
    ptreg_kdtree_destroy(tree);
    return st;
}

/* How far one update moved the pose: rotation in radians plus translation
 * in units of r. */
static double pose_change(const double before[16], const double after[16], double r)
{
    double angle_deg, trans;
    ptreg_transform_difference(before, after, &angle_deg, &trans);
    return angle_deg * (3.14159265358979323846 / 180.0) + trans / r;
}

/* The CPU's E-step: the pair engine's sums, then the weights. */
typedef struct cpu_estep {
    const float *source;
    size_t n;
    double target_c[3];
    ptreg_pair_plan *plan;
    estep e;
} cpu_estep;

static ptreg_status cpu_estep_run(void *ctx, const double T[16], double sigma2, double outlier, ptreg_moments *mom,
                                  double *pair_ms, ptreg_error *err)
{
    cpu_estep *c = ctx;
    move_points(T, c->source, c->n, c->e.moved);
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_pair_gauss(c->plan, c->e.moved, c->n, 0.5 / sigma2, c->e.se, c->e.se2, c->e.seb, err);
    *pair_ms += ptreg_time_ms() - t0;
    if (!st)
        weighted_moments(&c->e, c->source, c->n, outlier, c->target_c, mom);
    return st;
}

/* Where an EM-ICP runs: its E-step and the centroids the moments are
 * taken about. */
typedef struct emicp_run {
    emicp_estep_fn estep;
    void *ctx;
    double source_c[3], target_c[3];
} emicp_run;

/* One iteration at sigma2: E-step on the moved source, weighted Horn into
 * T. Sets *no_weight (and leaves T) when no source point has any weight. */
static ptreg_status iterate(const emicp_run *run, double sigma2, double d02, double T[16], double *pair_ms,
                            int *no_weight, ptreg_error *err)
{
    ptreg_moments mom;
    ptreg_moments_init(&mom, run->source_c, run->target_c);
    ptreg_status st = run->estep(run->ctx, T, sigma2, exp(-d02 / sigma2), &mom, pair_ms, err);
    if (st)
        return st;
    *no_weight = !(mom.w > 0);
    if (*no_weight)
        return PTREG_OK;
    return ptreg_horn_solve(&mom, T, NULL, err);
}

static ptreg_status anneal(const emicp_run *run, const ptreg_emicp_options *opt, ptreg_emicp_result *res,
                           ptreg_error *err)
{
    double T[16], sigma2 = res->sigma2_init;
    const double sigma2_stop = res->sigma2_final; /* from here on, res's is the last one used */
    memcpy(T, opt->init, sizeof T);
    res->stop_reason = PTREG_STOP_MAX_ITERATIONS;
    while (res->iterations < opt->max_iter) {
        if (sigma2 <= sigma2_stop) {
            res->stop_reason = PTREG_STOP_SIGMA_FINAL;
            break;
        }
        double next[16];
        memcpy(next, T, sizeof next);
        int no_weight;
        ptreg_status st = iterate(run, sigma2, res->d02, next, &res->pair_ms, &no_weight, err);
        if (st)
            return st;
        if (no_weight) {
            res->stop_reason = PTREG_STOP_TOO_FEW_PAIRS;
            break;
        }
        res->iterations++;
        res->sigma2_final = sigma2;
        const double change = pose_change(T, next, res->radius);
        if (opt->progress.fn)
            opt->progress.fn(opt->progress.ctx, res->iterations, opt->max_iter, change);
        memcpy(T, next, sizeof T);
        sigma2 *= opt->sigma_factor;
        if (opt->tol > 0 && change < opt->tol) {
            res->converged = 1;
            res->stop_reason = PTREG_STOP_CONVERGED;
            break;
        }
    }
    memcpy(res->transformation, T, sizeof T);
    return PTREG_OK;
}

static ptreg_status check_input(const float *p, size_t n, const char *what, ptreg_error *err)
{
    if (n == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "EM-ICP: the %s has no points", what);
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(p[i]))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "EM-ICP: %s point %zu is not finite", what, i / 3);
    char name[32];
    snprintf(name, sizeof name, "EM-ICP: the %s", what);
    return ptreg_check_shape(name, p, n, err);
}

static void cpu_close(void *ctx)
{
    cpu_estep *c = ctx;
    if (!c)
        return;
    estep_free(&c->e);
    ptreg_pair_plan_destroy(c->plan);
    free(c);
}

/* The CPU's set-up of a run: the target packed once in the pair engine. */
static ptreg_status cpu_open(const ptreg_device *on, const float *source, size_t n, const float *target, size_t m,
                             const ptreg_emicp_options *opt, const double source_c[3], const double target_c[3],
                             void **ctx, const char **isa, ptreg_error *err)
{
    (void)on, (void)source_c;
    cpu_estep *c = calloc(1, sizeof *c);
    if (!c)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "EM-ICP: out of memory");
    *c = (cpu_estep){.source = source, .n = n};
    memcpy(c->target_c, target_c, sizeof c->target_c);
    ptreg_status st = ptreg_pair_plan_create(target, m, &opt->pair, &c->plan, err);
    if (!st) {
        *isa = opt->pair.precision == PTREG_PRECISION_FP64 ? "scalar" : ptreg_pair_plan_isa(c->plan);
        st = estep_alloc(&c->e, n, err);
    }
    if (st) {
        cpu_close(c);
        return st;
    }
    *ctx = c;
    return PTREG_OK;
}

/* Every option. */
static const emicp_engine emicp_cpu_engine = {
    .base = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL},
    .open = cpu_open,
    .estep = cpu_estep_run,
    .close = cpu_close,
};

static const engine *const emicp_engines[] = {&emicp_cpu_engine.base, &emicp_device_engine.base};

/* The device the options name and the engine that runs them there: the
 * one choice a call makes. */
static ptreg_status emicp_choose(const ptreg_emicp_options *opt, ptreg_device *on, const emicp_engine **chosen,
                                 ptreg_error *err)
{
    const engine *e = NULL;
    ptreg_status st = engine_choose(emicp_engines, 2, &opt->device, opt, "EM-ICP", on, &e, err);
    /* every engine in the list is an emicp_engine, its base first */
    *chosen = (const emicp_engine *)e;
    return st;
}

/* The run on the engine chosen: its set-up, the annealing on its E-steps,
 * its end. */
static ptreg_status emicp_on(const emicp_engine *e, const ptreg_device *on, const float *source, size_t n,
                             const float *target, size_t m, const ptreg_emicp_options *opt, emicp_run *run,
                             ptreg_emicp_result *res, ptreg_error *err)
{
    void *ctx = NULL;
    ptreg_status st = e->open(on, source, n, target, m, opt, run->source_c, run->target_c, &ctx, &res->isa, err);
    if (st)
        return st;
    run->estep = e->estep;
    run->ctx = ctx;
    st = anneal(run, opt, res, err);
    e->close(ctx);
    return st;
}

ptreg_status ptreg_emicp_resolve_device(const ptreg_emicp_options *opt, ptreg_device *on, ptreg_error *err)
{
    const emicp_engine *unused;
    return emicp_choose(opt, on, &unused, err);
}

ptreg_status ptreg_emicp(const float *source, size_t n, const float *target, size_t m, const ptreg_emicp_options *opt,
                         ptreg_emicp_result *res, ptreg_error *err)
{
    memset(res, 0, sizeof *res);
    ptreg_emicp_options defaults;
    if (!opt) {
        ptreg_emicp_options_default(&defaults);
        opt = &defaults;
    }
    ptreg_status st = check_input(source, n, "source", err);
    st = st ? st : check_input(target, m, "target", err);
    if (!st && !ptreg_transform_is_rigid(opt->init, PTREG_RIGID_TOL))
        st = ptreg_error_set(err, PTREG_ERR_ARG, "EM-ICP: the initial transform is not rigid");
    ptreg_device on;
    const emicp_engine *e;
    st = st ? st : emicp_choose(opt, &on, &e, err);
    if (st)
        return st;
    const double t0 = ptreg_time_ms();
    emicp_run run = {0};
    ptreg_points_centroid(source, n, run.source_c);
    ptreg_points_centroid(target, m, run.target_c);
    res->radius = ptreg_points_rms_radius(target, m, run.target_c);
    res->precision = opt->pair.precision;
    res->device = on;
    st = resolve_schedule(opt, res->radius, res, err);
    if (st)
        return st;
    if (!(res->radius > 0))
        res->radius = 1.0; /* only tol uses it now: a point target has no scale */
    st = emicp_on(e, &on, source, n, target, m, opt, &run, res, err);
    res->time_ms = ptreg_time_ms() - t0;
    if (st)
        return st;
    res->pair_terms = (double)n * (double)m * (double)res->iterations;
    res->gpts = res->time_ms > 0 ? res->pair_terms / (res->time_ms * 1e6) : 0.0;
    return evaluate(source, n, target, m, res, err);
}
