/* Times each hot CPU kernel of ptreg alone, for bench/roofline.py, which
 * turns the times into fractions of the machine's bounds (the work each
 * unit does is documented there, from the kernels' code).
 *
 *   roofline_kernels [--kernels a,b,...] [--reps N] [--quick]
 *
 * Threads: PTREG_NUM_THREADS (the library's). Each kernel runs once to warm
 * the caches and the library's plans, then --reps times; one JSON line per
 * kernel: {"kernel", "units", "unit", "seconds" (median wall time), "best",
 * "cpu_seconds" (median process CPU time, summed over threads: on a shared
 * machine wall time counts other jobs' time, CPU time much less), "params"}.
 * --quick: small inputs (the test that keeps this program working). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ptreg/ptreg.h"
#include "reg/icp/icp_impl.h"
#include "core/numeric.h"
#include "feat/harris3d_impl.h"
#include "reg/lddmm/lddmm_impl.h"
#include "pair/pair_engine.h"

typedef struct sizes {
    size_t pair_n, lddmm_n, cloud_model, cloud_scan, voxel_points, batch_pairs, batch_points;
    size_t vx, vy, vz;
} sizes;

static const sizes FULL = {10000, 1847, 40000, 30000, 2000000, 4096, 64, 256, 256, 128};
static const sizes QUICK = {500, 100, 2000, 1500, 20000, 16, 16, 24, 24, 16};

/* What a kernel's timed call needs, made once before the timing. */
typedef struct inputs {
    sizes s;
    ptreg_cloud model, scan, scan_normals;
    double truth[16];
    float *moved;      /* the scan in the model's frame: ICP's last iterations */
    float *model_normals;
    ptreg_volume volume;
} inputs;

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "roofline_kernels: out of memory (%zu bytes)\n", bytes);
        exit(4);
    }
    return p;
}

static void check(ptreg_status st, const ptreg_error *err, const char *what)
{
    if (st != PTREG_OK) {
        fprintf(stderr, "roofline_kernels: %s: %s\n", what, err->message);
        exit(1);
    }
}

static void apply(const double T[16], const float *in, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++) {
        const float *p = in + 3 * i;
        for (int r = 0; r < 3; r++)
            out[3 * i + r] = (float)(T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3]);
    }
}

/* A CT-like phantom: a few overlapping soft-edged balls of different
 * densities and a little seeded noise (Harris's cost per voxel does not
 * depend on the values). */
static void make_volume(inputs *in, ptreg_error *err)
{
    check(ptreg_volume_alloc(&in->volume, in->s.vx, in->s.vy, in->s.vz, PTREG_VOXEL_U8, err), err, "volume");
    uint8_t *v = in->volume.data;
    uint64_t state = 12345;
    for (size_t z = 0; z < in->s.vz; z++)
        for (size_t y = 0; y < in->s.vy; y++)
            for (size_t x = 0; x < in->s.vx; x++) {
                double u = (double)x / in->s.vx - 0.5, w = (double)y / in->s.vy - 0.5, t = (double)z / in->s.vz - 0.5;
                double r1 = sqrt(u * u + w * w + t * t), r2 = sqrt((u - 0.2) * (u - 0.2) + w * w);
                double d = 120.0 / (1.0 + exp(40.0 * (r1 - 0.35))) + 90.0 / (1.0 + exp(60.0 * (r2 - 0.1)));
                state = state * 6364136223846793005ull + 1442695040888963407ull;
                d += (double)(state >> 61);
                v[(z * in->s.vy + y) * in->s.vx + x] = (uint8_t)(d > 255 ? 255 : d);
            }
}

