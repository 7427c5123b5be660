/* Coherent Point Drift and the Gauss transform under it: the transform
 * against a plain double loop (every channel count, culling on), the same
 * bits for any thread count, known rigid, similarity, affine and smooth
 * deformations recovered, the fast variant against the full one, warping
 * other points, and bad input. pycpd's own answers are tests/cli/cpd.sh's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"
#include "ptreg/ptreg.h"

/* n points on a bumpy closed surface of radius ~1, in random order. */
static float *surface(size_t n, uint64_t seed)
{
    float *p = malloc(3 * n * sizeof(float));
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; p && i < n; i++) {
        double u[3] = {ptreg_rng_normal(&rng), ptreg_rng_normal(&rng), ptreg_rng_normal(&rng)};
        const double len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        const double r = 1.0 + 0.25 * sin(3.0 * u[0] / len) * cos(2.0 * u[1] / len);
        for (int k = 0; k < 3; k++)
            p[3 * i + k] = (float)(u[k] / len * r * (k == 2 ? 0.6 : 1.0));
    }
    return p;
}

static void add_noise(float *p, size_t n, double sd, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; i < 3 * n; i++)
        p[i] += (float)(sd * ptreg_rng_normal(&rng));
}

static double rms_between(const float *a, const float *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < 3 * n; i++)
        s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(s / (double)n);
}

/* ---- the Gauss transform --------------------------------------------------------- */

static void reference_transform(const double *rows, size_t n, const double *cols, size_t m, const double *w,
                                int channels, double scale, double *out)
{
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < channels; c++) {
            double s = 0.0;
            for (size_t j = 0; j < m; j++) {
                double d2 = 0.0;
                for (int k = 0; k < 3; k++)
                    d2 += (rows[3 * i + k] - cols[3 * j + k]) * (rows[3 * i + k] - cols[3 * j + k]);
                s += exp(-scale * d2) * w[(size_t)channels * j + (size_t)c];
            }
            out[(size_t)channels * i + (size_t)c] = s;
        }
}

/* Points in Morton order, as CPD hands them over: far tiles get culled. */
static double *sorted_points(const float *p, size_t n, double shift)
{
    uint32_t *order = malloc(n * sizeof(uint32_t));
    double *out = malloc(3 * n * sizeof(double));
    if (order && out && !ptreg_morton_order(p, n, order))
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++)
                out[3 * i + k] = p[3 * (size_t)order[i] + k] + shift;
    free(order);
    return out;
}

static void test_gauss_transform(void)
{
    const size_t n = 700, m = 900;
    float *a = surface(n, 1), *b = surface(m, 2);
    double *rows = sorted_points(a, n, 100.0), *cols = sorted_points(b, m, 100.0); /* far from zero: centred */
    double *w = malloc(4 * m * sizeof(double)), *ref = malloc(4 * n * sizeof(double));
    double *got = malloc(4 * n * sizeof(double)), *again = malloc(4 * n * sizeof(double));
    REQUIRE(a && b && rows && cols && w && ref && got && again);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 3);
    for (size_t j = 0; j < 4 * m; j++)
        w[j] = ptreg_rng_uniform(&rng) - 0.3;
    const int channel_counts[] = {1, 3, 4};
    const double scales[] = {0.5, 4000.0}; /* wide: nothing culled; narrow: most tiles culled */
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 3; c++) {
            const int ch = channel_counts[c];
            reference_transform(rows, n, cols, m, w, ch, scales[s], ref);
            double scale_sum = 0.0;
            for (size_t i = 0; i < (size_t)ch * n; i++)
                scale_sum = check_worse(scale_sum, fabs(ref[i]));
            ptreg_pair_options opt;
            ptreg_pair_options_default(&opt);
            opt.col_tile = 128;
            for (int prec = 0; prec < 2; prec++) {
                opt.precision = prec ? PTREG_PRECISION_FP64 : PTREG_PRECISION_FP32;
                ptreg_pair_cull cull = {0, 0, 0};
                ptreg_error err;
                CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, ch, scales[s], &opt, got, &cull, &err) == 0);
                const double worst = check_max_abs_diff(got, ref, (size_t)ch * n);
                CHECK_MSG(worst <= (prec ? 1e-12 : 2e-6) * (scale_sum + 1.0), "channels %d scale %g %s: %g", ch,
                          scales[s], prec ? "fp64" : "fp32", worst);
                if (!prec)
                    CHECK_MSG(s == 0 ? cull.skipped == 0 : cull.skipped > 0, "scale %g: %g of %g sweeps culled",
                              scales[s], cull.skipped, cull.sweeps);
                if (prec && s == 1) { /* float64 dropping terms below 2^-64: far tiles go, the sums stay */
                    ptreg_pair_cull drop = {0, 0, -64};
                    CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, ch, scales[s], &opt, again, &drop, &err) ==
                          0);
                    CHECK_MSG(drop.skipped > cull.skipped, "2^-64: %g sweeps skipped, %g without", drop.skipped,
                              cull.skipped);
                    CHECK(check_max_abs_diff(again, ref, (size_t)ch * n) <= 1e-12 * (scale_sum + 1.0));
                }
                /* the same bits on one thread as on two */
                ptreg_set_num_threads(1);
                CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, ch, scales[s], &opt, again, NULL, &err) == 0);
                ptreg_set_num_threads(0);
                CHECK(!memcmp(got, again, (size_t)ch * n * sizeof(double)));
            }
        }
    ptreg_pair_options opt;
    ptreg_pair_options_default(&opt);
    ptreg_error err;
    CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, 2, 1.0, &opt, got, NULL, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, 1, 0.0, &opt, got, NULL, &err) == PTREG_ERR_ARG);
    opt.precision = PTREG_PRECISION_FP16;
    CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, 1, 1.0, &opt, got, NULL, &err) == PTREG_ERR_ARG);
    opt.precision = PTREG_PRECISION_FP32;
    w[5] = NAN;
    CHECK(ptreg_pair_gauss_transform(rows, n, cols, m, w, 4, 1.0, &opt, got, NULL, &err) == PTREG_ERR_ARG);
    free(a), free(b), free(rows), free(cols), free(w), free(ref), free(got), free(again);
}

