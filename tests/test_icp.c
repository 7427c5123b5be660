/* ICP: pose recovery on synthetic scans (the aerial-refuelling protocol:
 * noise 1e-4..1e-2, roll/pitch/yaw up to 20 degrees), PCL's own regression
 * (bun0 onto bun4), the real scans bun045 onto bun000 from a perturbed
 * ground truth, the filters, determinism across threads and methods, every
 * nearest-neighbor method (Delaunay walks included) giving the same bits
 * on random data, the 40k/30k case and the bunny, degenerate models, and
 * bad arguments. */
#include "check.h"
#include "registration_check.h"
#include "core/cpu.h"
#include "ptreg/ptreg.h"
#include "hooks.h"
#include "core/numeric.h"

/* Sensed = every k-th model point moved by a random pose, plus noise: ICP
 * must undo the pose to well within the noise. */
static void test_model_subset_protocol(void)
{
    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, 8000, 3, &model, NULL) == PTREG_OK);
    double noises[] = {1e-4, 1e-3, 1e-2};
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 99);
    for (int ni = 0; ni < 3; ni++)
        for (int trial = 0; trial < 4; trial++) {
            size_t n = model.n / 4;
            float *sensed = malloc(3 * n * sizeof(float));
            double M[16], axes[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
            ptreg_transform_identity(M);
            for (int k = 0; k < 3; k++) {
                double R[16];
                ptreg_transform_from_axis_angle(axes[k], (2 * ptreg_rng_uniform(&rng) - 1) * 20.0, NULL, R);
                ptreg_transform_mul(R, M, M);
            }
            M[3] = 0.1 * ptreg_rng_normal(&rng), M[7] = 0.1 * ptreg_rng_normal(&rng),
            M[11] = 0.1 * ptreg_rng_normal(&rng);
            for (size_t i = 0; i < n; i++)
                for (int k = 0; k < 3; k++)
                    sensed[3 * i + k] = model.xyz[3 * (4 * i) + k] + (float)(noises[ni] * ptreg_rng_normal(&rng));
            ptreg_transform_points(M, sensed, sensed, n);
            double truth[16];
            ptreg_transform_invert_rigid(M, truth);
            ptreg_icp_options opt;
            ptreg_icp_options_default(&opt);
            opt.max_iter = 300;
            ptreg_icp_result r;
            CHECK(ptreg_icp(sensed, n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
            double tol_deg = noises[ni] <= 1e-3 ? 0.02 : 0.1;
            CHECK_MSG(rotation_error(truth, r.transformation) < tol_deg &&
                          translation_error(truth, r.transformation) < 5 * noises[ni] + 1e-3,
                      "noise %g trial %d: error %g deg, %g", noises[ni], trial, rotation_error(truth, r.transformation),
                      translation_error(truth, r.transformation));
            CHECK(r.converged && r.stop_reason == PTREG_STOP_CONVERGED);
            CHECK(ptreg_transform_is_rigid(r.transformation, 1e-9));
            ptreg_icp_result_free(&r);
            free(sensed);
        }
    ptreg_cloud_free(&model);
}

/* Independent scans (a simulated sensor) of both shapes from up to 20
 * degrees per axis. */
static void test_synthetic_scans(void)
{
    for (int shape = 0; shape < 2; shape++) {
        ptreg_cloud model;
        CHECK(ptreg_synth_model((ptreg_shape)shape, 12000, 7, &model, NULL) == PTREG_OK);
        double noises[] = {1e-4, 1e-3, 1e-2};
        for (int ni = 0; ni < 3; ni++)
            for (uint64_t seed = 1; seed <= 2; seed++) {
                ptreg_synth_options so;
                ptreg_synth_options_default(&so);
                so.points = 3000, so.noise = noises[ni], so.max_angle_deg = 20.0, so.seed = seed + 10 * (uint64_t)ni;
                ptreg_cloud scan;
                double truth[16];
                CHECK(ptreg_synth_scan((ptreg_shape)shape, &so, &scan, truth, NULL) == PTREG_OK);
                ptreg_icp_options opt;
                ptreg_icp_options_default(&opt);
                opt.max_iter = 400;
                ptreg_icp_result r;
                CHECK(ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
                CHECK_MSG(rotation_error(truth, r.transformation) < 1.0 &&
                              translation_error(truth, r.transformation) < 0.02,
                          "%s noise %g seed %llu: error %g deg, %g", ptreg_shape_name((ptreg_shape)shape), noises[ni],
                          (unsigned long long)seed, rotation_error(truth, r.transformation),
                          translation_error(truth, r.transformation));
                /* Besl: without rejection the MSE never rises */
                for (int k = 0; k < r.iterations; k++)
                    CHECK(r.mse[k + 1] <= r.mse[k] * (1 + 1e-9));
                ptreg_icp_result_free(&r);
                ptreg_cloud_free(&scan);
            }
        ptreg_cloud_free(&model);
    }
}

/* Outliers: plain ICP is pulled off; the sigma filter and trimming are not. */
static void test_outlier_filters(void)
{
    ptreg_cloud model, scan;
    double truth[16];
    CHECK(ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, 20000, 5, &model, NULL) == PTREG_OK);
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 6000, so.noise = 0.002, so.outliers = 0.2, so.max_angle_deg = 10.0, so.seed = 4;
    CHECK(ptreg_synth_scan(PTREG_SHAPE_AIRCRAFT, &so, &scan, truth, NULL) == PTREG_OK);
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.max_iter = 300;
    ptreg_icp_result plain, sigma, trimmed;
    CHECK(ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &opt, &plain, NULL) == PTREG_OK);
    opt.filter_sigma = 0.5, opt.filter_start = 2;
    CHECK(ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &opt, &sigma, NULL) == PTREG_OK);
    opt.filter_sigma = 0.0, opt.trim = 0.75;
    CHECK(ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &opt, &trimmed, NULL) == PTREG_OK);
    double e_plain = rotation_error(truth, plain.transformation);
    double e_sigma = rotation_error(truth, sigma.transformation);
    double e_trim = rotation_error(truth, trimmed.transformation);
    CHECK_MSG(e_sigma < 0.5 && e_trim < 0.5, "with 20%% outliers: sigma filter %g deg, trim %g deg", e_sigma, e_trim);
    CHECK_MSG(e_sigma < e_plain && e_trim < e_plain, "filters %g, %g deg vs plain %g deg", e_sigma, e_trim, e_plain);
    CHECK(sigma.fitness < 0.9 && sigma.fitness > 0.7);
    CHECK(trimmed.pairs == (size_t)ceil(0.75 * (double)scan.n));
    ptreg_icp_result_free(&plain);
    ptreg_icp_result_free(&sigma);
    ptreg_icp_result_free(&trimmed);
    ptreg_cloud_free(&scan);
    ptreg_cloud_free(&model);
}

