/* The tools Open3D's and PCL's users reach for: outlier filters, random
 * and uniform downsampling, a pose's evaluation, registration from given
 * correspondences. Each against a plain brute-force reference, for two
 * thread counts (the same bits), and against Open3D's own answers
 * (tests/data/tools, made by make_golden.py there). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"

#define DATA PTREG_TEST_SOURCE_DIR "/data/tools/"

/* A noisy plane of n points with a few far points. */
static float *make_cloud(size_t n, uint64_t seed)
{
    float *xyz = malloc(3 * n * sizeof *xyz);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        const int far = i % 37 == 5;
        xyz[3 * i] = (float)(ptreg_rng_uniform(&rng) * (far ? 4.0 : 1.0));
        xyz[3 * i + 1] = (float)(ptreg_rng_uniform(&rng) * (far ? 4.0 : 1.0));
        xyz[3 * i + 2] = (float)(far ? ptreg_rng_uniform(&rng) * 2.0 : ptreg_rng_normal(&rng) * 0.01);
    }
    return xyz;
}

static double dist2d(const float *a, const float *b)
{
    const double dx = (double)a[0] - b[0], dy = (double)a[1] - b[1], dz = (double)a[2] - b[2];
    return (dx * dx + dy * dy) + dz * dz;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Open3D's rule written out plainly: every distance, sorted. */
static void statistical_reference(const float *xyz, size_t n, size_t k, double ratio, unsigned char *keep)
{
    double *mean = calloc(n, sizeof *mean), *d = malloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++)
            d[j] = sqrt(dist2d(xyz + 3 * i, xyz + 3 * j));
        qsort(d, n, sizeof *d, by_value);
        const size_t kk = k < n ? k : n;
        for (size_t j = 0; j < kk; j++)
            mean[i] += d[j];
        mean[i] /= (double)kk;
    }
    double sum = 0.0, sq = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += mean[i] > 0 ? mean[i] : 0.0; /* nan-ok: Open3D's rule itself, not a check */
    const double m = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += mean[i] > 0 ? (mean[i] - m) * (mean[i] - m) : 0.0; /* nan-ok: Open3D's rule itself */
    const double threshold = m + ratio * sqrt(sq / (double)(n - 1));
    for (size_t i = 0; i < n; i++)
        keep[i] = mean[i] > 0 && mean[i] < threshold;
    free(mean);
    free(d);
}

static void radius_reference(const float *xyz, size_t n, double r, size_t min, unsigned char *keep)
{
    for (size_t i = 0; i < n; i++) {
        size_t count = 0;
        for (size_t j = 0; j < n; j++)
            count += j != i && dist2d(xyz + 3 * i, xyz + 3 * j) < r * r;
        keep[i] = count >= min;
    }
}

static size_t differences(const unsigned char *a, const unsigned char *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++)
        d += !a[i] != !b[i];
    return d;
}

static size_t kept(const unsigned char *keep, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += keep[i] != 0;
    return k;
}

