/* Core: Horn's solver (random rotations, near-180 degrees, weights, far from
 * the origin), the symmetric eigen solver, transforms, the RNG, the
 * median and the latency histogram. */
#include "check.h"
#include "ptreg/core.h"
#include "core/numeric.h"

static void random_rotation(ptreg_rng *rng, double angle_deg, double T[16])
{
    double axis[3] = {ptreg_rng_normal(rng), ptreg_rng_normal(rng), ptreg_rng_normal(rng)};
    double t[3] = {ptreg_rng_normal(rng), ptreg_rng_normal(rng), ptreg_rng_normal(rng)};
    ptreg_transform_from_axis_angle(axis, angle_deg, t, T);
}

static void apply_d(const double T[16], const double p[3], double out[3])
{
    for (int r = 0; r < 3; r++)
        out[r] = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
}

static double max_abs_diff(const double A[16], const double B[16])
{
    double m = 0.0;
    for (int i = 0; i < 16; i++)
        m = check_worse(m, fabs(A[i] - B[i]));
    return m;
}

/* Exact pairs in double: Horn must return the rotation to 1e-9. */
static void test_horn_exact(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 42);
    double angles[] = {0.0, 1e-6, 0.5, 20.0, 90.0, 135.0, 179.0, 179.999, 180.0};
    for (size_t a = 0; a < sizeof angles / sizeof angles[0]; a++)
        for (int trial = 0; trial < 20; trial++) {
            double T[16], E[16];
            random_rotation(&rng, angles[a], T);
            double offset = trial % 2 ? 1e4 : 0.0; /* far from the origin: moment digits */
            ptreg_moments m;
            double ref[3] = {offset, offset, offset};
            ptreg_moments_init(&m, ref, ref);
            size_t n = 3 + (size_t)trial * 7;
            for (size_t i = 0; i < n; i++) {
                double p[3], q[3];
                for (int k = 0; k < 3; k++)
                    p[k] = offset + ptreg_rng_normal(&rng);
                apply_d(T, p, q);
                ptreg_moments_add(&m, p, q, 0.5 + ptreg_rng_uniform(&rng));
            }
            int degenerate = 1;
            CHECK(ptreg_horn_solve(&m, E, &degenerate, NULL) == PTREG_OK);
            CHECK(!degenerate);
            double tol = offset > 0 ? 1e-9 * offset : 1e-9;
            CHECK_MSG(max_abs_diff(T, E) <= (offset > 0 ? 1e-6 : tol), "angle %g trial %d: error %g", angles[a], trial,
                      max_abs_diff(T, E));
            double rot_err = 0.0;
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    rot_err = check_worse(rot_err, fabs(T[4 * r + c] - E[4 * r + c]));
            CHECK_MSG(rot_err <= 1e-9, "angle %g trial %d: rotation error %g", angles[a], trial, rot_err);
            CHECK(ptreg_transform_is_rigid(E, 1e-12));
        }
}

/* Float convenience entry on noisy data equals a direct least-squares check:
 * perturbing the answer never lowers the cost. */
static void test_horn_float_optimal(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 7);
    size_t n = 200;
    float *p = malloc(3 * n * sizeof(float)), *q = malloc(3 * n * sizeof(float));
    double T[16], E[16];
    random_rotation(&rng, 60.0, T);
    for (size_t i = 0; i < n; i++) {
        double a[3] = {ptreg_rng_normal(&rng), ptreg_rng_normal(&rng), ptreg_rng_normal(&rng)}, b[3];
        apply_d(T, a, b);
        for (int k = 0; k < 3; k++) {
            p[3 * i + k] = (float)a[k];
            q[3 * i + k] = (float)(b[k] + 0.05 * ptreg_rng_normal(&rng));
        }
    }
    CHECK(ptreg_horn(p, q, NULL, n, E, NULL) == PTREG_OK);
    double base = 0.0;
    for (size_t i = 0; i < n; i++) {
        double a[3] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]}, b[3];
        apply_d(E, a, b);
        for (int k = 0; k < 3; k++)
            base += (b[k] - q[3 * i + k]) * (b[k] - q[3 * i + k]);
    }
    for (int trial = 0; trial < 50; trial++) {
        double D[16], P[16];
        random_rotation(&rng, 0.05, D);
        D[3] *= 1e-3, D[7] *= 1e-3, D[11] *= 1e-3;
        ptreg_transform_mul(D, E, P);
        double cost = 0.0;
        for (size_t i = 0; i < n; i++) {
            double a[3] = {p[3 * i], p[3 * i + 1], p[3 * i + 2]}, b[3];
            apply_d(P, a, b);
            for (int k = 0; k < 3; k++)
                cost += (b[k] - q[3 * i + k]) * (b[k] - q[3 * i + k]);
        }
        CHECK(cost >= base * (1 - 1e-12));
    }
    free(p);
    free(q);
}