static void make_inputs(inputs *in, const sizes *s)
{
    ptreg_error err;
    memset(in, 0, sizeof *in);
    in->s = *s;
    ptreg_cloud_init(&in->model);
    ptreg_cloud_init(&in->scan);
    ptreg_cloud_init(&in->scan_normals);
    check(ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, s->cloud_model, 11, &in->model, &err), &err, "synth model");
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = s->cloud_scan;
    so.max_angle_deg = 10;
    so.noise = 0.002;
    so.seed = 12;
    check(ptreg_synth_scan(PTREG_SHAPE_AIRCRAFT, &so, &in->scan, in->truth, &err), &err, "synth scan");
    in->moved = xmalloc(3 * in->scan.n * sizeof(float));
    apply(in->truth, in->scan.xyz, in->scan.n, in->moved);
    in->model_normals = in->model.normals;
    ptreg_volume_init(&in->volume); /* made by the Harris case only: 8 M voxels of exp() */
}

static void free_inputs(inputs *in)
{
    ptreg_cloud_free(&in->model);
    ptreg_cloud_free(&in->scan);
    ptreg_cloud_free(&in->scan_normals);
    free(in->moved);
    ptreg_volume_free(&in->volume);
}

/* One kernel: its setup (once), the call timed, its teardown. */
typedef struct kernel {
    const char *name, *unit;
    void *(*setup)(inputs *in, double *units, char *params, size_t size);
    void (*call)(void *state);
    void (*teardown)(void *state);
} kernel;

/* ---- EM-ICP's pair sums (the pair engine, float32) ---- */
typedef struct pair_state {
    ptreg_pair_plan *plan;
    double *rows, *sum_e, *sum_e2, *sum_eb, scale;
    size_t n;
} pair_state;

static void *pair_setup(inputs *in, double *units, char *params, size_t size)
{
    pair_state *st = xmalloc(sizeof *st);
    size_t n = in->s.pair_n < in->scan.n ? in->s.pair_n : in->scan.n;
    ptreg_pair_options opt;
    ptreg_pair_options_default(&opt);
    ptreg_error err;
    check(ptreg_pair_plan_create(in->model.xyz, n, &opt, &st->plan, &err), &err, "pair plan");
    st->n = n;
    st->rows = xmalloc(3 * n * sizeof(double));
    for (size_t i = 0; i < 3 * n; i++)
        st->rows[i] = in->moved[i];
    double c[3];
    ptreg_points_centroid(in->model.xyz, n, c);
    double r = ptreg_points_rms_radius(in->model.xyz, n, c);
    st->scale = 1.0 / (2.0 * 0.01 * r * r); /* a mid-schedule sigma^2 = 0.01 r^2 */
    st->sum_e = xmalloc(n * sizeof(double));
    st->sum_e2 = xmalloc(n * sizeof(double));
    st->sum_eb = xmalloc(3 * n * sizeof(double));
    *units = (double)n * (double)n;
    snprintf(params, size, "{\"n\": %zu, \"m\": %zu, \"precision\": \"fp32\", \"isa\": \"%s\"}", n, n,
             ptreg_pair_plan_isa(st->plan));
    return st;
}

static void pair_call(void *state)
{
    pair_state *st = state;
    ptreg_error err;
    check(ptreg_pair_gauss(st->plan, st->rows, st->n, st->scale, st->sum_e, st->sum_e2, st->sum_eb, &err), &err,
          "pair sums");
}

static void pair_teardown(void *state)
{
    pair_state *st = state;
    ptreg_pair_plan_destroy(st->plan);
    free(st->rows);
    free(st->sum_e);
    free(st->sum_e2);
    free(st->sum_eb);
    free(st);
}

/* ---- LDDMM: one evaluation (objective and gradient), the mtl preset ---- */
typedef struct lddmm_state {
    double *q0, *target, *p0, *grad;
    size_t n;
    ptreg_lddmm_options opt;
} lddmm_state;

