/* LDDMM landmark matching by geodesic shooting (Miller, Trouvé, Younes;
 * the landmark form of Vaillant et al. and Allassonnière et al.). State
 * x = (q, p); with K_ij = exp(-s |q_i - q_j|^2 / 2), s = 1/sigma^2:
 *   H = 1/2 sum_ij K_ij p_i . p_j
 *   dq_i/dt = dH/dp_i = sum_j K_ij p_j
 *   dp_i/dt = -dH/dq_i = s sum_j K_ij (p_i . p_j) (q_i - q_j)
 * integrated by Euler or Ralston's RK2; the gradient of the objective is
 * the exact adjoint of the discrete steps, with the Jacobian-transpose
 * products evaluated pair by pair (src/pair/lddmm_kernels.h), never stored.
 * The pair sums run in float32 tiles with float64 sums (FP32), or in
 * double throughout (FP64, the reference). */
#include "ptreg/lddmm.h"

#include <lbfgs.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/counts.h"
#include "core/options_table.h"
#include "pair/lddmm_kernels.h"
#include "pair/pair_kernels.h"
#include "reg/lddmm/lddmm_impl.h"
#include "pair/pair_engine.h"

#define ROWS_PER_TASK 64 /* a multiple of PTREG_LDDMM_ROW_PAD */
#define COL_TILE 512
#define PARALLEL_MIN_PAIRS 65536.0

static const ptreg_option_name integrator_names[] = {{"euler", PTREG_LDDMM_EULER}, {"rk2", PTREG_LDDMM_RK2}, {NULL, 0}};
static const ptreg_option_name precision_names[] = {
    {"fp32", PTREG_PRECISION_FP32}, {"fp64", PTREG_PRECISION_FP64}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_lddmm_options, integrator);
OPTION_ENUM_IS_INT(ptreg_lddmm_options, precision);
static const ptreg_option lddmm_rows[] = {
    OPTION_FIELD(ptreg_lddmm_options, sigma, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO, "S",
                 "kernel width: K = exp(-|x - y|^2 / (2 S^2))"),
    OPTION_FIELD(ptreg_lddmm_options, time_points, "steps", INT, 2, 100000, 0, "T",
                 "time points over [0, 1], T - 1 steps of 1/(T - 1)"),
    OPTION_FIELD(ptreg_lddmm_options, lambda, NULL, DOUBLE, 0, DBL_MAX, 0, "L",
                 "weight of the data term L/2 sum |q_i(1) - target_i|^2"),
    OPTION_FIELD(ptreg_lddmm_options, gamma, NULL, DOUBLE, 0, DBL_MAX, 0, "G", "weight of the energy term G H(q0, p0)"),
    OPTION_FIELD(ptreg_lddmm_options, max_iter, NULL, INT, 0, 1000000, 0, "I", "L-BFGS iterations"),
    OPTION_FIELD(ptreg_lddmm_options, gtol, NULL, DOUBLE, 0, DBL_MAX, 0, "E", "stop when |gradient| < E max(1, |p0|)"),
    OPTION_FIELD(ptreg_lddmm_options, ftol, NULL, DOUBLE, 0, DBL_MAX, 0, "E",
                 "stop when the objective fell by less than E (relative) over 10 iterations"),
    OPTION_ENUM(ptreg_lddmm_options, integrator, "integrator", NULL, integrator_names, 0,
                "time steps: euler, or rk2 (Ralston)"),
    OPTION_ENUM(ptreg_lddmm_options, precision, "precision", NULL, precision_names, 0,
                "fp32: float32 pair terms, float64 sums; fp64: the reference")};
OPTION_TABLE(ptreg_lddmm_option_table, "lddmm", ptreg_lddmm_options, ptreg_lddmm_options_default, lddmm_rows)

void ptreg_lddmm_options_default(ptreg_lddmm_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->sigma = 1.0;
    opt->time_points = 20;
    opt->lambda = 1000.0;
    opt->gamma = 1.0;
    opt->max_iter = 400;
    opt->init = PTREG_LDDMM_INIT_SCALED;
    opt->gtol = 1e-6;
    opt->ftol = 1e-10;
    opt->integrator = PTREG_LDDMM_EULER;
    opt->precision = PTREG_PRECISION_FP32;
    ptreg_pair_gpu_default(&opt->gpu);
}

void ptreg_lddmm_options_mtl(ptreg_lddmm_options *opt)
{
    ptreg_lddmm_options_default(opt);
    opt->sigma = 1.5;
    opt->time_points = 40;
    opt->max_iter = 400;
    opt->lambda = 500000.0;
    opt->gamma = 1.0;
}

/* ---- the pair sums ---------------------------------------------------------- */

/* Everything one shooting needs: sizes, constants, the float32 packing and
 * the per-row outputs. */
typedef struct lddmm_ctx {
    size_t n, npad;
    double s, h;
    int steps;
    const ptreg_lddmm_options *opt;
    float *pack; /* 12 * npad floats: q, p, a, b side by side */
    double *out; /* 15 * npad doubles */
    double pair_terms;
} lddmm_ctx;

typedef void (*block_fn)(const lddmm_block *b);

static size_t padded(size_t n) { return (n + PTREG_LDDMM_ROW_PAD - 1) / PTREG_LDDMM_ROW_PAD * PTREG_LDDMM_ROW_PAD; }

