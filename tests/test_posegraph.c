/* Pose graphs (posegraph.h): the Levenberg-Marquardt solve with its line
 * process on synthetic rings (odometry with noise, right and wrong loop
 * closures), CHOLMOD against the dense reference, the same bits on every
 * run, the reference node kept, the JSON layout (round trips, Open3D's own
 * file, bad files), the information matrix and the optimisation against
 * Open3D's (goldens: tests/data/posegraph/make_posegraph_golden.py). */
#define _DEFAULT_SOURCE /* mkdtemp, M_PI */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ptreg/ptreg.h"
#include "core/numeric.h"

#define DATA PTREG_TEST_SOURCE_DIR "/data/posegraph"

static char tmp_dir[256];

/* ---- synthetic rings ---- */

static void random_rigid(ptreg_rng *rng, double angle_sigma, double t_sigma, double T[16])
{
    double axis[3], t[3];
    for (int k = 0; k < 3; k++) {
        axis[k] = ptreg_rng_normal(rng);
        t[k] = t_sigma * ptreg_rng_normal(rng);
    }
    if (axis[0] == 0 && axis[1] == 0 && axis[2] == 0)
        axis[0] = 1;
    ptreg_transform_from_axis_angle(axis, angle_sigma * ptreg_rng_normal(rng) * 180 / M_PI, t, T);
}

/* The information of `points` random points in a cube of the given side
 * (Open3D's G' G sum), so information(5, 5) = points. */
static void cube_information(ptreg_rng *rng, int points, double side, double I[36])
{
    memset(I, 0, 36 * sizeof *I);
    for (int p = 0; p < points; p++) {
        const double x = side * (ptreg_rng_uniform(rng) - 0.5), y = side * (ptreg_rng_uniform(rng) - 0.5),
                     z = side * (ptreg_rng_uniform(rng) - 0.5);
        const double G[3][6] = {{0, z, -y, 1, 0, 0}, {-z, 0, x, 0, 1, 0}, {y, -x, 0, 0, 0, 1}};
        for (int a = 0; a < 6; a++)
            for (int b = 0; b < 6; b++)
                I[6 * a + b] += G[0][a] * G[0][b] + G[1][a] * G[1][b] + G[2][a] * G[2][b];
    }
}

typedef struct ring {
    ptreg_pose_graph g;
    double *truth;
    size_t wrong_first; /* edges from here on are wrong loop closures */
} ring;

/* n poses on a circle of radius 3 climbing a little, odometry i -> i+1
 * with noise, `loops` right loop closures (little noise) and `wrong` wrong
 * ones (random transforms), all uncertain. */
static void make_ring_noise(ring *r, size_t n, size_t loops, size_t wrong, uint64_t seed, double noise_scale)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    const size_t E = (n - 1) + loops + wrong;
    ptreg_error err;
    if (ptreg_pose_graph_alloc(&r->g, n, E, &err) != PTREG_OK)
        abort();
    r->truth = malloc(n * 16 * sizeof *r->truth);
    for (size_t i = 0; i < n; i++) {
        const double a = 2 * M_PI * (double)i / (double)n;
        const double axis[3] = {0.1, 0.2, 1}, t[3] = {3 * cos(a), 3 * sin(a), 0.05 * (double)i};
        ptreg_transform_from_axis_angle(axis, a * 180 / M_PI, t, r->truth + 16 * i);
    }
    /* a side of 5: the rotations' information (100 * 25 / 6 per axis) is
     * 4 times the translations' (100), as the noise's variances below
     * (0.01 rad, 0.02) say it should be */
    double I[36];
    cube_information(&rng, 100, 5.0, I);
    memcpy(r->g.nodes, r->truth, 16 * sizeof(double));
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i++, k++) {
        ptreg_pose_edge *e = &r->g.edges[k];
        double inv[16], rel[16], noise[16];
        ptreg_transform_invert_rigid(r->truth + 16 * (i + 1), inv);
        ptreg_transform_mul(inv, r->truth + 16 * i, rel);
        random_rigid(&rng, 0.01 * noise_scale, 0.02 * noise_scale, noise);
        ptreg_transform_mul(noise, rel, e->transformation);
        e->source = i, e->target = i + 1, e->uncertain = 0, e->confidence = 1;
        memcpy(e->information, I, sizeof I);
        ptreg_transform_invert_rigid(e->transformation, inv); /* T_{i+1} = T_i X^-1 */
        ptreg_transform_mul(r->g.nodes + 16 * i, inv, r->g.nodes + 16 * (i + 1));
    }
    for (size_t l = 0; l < loops; l++, k++) {
        ptreg_pose_edge *e = &r->g.edges[k];
        const size_t s = n - 1 - (l * 3) % (n / 2), t = (l * 5) % (n / 3);
        double inv[16], rel[16], noise[16];
        ptreg_transform_invert_rigid(r->truth + 16 * t, inv);
        ptreg_transform_mul(inv, r->truth + 16 * s, rel);
        random_rigid(&rng, 0.002 * noise_scale, 0.005 * noise_scale, noise);
        ptreg_transform_mul(noise, rel, e->transformation);
        e->source = s, e->target = t, e->uncertain = 1, e->confidence = 1;
        memcpy(e->information, I, sizeof I);
    }
    r->wrong_first = k;
    for (size_t w = 0; w < wrong; w++, k++) {
        ptreg_pose_edge *e = &r->g.edges[k];
        random_rigid(&rng, 1.0, 2.0, e->transformation);
        e->source = (w * 7 + 3) % n, e->target = (w * 11 + 9) % n;
        if (e->source == e->target)
            e->target = (e->target + 1) % n;
        e->uncertain = 1, e->confidence = 1;
        memcpy(e->information, I, sizeof I);
    }
}

