/* Horn's closed-form absolute orientation with unit quaternions
 * (B.K.P. Horn, JOSA A 4(4), 1987; see docs/ALGORITHMS.md). */
#include "ptreg/core.h"

#include <math.h>
#include <string.h>
#include "core/numeric.h"

void ptreg_moments_init(ptreg_moments *m, const double ref_p[3], const double ref_q[3])
{
    memset(m, 0, sizeof *m);
    for (int k = 0; k < 3; k++) {
        m->ref_p[k] = ref_p ? ref_p[k] : 0.0;
        m->ref_q[k] = ref_q ? ref_q[k] : 0.0;
    }
}

void ptreg_moments_add(ptreg_moments *m, const double p[3], const double q[3], double w)
{
    double a[3], b[3];
    for (int k = 0; k < 3; k++) {
        a[k] = p[k] - m->ref_p[k];
        b[k] = q[k] - m->ref_q[k];
    }
    m->w += w;
    m->spp += w * (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    for (int r = 0; r < 3; r++) {
        m->sp[r] += w * a[r];
        m->sq[r] += w * b[r];
        for (int c = 0; c < 3; c++)
            m->spq[3 * r + c] += w * a[r] * b[c];
    }
}

void ptreg_moments_merge(ptreg_moments *a, const ptreg_moments *b)
{
    a->w += b->w;
    a->spp += b->spp;
    for (int k = 0; k < 3; k++) {
        a->sp[k] += b->sp[k];
        a->sq[k] += b->sq[k];
    }
    for (int k = 0; k < 9; k++)
        a->spq[k] += b->spq[k];
}

/* The power of two that brings A's largest entry into [0.5, 1), so that
 * the rotations below may square entries: 2^-e, e clamped to [-1000, 1000]
 * so that 2^-e and 2^e are normal numbers and scaling is exact. */
static int eigen_scale_exponent(const double *A, int count)
{
    double amax = 0.0;
    for (int i = 0; i < count; i++)
        amax = fabs(A[i]) > amax ? fabs(A[i]) : amax;
    int e = 0;
    if (amax > 0.0 && isfinite(amax))
        frexp(amax, &e);
    return e < -1000 ? -1000 : e > 1000 ? 1000 : e;
}

static void jacobi_rotation(double app, double aqq, double apq, double *c, double *s)
{
    /* tan of the angle that zeroes apq is t = sgn(h) 2 apq / (|h| + r),
     * h = aqq - app, r = sqrt(h^2 + 4 apq^2) (Golub & Van Loan 8.4.2's
     * stable root); then 1 + t^2 = 2 r / (|h| + r), so c and s take two
     * square roots and one division where the textbook form takes five
     * operations. */
    const double h = aqq - app, ah = fabs(h);
    const double r = sqrt(h * h + 4.0 * apq * apq);
    const double inv = 1.0 / sqrt(2.0 * r * (r + ah));
    *c = (ah + r) * inv;
    *s = (h >= 0.0 ? 2.0 * apq : -2.0 * apq) * inv;
}

/* A <- J^T A J for the rotation J in the (p, q) plane that zeroes a_pq:
 * the two diagonal entries, the zero, and rows and columns p and q of the
 * others, kept symmetric (half the work of rotating all of A's entries). */
static void rotate_symmetric(double *A, int n, int p, int q, double c, double s)
{
    const double app = A[p * n + p], aqq = A[q * n + q], apq = A[p * n + q];
    const double cc = c * c, ss = s * s, cs2 = 2.0 * c * s;
    A[p * n + p] = cc * app - cs2 * apq + ss * aqq;
    A[q * n + q] = ss * app + cs2 * apq + cc * aqq;
    A[p * n + q] = A[q * n + p] = 0.0;
    for (int k = 0; k < n; k++) {
        if (k == p || k == q)
            continue;
        const double akp = A[k * n + p], akq = A[k * n + q];
        A[k * n + p] = A[p * n + k] = c * akp - s * akq;
        A[k * n + q] = A[q * n + k] = s * akp + c * akq;
    }
}

/* Every pair (p < q) of n <= 8 indices once, in the order of a round-robin
 * tournament (the circle method, a dummy index when n is odd): each round
 * a set of disjoint pairs, whose rotations touch different rows and
 * columns, so that a rotation's angle does not depend on the one before it
 * in its round. The batched lanes (batch_kernels_isa.c) compute a round's
 * angles together. n = 4: (0,3) (1,2), (1,3) (0,2), (2,3) (0,1). */
static int round_robin(int n, int pairs[28][2])
{
    const int players = n + (n & 1), turns = players - 1;
    int count = 0;
    for (int r = 0; r < turns; r++) {
        int a = r, b = players - 1;
        for (int k = 0; k < players / 2; k++) {
            if (k > 0)
                a = (r + k) % turns, b = (r - k + turns) % turns;
            if (a < n && b < n)
                pairs[count][0] = a < b ? a : b, pairs[count++][1] = a < b ? b : a;
        }
    }
    return count;
}

void ptreg_eigen_symmetric(const double *A_in, int n, double *eval, double *V)
{
    double A[64];
    const int e = eigen_scale_exponent(A_in, n * n);
    const double down = ldexp(1.0, -e), up = ldexp(1.0, e);
    for (int i = 0; i < n * n; i++)
        A[i] = A_in[i] * down;
    for (int i = 0; i < n * n; i++)
        V[i] = (i % (n + 1) == 0) ? 1.0 : 0.0;
    int pairs[28][2];
    const int count = round_robin(n, pairs);
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, diag = 0.0;
        for (int i = 0; i < n; i++) {
            diag += A[i * n + i] * A[i * n + i];
            for (int j = i + 1; j < n; j++)
                off += A[i * n + j] * A[i * n + j];
        }
        if (off <= 1e-36 * diag || off == 0.0)
            break;
        for (int r = 0; r < count; r++) {
            const int p = pairs[r][0], q = pairs[r][1];
            const double apq = A[p * n + q];
            /* An entry this small (2^-537 of the largest) is zero for the
             * convergence test too. */
            if (apq * apq == 0.0)
                continue;
            double c, s;
            jacobi_rotation(A[p * n + p], A[q * n + q], apq, &c, &s);
            rotate_symmetric(A, n, p, q, c, s);
            for (int k = 0; k < n; k++) {
                double vkp = V[k * n + p], vkq = V[k * n + q];
                V[k * n + p] = c * vkp - s * vkq;
                V[k * n + q] = s * vkp + c * vkq;
            }
        }
    }
    for (int i = 0; i < n; i++)
        eval[i] = A[i * n + i] * up;
    /* Selection sort keeps eigenvalue i with column i of V. */
    for (int i = 0; i < n; i++) {
        int best = i;
        for (int j = i + 1; j < n; j++)
            if (eval[j] < eval[best])
                best = j;
        if (best == i)
            continue;
        double tmp = eval[i];
        eval[i] = eval[best];
        eval[best] = tmp;
        for (int k = 0; k < n; k++) {
            tmp = V[k * n + i];
            V[k * n + i] = V[k * n + best];
            V[k * n + best] = tmp;
        }
    }
}

