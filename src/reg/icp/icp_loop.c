/* The loop ICP's engines share (Besl & McKay 1992; point-to-plane and
 * robust kernels by Gauss-Newton, icp_gn.c): the method chosen, the
 * source's order, the iterations (Horn's or a damped Gauss-Newton step,
 * Levenberg-Marquardt's memory) and when they stop. An engine gives it the
 * passes of correspondences. See docs/ALGORITHMS.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "feat/neighborhood.h"
#include "nn/kdtree_query.h"
#include "nn/searcher.h"
#include "ptreg/features.h"
#include "reg/icp/icp_impl.h"
#include "core/numeric.h"

OPTION_ENUM_IS_INT(ptreg_icp_options, nn);
OPTION_ENUM_IS_INT(ptreg_icp_options, method);
OPTION_ENUM_IS_INT(ptreg_icp_options, kernel);
static const ptreg_option icp_rows[] = {
    OPTION_FIELD(ptreg_icp_options, max_iter, NULL, INT, 0, 1000000, 0, "N", "most transform updates"),
    OPTION_FIELD(ptreg_icp_options, tol, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_AUTO, "T",
                 "stop when the MSE drops by less than T; 0 runs all iterations; default 1e-10 x the target's "
                 "bounding-box diagonal^2"),
    OPTION_FIELD(ptreg_icp_options, max_dist, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "D",
                 "leave out pairs farther apart than D; default no limit"),
    OPTION_ENUM(ptreg_icp_options, nn, "nn", NULL, nn_method_names, 0,
                "nearest neighbors, every method exact (auto: the index's measured one, else a rule)"),
    OPTION_FIELD(ptreg_icp_options, filter_sigma, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_AUTO, "S",
                 "leave out pairs whose error is over mean + S std; 0: off"),
    OPTION_FIELD(ptreg_icp_options, filter_start, NULL, INT, 0, 1000000, 0, "K",
                 "first iteration (0-based) of the sigma filter"),
    OPTION_FIELD(ptreg_icp_options, trim, NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_LO, "F",
                 "keep the closest fraction F of the pairs"),
    OPTION_ENUM(ptreg_icp_options, method, "method", NULL, icp_method_names, 0,
                "point: |T p - q|^2, Horn's steps; plane: ((T p - q) . n_q)^2; gicp: Generalized-ICP; "
                "symmetric: ((T p - q) . (n_p + n_q))^2; all but point by Gauss-Newton"),
    OPTION_ENUM(ptreg_icp_options, kernel, "kernel", NULL, icp_kernel_names, 0,
                "robust kernel by reweighting, as Open3D's (gm: Geman-McClure); needs --kernel-scale"),
    OPTION_FIELD(ptreg_icp_options, kernel_scale, NULL, DOUBLE, 0, DBL_MAX,
                 PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET, "S",
                 "the kernel's scale k, in the clouds' units (the residual where it starts to discount a pair); "
                 "required with a kernel, no default"),
    OPTION_FIELD(ptreg_icp_options, normal_k, NULL, INT, 3, 1000, 0, "K",
                 "plane, symmetric, gicp: estimate the normals from K neighbors (by default a file's own normals "
                 "are used when it has them)"),
    OPTION_FIELD(ptreg_icp_options, normal_radius, NULL, DOUBLE, 0, DBL_MAX, 0, "R",
                 "estimate the normals from the normal_k nearest within R (Open3D's KDTreeSearchParamHybrid); "
                 "0: no radius"),
    OPTION_FIELD(ptreg_icp_options, gicp_epsilon, NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_LO, "E",
                 "gicp: each covariance's variance along the normal, the others 1"),
    OPTION_FIELD(ptreg_icp_options, relative_fitness, NULL, DOUBLE, 0, 1, 0, "F",
                 "stop when fitness and rmse change by less than F and relative_rmse (Open3D's criteria; 0: off)"),
    OPTION_FIELD(ptreg_icp_options, relative_rmse, NULL, DOUBLE, 0, DBL_MAX, 0, "R", "see relative_fitness"),
    OPTION_FIELD(ptreg_icp_options, transformation_epsilon, NULL, DOUBLE, 0, 1, 0, "E",
                 "stop after a step of squared translation <= E and rotation cosine >= 1 - E (PCL's; 0: off)"),
    OPTION_FIELD(ptreg_icp_options, lm_lambda, "lm", DOUBLE, 0, 1e6, 0, "L",
                 "Levenberg-Marquardt steps from damping L (small_gicp's default optimizer starts at 1e-3), 10x up "
                 "when a step raises the mean cost (taken back), 10x down when it lowers it; holds directions no "
                 "pair fixes (a flat target) where Gauss-Newton stops; 0: Gauss-Newton")};

/* The rules that tie ICP's options together (ptreg_option_table.check):
 * a kernel's scale has no default that fits every cloud, and Open3D's
 * stop needs both of its numbers. */