static void make_ring(ring *r, size_t n, size_t loops, size_t wrong, uint64_t seed)
{
    make_ring_noise(r, n, loops, wrong, seed, 1.0);
}

static void free_ring(ring *r)
{
    ptreg_pose_graph_free(&r->g);
    free(r->truth);
}

/* The largest translation error and rotation angle (degrees) of the
 * poses against the truth, and the RMS translation error. */
static double rms_t;
static void pose_errors(const double *poses, const double *truth, size_t n, double *t_err, double *deg_err)
{
    *t_err = 0, *deg_err = 0, rms_t = 0;
    for (size_t i = 0; i < n; i++) {
        double deg, t;
        ptreg_transform_difference(truth + 16 * i, poses + 16 * i, &deg, &t);
        const double dt = sqrt(pow(truth[16 * i + 3] - poses[16 * i + 3], 2) +
                               pow(truth[16 * i + 7] - poses[16 * i + 7], 2) +
                               pow(truth[16 * i + 11] - poses[16 * i + 11], 2));
        *t_err = check_worse(*t_err, dt);
        rms_t += dt * dt / (double)n;
        *deg_err = check_worse(*deg_err, deg);
    }
}

static double max_pose_difference(const ptreg_pose_graph *a, const ptreg_pose_graph *b)
{
    double d = 0;
    for (size_t i = 0; i < 16 * a->node_count; i++)
        d = check_worse(d, fabs(a->nodes[i] - b->nodes[i]));
    return d;
}

static int copy_graph(const ptreg_pose_graph *src, ptreg_pose_graph *dst)
{
    if (ptreg_pose_graph_alloc(dst, src->node_count, src->edge_count, NULL) != PTREG_OK)
        return 0;
    memcpy(dst->nodes, src->nodes, 16 * src->node_count * sizeof(double));
    memcpy(dst->edges, src->edges, src->edge_count * sizeof *src->edges);
    return 1;
}