/* Packs count n x 3 double arrays (NULL: zeros) side by side as float32,
 * padding rows 0, into dst (3 * count * padded(n) floats). */
static lddmm_points pack_points(float *dst, size_t n, const double *const src[], int count)
{
    lddmm_points pts = {{NULL}, {NULL}, {NULL}, {NULL}, n};
    const float **fields[4] = {pts.q, pts.p, pts.a, pts.b};
    size_t np = padded(n);
    for (int f = 0; f < count; f++)
        for (int k = 0; k < 3; k++) {
            float *col = dst + (size_t)(3 * f + k) * np;
            for (size_t i = 0; i < np; i++)
                col[i] = i < n && src[f] ? (float)src[f][3 * i + (size_t)k] : 0.0f;
            fields[f][k] = col;
        }
    return pts;
}

/* Runs the kernel over row tasks in parallel; output o of row i lands in
 * out[o * padded(rows->n) + i]. */
static void run_blocks(const lddmm_ctx *c, block_fn kernel, const lddmm_points *rows, const lddmm_points *cols,
                       double *out, int outputs)
{
    size_t np = padded(rows->n);
    long tasks = (long)((rows->n + ROWS_PER_TASK - 1) / ROWS_PER_TASK);
    /* small problems run on one thread: a parallel region's start and end
     * would cost more than the pairs */
    int parallel = tasks > 1 && (double)rows->n * (double)cols->n >= PARALLEL_MIN_PAIRS;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads()) if (parallel)
    for (long t = 0; t < tasks; t++) {
        size_t r0 = (size_t)t * ROWS_PER_TASK, len = rows->n - r0 < ROWS_PER_TASK ? rows->n - r0 : ROWS_PER_TASK;
        lddmm_block b;
        memset(&b, 0, sizeof b);
        b.rows.n = padded(len);
        for (int k = 0; k < 3; k++) {
            b.rows.q[k] = rows->q[k] + r0;
            b.rows.p[k] = rows->p[k] + r0;
            b.rows.a[k] = rows->a[k] ? rows->a[k] + r0 : NULL;
            b.rows.b[k] = rows->b[k] ? rows->b[k] + r0 : NULL;
        }
        b.cols = *cols;
        b.exp2_factor = pair_exp2_factor(0.5 * c->s);
        b.col_tile = COL_TILE;
        for (int o = 0; o < outputs; o++)
            b.out[o] = out + (size_t)o * np + r0;
        kernel(&b);
    }
}