static ptreg_status icp_rules(const void *options, ptreg_option_spelling spelling, ptreg_error *err)
{
    const ptreg_icp_options *o = options;
    const ptreg_option_table *t = ptreg_icp_option_table();
    char a[48], b[48];
    if (o->kernel != PTREG_KERNEL_NONE && !(o->kernel_scale > 0))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "the %s kernel needs %s (> 0, the residual where it starts to discount a pair, in "
                               "the clouds' units)",
                               ptreg_robust_kernel_name(o->kernel),
                               option_spelled(t, "kernel_scale", spelling, b, sizeof b));
    if (o->scale && ptreg_icp_uses_gauss_newton(o))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "a scale is fitted by Horn's closed form: point-to-point without a kernel or %s",
                               option_spelled(t, "lm_lambda", spelling, a, sizeof a));
    if ((o->relative_fitness > 0) != (o->relative_rmse > 0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s and %s go together (Open3D stops when both hold)",
                               option_spelled(t, "relative_fitness", spelling, a, sizeof a),
                               option_spelled(t, "relative_rmse", spelling, b, sizeof b));
    return PTREG_OK;
}
OPTION_TABLE_CHECKED(ptreg_icp_option_table, "ICP", ptreg_icp_options, ptreg_icp_options_default, icp_rows, icp_rules)

void ptreg_icp_options_default(ptreg_icp_options *opt)
{
    memset(opt, 0, sizeof *opt);
    /* Enough for point-to-point on a smooth surface, which creeps along it
     * (synth's default scan, 30 degrees off, converges in 174); the other
     * methods, and well-started runs, stop on tol long before. */
    opt->max_iter = 200;
    opt->tol = -1.0;
    opt->max_dist = 0.0;
    opt->filter_sigma = 0.0;
    opt->filter_start = 0;
    opt->trim = 1.0;
    ptreg_transform_identity(opt->init);
    opt->nn = PTREG_NN_AUTO;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
    opt->method = PTREG_ICP_POINT;
    opt->kernel = PTREG_KERNEL_NONE;
    /* kernel_scale 0: not set. A scale in the clouds' units has no default
     * that fits every cloud: a kernel without one is refused. */
    opt->normal_k = 10;
    opt->gicp_epsilon = 1e-3;
}

void ptreg_icp_result_free(ptreg_icp_result *result)
{
    if (!result)
        return;
    free(result->mse);
    free(result->walk);
    result->mse = NULL;
    result->walk = NULL;
}

static int finite_points(const float *p, size_t n, size_t *bad)
{
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(p[i])) {
            *bad = i / 3;
            return 0;
        }
    return 1;
}