static void *lddmm_setup(inputs *in, double *units, char *params, size_t size)
{
    lddmm_state *st = xmalloc(sizeof *st);
    size_t n = in->s.lddmm_n < in->model.n ? in->s.lddmm_n : in->model.n;
    st->n = n;
    st->q0 = xmalloc(3 * n * sizeof(double));
    st->target = xmalloc(3 * n * sizeof(double));
    st->p0 = xmalloc(3 * n * sizeof(double));
    st->grad = xmalloc(3 * n * sizeof(double));
    for (size_t i = 0; i < 3 * n; i++) {
        st->q0[i] = 10.0 * in->model.xyz[i];
        st->target[i] = st->q0[i] + sin(st->q0[i - i % 3] * 0.7 + (double)(i % 3));
        st->p0[i] = 0.01 * cos((double)i);
    }
    ptreg_lddmm_options_mtl(&st->opt);
    st->opt.device.backend = PTREG_BACKEND_CPU; /* auto would take a GPU */
    /* each evaluation: T - 1 flow passes and T - 1 adjoint passes of N^2 terms */
    *units = 2.0 * (st->opt.time_points - 1) * (double)n * (double)n;
    snprintf(params, size, "{\"n\": %zu, \"time_points\": %d, \"flow_terms\": %.6g, \"adjoint_terms\": %.6g}", n,
             st->opt.time_points, *units / 2, *units / 2);
    return st;
}

static void lddmm_call(void *state)
{
    lddmm_state *st = state;
    ptreg_error err;
    double f;
    check(ptreg_lddmm_objective(st->q0, st->target, st->n, st->p0, &st->opt, &f, st->grad, NULL, &err), &err,
          "lddmm objective");
}

static void lddmm_teardown(void *state)
{
    lddmm_state *st = state;
    free(st->q0);
    free(st->target);
    free(st->p0);
    free(st->grad);
    free(st);
}

/* ---- 3-D Harris scores, W = 5 ---- */
typedef struct harris_state {
    const ptreg_volume *vol;
    ptreg_harris3d_options opt;
    float *scores;
} harris_state;

static void *harris_setup(inputs *in, double *units, char *params, size_t size)
{
    harris_state *st = xmalloc(sizeof *st);
    ptreg_error err;
    if (!in->volume.data)
        make_volume(in, &err);
    st->vol = &in->volume;
    ptreg_harris3d_options_default(&st->opt);
    st->opt.window = 5;
    st->opt.device.backend = PTREG_BACKEND_CPU;
    size_t count = ptreg_volume_count(st->vol);
    st->scores = xmalloc(count * sizeof(float));
    *units = (double)count;
    snprintf(params, size, "{\"nx\": %zu, \"ny\": %zu, \"nz\": %zu, \"type\": \"uint8\", \"window\": 5}", in->s.vx,
             in->s.vy, in->s.vz);
    return st;
}

static void harris_call(void *state)
{
    harris_state *st = state;
    ptreg_error err;
    check(ptreg_harris3d_scores(st->vol, &st->opt, st->scores, &err), &err, "harris scores");
}

static void harris_teardown(void *state)
{
    harris_state *st = state;
    free(st->scores);
    free(st);
}

/* ---- ICP's nearest neighbours: the k-d tree and the Delaunay walk ---- */
typedef struct nn_state {
    ptreg_kdtree *tree;
    ptreg_model_index *index;
    const float *queries;
    size_t nq;
    uint32_t *nearest, *seed;
    float *dist2;
    int leaf_size;
} nn_state;

static nn_state *nn_alloc(inputs *in)
{
    nn_state *st = xmalloc(sizeof *st);
    memset(st, 0, sizeof *st);
    st->queries = in->moved;
    st->nq = in->scan.n;
    st->nearest = xmalloc(st->nq * sizeof(uint32_t));
    st->seed = xmalloc(st->nq * sizeof(uint32_t));
    st->dist2 = xmalloc(st->nq * sizeof(float));
    return st;
}