/* (a) right loop closures: every pose nearer the truth than odometry's */
static void test_ring_loop_closures(void)
{
    ring r;
    make_ring(&r, 20, 4, 0, 1);
    double odo_t, odo_deg;
    pose_errors(r.g.nodes, r.truth, 20, &odo_t, &odo_deg);
    const double odo_rms = sqrt(rms_t);
    ptreg_pose_graph_options opt;
    ptreg_pose_graph_options_default(&opt);
    ptreg_pose_graph_result res;
    ptreg_error err;
    CHECK_MSG(ptreg_pose_graph_optimize(&r.g, &opt, &res, &err) == PTREG_OK, "%s", err.message);
    double t_err, deg_err;
    pose_errors(r.g.nodes, r.truth, 20, &t_err, &deg_err);
    printf("ring 20, 4 loops: odometry %.4f (rms %.4f) / %.3f deg, optimised %.4f (rms %.4f) / %.3f deg, "
           "%d iterations, cost %.4g -> %.4g\n",
           odo_t, odo_rms, odo_deg, t_err, sqrt(rms_t), deg_err, res.iterations, res.initial_cost, res.final_cost);
    CHECK(odo_t > 0.2 && odo_deg > 2.5);
    CHECK_MSG(t_err < 0.7 * odo_t && sqrt(rms_t) < 0.7 * odo_rms, "%g vs odometry %g", t_err, odo_t);
    CHECK_MSG(deg_err < 0.5 * odo_deg && deg_err < 1.2, "%g deg vs odometry %g", deg_err, odo_deg);
    CHECK(res.pruned == 0 && r.g.edge_count == 19 + 4);
    CHECK(res.final_cost < res.initial_cost);
    CHECK(res.iterations > 0);
    for (size_t k = 19; k < r.g.edge_count; k++)
        CHECK_MSG(r.g.edges[k].confidence > 0.5, "edge %zu: confidence %g", k, r.g.edges[k].confidence);
    free_ring(&r);
}

/* (b)-(e): wrong loop closures pruned; CHOLMOD = dense; the same bits;
 * the reference node kept */
static void test_ring_wrong_closures(void)
{
    ring r;
    make_ring(&r, 20, 4, 5, 2);
    ptreg_pose_graph dense, again, ref3;
    REQUIRE(copy_graph(&r.g, &dense) && copy_graph(&r.g, &again) && copy_graph(&r.g, &ref3));
    double odo_t, odo_deg;
    pose_errors(r.g.nodes, r.truth, 20, &odo_t, &odo_deg);
    ptreg_pose_graph_options opt;
    ptreg_pose_graph_options_default(&opt);
    ptreg_pose_graph_result res, res_dense;
    ptreg_error err;
    const double ref0[16] = {0};
    (void)ref0;
    double before0[16];
    memcpy(before0, r.g.nodes, sizeof before0);
    CHECK_MSG(ptreg_pose_graph_optimize(&r.g, &opt, &res, &err) == PTREG_OK, "%s", err.message);
    double t_err, deg_err;
    pose_errors(r.g.nodes, r.truth, 20, &t_err, &deg_err);
    printf("ring 20, 4 loops + 5 wrong: odometry %.4f / %.3f deg, optimised %.4f / %.3f deg, pruned %zu, "
           "%d iterations, %.3f ms\n",
           odo_t, odo_deg, t_err, deg_err, res.pruned, res.iterations, res.time_ms);
    CHECK_MSG(res.pruned == 5, "pruned %zu", res.pruned);
    CHECK(r.g.edge_count == 19 + 4);
    for (size_t k = 0; k < r.g.edge_count; k++) /* the right ones stay, in order */
        CHECK(memcmp(&r.g.edges[k].transformation, &again.edges[k].transformation, 16 * sizeof(double)) == 0);
    CHECK_MSG(t_err < 0.25 * odo_t && t_err < 0.1, "%g vs odometry %g", t_err, odo_t);
    CHECK_MSG(deg_err < 0.5 * odo_deg && deg_err < 2, "%g deg vs odometry %g", deg_err, odo_deg);
    /* (e) */
    CHECK(memcmp(before0, r.g.nodes, sizeof before0) == 0);

    /* (c) */
    opt.solver = PTREG_POSE_SOLVER_DENSE;
    CHECK_MSG(ptreg_pose_graph_optimize(&dense, &opt, &res_dense, &err) == PTREG_OK, "%s", err.message);
    const double d = max_pose_difference(&r.g, &dense);
    printf("CHOLMOD vs dense: largest pose difference %.3g, iterations %d vs %d\n", d, res.iterations,
           res_dense.iterations);
    CHECK_MSG(d < 1e-9, "%g", d);
    CHECK(res_dense.pruned == res.pruned);

    /* (d) the same bits on another run, on other thread counts */
    opt.solver = PTREG_POSE_SOLVER_CHOLMOD;
    ptreg_set_num_threads(1);
    CHECK(ptreg_pose_graph_optimize(&again, &opt, NULL, &err) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(again.edge_count == r.g.edge_count);
    CHECK(memcmp(again.nodes, r.g.nodes, 20 * 16 * sizeof(double)) == 0);
    for (size_t k = 0; k < again.edge_count && k < r.g.edge_count; k++)
        CHECK(memcmp(&again.edges[k], &r.g.edges[k], sizeof again.edges[k]) == 0);

    /* (e) another reference: its pose kept to the bit, the rest the same
     * solution moved as a whole (the objective does not see a common
     * motion) */
    double before3[16];
    memcpy(before3, ref3.nodes + 16 * 3, sizeof before3);
    opt.reference_node = 3;
    CHECK_MSG(ptreg_pose_graph_optimize(&ref3, &opt, &res, &err) == PTREG_OK, "%s", err.message);
    CHECK(memcmp(before3, ref3.nodes + 16 * 3, sizeof before3) == 0);
    CHECK(res.pruned == 5);
    double C[16], inv[16];
    ptreg_transform_invert_rigid(r.g.nodes + 16 * 3, inv);
    ptreg_transform_mul(ref3.nodes + 16 * 3, inv, C);
    double worst = 0;
    for (size_t i = 0; i < 20; i++) {
        double moved[16];
        ptreg_transform_mul(C, r.g.nodes + 16 * i, moved);
        for (int k = 0; k < 16; k++)
            worst = check_worse(worst, fabs(moved[k] - ref3.nodes[16 * i + k]));
    }
    printf("reference 3 against reference 0 moved: %.3g\n", worst);
    CHECK_MSG(worst < 1e-5, "%g", worst);

    ptreg_pose_graph_free(&dense);
    ptreg_pose_graph_free(&again);
    ptreg_pose_graph_free(&ref3);
    free_ring(&r);
}

/* Exact edges, poses moved off them: the truth comes back */
static void test_exact_edges(void)
{
    ring r;
    make_ring_noise(&r, 15, 3, 0, 6, 0.0);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 7);
    for (size_t i = 1; i < 15; i++) {
        double M[16];
        random_rigid(&rng, 0.05, 0.1, M);
        ptreg_transform_mul(M, r.g.nodes + 16 * i, r.g.nodes + 16 * i);
    }
    ptreg_pose_graph_options opt;
    ptreg_pose_graph_options_default(&opt);
    opt.max_dist = 1; /* the loop closures stay trusted from the start */
    ptreg_pose_graph_result res;
    ptreg_error err;
    CHECK_MSG(ptreg_pose_graph_optimize(&r.g, &opt, &res, &err) == PTREG_OK, "%s", err.message);
    double t_err, deg_err;
    pose_errors(r.g.nodes, r.truth, 15, &t_err, &deg_err);
    printf("exact edges: back to the truth within %.3g / %.3g deg (%d iterations)\n", t_err, deg_err, res.iterations);
    CHECK_MSG(t_err < 1e-5 && deg_err < 1e-4, "%g, %g deg", t_err, deg_err);
    CHECK(res.final_cost < 1e-8);
    free_ring(&r);
}