ptreg_status ptreg_horn_solve(const ptreg_moments *m, double T[16], int *degenerate, ptreg_error *err)
{
    if (degenerate)
        *degenerate = 0;
    if (!(m->w > 0.0) || !isfinite(m->w))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "Horn solver: no weighted point pairs");
    double cp[3], cq[3], S[9];
    for (int k = 0; k < 3; k++) {
        cp[k] = m->sp[k] / m->w;
        cq[k] = m->sq[k] / m->w;
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            S[3 * r + c] = m->spq[3 * r + c] - m->w * cp[r] * cq[c];
    double xx = S[0], xy = S[1], xz = S[2], yx = S[3], yy = S[4], yz = S[5], zx = S[6], zy = S[7], zz = S[8];
    double N[16] = {xx + yy + zz, yz - zy, zx - xz,       xy - yx, yz - zy, xx - yy - zz, xy + yx, zx + xz,
                    zx - xz,      xy + yx, -xx + yy - zz, yz + zy, xy - yx, zx + xz,      yz + zy, -xx - yy + zz};
    for (int i = 0; i < 16; i++)
        if (!isfinite(N[i]))
            return ptreg_error_set(err, PTREG_ERR_RUNTIME, "Horn solver: non-finite moments");
    double eval[4], V[16];
    ptreg_eigen_symmetric(N, 4, eval, V);
    double q[4] = {V[3], V[7], V[11], V[15]};
    /* A repeated top eigenvalue means a family of equally good rotations:
     * collinear or coincident points. */
    double scale = fabs(eval[0]) + fabs(eval[3]);
    if (degenerate && eval[3] - eval[2] <= 1e-12 * scale)
        *degenerate = 1;
    if (scale == 0.0) {
        q[0] = 1.0;
        q[1] = q[2] = q[3] = 0.0;
    }
    double R[9];
    ptreg_quaternion_to_matrix(q, R);
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++) {
        double rp = 0.0;
        for (int c = 0; c < 3; c++) {
            T[4 * r + c] = R[3 * r + c];
            rp += R[3 * r + c] * (m->ref_p[c] + cp[c]);
        }
        T[4 * r + 3] = m->ref_q[r] + cq[r] - rp;
    }
    return PTREG_OK;
}

ptreg_status ptreg_horn(const float *p, const float *q, const float *weights, size_t n, double T[16], ptreg_error *err)
{
    if (n == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "Horn solver: no point pairs");
    double ref_p[3] = {p[0], p[1], p[2]}, ref_q[3] = {q[0], q[1], q[2]};
    ptreg_moments m;
    ptreg_moments_init(&m, ref_p, ref_q);
    for (size_t i = 0; i < n; i++) {
        double a[3] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]};
        double b[3] = {q[3 * i], q[3 * i + 1], q[3 * i + 2]};
        ptreg_moments_add(&m, a, b, weights ? weights[i] : 1.0);
    }
    return ptreg_horn_solve(&m, T, NULL, err);
}

ptreg_status ptreg_horn_solve_scaled(const ptreg_moments *m, double T[16], double *scale, int *degenerate,
                                     ptreg_error *err)
{
    ptreg_status st = ptreg_horn_solve(m, T, degenerate, err);
    if (st)
        return st;
    double cp[3], cq[3], tr = 0.0, spread = m->spp;
    for (int k = 0; k < 3; k++) {
        cp[k] = m->sp[k] / m->w;
        cq[k] = m->sq[k] / m->w;
        spread -= m->w * cp[k] * cp[k];
    }
    /* tr(R^T S) = sum_rc R_rc S_cr, S_cr = sum w (p_c - cp_c)(q_r - cq_r) */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            tr += T[4 * r + c] * (m->spq[3 * c + r] - m->w * cp[c] * cq[r]);
    if (!(spread > 0.0) || !(tr > 0.0))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "Horn solver: the pairs fix no scale (coincident points)");
    const double s = tr / spread;
    for (int r = 0; r < 3; r++) {
        double moved = 0.0;
        for (int c = 0; c < 3; c++) {
            T[4 * r + c] *= s;
            moved += T[4 * r + c] * (m->ref_p[c] + cp[c]);
        }
        T[4 * r + 3] = m->ref_q[r] + cq[r] - moved;
    }
    if (scale)
        *scale = s;
    return PTREG_OK;
}
