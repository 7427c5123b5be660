#include "ptreg/core.h"

#include <math.h>
#include <string.h>
#include "core/testing.h"
#include "core/numeric.h"

void ptreg_transform_mul(const double A[16], const double B[16], double out[16])
{
    double C[16];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            double s = 0.0;
            for (int k = 0; k < 4; k++)
                s += A[4 * r + k] * B[4 * k + c];
            C[4 * r + c] = s;
        }
    memcpy(out, C, sizeof C);
}

void ptreg_transform_rotation(const double T[16], double R[9])
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            R[3 * r + c] = T[4 * r + c];
}

void ptreg_transform_invert_rigid(const double T[16], double out[16])
{
    double R[9];
    ptreg_transform_rotation(T, R);
    double t[3] = {T[3], T[7], T[11]};
    double M[16];
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            M[4 * r + c] = R[3 * c + r];
        M[4 * r + 3] = -(R[r] * t[0] + R[3 + r] * t[1] + R[6 + r] * t[2]);
    }
    M[12] = M[13] = M[14] = 0.0;
    M[15] = 1.0;
    memcpy(out, M, sizeof M);
}

static int is_zero3(const double v[3]) { return v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0; }

/* t + sign (R - I) o: (R - I) o rather than R o - o, which would cancel
 * the millions of metres of a UTM origin down to a few bits. */
static void move_origin(const double T[16], const double origin[3], double sign, double out[16])
{
    if (out != T)
        memcpy(out, T, 16 * sizeof(double));
    if (is_zero3(origin))
        return; /* bit for bit T: no -0 + 0 to turn a -0 into +0 */
    for (int r = 0; r < 3; r++) {
        double d = 0.0;
        for (int c = 0; c < 3; c++)
            d += (T[4 * r + c] - (r == c ? 1.0 : 0.0)) * origin[c];
        out[4 * r + 3] = T[4 * r + 3] + sign * d;
    }
}

void ptreg_transform_to_local(const double T[16], const double origin[3], double out[16])
{
    move_origin(T, origin, 1.0, out);
}

void ptreg_transform_to_world(const double T[16], const double origin[3], double out[16])
{
    move_origin(T, origin, -1.0, out);
}

void ptreg_transform_points(const double T[16], const float *in, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double x = in[3 * i], y = in[3 * i + 1], z = in[3 * i + 2];
        out[3 * i] = (float)(T[0] * x + T[1] * y + T[2] * z + T[3]);
        out[3 * i + 1] = (float)(T[4] * x + T[5] * y + T[6] * z + T[7]);
        out[3 * i + 2] = (float)(T[8] * x + T[9] * y + T[10] * z + T[11]);
    }
}

void ptreg_transform_vectors(const double T[16], const float *in, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double x = in[3 * i], y = in[3 * i + 1], z = in[3 * i + 2];
        out[3 * i] = (float)(T[0] * x + T[1] * y + T[2] * z);
        out[3 * i + 1] = (float)(T[4] * x + T[5] * y + T[6] * z);
        out[3 * i + 2] = (float)(T[8] * x + T[9] * y + T[10] * z);
    }
}

/* acos loses digits near 0 degrees, so the angle comes from atan2 of the
 * rotation's sine (half the skew part's norm) and cosine. */
static double rotation_angle_deg(const double R[9])
{
    double c = 0.5 * (R[0] + R[4] + R[8] - 1.0);
    double sx = R[7] - R[5], sy = R[2] - R[6], sz = R[3] - R[1];
    double s = 0.5 * sqrt(sx * sx + sy * sy + sz * sz);
    return atan2(s, c) * (180.0 / 3.14159265358979323846);
}

void ptreg_transform_difference(const double A[16], const double B[16], double *angle_deg, double *translation)
{
    double Ainv[16], D[16];
    ptreg_transform_invert_rigid(A, Ainv);
    ptreg_transform_mul(Ainv, B, D);
    double R[9] = {D[0], D[1], D[2], D[4], D[5], D[6], D[8], D[9], D[10]};
    if (angle_deg)
        *angle_deg = rotation_angle_deg(R);
    if (translation)
        *translation = sqrt(D[3] * D[3] + D[7] * D[7] + D[11] * D[11]);
}

void ptreg_quaternion_to_matrix(const double q_in[4], double R[9])
{
    double n = sqrt(q_in[0] * q_in[0] + q_in[1] * q_in[1] + q_in[2] * q_in[2] + q_in[3] * q_in[3]);
    double w = q_in[0] / n, x = q_in[1] / n, y = q_in[2] / n, z = q_in[3] / n;
    R[0] = 1 - 2 * (y * y + z * z);
    R[1] = 2 * (x * y - w * z);
    R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z);
    R[4] = 1 - 2 * (x * x + z * z);
    R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y);
    R[7] = 2 * (y * z + w * x);
    R[8] = 1 - 2 * (x * x + y * y);
}

