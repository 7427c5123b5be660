/* ICP's Gauss-Newton steps: point-to-plane against Open3D's own results
 * on PCL's bunny pair (tests/data/icp/open3d_plane.csv, remade by
 * open3d_golden.py), PCL's point-to-plane test, poses recovered under
 * noise and outliers by each robust kernel, the peers' stopping rules,
 * the same bits for any thread count, repaired and refused initial
 * transforms, and bad options. */
#include "check.h"
#include "registration_check.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"
#include "hooks.h"

/* A golden case's options from its name: plane[_KERNEL_SCALE][_maxdist_D]
 * or gicp (both clouds' normals estimated). */
static void golden_options(const char *name, ptreg_icp_options *o)
{
    ptreg_icp_options_default(o);
    o->method = strcmp(name, "gicp") ? PTREG_ICP_PLANE : PTREG_ICP_GICP;
    o->max_iter = 200, o->tol = 0.0, o->max_dist = 1.0;
    char kernel[32];
    double value;
    if (sscanf(name, "plane_maxdist_%lf", &value) == 1)
        o->max_dist = value;
    else if (sscanf(name, "plane_%31[a-z]_%lf", kernel, &value) == 2) {
        CHECK(ptreg_robust_kernel_parse(kernel, &o->kernel) == 0);
        o->kernel_scale = value;
    }
}

/* Open3D's point-to-plane (plain and with each of its robust kernels) and
 * Generalized-ICP on the same inputs, normals from the same 10 neighbors:
 * the same fixed point, to well within Open3D's own tolerances. */
static void test_open3d_golden(const char *dir)
{
    size_t n, m;
    float *src = read_points(dir, "pcl/bun0.pcd", &n), *tgt = read_points(dir, "pcl/bun4.pcd", &m);
    FILE *f = fopen(PTREG_TEST_SOURCE_DIR "/data/icp/open3d_plane.csv", "r");
    CHECK_MSG(f != NULL, "open3d_plane.csv is missing");
    char line[2048];
    int cases = 0;
    while (f && src && tgt && fgets(line, sizeof line, f)) {
        char *name = strtok(line, ","), *field;
        double want[18];
        int k = 0;
        while (k < 18 && (field = strtok(NULL, ",")))
            want[k++] = strtod(field, NULL);
        CHECK_MSG(k == 18, "open3d_plane.csv: %s has %d numbers", name, k);
        ptreg_icp_options o;
        golden_options(name, &o);
        ptreg_icp_result r;
        CHECK(ptreg_icp(src, n, tgt, m, &o, &r, NULL) == PTREG_OK);
        double worst = 0.0;
        for (int i = 0; i < 16; i++)
            worst = check_worse(worst, fabs(r.transformation[i] - want[i]));
        CHECK_MSG(worst < 2e-5, "%s: %g from Open3D's transformation", name, worst);
        CHECK_MSG(fabs(r.fitness - want[16]) < 1e-9 && fabs(r.rmse - want[17]) < 1e-5 * want[17],
                  "%s: fitness %g, rmse %g; Open3D's %g, %g", name, r.fitness, r.rmse, want[16], want[17]);
        ptreg_icp_result_free(&r);
        cases++;
    }
    CHECK(!f || cases == 7);
    if (f)
        fclose(f);
    free(src), free(tgt);
}

/* PCL's test_registration.cpp, IterativeClosestPoint_PointToPlane: bun0
 * onto bun4, target normals from 10 neighbors, 50 iterations,
 * transformation epsilon 1e-8; PCL asserts a fitness score (the mean
 * squared distance from each moved source point to its nearest target
 * point) under 0.005. */
