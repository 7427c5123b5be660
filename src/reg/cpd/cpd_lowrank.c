/* G's top eigenpairs by Lanczos (each product a Gauss transform: G is
 * never formed), and the Woodbury solve they give. Myronenko & Song's
 * fast variant (Section 5.2) replaces G by Q S Q^T; the full method uses
 * the same solve as its conjugate gradients' preconditioner, where G -
 * Q S Q^T is small. docs/ALGORITHMS.md, "Coherent Point Drift". */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reg/cpd/cpd_impl.h"

/* Ritz values below this share of the largest are left out. */
#define CPD_RITZ_MIN 1e-10

void cpd_eigen_free(cpd_eigen *e)
{
    free(e->q);
    free(e->s);
    memset(e, 0, sizeof *e);
}

/* Eigenvalues (into d) and eigenvectors (the columns of z, n x n
 * row-major) of the symmetric tridiagonal matrix with diagonal d and
 * off-diagonal e (e[i] couples i and i + 1; e[n - 1] is scratch), by
 * implicit QL with Wilkinson's shift (Golub & Van Loan, 8.3). -1 when a
 * value takes over 60 sweeps. */
static int tridiagonal_eigen(double *d, double *e, int n, double *z)
{
    for (int i = 0; i < n * n; i++)
        z[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
    e[n - 1] = 0.0;
    for (int l = 0; l < n; l++) {
        int sweeps = 0, m;
        for (;;) {
            for (m = l; m < n - 1; m++)
                if (fabs(e[m]) <= DBL_EPSILON * (fabs(d[m]) + fabs(d[m + 1])))
                    break;
            if (m == l)
                break;
            if (++sweeps > 60)
                return -1;
            double g = (d[l + 1] - d[l]) / (2.0 * e[l]), r = hypot(g, 1.0);
            g = d[m] - d[l] + e[l] / (g + copysign(r, g));
            double s = 1.0, c = 1.0, p = 0.0;
            int i = m - 1, split = 0;
            for (; i >= l; i--) {
                const double f = s * e[i], b = c * e[i];
                r = hypot(f, g);
                e[i + 1] = r;
                if (r == 0.0) { /* the matrix split: deflate and sweep again */
                    d[i + 1] -= p;
                    e[m] = 0.0;
                    split = 1;
                    break;
                }
                s = f / r;
                c = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * s + 2.0 * c * b;
                p = s * r;
                d[i + 1] = g + p;
                g = c * r - b;
                for (int k = 0; k < n; k++) {
                    const double zi1 = z[k * n + i + 1], zi = z[k * n + i];
                    z[k * n + i + 1] = s * zi + c * zi1;
                    z[k * n + i] = c * zi - s * zi1;
                }
            }
            if (split)
                continue;
            d[l] -= p;
            e[l] = g;
            e[m] = 0.0;
        }
    }
    return 0;
}

static double dot(const double *a, const double *b, size_t m)
{
    double s = 0.0;
    for (size_t i = 0; i < m; i++)
        s += a[i] * b[i];
    return s;
}

/* The Lanczos basis V (m x steps, column j at v + j m) of G from a fixed
 * start, each new vector orthogonalised against all before it twice (full
 * reorthogonalisation: the Ritz pairs stay clean). alpha and beta: T's
 * diagonal and off-diagonal. Returns the steps made (fewer when G's
 * Krylov space closes). */
static ptreg_status lanczos(cpd_run *r, double *v, int steps, double *alpha, double *beta, int *made, ptreg_error *err)
{
    const size_t m = r->m;
    const double scale = 0.5 / (r->opt->beta * r->opt->beta);
    /* a start with a part along every eigenvector: 1 plus a fixed ripple */
    for (size_t i = 0; i < m; i++)
        v[i] = 1.0 + 0.5 * sin(12.9898 * (double)i);
    const double n0 = sqrt(dot(v, v, m));
    for (size_t i = 0; i < m; i++)
        v[i] /= n0;
    double *w = malloc(m * sizeof(double));
    if (!w)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %zu points", m);
    ptreg_status st = PTREG_OK;
    *made = 0;
    for (int j = 0; j < steps; j++) {
        const double *vj = v + (size_t)j * m;
        if ((st = cpd_gauss(r, &r->pair, r->y, m, r->y, m, vj, 1, scale, w, err)))
            break;
        alpha[j] = dot(w, vj, m);
        *made = j + 1;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i <= j; i++) {
                const double *vi = v + (size_t)i * m;
                const double h = dot(w, vi, m);
                for (size_t k = 0; k < m; k++)
                    w[k] -= h * vi[k];
            }
        const double b = sqrt(dot(w, w, m));
        if (j + 1 == steps || !(b > 1e-12 * fabs(alpha[0])))
            break;
        beta[j] = b;
        double *next = v + (size_t)(j + 1) * m;
        for (size_t k = 0; k < m; k++)
            next[k] = w[k] / b;
    }
    free(w);
    return st;
}

