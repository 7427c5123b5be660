/* Coherent Point Drift (Myronenko & Song 2010): EM over a Gaussian mixture
 * centred at the moved source points with a uniform outlier term. The
 * E-step is two Gauss transforms (each target point's normaliser, then the
 * posterior's sums per centroid); the M-steps are closed forms of the
 * sums (rigid, similarity, affine) or a matrix-free linear solve
 * (deformable, cpd_deformable.c). Formulas and their correspondence with
 * the paper's Figures 2-4: docs/ALGORITHMS.md, "Coherent Point Drift". */
#include "ptreg/cpd.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/numeric.h"
#include "core/options_table.h"
#include "device/engine.h"
#include "pair/pair_engine.h"
#include "reg/cpd/cpd_impl.h"

/* Column tiles small enough that a far tile is skipped as a whole. */
#define CPD_COL_TILE 256
/* A sigma^2 that comes out 0 or below (an exact fit, rounding) is set to
 * this share of the first one, so that the next E-step can divide by it
 * (pycpd sets tol / 10). */
#define CPD_SIGMA2_FLOOR 1e-12

static const ptreg_option_name transform_names[] = {{"rigid", PTREG_CPD_RIGID},
                                                    {"similarity", PTREG_CPD_SIMILARITY},
                                                    {"affine", PTREG_CPD_AFFINE},
                                                    {"deformable", PTREG_CPD_DEFORMABLE},
                                                    {NULL, 0}};
static const ptreg_option_name precision_names[] = {
    {"fp32", PTREG_PRECISION_FP32}, {"fp64", PTREG_PRECISION_FP64}, {NULL, 0}};
OPTION_ENUM_IS_INT(ptreg_cpd_options, transform);
OPTION_ENUM_IS_INT(ptreg_cpd_options, precision);

static const ptreg_option cpd_rows[] = {
    OPTION_ENUM(ptreg_cpd_options, transform, "transform", NULL, transform_names, 0,
                "rigid, similarity (rigid and a scale), affine, or deformable (a smooth displacement field)"),
    OPTION_FIELD(ptreg_cpd_options, w, NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_HI, "W",
                 "the outliers' share of the mixture, in [0, 1)"),
    OPTION_FIELD(ptreg_cpd_options, beta, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO, "B",
                 "deformable: the field's Gaussian width, in the clouds' units"),
    OPTION_FIELD(ptreg_cpd_options, lambda, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO, "L",
                 "deformable: the field's smoothness weight (pycpd's alpha)"),
    OPTION_FIELD(ptreg_cpd_options, max_iter, NULL, INT, 0, INT_MAX, 0, "N", "most EM iterations"),
    OPTION_FIELD(ptreg_cpd_options, tol, NULL, DOUBLE, 0, DBL_MAX, 0, "T",
                 "stop when the objective changes by less than T (relative); 0: every iteration runs"),
    OPTION_FIELD(ptreg_cpd_options, sigma2, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "S",
                 "the first sigma^2; default sum |x - y|^2 / (3 M N) over every pair"),
    OPTION_FIELD(ptreg_cpd_options, low_rank, NULL, INT, 0, PTREG_CPD_MAX_LOW_RANK, 0, "K",
                 "deformable: replace G by its top K eigenpairs (the paper's fast variant); 0: G itself"),
    OPTION_FIELD(ptreg_cpd_options, precondition_rank, NULL, INT, 0, PTREG_CPD_MAX_LOW_RANK, 0, "K",
                 "deformable: precondition the solve with G's top K eigenpairs; 0: its diagonal"),
    OPTION_FIELD(ptreg_cpd_options, cg_iter, NULL, INT, 1, INT_MAX, 0, "N",
                 "deformable: conjugate-gradient steps per M-step"),
    OPTION_FIELD(ptreg_cpd_options, cg_tol, NULL, DOUBLE, 0, 1, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "E",
                 "deformable: the solve's relative residual; default 1e-10 in fp64, 1e-6 in fp32"),
    OPTION_ENUM(ptreg_cpd_options, precision, "precision", NULL, precision_names, 0,
                "fp32: float32 pair terms, float64 sums; fp64: the reference")};