/* ---- CPD ------------------------------------------------------------------------- */

/* The target: the source through T (3 x 4 row-major), noisy, plus
 * outliers in its box. */
static float *target_of(const float *src, size_t n, const double T[12], size_t outliers, double noise)
{
    float *t = malloc(3 * (n + outliers) * sizeof(float));
    if (!t)
        return NULL;
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < 3; r++)
            t[3 * i + r] = (float)(T[4 * r] * src[3 * i] + T[4 * r + 1] * src[3 * i + 1] +
                                   T[4 * r + 2] * src[3 * i + 2] + T[4 * r + 3]);
    add_noise(t, n, noise, 9);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 10);
    for (size_t i = n; i < n + outliers; i++)
        for (int k = 0; k < 3; k++)
            t[3 * i + k] = (float)(2.4 * ptreg_rng_uniform(&rng) - 1.2 + T[4 * k + 3]);
    return t;
}

static void linear_of(const double T[16], double L[9])
{
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            L[3 * r + c] = T[4 * r + c];
}

static double max_entry_diff(const double T[16], const double want[12])
{
    double worst = 0.0;
    for (int k = 0; k < 12; k++)
        worst = check_worse(worst, fabs(T[k] - want[k]));
    return worst;
}

static void test_linear_transforms(void)
{
    const size_t n = 1200, outliers = 60;
    float *src = surface(n, 4);
    REQUIRE(src != NULL);
    /* a rotation of 25 degrees about (1, 2, 2)/3, scaled for similarity,
     * sheared for affine */
    double R[16];
    const double axis[3] = {1.0 / 3, 2.0 / 3, 2.0 / 3}, zero[3] = {0, 0, 0};
    ptreg_transform_from_axis_angle(axis, 25.0, zero, R);
    const double t[3] = {0.3, -0.2, 0.15};
    struct {
        ptreg_cpd_transform kind;
        double scale, shear, tol;
    } cases[] = {
        {PTREG_CPD_RIGID, 1.0, 0.0, 2e-3}, {PTREG_CPD_SIMILARITY, 1.3, 0.0, 2e-3}, {PTREG_CPD_AFFINE, 1.0, 0.2, 5e-3}};
    for (int c = 0; c < 3; c++) {
        double want[12];
        for (int r = 0; r < 3; r++) {
            for (int k = 0; k < 3; k++)
                want[4 * r + k] = cases[c].scale * R[4 * r + k] + (r == 0 && k == 1 ? cases[c].shear : 0.0);
            want[4 * r + 3] = t[r];
        }
        float *tgt = target_of(src, n, want, outliers, 0.003);
        REQUIRE(tgt != NULL);
        ptreg_cpd_options opt;
        ptreg_cpd_options_default(&opt);
        opt.transform = cases[c].kind;
        opt.w = 0.1;
        ptreg_cpd_result res;
        ptreg_error err;
        const ptreg_status st = ptreg_cpd(src, n, tgt, n + outliers, &opt, &res, &err);
        CHECK_MSG(st == 0, "case %d: %s", c, err.message);
        if (st)
            continue;
        const double diff = max_entry_diff(res.transformation, want);
        CHECK_MSG(diff <= cases[c].tol, "%s: the 3 x 4 is %g off (%d iterations, %s)",
                  c == 0   ? "rigid"
                  : c == 1 ? "similarity"
                           : "affine",
                  diff, res.iterations, ptreg_stop_reason_name(res.stop_reason));
        if (cases[c].kind == PTREG_CPD_SIMILARITY)
            CHECK_MSG(fabs(res.scale - 1.3) <= 1e-3, "scale %.6f, not 1.3", res.scale);
        if (cases[c].kind == PTREG_CPD_RIGID) {
            double L[9], rtr = 0.0;
            linear_of(res.transformation, L);
            for (int k = 0; k < 3; k++)
                rtr = check_worse(
                    rtr, fabs(L[3 * k] * L[3 * k] + L[3 * k + 1] * L[3 * k + 1] + L[3 * k + 2] * L[3 * k + 2] - 1.0));
            CHECK_MSG(rtr <= 1e-9, "rigid: rows of R have |r|^2 - 1 = %g", rtr);
        }
        /* the moved source is the transform applied; warp moves other points alike */
        float *moved = malloc(3 * n * sizeof(float));
        REQUIRE(moved != NULL);
        CHECK(ptreg_cpd_warp(&res, src, n, moved, &err) == 0);
        CHECK_MSG(rms_between(moved, res.moved, n) <= 1e-5, "warp differs from the moved source by %g",
                  rms_between(moved, res.moved, n));
        CHECK_MSG(res.converged && res.stop_reason == PTREG_STOP_CONVERGED,
                  "case %d: %d iterations, sigma2 %g, objective %g", c, res.iterations, res.sigma2, res.objective);
        /* the same bits on one thread */
        ptreg_cpd_result one;
        ptreg_set_num_threads(1);
        REQUIRE(ptreg_cpd(src, n, tgt, n + outliers, &opt, &one, &err) == 0);
        ptreg_set_num_threads(0);
        CHECK(!memcmp(one.transformation, res.transformation, sizeof res.transformation));
        CHECK(!memcmp(one.moved, res.moved, 3 * n * sizeof(float)));
        ptreg_cpd_result_free(&one);
        ptreg_cpd_result_free(&res);
        free(moved);
        free(tgt);
    }
    free(src);
}

