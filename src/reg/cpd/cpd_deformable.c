/* CPD's deformable M-step (docs/ALGORITHMS.md, "Coherent Point Drift"):
 * the paper's (diag(P1) G + lambda sigma^2 I) W = PX - diag(P1) Y, divided
 * through by P1, is symmetric positive definite,
 *   (G + lambda sigma^2 diag(P1)^-1) W = diag(P1)^-1 PX - Y,
 * and is solved for W's three columns together by conjugate gradients.
 * Each step's product with G is one 3-channel Gauss transform over the
 * source's pairs: G is never formed. The preconditioner is the same system
 * with G replaced by its top eigenpairs (a Woodbury solve), or its
 * diagonal when there are none; with low_rank, that solve is the answer
 * (the paper's fast variant). G W is carried along the steps (G p is each
 * step's product), so an M-step costs its CG steps' products alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reg/cpd/cpd_impl.h"

/* Below this, a centroid has no share of any target point: its row of the
 * paper's system is lambda sigma^2 w = 0. */
#define CPD_P1_MIN 1e-290
/* The steps without a tenth off the residual after which the solve stops:
 * float32 products leave CG a floor near 1e-6, and a nearly singular
 * system (an exact fit) one of its own. */
#define CG_STALL_STEPS 30
/* Lanczos steps beyond the preconditioner's rank. */
#define CPD_PRECONDITION_EXTRA_STEPS 10

typedef struct cg_state {
    double *d;                    /* lambda sigma^2 / P1 (0: an inactive row) */
    double *e, *core, *scratch;   /* with eigenpairs: 1 / d (0 where inactive), the Woodbury core */
    double *res, *z, *p, *ap, *b; /* m x 3 each */
    double *gp;                   /* G p, every row (the field moves inactive centroids too) */
    double *best_w, *best_gw;     /* each column's best iterate and its G w, m x 3 */
    double rz[3], bnorm[3], best[3];
    int done[3];
} cg_state;

static void cg_free(cg_state *s)
{
    free(s->d), free(s->res), free(s->z), free(s->p), free(s->ap), free(s->b), free(s->best_w);
    free(s->gp), free(s->best_gw);
    free(s->e), free(s->core), free(s->scratch);
}

static ptreg_status cg_alloc(cg_state *s, size_t m, int rank, ptreg_error *err)
{
    s->d = malloc(m * sizeof(double));
    s->e = malloc(m * sizeof(double));
    s->core = malloc(((size_t)rank * (size_t)rank + 1) * sizeof(double));
    s->scratch = malloc((3 * (size_t)rank + 1) * sizeof(double));
    double **v[] = {&s->res, &s->z, &s->p, &s->ap, &s->b, &s->gp, &s->best_w, &s->best_gw};
    int ok = s->d && s->e && s->core && s->scratch;
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        ok = (*v[k] = malloc(3 * m * sizeof(double))) != NULL && ok;
    return ok ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %zu points", m);
}

/* out = (G + diag(d)) v on the active rows, 0 on the others, from gv = G v. */
static void system_of(const cg_state *s, size_t m, const double *v, const double *gv, double *out)
{
    for (size_t i = 0; i < m; i++)
        for (int c = 0; c < 3; c++)
            out[3 * i + c] = s->d[i] > 0 ? gv[3 * i + c] + s->d[i] * v[3 * i + c] : 0.0;
}

/* gv = G v (every row); out = (G + diag(d)) v on the active rows, 0 on
 * the others (v is 0 there). */
static ptreg_status apply(cpd_run *r, const cg_state *s, const double *v, double *gv, double *out, ptreg_error *err)
{
    const double scale = 0.5 / (r->opt->beta * r->opt->beta);
    ptreg_status st = cpd_gauss(r, &r->field, r->y, r->m, r->y, r->m, v, 3, scale, gv, err);
    system_of(s, r->m, v, gv, out);
    return st;
}

/* z = M^-1 res, and res . z per column into rz: M is Q S Q^T + diag(d)
 * with eigenpairs, else G's diagonal 1 + d. */