static void test_pcl_point_to_plane(const char *dir)
{
    size_t n, m;
    float *src = read_points(dir, "pcl/bun0.pcd", &n), *tgt = read_points(dir, "pcl/bun4.pcd", &m);
    if (src && tgt) {
        ptreg_icp_options o;
        ptreg_icp_options_default(&o);
        o.method = PTREG_ICP_PLANE;
        o.max_iter = 50, o.tol = 0.0, o.transformation_epsilon = 1e-8;
        ptreg_icp_result r;
        CHECK(ptreg_icp(src, n, tgt, m, &o, &r, NULL) == PTREG_OK);
        CHECK_MSG(r.stop_reason == PTREG_STOP_SMALL_STEP && r.converged, "stopped: %s after %d",
                  ptreg_stop_reason_name(r.stop_reason), r.iterations);
        CHECK_MSG(r.fitness == 1.0 && r.rmse * r.rmse < 0.005, "PCL's fitness score %g (it asks < 0.005)",
                  r.rmse * r.rmse);
        ptreg_icp_result_free(&r);
    }
    free(src), free(tgt);
}

/* A blob's points moved by a known pose, with noise, and a quarter as many
 * outliers scattered about it: each kernel (with a scale of a few noise
 * levels) recovers the pose, point-to-point, point-to-plane and GICP,
 * better than least squares does. */
static void test_kernels_recover(void)
{
    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 6000, 5, &model, NULL) == PTREG_OK);
    const size_t inliers = 3000, outliers = 750, n = inliers + outliers;
    double truth[16], axis[3] = {0.2, 1.0, 0.3}, t[3] = {0.03, -0.02, 0.01};
    ptreg_transform_from_axis_angle(axis, 6.0, t, truth);
    double inv[16];
    ptreg_transform_invert_rigid(truth, inv);
    float *src = malloc(3 * n * sizeof *src);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 9);
    for (size_t i = 0; i < inliers; i++) {
        float p[3];
        for (int k = 0; k < 3; k++)
            p[k] = model.xyz[3 * (2 * i) + k] + (float)(0.002 * ptreg_rng_normal(&rng));
        ptreg_transform_points(inv, p, src + 3 * i, 1);
    }
    for (size_t i = inliers; i < n; i++)
        for (int k = 0; k < 3; k++)
            src[3 * i + k] = (float)(2.4 * ptreg_rng_uniform(&rng) - 1.2);
    static const ptreg_robust_kernel kernels[] = {PTREG_KERNEL_NONE, PTREG_KERNEL_HUBER, PTREG_KERNEL_CAUCHY,
                                                  PTREG_KERNEL_TUKEY, PTREG_KERNEL_GM};
    for (int method = PTREG_ICP_POINT; method <= PTREG_ICP_SYMMETRIC; method++) {
        double plain = 0.0;
        for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
            ptreg_icp_options o;
            ptreg_icp_options_default(&o);
            o.method = (ptreg_icp_method)method;
            o.kernel = kernels[k];
            /* Geman-McClure's k is a squared residual (Open3D's weight); GICP's
             * residual is a Mahalanobis distance, about 20 times the distance
             * along the normal at eps 1e-3; SYMMETRIC's is along two normals
             * summed, about twice it */
            const double unit = method == PTREG_ICP_GICP ? 20.0 : method == PTREG_ICP_SYMMETRIC ? 2.0 : 1.0;
            o.kernel_scale = kernels[k] == PTREG_KERNEL_GM      ? 1e-4 * unit * unit
                             : kernels[k] == PTREG_KERNEL_TUKEY ? 0.03 * unit
                                                                : 0.01 * unit;
            o.max_iter = 60, o.tol = 0.0, o.max_dist = 0.3;
            ptreg_icp_result r;
            CHECK(ptreg_icp(src, n, model.xyz, model.n, &o, &r, NULL) == PTREG_OK);
            const double rot = rotation_error(truth, r.transformation), tr = translation_error(truth, r.transformation);
            if (kernels[k] == PTREG_KERNEL_NONE)
                plain = rot;
            else /* GICP's least squares already discounts the scattered points */
                CHECK_MSG(rot < 0.1 && tr < 2e-3 && (rot < plain || method == PTREG_ICP_GICP),
                          "%s, %s kernel: %g deg, %g from the truth (least squares: %g deg)",
                          ptreg_icp_method_name(o.method), ptreg_robust_kernel_name(o.kernel), rot, tr, plain);
            ptreg_icp_result_free(&r);
        }
    }
    free(src);
    ptreg_cloud_free(&model);
}