OPTION_TABLE(ptreg_cpd_option_table, "cpd", ptreg_cpd_options, ptreg_cpd_options_default, cpd_rows)

const char *cpd_transform_name(int value)
{
    const char *name = option_name_of(transform_names, value);
    return name ? name : "unknown";
}

void ptreg_cpd_options_default(ptreg_cpd_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->transform = PTREG_CPD_RIGID;
    opt->w = 0.0;
    opt->beta = 2.0;
    opt->lambda = 2.0;
    opt->max_iter = 100;
    opt->tol = 1e-5;
    opt->sigma2 = 0.0;
    opt->precondition_rank = 50;
    opt->cg_iter = 500;
    opt->cg_tol = 0.0;
    opt->precision = PTREG_PRECISION_FP32;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

static const engine *const cpd_engines[] = {&engine_cpu};


/* ---- the run's state ------------------------------------------------------------- */

typedef struct cpd_state {
    cpd_run run;
    uint32_t *yorder, *xorder; /* working point i is the caller's point order[i] */
    double shift[3];           /* working frame = caller's frame - shift */
    double *ones, *inv_den, *moments, *ty_before;
} cpd_state;

static void state_free(cpd_state *s)
{
    cpd_run *r = &s->run;
    void *owned[] = {r->y, r->x,  r->ty,     r->p1,     r->pt1,  r->px,      r->w,       r->gw,
                     r->d, r->e2, s->yorder, s->xorder, s->ones, s->inv_den, s->moments, s->ty_before};
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++)
        free(owned[k]);
    cpd_eigen_free(&r->eig);
}

static ptreg_status check_cloud(const char *what, const float *p, size_t count, ptreg_error *err)
{
    if (count == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "CPD: the %s has no points", what);
    for (size_t i = 0; i < 3 * count; i++)
        if (!isfinite(p[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "CPD: %s point %zu is not finite", what, i / 3);
    return PTREG_OK;
}

/* The points in Morton order (the Gauss transform's culling wants
 * neighbors together), shifted into the working frame. */
static void working_points(const float *p, size_t count, const uint32_t *order, const double shift[3], double *out)
{
    for (size_t i = 0; i < count; i++)
        for (int k = 0; k < 3; k++)
            out[3 * i + k] = (double)p[3 * (size_t)order[i] + k] - shift[k];
}

static ptreg_status state_init(cpd_state *s, const float *source, size_t m, const float *target, size_t n,
                               const ptreg_cpd_options *opt, ptreg_error *err)
{
    memset(s, 0, sizeof *s);
    cpd_run *r = &s->run;
    r->opt = opt;
    r->m = m;
    r->n = n;
    ptreg_pair_options_default(&r->pair);
    r->pair.precision = opt->precision;
    r->pair.col_tile = CPD_COL_TILE;
    r->pair.row_block = 256;
    r->field = r->pair;
    r->field.precision = PTREG_PRECISION_FP64;
    double **mx3[] = {&r->y, &r->ty, &r->px, &r->d, &r->w, &r->gw, &s->ty_before};
    int ok = 1;
    for (size_t k = 0; k < sizeof mx3 / sizeof mx3[0]; k++)
        ok = (*mx3[k] = calloc(3 * m, sizeof(double))) != NULL && ok;
    r->x = malloc(3 * n * sizeof(double));
    r->p1 = malloc(m * sizeof(double));
    r->pt1 = malloc(n * sizeof(double));
    s->yorder = malloc(m * sizeof(uint32_t));
    s->xorder = malloc(n * sizeof(uint32_t));
    s->ones = malloc(m * sizeof(double));
    s->inv_den = malloc(n * sizeof(double));
    s->moments = malloc(5 * m * sizeof(double));
    r->e2 = malloc(m * sizeof(double));
    ok = ok && r->x && r->p1 && r->pt1 && r->e2 && s->yorder && s->xorder && s->ones && s->inv_den && s->moments;
    if (!ok || ptreg_morton_order(source, m, s->yorder) || ptreg_morton_order(target, n, s->xorder))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %zu and %zu points", m, n);
    ptreg_points_centroid(target, n, s->shift);
    working_points(source, m, s->yorder, s->shift, r->y);
    working_points(target, n, s->xorder, s->shift, r->x);
    memcpy(r->ty, r->y, 3 * m * sizeof(double));
    for (size_t i = 0; i < m; i++)
        s->ones[i] = 1.0;
    return PTREG_OK;
}

/* A width w whose Gauss transform scale 1 / (2 w^2) is a positive float32. */
static int width_usable(double w2) { return 0.5 / w2 > 1e-30 && 0.5 / w2 <= 3.4e38; }

/* The first sigma^2 and beta as the Gauss transform takes them. */
static ptreg_status check_widths(const ptreg_cpd_options *opt, double sigma2, ptreg_error *err)
{
    if (!width_usable(sigma2))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "CPD: sigma2 %g is too %s for the Gauss transform (1 / (2 sigma2) must be in "
                               "[1e-30, 3.4e38])",
                               sigma2, 0.5 / sigma2 > 1 ? "small" : "large");
    if (opt->transform == PTREG_CPD_DEFORMABLE && !width_usable(opt->beta * opt->beta))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "CPD: beta %g is too %s for the Gauss transform (1 / (2 beta^2) must be in "
                               "[1e-30, 3.4e38])",
                               opt->beta, opt->beta < 1 ? "small" : "large");
    return PTREG_OK;
}

