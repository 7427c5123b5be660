/* Global registration: feature matches (exact, mutual, NaN rows), RANSAC
 * on planted correspondences with outliers, the checkers, determinism for
 * any thread count, and the whole pipeline recovering rotations uniform
 * over SO(3) of a real fragment (cloud_bin_0 onto cloud_bin_1, whose truth
 * is the identity). */
#include "check.h"
#include "core/cpu.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"
#include "hooks.h"
#include "reg/global/global_impl.h"

/* A rotation uniform over SO(3): a unit quaternion from four normals. */
static void random_pose(ptreg_rng *rng, double shift, double T[16])
{
    double q[4], R[9];
    for (int k = 0; k < 4; k++)
        q[k] = ptreg_rng_normal(rng);
    ptreg_quaternion_to_matrix(q, R);
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            T[4 * r + c] = R[3 * r + c];
        T[4 * r + 3] = shift * ptreg_rng_normal(rng);
    }
}

/* Every ISA and thread count, one way and mutual, with and without the
 * ratio test: the same pairs as a plain scan of exact distances. */
static void check_against_plain(const float *fs, size_t ns, const float *ft, size_t nt, double test_ratio,
                                const char *what)
{
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    ptreg_matches m;
    uint32_t *plain = malloc(ns * sizeof *plain), *col = malloc(nt * sizeof *col);
    float *col_d = malloc(nt * sizeof *col_d), *row_d = malloc(ns * sizeof *row_d),
          *second = malloc(ns * sizeof *second);
    for (size_t j = 0; j < nt; j++)
        col[j] = UINT32_MAX, col_d[j] = INFINITY;
    for (size_t i = 0; i < ns; i++) {
        float bd = INFINITY, b2 = INFINITY;
        plain[i] = UINT32_MAX;
        for (size_t j = 0; j < nt; j++) {
            float d = 0.0f;
            for (int k = 0; k < 33; k++)
                d += (fs[33 * i + k] - ft[33 * j + k]) * (fs[33 * i + k] - ft[33 * j + k]);
            if (d < bd)
                b2 = bd, bd = d, plain[i] = (uint32_t)j;
            else if (d < b2)
                b2 = d;
            if (d < col_d[j])
                col_d[j] = d, col[j] = (uint32_t)i;
        }
        row_d[i] = bd, second[i] = b2;
    }
    for (int ratio_on = 0; ratio_on <= 1; ratio_on++)
        for (int mutual = 0; mutual <= 1; mutual++)
            for (int isa = 0; isa <= (int)cpu_best_isa(); isa++)
                for (int threads = 1; threads <= 2; threads++) {
                    const double ratio = ratio_on ? test_ratio : 0.0;
                    cpu_set_isa(isa);
                    ptreg_set_num_threads(threads);
                    CHECK(match_features_on(&cpu, fs, ns, ft, nt, 33, mutual, ratio, &m, NULL) == PTREG_OK);
                    size_t expect = 0, bad = 0;
                    for (size_t i = 0; i < ns; i++) {
                        if (plain[i] == UINT32_MAX || (mutual && col[plain[i]] != i) ||
                            (ratio_on && !((double)row_d[i] < ratio * ratio * (double)second[i])))
                            continue;
                        bad += expect >= m.count || m.source[expect] != i || m.target[expect] != plain[i];
                        expect++;
                    }
                    bad += m.count != expect;
                    CHECK_MSG(bad == 0 && expect > 10,
                              "%s: %s, %d threads, mutual %d, ratio %g: %zu of %zu matches differ from a plain scan",
                              what, isa_level_name((isa_level)isa), threads, mutual, ratio, bad, expect);
                    ptreg_matches_free(&m);
                }
    cpu_set_isa(-1);
    ptreg_set_num_threads(0);
    free(plain), free(col), free(col_d), free(row_d), free(second);
}