/* Without noise every method recovers the pose to rounding, from 10
 * degrees; the symmetric objective (Rusinkiewicz: its linearisation holds
 * further from the answer) takes no more iterations than point-to-plane. */
static void test_exact_recovery(void)
{
    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 8000, 12, &model, NULL) == PTREG_OK);
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){10, 0.0};
    float *normals = malloc(3 * model.n * sizeof *normals), *src = malloc(3 * model.n * sizeof *src);
    CHECK(ptreg_normals(model.xyz, model.n, &no, normals, NULL, NULL, NULL) == PTREG_OK);
    double T[16], inv[16], axis[3] = {0.3, -1.0, 0.5}, t[3] = {0.05, 0.02, -0.03};
    ptreg_transform_from_axis_angle(axis, 10.0, t, T);
    ptreg_transform_invert_rigid(T, inv);
    ptreg_transform_points(T, model.xyz, src, model.n);
    int steps[PTREG_ICP_SYMMETRIC + 1] = {0};
    for (int method = PTREG_ICP_PLANE; method <= PTREG_ICP_SYMMETRIC; method++) {
        ptreg_icp_options o;
        ptreg_icp_options_default(&o);
        o.method = (ptreg_icp_method)method;
        o.max_iter = 100, o.tol = 0.0, o.transformation_epsilon = 1e-14;
        o.target_normals = normals;
        ptreg_icp_result r;
        CHECK(ptreg_icp(src, model.n, model.xyz, model.n, &o, &r, NULL) == PTREG_OK);
        CHECK_MSG(rotation_error(inv, r.transformation) < 1e-4 && translation_error(inv, r.transformation) < 1e-5 &&
                      r.stop_reason == PTREG_STOP_SMALL_STEP,
                  "%s: %g deg, %g from the truth, stopped %s", ptreg_icp_method_name(o.method),
                  rotation_error(inv, r.transformation), translation_error(inv, r.transformation),
                  ptreg_stop_reason_name(r.stop_reason));
        steps[method] = r.iterations;
        ptreg_icp_result_free(&r);
    }
    printf("iterations from 10 degrees: plane %d, gicp %d, symmetric %d\n", steps[PTREG_ICP_PLANE],
           steps[PTREG_ICP_GICP], steps[PTREG_ICP_SYMMETRIC]);
    CHECK(steps[PTREG_ICP_SYMMETRIC] <= steps[PTREG_ICP_PLANE]);
    free(normals), free(src);
    ptreg_cloud_free(&model);
}

/* Gauss-Newton's block sums merge in block order: 1 and 2 threads give
 * the same bits, for every method with a kernel, damped or not. */
static void test_threads_identical(void)
{
    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, 20000, 3, &model, NULL) == PTREG_OK);
    double T[16], axis[3] = {1.0, 0.4, 0.1}, t[3] = {0.1, 0.05, -0.02};
    ptreg_transform_from_axis_angle(axis, 5.0, t, T);
    float *src = malloc(3 * model.n * sizeof *src);
    ptreg_transform_points(T, model.xyz, src, model.n);
    for (int run = 0; run < 2 * (PTREG_ICP_SYMMETRIC + 1); run++) {
        ptreg_icp_options o;
        ptreg_icp_options_default(&o);
        o.method = (ptreg_icp_method)(run / 2);
        o.kernel = PTREG_KERNEL_CAUCHY, o.kernel_scale = 0.05;
        o.lm_lambda = run % 2 ? 1e-2 : 0.0;
        o.max_iter = 20, o.tol = 0.0;
        ptreg_icp_result r[2];
        for (int k = 0; k < 2; k++) {
            ptreg_set_num_threads(k + 1);
            CHECK(ptreg_icp(src, model.n, model.xyz, model.n, &o, &r[k], NULL) == PTREG_OK);
        }
        ptreg_set_num_threads(0);
        CHECK_MSG(!memcmp(r[0].transformation, r[1].transformation, sizeof r[0].transformation) &&
                      !memcmp(r[0].mse, r[1].mse, (size_t)(r[0].iterations + 1) * sizeof(double)),
                  "%s: 1 and 2 threads differ", ptreg_icp_method_name(o.method));
        ptreg_icp_result_free(&r[0]);
        ptreg_icp_result_free(&r[1]);
    }
    free(src);
    ptreg_cloud_free(&model);
}