static void test_bad_arguments(void)
{
    ring r;
    make_ring(&r, 6, 1, 0, 3);
    ptreg_pose_graph_options opt;
    ptreg_pose_graph_options_default(&opt);
    CHECK(opt.max_dist == 0.075 && opt.edge_prune_threshold == 0.25 && opt.preference_loop_closure == 1 &&
          opt.reference_node == 0 && opt.max_iter == 100 && opt.solver == PTREG_POSE_SOLVER_CHOLMOD);
    ptreg_error err;
    opt.reference_node = 6;
    CHECK(ptreg_pose_graph_optimize(&r.g, &opt, NULL, &err) == PTREG_ERR_ARG);
    opt.reference_node = 0;
    opt.max_dist = NAN;
    CHECK(ptreg_pose_graph_optimize(&r.g, &opt, NULL, &err) == PTREG_ERR_ARG);
    opt.max_dist = 0.075;
    /* node 5 cut off: odometry 4 -> 5 and the loop closure moved away */
    r.g.edges[4].target = 3;
    r.g.edges[5].source = 4;
    double before[16 * 6];
    memcpy(before, r.g.nodes, sizeof before);
    CHECK(ptreg_pose_graph_optimize(&r.g, &opt, NULL, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "node 5: no path") != NULL, "%s", err.message);
    CHECK(memcmp(before, r.g.nodes, sizeof before) == 0);
    r.g.edges[2].target = 9;
    CHECK(ptreg_pose_graph_check(&r.g, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "edge 2: target node 9 of 6 nodes") != NULL, "%s", err.message);
    r.g.edges[2].target = 3;
    r.g.edges[1].information[1] += 1;
    CHECK(ptreg_pose_graph_check(&r.g, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "edge 1: information is not symmetric") != NULL, "%s", err.message);
    free_ring(&r);

    /* no weight for loop closures (mu = 0): every one is switched off and
     * pruned, the poses stay on the odometry they were chained from */
    make_ring(&r, 10, 3, 0, 8);
    double start[16 * 10];
    memcpy(start, r.g.nodes, sizeof start);
    opt.preference_loop_closure = 0;
    ptreg_pose_graph_result pr;
    CHECK_MSG(ptreg_pose_graph_optimize(&r.g, &opt, &pr, &err) == PTREG_OK, "%s", err.message);
    CHECK(pr.pruned == 3 && r.g.edge_count == 9);
    double moved = 0;
    for (int k = 0; k < 16 * 10; k++)
        moved = check_worse(moved, fabs(start[k] - r.g.nodes[k]));
    CHECK_MSG(moved < 1e-9, "%g", moved);
    free_ring(&r);
    opt.preference_loop_closure = 1;

    /* a graph of one node: nothing to move */
    ptreg_pose_graph one;
    CHECK(ptreg_pose_graph_alloc(&one, 1, 0, &err) == PTREG_OK);
    ptreg_pose_graph_result res;
    CHECK(ptreg_pose_graph_optimize(&one, &opt, &res, &err) == PTREG_OK);
    CHECK(res.iterations == 0 && one.nodes[0] == 1);
    ptreg_pose_graph_free(&one);
}