static void test_horn_degenerate(void)
{
    ptreg_moments m;
    ptreg_moments_init(&m, NULL, NULL);
    double T[16];
    int degenerate = 0;
    ptreg_error err;
    CHECK(ptreg_horn_solve(&m, T, &degenerate, &err) == PTREG_ERR_RUNTIME);
    /* collinear points: rotation about the line is free */
    for (int i = 0; i < 5; i++) {
        double p[3] = {i, 0, 0}, q[3] = {i + 1.0, 2, 3};
        ptreg_moments_add(&m, p, q, 1.0);
    }
    CHECK(ptreg_horn_solve(&m, T, &degenerate, &err) == PTREG_OK);
    CHECK(degenerate);
    CHECK(ptreg_transform_is_rigid(T, 1e-12));
}

static void test_check_shape(void)
{
    const float three[9] = {0, 0, 0, 1, 0, 0, -0.0f, 0, 0}, same[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2};
    const float signed_zero[9] = {0, 0, 0, -0.0f, 0, 0, 0, -0.0f, -0.0f};
    ptreg_error err;
    CHECK(ptreg_check_shape("A", three, 3, &err) == PTREG_OK);
    CHECK(ptreg_check_shape("A", three, 1, &err) == PTREG_ERR_ARG);
    CHECK(!strcmp(err.message, "A: 1 point: at least 3 are needed"));
    CHECK(ptreg_check_shape("B", three, 0, &err) == PTREG_ERR_ARG);
    CHECK(!strcmp(err.message, "B: 0 points: at least 3 are needed"));
    CHECK(ptreg_check_shape("C", same, 3, &err) == PTREG_ERR_ARG);
    CHECK(!strcmp(err.message, "C: all 3 points are the same point"));
    CHECK(ptreg_check_shape("D", signed_zero, 3, &err) == PTREG_ERR_ARG); /* -0 is 0 */
}

/* The box: NaN passed over, the bound held kept on a -0/+0 tie, and the
 * bounds of two pieces grown in turn equal to the whole's. */
static void test_points_bounds(void)
{
    const float xyz[15] = {1, NAN, -0.0f, -2, 5, 0.0f, 3, -1, 7, NAN, NAN, NAN, 0.5f, 4, -3};
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(xyz, 5, lo, hi);
    CHECK(lo[0] == -2 && lo[1] == -1 && lo[2] == -3);
    CHECK(hi[0] == 3 && hi[1] == 5 && hi[2] == 7);
    double zlo[3] = {INFINITY, INFINITY, INFINITY}, zhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(xyz, 2, zlo, zhi); /* z: -0 then +0: -0 stays low and high */
    CHECK(zlo[2] == 0.0 && signbit(zlo[2]) && signbit(zhi[2]));
    double plo[3] = {INFINITY, INFINITY, INFINITY}, phi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(xyz, 2, plo, phi);
    ptreg_points_bounds(xyz + 6, 3, plo, phi);
    CHECK(!memcmp(plo, lo, sizeof lo) && !memcmp(phi, hi, sizeof hi));
    double elo[3] = {INFINITY, INFINITY, INFINITY}, ehi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(xyz, 0, elo, ehi); /* no points: the starting values */
    CHECK(elo[0] == INFINITY && ehi[2] == -INFINITY);
}

static void test_median(void)
{
    double odd[5] = {3, -1, 7, 2, 2}, even[4] = {4, 1, 10, 2}, one[1] = {-5};
    CHECK(ptreg_median(odd, 5) == 2.0);
    CHECK(odd[0] == -1 && odd[4] == 7); /* sorted in place */
    CHECK(ptreg_median(even, 4) == 3.0);
    CHECK(ptreg_median(one, 1) == -5.0);
}

static void test_eigen(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 3);
    for (int n = 1; n <= 8; n++)
        for (int trial = 0; trial < 20; trial++) {
            double A[64], V[64], ev[8];
            for (int i = 0; i < n; i++)
                for (int j = 0; j <= i; j++)
                    A[i * n + j] = A[j * n + i] = trial == 0 ? (i == j) : ptreg_rng_normal(&rng);
            ptreg_eigen_symmetric(A, n, ev, V);
            for (int k = 0; k < n; k++) {
                if (k)
                    CHECK(ev[k - 1] <= ev[k]);
                for (int i = 0; i < n; i++) {
                    double av = 0.0;
                    for (int j = 0; j < n; j++)
                        av += A[i * n + j] * V[j * n + k];
                    CHECK_NEAR(av, ev[k] * V[i * n + k], 1e-12 * (1 + fabs(ev[k])));
                }
            }
        }
}

