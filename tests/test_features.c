/* Normals, PFH and FPFH: a plane's known bins, normals of a plane and a
 * sphere, invariance under rigid motion, the pair feature's symmetry,
 * histogram sums, determinism across threads, bad arguments. */
#include "check.h"
#include "ptreg/ptreg.h"

#include <stdint.h>
#include "hooks.h"
#include "core/numeric.h"

/* An n x n grid on z = 0 with spacing h, normals +z. */
static void plane(size_t n, float h, float **xyz, float **normals)
{
    *xyz = malloc(3 * n * n * sizeof(float));
    *normals = malloc(3 * n * n * sizeof(float));
    for (size_t i = 0; i < n * n; i++) {
        (*xyz)[3 * i] = h * (float)(i % n);
        (*xyz)[3 * i + 1] = h * (float)(i / n);
        (*xyz)[3 * i + 2] = 0.0f;
        (*normals)[3 * i] = (*normals)[3 * i + 1] = 0.0f;
        (*normals)[3 * i + 2] = 1.0f;
    }
}

static void test_plane_bins(void)
{
    float *xyz, *nrm;
    const size_t g = 15, n = g * g;
    plane(g, 0.1f, &xyz, &nrm);
    float *pfh = malloc(n * PTREG_PFH_BINS * sizeof *pfh), *fpfh = malloc(n * PTREG_FPFH_BINS * sizeof *fpfh);
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    o.neighbors.k = 12;
    size_t missing = 99;
    CHECK(ptreg_pfh(xyz, nrm, n, &o, pfh, &missing, NULL) == PTREG_OK && missing == 0);
    CHECK(ptreg_fpfh(xyz, nrm, n, &o, fpfh, &missing, NULL) == PTREG_OK && missing == 0);
    int pfh_ok = 1, fpfh_ok = 1;
    for (size_t i = 0; i < n; i++) {
        for (int b = 0; b < PTREG_PFH_BINS; b++)
            pfh_ok &= fabsf(pfh[i * PTREG_PFH_BINS + b] - (b == 62 ? 100.0f : 0.0f)) < 1e-3f;
        for (int b = 0; b < PTREG_FPFH_BINS; b++)
            fpfh_ok &= fabsf(fpfh[i * PTREG_FPFH_BINS + b] - (b == 5 || b == 16 || b == 27 ? 100.0f : 0.0f)) < 1e-3f;
    }
    CHECK_MSG(pfh_ok, "plane PFH is not 100 in bin 62");
    CHECK_MSG(fpfh_ok, "plane FPFH is not 100 in bins 5, 16, 27");
    o.convention = PTREG_FPFH_OPEN3D;
    o.neighbors.k = 0;
    o.neighbors.radius = 0.25;
    CHECK(ptreg_fpfh(xyz, nrm, n, &o, fpfh, NULL, NULL) == PTREG_OK);
    CHECK_NEAR(fpfh[7 * PTREG_FPFH_BINS + 16], 200.0, 1e-3);
    free(xyz);
    free(nrm);
    free(pfh);
    free(fpfh);
}

static void test_normals(void)
{
    /* A tilted noisy plane: normals along its normal, facing the viewpoint. */
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 5);
    const size_t n = 2000;
    float *xyz = malloc(3 * n * sizeof(float)), *nrm = malloc(3 * n * sizeof(float)), *curv = malloc(n * sizeof(float));
    const double pn[3] = {0.48, 0.6, 0.64}; /* unit */
    for (size_t i = 0; i < n; i++) {
        double u = ptreg_rng_uniform(&rng) * 4 - 2, v = ptreg_rng_uniform(&rng) * 4 - 2;
        double e1[3] = {0.8, -0.6, 0}, e2[3] = {-0.384, -0.512, 0.768}; /* both orthogonal to pn */
        for (int a = 0; a < 3; a++)
            xyz[3 * i + a] = (float)(u * e1[a] + v * e2[a] + 5 * pn[a] + 1e-4 * ptreg_rng_normal(&rng));
    }
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    size_t missing = 9;
    CHECK(ptreg_normals(xyz, n, &o, nrm, curv, &missing, NULL) == PTREG_OK && missing == 0);
    double worst = 1, worst_curv = 0;
    for (size_t i = 0; i < n; i++) {
        double c = -(nrm[3 * i] * pn[0] + nrm[3 * i + 1] * pn[1] + nrm[3 * i + 2] * pn[2]); /* origin is behind */
        worst = check_least(worst, c);
        worst_curv = check_worse(worst_curv, curv[i]);
    }
    CHECK_MSG(worst > 0.999, "plane normal off by acos(%g)", worst);
    CHECK(worst_curv < 1e-3);
    /* viewpoint on the other side flips them */
    for (int a = 0; a < 3; a++)
        o.viewpoint[a] = 10 * pn[a];
    CHECK(ptreg_normals(xyz, n, &o, nrm, NULL, NULL, NULL) == PTREG_OK);
    CHECK(nrm[0] * pn[0] + nrm[1] * pn[1] + nrm[2] * pn[2] > 0.999);
    /* a radius with too few neighbors: NaN normals, counted */
    o.neighbors.k = 0;
    o.neighbors.radius = 1e-3;
    CHECK(ptreg_normals(xyz, n, &o, nrm, NULL, &missing, NULL) == PTREG_OK && missing == n && isnan(nrm[0]));
    free(xyz);
    free(nrm);
    free(curv);
}