/* A smooth bend: the truth's displacement d(y) and the moved source. */
static void bend(const float *src, size_t n, float *out, float *field)
{
    for (size_t i = 0; i < n; i++) {
        const double x = src[3 * i], y = src[3 * i + 1];
        const double d[3] = {0.08 * sin(1.5 * y), 0.06 * cos(1.2 * x), 0.1 * sin(1.3 * x) * cos(0.9 * y)};
        for (int k = 0; k < 3; k++) {
            field[3 * i + k] = (float)d[k];
            out[3 * i + k] = (float)(src[3 * i + k] + d[k]);
        }
    }
}

static void test_deformable(void)
{
    const size_t n = 1000;
    float *src = surface(n, 5), *tgt = malloc(3 * n * sizeof(float)), *field = malloc(3 * n * sizeof(float));
    REQUIRE(src && tgt && field);
    bend(src, n, tgt, field);
    add_noise(tgt, n, 0.002, 6);
    double field_rms = 0.0;
    for (size_t i = 0; i < 3 * n; i++)
        field_rms += (double)field[i] * field[i];
    field_rms = sqrt(field_rms / (double)n);
    ptreg_cpd_options opt;
    ptreg_cpd_options_default(&opt);
    opt.transform = PTREG_CPD_DEFORMABLE;
    opt.beta = 0.7;
    opt.lambda = 2.0;
    opt.w = 0.02;
    opt.max_iter = 60;
    ptreg_cpd_result res;
    ptreg_error err;
    REQUIRE(ptreg_cpd(src, n, tgt, n, &opt, &res, &err) == 0);
    /* each source point moved to where the bend takes it */
    float *truth = malloc(3 * n * sizeof(float));
    REQUIRE(truth != NULL);
    bend(src, n, truth, field);
    const double error = rms_between(res.moved, truth, n);
    CHECK_MSG(error <= 0.15 * field_rms, "deformable: %g from the truth, the field's RMS %g", error, field_rms);
    CHECK(res.cg_iterations > 0 && res.centres && res.coefficients);
    /* warping the source itself gives the moved source */
    float *warped = malloc(3 * n * sizeof(float));
    REQUIRE(warped != NULL);
    CHECK(ptreg_cpd_warp(&res, src, n, warped, &err) == 0);
    CHECK_MSG(rms_between(warped, res.moved, n) <= 1e-5 * field_rms + 1e-6, "warp: %g",
              rms_between(warped, res.moved, n));
    /* the fast variant with G's rank (it decays fast at this beta) is the full method */
    ptreg_cpd_options fast = opt;
    fast.low_rank = 150;
    ptreg_cpd_result lr;
    REQUIRE(ptreg_cpd(src, n, tgt, n, &fast, &lr, &err) == 0);
    CHECK_MSG(rms_between(lr.moved, res.moved, n) <= 0.02 * field_rms, "low rank 150 vs full: %g",
              rms_between(lr.moved, res.moved, n));
    CHECK(lr.cg_iterations == 0);
    /* Jacobi's preconditioner solves the same systems, in more steps (the
     * first iterations, where sigma^2 is large and both converge) */
    opt.max_iter = 4;
    opt.cg_tol = 1e-9;
    ptreg_cpd_options jacobi = opt;
    jacobi.precondition_rank = 0;
    jacobi.cg_iter = 3000;
    ptreg_cpd_result a, b;
    REQUIRE(ptreg_cpd(src, n, tgt, n, &opt, &a, &err) == 0);
    REQUIRE(ptreg_cpd(src, n, tgt, n, &jacobi, &b, &err) == 0);
    CHECK_MSG(rms_between(a.moved, b.moved, n) <= 1e-4 * field_rms, "Jacobi vs Woodbury: %g",
              rms_between(a.moved, b.moved, n));
    CHECK_MSG(b.cg_iterations > a.cg_iterations, "CG steps: %d with Jacobi, %d with eigenpairs", b.cg_iterations,
              a.cg_iterations);
    ptreg_cpd_result_free(&a), ptreg_cpd_result_free(&b), ptreg_cpd_result_free(&lr), ptreg_cpd_result_free(&res);
    free(src), free(tgt), free(field), free(truth), free(warped);
}