static void test_matches(void)
{
    /* 2-D descriptors: source 0 and 1 both nearest target 0, which is
     * nearest source 1; source 2 is a NaN row */
    const float s[] = {0.0f, 0.0f, 0.9f, 0.0f, NAN, 0.0f, 5.0f, 5.0f};
    const float t[] = {1.0f, 0.0f, 5.0f, 5.1f, -3.0f, 0.0f};
    ptreg_matches m;
    CHECK(ptreg_match_features(s, 4, t, 3, 2, 0, &m, NULL) == PTREG_OK);
    CHECK_MSG(m.count == 3 && m.source[0] == 0 && m.target[0] == 0 && m.source[1] == 1 && m.target[1] == 0 &&
                  m.source[2] == 3 && m.target[2] == 1,
              "one-way matches: %zu", m.count);
    ptreg_matches_free(&m);
    CHECK(ptreg_match_features(s, 4, t, 3, 2, 1, &m, NULL) == PTREG_OK);
    /* target 0's nearest source is 1: (0, 0) is not mutual */
    CHECK_MSG(m.count == 2 && m.source[0] == 1 && m.target[0] == 0 && m.source[1] == 3 && m.target[1] == 1,
              "mutual matches: %zu", m.count);
    ptreg_matches_free(&m);
    /* Lowe's ratio test: source 0 is 1 from target 0 and 3 from target 2
     * (a ratio of 1/3), source 1 at 0.1 and 3.9, source 3 at 0.1 and 6.4 */
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    CHECK(match_features_on(&cpu, s, 4, t, 3, 2, 0, 0.34, &m, NULL) == PTREG_OK);
    CHECK_MSG(m.count == 3, "ratio 0.34: %zu matches", m.count);
    ptreg_matches_free(&m);
    CHECK(match_features_on(&cpu, s, 4, t, 3, 2, 0, 0.33, &m, NULL) == PTREG_OK);
    CHECK_MSG(m.count == 2 && m.source[0] == 1 && m.source[1] == 3, "ratio 0.33: %zu matches", m.count);
    ptreg_matches_free(&m);
    CHECK(match_features_on(&cpu, s, 4, t, 1, 2, 0, 0.1, &m, NULL) == PTREG_OK); /* one target: no second */
    CHECK_MSG(m.count == 3, "ratio with one target: %zu matches", m.count);
    ptreg_matches_free(&m);
    CHECK(match_features_on(&cpu, s, 4, t, 3, 2, 0, 1.5, &m, NULL) == PTREG_ERR_ARG);
    /* 33-bin descriptors, 1,503 against 1,300 (more than a block of columns
     * and a unit of rows, neither a whole number of tiles), with a NaN row on
     * each side and repeated rows on both (ties: the lower index) */
    const size_t ns = 1503, nt = 1300;
    float *fs = malloc(ns * 33 * sizeof *fs), *ft = malloc(nt * 33 * sizeof *ft);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 5);
    for (size_t i = 0; i < ns * 33; i++)
        fs[i] = (float)ptreg_rng_uniform(&rng);
    for (size_t i = 0; i < nt * 33; i++)
        ft[i] = (float)ptreg_rng_uniform(&rng);
    for (size_t j = 0; j + 50 < nt; j += 97) /* row j + 50 repeats row j */
        memcpy(ft + 33 * (j + 50), ft + 33 * j, 33 * sizeof *ft);
    for (size_t i = 0; i < ns; i += 211) { /* source rows, twice each, nearest a repeated pair */
        memcpy(fs + 33 * i, ft + 33 * ((i % 13) * 97), 33 * sizeof *fs);
        memcpy(fs + 33 * (i + 1), fs + 33 * i, 33 * sizeof *fs);
    }
    fs[33 * 10 + 4] = NAN;
    ft[33 * 20 + 7] = NAN;
    check_against_plain(fs, ns, ft, nt, 0.97, "uniform"); /* the ratio keeps about half */
    /* near duplicates of a large norm (bins about 100, apart by 1e-3): the
     * estimates' error dwarfs the distances, so every column is measured */
    for (size_t i = 0; i < 60 * 33; i++)
        fs[i] = (float)(100.0 + 1e-3 * ptreg_rng_uniform(&rng));
    for (size_t i = 0; i < 700 * 33; i++)
        ft[i] = (float)(100.0 + 1e-3 * ptreg_rng_uniform(&rng));
    check_against_plain(fs, 60, ft, 700, 0.99, "near duplicates");
    free(fs), free(ft);
}