/* A smooth closed surface with normals: the built-in blob. */
static void blob(size_t n, float **xyz, float **nrm)
{
    ptreg_cloud c;
    ptreg_synth_model(PTREG_SHAPE_BLOB, n, 3, &c, NULL);
    *xyz = c.xyz;
    *nrm = malloc(3 * n * sizeof(float));
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    o.neighbors.k = 20;
    ptreg_normals(*xyz, n, &o, *nrm, NULL, NULL, NULL);
    free(c.normals);
}

/* Fraction of rows whose largest difference is below tol. */
static double rows_close(const float *a, const float *b, size_t n, int bins, float tol)
{
    size_t close = 0;
    for (size_t i = 0; i < n; i++) {
        float worst = 0;
        for (int j = 0; j < bins; j++)
            worst = check_worse(worst, fabsf(a[i * (size_t)bins + (size_t)j] - b[i * (size_t)bins + (size_t)j]));
        close += worst < tol;
    }
    return (double)close / (double)n;
}

static void test_rigid_invariance_and_threads(void)
{
    const size_t n = 3000;
    float *xyz, *nrm;
    blob(n, &xyz, &nrm);
    double T[16], axis[3] = {1, 2, 3}, t[3] = {5, -2, 7};
    ptreg_transform_from_axis_angle(axis, 70, t, T);
    float *xyz2 = malloc(3 * n * sizeof(float)), *nrm2 = malloc(3 * n * sizeof(float));
    ptreg_transform_points(T, xyz, xyz2, n);
    ptreg_transform_vectors(T, nrm, nrm2, n);
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    float *a = malloc(n * PTREG_PFH_BINS * sizeof(float)), *b = malloc(n * PTREG_PFH_BINS * sizeof(float));
    for (int kind = 0; kind < 2; kind++) {
        int bins = kind ? PTREG_FPFH_BINS : PTREG_PFH_BINS;
        ptreg_status (*fn)(const float *, const float *, size_t, const ptreg_features_options *, float *, size_t *,
                           ptreg_error *) = kind ? ptreg_fpfh : ptreg_pfh;
        ptreg_set_num_threads(1);
        CHECK(fn(xyz, nrm, n, &o, a, NULL, NULL) == PTREG_OK);
        ptreg_set_num_threads(2);
        CHECK(fn(xyz, nrm, n, &o, b, NULL, NULL) == PTREG_OK);
        CHECK_MSG(!memcmp(a, b, n * (size_t)bins * sizeof(float)), "%s: 1 and 2 threads differ", kind ? "fpfh" : "pfh");
        CHECK(fn(xyz2, nrm2, n, &o, b, NULL, NULL) == PTREG_OK);
        double close = rows_close(a, b, n, bins, 0.01f);
        /* A value on a bin edge can round to the other side after the motion. */
        CHECK_MSG(close > 0.97, "%s: only %.3f of the rows survive a rigid motion", kind ? "fpfh" : "pfh", close);
        /* sums: PFH rows 100 (minus pairs without a feature), FPFH blocks 100 */
        double worst = 0;
        for (size_t i = 0; i < n; i++)
            for (int blk = 0; blk < (kind ? 3 : 1); blk++) {
                double s = 0;
                int len = kind ? 11 : PTREG_PFH_BINS;
                for (int j = 0; j < len; j++)
                    s += a[i * (size_t)bins + (size_t)(blk * len + j)];
                worst = check_worse(worst, fabs(s - 100));
            }
        CHECK_MSG(worst < 1e-3, "%s: a histogram sums to 100 +- %g", kind ? "fpfh" : "pfh", worst);
    }
    ptreg_set_num_threads(0);
    free(a);
    free(b);
    free(xyz);
    free(nrm);
    free(xyz2);
    free(nrm2);
}