/* Same bits for 1 and 2 threads, for brute force vs the k-d tree, and for
 * every instruction set the CPU runs. */
static void test_deterministic(void)
{
    ptreg_cloud model, scan;
    double truth[16];
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 12000, 8, &model, NULL) == PTREG_OK);
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 9000, so.outliers = 0.05, so.seed = 8;
    CHECK(ptreg_synth_scan(PTREG_SHAPE_BLOB, &so, &scan, truth, NULL) == PTREG_OK);
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.tol = 0.0, opt.max_iter = 25, opt.filter_sigma = 2.0, opt.filter_start = 5, opt.trim = 0.97;
    enum { RUNS = 7 };
    ptreg_icp_result r[RUNS];
    int threads[RUNS] = {1, 2, 2, 1, 2, 2, 1};
    ptreg_nn_method methods[RUNS] = {PTREG_NN_KDTREE, PTREG_NN_KDTREE, PTREG_NN_BRUTE, PTREG_NN_BRUTE,
                                     PTREG_NN_KDTREE, PTREG_NN_KDTREE, PTREG_NN_BRUTE};
    int isas[RUNS] = {-1, -1, -1, -1, PTREG_ISA_GENERIC, PTREG_ISA_AVX2, PTREG_ISA_GENERIC};
    for (int i = 0; i < RUNS; i++) {
        ptreg_set_num_threads(threads[i]);
        cpu_set_isa(isas[i]);
        opt.nn = methods[i];
        CHECK(ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &opt, &r[i], NULL) == PTREG_OK);
        CHECK(r[i].nn == methods[i]);
    }
    ptreg_set_num_threads(0);
    cpu_set_isa(-1);
    for (int i = 1; i < RUNS; i++) {
        CHECK_MSG(memcmp(r[0].transformation, r[i].transformation, sizeof r[0].transformation) == 0,
                  "run %d (threads %d, %s, isa cap %d) differs", i, threads[i], ptreg_nn_method_name(methods[i]),
                  isas[i]);
        CHECK(r[0].iterations == r[i].iterations && r[0].pairs == r[i].pairs);
        CHECK(memcmp(r[0].mse, r[i].mse, (size_t)(r[0].iterations + 1) * sizeof(double)) == 0);
    }
    for (int i = 0; i < RUNS; i++)
        ptreg_icp_result_free(&r[i]);
    ptreg_cloud_free(&scan);
    ptreg_cloud_free(&model);
}