ptreg_status icp_check_inputs(const float *source, size_t n, const float *target, size_t m,
                              const ptreg_icp_options *opt, ptreg_error *err)
{
    size_t bad;
    if (n == 0 || m == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: the %s cloud is empty", n == 0 ? "source" : "target");
    if (n >= PTREG_NO_NEIGHBOR || m >= PTREG_NO_NEIGHBOR)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: clouds are limited to %u points", PTREG_NO_NEIGHBOR - 1);
    /* the target becomes a k-d tree: its limit, before a point is read */
    ptreg_status st = kd_check_points("ICP: the target", m, err);
    if (st)
        return st;
    if (!finite_points(source, n, &bad))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: source point %zu is not finite", bad);
    if (!finite_points(target, m, &bad))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: target point %zu is not finite", bad);
    st = ptreg_check_shape("ICP: the source", source, n, err);
    if (st || (st = ptreg_check_shape("ICP: the target", target, m, err)))
        return st;
    if ((st = ptreg_options_check(ptreg_icp_option_table(), opt, err)))
        return st;
    if (!ptreg_transform_is_rigid(opt->init, PTREG_RIGID_TOL))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "ICP: the initial transform is not a rigid motion (ptreg_transform_make_rigid "
                               "repairs one within %g)",
                               PTREG_NEARLY_RIGID_TOL);
    return PTREG_OK;
}

/* What both entry points do first: an empty result, the options (the
 * defaults for NULL), the inputs checked. */
ptreg_status icp_begin(const float *source, size_t n, const float *target, size_t m, const ptreg_icp_options **opt,
                       ptreg_icp_options *defaults, ptreg_icp_result *r, ptreg_error *err)
{
    memset(r, 0, sizeof *r);
    if (!*opt) {
        ptreg_icp_options_default(defaults);
        *opt = defaults;
    }
    return icp_check_inputs(source, n, target, m, *opt, err);
}

/* The method that runs: the one asked for, unless it needs a Delaunay
 * graph the model has not got (then the k-d tree, and a note says why).
 * auto is the index's measured choice when it has one and use_measured
 * (r->nn_measured says so), else the rule. */
ptreg_nn_method icp_choose_nn(const ptreg_icp_options *opt, size_t n, const ptreg_model_index *idx, int use_measured,
                              ptreg_icp_result *r)
{
    ptreg_nn_method asked = opt->nn;
    char *note = r->nn_note;
    size_t note_size = sizeof r->nn_note;
    note[0] = '\0';
    r->nn_measured = 0;
    ptreg_index_nn_tuning measured;
    ptreg_model_index_get_nn_tuning(idx, &measured);
    if (asked == PTREG_NN_AUTO && use_measured && !opt->no_tune && measured.method != PTREG_NN_AUTO) {
        /* the index's loader and setter checked that it can run it */
        r->nn_measured = 1;
        return (ptreg_nn_method)measured.method;
    }
    ptreg_model_index_info info;
    ptreg_model_index_get_info(idx, &info);
    if (asked == PTREG_NN_AUTO) {
        if (info.has_delaunay)
            return PTREG_NN_DELAUNAY_PNNOPT;
        /* Below a few thousand pair distances per query batch the tree's
         * descent costs more than scanning everything. */
        return (double)info.points * (double)n < 2e5 || info.points <= 32 ? PTREG_NN_BRUTE : PTREG_NN_KDTREE;
    }
    if (ptreg_nn_method_is_delaunay(asked) && !info.has_delaunay) {
        snprintf(note, note_size, "%s asked for; the model has no Delaunay graph (%.180s): the k-d tree ran",
                 ptreg_nn_method_name(asked), info.delaunay_note);
        return PTREG_NN_KDTREE;
    }
    return asked;
}

/* Bounding-box centre and squared diagonal of the target. */
void icp_target_extent(const float *t, size_t m, double centre[3], double *diag2)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(t, m, lo, hi);
    *diag2 = 0.0;
    for (int k = 0; k < 3; k++) {
        centre[k] = 0.5 * (lo[k] + hi[k]);
        *diag2 += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    }
}