/* ---- files ---- */

static void test_json_round_trip(void)
{
    ring r;
    make_ring(&r, 12, 3, 2, 4);
    r.g.edges[r.g.edge_count - 1].confidence = 0.123456789012345678;
    char path[512];
    snprintf(path, sizeof path, "%s/ring.json", tmp_dir);
    ptreg_error err;
    CHECK_MSG(ptreg_pose_graph_write_json(path, &r.g, &err) == PTREG_OK, "%s", err.message);
    ptreg_pose_graph back;
    CHECK_MSG(ptreg_pose_graph_read_json(path, &back, &err) == PTREG_OK, "%s", err.message);
    CHECK(back.node_count == r.g.node_count && back.edge_count == r.g.edge_count);
    if (back.node_count == r.g.node_count && back.edge_count == r.g.edge_count) {
        CHECK(memcmp(back.nodes, r.g.nodes, 16 * back.node_count * sizeof(double)) == 0);
        for (size_t k = 0; k < back.edge_count; k++) {
            const ptreg_pose_edge *a = &back.edges[k], *b = &r.g.edges[k];
            CHECK(a->source == b->source && a->target == b->target && a->uncertain == b->uncertain &&
                  a->confidence == b->confidence);
            CHECK(memcmp(a->transformation, b->transformation, sizeof a->transformation) == 0);
            CHECK(memcmp(a->information, b->information, sizeof a->information) == 0);
        }
    }
    ptreg_pose_graph_free(&back);
    /* a graph that fails its check is not written */
    r.g.edges[0].source = 99;
    char bad_path[512];
    snprintf(bad_path, sizeof bad_path, "%s/not_written.json", tmp_dir);
    CHECK(ptreg_pose_graph_write_json(bad_path, &r.g, &err) == PTREG_ERR_ARG);
    FILE *f = fopen(bad_path, "r");
    CHECK(f == NULL);
    if (f)
        fclose(f);
    free_ring(&r);
}