static void precondition(const cpd_run *r, const cg_state *s, size_t m, double rz[3])
{
    if (r->eig.k > 0)
        cpd_woodbury_apply(&r->eig, s->e, m, s->core, s->res, s->z, s->scratch);
    else
        for (size_t i = 0; i < m; i++)
            for (int c = 0; c < 3; c++)
                s->z[3 * i + c] = s->d[i] > 0 ? s->res[3 * i + c] / (1.0 + s->d[i]) : 0.0;
    rz[0] = rz[1] = rz[2] = 0.0;
    for (size_t i = 0; i < 3 * m; i++)
        rz[i % 3] += s->res[i] * s->z[i];
}

static void column_norms(const double *v, size_t m, double out[3])
{
    out[0] = out[1] = out[2] = 0.0;
    for (size_t i = 0; i < m; i++)
        for (int c = 0; c < 3; c++)
            out[c] += v[3 * i + c] * v[3 * i + c];
    for (int c = 0; c < 3; c++)
        out[c] = sqrt(out[c]);
}

/* The system's diagonal and right side; W's inactive rows set to 0 (warm
 * start elsewhere: the last M-step's W). Whether a row of W was zeroed
 * (then the G W kept from the last M-step is not W's any more). */
static int cg_setup(cpd_run *r, cg_state *s)
{
    const double ls2 = r->opt->lambda * r->sigma2;
    int zeroed = 0;
    for (size_t i = 0; i < r->m; i++) {
        const int active = r->p1[i] > CPD_P1_MIN;
        s->d[i] = active ? ls2 / r->p1[i] : 0.0;
        s->e[i] = active ? r->p1[i] / ls2 : 0.0;
        for (int c = 0; c < 3; c++) {
            s->b[3 * i + c] = active ? r->px[3 * i + c] / r->p1[i] - r->y[3 * i + c] : 0.0;
            if (!active && r->w[3 * i + c] != 0.0) {
                r->w[3 * i + c] = 0.0;
                zeroed = 1;
            }
        }
    }
    column_norms(s->b, r->m, s->bnorm);
    return zeroed;
}

/* Each column's relative residual; a column whose residual is its best
 * so far is kept in best_w (and its G w in best_gw): on a nearly singular system (sigma^2 near 0,
 * an exact fit) rounding makes CG's residual grow again, and the solve
 * returns the best it saw. */
static void track_best(cpd_run *r, cg_state *s, double rel[3])
{
    double rnorm[3];
    column_norms(s->res, r->m, rnorm);
    for (int c = 0; c < 3; c++) {
        rel[c] = s->bnorm[c] > 0 ? rnorm[c] / s->bnorm[c] : 0.0;
        if (!(rel[c] < s->best[c]))
            continue;
        s->best[c] = rel[c];
        for (size_t i = 0; i < r->m; i++) {
            s->best_w[3 * i + c] = r->w[3 * i + c];
            s->best_gw[3 * i + c] = r->gw[3 * i + c];
        }
    }
}

/* One CG step on the columns not done. */
static ptreg_status cg_step(cpd_run *r, cg_state *s, ptreg_error *err)
{
    const size_t m = r->m;
    ptreg_status st = apply(r, s, s->p, s->gp, s->ap, err);
    if (st)
        return st;
    r->cg_iterations++;
    double pap[3] = {0, 0, 0}, alpha[3], rz_new[3];
    for (size_t k = 0; k < 3 * m; k++)
        pap[k % 3] += s->p[k] * s->ap[k];
    for (int c = 0; c < 3; c++)
        alpha[c] = !s->done[c] && pap[c] > 0 ? s->rz[c] / pap[c] : 0.0;
    for (size_t k = 0; k < 3 * m; k++) {
        r->w[k] += alpha[k % 3] * s->p[k];
        r->gw[k] += alpha[k % 3] * s->gp[k]; /* G W carried along: no product at the end */
        s->res[k] -= alpha[k % 3] * s->ap[k];
    }
    precondition(r, s, m, rz_new);
    for (size_t k = 0; k < 3 * m; k++) {
        const int c = (int)(k % 3);
        const double beta = s->rz[c] > 0 ? rz_new[c] / s->rz[c] : 0.0;
        s->p[k] = s->z[k] + beta * s->p[k];
    }
    memcpy(s->rz, rz_new, sizeof rz_new);
    return PTREG_OK;
}

/* gw_current: r->gw is G W for the W CG starts from (the last M-step's
 * answer and its field); else it is computed first. */