/* PCL's transformation epsilon: the step's squared translation and its
 * rotation's cosine, (trace R - 1) / 2, against eps (DefaultConvergenceCriteria
 * with the rotation threshold it derives from eps). */
static int small_step(const double dT[16], double eps)
{
    const double t2 = dT[3] * dT[3] + dT[7] * dT[7] + dT[11] * dT[11];
    const double cos_angle = 0.5 * (dT[0] + dT[5] + dT[10] - 1.0);
    return t2 <= eps && cos_angle >= 1.0 - eps;
}

/* Why the iterations stop after pass k (its MSE and fitness in r), or -1
 * to go on; small: the step before it was PCL's small step. */
static int stop_after_pass(const ptreg_icp_options *opt, double tol, const ptreg_icp_result *r, int k,
                           double last_fitness, double last_rmse, int small)
{
    if (small)
        return PTREG_STOP_SMALL_STEP;
    /* Besl's test on the size of the change: with rejection the MSE can
     * rise as pairs rejoin, which is not convergence. */
    if (k > 0 && tol > 0.0 && fabs(r->mse[k - 1] - r->mse[k]) < tol)
        return PTREG_STOP_CONVERGED;
    /* Open3D's: both changed by less than asked */
    if (k > 0 && opt->relative_fitness > 0.0 && opt->relative_rmse > 0.0 &&
        fabs(r->fitness - last_fitness) < opt->relative_fitness && fabs(r->rmse - last_rmse) < opt->relative_rmse)
        return PTREG_STOP_RELATIVE_CHANGE;
    if (k == opt->max_iter)
        return PTREG_STOP_MAX_ITERATIONS;
    if (r->pairs < (opt->method == PTREG_ICP_PLANE ? 6u : 3u)) /* a plane's pair fixes one direction */
        return PTREG_STOP_TOO_FEW_PAIRS;
    return -1;
}

/* The step from a pass: Horn's closed form, or Gauss-Newton's damped by
 * lambda; 0 when the pairs do not fix it. */
static ptreg_status step_of(const ptreg_icp_options *opt, const icp_pass *pass, double lambda, double dT[16],
                            int *fixed, ptreg_error *err)
{
    if (ptreg_icp_uses_gauss_newton(opt)) {
        *fixed = icp_gn_step(&pass->eq, pass->moments.ref_p, opt->method == PTREG_ICP_SYMMETRIC, lambda, dT);
        return PTREG_OK;
    }
    int degenerate;
    ptreg_status st = opt->scale ? ptreg_horn_solve_scaled(&pass->moments, dT, NULL, &degenerate, err)
                                 : ptreg_horn_solve(&pass->moments, dT, &degenerate, err);
    *fixed = !degenerate;
    return st;
}

/* Levenberg-Marquardt's memory: the last accepted pass, where it was taken
 * and what it reported, and the damping. A pass whose mean cost (over the
 * pairs it kept: their sets differ) is above the accepted one's is taken
 * back; the next try starts from the accepted pass with 10x the damping. */
#define LM_LAMBDA_MIN 1e-12
#define LM_LAMBDA_MAX 1e12 /* 15 failed tries in a row from 1e-3: no damped step lowers the cost */

typedef struct lm_memory {
    int on, have;
    double lambda, T[16], mean_cost, fitness, rmse;
    size_t pairs;
    icp_pass pass;
} lm_memory;

static double mean_cost(const icp_pass *pass) { return pass->used ? pass->eq.cost / (double)pass->used : 0.0; }

/* Whether pass (at T, reported in r) is taken back; if not, it becomes the
 * accepted one and the damping drops. */