static void test_pair_feature_symmetry(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 11);
    int same = 1;
    for (int t = 0; t < 10000; t++) {
        float p1[3], p2[3], n1[3], n2[3], f[4], g[4];
        for (int a = 0; a < 3; a++) {
            p1[a] = (float)ptreg_rng_normal(&rng);
            p2[a] = (float)ptreg_rng_normal(&rng);
            n1[a] = (float)ptreg_rng_normal(&rng);
            n2[a] = (float)ptreg_rng_normal(&rng);
        }
        float l1 = sqrtf(n1[0] * n1[0] + n1[1] * n1[1] + n1[2] * n1[2]);
        float l2 = sqrtf(n2[0] * n2[0] + n2[1] * n2[1] + n2[2] * n2[2]);
        for (int a = 0; a < 3; a++) {
            n1[a] /= l1;
            n2[a] /= l2;
        }
        CHECK(ptreg_pair_feature(p1, n1, p2, n2, f) && ptreg_pair_feature(p2, n2, p1, n1, g));
        same &= !memcmp(f, g, sizeof f);
        CHECK(f[0] >= -3.1416f && f[0] <= 3.1416f && fabsf(f[1]) <= 1.0001f && fabsf(f[2]) <= 1.0001f);
    }
    CHECK_MSG(same, "swapping a pair changed its features");
    float p[3] = {1, 2, 3}, nz[3] = {0, 0, 1}, f[4];
    CHECK(!ptreg_pair_feature(p, nz, p, nz, f)); /* same point */
    float q[3] = {1, 2, 4};
    CHECK(!ptreg_pair_feature(p, nz, q, nz, f)); /* normal along d */
}

