/* ICP's Gauss-Newton steps (icp_impl.h): point-to-point and point-to-plane
 * residuals, robust kernels by iteratively reweighted least squares, the
 * 6 x 6 normal equations in double. docs/ALGORITHMS.md, "Point-to-plane
 * ICP and robust kernels". */
#include <math.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/icp/icp_impl.h"
#include "reg/testing.h"

const ptreg_option_name icp_method_names[] = {{"point", PTREG_ICP_POINT},
                                              {"plane", PTREG_ICP_PLANE},
                                              {"gicp", PTREG_ICP_GICP},
                                              {"symmetric", PTREG_ICP_SYMMETRIC},
                                              {NULL, 0}};
const ptreg_option_name icp_kernel_names[] = {{"none", PTREG_KERNEL_NONE},     {"huber", PTREG_KERNEL_HUBER},
                                              {"cauchy", PTREG_KERNEL_CAUCHY}, {"tukey", PTREG_KERNEL_TUKEY},
                                              {"gm", PTREG_KERNEL_GM},         {NULL, 0}};

OPTION_ENUM_FUNCTIONS(ptreg_icp_method, icp_method_names, "unknown", ptreg_icp_method_name, ptreg_icp_method_parse)

OPTION_ENUM_FUNCTIONS(ptreg_robust_kernel, icp_kernel_names, "unknown", ptreg_robust_kernel_name,
                      ptreg_robust_kernel_parse)

double ptreg_robust_weight(ptreg_robust_kernel kernel, double k, double r)
{
    const double e = fabs(r);
    switch (kernel) {
    case PTREG_KERNEL_HUBER: return e > k ? k / e : 1.0;
    case PTREG_KERNEL_CAUCHY: return 1.0 / (1.0 + (r / k) * (r / k));
    case PTREG_KERNEL_TUKEY: {
        if (e > k)
            return 0.0;
        const double u = 1.0 - (e / k) * (e / k);
        return u * u;
    }
    case PTREG_KERNEL_GM: {
        const double s = k + r * r;
        return k / (s * s);
    }
    case PTREG_KERNEL_NONE: break;
    }
    return 1.0;
}

unsigned ptreg_icp_method_normals(ptreg_icp_method method)
{
    if (method == PTREG_ICP_POINT)
        return 0;
    /* GICP's covariances and the symmetric objective turn the source's normals too */
    const int both = method == PTREG_ICP_GICP || method == PTREG_ICP_SYMMETRIC;
    return PTREG_ICP_NORMALS_TARGET | (both ? PTREG_ICP_NORMALS_SOURCE : 0u);
}

int ptreg_icp_uses_gauss_newton(const ptreg_icp_options *opt)
{
    return opt->method != PTREG_ICP_POINT || opt->kernel != PTREG_KERNEL_NONE || opt->lm_lambda > 0.0;
}

/* H += w J J^T (upper triangle, row by row), g += w r J. */
static void add_row(icp_normal_eq *eq, const double J[6], double r, double w)
{
    eq->cost += w * r * r;
    int at = 0;
    for (int i = 0; i < 6; i++) {
        const double wi = w * J[i];
        for (int j = i; j < 6; j++)
            eq->H[at++] += wi * J[j];
        eq->g[i] += wi * r;
    }
}

/* The point's three rows of d + omega x p + t, p relative to the centre. */
static void point_rows(const double p[3], double rows[3][6])
{
    const double J[3][6] = {
        {0.0, p[2], -p[1], 1.0, 0.0, 0.0}, {-p[2], 0.0, p[0], 0.0, 1.0, 0.0}, {p[1], -p[0], 0.0, 0.0, 0.0, 1.0}};
    memcpy(rows, J, sizeof J);
}

static void add_point_pair(icp_normal_eq *eq, const double p[3], const double d[3], double w)
{
    double rows[3][6];
    point_rows(p, rows);
    for (int k = 0; k < 3; k++)
        add_row(eq, rows[k], d[k], w);
}