/* Open3D's own file: column-major matrices, its key order */
static void test_open3d_file(void)
{
    ptreg_pose_graph g;
    ptreg_error err;
    REQUIRE(ptreg_pose_graph_read_json(DATA "/o3d_small.json", &g, &err) == PTREG_OK);
    CHECK(g.node_count == 3 && g.edge_count == 3);
    if (g.node_count != 3 || g.edge_count != 3) {
        ptreg_pose_graph_free(&g);
        return;
    }
    double T[16];
    const double axis[3] = {1, 2, 3}, t1[3] = {0.5, -0.25, 0.125};
    ptreg_transform_from_axis_angle(axis, 0.1 * 180 / M_PI, t1, T);
    for (int k = 0; k < 16; k++)
        CHECK_NEAR(g.nodes[16 + k], T[k], 1e-14);
    const double axis2[3] = {0, 1, 1}, t2[3] = {3, 2, 1};
    ptreg_transform_from_axis_angle(axis2, 0.7 * 180 / M_PI, t2, T);
    for (int k = 0; k < 16; k++)
        CHECK_NEAR(g.edges[2].transformation[k], T[k], 1e-14);
    CHECK(g.edges[2].transformation[3] == 3 && g.edges[2].transformation[7] == 2);
    CHECK(g.edges[2].source == 2 && g.edges[2].target == 0 && g.edges[2].uncertain == 1 &&
          g.edges[2].confidence == 0.75);
    CHECK(g.edges[0].uncertain == 0 && g.edges[0].confidence == 1);
    CHECK(g.edges[0].information[35] == 20 && g.edges[1].information[35] == 30 && g.edges[2].information[35] == 40);
    CHECK(g.edges[1].information[0] > 0);
    ptreg_pose_graph_free(&g);
}

static const char *NODE = "{\"class_name\":\"PoseGraphNode\",\"pose\":[1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1]}";
static const char *IDENT = "1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1";
static const char *INFO36 = "1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1";

/* A graph of 3 nodes, a good edge 0 and edge 1 made of the parts given. */
static void write_graph(const char *path, const char *target, const char *transformation, const char *information)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "{\"class_name\":\"PoseGraph\",\"version_major\":1,\"version_minor\":0,\"nodes\":[%s,%s,%s],", NODE,
            NODE, NODE);
    fprintf(f,
            "\"edges\":[{\"class_name\":\"PoseGraphEdge\",\"source_node_id\":0,\"target_node_id\":1,"
            "\"transformation\":[%s],\"information\":[%s],\"uncertain\":false,\"confidence\":1},",
            IDENT, INFO36);
    fprintf(f,
            "{\"class_name\":\"PoseGraphEdge\",\"source_node_id\":1,\"target_node_id\":%s,"
            "\"transformation\":[%s],\"information\":[%s],\"uncertain\":true,\"confidence\":0.5}]}\n",
            target, transformation, information);
    fclose(f);
}

static void expect_bad(const char *name, const char *target, const char *transformation, const char *information,
                       const char *message)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", tmp_dir, name);
    write_graph(path, target, transformation, information);
    ptreg_pose_graph g;
    ptreg_error err;
    const ptreg_status st = ptreg_pose_graph_read_json(path, &g, &err);
    CHECK_MSG(st == PTREG_ERR_FORMAT, "%s: status %d", name, (int)st);
    CHECK_MSG(st != PTREG_OK || strstr(err.message, path) != NULL, "%s: %s", name, err.message);
    CHECK_MSG(st == PTREG_OK || strstr(err.message, message) != NULL, "%s: '%s' lacks '%s'", name, err.message,
              message);
    CHECK(g.node_count == 0 && g.nodes == NULL);
    ptreg_pose_graph_free(&g);
}