static void test_bad_arguments(void)
{
    float xyz[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0}, nrm[9] = {0, 0, 1, 0, 0, 1, 0, 0, 1}, out[3 * 125];
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    ptreg_error err;
    o.neighbors.k = 0;
    o.neighbors.radius = -1;
    CHECK(ptreg_fpfh(xyz, nrm, 3, &o, out, NULL, &err) == PTREG_ERR_ARG && strstr(err.message, "radius"));
    CHECK(ptreg_pfh(NULL, nrm, 3, NULL, out, NULL, &err) == PTREG_ERR_ARG);
    ptreg_features_options_default(&o);
    nrm[3] = NAN;
    size_t missing = 0;
    CHECK(ptreg_pfh(xyz, nrm, 3, &o, out, &missing, &err) == PTREG_OK && missing == 3 && isnan(out[0]));
    CHECK(ptreg_normals(xyz, 3, NULL, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
}

/* Rows of a golden CSV (index,v0,v1,...) against ptreg's descriptors:
 * how many rows differ by more than 0.01 in some bin, and how many of
 * those differ by one pair moved to another bin (PFH: two bins off by
 * 100 / pairs, nothing else). */
static void compare_golden(const char *path, const float *out, int bins, size_t n, size_t *rows, size_t *off,
                           size_t *one_pair)
{
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    *rows = *off = *one_pair = 0;
    static char line[1 << 15];
    while (f && fgets(line, sizeof line, f)) {
        char *p = line;
        size_t idx = strtoul(p, &p, 10);
        if (idx >= n)
            break;
        int over = 0, moved = 0;
        for (int b = 0; b < bins; b++) {
            double v = strtod(p + 1, &p), d = fabs(v - out[idx * (size_t)bins + (size_t)b]);
            if (isnan(v) && isnan(out[idx * (size_t)bins + (size_t)b]))
                d = 0;
            over += !(d <= 0.01); /* a NaN against a number is over */
            moved += !(d <= 0.01) && d < 0.5;
        }
        (*rows)++;
        *off += over > 0; /* nan-ok: an int */
        *one_pair += over == 2 && moved == 2;
    }
    if (f)
        fclose(f);
}

/* PCL's PFHEstimation / FPFHEstimation and Open3D's compute_fpfh_feature on
 * cloud_bin_0 (every 10th point; tests/data/features/README.md remakes them). */
static void test_goldens(const char *data)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/features/cloud_bin_0.pcd", data);
    ptreg_cloud c;
    ptreg_error err;
    if (ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err)) {
        CHECK_MSG(0, "%s", err.message);
        return;
    }
    CHECK(c.normals != NULL);
    static const struct {
        const char *file;
        int pfh;
        size_t k;
        double radius;
        ptreg_fpfh_convention conv;
    } cases[] = {
        {"pcl_fpfh_k30_every10.csv", 0, 30, 0, PTREG_FPFH_PCL},
        {"pcl_fpfh_r0.15_every10.csv", 0, 0, 0.15, PTREG_FPFH_PCL},
        {"open3d_fpfh_k30_every10.csv", 0, 30, 0, PTREG_FPFH_OPEN3D},
        {"open3d_fpfh_r0.15_every10.csv", 0, 0, 0.15, PTREG_FPFH_OPEN3D},
        {"open3d_fpfh_r0.25_nn100_every10.csv", 0, 100, 0.25, PTREG_FPFH_OPEN3D}, /* KDTreeSearchParamHybrid */
        {"pcl_pfh_k30_every10.csv", 1, 30, 0, PTREG_FPFH_PCL},
        {"pcl_pfh_r0.15_every10.csv", 1, 0, 0.15, PTREG_FPFH_PCL},
    };
    float *out = malloc(c.n * PTREG_PFH_BINS * sizeof *out);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ptreg_features_options o;
        ptreg_features_options_default(&o);
        o.neighbors.k = cases[i].k;
        o.neighbors.radius = cases[i].radius;
        o.convention = cases[i].conv;
        int bins = cases[i].pfh ? PTREG_PFH_BINS : PTREG_FPFH_BINS;
        CHECK((cases[i].pfh ? ptreg_pfh : ptreg_fpfh)(c.xyz, c.normals, c.n, &o, out, NULL, &err) == PTREG_OK);
        snprintf(path, sizeof path, "%s/data/features/%s", PTREG_TEST_SOURCE_DIR, cases[i].file);
        size_t rows, off, one_pair;
        compare_golden(path, out, bins, c.n, &rows, &off, &one_pair);
        CHECK_MSG(rows == 391, "%s: %zu rows", cases[i].file, rows);
        /* Every bin within 0.01 (the tolerance). */
        CHECK_MSG(off == 0, "%s: %zu of %zu rows off by > 0.01 (%zu by one pair)", cases[i].file, off, rows, one_pair);
        printf("%s: %zu rows, all within 0.01\n", cases[i].file, rows);
    }
    free(out);
    ptreg_cloud_free(&c);
}

/* PCL's NormalEstimation on cloud_bin_0's points (the file's normals
 * ignored), every 10th point: the same normal (sign included, viewpoint the
 * origin) to 1e-5 and the same curvature to 1e-5. */