static void test_bad_input(void)
{
    float *p = surface(50, 7);
    REQUIRE(p != NULL);
    ptreg_cpd_options opt;
    ptreg_cpd_result res;
    ptreg_error err;
    ptreg_cpd_options_default(&opt);
    opt.w = 1.0;
    CHECK(ptreg_cpd(p, 50, p, 50, &opt, &res, &err) == PTREG_ERR_ARG && strstr(err.message, "w"));
    ptreg_cpd_options_default(&opt);
    opt.beta = 0.0;
    CHECK(ptreg_cpd(p, 50, p, 50, &opt, &res, &err) == PTREG_ERR_ARG && strstr(err.message, "beta"));
    ptreg_cpd_options_default(&opt);
    CHECK(ptreg_cpd(p, 0, p, 50, &opt, &res, &err) == PTREG_ERR_ARG && strstr(err.message, "source"));
    CHECK(ptreg_cpd(p, 50, p, 0, &opt, &res, &err) == PTREG_ERR_ARG && strstr(err.message, "target"));
    p[7] = NAN;
    CHECK(ptreg_cpd(p, 50, p + 30, 40, &opt, &res, &err) == PTREG_ERR_ARG && strstr(err.message, "source point 2"));
    p[7] = 0.0f;
    /* one point each, at the same place: no scale to start from */
    float one[3] = {1, 2, 3};
    CHECK(ptreg_cpd(one, 1, one, 1, &opt, &res, &err) == PTREG_ERR_ARG && strstr(err.message, "sigma2"));
    /* far apart against the sigma^2 given: no weight anywhere */
    float far[150];
    for (int i = 0; i < 150; i++)
        far[i] = p[i] + 1000.0f;
    opt.sigma2 = 1e-4;
    CHECK(ptreg_cpd(p, 50, far, 50, &opt, &res, &err) == PTREG_ERR_RUNTIME && strstr(err.message, "sigma"));
    /* a GPU named: refused, never a silent CPU run */
    ptreg_cpd_options_default(&opt);
    opt.device = (ptreg_device){PTREG_BACKEND_CUDA, 0};
    CHECK(ptreg_cpd(p, 50, p, 50, &opt, &res, &err) != 0);
    free(p);
}

int main(void)
{
    test_gauss_transform();
    test_linear_transforms();
    test_deformable();
    test_bad_input();
    return check_exit();
}