/* The k largest Ritz pairs of the basis: Q = V Z (its columns), S. */
static ptreg_status ritz_pairs(const double *v, size_t m, int steps, double *alpha, double *beta, int k, cpd_eigen *out,
                               ptreg_error *err)
{
    double *z = malloc((size_t)steps * (size_t)steps * sizeof(double));
    if (!z)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %d Lanczos steps", steps);
    if (tridiagonal_eigen(alpha, beta, steps, z)) {
        free(z);
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "CPD: the Lanczos eigenproblem did not converge");
    }
    /* QL leaves the values unordered: take the k largest, largest first */
    int *pick = malloc((size_t)steps * sizeof(int));
    out->q = malloc(m * (size_t)k * sizeof(double));
    out->s = malloc((size_t)k * sizeof(double));
    if (!pick || !out->q || !out->s) {
        free(z), free(pick);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %d eigenvectors", k);
    }
    for (int i = 0; i < steps; i++)
        pick[i] = i;
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < steps; j++)
            if (alpha[pick[j]] > alpha[pick[i]]) {
                const int t = pick[i];
                pick[i] = pick[j];
                pick[j] = t;
            }
    /* G is positive semi-definite: a Ritz value at rounding's level or
     * below (G's spectrum decays fast where beta is wide) says nothing, and
     * its 1/s would wreck the Woodbury core */
    while (k > 0 && !(alpha[pick[k - 1]] > CPD_RITZ_MIN * alpha[pick[0]]))
        k--;
    out->k = k;
    double *column = malloc(m * sizeof(double));
    if (!column) {
        free(z), free(pick);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %zu points", m);
    }
    /* each Ritz vector as one column (the basis read a vector at a time), then
     * into Q's rows */
    for (int c = 0; c < k; c++) {
        out->s[c] = alpha[pick[c]];
        memset(column, 0, m * sizeof(double));
        for (int j = 0; j < steps; j++) {
            const double zj = z[j * steps + pick[c]], *vj = v + (size_t)j * m;
            for (size_t i = 0; i < m; i++)
                column[i] += vj[i] * zj;
        }
        for (size_t i = 0; i < m; i++)
            out->q[i * (size_t)k + (size_t)c] = column[i];
    }
    free(column);
    free(z);
    free(pick);
    return PTREG_OK;
}

ptreg_status cpd_eigen_top(cpd_run *r, int k, int steps, cpd_eigen *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    const size_t m = r->m;
    steps = (size_t)steps > m ? (int)m : steps; /* a Krylov space has at most m */
    double *v = malloc(m * (size_t)steps * sizeof(double));
    double *alpha = malloc((size_t)steps * sizeof(double)), *beta = calloc((size_t)steps, sizeof(double));
    ptreg_status st = PTREG_OK;
    int made = 0;
    if (!v || !alpha || !beta)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "CPD: out of memory for %d Lanczos vectors of %zu points", steps, m);
    if (!st)
        st = lanczos(r, v, steps, alpha, beta, &made, err);
    if (!st)
        st = ritz_pairs(v, m, made, alpha, beta, k < made ? k : made, out, err);
    free(v), free(alpha), free(beta);
    if (st)
        cpd_eigen_free(out);
    return st;
}