/* A flat target fixes only the tilt and the height: Gauss-Newton's system
 * is singular and it stops where it started; Levenberg-Marquardt's damping
 * holds the three free directions and brings the source onto the plane. On
 * a shape that fixes everything it finds the truth as Gauss-Newton does. */
static void test_levenberg_marquardt(void)
{
    enum { side = 60 };
    float *plane = malloc(3 * side * side * sizeof *plane), *normals = malloc(3 * side * side * sizeof *normals),
          *src = malloc(3 * side * side * sizeof *src);
    for (int i = 0; i < side * side; i++) {
        float *p = plane + 3 * i, *nrm = normals + 3 * i;
        p[0] = 0.01f * (float)(i % side), p[1] = 0.01f * (float)(i / side), p[2] = 0.0f;
        nrm[0] = nrm[1] = 0.0f, nrm[2] = 1.0f;
    }
    double T[16], axis[3] = {1.0, 0.3, 0.0}, t[3] = {0.003, 0.0, 0.02};
    ptreg_transform_from_axis_angle(axis, 2.0, t, T);
    ptreg_transform_points(T, plane, src, side * side);
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    o.method = PTREG_ICP_PLANE, o.target_normals = normals, o.max_iter = 50;
    ptreg_icp_result r;
    CHECK(ptreg_icp(src, side * side, plane, side * side, &o, &r, NULL) == PTREG_OK);
    CHECK(r.stop_reason == PTREG_STOP_DEGENERATE && r.iterations == 0);
    ptreg_icp_result_free(&r);
    o.lm_lambda = 1e-3;
    CHECK(ptreg_icp(src, side * side, plane, side * side, &o, &r, NULL) == PTREG_OK);
    float *moved = malloc(3 * side * side * sizeof *moved);
    ptreg_transform_points(r.transformation, src, moved, side * side);
    double worst = 0.0;
    for (int i = 0; i < side * side; i++)
        worst = check_worse(worst, fabs(moved[3 * i + 2]));
    CHECK_MSG(worst < 1e-5 && r.stop_reason != PTREG_STOP_DEGENERATE, "LM on a plane: %g off it, stopped %s", worst,
              ptreg_stop_reason_name(r.stop_reason));
    ptreg_icp_result_free(&r);
    free(plane), free(normals), free(src), free(moved);

    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 8000, 12, &model, NULL) == PTREG_OK);
    src = malloc(3 * model.n * sizeof *src);
    double inv[16], axis2[3] = {0.3, -1.0, 0.5}, t2[3] = {0.05, 0.02, -0.03};
    ptreg_transform_from_axis_angle(axis2, 10.0, t2, T);
    ptreg_transform_invert_rigid(T, inv);
    ptreg_transform_points(T, model.xyz, src, model.n);
    for (int method = PTREG_ICP_POINT; method <= PTREG_ICP_SYMMETRIC; method++) {
        ptreg_icp_options_default(&o);
        o.method = (ptreg_icp_method)method, o.lm_lambda = 1e-3;
        o.max_iter = 100, o.tol = 0.0, o.transformation_epsilon = 1e-14;
        CHECK(ptreg_icp(src, model.n, model.xyz, model.n, &o, &r, NULL) == PTREG_OK);
        CHECK_MSG(rotation_error(inv, r.transformation) < 1e-4 && translation_error(inv, r.transformation) < 1e-5,
                  "LM %s: %g deg, %g from the truth, stopped %s", ptreg_icp_method_name(o.method),
                  rotation_error(inv, r.transformation), translation_error(inv, r.transformation),
                  ptreg_stop_reason_name(r.stop_reason));
        ptreg_icp_result_free(&r);
    }
    free(src);
    ptreg_cloud_free(&model);
}