/* sum over every pair |x_n - y_m|^2 / (3 M N), from the clouds' sums. */
static double initial_sigma2(const cpd_run *r)
{
    double sx[3] = {0, 0, 0}, sy[3] = {0, 0, 0}, xx = 0.0, yy = 0.0;
    for (size_t i = 0; i < r->n; i++)
        for (int k = 0; k < 3; k++)
            sx[k] += r->x[3 * i + k], xx += r->x[3 * i + k] * r->x[3 * i + k];
    for (size_t i = 0; i < r->m; i++)
        for (int k = 0; k < 3; k++)
            sy[k] += r->y[3 * i + k], yy += r->y[3 * i + k] * r->y[3 * i + k];
    const double m = (double)r->m, n = (double)r->n;
    const double cross = sx[0] * sy[0] + sx[1] * sy[1] + sx[2] * sy[2];
    return (m * xx + n * yy - 2.0 * cross) / (3.0 * m * n);
}

/* ---- the E-step ------------------------------------------------------------------ */

/* P_mn = e_mn / (max(sum_k e_kn, eps) + c), e_mn = exp(-|x_n - ty_m|^2 /
 * (2 sigma^2)), c = (2 pi sigma^2)^(3/2) w / (1 - w) M / N; eps the
 * float64 epsilon, as pycpd clips it. Per centroid, the posterior's
 * moments about it: P1_m = sum_n P_mn, D_m = sum_n P_mn (ty_m - x_n), and
 * E2_m = sum_n P_mn |ty_m - x_n|^2 (small numbers, so that float32 sums
 * keep the fit's digits: the fit is far smaller than sum P |x|^2). */
static ptreg_status estep(cpd_state *s, ptreg_error *err)
{
    cpd_run *r = &s->run;
    const double scale = 0.5 / r->sigma2;
    ptreg_status st = cpd_gauss(r, &r->pair, r->x, r->n, r->ty, r->m, s->ones, 1, scale, r->pt1, err);
    if (st)
        return st;
    const double w = r->opt->w;
    const double c = w > 0 ? pow(2.0 * 3.14159265358979323846 * r->sigma2, 1.5) * w / (1.0 - w) * (double)r->m /
                                 (double)r->n
                           : 0.0;
    for (size_t i = 0; i < r->n; i++) {
        const double sum = r->pt1[i];
        s->inv_den[i] = 1.0 / ((sum > DBL_EPSILON ? sum : DBL_EPSILON) + c);
        r->pt1[i] = sum * s->inv_den[i];
    }
    st = cpd_gauss(r, &r->pair, r->ty, r->m, r->x, r->n, s->inv_den, PTREG_PAIR_MOMENTS, scale, s->moments, err);
    if (st)
        return st;
    r->np = 0.0;
    for (size_t i = 0; i < r->m; i++) {
        const double *mo = s->moments + 5 * i;
        r->p1[i] = mo[0];
        for (int k = 0; k < 3; k++) {
            r->d[3 * i + k] = mo[1 + k];
            r->px[3 * i + k] = mo[0] * r->ty[3 * i + k] - mo[1 + k];
        }
        r->e2[i] = mo[4];
        r->np += r->p1[i];
    }
    if (!(r->np > 0.0))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                               "CPD: no source point has weight at sigma^2 %g (the clouds are too far apart; give "
                               "a larger sigma2)",
                               r->sigma2);
    return PTREG_OK;
}