static void *kdtree_setup(inputs *in, double *units, char *params, size_t size)
{
    nn_state *st = nn_alloc(in);
    ptreg_kdtree_options opt;
    ptreg_kdtree_options_default(&opt);
    ptreg_error err;
    check(ptreg_kdtree_create(in->model.xyz, in->model.n, &opt, &st->tree, &err), &err, "k-d tree");
    st->leaf_size = opt.leaf_size;
    *units = (double)st->nq;
    snprintf(params, size, "{\"model\": %zu, \"queries\": %zu, \"leaf_size\": %d, \"hint\": false}", in->model.n,
             st->nq, opt.leaf_size);
    return st;
}

static void kdtree_call(void *state)
{
    nn_state *st = state;
    ptreg_kdtree_nearest(st->tree, st->queries, st->nq, NULL, st->nearest, st->dist2);
}

/* The queries at a pose 0.5 degrees and 1 mm away: ICP's previous
 * iteration, whose answers seed the next one's searches late in a run. */
static float *previous_pose(const nn_state *st)
{
    const double a = 0.5 * 3.14159265358979323846 / 180;
    const double T[16] = {cos(a), -sin(a), 0, 0.001, sin(a), cos(a), 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    float *before = xmalloc(3 * st->nq * sizeof(float));
    apply(T, st->queries, st->nq, before);
    return before;
}

/* The k-d tree as ICP runs it: each search bounded first by the distance
 * to the previous iteration's answer (the hint). */
static void *kdtree_hint_setup(inputs *in, double *units, char *params, size_t size)
{
    nn_state *st = kdtree_setup(in, units, params, size);
    float *before = previous_pose(st);
    ptreg_kdtree_nearest(st->tree, before, st->nq, NULL, st->seed, st->dist2);
    free(before);
    snprintf(params, size, "{\"model\": %zu, \"queries\": %zu, \"leaf_size\": %d, \"hint\": true}",
             in->model.n, st->nq, st->leaf_size);
    return st;
}

static void kdtree_hint_call(void *state)
{
    nn_state *st = state;
    ptreg_kdtree_nearest(st->tree, st->queries, st->nq, st->seed, st->nearest, st->dist2);
}

/* The walk starts from each query's answer at the previous pose. */
static void *delaunay_setup(inputs *in, double *units, char *params, size_t size)
{
    nn_state *st = nn_alloc(in);
    ptreg_index_options opt;
    ptreg_index_options_default(&opt);
    ptreg_error err;
    check(ptreg_model_index_create(in->model.xyz, in->model.n, &opt, &st->index, &err), &err, "model index");
    float *before = previous_pose(st);
    check(ptreg_model_index_nearest(st->index, before, st->nq, PTREG_NN_KDTREE, NULL, st->seed, st->dist2, NULL,
                                    &err),
          &err, "seeds");
    free(before);
    ptreg_walk_stats stats;
    check(ptreg_model_index_nearest(st->index, st->queries, st->nq, PTREG_NN_DELAUNAY_PNN, st->seed, st->nearest,
                                    st->dist2, &stats, &err),
          &err, "walk statistics");
    ptreg_model_index_info info;
    ptreg_model_index_get_info(st->index, &info);
    *units = (double)st->nq;
    snprintf(params, size,
             "{\"model\": %zu, \"queries\": %zu, \"method\": \"delaunay-pnn\", \"steps_per_query\": %.4g, "
             "\"mean_degree\": %.4g}",
             in->model.n, st->nq, (double)stats.steps / (double)stats.queries,
             (double)info.delaunay_edges / (double)info.points);
    return st;
}

static void delaunay_call(void *state)
{
    nn_state *st = state;
    ptreg_error err;
    check(ptreg_model_index_nearest(st->index, st->queries, st->nq, PTREG_NN_DELAUNAY_PNN, st->seed, st->nearest,
                                    st->dist2, NULL, &err),
          &err, "walk");
}

static void nn_teardown(void *state)
{
    nn_state *st = state;
    if (st->tree)
        ptreg_kdtree_destroy(st->tree);
    if (st->index)
        ptreg_model_index_destroy(st->index);
    free(st->nearest);
    free(st->seed);
    free(st->dist2);
    free(st);
}

/* ---- Gauss-Newton linearisation and reduction (point-to-plane, GICP) ---- */
typedef struct gn_state {
    ptreg_icp_options opt;
    float *q, *nq, *np;
    unsigned char *use;
    const float *p;
    size_t n;
    double c[3];
} gn_state;

/* Pairs as ICP's last iterations see them: each moved scan point and its
 * nearest model point, with both normals. One block on one thread (ICP
 * gives each thread its blocks). */
static gn_state *gn_setup(inputs *in, ptreg_icp_method method, double *units, char *params, size_t size)
{
    gn_state *st = xmalloc(sizeof *st);
    ptreg_icp_options_default(&st->opt);
    st->opt.method = method;
    st->opt.device.backend = PTREG_BACKEND_CPU;
    st->n = in->scan.n;
    st->p = in->moved;
    st->q = xmalloc(3 * st->n * sizeof(float));
    st->nq = xmalloc(3 * st->n * sizeof(float));
    st->np = xmalloc(3 * st->n * sizeof(float));
    st->use = xmalloc(st->n);
    memset(st->use, 1, st->n);
    nn_state *nn = kdtree_setup(in, units, params, size);
    kdtree_call(nn);
    for (size_t i = 0; i < st->n; i++)
        for (int k = 0; k < 3; k++) {
            st->q[3 * i + k] = in->model.xyz[3 * nn->nearest[i] + k];
            st->nq[3 * i + k] = in->model_normals[3 * nn->nearest[i] + k];
            st->np[3 * i + k] = st->nq[3 * i + k]; /* the surface's normal there */
        }
    nn_teardown(nn);
    ptreg_points_centroid(st->p, st->n, st->c);
    *units = (double)st->n;
    snprintf(params, size, "{\"pairs\": %zu, \"method\": \"%s\", \"kernel\": \"none\"}", st->n,
             method == PTREG_ICP_GICP ? "gicp" : "plane");
    return st;
}

static void *plane_setup(inputs *in, double *units, char *params, size_t size)
{
    return gn_setup(in, PTREG_ICP_PLANE, units, params, size);
}

static void *gicp_setup(inputs *in, double *units, char *params, size_t size)
{
    return gn_setup(in, PTREG_ICP_GICP, units, params, size);
}

static void gn_call(void *state)
{
    gn_state *st = state;
    icp_gn_pairs pairs = {st->p, st->q, st->nq, st->np, st->use, st->n};
    icp_normal_eq eq;
    double sum_r2;
    size_t used;
    icp_gn_block(&st->opt, st->c, &pairs, &eq, &sum_r2, &used);
    if (used != st->n) {
        fprintf(stderr, "roofline_kernels: %zu of %zu pairs used\n", used, st->n);
        exit(1);
    }
}

static void gn_teardown(void *state)
{
    gn_state *st = state;
    free(st->q);
    free(st->nq);
    free(st->np);
    free(st->use);
    free(st);
}

/* ---- normals and FPFH (k = 30, the neighbour search included) ---- */
typedef struct feature_state {
    const float *xyz, *normals;
    size_t n, k;
    float *out;
} feature_state;

static void *feature_setup(inputs *in, double *units, char *params, size_t size, size_t width)
{
    feature_state *st = xmalloc(sizeof *st);
    st->xyz = in->model.xyz;
    st->normals = in->model_normals;
    st->n = in->model.n;
    st->k = 30;
    st->out = xmalloc(st->n * width * sizeof(float));
    *units = (double)st->n * (double)st->k;
    ptreg_kdtree_options kd; /* the features' search tree: the default leaves */
    ptreg_kdtree_options_default(&kd);
    snprintf(params, size, "{\"points\": %zu, \"k\": %zu, \"leaf_size\": %d}", st->n, st->k, kd.leaf_size);
    return st;
}

static void *normals_setup(inputs *in, double *units, char *params, size_t size)
{
    return feature_setup(in, units, params, size, 3);
}

static void *fpfh_setup(inputs *in, double *units, char *params, size_t size)
{
    return feature_setup(in, units, params, size, 33);
}

static void normals_call(void *state)
{
    feature_state *st = state;
    ptreg_normals_options opt;
    ptreg_normals_options_default(&opt);
    opt.neighbors.k = st->k;
    opt.device.backend = PTREG_BACKEND_CPU;
    ptreg_error err;
    check(ptreg_normals(st->xyz, st->n, &opt, st->out, NULL, NULL, &err), &err, "normals");
}

static void fpfh_call(void *state)
{
    feature_state *st = state;
    ptreg_features_options opt;
    ptreg_features_options_default(&opt);
    opt.neighbors.k = st->k;
    opt.device.backend = PTREG_BACKEND_CPU;
    ptreg_error err;
    check(ptreg_fpfh(st->xyz, st->normals, st->n, &opt, st->out, NULL, &err), &err, "fpfh");
}

static void feature_teardown(void *state)
{
    feature_state *st = state;
    free(st->out);
    free(st);
}

/* ---- the voxel grid (a LiDAR-like cloud, 1 cm voxels over ~2 m) ---- */
typedef struct voxel_state {
    ptreg_cloud cloud;
    double size;
} voxel_state;

static void *voxel_setup(inputs *in, double *units, char *params, size_t size)
{
    voxel_state *st = xmalloc(sizeof *st);
    ptreg_error err;
    ptreg_cloud_init(&st->cloud);
    check(ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, in->s.voxel_points, 13, &st->cloud, &err), &err, "voxel cloud");
    double c[3];
    ptreg_points_centroid(st->cloud.xyz, st->cloud.n, c);
    st->size = 0.01 * ptreg_points_rms_radius(st->cloud.xyz, st->cloud.n, c);
    ptreg_cloud out;
    check(ptreg_voxel_downsample(&st->cloud, st->size, &out, &err), &err, "voxel");
    *units = (double)st->cloud.n;
    snprintf(params, size, "{\"points\": %zu, \"voxel\": %.6g, \"voxels\": %zu}", st->cloud.n, st->size, out.n);
    ptreg_cloud_free(&out);
    return st;
}