/* Reference pair sums in double, one row at a time (the FP64 mode). */
static double gauss(const lddmm_ctx *c, const double *x, const double *y, double d[3])
{
    for (int k = 0; k < 3; k++)
        d[k] = x[k] - y[k];
    return exp(-0.5 * c->s * (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
}

static double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static double dot_all(const double *a, const double *b, size_t len)
{
    double s = 0;
    for (size_t i = 0; i < len; i++)
        s += a[i] * b[i];
    return s;
}

static void flow_reference(lddmm_ctx *c, const double *x, const double *xp, size_t nx, const double *q, const double *p,
                           double *v, double *f)
{
    int parallel = (double)nx * (double)c->n >= PARALLEL_MIN_PAIRS;
#pragma omp parallel for schedule(dynamic, 16) num_threads(ptreg_get_num_threads()) if (parallel)
    for (size_t i = 0; i < nx; i++) {
        double sv[3] = {0, 0, 0}, sf[3] = {0, 0, 0}, d[3];
        for (size_t j = 0; j < c->n; j++) {
            double e = gauss(c, x + 3 * i, q + 3 * j, d), ec = xp ? e * dot(xp + 3 * i, p + 3 * j) : 0.0;
            for (int k = 0; k < 3; k++) {
                sv[k] += e * p[3 * j + (size_t)k];
                sf[k] += ec * d[k];
            }
        }
        memcpy(v + 3 * i, sv, sizeof sv);
        if (f)
            memcpy(f + 3 * i, sf, sizeof sf);
    }
}

/* Landmarks: v = sum_j K_ij p_j, f = sum_j K_ij (p_i . p_j) (q_i - q_j). */
static void landmark_sums(lddmm_ctx *c, const double *q, const double *p, double *v, double *f)
{
    c->pair_terms += (double)c->n * (double)c->n;
    if (c->opt->precision == PTREG_PRECISION_FP64) {
        flow_reference(c, q, p, c->n, q, p, v, f);
        return;
    }
    const double *src[2] = {q, p};
    lddmm_points pts = pack_points(c->pack, c->n, src, 2);
    run_blocks(c, lddmm_cpu_kernels()->flow_block, &pts, &pts, c->out, 6);
    for (size_t i = 0; i < c->n; i++)
        for (int k = 0; k < 3; k++) {
            v[3 * i + (size_t)k] = c->out[(size_t)k * c->npad + i];
            f[3 * i + (size_t)k] = c->out[(size_t)(3 + k) * c->npad + i];
        }
}

/* F(q, p) = (dq/dt, dp/dt). */
static void velocity(lddmm_ctx *c, const double *q, const double *p, double *dq, double *dp)
{
    landmark_sums(c, q, p, dq, dp);
    for (size_t i = 0; i < 3 * c->n; i++)
        dp[i] *= c->s;
}

static void adjoint_reference(lddmm_ctx *c, const double *q, const double *p, const double *a, const double *b,
                              double *gq, double *gp)
{
    const double s = c->s;
    int parallel = (double)c->n * (double)c->n >= PARALLEL_MIN_PAIRS;
#pragma omp parallel for schedule(dynamic, 16) num_threads(ptreg_get_num_threads()) if (parallel)
    for (size_t i = 0; i < c->n; i++) {
        double A[3] = {0}, P[3] = {0}, Q1[3] = {0}, Q2[3] = {0}, Q3[3] = {0}, d[3], db[3];
        const double *qi = q + 3 * i, *pi = p + 3 * i, *ai = a + 3 * i, *bi = b + 3 * i;
        for (size_t j = 0; j < c->n; j++) {
            const double *pj = p + 3 * j, *aj = a + 3 * j;
            double e = gauss(c, qi, q + 3 * j, d);
            for (int k = 0; k < 3; k++)
                db[k] = bi[k] - b[3 * j + (size_t)k];
            double t = e * dot(db, d), ec = e * dot(pi, pj), u = e * (dot(ai, pj) + dot(aj, pi));
            for (int k = 0; k < 3; k++) {
                A[k] += e * aj[k];
                P[k] += t * pj[k];
                Q1[k] += u * d[k];
                Q2[k] += ec * db[k];
                Q3[k] += ec * dot(db, d) * d[k];
            }
        }
        for (int k = 0; k < 3; k++) {
            gp[3 * i + (size_t)k] = A[k] + s * P[k];
            gq[3 * i + (size_t)k] = -s * Q1[k] + s * Q2[k] - s * s * Q3[k];
        }
    }
}

/* (gq, gp) = J_F(q, p)^T (a, b): the cotangents of (q, p) given those of
 * (dq/dt, dp/dt). Formulas in lddmm_kernels.h. */
static void adjoint(lddmm_ctx *c, const double *q, const double *p, const double *a, const double *b, double *gq,
                    double *gp)
{
    c->pair_terms += (double)c->n * (double)c->n;
    if (c->opt->precision == PTREG_PRECISION_FP64) {
        adjoint_reference(c, q, p, a, b, gq, gp);
        return;
    }
    const double *src[4] = {q, p, a, b};
    lddmm_points pts = pack_points(c->pack, c->n, src, 4);
    run_blocks(c, lddmm_cpu_kernels()->adjoint_block, &pts, &pts, c->out, 15);
    const double s = c->s;
    for (size_t i = 0; i < c->n; i++)
        for (int k = 0; k < 3; k++) {
            const double *o = c->out + (size_t)k * c->npad + i;
            size_t np = c->npad;
            gp[3 * i + (size_t)k] = o[0] + s * o[3 * np];
            gq[3 * i + (size_t)k] = -s * o[6 * np] + s * o[9 * np] - s * s * o[12 * np];
        }
}

/* v = sum_l K(x_i, q_l) p_l at m points. */
static ptreg_status point_velocity(lddmm_ctx *c, const double *x, size_t m, const double *q, const double *p, double *v,
                                   float *rowpack, double *out)
{
    c->pair_terms += (double)m * (double)c->n;
    if (c->opt->precision == PTREG_PRECISION_FP64) {
        flow_reference(c, x, NULL, m, q, p, v, NULL);
        return PTREG_OK;
    }
    const double *colsrc[2] = {q, p}, *rowsrc[2] = {x, NULL};
    lddmm_points cols = pack_points(c->pack, c->n, colsrc, 2);
    lddmm_points rows = pack_points(rowpack, m, rowsrc, 2);
    run_blocks(c, lddmm_cpu_kernels()->flow_block, &rows, &cols, out, 6);
    size_t np = padded(m);
    for (size_t i = 0; i < m; i++)
        for (int k = 0; k < 3; k++)
            v[3 * i + (size_t)k] = out[(size_t)k * np + i];
    return PTREG_OK;
}

/* ---- shooting and its adjoint ------------------------------------------------ */

static ptreg_status check_options(const ptreg_lddmm_options *o, size_t n, ptreg_error *err)
{
    if (!n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: no landmarks");
    /* liblbfgs takes the 3 n unknowns as an int */
    ptreg_status st = count_check_points("lddmm: landmarks", n, INT_MAX / 3, "L-BFGS's int count of 3 n unknowns", err);
    if (st)
        return st;
    if (o->precision == PTREG_PRECISION_FP16)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "lddmm: precision fp16 is not supported (fp32 or fp64)");
    st = ptreg_options_check(ptreg_lddmm_option_table(), o, err);
    if (st)
        return st;
    if (o->init != PTREG_LDDMM_INIT_SCALED && o->init != PTREG_LDDMM_INIT_DISPLACEMENT &&
        o->init != PTREG_LDDMM_INIT_ZERO)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: unknown initial momentum rule %d", (int)o->init);
    return ptreg_pair_gpu_check(&o->gpu, "lddmm", err);
}

static ptreg_status check_points(const double *v, size_t n, const char *what, ptreg_error *err)
{
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(v[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: %s %zu has a non-finite coordinate", what, i / 3);
    return PTREG_OK;
}

static void ctx_free(lddmm_ctx *c)
{
    free(c->pack);
    free(c->out);
    memset(c, 0, sizeof *c);
}

/* The flow's constants for n landmarks under options already checked,
 * without the buffers (the host's sums in double need none). */
static void ctx_constants(lddmm_ctx *c, size_t n, const ptreg_lddmm_options *opt)
{
    memset(c, 0, sizeof *c);
    c->n = n;
    c->npad = padded(n);
    c->s = 1.0 / (opt->sigma * opt->sigma);
    c->steps = opt->time_points - 1;
    c->h = 1.0 / c->steps;
    c->opt = opt;
}

/* The CPU's context: the constants and the float32 packing's buffers. */
static ptreg_status ctx_init(lddmm_ctx *c, size_t n, const ptreg_lddmm_options *opt, ptreg_error *err)
{
    ctx_constants(c, n, opt);
    c->pack = malloc(12 * c->npad * sizeof *c->pack);
    c->out = malloc(15 * c->npad * sizeof *c->out);
    if (!c->pack || !c->out) {
        ctx_free(c);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for %zu landmarks", n);
    }
    return PTREG_OK;
}

/* dst = a + w * b over len values. */
static void axpy(double *dst, const double *a, double w, const double *b, size_t len)
{
    for (size_t i = 0; i < len; i++)
        dst[i] = a[i] + w * b[i];
}

/* A trajectory: the state x_t = (q_t, p_t) (6n doubles, q first) at every
 * time point, and for RK2 the intermediate state y_t of each step. */
typedef struct trajectory {
    double *x, *y;
    double *k1, *k2; /* scratch: 6n each */
} trajectory;

static void trajectory_free(trajectory *tr)
{
    free(tr->x);
    free(tr->y);
    free(tr->k1);
    free(tr->k2);
    memset(tr, 0, sizeof *tr);
}

static ptreg_status trajectory_alloc(const lddmm_ctx *c, trajectory *tr, ptreg_error *err)
{
    size_t len = 6 * c->n, steps = (size_t)c->steps;
    tr->x = malloc((steps + 1) * len * sizeof *tr->x);
    tr->y = c->opt->integrator == PTREG_LDDMM_RK2 ? malloc(steps * len * sizeof *tr->y) : NULL;
    tr->k1 = malloc(len * sizeof *tr->k1);
    tr->k2 = malloc(len * sizeof *tr->k2);
    if (!tr->x || !tr->k1 || !tr->k2 || (c->opt->integrator == PTREG_LDDMM_RK2 && !tr->y)) {
        trajectory_free(tr);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for a trajectory of %d steps", c->steps);
    }
    return PTREG_OK;
}

static void state_velocity(lddmm_ctx *c, const double *x, double *k) { velocity(c, x, x + 3 * c->n, k, k + 3 * c->n); }

/* Integrates from (q0, p0); v0 (3n, may be NULL) receives dq/dt at t = 0. */
static void shoot(lddmm_ctx *c, const double *q0, const double *p0, trajectory *tr, double *v0)
{
    size_t len = 6 * c->n, n3 = 3 * c->n;
    memcpy(tr->x, q0, n3 * sizeof *q0);
    memcpy(tr->x + n3, p0, n3 * sizeof *p0);
    for (int t = 0; t < c->steps; t++) {
        const double *x = tr->x + (size_t)t * len;
        double *next = tr->x + (size_t)(t + 1) * len;
        state_velocity(c, x, tr->k1);
        if (t == 0 && v0)
            memcpy(v0, tr->k1, n3 * sizeof *v0);
        if (c->opt->integrator == PTREG_LDDMM_EULER) {
            axpy(next, x, c->h, tr->k1, len);
            continue;
        }
        double *y = tr->y + (size_t)t * len;
        axpy(y, x, 2.0 * c->h / 3.0, tr->k1, len);
        state_velocity(c, y, tr->k2);
        for (size_t i = 0; i < len; i++)
            next[i] = x[i] + c->h * (0.25 * tr->k1[i] + 0.75 * tr->k2[i]);
    }
}

/* g = J_F(x)^T cot, with states and cotangents as (q, p) halves. */
static void state_adjoint(lddmm_ctx *c, const double *x, const double *cot, double *g)
{
    size_t n3 = 3 * c->n;
    adjoint(c, x, x + n3, cot, cot + n3, g, g + n3);
}

/* Carries mu, the cotangent of the final state, back to t = 0 through the
 * transposes of the steps. scratch: 3 * 6n doubles. */
static void pull_back(lddmm_ctx *c, const trajectory *tr, double *mu, double *scratch)
{
    size_t len = 6 * c->n;
    double *g = scratch, *w = scratch + len, *cot = scratch + 2 * len;
    const double h = c->h;
    for (int t = c->steps - 1; t >= 0; t--) {
        const double *x = tr->x + (size_t)t * len;
        if (c->opt->integrator == PTREG_LDDMM_EULER) {
            /* x' = x + h F(x): mu <- mu + h J(x)^T mu */
            state_adjoint(c, x, mu, g);
            axpy(mu, mu, h, g, len);
            continue;
        }
        /* x' = x + h (k1/4 + 3 k2/4), k2 = F(y), y = x + 2h/3 k1:
         * w = J(y)^T (3h/4 mu); mu <- mu + w + J(x)^T (h/4 mu + 2h/3 w) */
        for (size_t i = 0; i < len; i++)
            cot[i] = 0.75 * h * mu[i];
        state_adjoint(c, tr->y + (size_t)t * len, cot, w);
        for (size_t i = 0; i < len; i++)
            cot[i] = 0.25 * h * mu[i] + (2.0 * h / 3.0) * w[i];
        state_adjoint(c, x, cot, g);
        for (size_t i = 0; i < len; i++)
            mu[i] += w[i] + g[i];
    }
}

/* f, H and (grad != NULL) the gradient on the CPU, on a context and a
 * trajectory allocated by the caller. */
static void evaluate_cpu(lddmm_ctx *c, trajectory *tr, const double *q0, const double *target, const double *p0,
                         double *f, double *grad, double *hamiltonian, double *scratch)
{
    size_t n3 = 3 * c->n, len = 6 * c->n;
    double *v0 = scratch, *mu = scratch + n3;
    shoot(c, q0, p0, tr, v0);
    double H = 0.5 * dot_all(p0, v0, n3), data = 0;
    const double *q1 = tr->x + (size_t)c->steps * len;
    for (size_t i = 0; i < n3; i++) {
        double r = q1[i] - target[i];
        data += r * r;
        mu[i] = c->opt->lambda * r;
        mu[n3 + i] = 0.0;
    }
    *f = c->opt->gamma * H + 0.5 * c->opt->lambda * data;
    if (hamiltonian)
        *hamiltonian = H;
    if (!grad)
        return;
    pull_back(c, tr, mu, scratch + n3 + len);
    for (size_t i = 0; i < n3; i++)
        grad[i] = c->opt->gamma * v0[i] + mu[n3 + i];
}

/* ---- the CPU's engine (lddmm_impl.h) ----------------------------------------- */

/* The CPU's session: the context, the template, a trajectory and
 * evaluate_cpu's scratch. */
typedef struct cpu_run {
    lddmm_ctx c;
    const double *q0;
    trajectory tr;
    double *scratch; /* 27n doubles: evaluate_cpu's */
} cpu_run;

static void cpu_close(void *run)
{
    cpu_run *r = run;
    if (!r)
        return;
    ctx_free(&r->c);
    trajectory_free(&r->tr);
    free(r->scratch);
    free(r);
}

static ptreg_status cpu_open(const ptreg_device *on, const double *q0, size_t n, const ptreg_lddmm_options *opt,
                             void **run, ptreg_error *err)
{
    (void)on;
    *run = NULL;
    cpu_run *r = calloc(1, sizeof *r);
    if (!r)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for %zu landmarks", n);
    r->q0 = q0;
    ptreg_status st = ctx_init(&r->c, n, opt, err);
    st = st ? st : trajectory_alloc(&r->c, &r->tr, err);
    if (!st && !(r->scratch = malloc(27 * n * sizeof *r->scratch)))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for %zu landmarks", n);
    if (st) {
        cpu_close(r);
        return st;
    }
    *run = r;
    return PTREG_OK;
}

static ptreg_status cpu_evaluate(void *run, const double *target, const double *p0, double *f, double *grad,
                                 double *hamiltonian, ptreg_error *err)
{
    (void)err;
    cpu_run *r = run;
    evaluate_cpu(&r->c, &r->tr, r->q0, target, p0, f, grad, hamiltonian, r->scratch);
    return PTREG_OK;
}

static ptreg_status cpu_shoot(void *run, const double *p0, ptreg_error *err)
{
    (void)err;
    cpu_run *r = run;
    shoot(&r->c, r->q0, p0, &r->tr, NULL);
    return PTREG_OK;
}

static ptreg_status cpu_state(void *run, int t, double *q, double *p, ptreg_error *err)
{
    (void)err;
    const cpu_run *r = run;
    size_t n3 = 3 * r->c.n;
    const double *x = r->tr.x + (size_t)t * 2 * n3;
    if (q)
        memcpy(q, x, n3 * sizeof *q);
    if (p)
        memcpy(p, x + n3, n3 * sizeof *p);
    return PTREG_OK;
}

/* The points' steps along the landmarks' trajectory, by the integrator's
 * rule on the velocity the landmarks carry them at. */
static ptreg_status cpu_warp(void *run, const double *p0, const double *x, size_t m, double *out, ptreg_error *err)
{
    cpu_run *r = run;
    lddmm_ctx *c = &r->c;
    size_t n = c->n, m3 = 3 * m, len = 6 * n, np = padded(m);
    double *k1 = malloc(m3 * sizeof *k1), *k2 = malloc(m3 * sizeof *k2), *mid = malloc(m3 * sizeof *mid);
    double *outbuf = malloc(6 * np * sizeof *outbuf);
    float *rowpack = malloc(6 * np * sizeof *rowpack);
    ptreg_status st = PTREG_OK;
    if (!k1 || !k2 || !mid || !outbuf || !rowpack)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm warp: out of memory for %zu points", m);
    if (!st) {
        if (out != x)
            memcpy(out, x, m3 * sizeof *out);
        shoot(c, r->q0, p0, &r->tr, NULL);
        for (int t = 0; t < c->steps; t++) {
            const double *xt = r->tr.x + (size_t)t * len;
            point_velocity(c, out, m, xt, xt + 3 * n, k1, rowpack, outbuf);
            if (c->opt->integrator == PTREG_LDDMM_EULER) {
                axpy(out, out, c->h, k1, m3);
                continue;
            }
            const double *yt = r->tr.y + (size_t)t * len;
            axpy(mid, out, 2.0 * c->h / 3.0, k1, m3);
            point_velocity(c, mid, m, yt, yt + 3 * n, k2, rowpack, outbuf);
            for (size_t i = 0; i < m3; i++)
                out[i] += c->h * (0.25 * k1[i] + 0.75 * k2[i]);
        }
    }
    free(k1), free(k2), free(mid), free(outbuf), free(rowpack);
    return st;
}

static double cpu_pair_terms(const void *run) { return ((const cpu_run *)run)->c.pair_terms; }

/* Every option. */
static const lddmm_engine lddmm_cpu_engine = {
    .base = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL},
    .open = cpu_open,
    .evaluate = cpu_evaluate,
    .shoot = cpu_shoot,
    .state = cpu_state,
    .warp = cpu_warp,
    .pair_terms = cpu_pair_terms,
    .close = cpu_close,
};

static const engine *const lddmm_engines[] = {&lddmm_cpu_engine.base, &lddmm_device_engine.base};

/* The device the options name and the engine that runs them there: the
 * one choice a call makes. */
static ptreg_status lddmm_choose(const ptreg_lddmm_options *o, ptreg_device *on, const lddmm_engine **chosen,
                                 ptreg_error *err)
{
    const engine *e = NULL;
    ptreg_status st = engine_choose(lddmm_engines, 2, &o->device, o, "lddmm", on, &e, err);
    /* every engine in the list is an lddmm_engine, its base first */
    *chosen = (const lddmm_engine *)e;
    return st;
}

ptreg_status ptreg_lddmm_resolve_device(const ptreg_lddmm_options *o, ptreg_device *on, ptreg_error *err)
{
    const lddmm_engine *unused;
    return lddmm_choose(o, on, &unused, err);
}

ptreg_status lddmm_choice_make(const ptreg_lddmm_options *opt, size_t n, lddmm_choice *choice, ptreg_error *err)
{
    ptreg_status st = check_options(opt, n, err);
    return st ? st : lddmm_choose(opt, &choice->on, &choice->engine, err);
}

/* ---- the calls' sessions ------------------------------------------------------ */

/* What every public call holds: the engine chosen, its session, and the
 * options (L-BFGS's, on the host). */
typedef struct lddmm_session {
    const lddmm_engine *e;
    void *run;
    const ptreg_lddmm_options *opt;
} lddmm_session;

static void session_free(lddmm_session *s)
{
    if (s->e)
        s->e->close(s->run);
    s->e = NULL;
    s->run = NULL;
}

/* The named n x 3 inputs (NULL entries skipped) checked finite, then the
 * session; on failure nothing is left allocated. */
typedef struct named_points {
    const double *v;
    const char *what;
} named_points;

static ptreg_status session_begin(lddmm_session *s, const lddmm_choice *made, size_t n, const ptreg_lddmm_options *opt,
                                  const named_points *inputs, int count, ptreg_error *err)
{
    memset(s, 0, sizeof *s);
    lddmm_choice c = {0};
    ptreg_status st = made ? PTREG_OK : lddmm_choice_make(opt, n, &c, err);
    if (made)
        c = *made;
    for (int i = 0; !st && i < count; i++)
        if (inputs[i].v)
            st = check_points(inputs[i].v, n, inputs[i].what, err);
    /* the first input is the template */
    st = st ? st : c.engine->open(&c.on, inputs[0].v, n, opt, &s->run, err);
    if (!st)
        *s = (lddmm_session){c.engine, s->run, opt};
    return st;
}

static const ptreg_lddmm_options *options_or_default(const ptreg_lddmm_options *opt, ptreg_lddmm_options *storage)
{
    if (opt)
        return opt;
    ptreg_lddmm_options_default(storage);
    return storage;
}

ptreg_status ptreg_lddmm_shoot(const double *q0, const double *p0, size_t n, const ptreg_lddmm_options *opt, double *q1,
                               double *p1, double *trajectory_q, ptreg_error *err)
{
    return lddmm_shoot_on(NULL, q0, p0, n, opt, q1, p1, trajectory_q, err);
}

ptreg_status lddmm_shoot_on(const lddmm_choice *choice, const double *q0, const double *p0, size_t n,
                            const ptreg_lddmm_options *opt, double *q1, double *p1, double *trajectory_q,
                            ptreg_error *err)
{
    ptreg_lddmm_options d;
    opt = options_or_default(opt, &d);
    if (!q0 || !p0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: no landmarks or momenta");
    lddmm_session s;
    const named_points in[] = {{q0, "landmark"}, {p0, "momentum"}};
    ptreg_status st = session_begin(&s, choice, n, opt, in, 2, err);
    if (st)
        return st;
    size_t n3 = 3 * n, T = (size_t)opt->time_points;
    st = s.e->shoot(s.run, p0, err);
    st = st ? st : s.e->state(s.run, (int)T - 1, q1, p1, err);
    for (size_t t = 0; !st && trajectory_q && t < T; t++)
        st = s.e->state(s.run, (int)t, trajectory_q + t * n3, NULL, err);
    session_free(&s);
    return st;
}

ptreg_status ptreg_lddmm_objective(const double *q0, const double *target, size_t n, const double *p0,
                                   const ptreg_lddmm_options *opt, double *f, double *grad, double *hamiltonian,
                                   ptreg_error *err)
{
    ptreg_lddmm_options d;
    opt = options_or_default(opt, &d);
    if (!q0 || !target || !p0 || !f)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: no landmarks, target, momenta or output");
    lddmm_session s;
    const named_points in[] = {{q0, "landmark"}, {target, "target landmark"}, {p0, "momentum"}};
    ptreg_status st = session_begin(&s, NULL, n, opt, in, 3, err);
    if (st)
        return st;
    st = s.e->evaluate(s.run, target, p0, f, grad, hamiltonian, err);
    session_free(&s);
    return st;
}

/* ---- registration by L-BFGS ---------------------------------------------- */

/* The starting momenta (opt->init): the displacement target - q0 divided
 * by each landmark's kernel row sum sum_j K_ij (SCALED), so that where
 * neighbors move together the first velocity is the displacement; the
 * displacement itself; or zero. */
static ptreg_status initial_momentum(lddmm_ctx *c, const double *q0, const double *target, double *p0, ptreg_error *err)
{
    size_t n3 = 3 * c->n;
    for (size_t i = 0; i < n3; i++)
        p0[i] = c->opt->init == PTREG_LDDMM_INIT_ZERO ? 0.0 : target[i] - q0[i];
    if (c->opt->init != PTREG_LDDMM_INIT_SCALED)
        return PTREG_OK;
    double *ones = malloc(n3 * sizeof *ones), *rowsum = malloc(n3 * sizeof *rowsum);
    if (!ones || !rowsum) {
        free(ones);
        free(rowsum);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for the starting momenta");
    }
    for (size_t i = 0; i < n3; i++)
        ones[i] = 1.0;
    flow_reference(c, q0, NULL, c->n, q0, ones, rowsum, NULL); /* once, O(n^2), in double */
    for (size_t i = 0; i < n3; i++)
        p0[i] /= rowsum[i];
    free(ones);
    free(rowsum);
    return PTREG_OK;
}

typedef struct lbfgs_job {
    lddmm_session *s;
    const double *target;
    int evaluations, iterations;
    ptreg_status st; /* the first failure of an evaluation (a device's) */
    ptreg_error *err;
} lbfgs_job;

static lbfgsfloatval_t lbfgs_evaluate(void *instance, const lbfgsfloatval_t *x, lbfgsfloatval_t *g, const int n,
                                      const lbfgsfloatval_t step)
{
    (void)n;
    (void)step;
    lbfgs_job *job = instance;
    double f = 0.0;
    if (!job->st)
        job->st = job->s->e->evaluate(job->s->run, job->target, x, &f, g, NULL, job->err);
    if (job->st) /* NaN stops liblbfgs's line search; the failure is reported */
        f = NAN;
    job->evaluations++;
    return f;
}

static int lbfgs_progress(void *instance, const lbfgsfloatval_t *x, const lbfgsfloatval_t *g, const lbfgsfloatval_t fx,
                          const lbfgsfloatval_t xnorm, const lbfgsfloatval_t gnorm, const lbfgsfloatval_t step, int n,
                          int k, int ls)
{
    (void)x, (void)g, (void)xnorm, (void)gnorm, (void)step, (void)n, (void)ls;
    lbfgs_job *job = instance;
    job->iterations = k;
    const ptreg_progress *p = &job->s->opt->progress;
    if (p->fn)
        p->fn(p->ctx, k, job->s->opt->max_iter, fx);
    return 0;
}

/* Why liblbfgs stopped: the reason and its words; 0 for a failure that
 * yields nothing. */
static int stop_reason(int ret, ptreg_stop_reason *reason, const char **detail)
{
    *reason = PTREG_STOP_NO_PROGRESS;
    switch (ret) {
    case LBFGS_SUCCESS: *reason = PTREG_STOP_GRADIENT, *detail = "gradient tolerance"; return 1;
    case LBFGS_STOP: *reason = PTREG_STOP_OBJECTIVE_CHANGE, *detail = "function tolerance"; return 1;
    case LBFGS_ALREADY_MINIMIZED: *detail = "already at a minimum"; return 1;
    case LBFGSERR_MAXIMUMITERATION: *reason = PTREG_STOP_MAX_ITERATIONS, *detail = "max iterations"; return 1;
    case LBFGSERR_ROUNDING_ERROR: *detail = "rounding error (no further decrease)"; return 1;
    case LBFGSERR_MAXIMUMLINESEARCH: *detail = "line search: too many evaluations"; return 1;
    case LBFGSERR_MINIMUMSTEP: *detail = "line search: step below the minimum"; return 1;
    case LBFGSERR_MAXIMUMSTEP: *detail = "line search: step above the maximum"; return 1;
    case LBFGSERR_WIDTHTOOSMALL: *detail = "line search: interval too small"; return 1;
    case LBFGSERR_INCREASEGRADIENT: *detail = "line search: not a descent direction"; return 1;
    default: return 0;
    }
}

static void distances(const double *a, const double *b, size_t n, double *avg, double *max)
{
    double sum = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = a[3 * i] - b[3 * i], dy = a[3 * i + 1] - b[3 * i + 1], dz = a[3 * i + 2] - b[3 * i + 2];
        double d = sqrt(dx * dx + dy * dy + dz * dz);
        sum += d;
        worst = d > worst ? d : worst;
    }
    *avg = sum / (double)n;
    *max = worst;
}

static ptreg_status run_lbfgs(lbfgs_job *job, double *p, size_t n3, ptreg_lddmm_result *r, ptreg_error *err)
{
    lbfgsfloatval_t *x = lbfgs_malloc((int)n3);
    if (!x)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for L-BFGS");
    memcpy(x, p, n3 * sizeof *x);
    lbfgs_parameter_t param;
    lbfgs_parameter_init(&param);
    param.max_iterations = job->s->opt->max_iter;
    param.epsilon = job->s->opt->gtol;
    param.past = 10;
    param.delta = job->s->opt->ftol;
    lbfgsfloatval_t fx = 0;
    int ret = lbfgs((int)n3, x, &fx, lbfgs_evaluate, lbfgs_progress, job, &param);
    if (job->st) {
        lbfgs_free(x);
        return job->st;
    }
    const int stopped = stop_reason(ret, &r->stop_reason, &r->stop_detail);
    if (stopped)
        memcpy(p, x, n3 * sizeof *p);
    lbfgs_free(x);
    if (!stopped)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "lddmm: L-BFGS failed (liblbfgs status %d)", ret);
    return PTREG_OK;
}

ptreg_status ptreg_lddmm_register(const double *template_q, const double *target, size_t n, const double *p0_init,
                                  const ptreg_lddmm_options *opt, ptreg_lddmm_result *r, ptreg_error *err)
{
    ptreg_lddmm_options d;
    opt = options_or_default(opt, &d);
    if (!r)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: no result");
    memset(r, 0, sizeof *r);
    if (!template_q || !target)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm: no template or target");
    double t0 = ptreg_time_ms();
    lddmm_session s;
    const named_points in[] = {
        {template_q, "template landmark"}, {target, "target landmark"}, {p0_init, "initial momentum"}};
    ptreg_status st = session_begin(&s, NULL, n, opt, in, 3, err);
    if (st)
        return st;
    size_t n3 = 3 * n;
    if (!(r->p0 = malloc(n3 * sizeof *r->p0)) || !(r->q1 = malloc(n3 * sizeof *r->q1))) {
        session_free(&s);
        ptreg_lddmm_result_free(r);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory for the result");
    }
    r->n = n;
    if (p0_init)
        memcpy(r->p0, p0_init, n3 * sizeof *r->p0);
    else {
        lddmm_ctx flow; /* the constants: the starting momenta are the host's, in double */
        ctx_constants(&flow, n, opt);
        st = initial_momentum(&flow, template_q, target, r->p0, err);
    }
    lbfgs_job job = {&s, target, 0, 0, PTREG_OK, err};
    st = st ? st : opt->max_iter > 0 ? run_lbfgs(&job, r->p0, n3, r, err) : PTREG_OK;
    if (opt->max_iter == 0)
        r->stop_reason = PTREG_STOP_MAX_ITERATIONS, r->stop_detail = "no iterations asked";
    st = st ? st : s.e->evaluate(s.run, target, r->p0, &r->objective, NULL, &r->hamiltonian, err);
    st = st ? st : s.e->state(s.run, opt->time_points - 1, r->q1, NULL, err);
    if (!st) {
        r->iterations = job.iterations;
        r->evaluations = job.evaluations;
        distances(template_q, target, n, &r->avg_distance_before, &r->max_distance_before);
        distances(r->q1, target, n, &r->avg_distance_after, &r->max_distance_after);
        r->pair_terms = s.e->pair_terms(s.run);
        r->time_ms = ptreg_time_ms() - t0;
    } else {
        ptreg_lddmm_result_free(r);
    }
    session_free(&s);
    return st;
}

void ptreg_lddmm_result_free(ptreg_lddmm_result *r)
{
    if (!r)
        return;
    free(r->p0);
    free(r->q1);
    memset(r, 0, sizeof *r);
}

/* ---- other points along the flow -------------------------------------------- */

ptreg_status ptreg_lddmm_warp(const double *q0, const double *p0, size_t n, const ptreg_lddmm_options *opt,
                              const double *x, size_t m, double *out, ptreg_error *err)
{
    return lddmm_warp_on(NULL, q0, p0, n, opt, x, m, out, err);
}

ptreg_status lddmm_warp_on(const lddmm_choice *choice, const double *q0, const double *p0, size_t n,
                           const ptreg_lddmm_options *opt, const double *x, size_t m, double *out, ptreg_error *err)
{
    ptreg_lddmm_options d;
    opt = options_or_default(opt, &d);
    if (!q0 || !p0 || (m && (!x || !out)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm warp: no landmarks, momenta or points");
    lddmm_session s;
    const named_points in[] = {{q0, "landmark"}, {p0, "momentum"}};
    ptreg_status st = session_begin(&s, choice, n, opt, in, 2, err);
    if (!st && m)
        st = check_points(x, m, "point", err);
    if (!st && m)
        st = s.e->warp(s.run, p0, x, m, out, err);
    session_free(&s);
    return st;
}