static void test_transforms(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 5);
    double T[16], I[16], P[16], id[16];
    random_rotation(&rng, 33.0, T);
    ptreg_transform_invert_rigid(T, I);
    ptreg_transform_mul(T, I, P);
    ptreg_transform_identity(id);
    CHECK(max_abs_diff(P, id) < 1e-14);
    double angle, trans;
    ptreg_transform_difference(T, T, &angle, &trans);
    CHECK_NEAR(angle, 0.0, 1e-9);
    CHECK_NEAR(trans, 0.0, 1e-12);
    ptreg_transform_difference(id, T, &angle, &trans);
    CHECK_NEAR(angle, 33.0, 1e-9);
    CHECK_NEAR(trans, sqrt(T[3] * T[3] + T[7] * T[7] + T[11] * T[11]), 1e-12);
    double axis[3] = {0, 0, 1};
    ptreg_transform_from_axis_angle(axis, 90.0, NULL, T);
    float p[3] = {1, 0, 0}, out[3];
    ptreg_transform_points(T, p, out, 1);
    CHECK_NEAR(out[0], 0.0, 1e-7);
    CHECK_NEAR(out[1], 1.0, 1e-7);
    CHECK(!ptreg_transform_is_rigid((double[16]){2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 1e-6));
    CHECK(!ptreg_transform_is_rigid((double[16]){-1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 1e-6));
}

static void test_rng(void)
{
    ptreg_rng a, b;
    ptreg_rng_seed(&a, 9);
    ptreg_rng_seed(&b, 9);
    double mean = 0.0, var = 0.0;
    for (int i = 0; i < 100000; i++) {
        CHECK(ptreg_rng_next(&a) == ptreg_rng_next(&b));
        double x = ptreg_rng_normal(&a);
        ptreg_rng_normal(&b);
        mean += x;
        var += x * x;
    }
    CHECK_NEAR(mean / 1e5, 0.0, 0.02);
    CHECK_NEAR(var / 1e5, 1.0, 0.02);
}

/* The fixed histogram against the exact list: each percentile at or
 * above the exact nearest rank and within 0.2% of it (or the max), max
 * exact; the ends: below 2^-10 ms, above 2^20 ms, a single value. */
static void test_latency_histogram(void)
{
    ptreg_latency_histogram h;
    CHECK(ptreg_latency_histogram_init(&h) == 0);
    double none[5] = {1, 1, 1, 1, 1};
    ptreg_latency_histogram_percentiles(&h, none);
    CHECK(none[0] == 0.0 && none[3] == 0.0 && none[4] == 0.0);
    enum { N = 20000 };
    static double ms[N];
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 54);
    for (size_t i = 0; i < N; i++) {
        ms[i] = i % 7 == 0 ? 3.25 : exp(log(1e-4) + ptreg_rng_uniform(&rng) * log(1e10)); /* 1e-4 .. 1e6 ms */
        ptreg_latency_histogram_add(&h, ms[i]);
    }
    double exact[5], approx[5];
    CHECK(ptreg_latency_percentiles(ms, N, exact) == 0);
    ptreg_latency_histogram_percentiles(&h, approx);
    for (int k = 0; k < 3; k++) {
        CHECK(approx[k] >= exact[k]);
        CHECK(approx[k] <= exact[k] * (1.0 + 1.0 / 512) || approx[k] == exact[3]);
    }
    CHECK(approx[3] == exact[3]);
    CHECK_NEAR(approx[4], exact[4], 1e-9 * exact[4]);
    ptreg_latency_histogram_free(&h);

    const double ends[3] = {1e-6, 5e6, 7e6}; /* under the first bucket, over the last */
    CHECK(ptreg_latency_histogram_init(&h) == 0);
    for (int i = 0; i < 3; i++)
        ptreg_latency_histogram_add(&h, ends[i]);
    ptreg_latency_histogram_percentiles(&h, approx);
    CHECK(approx[0] == 7e6 && approx[2] == 7e6 && approx[3] == 7e6); /* beyond 2^20 ms: the max */
    ptreg_latency_histogram_free(&h);

    CHECK(ptreg_latency_histogram_init(&h) == 0);
    ptreg_latency_histogram_add(&h, 4.0); /* a power of two: its own bucket's bottom */
    ptreg_latency_histogram_percentiles(&h, approx);
    CHECK(approx[0] == 4.0 && approx[2] == 4.0 && approx[4] == 4.0);
    ptreg_latency_histogram_free(&h);
}

int main(void)
{
    test_horn_exact();
    test_horn_float_optimal();
    test_horn_degenerate();
    test_check_shape();
    test_points_bounds();
    test_median();
    test_latency_histogram();
    test_eigen();
    test_transforms();
    test_rng();
    return check_exit();
}