static void voxel_call(void *state)
{
    voxel_state *st = state;
    ptreg_cloud out;
    ptreg_cloud_init(&out);
    ptreg_error err;
    check(ptreg_voxel_downsample(&st->cloud, st->size, &out, &err), &err, "voxel");
    ptreg_cloud_free(&out);
}

static void voxel_teardown(void *state)
{
    voxel_state *st = state;
    ptreg_cloud_free(&st->cloud);
    free(st);
}

/* ---- batch lanes: many small pairs (atom neighbourhoods' size) ---- */
typedef struct batch_state {
    ptreg_pair_set set;
    size_t *offsets;
    float *source;
    double *transform;
    ptreg_batch_options opt;
    double terms;
} batch_state;

static void *batch_setup(inputs *in, double *units, char *params, size_t size)
{
    batch_state *st = xmalloc(sizeof *st);
    size_t pairs = in->s.batch_pairs, k = in->s.batch_points, total = pairs * k;
    st->offsets = xmalloc((pairs + 1) * sizeof(size_t));
    st->source = xmalloc(3 * total * sizeof(float));
    for (size_t i = 0; i <= pairs; i++)
        st->offsets[i] = i * k;
    for (size_t i = 0; i < total; i++) /* each pair: k points of the moved scan, a shared target */
        memcpy(st->source + 3 * i, in->scan.xyz + 3 * (i % in->scan.n), 3 * sizeof(float));
    st->set = (ptreg_pair_set){pairs, st->source, st->offsets, in->model.xyz, NULL, k};
    st->transform = xmalloc(16 * pairs * sizeof(double));
    ptreg_batch_options_default(&st->opt);
    st->opt.device.backend = PTREG_BACKEND_CPU;
    st->opt.max_iter = 20;
    st->opt.tol = 0;
    ptreg_batch_stats stats;
    ptreg_error err;
    check(ptreg_batch_register(&st->set, &st->opt, st->transform, NULL, NULL, &stats, &err), &err, "batch");
    st->terms = stats.pair_terms;
    *units = stats.pair_terms;
    snprintf(params, size, "{\"pairs\": %zu, \"source_points\": %zu, \"target_points\": %zu, \"iterations\": %d}",
             pairs, k, k, st->opt.max_iter);
    return st;
}

