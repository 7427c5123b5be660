/* LDDMM landmark shooting: the adjoint gradient against central finite
 * differences (float64, both integrators, several N, sigma, T); exact
 * properties of the flow (one landmark under Euler, zero momentum,
 * conserved total momentum, rigid-motion equivariance); float32 against
 * float64; thread-count determinism; a 2-D ellipse matched onto a circle;
 * the shared data's 80 <-> 80 pair when present; bad input; the engine
 * chosen once kept by a call of several sessions. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "check.h"
#include "ptreg/ptreg.h"

#include <stdint.h>
#include <unistd.h>
#include "hooks.h"
#include "core/numeric.h"
#include "reg/lddmm/lddmm_impl.h"

static void random_points(double *v, size_t n, double scale, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; i < 3 * n; i++)
        v[i] = scale * (ptreg_rng_uniform(&rng) * 2 - 1);
}

static ptreg_lddmm_options fp64(double sigma, int T, ptreg_lddmm_integrator integrator)
{
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    o.sigma = sigma;
    o.time_points = T;
    o.integrator = integrator;
    o.precision = PTREG_PRECISION_FP64;
    o.lambda = 10;
    o.gamma = 0.7;
    return o;
}

/* The relative error of the adjoint gradient against central differences. */
static double gradient_error(size_t n, double sigma, int T, ptreg_lddmm_integrator integrator, uint64_t seed)
{
    double *q0 = malloc(3 * n * sizeof *q0), *target = malloc(3 * n * sizeof *target);
    double *p0 = malloc(3 * n * sizeof *p0), *g = malloc(3 * n * sizeof *g);
    random_points(q0, n, 1.0, seed);
    random_points(target, n, 1.0, seed + 1);
    random_points(p0, n, 0.5, seed + 2);
    ptreg_lddmm_options o = fp64(sigma, T, integrator);
    double f;
    CHECK(ptreg_lddmm_objective(q0, target, n, p0, &o, &f, g, NULL, NULL) == PTREG_OK);
    double num = 0, den = 0;
    for (size_t i = 0; i < 3 * n; i++) {
        const double h = 1e-5, keep = p0[i];
        double fp, fm;
        p0[i] = keep + h;
        ptreg_lddmm_objective(q0, target, n, p0, &o, &fp, NULL, NULL, NULL);
        p0[i] = keep - h;
        ptreg_lddmm_objective(q0, target, n, p0, &o, &fm, NULL, NULL, NULL);
        p0[i] = keep;
        double fd = (fp - fm) / (2 * h);
        num += (fd - g[i]) * (fd - g[i]);
        den += g[i] * g[i];
    }
    free(q0), free(target), free(p0), free(g);
    return sqrt(num / den);
}