static void test_outliers_reference(void)
{
    const size_t n = 1000;
    float *xyz = make_cloud(n, 3);
    unsigned char *want = malloc(n), *got = malloc(n), *again = malloc(n);
    const struct {
        size_t k;
        double ratio;
    } stat[] = {{1, 1.0}, {2, 1.0}, {8, 1.0}, {30, 2.0}, {5000, 0.5}};
    for (size_t c = 0; c < sizeof stat / sizeof stat[0]; c++) {
        statistical_reference(xyz, n, stat[c].k, stat[c].ratio, want);
        ptreg_set_num_threads(1);
        CHECK(ptreg_statistical_outliers(xyz, n, stat[c].k, stat[c].ratio, got, NULL, NULL) == PTREG_OK);
        ptreg_set_num_threads(4);
        CHECK(ptreg_statistical_outliers(xyz, n, stat[c].k, stat[c].ratio, again, NULL, NULL) == PTREG_OK);
        CHECK_MSG(differences(want, got, n) == 0, "statistical k %zu: %zu points differ from the reference", stat[c].k,
                  differences(want, got, n));
        CHECK(memcmp(got, again, n) == 0);
        /* k = 1: each point's only neighbor is itself, mean 0, dropped (Open3D's rule) */
        if (stat[c].k == 1)
            CHECK(kept(got, n) == 0);
        else
            CHECK(kept(got, n) > n / 2 && kept(got, n) < n);
    }
    const struct {
        double r;
        size_t min;
    } rad[] = {{0.05, 1}, {0.05, 4}, {0.1, 20}, {10.0, 999}, {10.0, 1000}};
    for (size_t c = 0; c < sizeof rad / sizeof rad[0]; c++) {
        radius_reference(xyz, n, rad[c].r, rad[c].min, want);
        ptreg_set_num_threads(1);
        CHECK(ptreg_radius_outliers(xyz, n, rad[c].r, rad[c].min, got, NULL) == PTREG_OK);
        ptreg_set_num_threads(4);
        CHECK(ptreg_radius_outliers(xyz, n, rad[c].r, rad[c].min, again, NULL) == PTREG_OK);
        CHECK_MSG(differences(want, got, n) == 0, "radius %g, %zu: %zu points differ from the reference", rad[c].r,
                  rad[c].min, differences(want, got, n));
        CHECK(memcmp(got, again, n) == 0);
    }
    ptreg_set_num_threads(0);
    CHECK(kept(got, n) == 0); /* 1000 others asked of 999 */
    ptreg_error err;
    CHECK(ptreg_statistical_outliers(xyz, n, 0, 1.0, got, NULL, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_statistical_outliers(xyz, n, 4, 0.0, got, NULL, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_statistical_outliers(xyz, n, 4, NAN, got, NULL, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_radius_outliers(xyz, n, 0.0, 1, got, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_radius_outliers(xyz, n, 0.1, 0, got, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_statistical_outliers(xyz, 0, 4, 1.0, got, NULL, &err) == PTREG_OK);
    free(xyz), free(want), free(got), free(again);
}

/* The boundary: Open3D keeps a point at exactly the radius out (< r). */
static void test_radius_boundary(void)
{
    const float xyz[] = {0, 0, 0, 1, 0, 0, 0.5f, 0, 0};
    unsigned char keep[3];
    CHECK(ptreg_radius_outliers(xyz, 2, 1.0, 1, keep, NULL) == PTREG_OK);
    CHECK(keep[0] == 0 && keep[1] == 0);
    CHECK(ptreg_radius_outliers(xyz, 3, 0.75, 1, keep, NULL) == PTREG_OK);
    CHECK(keep[0] == 1 && keep[1] == 1 && keep[2] == 1);
    CHECK(ptreg_radius_outliers(xyz, 3, 0.75, 2, keep, NULL) == PTREG_OK);
    CHECK(keep[0] == 0 && keep[1] == 0 && keep[2] == 1);
}

static void test_downsampling(void)
{
    const size_t n = 1000;
    unsigned char a[1000], b[1000], c[1000];
    CHECK(ptreg_random_downsample(n, 250, 7, a, NULL) == PTREG_OK);
    ptreg_set_num_threads(3);
    CHECK(ptreg_random_downsample(n, 250, 7, b, NULL) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(ptreg_random_downsample(n, 250, 8, c, NULL) == PTREG_OK);
    CHECK(kept(a, n) == 250 && memcmp(a, b, n) == 0 && memcmp(a, c, n) != 0);
    /* every point about as likely: the first and last halves each near 125 */
    CHECK(kept(a, n / 2) > 90 && kept(a, n / 2) < 160);
    CHECK(ptreg_random_downsample(n, 0, 7, a, NULL) == PTREG_OK && kept(a, n) == 0);
    CHECK(ptreg_random_downsample(n, n, 7, a, NULL) == PTREG_OK && kept(a, n) == n);
    CHECK(ptreg_random_downsample(n, n + 1, 7, a, NULL) == PTREG_ERR_ARG);
    CHECK(ptreg_random_downsample_count(1000, 0.25) == 250);
    CHECK(ptreg_random_downsample_count(999, 0.5) == 499); /* Open3D's floor */
    CHECK(ptreg_random_downsample_count(10, 1.0) == 10 && ptreg_random_downsample_count(10, 0.0) == 0);
    CHECK(ptreg_uniform_downsample(10, 3, a, NULL) == PTREG_OK);
    CHECK(kept(a, 10) == 4 && a[0] && a[3] && a[6] && a[9] && !a[1]);
    CHECK(ptreg_uniform_downsample(10, 1, a, NULL) == PTREG_OK && kept(a, 10) == 10);
    CHECK(ptreg_uniform_downsample(10, 0, a, NULL) == PTREG_ERR_ARG);
}

static void test_select(void)
{
    ptreg_cloud c, d;
    REQUIRE(ptreg_cloud_alloc(&c, 4, 1, NULL) == PTREG_OK);
    c.intensity = malloc(4 * sizeof *c.intensity);
    c.classification = malloc(4);
    c.curvature = malloc(4 * sizeof *c.curvature);
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 3; k++)
            c.xyz[3 * i + k] = (float)(10 * i + k), c.normals[3 * i + k] = (float)(i + k);
        c.intensity[i] = (uint16_t)(100 + i), c.classification[i] = (uint8_t)i, c.curvature[i] = 0.5f * (float)i;
    }
    c.origin[0] = 5e5;
    const unsigned char keep[4] = {0, 1, 0, 1};
    REQUIRE(ptreg_cloud_select(&c, keep, &d, NULL) == PTREG_OK);
    CHECK(d.n == 2 && d.xyz[0] == 10.0f && d.xyz[3] == 30.0f && d.normals[3] == 3.0f);
    CHECK(d.intensity[1] == 103 && d.classification[0] == 1 && d.curvature[1] == 1.5f && d.origin[0] == 5e5);
    ptreg_cloud_free(&d);
    ptreg_cloud_free(&c);
}

static void evaluate_reference(const float *s, size_t ns, const float *t, size_t nt, const double T[16], double d,
                               size_t *inliers, double *rmse)
{
    double sum = 0.0;
    *inliers = 0;
    for (size_t i = 0; i < ns; i++) {
        double p[3], best = INFINITY;
        for (int r = 0; r < 3; r++)
            p[r] = T[4 * r] * s[3 * i] + T[4 * r + 1] * s[3 * i + 1] + T[4 * r + 2] * s[3 * i + 2] + T[4 * r + 3];
        for (size_t j = 0; j < nt; j++) {
            const double dx = p[0] - t[3 * j], dy = p[1] - t[3 * j + 1], dz = p[2] - t[3 * j + 2];
            const double e = (dx * dx + dy * dy) + dz * dz;
            best = e < best ? e : best;
        }
        if (best < d * d)
            sum += best, ++*inliers;
    }
    *rmse = *inliers ? sqrt(sum / (double)*inliers) : 0.0;
}

static void test_evaluate_reference(void)
{
    const size_t n = 800;
    float *s = make_cloud(n, 11), *t = make_cloud(n, 12);
    double T[16];
    const double axis[3] = {0.3, -1, 0.2}, tr[3] = {0.01, 0.02, -0.01};
    ptreg_transform_from_axis_angle(axis, 3.0, tr, T);
    const double dists[] = {0.01, 0.05, INFINITY};
    for (int c = 0; c < 3; c++) {
        size_t want;
        double rmse;
        evaluate_reference(s, n, t, n, T, dists[c], &want, &rmse);
        ptreg_evaluation e1, e4;
        ptreg_matches m = {0};
        ptreg_set_num_threads(1);
        CHECK(ptreg_evaluate_registration(s, n, t, n, T, dists[c], &e1, &m, NULL) == PTREG_OK);
        ptreg_set_num_threads(4);
        CHECK(ptreg_evaluate_registration(s, n, t, n, T, dists[c], &e4, NULL, NULL) == PTREG_OK);
        CHECK_MSG(e1.inliers == want, "max_dist %g: %zu inliers, the reference's %zu", dists[c], e1.inliers, want);
        CHECK_NEAR(e1.inlier_rmse, rmse, 1e-12);
        CHECK_NEAR(e1.fitness, (double)want / (double)n, 0.0);
        CHECK(memcmp(&e1, &e4, sizeof e1) == 0);
        CHECK(m.count == e1.inliers);
        int ordered = 1;
        for (size_t k = 1; k < m.count; k++)
            ordered &= m.source[k - 1] < m.source[k];
        CHECK(ordered);
        ptreg_matches_free(&m);
    }
    ptreg_set_num_threads(0);
    ptreg_evaluation e;
    CHECK(ptreg_evaluate_registration(s, n, t, n, T, 0.0, &e, NULL, NULL) == PTREG_ERR_ARG);
    CHECK(ptreg_evaluate_registration(s, n, t, 0, T, 0.1, &e, NULL, NULL) == PTREG_ERR_ARG);
    CHECK(ptreg_evaluate_registration(s, 0, t, n, T, 0.1, &e, NULL, NULL) == PTREG_OK && e.fitness == 0.0);
    T[3] = NAN;
    CHECK(ptreg_evaluate_registration(s, n, t, n, T, 0.1, &e, NULL, NULL) == PTREG_ERR_ARG);
    free(s), free(t);
}

static void test_correspondences(void)
{
    const size_t n = 300;
    float *s = make_cloud(n, 21), *t = malloc(3 * n * sizeof *t);
    double T[16], Tw[16];
    const double axis[3] = {1, 1, 0}, tr[3] = {0.5, -0.2, 0.1};
    ptreg_transform_from_axis_angle(axis, 25.0, tr, T);
    ptreg_transform_points(T, s, t, n);
    uint32_t *si = malloc(n * sizeof *si), *ti = malloc(n * sizeof *ti);
    double *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++)
        si[i] = ti[i] = (uint32_t)i, w[i] = 1.0;
    for (size_t i = 0; i < n; i += 5) /* every 5th pair wrong, weight 0 */
        ti[i] = (uint32_t)((i * 7 + 3) % n), w[i] = 0.0;
    const ptreg_matches m = {n, si, ti};
    ptreg_ransac_result r;
    double angle, dt;
    /* weighted: the wrong pairs weigh nothing, the pose is exact to float rounding */
    CHECK(ptreg_register_correspondences(s, n, t, n, &m, w, NULL, &r, NULL) == PTREG_OK);
    ptreg_transform_difference(T, r.transformation, &angle, &dt);
    CHECK_MSG(angle < 1e-4 && dt < 1e-5, "weighted: %g deg, %g", angle, dt);
    CHECK(r.inliers == n && r.hypotheses == 0);
    memcpy(Tw, r.transformation, sizeof Tw);
    /* unweighted: the wrong pairs pull it off */
    CHECK(ptreg_register_correspondences(s, n, t, n, &m, NULL, NULL, &r, NULL) == PTREG_OK);
    ptreg_transform_difference(T, r.transformation, &angle, &dt);
    CHECK(angle > 0.1);
    /* RANSAC finds the right ones, the same for any thread count */
    ptreg_ransac_options ro;
    ptreg_ransac_options_default(&ro);
    ro.edge_length = 0.0, ro.check_distance = -1.0, ro.max_dist = 0.01, ro.seed = 3;
    ptreg_set_num_threads(1);
    CHECK(ptreg_register_correspondences(s, n, t, n, &m, NULL, &ro, &r, NULL) == PTREG_OK);
    ptreg_ransac_result r4;
    ptreg_set_num_threads(4);
    CHECK(ptreg_register_correspondences(s, n, t, n, &m, NULL, &ro, &r4, NULL) == PTREG_OK);
    ptreg_set_num_threads(0);
    ptreg_transform_difference(T, r.transformation, &angle, &dt);
    CHECK_MSG(angle < 1e-4 && dt < 1e-5, "RANSAC: %g deg, %g", angle, dt);
    CHECK(r.inliers == n - n / 5 && r.hypotheses > 0);
    CHECK(memcmp(r.transformation, r4.transformation, sizeof r.transformation) == 0 && r.hypotheses == r4.hypotheses);
    CHECK(ptreg_register_correspondences(s, n, t, n, &m, w, &ro, &r, NULL) == PTREG_OK);
    ptreg_transform_difference(Tw, r.transformation, &angle, &dt);
    CHECK(angle < 1e-6 && dt < 1e-7);
    /* the fit's RMS: near 0 on the right pairs within 0.01; every pair adds the wrong ones */
    size_t used = 0;
    double rmse = ptreg_correspondences_rmse(s, t, &m, T, 0.01, &used);
    CHECK_MSG(used == n - n / 5 && rmse < 1e-5, "within 0.01: %zu pairs, rmse %g", used, rmse);
    rmse = ptreg_correspondences_rmse(s, t, &m, T, 0.0, &used);
    CHECK_MSG(used == n && rmse > 0.01, "every pair: %zu, rmse %g", used, rmse);
    const ptreg_matches none = {0, si, ti};
    rmse = ptreg_correspondences_rmse(s, t, &none, T, 0.0, &used);
    CHECK(used == 0 && rmse == 0.0);
    /* the caller's mistakes */
    ptreg_error err;
    const ptreg_matches two = {2, si, ti};
    CHECK(ptreg_register_correspondences(s, n, t, n, &two, NULL, NULL, &r, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_register_correspondences(s, n, t, n - 1, &m, NULL, NULL, &r, &err) == PTREG_ERR_ARG);
    w[1] = -1.0;
    CHECK(ptreg_register_correspondences(s, n, t, n, &m, w, NULL, &r, &err) == PTREG_ERR_ARG);
    const float line[] = {0, 0, 0, 1, 0, 0, 2, 0, 0};
    const uint32_t idx[] = {0, 1, 2};
    const ptreg_matches m3 = {3, (uint32_t *)idx, (uint32_t *)idx};
    CHECK(ptreg_register_correspondences(line, 3, line, 3, &m3, NULL, NULL, &r, &err) == PTREG_ERR_RUNTIME);
    free(s), free(t), free(si), free(ti), free(w);
}

/* ---- Open3D's answers ---- */

static size_t read_indices(const char *name, size_t *out, size_t cap)
{
    FILE *f = fopen(name, "r");
    CHECK_MSG(f != NULL, "%s is missing", name);
    size_t count = 0;
    while (f && count < cap && fscanf(f, "%zu", &out[count]) == 1)
        count++;
    if (f)
        fclose(f);
    return count;
}

/* keep against Open3D's kept indices: how many points differ. */
static size_t golden_differences(const char *name, const unsigned char *keep, size_t n)
{
    size_t *ind = malloc(n * sizeof *ind);
    const size_t count = read_indices(name, ind, n);
    unsigned char *want = calloc(n, 1);
    for (size_t k = 0; k < count; k++)
        if (ind[k] < n)
            want[ind[k]] = 1;
    const size_t d = differences(want, keep, n);
    free(ind), free(want);
    return d;
}

static void test_open3d_golden(void)
{
    ptreg_cloud s, t;
    REQUIRE(ptreg_cloud_read(DATA "source.xyz", PTREG_FORMAT_AUTO, &s, NULL) == PTREG_OK);
    REQUIRE(ptreg_cloud_read(DATA "target.xyz", PTREG_FORMAT_AUTO, &t, NULL) == PTREG_OK);
    CHECK(s.n == 630 && t.n == 500);
    unsigned char *keep = malloc(s.n);
    CHECK(ptreg_statistical_outliers(s.xyz, s.n, 20, 2.0, keep, NULL, NULL) == PTREG_OK);
    CHECK(golden_differences(DATA "statistical_20_2.txt", keep, s.n) == 0);
    CHECK(ptreg_statistical_outliers(s.xyz, s.n, 6, 0.5, keep, NULL, NULL) == PTREG_OK);
    CHECK(golden_differences(DATA "statistical_6_0.5.txt", keep, s.n) == 0);
    CHECK(ptreg_radius_outliers(s.xyz, s.n, 0.08, 8, keep, NULL) == PTREG_OK);
    CHECK(golden_differences(DATA "radius_0.08_8.txt", keep, s.n) == 0);
    CHECK(ptreg_uniform_downsample(s.n, 7, keep, NULL) == PTREG_OK);
    CHECK(golden_differences(DATA "uniform_7.txt", keep, s.n) == 0);
    double near[16], want[16];
    REQUIRE(ptreg_transform_read(DATA "near.txt", near, NULL) == PTREG_OK);
    ptreg_evaluation e;
    ptreg_matches m = {0};
    CHECK(ptreg_evaluate_registration(s.xyz, s.n, t.xyz, t.n, near, 0.02, &e, &m, NULL) == PTREG_OK);
    FILE *f = fopen(DATA "evaluate_near_0.02.txt", "r");
    double fitness = NAN, rmse = NAN;
    size_t count = 0;
    CHECK(f && fscanf(f, "%lf %lf %zu", &fitness, &rmse, &count) == 3);
    if (f)
        fclose(f);
    /* Open3D's numbers: the same pairs, the RMSE to rounding (reached 1e-17) */
    CHECK(e.inliers == count && m.count == count);
    CHECK_NEAR(e.fitness, fitness, 1e-15);
    CHECK_NEAR(e.inlier_rmse, rmse, 1e-14);
    size_t *pairs = malloc(2 * count * sizeof *pairs);
    CHECK(read_indices(DATA "evaluate_near_0.02_pairs.txt", pairs, 2 * count) == 2 * count);
    size_t wrong = 0;
    for (size_t k = 0; k < count && k < m.count; k++)
        wrong += pairs[2 * k] != m.source[k] || pairs[2 * k + 1] != m.target[k];
    CHECK_MSG(wrong == 0, "%zu correspondences differ from Open3D's", wrong);
    ptreg_matches_free(&m);
    free(pairs);
    /* Horn on the clean pairs against Open3D's Umeyama (reached 1e-16) */
    size_t clean[2 * 500];
    const size_t nc = read_indices(DATA "pairs_clean.txt", clean, 1000) / 2;
    uint32_t si[500], ti[500];
    for (size_t k = 0; k < nc; k++)
        si[k] = (uint32_t)clean[2 * k], ti[k] = (uint32_t)clean[2 * k + 1];
    const ptreg_matches cm = {nc, si, ti};
    ptreg_ransac_result r;
    CHECK(ptreg_register_correspondences(s.xyz, s.n, t.xyz, t.n, &cm, NULL, NULL, &r, NULL) == PTREG_OK);
    REQUIRE(ptreg_transform_read(DATA "horn_clean.txt", want, NULL) == PTREG_OK);
    CHECK_MSG(check_max_abs_diff(r.transformation, want, 16) < 1e-12, "Horn %g from Open3D's",
              check_max_abs_diff(r.transformation, want, 16));
    free(keep);
    ptreg_cloud_free(&s);
    ptreg_cloud_free(&t);
}

int main(void)
{
    test_outliers_reference();
    test_radius_boundary();
    test_downsampling();
    test_select();
    test_evaluate_reference();
    test_correspondences();
    test_open3d_golden();
    return check_exit();
}