/* sum P |x - ty'|^2 for the centroids moved from ty (the E-step's) to ty':
 * with delta = ty' - ty, sum_m E2_m + 2 delta_m . D_m + P1_m |delta_m|^2. */
static double fit_after_move(const cpd_run *r, const double *ty_before)
{
    double fit = 0.0;
    for (size_t i = 0; i < r->m; i++) {
        double f = r->e2[i];
        for (int k = 0; k < 3; k++) {
            const double delta = r->ty[3 * i + k] - ty_before[3 * i + k];
            f += 2.0 * delta * r->d[3 * i + k] + r->p1[i] * delta * delta;
        }
        fit += f;
    }
    return fit;
}

/* ---- the M-steps ----------------------------------------------------------------- */

/* The posterior's weighted means and cross-covariance: muX = PX^T 1 / Np,
 * muY = Y^T P1 / Np, A = sum_m (PX_m - P1_m muX)(y_m - muY)^T (row-major,
 * x's axes down), YPY = sum_m P1_m (y_m - muY)(y_m - muY)^T. */
typedef struct moments {
    double mux[3], muy[3], A[9], ypy[9];
} moments;

static void posterior_moments(const cpd_run *r, moments *mo)
{
    memset(mo, 0, sizeof *mo);
    for (size_t i = 0; i < r->m; i++)
        for (int k = 0; k < 3; k++) {
            mo->mux[k] += r->px[3 * i + k];
            mo->muy[k] += r->p1[i] * r->y[3 * i + k];
        }
    for (int k = 0; k < 3; k++)
        mo->mux[k] /= r->np, mo->muy[k] /= r->np;
    for (size_t i = 0; i < r->m; i++) {
        double a[3], b[3];
        for (int k = 0; k < 3; k++) {
            a[k] = r->px[3 * i + k] - r->p1[i] * mo->mux[k];
            b[k] = r->y[3 * i + k] - mo->muy[k];
        }
        for (int u = 0; u < 3; u++)
            for (int v = 0; v < 3; v++) {
                mo->A[3 * u + v] += a[u] * b[v];
                mo->ypy[3 * u + v] += r->p1[i] * b[u] * b[v];
            }
    }
}

/* The 3 x 3 linear part L and translation t of the working frame's map:
 * ty = L y + t for every centroid. */
static void move_centroids(cpd_run *r, const double L[9], const double t[3])
{
    for (size_t i = 0; i < r->m; i++)
        for (int u = 0; u < 3; u++)
            r->ty[3 * i + u] = L[3 * u] * r->y[3 * i] + L[3 * u + 1] * r->y[3 * i + 1] +
                               L[3 * u + 2] * r->y[3 * i + 2] + t[u];
}

static void translation_of(const moments *mo, const double L[9], double t[3])
{
    for (int u = 0; u < 3; u++)
        t[u] = mo->mux[u] - (L[3 * u] * mo->muy[0] + L[3 * u + 1] * mo->muy[1] + L[3 * u + 2] * mo->muy[2]);
}

/* Rigid and similarity (the paper's Figure 2): R maximises tr(R^T A)
 * (Horn's method on A, as the SVD's U diag(1, 1, det(U V^T)) V^T does),
 * s = tr(R^T A) / tr(YPY). */