static int lm_rejects(lm_memory *lm, const icp_pass *pass, const double T[16], const ptreg_icp_result *r)
{
    if (!lm->on)
        return 0;
    const double cost = mean_cost(pass);
    if (lm->have && !(cost <= lm->mean_cost)) {
        lm->lambda *= 10.0;
        return 1;
    }
    if (lm->have)
        lm->lambda = fmax(lm->lambda / 10.0, LM_LAMBDA_MIN);
    lm->have = 1;
    memcpy(lm->T, T, sizeof lm->T);
    lm->pass = *pass;
    lm->mean_cost = cost;
    lm->fitness = r->fitness, lm->rmse = r->rmse, lm->pairs = r->pairs;
    return 0;
}

/* Back to the accepted pass: its transform and what it reported. */
static void lm_restore(const lm_memory *lm, double T[16], ptreg_icp_result *r)
{
    memcpy(T, lm->T, 16 * sizeof(double));
    r->fitness = lm->fitness, r->rmse = lm->rmse, r->pairs = lm->pairs;
}

ptreg_status icp_iterate(icp_correspond_fn correspond_pass, void *ctx, size_t n, const ptreg_icp_options *opt,
                         double tol, ptreg_icp_result *r, ptreg_error *err)
{
    double *T = r->transformation;
    memcpy(T, opt->init, 16 * sizeof(double));
    int small = 0;
    lm_memory lm = {.on = opt->lm_lambda > 0.0, .lambda = opt->lm_lambda};
    for (int k = 0;; k++) {
        icp_pass pass;
        ptreg_status st = correspond_pass(ctx, T, k, &pass, r->walk ? &r->walk[k] : NULL, err);
        if (st)
            return st;
        const double last_fitness = r->fitness, last_rmse = r->rmse;
        double mse = pass.used ? pass.sum_r2 / (double)pass.used : 0.0;
        r->mse[k] = mse;
        r->iterations = k;
        r->pairs = pass.used;
        r->rmse = sqrt(mse);
        r->fitness = (double)pass.used / (double)n;
        if (opt->progress.fn)
            opt->progress.fn(opt->progress.ctx, k, opt->max_iter, mse);
        const icp_pass *from = &pass;
        if (lm_rejects(&lm, &pass, T, r)) {
            lm_restore(&lm, T, r);
            if (k == opt->max_iter || lm.lambda > LM_LAMBDA_MAX) {
                r->stop_reason = k == opt->max_iter ? PTREG_STOP_MAX_ITERATIONS : PTREG_STOP_CONVERGED;
                r->converged = r->stop_reason == PTREG_STOP_CONVERGED;
                return PTREG_OK;
            }
            from = &lm.pass;
        } else {
            const int stop = stop_after_pass(opt, tol, r, k, last_fitness, last_rmse, small);
            if (stop >= 0) {
                r->stop_reason = (ptreg_stop_reason)stop;
                r->converged = stop == PTREG_STOP_CONVERGED || stop == PTREG_STOP_RELATIVE_CHANGE ||
                               stop == PTREG_STOP_SMALL_STEP;
                return PTREG_OK;
            }
        }
        double dT[16];
        int fixed;
        if ((st = step_of(opt, from, lm.lambda, dT, &fixed, err)))
            return st;
        if (!fixed) {
            r->stop_reason = PTREG_STOP_DEGENERATE;
            return PTREG_OK;
        }
        ptreg_transform_mul(dT, T, T);
        /* one more pass measures the pairs at the final transform */
        small = opt->transformation_epsilon > 0.0 && small_step(dT, opt->transformation_epsilon);
    }
}

ptreg_status icp_result_alloc(ptreg_icp_result *r, int max_iter, int walks, ptreg_error *err)
{
    r->mse = malloc(((size_t)max_iter + 1) * sizeof(double));
    if (walks)
        r->walk = calloc((size_t)max_iter + 1, sizeof *r->walk);
    if (!r->mse || (walks && !r->walk))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    return PTREG_OK;
}

double icp_tolerance(const ptreg_icp_options *opt, double diag2) { return opt->tol < 0.0 ? 1e-10 * diag2 : opt->tol; }