/* ---- the Woodbury solve ---------------------------------------------------------- */

/* The k x k symmetric positive definite A's Cholesky factor L (A = L L^T)
 * in its lower triangle, in place; -1 when A is not positive definite. */
static int cholesky_factor(double *A, int k)
{
    for (int j = 0; j < k; j++) {
        double d = A[j * k + j];
        for (int p = 0; p < j; p++)
            d -= A[j * k + p] * A[j * k + p];
        if (!(d > 0))
            return -1;
        A[j * k + j] = sqrt(d);
        for (int i = j + 1; i < k; i++) {
            double s = A[i * k + j];
            for (int p = 0; p < j; p++)
                s -= A[i * k + p] * A[j * k + p];
            A[i * k + j] = s / A[j * k + j];
        }
    }
    return 0;
}

/* L L^T x = b in place for b's `columns` interleaved columns (k x columns). */
static void cholesky_solve(const double *L, int k, double *b, int columns)
{
    for (int c = 0; c < columns; c++) {
        for (int i = 0; i < k; i++) {
            double s = b[i * columns + c];
            for (int p = 0; p < i; p++)
                s -= L[i * k + p] * b[p * columns + c];
            b[i * columns + c] = s / L[i * k + i];
        }
        for (int i = k - 1; i >= 0; i--) {
            double s = b[i * columns + c];
            for (int p = i + 1; p < k; p++)
                s -= L[p * k + i] * b[p * columns + c];
            b[i * columns + c] = s / L[i * k + i];
        }
    }
}

ptreg_status cpd_woodbury_prepare(const cpd_eigen *g, const double *e, size_t m, double *core, ptreg_error *err)
{
    const int k = g->k;
    /* core = S^-1 + Q^T E Q (its lower triangle, point by point: Q's rows
     * are contiguous), then its Cholesky factor (kept in place) */
    for (int a = 0; a < k * k; a++)
        core[a] = 0.0;
    for (size_t i = 0; i < m; i++) {
        if (!(e[i] > 0))
            continue;
        const double *qi = g->q + i * (size_t)k;
        for (int a = 0; a < k; a++) {
            const double ea = e[i] * qi[a];
            double *row = core + (size_t)a * (size_t)k;
            for (int b = 0; b <= a; b++)
                row[b] += ea * qi[b];
        }
    }
    for (int a = 0; a < k; a++) {
        core[a * k + a] += 1.0 / g->s[a];
        for (int b = 0; b < a; b++)
            core[b * k + a] = core[a * k + b];
    }
    if (cholesky_factor(core, k))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                               "CPD: G's eigenvalues are not all positive (beta too large for the source?)");
    return PTREG_OK;
}

void cpd_woodbury_apply(const cpd_eigen *g, const double *e, size_t m, const double *core, const double *rhs,
                        double *out, double *scratch)
{
    const int k = g->k;
    /* out = E r - E Q core^-1 Q^T E r, three columns at once */
    for (int a = 0; a < 3 * k; a++)
        scratch[a] = 0.0;
    for (size_t i = 0; i < m; i++)
        for (int c = 0; c < 3; c++) {
            const double er = e[i] * rhs[3 * i + c];
            for (int a = 0; a < k; a++)
                scratch[3 * a + c] += g->q[i * (size_t)k + (size_t)a] * er;
        }
    cholesky_solve(core, k, scratch, 3);
    for (size_t i = 0; i < m; i++)
        for (int c = 0; c < 3; c++) {
            double qy = 0.0;
            for (int a = 0; a < k; a++)
                qy += g->q[i * (size_t)k + (size_t)a] * scratch[3 * a + c];
            out[3 * i + c] = e[i] * (rhs[3 * i + c] - qy);
        }
}