static ptreg_status solve(cpd_run *r, cg_state *s, int gw_current, ptreg_error *err)
{
    const size_t m = r->m;
    const double tol = r->opt->cg_tol > 0 ? r->opt->cg_tol : r->pair.precision == PTREG_PRECISION_FP64 ? 1e-10 : 1e-6;
    ptreg_status st = gw_current ? PTREG_OK : apply(r, s, r->w, r->gw, s->ap, err);
    if (st)
        return st;
    system_of(s, m, r->w, r->gw, s->ap);
    for (size_t k = 0; k < 3 * m; k++)
        s->res[k] = s->b[k] - s->ap[k];
    precondition(r, s, m, s->rz);
    memcpy(s->p, s->z, 3 * m * sizeof(double));
    s->best[0] = s->best[1] = s->best[2] = INFINITY;
    double progress = INFINITY; /* the worst column's residual at the last tenfold drop */
    int since = 0;
    for (int it = 0; !st; it++) {
        double rel[3];
        track_best(r, s, rel);
        double worst = 0.0;
        for (int c = 0; c < 3; c++) {
            s->done[c] = s->done[c] || !(rel[c] > tol);
            worst = !s->done[c] && rel[c] > worst ? rel[c] : worst;
        }
        if ((s->done[0] && s->done[1] && s->done[2]) || it == r->opt->cg_iter)
            break;
        if (worst < 0.1 * progress)
            progress = worst, since = 0;
        else if (++since >= CG_STALL_STEPS)
            break;
        st = cg_step(r, s, err);
    }
    memcpy(r->w, s->best_w, 3 * m * sizeof(double));
    memcpy(r->gw, s->best_gw, 3 * m * sizeof(double));
    return st;
}

/* G W with G replaced by Q S Q^T (the fast variant's field). */
static void low_rank_product(const cpd_eigen *g, size_t m, const double *w, double *out)
{
    const int k = g->k;
    double sqw[3 * PTREG_CPD_MAX_LOW_RANK]; /* S Q^T W */
    for (int a = 0; a < 3 * k; a++)
        sqw[a] = 0.0;
    for (size_t i = 0; i < m; i++)
        for (int a = 0; a < k; a++)
            for (int c = 0; c < 3; c++)
                sqw[3 * a + c] += g->q[i * (size_t)k + (size_t)a] * w[3 * i + c];
    for (int a = 0; a < k; a++)
        for (int c = 0; c < 3; c++)
            sqw[3 * a + c] *= g->s[a];
    for (size_t i = 0; i < m; i++)
        for (int c = 0; c < 3; c++) {
            double v = 0.0;
            for (int a = 0; a < k; a++)
                v += g->q[i * (size_t)k + (size_t)a] * sqw[3 * a + c];
            out[3 * i + c] = v;
        }
}

/* The eigenpairs, once per run: the fast variant's, or the
 * preconditioner's. */
static ptreg_status eigenpairs(cpd_run *r, ptreg_error *err)
{
    const int k = r->opt->low_rank > 0 ? r->opt->low_rank : r->opt->precondition_rank;
    if (r->eig_done || k <= 0)
        return PTREG_OK;
    r->eig_done = 1;
    /* the fast variant's pairs stand for G: steps beyond k let them
     * converge; a preconditioner's may be rougher */
    const int steps = r->opt->low_rank > 0 ? (2 * k > k + 30 ? 2 * k : k + 30) : k + CPD_PRECONDITION_EXTRA_STEPS;
    return cpd_eigen_top(r, k, steps, &r->eig, err);
}

ptreg_status cpd_deformable_step(cpd_run *r, ptreg_error *err)
{
    ptreg_status st = eigenpairs(r, err);
    cg_state s = {0};
    st = st ? st : cg_alloc(&s, r->m, r->eig.k, err);
    if (!st) {
        const int zeroed = cg_setup(r, &s);
        if (r->eig.k > 0)
            st = cpd_woodbury_prepare(&r->eig, s.e, r->m, s.core, err);
        if (!st && r->opt->low_rank > 0) {
            cpd_woodbury_apply(&r->eig, s.e, r->m, s.core, s.b, r->w, s.scratch);
            low_rank_product(&r->eig, r->m, r->w, r->gw);
        } else if (!st) {
            st = solve(r, &s, !zeroed, err);
        }
    }
    cg_free(&s);
    for (size_t k = 0; !st && k < 3 * r->m; k++)
        r->ty[k] = r->y[k] + r->gw[k];
    return st;
}