static void batch_call(void *state)
{
    batch_state *st = state;
    ptreg_batch_stats stats;
    ptreg_error err;
    check(ptreg_batch_register(&st->set, &st->opt, st->transform, NULL, NULL, &stats, &err), &err, "batch");
}

static void batch_teardown(void *state)
{
    batch_state *st = state;
    free(st->offsets);
    free(st->source);
    free(st->transform);
    free(st);
}

static const kernel KERNELS[] = {
    {"emicp_pairs", "pair", pair_setup, pair_call, pair_teardown},
    {"lddmm_eval", "pair term", lddmm_setup, lddmm_call, lddmm_teardown},
    {"harris3d", "voxel", harris_setup, harris_call, harris_teardown},
    {"kdtree_nn", "query", kdtree_setup, kdtree_call, nn_teardown},
    {"kdtree_nn_hint", "query", kdtree_hint_setup, kdtree_hint_call, nn_teardown},
    {"delaunay_walk", "query", delaunay_setup, delaunay_call, nn_teardown},
    {"plane_gn", "pair", plane_setup, gn_call, gn_teardown},
    {"gicp_gn", "pair", gicp_setup, gn_call, gn_teardown},
    {"normals", "neighbour", normals_setup, normals_call, feature_teardown},
    {"fpfh", "neighbour", fpfh_setup, fpfh_call, feature_teardown},
    {"voxel", "point", voxel_setup, voxel_call, voxel_teardown},
    {"batch_lanes", "pair term", batch_setup, batch_call, batch_teardown},
};

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int listed(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == 0))
            return 1;
    return 0;
}