static void test_gradient(void)
{
    static const struct {
        size_t n;
        double sigma;
        int T;
    } cases[] = {{1, 1.0, 2}, {2, 0.5, 3}, {7, 0.8, 5}, {20, 1.5, 10}, {12, 0.3, 8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int rk = 0; rk < 2; rk++) {
            double e = gradient_error(cases[c].n, cases[c].sigma, cases[c].T, rk ? PTREG_LDDMM_RK2 : PTREG_LDDMM_EULER,
                                      100 + c);
            CHECK_MSG(e <= 1e-5, "n %zu sigma %g T %d %s: gradient off by %.3g (relative)", cases[c].n, cases[c].sigma,
                      cases[c].T, rk ? "rk2" : "euler", e);
        }
}

static void test_flow_properties(void)
{
    ptreg_lddmm_options o = fp64(0.7, 11, PTREG_LDDMM_EULER);
    /* one landmark: K = 1, dp/dt = 0, so q(1) = q0 + p0 exactly under Euler */
    const double q0[3] = {0.25, -1.5, 2.0}, p0[3] = {0.5, 0.25, -0.125};
    double q1[3], p1[3];
    CHECK(ptreg_lddmm_shoot(q0, p0, 1, &o, q1, p1, NULL, NULL) == PTREG_OK);
    for (int k = 0; k < 3; k++) {
        CHECK_NEAR(q1[k], q0[k] + p0[k], 1e-15);
        CHECK(p1[k] == p0[k]);
    }
    const size_t n = 30;
    double q[90], p[90], qa[90], pa[90], zero[90] = {0};
    random_points(q, n, 1.0, 7);
    random_points(p, n, 0.4, 8);
    for (int rk = 0; rk < 2; rk++) {
        o.integrator = rk ? PTREG_LDDMM_RK2 : PTREG_LDDMM_EULER;
        /* zero momentum: nothing moves */
        CHECK(ptreg_lddmm_shoot(q, zero, n, &o, qa, NULL, NULL, NULL) == PTREG_OK);
        CHECK(!memcmp(qa, q, sizeof q));
        /* total momentum is conserved (dp_i/dt sums to 0 pair by pair) */
        CHECK(ptreg_lddmm_shoot(q, p, n, &o, qa, pa, NULL, NULL) == PTREG_OK);
        for (int k = 0; k < 3; k++) {
            double before = 0, after = 0;
            for (size_t i = 0; i < n; i++)
                before += p[3 * i + (size_t)k], after += pa[3 * i + (size_t)k];
            CHECK_NEAR(after, before, 1e-12);
        }
        /* rotating and translating (q0, p0) rotates and translates q(1) */
        double T[16], axis[3] = {1, -2, 0.5}, t[3] = {3, -1, 2}, R[16];
        ptreg_transform_from_axis_angle(axis, 40, t, T);
        memcpy(R, T, sizeof R);
        R[3] = R[7] = R[11] = 0;
        double qm[90], pm[90], qb[90], expect[90];
        for (size_t i = 0; i < n; i++)
            for (int r = 0; r < 3; r++) {
                qm[3 * i + r] = T[4 * r + 3];
                pm[3 * i + r] = 0;
                expect[3 * i + r] = T[4 * r + 3];
                for (int c = 0; c < 3; c++) {
                    qm[3 * i + r] += T[4 * r + c] * q[3 * i + c];
                    pm[3 * i + r] += R[4 * r + c] * p[3 * i + c];
                    expect[3 * i + r] += T[4 * r + c] * qa[3 * i + c];
                }
            }
        CHECK(ptreg_lddmm_shoot(qm, pm, n, &o, qb, NULL, NULL, NULL) == PTREG_OK);
        double worst = 0;
        for (size_t i = 0; i < 3 * n; i++)
            worst = check_worse(worst, fabs(qb[i] - expect[i]));
        CHECK_MSG(worst < 1e-12, "%s: rigid motion moves q(1) off by %g", rk ? "rk2" : "euler", worst);
    }
}

/* float32 pair sums (float64 across tiles) against the float64 reference,
 * and 1 vs 2 threads. */
static void test_precision_and_threads(void)
{
    const size_t n = 700;
    double *q0 = malloc(3 * n * sizeof *q0), *target = malloc(3 * n * sizeof *target);
    double *p0 = malloc(3 * n * sizeof *p0), *g32 = malloc(3 * n * sizeof *g32), *g64 = malloc(3 * n * sizeof *g64);
    double *g2 = malloc(3 * n * sizeof *g2);
    random_points(q0, n, 3.0, 31);
    random_points(target, n, 3.0, 32);
    random_points(p0, n, 0.3, 33);
    for (int rk = 0; rk < 2; rk++) {
        ptreg_lddmm_options o = fp64(1.5, 12, rk ? PTREG_LDDMM_RK2 : PTREG_LDDMM_EULER);
        double f64, f32, f2;
        CHECK(ptreg_lddmm_objective(q0, target, n, p0, &o, &f64, g64, NULL, NULL) == PTREG_OK);
        o.precision = PTREG_PRECISION_FP32;
        ptreg_set_num_threads(1);
        CHECK(ptreg_lddmm_objective(q0, target, n, p0, &o, &f32, g32, NULL, NULL) == PTREG_OK);
        ptreg_set_num_threads(2);
        CHECK(ptreg_lddmm_objective(q0, target, n, p0, &o, &f2, g2, NULL, NULL) == PTREG_OK);
        CHECK_MSG(fabs(f32 - f64) <= 1e-5 * fabs(f64), "%s: fp32 objective %.9g vs fp64 %.9g (rel %.2g)",
                  rk ? "rk2" : "euler", f32, f64, fabs(f32 - f64) / fabs(f64));
        double num = 0, den = 0;
        for (size_t i = 0; i < 3 * n; i++)
            num += (g32[i] - g64[i]) * (g32[i] - g64[i]), den += g64[i] * g64[i];
        CHECK_MSG(sqrt(num / den) < 1e-4, "fp32 gradient off by %.3g", sqrt(num / den));
        CHECK_MSG(f2 == f32 && !memcmp(g2, g32, 3 * n * sizeof *g2), "1 and 2 threads differ");
    }
    ptreg_set_num_threads(0);
    free(q0), free(target), free(p0), free(g32), free(g64), free(g2);
}

/* An ellipse (semi-axes 1.5 and 0.6) onto the unit circle, 80 points by
 * index: the 2-D configuration on a generated pair. */
static void test_ellipse_to_circle(void)
{
    const size_t n = 80;
    double q0[240], target[240];
    for (size_t i = 0; i < n; i++) {
        double a = 2 * 3.14159265358979323846 * (double)i / (double)n;
        q0[3 * i] = 1.5 * cos(a), q0[3 * i + 1] = 0.6 * sin(a), q0[3 * i + 2] = 0;
        target[3 * i] = cos(a), target[3 * i + 1] = sin(a), target[3 * i + 2] = 0;
    }
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    o.sigma = 0.3;
    o.time_points = 20;
    o.lambda = 1000;
    o.gamma = 1;
    o.max_iter = 200;
    ptreg_lddmm_result r;
    CHECK(ptreg_lddmm_register(q0, target, n, NULL, &o, &r, NULL) == PTREG_OK);
    double cut = r.avg_distance_before / r.avg_distance_after;
    printf("ellipse -> circle: avg distance %.4g -> %.4g (%.0f-fold), objective %.4g, %d iterations, %d "
           "evaluations (%s)\n",
           r.avg_distance_before, r.avg_distance_after, cut, r.objective, r.iterations, r.evaluations, r.stop_detail);
    CHECK_MSG(cut >= 100, "average distance cut only %.1f-fold", cut);
    for (size_t i = 0; i < 3 * n; i += 3)
        CHECK(r.q1[i + 2] == 0 && r.p0[i + 2] == 0); /* stays in the plane */
    /* warp carries the landmarks themselves as the flow does */
    double *w = malloc(3 * n * sizeof *w);
    CHECK(ptreg_lddmm_warp(q0, r.p0, n, &o, q0, n, w, NULL) == PTREG_OK);
    double worst = 0;
    for (size_t i = 0; i < 3 * n; i++)
        worst = check_worse(worst, fabs(w[i] - r.q1[i]));
    CHECK_MSG(worst < 1e-9, "warping the landmarks misses q(1) by %g", worst);
    /* their paths start where they are and end where the warp takes them */
    const size_t T = (size_t)o.time_points;
    double *paths = malloc(3 * n * T * sizeof *paths);
    CHECK(ptreg_lddmm_warp_paths(q0, r.p0, n, &o, q0, n, paths, NULL) == PTREG_OK);
    double start = 0, end = 0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            start = check_worse(start, fabs(paths[3 * (i * T) + k] - q0[3 * i + k]));
            end = check_worse(end, fabs(paths[3 * (i * T + T - 1) + k] - w[3 * i + k]));
        }
    CHECK_MSG(start == 0.0, "the paths start %g from the points", start);
    CHECK_MSG(end < 1e-5, "the paths end %g from the warp's points", end);
    ptreg_error err;
    CHECK(ptreg_lddmm_warp_paths(q0, r.p0, n, &o, q0, n, NULL, &err) == PTREG_ERR_ARG);
    o.time_points = 1;
    CHECK(ptreg_lddmm_warp_paths(q0, r.p0, n, &o, q0, n, paths, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "1 time points") != NULL, "%s", err.message);
    free(paths);
    free(w);
    ptreg_lddmm_result_free(&r);
}