/* Every method on one prebuilt index, and the k-d tree without one, gives
 * the same transform, MSE history and pairs; the walks are tallied for
 * every correspondence pass. Brute force only where it is affordable. */
static void check_methods_identical(const char *what, const float *src, size_t n, const float *tgt, size_t m,
                                    const ptreg_icp_options *base, int with_brute)
{
    ptreg_model_index *idx;
    ptreg_error err;
    if (ptreg_model_index_create(tgt, m, NULL, &idx, &err) != PTREG_OK) {
        CHECK_MSG(0, "%s: %s", what, err.message);
        return;
    }
    ptreg_icp_options opt = *base;
    ptreg_icp_result ref;
    opt.nn = PTREG_NN_KDTREE;
    CHECK(ptreg_icp(src, n, tgt, m, &opt, &ref, NULL) == PTREG_OK);
    for (int method = PTREG_NN_AUTO; method <= PTREG_NN_DELAUNAY_PNNOPT; method++) {
        if (method == PTREG_NN_BRUTE && !with_brute)
            continue;
        opt.nn = (ptreg_nn_method)method;
        ptreg_icp_result r;
        if (ptreg_icp_indexed(src, n, idx, &opt, &r, &err) != PTREG_OK) {
            CHECK_MSG(0, "%s: %s: %s", what, ptreg_nn_method_name(opt.nn), err.message);
            continue;
        }
        const char *name = ptreg_nn_method_name(r.nn);
        CHECK_MSG(memcmp(ref.transformation, r.transformation, sizeof r.transformation) == 0 &&
                      ref.iterations == r.iterations && ref.pairs == r.pairs &&
                      memcmp(ref.mse, r.mse, (size_t)(r.iterations + 1) * sizeof(double)) == 0,
                  "%s: %s differs from the k-d tree", what, name);
        CHECK(r.nn_note[0] == '\0');
        CHECK(method == PTREG_NN_AUTO ? r.nn == PTREG_NN_DELAUNAY_PNNOPT : (int)r.nn == method);
        int walks = ptreg_nn_method_is_delaunay(r.nn);
        CHECK((r.walk != NULL) == walks);
        for (int k = 0; walks && r.walk && k <= r.iterations; k++)
            CHECK_MSG(r.walk[k].queries == n, "%s: %s pass %d tallied %llu walks", what, name, k,
                      (unsigned long long)r.walk[k].queries);
        if (r.nn == PTREG_NN_DELAUNAY_PNN && r.iterations > 3)
            CHECK_MSG(r.walk[r.iterations].steps < r.walk[0].steps, "%s: pnn walks do not shorten", what);
        if ((r.nn == PTREG_NN_DELAUNAY_PNN || r.nn == PTREG_NN_DELAUNAY_PNNOPT) && r.iterations > 10)
            CHECK_MSG(r.walk[r.iterations].kept > 0 && r.walk[0].kept == 0, "%s: %s kept %llu answers in the last pass",
                      what, name, (unsigned long long)r.walk[r.iterations].kept);
        ptreg_icp_result_free(&r);
    }
    ptreg_icp_result_free(&ref);
    ptreg_model_index_destroy(idx);
}