/* 400 points moved by a pose, 40% of the correspondences wrong: RANSAC
 * finds the pose, its inliers are the planted ones, and 1 and 2 threads
 * give the same bits. */
static void test_ransac_planted(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 3);
    const size_t n = 400;
    float *src = malloc(3 * n * sizeof *src), *tgt = malloc(3 * n * sizeof *tgt);
    double T[16];
    random_pose(&rng, 0.5, T);
    for (size_t i = 0; i < 3 * n; i++)
        src[i] = (float)ptreg_rng_uniform(&rng);
    ptreg_transform_points(T, src, tgt, n);
    ptreg_matches m = {n, malloc(n * sizeof(uint32_t)), malloc(n * sizeof(uint32_t))};
    for (size_t i = 0; i < n; i++) {
        m.source[i] = (uint32_t)i;
        m.target[i] = i % 5 < 2 ? (uint32_t)(ptreg_rng_next(&rng) % n) : (uint32_t)i;
    }
    ptreg_ransac_options o;
    ptreg_ransac_options_default(&o);
    o.max_dist = 0.01;
    ptreg_ransac_result r[2];
    for (int k = 0; k < 2; k++) {
        ptreg_set_num_threads(k + 1);
        CHECK(ptreg_ransac(src, NULL, n, tgt, NULL, n, &m, &o, &r[k], NULL) == PTREG_OK);
    }
    ptreg_set_num_threads(0);
    double angle, trans;
    ptreg_transform_difference(T, r[0].transformation, &angle, &trans);
    CHECK_MSG(angle < 1e-4 && trans < 1e-5 && r[0].inliers >= 240 && r[0].inliers < 250, "%g deg, %g off; %zu inliers",
              angle, trans, r[0].inliers);
    CHECK(!memcmp(r[0].transformation, r[1].transformation, sizeof r[0].transformation) &&
          r[0].hypotheses == r[1].hypotheses);
    /* confidence stops it long before max_iter at a 60% inlier ratio */
    CHECK_MSG(r[0].hypotheses < 2000, "%d hypotheses", r[0].hypotheses);
    /* FGR on the same matches: the pose too, to its line process's rounding */
    ptreg_fgr_options fo;
    ptreg_fgr_options_default(&fo);
    ptreg_fgr_result fr[2];
    for (int k = 0; k < 2; k++) {
        ptreg_set_num_threads(k + 1);
        CHECK(ptreg_fgr(src, n, tgt, n, &m, &fo, &fr[k], NULL) == PTREG_OK);
    }
    ptreg_set_num_threads(0);
    ptreg_transform_difference(T, fr[0].transformation, &angle, &trans);
    CHECK_MSG(angle < 0.05 && trans < 1e-3 && fr[0].tuples > 100, "FGR: %g deg, %g off; %zu tuples", angle, trans,
              fr[0].tuples);
    CHECK(!memcmp(fr[0].transformation, fr[1].transformation, sizeof fr[0].transformation));
    fo.tuple_scale = 1.0;
    CHECK(ptreg_fgr(src, n, tgt, n, &m, &fo, &fr[0], NULL) == PTREG_ERR_ARG);
    ptreg_error err;
    m.count = 2;
    CHECK(ptreg_ransac(src, NULL, n, tgt, NULL, n, &m, &o, &r[0], &err) == PTREG_ERR_ARG && strstr(err.message, "3"));
    m.count = n;
    o.normal_angle = 0.5;
    CHECK(ptreg_ransac(src, NULL, n, tgt, NULL, n, &m, &o, &r[0], &err) == PTREG_ERR_ARG &&
          strstr(err.message, "normal"));
    ptreg_matches_free(&m);
    free(src), free(tgt);
}