static void test_shared_pair(const char *data)
{
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/landmarks/shooting_test_2d_template.vtk", data);
    snprintf(b, sizeof b, "%s/landmarks/shooting_test_2d_target.vtk", data);
    ptreg_cloud ct, cg;
    if (ptreg_cloud_read(a, PTREG_FORMAT_AUTO, &ct, NULL) || ptreg_cloud_read(b, PTREG_FORMAT_AUTO, &cg, NULL)) {
        CHECK_MSG(0, "cannot read the 2-D landmark pair");
        return;
    }
    CHECK(ct.n == 80 && cg.n == 80);
    double q0[240], target[240];
    for (size_t i = 0; i < 240; i++)
        q0[i] = ct.xyz[i], target[i] = cg.xyz[i];
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    o.sigma = 0.3;
    o.time_points = 20;
    o.lambda = 1000;
    o.gamma = 1;
    ptreg_lddmm_result r;
    CHECK(ptreg_lddmm_register(q0, target, 80, NULL, &o, &r, NULL) == PTREG_OK);
    double cut = r.avg_distance_before / r.avg_distance_after;
    printf("shared 80 <-> 80: avg distance %.4g -> %.4g (%.0f-fold), objective %.4g, %d iterations (%s)\n",
           r.avg_distance_before, r.avg_distance_after, cut, r.objective, r.iterations, r.stop_detail);
    CHECK_MSG(cut >= 100, "average distance cut only %.1f-fold", cut);
    ptreg_lddmm_result_free(&r);
    ptreg_cloud_free(&ct);
    ptreg_cloud_free(&cg);
    /* the optic-nerve table: row 1 holds 5 landmarks S T N I V */
    snprintf(a, sizeof a, "%s/landmarks/optical_nerves.txt", data);
    double *xyz;
    size_t n;
    ptreg_error err;
    CHECK_MSG(ptreg_landmark_table_read(a, 1, &xyz, &n, &err) == PTREG_OK, "%s", err.message);
    CHECK(n == 5 && xyz[0] == 2580 && xyz[1] == 1060 && xyz[2] == 60.31 && xyz[14] == -542.77);
    free(xyz);
    CHECK(ptreg_landmark_table_read(a, 25, &xyz, &n, &err) == PTREG_ERR_FORMAT && strstr(err.message, "row 25"));
}