static ptreg_status rigid_step(cpd_run *r, double L[9], double t[3], double *scale, ptreg_error *err)
{
    moments mo;
    posterior_moments(r, &mo);
    ptreg_moments hm;
    ptreg_moments_init(&hm, NULL, NULL);
    hm.w = r->np;
    for (int u = 0; u < 3; u++)
        for (int v = 0; v < 3; v++)
            hm.spq[3 * v + u] = mo.A[3 * u + v]; /* Horn's pairs run y -> x: its S is A^T */
    double T[16];
    ptreg_status st = ptreg_horn_solve(&hm, T, NULL, err);
    if (st)
        return st;
    double R[9], tr_ar = 0.0;
    for (int u = 0; u < 3; u++)
        for (int v = 0; v < 3; v++) {
            R[3 * u + v] = T[4 * u + v];
            tr_ar += R[3 * u + v] * mo.A[3 * u + v];
        }
    const double ypy = mo.ypy[0] + mo.ypy[4] + mo.ypy[8];
    *scale = r->opt->transform == PTREG_CPD_SIMILARITY && ypy > 0 ? tr_ar / ypy : 1.0;
    for (int k = 0; k < 9; k++)
        L[k] = *scale * R[k];
    translation_of(&mo, L, t);
    return PTREG_OK;
}

/* Affine (the paper's Figure 3): B = A YPY^-1. */
static ptreg_status affine_step(cpd_run *r, double L[9], double t[3], ptreg_error *err)
{
    moments mo;
    posterior_moments(r, &mo);
    const double *Y = mo.ypy;
    const double cof[9] = {Y[4] * Y[8] - Y[5] * Y[7], Y[2] * Y[7] - Y[1] * Y[8], Y[1] * Y[5] - Y[2] * Y[4],
                           Y[5] * Y[6] - Y[3] * Y[8], Y[0] * Y[8] - Y[2] * Y[6], Y[2] * Y[3] - Y[0] * Y[5],
                           Y[3] * Y[7] - Y[4] * Y[6], Y[1] * Y[6] - Y[0] * Y[7], Y[0] * Y[4] - Y[1] * Y[3]};
    const double det = Y[0] * cof[0] + Y[1] * cof[3] + Y[2] * cof[6];
    const double size = Y[0] + Y[4] + Y[8];
    if (!(fabs(det) > 1e-12 * size * size * size))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                               "CPD: the matched source points are flat or collinear: no unique affine map");
    for (int u = 0; u < 3; u++)
        for (int v = 0; v < 3; v++) {
            double sum = 0.0;
            for (int k = 0; k < 3; k++)
                sum += mo.A[3 * u + k] * cof[3 * k + v];
            L[3 * u + v] = sum / det;
        }
    translation_of(&mo, L, t);
    return PTREG_OK;
}

/* Deformable (the paper's Figure 4): the field's solve, which moves the
 * centroids. *penalty: lambda / 2 tr(W^T G W). */
static ptreg_status deformable_step(cpd_run *r, double *penalty, ptreg_error *err)
{
    ptreg_status st = cpd_deformable_step(r, err);
    if (st)
        return st;
    double wgw = 0.0;
    for (size_t k = 0; k < 3 * r->m; k++)
        wgw += r->w[k] * r->gw[k];
    *penalty = 0.5 * r->opt->lambda * wgw;
    return PTREG_OK;
}

/* ---- the loop -------------------------------------------------------------------- */

/* One EM iteration: the E-step at sigma^2, the M-step, then the new
 * sigma^2 = sum P |x - ty'|^2 / (3 Np) over the moved centroids: the
 * paper's closed forms (Figures 2-4) at the M-step's optimum, where
 * similarity's s tr(YPY) = tr(A^T R) and affine's tr(B YPY B^T) =
 * tr(A^T B). With s = 1 held (rigid) it is the whole fit; pycpd and the
 * paper's code use xPx - tr(A^T R) there too, which undershoots when the
 * source is the larger (docs/ALGORITHMS.md). *objective: the bound at
 * the E-step's sigma^2, the paper's Q. */