static void test_bad_files(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/good.json", tmp_dir);
    write_graph(path, "2", IDENT, INFO36);
    ptreg_pose_graph g;
    ptreg_error err;
    CHECK_MSG(ptreg_pose_graph_read_json(path, &g, &err) == PTREG_OK, "%s", err.message);
    CHECK(g.node_count == 3 && g.edge_count == 2 && g.edges[1].target == 2 && g.edges[1].confidence == 0.5);
    ptreg_pose_graph_free(&g);

    expect_bad("unknown_node", "12", IDENT, INFO36, "edge 1: target node 12 of 3 nodes");
    expect_bad("negative_node", "-1", IDENT, INFO36, "edge 1: \"target_node_id\" is not a node id");
    expect_bad("fraction_node", "1.5", IDENT, INFO36, "edge 1: \"target_node_id\" is not a node id");
    expect_bad("not_rigid", "2", "1,0,0,0,0.5,1,0,0,0,0,1,0,0,0,0,1", INFO36, "edge 1: transformation is not rigid");
    expect_bad("scaled", "2", "2,0,0,0,0,2,0,0,0,0,2,0,0,0,0,1", INFO36, "edge 1: transformation is not rigid");
    expect_bad("short_transformation", "2", "1,0,0,0,0,1,0,0,0,0,1,0,0,0,0", INFO36,
               "edge 1: \"transformation\" has 15 numbers, not 16");
    expect_bad("short_information", "2", IDENT, "1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0",
               "edge 1: \"information\" has 35 numbers, not 36");
    expect_bad("null_entry", "2", "1,0,0,0,0,1,0,0,0,0,1,0,0,null,0,1", INFO36,
               "edge 1: \"transformation\"[13] is not a finite number");
    expect_bad("infinite_entry", "2", IDENT,
               "1,0,0,0,0,0,0,1,0,0,0,0,0,0,1e999,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1",
               "edge 1: \"information\"[14] is not a finite number");
    expect_bad("asymmetric", "2", IDENT, "1,2,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1,0,0,0,0,0,0,1",
               "edge 1: information is not symmetric");
    expect_bad("nan_literal", "2", "1,0,0,0,0,1,0,0,0,0,1,0,0,NaN,0,1", INFO36, "line 1 (byte");

    /* truncated: the good file cut short */
    FILE *f = fopen(path, "rb");
    char text[4096];
    size_t len = f ? fread(text, 1, sizeof text, f) : 0;
    if (f)
        fclose(f);
    snprintf(path, sizeof path, "%s/truncated.json", tmp_dir);
    f = fopen(path, "wb");
    if (f) {
        fwrite(text, 1, len / 2, f);
        fclose(f);
    }
    CHECK(ptreg_pose_graph_read_json(path, &g, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "truncated.json: line 1") != NULL, "%s", err.message);
    snprintf(path, sizeof path, "%s/empty.json", tmp_dir);
    f = fopen(path, "wb");
    if (f)
        fclose(f);
    CHECK(ptreg_pose_graph_read_json(path, &g, &err) == PTREG_ERR_FORMAT);
    snprintf(path, sizeof path, "%s/array.json", tmp_dir);
    f = fopen(path, "wb");
    if (f) {
        fputs("[1, 2, 3]", f);
        fclose(f);
    }
    CHECK(ptreg_pose_graph_read_json(path, &g, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "not a JSON object") != NULL, "%s", err.message);
    snprintf(path, sizeof path, "%s/other_class.json", tmp_dir);
    f = fopen(path, "wb");
    if (f) {
        fputs("{\"class_name\": \"PointCloud\", \"nodes\": [], \"edges\": []}", f);
        fclose(f);
    }
    CHECK(ptreg_pose_graph_read_json(path, &g, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "class_name is not \"PoseGraph\"") != NULL, "%s", err.message);
    CHECK(ptreg_pose_graph_read_json(DATA "/no_such_file.json", &g, &err) == PTREG_ERR_IO);
}

/* ---- against Open3D ---- */

static float *read_xyz(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1024;
    float *p = malloc(cap * 3 * sizeof *p);
    float x, y, z;
    while (p && fscanf(f, "%f %f %f", &x, &y, &z) == 3) {
        if (*n == cap)
            p = realloc(p, (cap *= 2) * 3 * sizeof *p);
        if (!p)
            break;
        p[3 * *n] = x, p[3 * *n + 1] = y, p[3 * *n + 2] = z;
        ++*n;
    }
    fclose(f);
    return p;
}

static void test_information_matrix(void)
{
    size_t n, m;
    float *src = read_xyz(DATA "/info_source.xyz", &n), *tgt = read_xyz(DATA "/info_target.xyz", &m);
    FILE *f = fopen(DATA "/info_golden.txt", "r");
    double T[16], golden[36], max_dist = 0.05;
    int got = 0;
    char line[512];
    if (f && fgets(line, sizeof line, f)) {
        for (int k = 0; k < 16; k++)
            got += fscanf(f, "%lf", &T[k]);
        for (int k = 0; k < 36; k++)
            got += fscanf(f, "%lf", &golden[k]);
    }
    if (f)
        fclose(f);
    CHECK(src && tgt && n == 300 && m == 300 && got == 52);
    if (src && tgt && got == 52) {
        double I[36];
        size_t pairs = 0;
        ptreg_error err;
        CHECK_MSG(ptreg_information_matrix(src, n, tgt, m, T, max_dist, I, &pairs, &err) == PTREG_OK, "%s",
                  err.message);
        double big = 0, worst = 0;
        for (int k = 0; k < 36; k++)
            big = check_worse(big, fabs(golden[k]));
        for (int k = 0; k < 36; k++)
            worst = check_worse(worst, fabs(I[k] - golden[k]) / big);
        printf("information matrix: %zu pairs (Open3D %g), largest relative difference %.3g\n", pairs, golden[35],
               worst);
        CHECK(pairs > 50 && pairs < n);
        CHECK((double)pairs == golden[35]);
        CHECK_MSG(worst < 1e-6, "%g", worst);
        double again[36];
        ptreg_set_num_threads(1);
        CHECK(ptreg_information_matrix(src, n, tgt, m, T, max_dist, again, NULL, &err) == PTREG_OK);
        ptreg_set_num_threads(0);
        CHECK(memcmp(again, I, sizeof I) == 0);
        CHECK(ptreg_information_matrix(src, n, tgt, m, T, -1, I, NULL, &err) == PTREG_ERR_ARG);
    }
    free(src);
    free(tgt);
}