/* (icp_impl.h) */
ptreg_status icp_cloud_normals(const float *xyz, size_t n, const ptreg_kdtree *tree, const float *given,
                               const ptreg_icp_options *opt, const float **normals, float **owned, ptreg_icp_result *r,
                               ptreg_error *err)
{
    *normals = given;
    *owned = NULL;
    if (given)
        return PTREG_OK;
    if (!(*owned = malloc(3 * n * sizeof(float))))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu normals", n);
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){(size_t)opt->normal_k, opt->normal_radius};
    double tb = ptreg_time_ms();
    ptreg_status st = tree ? feat_normals_on_tree(tree, xyz, n, &no, *owned, NULL, NULL, err)
                           : ptreg_normals(xyz, n, &no, *owned, NULL, NULL, err);
    r->build_ms += ptreg_time_ms() - tb;
    *normals = *owned;
    return st;
}

static void gather_rows(const float *in, const uint32_t *order, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++)
        memcpy(out + 3 * i, in + 3 * (size_t)order[i], 3 * sizeof(float));
}

/* (icp_impl.h) In Morton order, consecutive queries land near each other
 * in the model, so the rows of the Delaunay graph (tens of MB) and the
 * tree's leaves they read stay in cache: the 40k/30k walks get 12-15%
 * faster (bench/NOTES.md). Every method and thread count sees the same
 * order, so they still agree to the bit. */
ptreg_status icp_sort_source(const float *source, size_t n, const ptreg_icp_options *opt, int with_normals,
                             icp_sorted_source *out, ptreg_icp_result *r, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    out->xyz = malloc(3 * n * sizeof(float));
    out->order = malloc(n * sizeof(uint32_t));
    if (!out->xyz || !out->order || ptreg_morton_order(source, n, out->order))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    gather_rows(source, out->order, n, out->xyz);
    if (!with_normals)
        return PTREG_OK;
    const float *normals;
    float *owned;
    ptreg_status st = icp_cloud_normals(source, n, NULL, opt->source_normals, opt, &normals, &owned, r, err);
    if (!st && !(out->normals = malloc(3 * n * sizeof(float))))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu normals", n);
    if (!st)
        gather_rows(normals, out->order, n, out->normals);
    free(owned);
    return st;
}

void icp_sorted_source_free(icp_sorted_source *s)
{
    free(s->xyz), free(s->order), free(s->normals);
    memset(s, 0, sizeof *s);
}

/* (icp_impl.h) The engine's part is its set-up and its passes; the rest of
 * a registration, for every engine, is here. */
ptreg_status icp_run(ptreg_icp_model *m, const float *source, size_t n, const ptreg_icp_options *opt_in, double t0,
                     ptreg_icp_result *r, ptreg_error *err)
{
    const icp_engine *e = m->engine;
    ptreg_icp_options opt = *opt_in;
    if (!opt.target_normals)
        opt.target_normals = m->normals;
    icp_setup s = {m, source, n, &opt, PTREG_NN_AUTO, INFINITY, ptreg_icp_uses_gauss_newton(&opt)};
    if (opt.max_dist > 0.0)
        s.max_d2 = (float)(opt.max_dist * opt.max_dist);
    r->device = m->device;
    s.nn = r->nn = icp_choose_nn(&opt, n, m->index, e->measured_nn, r);
    void *ctx = NULL;
    ptreg_status st = icp_result_alloc(r, opt.max_iter, ptreg_nn_method_is_delaunay(s.nn), err);
    st = st ? st : e->begin(&s, &ctx, r, err);
    st = st ? st : icp_iterate(e->correspond, ctx, n, &opt, icp_tolerance(&opt, m->diag2), r, err);
    if (ctx)
        e->end(ctx);
    if (st) {
        ptreg_icp_result_free(r);
        return st;
    }
    r->time_ms = ptreg_time_ms() - t0;
    return PTREG_OK;
}