/* W = (C_q + C_p)^-1 with C = I - (1 - eps) n n^T for each normal: the
 * plane-regularised covariances of GICP. 0 when a normal is not finite. */
static int gicp_weight(const float *nq, const float *np, double eps, double W[9])
{
    double M[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            M[3 * i + j] = 2.0 * (i == j) - (1.0 - eps) * ((double)nq[i] * nq[j] + (double)np[i] * np[j]);
    const double C[9] = {M[4] * M[8] - M[5] * M[7], M[2] * M[7] - M[1] * M[8], M[1] * M[5] - M[2] * M[4],
                         M[5] * M[6] - M[3] * M[8], M[0] * M[8] - M[2] * M[6], M[2] * M[3] - M[0] * M[5],
                         M[3] * M[7] - M[4] * M[6], M[1] * M[6] - M[0] * M[7], M[0] * M[4] - M[1] * M[3]};
    const double det = M[0] * C[0] + M[1] * C[3] + M[2] * C[6];
    if (!(det > 0.0) || !isfinite(det))
        return 0;
    for (int i = 0; i < 9; i++)
        W[i] = C[i] / det;
    return 1;
}

static void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* GICP's pair: J^T W J and J^T W d, weighted by the kernel of the
 * Mahalanobis distance sqrt(d^T W d). J = [A | I] with A's column c the
 * unit vector e_c x p (point_rows), so the blocks are A^T W A, A^T W and W,
 * and A^T v = p x v: a third of the generic triple product's work. */
static void add_gicp_pair(icp_normal_eq *eq, const ptreg_icp_options *opt, const double p[3], const double d[3],
                          const double W[9])
{
    const double A[3][3] = {{0.0, -p[2], p[1]}, {p[2], 0.0, -p[0]}, {-p[1], p[0], 0.0}}; /* rows: columns of A */
    double WA[3][3], AtWA[3][3], Wd[3], AtWd[3];
    for (int c = 0; c < 3; c++) {
        for (int i = 0; i < 3; i++)
            WA[c][i] = W[3 * i] * A[c][0] + W[3 * i + 1] * A[c][1] + W[3 * i + 2] * A[c][2];
        cross3(p, WA[c], AtWA[c]);
    }
    for (int i = 0; i < 3; i++)
        Wd[i] = W[3 * i] * d[0] + W[3 * i + 1] * d[1] + W[3 * i + 2] * d[2];
    cross3(p, Wd, AtWd);
    const double m2 = d[0] * Wd[0] + d[1] * Wd[1] + d[2] * Wd[2];
    const double w = ptreg_robust_weight(opt->kernel, opt->kernel_scale, sqrt(fmax(m2, 0.0)));
    eq->cost += w * m2;
    int at = 0;
    for (int a = 0; a < 3; a++) { /* rows of the rotation: A^T W A, then A^T W = (W A)^T */
        for (int b = a; b < 3; b++)
            eq->H[at++] += w * AtWA[b][a];
        for (int b = 0; b < 3; b++)
            eq->H[at++] += w * WA[a][b];
        eq->g[a] += w * AtWd[a];
    }
    for (int a = 0; a < 3; a++) { /* rows of the translation: W */
        for (int b = a; b < 3; b++)
            eq->H[at++] += w * W[3 * a + b];
        eq->g[3 + a] += w * Wd[a];
    }
}

/* A normal's row: d.n + omega . (p x n) + t . n (PLANE: p the source
 * point; SYMMETRIC: p the sum of both points, omega then half the
 * rotation's tangent). */
static void add_normal_row(icp_normal_eq *eq, const double p[3], const double n[3], double r, double w)
{
    const double J[6] = {
        p[1] * n[2] - p[2] * n[1], p[2] * n[0] - p[0] * n[2], p[0] * n[1] - p[1] * n[0], n[0], n[1], n[2]};
    add_row(eq, J, r, w);
}

/* SYMMETRIC's pair: the normals summed (the source's turned to the
 * target's side first: unoriented normals must not cancel), the points'
 * sum about the centre. 0 when a normal is not finite. */
static int symmetric_row(const double pc[3], const float *q, const double c[3], const float *nq, const float *np,
                         double sum[3], double n[3])
{
    const double dot = (double)nq[0] * np[0] + (double)nq[1] * np[1] + (double)nq[2] * np[2];
    const double sign = dot < 0.0 ? -1.0 : 1.0;
    for (int k = 0; k < 3; k++) {
        n[k] = (double)nq[k] + sign * np[k];
        sum[k] = pc[k] + ((double)q[k] - c[k]);
    }
    return isfinite(n[0]) && isfinite(n[1]) && isfinite(n[2]);
}

void icp_gn_block(const ptreg_icp_options *opt, const double c[3], const icp_gn_pairs *pairs, icp_normal_eq *eq,
                  double *sum_r2, size_t *used)
{
    memset(eq, 0, sizeof *eq);
    double r2 = 0.0;
    size_t count = 0;
    const float *p = pairs->p, *q = pairs->q, *nq = pairs->nq;
    for (size_t i = 0; i < pairs->n; i++) {
        if (!pairs->use[i])
            continue;
        double pc[3], d[3];
        for (int k = 0; k < 3; k++) {
            pc[k] = (double)p[3 * i + k] - c[k];
            d[k] = (double)p[3 * i + k] - (double)q[3 * i + k];
        }
        const double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        r2 += dd;
        count++;
        if (opt->method == PTREG_ICP_PLANE) {
            const double nrm[3] = {nq[3 * i], nq[3 * i + 1], nq[3 * i + 2]};
            /* a pair without a normal counts as Open3D counts it, in fitness
             * and rmse, but cannot pull along a plane */
            if (!(isfinite(nrm[0]) && isfinite(nrm[1]) && isfinite(nrm[2])))
                continue;
            const double r = d[0] * nrm[0] + d[1] * nrm[1] + d[2] * nrm[2];
            add_normal_row(eq, pc, nrm, r, ptreg_robust_weight(opt->kernel, opt->kernel_scale, r));
        } else if (opt->method == PTREG_ICP_SYMMETRIC) {
            double sum[3], n[3];
            if (!symmetric_row(pc, q + 3 * i, c, nq + 3 * i, pairs->np + 3 * i, sum, n))
                continue;
            const double r = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
            add_normal_row(eq, sum, n, r, ptreg_robust_weight(opt->kernel, opt->kernel_scale, r));
        } else if (opt->method == PTREG_ICP_GICP) {
            double W[9];
            if (gicp_weight(nq + 3 * i, pairs->np + 3 * i, opt->gicp_epsilon, W))
                add_gicp_pair(eq, opt, pc, d, W);
        } else {
            add_point_pair(eq, pc, d, ptreg_robust_weight(opt->kernel, opt->kernel_scale, sqrt(dd)));
        }
    }
    *sum_r2 = r2;
    *used = count;
}

void icp_normal_eq_merge(icp_normal_eq *a, const icp_normal_eq *b)
{
    for (int i = 0; i < 21; i++)
        a->H[i] += b->H[i];
    for (int i = 0; i < 6; i++)
        a->g[i] += b->g[i];
    a->cost += b->cost;
}

/* H + lambda D in packed form (icp_gn_step). */
static void damp(const double H[21], double lambda, double out[21])
{
    static const int diagonal[6] = {0, 6, 11, 15, 18, 20};
    memcpy(out, H, 21 * sizeof(double));
    double largest = 0.0;
    for (int i = 0; i < 6; i++)
        largest = fmax(largest, H[diagonal[i]]);
    for (int i = 0; i < 6; i++)
        out[diagonal[i]] += lambda * fmax(H[diagonal[i]], 1e-6 * largest);
}

/* Solves H x = b by Cholesky, H from the packed upper triangle; 0 when H
 * is not (numerically) positive definite. */
static int cholesky_solve(const double packed[21], const double b[6], double x[6])
{
    double L[6][6] = {{0}}, A[6][6];
    int at = 0;
    for (int i = 0; i < 6; i++)
        for (int j = i; j < 6; j++)
            A[i][j] = A[j][i] = packed[at++];
    double largest = 0.0;
    for (int i = 0; i < 6; i++)
        largest = fmax(largest, A[i][i]);
    for (int j = 0; j < 6; j++) {
        double s = A[j][j];
        for (int k = 0; k < j; k++)
            s -= L[j][k] * L[j][k];
        /* a pivot lost to rounding against the largest: a direction the
         * pairs do not constrain */
        if (!(s > 1e-12 * largest))
            return 0;
        L[j][j] = sqrt(s);
        for (int i = j + 1; i < 6; i++) {
            double t = A[i][j];
            for (int k = 0; k < j; k++)
                t -= L[i][k] * L[j][k];
            L[i][j] = t / L[j][j];
        }
    }
    double y[6];
    for (int i = 0; i < 6; i++) {
        double t = b[i];
        for (int k = 0; k < i; k++)
            t -= L[i][k] * y[k];
        y[i] = t / L[i][i];
    }
    for (int i = 5; i >= 0; i--) {
        double t = y[i];
        for (int k = i + 1; k < 6; k++)
            t -= L[k][i] * x[k];
        x[i] = t / L[i][i];
    }
    return 1;
}

/* R = exp([omega]x) by Rodrigues' formula (its series near 0). */
static void rotation_of(const double w[3], double R[9])
{
    const double th2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2], th = sqrt(th2);
    const double a = th2 < 1e-16 ? 1.0 - th2 / 6.0 : sin(th) / th;
    const double b = th2 < 1e-16 ? 0.5 - th2 / 24.0 : (1.0 - cos(th)) / th2;
    const double K[9] = {0.0, -w[2], w[1], w[2], 0.0, -w[0], -w[1], w[0], 0.0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double kk = 0.0;
            for (int k = 0; k < 3; k++)
                kk += K[3 * i + k] * K[3 * k + j];
            R[3 * i + j] = (i == j) + a * K[3 * i + j] + b * kk;
        }
}