/* Open3D's relative criteria and PCL's step size end the iterations. */
static void test_peer_stops(void)
{
    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 3000, 8, &model, NULL) == PTREG_OK);
    double T[16], axis[3] = {0.0, 1.0, 0.2}, t[3] = {0.02, 0.0, 0.01};
    ptreg_transform_from_axis_angle(axis, 4.0, t, T);
    float *src = malloc(3 * model.n * sizeof *src);
    ptreg_transform_points(T, model.xyz, src, model.n);
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    o.method = PTREG_ICP_PLANE, o.tol = 0.0, o.max_iter = 200;
    o.relative_fitness = 1e-6, o.relative_rmse = 1e-6;
    ptreg_icp_result r;
    CHECK(ptreg_icp(src, model.n, model.xyz, model.n, &o, &r, NULL) == PTREG_OK);
    CHECK_MSG(r.stop_reason == PTREG_STOP_RELATIVE_CHANGE && r.converged && r.iterations < 200, "stopped: %s at %d",
              ptreg_stop_reason_name(r.stop_reason), r.iterations);
    CHECK(fabs(r.mse[r.iterations] - r.mse[r.iterations - 1]) < 1e-4);
    ptreg_icp_result_free(&r);
    o.relative_fitness = o.relative_rmse = 0.0;
    o.transformation_epsilon = 1e-10;
    o.method = PTREG_ICP_POINT;
    CHECK(ptreg_icp(src, model.n, model.xyz, model.n, &o, &r, NULL) == PTREG_OK);
    double inv[16];
    ptreg_transform_invert_rigid(T, inv);
    CHECK_MSG(r.stop_reason == PTREG_STOP_SMALL_STEP && r.iterations < 200 &&
                  rotation_error(inv, r.transformation) < 1e-3,
              "stopped: %s at %d, %g deg from the truth", ptreg_stop_reason_name(r.stop_reason), r.iterations,
              rotation_error(inv, r.transformation));
    ptreg_icp_result_free(&r);
    free(src);
    ptreg_cloud_free(&model);
}

/* Open3D's ICP tutorial starts from a matrix 7.5e-4 from rigid: repaired
 * to the nearest rotation (the translation kept); one further off is
 * left alone and ICP refuses it. */