static void test_methods_identical(void)
{
    ptreg_cloud model, scan;
    double truth[16];
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 6000, 9, &model, NULL) == PTREG_OK);
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 4000, so.outliers = 0.05, so.seed = 9;
    CHECK(ptreg_synth_scan(PTREG_SHAPE_BLOB, &so, &scan, truth, NULL) == PTREG_OK);
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.tol = 0.0, opt.max_iter = 20, opt.filter_sigma = 2.0, opt.filter_start = 4, opt.trim = 0.95;
    check_methods_identical("blob 6k/4k, filters", scan.xyz, scan.n, model.xyz, model.n, &opt, 1);
    ptreg_cloud_free(&scan);
    ptreg_cloud_free(&model);

    /* the benchmark's 40k/30k case (bench/icp_bench.py: seed 1, 10 degrees, noise 0.002) */
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 40000, 1, &model, NULL) == PTREG_OK);
    ptreg_synth_options_default(&so);
    so.max_angle_deg = 10, so.noise = 0.002, so.seed = 17;
    CHECK(ptreg_synth_scan(PTREG_SHAPE_BLOB, &so, &scan, truth, NULL) == PTREG_OK);
    ptreg_icp_options_default(&opt);
    opt.tol = 0.0, opt.max_iter = 30;
    check_methods_identical("blob 40k/30k", scan.xyz, scan.n, model.xyz, model.n, &opt, 0);
    ptreg_cloud_free(&scan);
    ptreg_cloud_free(&model);
}

/* Models Qhull cannot triangulate: a Delaunay method runs the k-d tree,
 * says why, and gives the k-d tree's result. */
static void test_degenerate_models(void)
{
    size_t m = 2000, n = 500;
    float *plane = malloc(3 * m * sizeof(float)), *src = malloc(3 * n * sizeof(float));
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 4);
    for (size_t i = 0; i < m; i++)
        plane[3 * i] = (float)ptreg_rng_uniform(&rng), plane[3 * i + 1] = (float)ptreg_rng_uniform(&rng),
                  plane[3 * i + 2] = 0.25f;
    for (size_t i = 0; i < n; i++)
        for (int d = 0; d < 3; d++)
            src[3 * i + d] = plane[3 * (3 * i) + d] + (d == 2 ? 0.01f : 0.02f);
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.max_iter = 10;
    ptreg_icp_result kd, dt;
    opt.nn = PTREG_NN_KDTREE;
    CHECK(ptreg_icp(src, n, plane, m, &opt, &kd, NULL) == PTREG_OK);
    opt.nn = PTREG_NN_DELAUNAY_PNNOPT;
    CHECK(ptreg_icp(src, n, plane, m, &opt, &dt, NULL) == PTREG_OK);
    CHECK(dt.nn == PTREG_NN_KDTREE && dt.walk == NULL);
    CHECK_MSG(strstr(dt.nn_note, "delaunay-pnnopt asked for") && strstr(dt.nn_note, "coplanar"), "note: %s",
              dt.nn_note);
    CHECK(memcmp(kd.transformation, dt.transformation, sizeof kd.transformation) == 0);
    ptreg_icp_result_free(&kd);
    ptreg_icp_result_free(&dt);
    /* auto on a graphless index is the k-d tree, without a note */
    ptreg_model_index *idx;
    CHECK(ptreg_model_index_create(plane, m, NULL, &idx, NULL) == PTREG_OK);
    opt.nn = PTREG_NN_AUTO;
    CHECK(ptreg_icp_indexed(src, n, idx, &opt, &dt, NULL) == PTREG_OK);
    CHECK(dt.nn == PTREG_NN_KDTREE && dt.nn_note[0] == '\0');
    ptreg_icp_result_free(&dt);
    ptreg_model_index_destroy(idx);
    free(plane), free(src);
}