/* SYMMETRIC's step (Rusinkiewicz 2019): a = tan(theta) * axis solved for,
 * applied as a rotation by theta, the translation t cos(theta), and the
 * rotation by theta again; in the centred frame p -> R_h (R_h p + t cos
 * theta). R receives R_h R_h, t the translation R_h t cos(theta). */
static void symmetric_motion(const double x[6], double R[9], double t[3])
{
    const double tan_norm = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    const double theta = atan(tan_norm), scale = tan_norm > 0 ? theta / tan_norm : 1.0;
    const double w[3] = {x[0] * scale, x[1] * scale, x[2] * scale};
    double Rh[9];
    rotation_of(w, Rh);
    const double ct = cos(theta);
    for (int i = 0; i < 3; i++) {
        t[i] = 0.0;
        for (int j = 0; j < 3; j++) {
            double rr = 0.0;
            for (int k = 0; k < 3; k++)
                rr += Rh[3 * i + k] * Rh[3 * k + j];
            R[3 * i + j] = rr;
            t[i] += Rh[3 * i + j] * x[3 + j] * ct;
        }
    }
}

int icp_gn_step(const icp_normal_eq *eq, const double c[3], int symmetric, double lambda, double dT[16])
{
    const double minus_g[6] = {-eq->g[0], -eq->g[1], -eq->g[2], -eq->g[3], -eq->g[4], -eq->g[5]};
    double x[6], R[9], t[3], H[21];
    damp(eq->H, lambda, H);
    if (!cholesky_solve(H, minus_g, x))
        return 0;
    if (symmetric) {
        symmetric_motion(x, R, t);
    } else {
        rotation_of(x, R);
        t[0] = x[3], t[1] = x[4], t[2] = x[5];
    }
    ptreg_transform_identity(dT);
    for (int i = 0; i < 3; i++) {
        double rc = 0.0;
        for (int j = 0; j < 3; j++) {
            dT[4 * i + j] = R[3 * i + j];
            rc += R[3 * i + j] * c[j];
        }
        dT[4 * i + 3] = c[i] + t[i] - rc;
    }
    return 1;
}