/* ptreg_register refuses clouds without a shape, and a voxel that leaves
 * fewer than 3 centroids, rather than matching nothing. */
static void test_register_refusals(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 5);
    float pts[3 * 100];
    for (size_t i = 0; i < 300; i++)
        pts[i] = (float)ptreg_rng_uniform(&rng);
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    ptreg_register_result r;
    ptreg_error err;
    CHECK(ptreg_register(pts, NULL, 2, pts, NULL, 100, &o, &r, &err) == PTREG_ERR_ARG &&
          !strcmp(err.message, "register: the source: 2 points: at least 3 are needed"));
    const float same[9] = {1, 2, 3, 1, 2, 3, 1, 2, 3};
    CHECK(ptreg_register(pts, NULL, 100, same, NULL, 3, &o, &r, &err) == PTREG_ERR_ARG &&
          !strcmp(err.message, "register: the target: all 3 points are the same point"));
    o.voxel = 10.0;
    CHECK_MSG(ptreg_register(pts, NULL, 100, pts, NULL, 100, &o, &r, &err) == PTREG_ERR_ARG &&
                  strstr(err.message, "register: voxel 10 leaves 1 point of the source's 100"),
              "%s", err.message);
}

/* cloud_bin_0 turned by rotations uniform over SO(3) (and shifted by about
 * a metre) onto cloud_bin_1: the pipeline with its defaults brings it
 * within 3 degrees and 10 cm of the identity (the data's truth, itself
 * good to about a degree: ICP from it settles 0.5 to 0.7 degrees and 2 to 3
 * cm away) nearly every time. */
static void test_fragments(const char *dir)
{
    char path[4096];
    ptreg_cloud a, b;
    snprintf(path, sizeof path, "%s/features/cloud_bin_0.pcd", dir);
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &a, NULL) == PTREG_OK);
    snprintf(path, sizeof path, "%s/features/cloud_bin_1.pcd", dir);
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &b, NULL) == PTREG_OK);
    float *moved = malloc(3 * a.n * sizeof *moved), *moved_n = malloc(3 * a.n * sizeof *moved_n);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 11);
    const int trials = 8;
    int ok = 0, ok_fgr = 0;
    double ms = 0.0;
    ptreg_register_options fgr;
    ptreg_register_options_default(&fgr);
    fgr.global = PTREG_GLOBAL_FGR;
    for (int k = 0; k < trials; k++) {
        double T[16], inv[16];
        random_pose(&rng, 1.0, T);
        ptreg_transform_invert_rigid(T, inv);
        ptreg_transform_points(T, a.xyz, moved, a.n);
        ptreg_transform_vectors(T, a.normals, moved_n, a.n);
        ptreg_register_result r;
        ptreg_error err;
        CHECK_MSG(ptreg_register(moved, moved_n, a.n, b.xyz, b.normals, b.n, NULL, &r, &err) == PTREG_OK, "%s",
                  err.message);
        double angle, trans;
        ptreg_transform_difference(inv, r.transformation, &angle, &trans);
        ok += angle < 3.0 && trans < 0.1;
        ms += r.total_ms;
        CHECK(ptreg_register(moved, moved_n, a.n, b.xyz, b.normals, b.n, &fgr, &r, NULL) == PTREG_OK);
        ptreg_transform_difference(inv, r.transformation, &angle, &trans);
        ok_fgr += angle < 3.0 && trans < 0.1;
    }
    printf("cloud_bin_0 onto cloud_bin_1 from %d random poses: %d recovered (FGR: %d), %.1f ms each\n", trials, ok,
           ok_fgr, ms / trials);
    CHECK_MSG(ok >= trials - 1 && ok_fgr >= trials - 1, "%d (FGR %d) of %d poses recovered", ok, ok_fgr, trials);
    free(moved), free(moved_n);
    ptreg_cloud_free(&a);
    ptreg_cloud_free(&b);
}

int main(void)
{
    test_matches();
    test_ransac_planted();
    test_register_refusals();
    const char *dir = check_data_dir();
    if (dir)
        test_fragments(dir);
    return check_exit();
}