static void test_bad_input(void)
{
    double q[6] = {0, 0, 0, 1, 0, 0}, p[6] = {0}, f;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    ptreg_error err;
    o.sigma = 0;
    CHECK(ptreg_lddmm_objective(q, q, 2, p, &o, &f, NULL, NULL, &err) == PTREG_ERR_ARG);
    CHECK(strstr(err.message, "sigma") != NULL);
    o.sigma = -1;
    CHECK(ptreg_lddmm_shoot(q, p, 2, &o, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
    ptreg_lddmm_options_default(&o);
    o.time_points = 1;
    CHECK(ptreg_lddmm_shoot(q, p, 2, &o, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
    ptreg_lddmm_options_default(&o);
    q[4] = NAN;
    ptreg_lddmm_result r;
    CHECK(ptreg_lddmm_register(q, q, 2, NULL, &o, &r, &err) == PTREG_ERR_ARG);
    CHECK(strstr(err.message, "non-finite") != NULL);
    q[4] = 0;
    o.precision = PTREG_PRECISION_FP16;
    CHECK(ptreg_lddmm_shoot(q, p, 2, &o, NULL, NULL, NULL, &err) == PTREG_ERR_UNSUPPORTED);
    ptreg_lddmm_options_default(&o);
    CHECK(ptreg_lddmm_shoot(q, p, 0, &o, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
}

/* Results written and read back (exact doubles, both forms); bad results
 * fail with a line number and leave nothing allocated. */
static void test_result_files(void)
{
    const size_t n = 5;
    double q[15], p[15];
    random_points(q, n, 2.0, 41);
    random_points(p, n, 0.3, 42);
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    o.sigma = 0.7;
    o.time_points = 13;
    o.integrator = PTREG_LDDMM_RK2;
    char dir[] = "/tmp/ptreg-lddmm-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const char *exts[] = {"vtk", "csv"};
    for (int e = 0; e < 2; e++) {
        char path[256];
        snprintf(path, sizeof path, "%s/r.%s", dir, exts[e]);
        const ptreg_lddmm_model written = {n, q, p, o.sigma, o.time_points, o.integrator};
        CHECK(ptreg_lddmm_model_write(path, &written, NULL) == PTREG_OK);
        ptreg_lddmm_model m;
        ptreg_error err;
        CHECK_MSG(ptreg_lddmm_model_read(path, &m, &err) == PTREG_OK, "%s", err.message);
        CHECK(m.n == n && m.sigma == 0.7 && m.time_points == 13 && m.integrator == PTREG_LDDMM_RK2);
        CHECK(m.q0 && !memcmp(m.q0, q, sizeof q) && !memcmp(m.p0, p, sizeof p));
        ptreg_lddmm_model_free(&m);
        remove(path);
    }
    rmdir(dir);
    static const char *const bad[] = {
        "# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 2 double\n0 0 0 1 1 1\n",
        "# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nPOINTS 99999999999 double\n0 0 0\n",
        ("# vtk DataFile Version 3.0\nx\nASCII\nDATASET POLYDATA\nFIELD FieldData 1\nsigma 1 1 double\n0.5\n"
         "POINTS 1 double\n0 0 0\nPOINT_DATA 1\nVECTORS InitialMomentum double\n1 2\n"),
        "# ptreg lddmm sigma 0.5 time_points 5 integrator rk4\nx,y,z,px,py,pz\n0,0,0,0,0,0\n",
        "# ptreg lddmm sigma -1 time_points 5 integrator euler\nx,y,z,px,py,pz\n0,0,0,0,0,0\n",
        "# ptreg lddmm sigma 0.5 time_points 5 integrator euler\nx,y,z,px,py,pz\n0,0,0,0,0\n",
        "# ptreg lddmm sigma 0.5 time_points 5 integrator euler\nx,y,z,px,py,pz\n0,0,0,0,0,nan\n",
        "NRRD0004\n",
    };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        ptreg_lddmm_model m;
        ptreg_error err;
        ptreg_status st = ptreg_lddmm_model_read_memory(bad[b], strlen(bad[b]), "bad.vtk", &m, &err);
        CHECK_MSG(st == PTREG_ERR_FORMAT && strstr(err.message, "bad.vtk: line ") && !m.q0 && !m.p0 && !m.n,
                  "bad result %zu: status %d, '%s'", b, (int)st, err.message);
    }
    /* the fuzzer's first find: VECTORS whose name is missing at the end */
    char path[4096];
    snprintf(path, sizeof path, "%s/data/lddmm/fuzz_vectors_without_name.vtk", PTREG_TEST_SOURCE_DIR);
    ptreg_lddmm_model m;
    ptreg_error err;
    CHECK(ptreg_lddmm_model_read(path, &m, &err) == PTREG_ERR_FORMAT && !m.q0);
}

/* A call that opens several sessions keeps the engine it chose once
 * (lddmm_paths.c's steps): the sessions on a choice of the CPU run there,
 * with the same bits as the public calls, even under options that name a
 * device no call could choose. */
static void test_choice_kept(void)
{
    enum { n = 12, m = 5 };
    double q[3 * n], p[3 * n], x[3 * m];
    random_points(q, n, 1.0, 31);
    random_points(p, n, 0.3, 32);
    random_points(x, m, 1.0, 33);
    ptreg_lddmm_options o = fp64(0.8, 6, PTREG_LDDMM_RK2);
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    lddmm_choice c;
    CHECK(lddmm_choice_make(&o, n, &c, NULL) == PTREG_OK);
    CHECK(c.on.backend == PTREG_BACKEND_CPU && c.engine->base.backends == PTREG_BACKEND_BIT(PTREG_BACKEND_CPU));
    double want_w[3 * m], got_w[3 * m], want_q[3 * n], got_q[3 * n], want_p[3 * n], got_p[3 * n];
    CHECK(ptreg_lddmm_warp(q, p, n, &o, x, m, want_w, NULL) == PTREG_OK);
    CHECK(ptreg_lddmm_shoot(q, p, n, &o, want_q, want_p, NULL, NULL) == PTREG_OK);
    ptreg_lddmm_options elsewhere = o;
    elsewhere.device = (ptreg_device){PTREG_BACKEND_OPENCL, 99};
    ptreg_error err;
    CHECK(ptreg_lddmm_warp(q, p, n, &elsewhere, x, m, got_w, &err) != PTREG_OK);
    CHECK_MSG(lddmm_warp_on(&c, q, p, n, &elsewhere, x, m, got_w, &err) == PTREG_OK, "%s", err.message);
    CHECK_MSG(lddmm_shoot_on(&c, q, p, n, &elsewhere, got_q, got_p, NULL, &err) == PTREG_OK, "%s", err.message);
    CHECK(memcmp(got_w, want_w, sizeof got_w) == 0);
    CHECK(memcmp(got_q, want_q, sizeof got_q) == 0 && memcmp(got_p, want_p, sizeof got_p) == 0);
}

int main(void)
{
    test_choice_kept();
    test_result_files();
    test_gradient();
    test_flow_properties();
    test_precision_and_threads();
    test_ellipse_to_circle();
    test_bad_input();
    const char *data = check_data_dir();
    if (data)
        test_shared_pair(data);
    return check_exit();
}