static void test_options_and_stops(void)
{
    ptreg_cloud model;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 3000, 2, &model, NULL) == PTREG_OK);
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    ptreg_icp_result r;
    /* identical clouds: identity, rmse 0, converged on the first check */
    CHECK(ptreg_icp(model.xyz, model.n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
    double id[16];
    ptreg_transform_identity(id);
    CHECK(rotation_error(id, r.transformation) < 1e-6 && r.rmse == 0.0 && r.fitness == 1.0);
    CHECK(r.converged && r.iterations == 1);
    ptreg_icp_result_free(&r);
    /* tol 0 runs every iteration; max_iter 0 returns the initial transform */
    opt.tol = 0.0, opt.max_iter = 7;
    CHECK(ptreg_icp(model.xyz, model.n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
    CHECK(r.iterations == 7 && r.stop_reason == PTREG_STOP_MAX_ITERATIONS && !r.converged);
    ptreg_icp_result_free(&r);
    opt.max_iter = 0;
    double axis[3] = {0, 0, 1}, t[3] = {0.5, 0, 0};
    ptreg_transform_from_axis_angle(axis, 30.0, t, opt.init);
    CHECK(ptreg_icp(model.xyz, model.n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
    CHECK(r.iterations == 0 && memcmp(r.transformation, opt.init, sizeof opt.init) == 0);
    ptreg_icp_result_free(&r);
    /* max_dist: fitness counts exactly the pairs within the distance */
    ptreg_icp_options_default(&opt);
    opt.max_iter = 0, opt.max_dist = 0.3;
    ptreg_transform_from_axis_angle(axis, 0.0, t, opt.init);
    CHECK(ptreg_icp(model.xyz, model.n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
    float *moved = malloc(3 * model.n * sizeof(float));
    uint32_t *idx = malloc(model.n * sizeof(uint32_t));
    float *d2 = malloc(model.n * sizeof(float));
    ptreg_transform_points(opt.init, model.xyz, moved, model.n);
    CHECK(ptreg_brute_nearest(model.xyz, model.n, moved, model.n, idx, d2, NULL) == PTREG_OK);
    size_t within = 0;
    for (size_t i = 0; i < model.n; i++)
        within += d2[i] <= (float)(0.3 * 0.3);
    CHECK(r.pairs == within && within > 10 && within < model.n);
    ptreg_icp_result_free(&r);
    free(moved), free(idx), free(d2);
    /* too few pairs */
    opt.max_dist = 1e-6, opt.max_iter = 10;
    CHECK(ptreg_icp(model.xyz, model.n, model.xyz, model.n, &opt, &r, NULL) == PTREG_OK);
    CHECK(r.stop_reason == PTREG_STOP_TOO_FEW_PAIRS && r.iterations == 0);
    ptreg_icp_result_free(&r);
    /* collinear points cannot fix a rotation */
    float line[30];
    for (int i = 0; i < 10; i++)
        line[3 * i] = (float)i, line[3 * i + 1] = 0, line[3 * i + 2] = 0;
    ptreg_icp_options_default(&opt);
    CHECK(ptreg_icp(line, 10, line, 10, &opt, &r, NULL) == PTREG_OK);
    CHECK(r.stop_reason == PTREG_STOP_DEGENERATE);
    ptreg_icp_result_free(&r);
    ptreg_cloud_free(&model);
}

static void test_bad_arguments(void)
{
    float p[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    ptreg_icp_options opt;
    ptreg_icp_result r;
    ptreg_error err;
    ptreg_icp_options_default(&opt);
    CHECK(ptreg_icp(p, 0, p, 3, &opt, &r, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_icp(p, 3, p, 0, &opt, &r, &err) == PTREG_ERR_ARG);
    p[4] = NAN;
    CHECK(ptreg_icp(p, 3, p, 3, &opt, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "point 1"));
    p[4] = 0;
    opt.trim = 0.0;
    CHECK(ptreg_icp(p, 3, p, 3, &opt, &r, &err) == PTREG_ERR_ARG);
    ptreg_icp_options_default(&opt);
    opt.init[0] = 2.0;
    CHECK(ptreg_icp(p, 3, p, 3, &opt, &r, &err) == PTREG_ERR_ARG);
    ptreg_icp_options_default(&opt);
    opt.max_iter = -1;
    CHECK(ptreg_icp(p, 3, p, 3, &opt, &r, &err) == PTREG_ERR_ARG);
    CHECK(r.mse == NULL);
}

/* PCL's test_registration: bun0 onto bun4, 50 iterations, max distance
 * 0.05; the expected matrix is in ../shared/data/README.md. */
static void test_pcl_regression(const char *dir)
{
    static const double expected[16] = {0.8806, 0.03648,  -0.4724, 0.03453, -0.02354, 0.9992, 0.03326, -0.001519,
                                        0.4732, -0.01817, 0.8808,  0.04116, 0,        0,      0,       1};
    size_t n, m;
    float *src = read_points(dir, "pcl/bun0.pcd", &n), *tgt = read_points(dir, "pcl/bun4.pcd", &m);
    if (src && tgt) {
        ptreg_icp_options opt;
        ptreg_icp_options_default(&opt);
        opt.max_iter = 50, opt.max_dist = 0.05, opt.tol = 0.0;
        ptreg_icp_result r;
        CHECK(ptreg_icp(src, n, tgt, m, &opt, &r, NULL) == PTREG_OK);
        for (int i = 0; i < 16; i++)
            CHECK_MSG(fabs(r.transformation[i] - expected[i]) <= (i == 1 ? 1e-2 : 1e-3), "entry (%d,%d): %.6f vs %.6f",
                      i / 4, i % 4, r.transformation[i], expected[i]);
        ptreg_icp_result_free(&r);
    }
    free(src);
    free(tgt);
}

/* bun.conf: pose of each scan as x_world = R(q)^T x_scan + t. */
static int bunny_pose(const char *dir, const char *scan, double T[16])
{
    char path[4096], line[512], name[128];
    snprintf(path, sizeof path, "%s/bunny/bun.conf", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        double t[3], q[4];
        if (sscanf(line, "bmesh %127s %lf %lf %lf %lf %lf %lf %lf", name, &t[0], &t[1], &t[2], &q[1], &q[2], &q[3],
                   &q[0]) == 8 &&
            !strcmp(name, scan)) {
            double R[9];
            ptreg_quaternion_to_matrix(q, R);
            ptreg_transform_identity(T);
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++)
                    T[4 * r + c] = R[3 * c + r];
                T[4 * r + 3] = t[r];
            }
            found = 0;
        }
    }
    fclose(f);
    return found;
}

/* The real scans from the ground truth moved by 4 degrees and 5 mm about
 * two axes: ICP must come back to the same pose, within the accuracy of the
 * published alignment (about 1 mm, ../shared/data/README.md). */
static void test_bunny_scans(const char *dir)
{
    double pose000[16], pose045[16], inv000[16], truth[16];
    if (bunny_pose(dir, "bun000.ply", pose000) || bunny_pose(dir, "bun045.ply", pose045)) {
        CHECK_MSG(0, "bun.conf lacks the scans");
        return;
    }
    ptreg_transform_invert_rigid(pose000, inv000);
    ptreg_transform_mul(inv000, pose045, truth);
    size_t n, m;
    float *src = read_points(dir, "bunny/bun045.ply", &n), *tgt = read_points(dir, "bunny/bun000.ply", &m);
    double axes[2][3] = {{0.3, 1.0, -0.2}, {1.0, 0.0, 0.4}}, results[2][16];
    for (int k = 0; k < 2 && src && tgt; k++) {
        double t[3] = {0.005, -0.002, 0.003}, P[16];
        ptreg_transform_from_axis_angle(axes[k], 4.0, t, P);
        ptreg_icp_options opt;
        ptreg_icp_options_default(&opt);
        ptreg_transform_mul(P, truth, opt.init);
        opt.max_iter = 100, opt.max_dist = 0.005;
        ptreg_icp_result r;
        CHECK(ptreg_icp(src, n, tgt, m, &opt, &r, NULL) == PTREG_OK);
        CHECK_MSG(rotation_error(truth, r.transformation) < 0.5 && translation_error(truth, r.transformation) < 5e-4,
                  "bun045 -> bun000: %g deg, %g m from the ground truth", rotation_error(truth, r.transformation),
                  translation_error(truth, r.transformation));
        CHECK(r.converged && r.rmse < 1e-3 && r.fitness > 0.9);
        memcpy(results[k], r.transformation, sizeof results[k]);
        ptreg_icp_result_free(&r);
        if (k == 0) {
            opt.max_iter = 30, opt.tol = 0.0;
            check_methods_identical("bun045 -> bun000", src, n, tgt, m, &opt, 0);
        }
    }
    if (src && tgt)
        CHECK_MSG(rotation_error(results[0], results[1]) < 0.02, "two starts end %g deg apart",
                  rotation_error(results[0], results[1]));
    free(src);
    free(tgt);
}

/* Similarity ICP (scale on): the bunny scaled by 1.3, turned and moved,
 * comes back to 1e-4 in its scale; the rules around it. */
static void test_similarity(const char *dir)
{
    size_t n;
    float *src = read_points(dir, "bunny/bun000.ply", &n);
    float *tgt = src ? malloc(3 * n * sizeof(float)) : NULL;
    REQUIRE(tgt != NULL);
    const double axis[3] = {0.2, 1.0, 0.3}, t[3] = {0.01, -0.005, 0.003};
    double T[16];
    ptreg_transform_from_axis_angle(axis, 10.0, t, T);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            T[4 * r + c] *= 1.3;
    ptreg_transform_points(T, src, tgt, n);
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.scale = 1;
    opt.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_icp_result r;
    ptreg_error err;
    REQUIRE(ptreg_icp(src, n, tgt, n, &opt, &r, &err) == PTREG_OK);
    const double *M = r.transformation;
    const double det = M[0] * (M[5] * M[10] - M[6] * M[9]) - M[1] * (M[4] * M[10] - M[6] * M[8]) +
                       M[2] * (M[4] * M[9] - M[5] * M[8]);
    CHECK_MSG(fabs(cbrt(det) - 1.3) <= 1e-4, "similarity ICP: scale %.7f, not 1.3", cbrt(det));
    CHECK_MSG(r.rmse < 1e-5, "similarity ICP: rmse %g", r.rmse);
    ptreg_icp_result_free(&r);
    /* a fitted scale needs Horn's steps, and the CPU */
    opt.method = PTREG_ICP_PLANE;
    CHECK(ptreg_icp(src, n, tgt, n, &opt, &r, &err) == PTREG_ERR_ARG && strstr(err.message, "scale"));
    opt.method = PTREG_ICP_POINT;
    opt.device = (ptreg_device){PTREG_BACKEND_OPENCL, 0};
    CHECK(ptreg_icp(src, n, tgt, n, &opt, &r, &err) != PTREG_OK);
    free(src);
    free(tgt);
}

int main(void)
{
    test_model_subset_protocol();
    test_synthetic_scans();
    test_outlier_filters();
    test_deterministic();
    test_methods_identical();
    test_degenerate_models();
    test_options_and_stops();
    test_bad_arguments();
    const char *dir = check_data_dir();
    if (dir) {
        test_pcl_regression(dir);
        test_bunny_scans(dir);
        test_similarity(dir);
    }
    return check_exit();
}