static void test_open3d_optimization(void)
{
    ptreg_pose_graph in, out;
    ptreg_error err;
    REQUIRE(ptreg_pose_graph_read_json(DATA "/o3d_ring_in.json", &in, &err) == PTREG_OK);
    if (ptreg_pose_graph_read_json(DATA "/o3d_ring_out.json", &out, &err) != PTREG_OK) {
        CHECK_MSG(0, "%s", err.message);
        ptreg_pose_graph_free(&in);
        return;
    }
    ptreg_pose_graph_options opt;
    ptreg_pose_graph_options_default(&opt); /* the script's options are Open3D's defaults, reference 0 */
    ptreg_pose_graph_result res;
    CHECK_MSG(ptreg_pose_graph_optimize(&in, &opt, &res, &err) == PTREG_OK, "%s", err.message);
    CHECK(in.edge_count == out.edge_count && res.pruned == 1);
    CHECK(in.node_count == out.node_count);
    if (in.node_count == out.node_count) {
        const double d = max_pose_difference(&in, &out);
        printf("against Open3D's global_optimization: largest pose difference %.3g (%d iterations)\n", d,
               res.iterations);
        CHECK_MSG(d < 1e-6, "%g", d);
    }
    for (size_t k = 0; k < in.edge_count && k < out.edge_count; k++)
        if (in.edges[k].uncertain)
            CHECK_NEAR(in.edges[k].confidence, out.edges[k].confidence, 1e-5);
    ptreg_pose_graph_free(&in);
    ptreg_pose_graph_free(&out);
}

/* A ring of 100 (or PTREG_POSEGRAPH_NODES) poses, both solvers timed. */
static void test_timings(void)
{
    const char *env = getenv("PTREG_POSEGRAPH_NODES");
    const size_t n = env ? (size_t)strtoul(env, NULL, 10) : 100;
    if (n < 10)
        return;
    ring r;
    make_ring(&r, n, n / 5, n / 10, 5);
    ptreg_pose_graph dense;
    REQUIRE(copy_graph(&r.g, &dense));
    ptreg_pose_graph_options opt;
    ptreg_pose_graph_options_default(&opt);
    ptreg_pose_graph_result a, b;
    ptreg_error err;
    CHECK_MSG(ptreg_pose_graph_optimize(&r.g, &opt, &a, &err) == PTREG_OK, "%s", err.message);
    opt.solver = PTREG_POSE_SOLVER_DENSE;
    CHECK_MSG(ptreg_pose_graph_optimize(&dense, &opt, &b, &err) == PTREG_OK, "%s", err.message);
    printf("ring of %zu nodes, %zu edges: CHOLMOD %.1f ms (%d iterations), dense %.1f ms (%d), difference %.3g, "
           "pruned %zu\n",
           n, r.g.edge_count + a.pruned, a.time_ms, a.iterations, b.time_ms, b.iterations,
           max_pose_difference(&r.g, &dense), a.pruned);
    CHECK(max_pose_difference(&r.g, &dense) < 1e-9);
    CHECK(a.pruned == n / 10);
    ptreg_pose_graph_free(&dense);
    free_ring(&r);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ptreg_test_posegraph_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_ring_loop_closures();
    test_ring_wrong_closures();
    test_exact_edges();
    test_bad_arguments();
    test_json_round_trip();
    test_open3d_file();
    test_bad_files();
    test_information_matrix();
    test_open3d_optimization();
    test_timings();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return check_exit();
}