static ptreg_status iterate(cpd_state *s, double L[9], double t[3], double *scale, double *objective, ptreg_error *err)
{
    cpd_run *r = &s->run;
    ptreg_status st = estep(s, err);
    if (st)
        return st;
    memcpy(s->ty_before, r->ty, 3 * r->m * sizeof(double));
    double penalty = 0.0;
    switch (r->opt->transform) {
    case PTREG_CPD_AFFINE: st = affine_step(r, L, t, err); break;
    case PTREG_CPD_DEFORMABLE: st = deformable_step(r, &penalty, err); break;
    default: st = rigid_step(r, L, t, scale, err); break;
    }
    if (st)
        return st;
    if (r->opt->transform != PTREG_CPD_DEFORMABLE)
        move_centroids(r, L, t);
    const double fit = fit_after_move(r, s->ty_before);
    *objective = fit / (2.0 * r->sigma2) + 1.5 * r->np * log(r->sigma2) + penalty;
    const double sigma2 = fit / (3.0 * r->np), floor = CPD_SIGMA2_FLOOR * r->sigma2_init;
    /* (and never below what the Gauss transform's scale takes) */
    r->sigma2 = sigma2 > 0 && width_usable(sigma2) ? sigma2 : floor > 1.5e-39 ? floor : 1.5e-39;
    return PTREG_OK;
}

static ptreg_status run_loop(cpd_state *s, double L[9], double t[3], ptreg_cpd_result *res, ptreg_error *err)
{
    cpd_run *r = &s->run;
    const ptreg_cpd_options *opt = r->opt;
    double previous = INFINITY;
    res->stop_reason = PTREG_STOP_MAX_ITERATIONS;
    for (int it = 0; it < opt->max_iter; it++) {
        double objective;
        ptreg_status st = iterate(s, L, t, &res->scale, &objective, err);
        if (st)
            return st;
        res->iterations = it + 1;
        res->objective = objective;
        if (opt->progress.fn)
            opt->progress.fn(opt->progress.ctx, it + 1, opt->max_iter, objective);
        const double change = fabs(objective - previous) / fabs(objective);
        previous = objective;
        if (opt->tol > 0 && change < opt->tol) {
            res->converged = 1;
            res->stop_reason = PTREG_STOP_CONVERGED;
            break;
        }
    }
    return PTREG_OK;
}

/* ---- the result ------------------------------------------------------------------ */

/* The working frame's ty = L y + t in the caller's frame: x = L y + (t + c - L c). */
static void caller_transformation(const double L[9], const double t[3], const double c[3], double T[16])
{
    ptreg_transform_identity(T);
    for (int u = 0; u < 3; u++) {
        double lc = 0.0;
        for (int v = 0; v < 3; v++) {
            T[4 * u + v] = L[3 * u + v];
            lc += L[3 * u + v] * c[v];
        }
        T[4 * u + 3] = t[u] + c[u] - lc;
    }
}