static void run_kernel(const kernel *k, inputs *in, int reps)
{
    char params[512];
    double units = 0, t[64], cpu[64];
    void *state = k->setup(in, &units, params, sizeof params);
    k->call(state); /* warm: caches, plans, the thread pool */
    for (int r = 0; r < reps; r++) {
        const double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        k->call(state);
        t[r] = clock_s(CLOCK_MONOTONIC) - t0;
        cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    k->teardown(state);
    qsort(t, (size_t)reps, sizeof t[0], by_value);
    qsort(cpu, (size_t)reps, sizeof cpu[0], by_value);
    printf("{\"kernel\": \"%s\", \"unit\": \"%s\", \"units\": %.10g, \"seconds\": %.6g, \"best\": %.6g, "
           "\"cpu_seconds\": %.6g, \"threads\": %d, \"reps\": %d, \"params\": %s}\n",
           k->name, k->unit, units, t[reps / 2], t[0], cpu[reps / 2], ptreg_get_num_threads(), reps, params);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int reps = 5;
    const sizes *s = &FULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            s = &QUICK;
        else {
            fprintf(stderr, "usage: roofline_kernels [--kernels a,b,...] [--reps N (1..64)] [--quick]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64) {
        fprintf(stderr, "roofline_kernels: --reps %d is outside [1, 64]\n", reps);
        return 2;
    }
    inputs in;
    make_inputs(&in, s);
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (listed(only, KERNELS[i].name))
            run_kernel(&KERNELS[i], &in, reps);
    free_inputs(&in);
    return 0;
}