static void test_nearly_rigid(void)
{
    double T[16] = {0.862, 0.011, -0.507, 0.5, -0.139, 0.967, -0.215, 0.7, 0.487, 0.255, 0.835, -1.4, 0, 0, 0, 1};
    CHECK(!ptreg_transform_is_rigid(T, PTREG_RIGID_TOL));
    const double off = ptreg_transform_make_rigid(T);
    CHECK_MSG(fabs(off - 7.46e-4) < 1e-5, "its error %g", off);
    CHECK(ptreg_transform_rigidity_error(T) < 1e-14 && T[3] == 0.5 && T[7] == 0.7 && T[11] == -1.4);
    CHECK(fabs(T[0] - 0.862) < 1e-3 && fabs(T[6] + 0.215) < 1e-3);
    double far[16] = {1.05, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, copy[16];
    memcpy(copy, far, sizeof far);
    CHECK(ptreg_transform_make_rigid(far) > PTREG_NEARLY_RIGID_TOL && !memcmp(far, copy, sizeof far));
    const float pts[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    memcpy(o.init, far, sizeof far);
    ptreg_icp_result r;
    CHECK(ptreg_icp(pts, 3, pts, 3, &o, &r, NULL) == PTREG_ERR_ARG);
}

static void test_bad_options(void)
{
    const float pts[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    ptreg_icp_options o;
    ptreg_icp_result r;
    ptreg_error err;
    ptreg_icp_options_default(&o);
    o.kernel = PTREG_KERNEL_HUBER, o.kernel_scale = 0.0;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "kernel_scale"));
    /* the default scale is "not set": a kernel needs one given, as on the command line */
    ptreg_icp_options_default(&o);
    CHECK(o.kernel_scale == 0.0);
    o.kernel = PTREG_KERNEL_CAUCHY;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "cauchy kernel needs"));
    ptreg_icp_options_default(&o);
    o.kernel_scale = NAN;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, NULL) == PTREG_ERR_ARG);
    ptreg_icp_options_default(&o);
    o.method = (ptreg_icp_method)7;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, NULL) == PTREG_ERR_ARG);
    ptreg_icp_options_default(&o);
    o.method = PTREG_ICP_PLANE, o.normal_k = 2;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "normal_k"));
    ptreg_icp_options_default(&o);
    o.method = PTREG_ICP_PLANE, o.normal_radius = -1.0;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "normal_radius"));
    ptreg_icp_options_default(&o);
    o.relative_rmse = -1.0;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, NULL) == PTREG_ERR_ARG);
    ptreg_icp_options_default(&o);
    o.lm_lambda = NAN;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "lm_lambda"));
    o.lm_lambda = -1.0;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, NULL) == PTREG_ERR_ARG);
    ptreg_robust_kernel k;
    ptreg_icp_method m;
    CHECK(ptreg_robust_kernel_parse("tukey", &k) == 0 && k == PTREG_KERNEL_TUKEY);
    CHECK(ptreg_robust_kernel_parse("welsch", &k) == -1 && ptreg_icp_method_parse("lm", &m) == -1);
    CHECK(ptreg_icp_method_parse("symmetric", &m) == 0 && m == PTREG_ICP_SYMMETRIC);
    CHECK(ptreg_icp_method_parse("gicp", &m) == 0 && m == PTREG_ICP_GICP);
    ptreg_icp_options_default(&o);
    o.method = PTREG_ICP_GICP, o.gicp_epsilon = 0.0;
    CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "gicp_epsilon"));
    /* a GPU named runs Gauss-Newton steps there, to the CPU's answer
     * (tests/test_device_parity.c and tests/cli/device_icp_methods.sh
     * compare every method and kernel) */
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    for (size_t i = 0; i < count; i++)
        if (list[i].device.backend != PTREG_BACKEND_CPU) {
            ptreg_icp_result on_cpu;
            ptreg_icp_options_default(&o);
            o.method = PTREG_ICP_PLANE;
            CHECK(ptreg_icp(pts, 4, pts, 4, &o, &on_cpu, NULL) == PTREG_OK);
            o.device = list[i].device;
            CHECK(ptreg_icp(pts, 4, pts, 4, &o, &r, NULL) == PTREG_OK && r.device.backend == list[i].device.backend);
            CHECK(check_max_abs_diff(on_cpu.transformation, r.transformation, 16) <= 1e-9);
            ptreg_icp_result_free(&r);
            ptreg_icp_result_free(&on_cpu);
            break;
        }
}

int main(void)
{
    test_kernels_recover();
    test_exact_recovery();
    test_threads_identical();
    test_levenberg_marquardt();
    test_peer_stops();
    test_nearly_rigid();
    test_bad_options();
    const char *dir = check_data_dir();
    if (dir) {
        test_open3d_golden(dir);
        test_pcl_point_to_plane(dir);
    }
    return check_exit();
}