static ptreg_status fill_result(const cpd_state *s, const double L[9], const double t[3], ptreg_cpd_result *res,
                                ptreg_error *err)
{
    const cpd_run *r = &s->run;
    const size_t m = r->m;
    res->m = m;
    res->moved = malloc(3 * m * sizeof(float));
    const int field = r->opt->transform == PTREG_CPD_DEFORMABLE;
    if (field) {
        res->centres = malloc(3 * m * sizeof(double));
        res->coefficients = malloc(3 * m * sizeof(double));
    }
    if (!res->moved || (field && (!res->centres || !res->coefficients)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %zu points", m);
    for (size_t i = 0; i < m; i++) {
        const size_t at = s->yorder[i];
        for (int k = 0; k < 3; k++) {
            res->moved[3 * at + k] = ptreg_double_to_float(r->ty[3 * i + k] + s->shift[k]);
            if (field) {
                res->centres[3 * at + k] = r->y[3 * i + k] + s->shift[k];
                res->coefficients[3 * at + k] = r->w[3 * i + k];
            }
        }
    }
    if (field)
        ptreg_transform_identity(res->transformation);
    else
        caller_transformation(L, t, s->shift, res->transformation);
    res->beta = r->opt->beta;
    res->sigma2 = r->sigma2;
    res->np = r->np;
    res->cg_iterations = r->cg_iterations;
    res->pair_ms = r->pair_ms;
    res->pair_terms = r->pair_terms;
    res->culled = r->cull.sweeps > 0 ? r->cull.skipped / r->cull.sweeps : 0.0;
    return PTREG_OK;
}

void ptreg_cpd_result_free(ptreg_cpd_result *res)
{
    if (!res)
        return;
    free(res->moved);
    free(res->centres);
    free(res->coefficients);
    res->moved = NULL;
    res->centres = res->coefficients = NULL;
}

ptreg_status ptreg_cpd(const float *source, size_t m, const float *target, size_t n, const ptreg_cpd_options *opt,
                       ptreg_cpd_result *res, ptreg_error *err)
{
    memset(res, 0, sizeof *res);
    ptreg_cpd_options defaults;
    if (!opt) {
        ptreg_cpd_options_default(&defaults);
        opt = &defaults;
    }
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_options_check(ptreg_cpd_option_table(), opt, err);
    if (!st)
        st = check_cloud("source", source, m, err);
    if (!st)
        st = check_cloud("target", target, n, err);
    if (!st)
        st = engine_choose(cpd_engines, 1, &opt->device, opt, "cpd", &res->device, NULL, err);
    if (st)
        return st;
    res->transform = opt->transform;
    res->precision = opt->precision;
    res->scale = 1.0;
    res->isa = isa_level_name(cpu_isa_level());
    cpd_state s;
    st = state_init(&s, source, m, target, n, opt, err);
    double L[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, t[3] = {0, 0, 0};
    if (!st) {
        s.run.sigma2 = opt->sigma2 > 0 ? opt->sigma2 : initial_sigma2(&s.run);
        s.run.sigma2_init = s.run.sigma2;
        res->sigma2_init = s.run.sigma2;
        if (!(s.run.sigma2 > 0) || !isfinite(s.run.sigma2))
            st = ptreg_error_set(err, PTREG_ERR_ARG,
                                 "CPD: the clouds are one point each, at the same place: give sigma2");
        else
            st = check_widths(opt, s.run.sigma2, err);
    }
    if (!st)
        st = run_loop(&s, L, t, res, err);
    if (!st)
        st = fill_result(&s, L, t, res, err);
    state_free(&s);
    if (st) {
        ptreg_cpd_result_free(res);
        return st;
    }
    res->time_ms = ptreg_time_ms() - t0;
    res->gpts = res->time_ms > 0 ? res->pair_terms / res->time_ms / 1e6 : 0.0;
    return PTREG_OK;
}

/* ---- moving other points --------------------------------------------------------- */

ptreg_status ptreg_cpd_warp(const ptreg_cpd_result *res, const float *points, size_t k, float *out, ptreg_error *err)
{
    if (k == 0)
        return PTREG_OK;
    for (size_t i = 0; i < 3 * k; i++)
        if (!isfinite(points[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "CPD warp: point %zu is not finite", i / 3);
    if (res->transform != PTREG_CPD_DEFORMABLE) {
        ptreg_transform_points(res->transformation, points, out, k);
        return PTREG_OK;
    }
    if (!res->centres || !res->coefficients || !(res->beta > 0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "CPD warp: the result holds no field");
    double *rows = malloc(3 * k * sizeof(double)), *v = malloc(3 * k * sizeof(double));
    ptreg_status st = PTREG_OK;
    if (!rows || !v)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD warp: out of memory for %zu points", k);
    if (!st) {
        for (size_t i = 0; i < 3 * k; i++)
            rows[i] = points[i];
        ptreg_pair_options pair; /* float64, as the run's field */
        ptreg_pair_options_default(&pair);
        pair.precision = PTREG_PRECISION_FP64;
        st = ptreg_pair_gauss_transform(rows, k, res->centres, res->m, res->coefficients, 3,
                                        0.5 / (res->beta * res->beta), &pair, v, NULL, err);
    }
    for (size_t i = 0; !st && i < 3 * k; i++)
        out[i] = ptreg_double_to_float(rows[i] + v[i]);
    free(rows);
    free(v);
    return st;
}