static void test_normal_goldens(const char *data)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/features/cloud_bin_0.pcd", data);
    ptreg_cloud c;
    if (ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, NULL)) {
        CHECK_MSG(0, "cannot read %s", path);
        return;
    }
    float *nrm = malloc(3 * c.n * sizeof *nrm), *curv = malloc(c.n * sizeof *curv);
    static const struct {
        const char *file;
        ptreg_neighborhood nb;
    } cases[] = {{"pcl_normals_k30_every10.csv", {30, 0}}, {"pcl_normals_r0.15_every10.csv", {0, 0.15}}};
    for (size_t k = 0; k < 2; k++) {
        ptreg_normals_options o;
        ptreg_normals_options_default(&o);
        o.neighbors = cases[k].nb;
        CHECK(ptreg_normals(c.xyz, c.n, &o, nrm, curv, NULL, NULL) == PTREG_OK);
        snprintf(path, sizeof path, "%s/data/features/%s", PTREG_TEST_SOURCE_DIR, cases[k].file);
        FILE *f = fopen(path, "r");
        size_t rows = 0, off = 0, i;
        double v[4], worst_n = 0, worst_c = 0;
        while (f && fscanf(f, "%zu,%lf,%lf,%lf,%lf", &i, &v[0], &v[1], &v[2], &v[3]) == 5 && i < c.n) {
            double dn = 0;
            for (int a = 0; a < 3; a++)
                dn = check_worse(dn, fabs(v[a] - nrm[3 * i + (size_t)a]));
            worst_n = check_worse(worst_n, dn);
            worst_c = check_worse(worst_c, fabs(v[3] - curv[i]));
            off += !(dn <= 1e-5) || !(fabs(v[3] - curv[i]) <= 1e-5);
            rows++;
        }
        if (f)
            fclose(f);
        CHECK_MSG(rows == 391 && off == 0, "%s: %zu rows, %zu off (normal %.2g, curvature %.2g)", cases[k].file, rows,
                  off, worst_n, worst_c);
        printf("%s: %zu rows, normals within %.2g, curvature within %.2g\n", cases[k].file, rows, worst_n, worst_c);
    }
    free(nrm);
    free(curv);
    ptreg_cloud_free(&c);
}

/* Orientations: along a direction, as the solver gives it (the same
 * axes), and consistent over a closed surface by the tangent-plane
 * propagation (outward: the highest point's normal faces +z), for any
 * thread count. */
static void test_orientations(void)
{
    ptreg_cloud c;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, 6000, 9, &c, NULL) == PTREG_OK);
    const size_t n = c.n;
    float *ref = malloc(3 * n * sizeof *ref), *got = malloc(3 * n * sizeof *got),
          *again = malloc(3 * n * sizeof *again);
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    o.neighbors.k = 15;
    CHECK(ptreg_normals(c.xyz, n, &o, ref, NULL, NULL, NULL) == PTREG_OK);
    o.orientation = PTREG_ORIENT_DIRECTION;
    o.direction[0] = 1.0, o.direction[1] = -2.0, o.direction[2] = 0.5;
    CHECK(ptreg_normals(c.xyz, n, &o, got, NULL, NULL, NULL) == PTREG_OK);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[3 * i] - 2.0f * got[3 * i + 1] + 0.5f * got[3 * i + 2] < 0.0f ||
               fabsf(
                   fabsf(got[3 * i] * ref[3 * i] + got[3 * i + 1] * ref[3 * i + 1] + got[3 * i + 2] * ref[3 * i + 2]) -
                   1.0f) > 1e-5f;
    CHECK_MSG(bad == 0, "direction: %zu normals against it or off their axis", bad);
    o.orientation = PTREG_ORIENT_TANGENT_PLANE;
    double centre[3];
    ptreg_points_centroid(c.xyz, n, centre);
    for (int threads = 1; threads <= 2; threads++) {
        ptreg_set_num_threads(threads);
        CHECK(ptreg_normals(c.xyz, n, &o, threads == 1 ? got : again, NULL, NULL, NULL) == PTREG_OK);
    }
    ptreg_set_num_threads(0);
    CHECK(!memcmp(got, again, 3 * n * sizeof *got));
    size_t inward = 0;
    for (size_t i = 0; i < n; i++) {
        const float *p = c.xyz + 3 * i, *nr = got + 3 * i;
        inward += (p[0] - centre[0]) * nr[0] + (p[1] - centre[1]) * nr[1] + (p[2] - centre[2]) * nr[2] < 0.0;
    }
    /* the blob is star-shaped about its centre except at the steep flanks of
     * its bumps, where an outward normal may face the centre a little */
    CHECK_MSG(inward < n / 100, "tangent plane: %zu of %zu normals face inward", inward, n);
    o.orient_k = 0;
    CHECK(ptreg_normals(c.xyz, n, &o, got, NULL, NULL, NULL) == PTREG_ERR_ARG);
    free(ref), free(got), free(again);
    ptreg_cloud_free(&c);
}

int main(void)
{
    test_plane_bins();
    test_normals();
    test_orientations();
    test_rigid_invariance_and_threads();
    test_pair_feature_symmetry();
    test_bad_arguments();
    const char *data = check_data_dir();
    if (data) {
        test_goldens(data);
        test_normal_goldens(data);
    }
    return check_exit();
}