/* Shepperd's method: the largest of the four squares decides the formula. */
void ptreg_matrix_to_quaternion(const double R[9], double q[4])
{
    const double t = R[0] + R[4] + R[8];
    double w, x, y, z;
    if (t >= R[0] && t >= R[4] && t >= R[8]) {
        const double s = 2.0 * sqrt(1.0 + t);
        w = 0.25 * s, x = (R[7] - R[5]) / s, y = (R[2] - R[6]) / s, z = (R[3] - R[1]) / s;
    } else if (R[0] >= R[4] && R[0] >= R[8]) {
        const double s = 2.0 * sqrt(1.0 + R[0] - R[4] - R[8]);
        w = (R[7] - R[5]) / s, x = 0.25 * s, y = (R[1] + R[3]) / s, z = (R[2] + R[6]) / s;
    } else if (R[4] >= R[8]) {
        const double s = 2.0 * sqrt(1.0 - R[0] + R[4] - R[8]);
        w = (R[2] - R[6]) / s, x = (R[1] + R[3]) / s, y = 0.25 * s, z = (R[5] + R[7]) / s;
    } else {
        const double s = 2.0 * sqrt(1.0 - R[0] - R[4] + R[8]);
        w = (R[3] - R[1]) / s, x = (R[2] + R[6]) / s, y = (R[5] + R[7]) / s, z = 0.25 * s;
    }
    const double n = sqrt(w * w + x * x + y * y + z * z) * (w < 0 ? -1.0 : 1.0);
    q[0] = w / n, q[1] = x / n, q[2] = y / n, q[3] = z / n;
}

void ptreg_transform_from_axis_angle(const double axis[3], double angle_deg, const double t[3], double T[16])
{
    double n = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    double half = 0.5 * angle_deg * (3.14159265358979323846 / 180.0);
    double s = sin(half) / n;
    double q[4] = {cos(half), axis[0] * s, axis[1] * s, axis[2] * s};
    double R[9];
    ptreg_quaternion_to_matrix(q, R);
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            T[4 * r + c] = R[3 * r + c];
        T[4 * r + 3] = t ? t[r] : 0.0;
    }
}

static double det3(const double R[9])
{
    return R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) + R[2] * (R[3] * R[7] - R[4] * R[6]);
}

double ptreg_transform_rigidity_error(const double T[16])
{
    for (int i = 0; i < 16; i++)
        if (!isfinite(T[i]))
            return INFINITY;
    if (T[12] != 0.0 || T[13] != 0.0 || T[14] != 0.0 || T[15] != 1.0)
        return INFINITY;
    double R[9], worst = 0.0;
    ptreg_transform_rotation(T, R);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            double dot = 0.0;
            for (int k = 0; k < 3; k++)
                dot += R[3 * k + a] * R[3 * k + b];
            worst = fmax(worst, fabs(dot - (a == b ? 1.0 : 0.0)));
        }
    return fmax(worst, fabs(det3(R) - 1.0));
}

int ptreg_transform_is_rigid(const double T[16], double tol) { return ptreg_transform_rigidity_error(T) <= tol; }

double ptreg_transform_make_rigid(double T[16])
{
    const double before = ptreg_transform_rigidity_error(T);
    if (!(before <= PTREG_NEARLY_RIGID_TOL))
        return before;
    /* Newton's iteration for the polar factor, R <- (R + R^-T) / 2: from a
     * matrix this near a rotation it converges in a few steps */
    double R[9];
    ptreg_transform_rotation(T, R);
    for (int it = 0; it < 20; it++) {
        const double d = det3(R);
        const double inv_t[9] = {
            (R[4] * R[8] - R[5] * R[7]) / d, (R[5] * R[6] - R[3] * R[8]) / d, (R[3] * R[7] - R[4] * R[6]) / d,
            (R[2] * R[7] - R[1] * R[8]) / d, (R[0] * R[8] - R[2] * R[6]) / d, (R[1] * R[6] - R[0] * R[7]) / d,
            (R[1] * R[5] - R[2] * R[4]) / d, (R[2] * R[3] - R[0] * R[5]) / d, (R[0] * R[4] - R[1] * R[3]) / d};
        double change = 0.0;
        for (int i = 0; i < 9; i++) {
            const double next = 0.5 * (R[i] + inv_t[i]);
            change = fmax(change, fabs(next - R[i]));
            R[i] = next;
        }
        if (change < 1e-16)
            break;
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            T[4 * r + c] = R[3 * r + c];
    return before;
}

double ptreg_transform_quaternion_difference(const double A[16], const double B[16])
{
    double RA[9], RB[9], qa[4], qb[4], plus = 0.0, minus = 0.0;
    ptreg_transform_rotation(A, RA);
    ptreg_transform_rotation(B, RB);
    /* a parity measure must fail a NaN lane: fmax and fmin would drop the NaN
     * (and matrix_to_quaternion's branches could turn it into a number) */
    for (int i = 0; i < 9; i++)
        if (!isfinite(RA[i]) || !isfinite(RB[i]))
            return NAN;
    ptreg_matrix_to_quaternion(RA, qa);
    ptreg_matrix_to_quaternion(RB, qb);
    for (int k = 0; k < 4; k++) {
        plus = fmax(plus, fabs(qa[k] - qb[k]));
        minus = fmax(minus, fabs(qa[k] + qb[k]));
    }
    return fmin(plus, minus);
}
