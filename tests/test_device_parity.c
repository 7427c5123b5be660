#define _POSIX_C_SOURCE 200809L /* setenv */
/* The device parity suite (after ggml's test-backend-ops): one table of
 * cases (operation, cloud, sizes, seed), each run on every CUDA and
 * OpenCL device found against the CPU path. Neighbors must be the CPU's
 * (index and distance bits), sums within a normalised error, ICP's
 * transform within 1e-5 of the CPU's with the same pairs, batched EM-ICP's
 * rotations within 1e-5 per quaternion component with the same iterations
 * and stop reasons, an orientation map's atoms within 0.01 degrees (98.5%;
 * in single precision as near the truth as the CPU's), EM-ICP's and LDDMM's pair sums as parity_pairs.h
 * says, LiDAR odometry's poses within 1e-4 m (parity_odometry.h), and
 * every run of a device the same bits; every
 * buffer's guard words are checked. Seeds are
 * fixed and printed; the last line is "N passed, N failed". Exits 77 (skip)
 * when there is no device (fails instead with PTREG_TEST_REQUIRE_DEVICE=1).
 * PTREG_TEST_DEVICE=cuda:0 (say) runs one device; PTREG_PARITY_QUICK=1
 * leaves out the 40k x 30k cases and LDDMM's 1847 landmarks; PTREG_PARITY_ONLY=lddmm runs LDDMM's
 * cases alone, lddmm-splits those in double precision whose row blocks take several groups (the
 * stand-in's incoherent mode), geometry the normals and the voxel grid alone, odometry its drive
 * alone. Each case's line
 * ends with a digest of
 * the device's answers ("bits 0123..."): runs that must give the same bits
 * (the CUDA stand-in's thread orders, tests/cuda_standin/orders.sh)
 * compare them. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "nn/index_impl.h"
#include "nn/nn_device.h"
#include "ptreg/ptreg.h"
#include "ptreg/synth_apt.h"
#include "apt/orientation_impl.h"
#include "reg/batch/batch_device.h"
#include "reg/global/match_device.h"
#include "reg/global/ransac_device.h"
#include "hooks.h"
#include "core/numeric.h"

/* ---- exact or within rounding ---- */

/* Whether the device under test computes as the kernels are written, no
 * a*b + c fused into one rounding (device.c's probe when it is opened,
 * info.fma_contracts; NVIDIA's OpenCL may fuse despite FP_CONTRACT OFF).
 * Answers that must be the CPU's bits are held to a tolerance on a device
 * that fuses, as in single precision. Set per device by run_device. */
static int device_exact = 1;

/* The CPU's floats: the same bits on an exact device; else each within
 * 1e-6 relative (a few roundings fused away), NaN never. */
static int same_floats(const float *a, const float *b, size_t n)
{
    if (device_exact)
        return !memcmp(a, b, n * sizeof *a);
    for (size_t i = 0; i < n; i++) {
        const double x = a[i], y = b[i], scale = fabs(x) > fabs(y) ? fabs(x) : fabs(y);
        if (memcmp(&a[i], &b[i], sizeof *a) && !(fabs(x - y) <= 1e-6 * scale))
            return 0;
    }
    return 1;
}

/* One double the same way (a threshold scaled from a float answer). */
static int same_double(double a, double b) { return device_exact ? a == b : a == b || fabs(a - b) <= 1e-6 * fabs(a); }

/* ---- the digest of a case's device answers ---- */

#define DIGEST_START 0xcbf29ce484222325ull
static uint64_t answers_digest = DIGEST_START;

static void digest(const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++)
        answers_digest = (answers_digest ^ p[i]) * 0x100000001b3ull;
}

/* The digest so far, for the line being printed; the next case starts anew. */
static unsigned long long take_digest(void)
{
    const uint64_t d = answers_digest;
    answers_digest = DIGEST_START;
    return (unsigned long long)d;
}

typedef enum parity_op {
    OP_BRUTE,
    OP_KDTREE,
    OP_KDTREE_LBKD, /* the k-d tree's search on the left-balanced tree, seeded */
    OP_WALK_FIXED,
    OP_WALK_KDANN,
    OP_WALK_SEED,
    OP_ICP_PASS, /* one correspondence pass at a random pose: pairs and MSE */
    OP_ICP_STEP, /* one Horn step: the moments, through the transform they give */
    OP_ICP       /* whole registrations */
} parity_op;

typedef enum parity_cloud {
    CLOUD_RANDOM,     /* uniform in a box; queries near the points */
    CLOUD_DUPLICATES, /* every point three times; queries on the points (ties) */
    CLOUD_LATTICE,    /* a grid; queries at cell centres (eight-way ties) */
    CLOUD_FAR,        /* queries far outside the model */
    CLOUD_SURFACE     /* the built-in aircraft and a scan of it */
} parity_cloud;

typedef struct parity_case {
    parity_op op;
    parity_cloud cloud;
    size_t m, n;
    uint64_t seed;
    ptreg_nn_method nn;           /* ICP cases */
    double max_dist, sigma, trim; /* ICP cases' filters (0, 0, 1: none) */
    int large;                    /* left out by PTREG_PARITY_QUICK */
    int lbkd;                     /* ICP cases: PTREG_NN_DEVICE_KDTREE=lbkd */
    ptreg_icp_method method;      /* ICP cases: Gauss-Newton's methods, */
    ptreg_robust_kernel kernel;   /* kernels */
    double lm;                    /* and damping (0: none) */
} parity_case;

#define NN_CASE(op, cloud, m, n, seed)                               \
    {                                                                \
        op, cloud, m, n, seed, PTREG_NN_AUTO, 0, 0, 1, 0, 0, 0, 0, 0 \
    }
#define ICP_CASE(op, cloud, m, n, seed, nn, d, s, t)      \
    {                                                     \
        op, cloud, m, n, seed, nn, d, s, t, 0, 0, 0, 0, 0 \
    }
/* Gauss-Newton: the method, the robust kernel (its k: GN_KERNEL_SCALE), LM's damping */
#define GN_CASE(op, m, n, seed, nn, d, s, t, method, kernel, lm)             \
    {                                                                        \
        op, CLOUD_SURFACE, m, n, seed, nn, d, s, t, 0, 0, method, kernel, lm \
    }
#define GN_KERNEL_SCALE 0.05

/* Sizes around the work-group (256) and the reduction group (1024). */
static const parity_case cases[] = {
    NN_CASE(OP_BRUTE, CLOUD_RANDOM, 1, 1, 1),
    NN_CASE(OP_BRUTE, CLOUD_RANDOM, 255, 257, 2),
    NN_CASE(OP_BRUTE, CLOUD_RANDOM, 257, 255, 3),
    NN_CASE(OP_BRUTE, CLOUD_DUPLICATES, 1000, 1023, 4),
    NN_CASE(OP_BRUTE, CLOUD_LATTICE, 512, 343, 5),
    NN_CASE(OP_BRUTE, CLOUD_FAR, 1847, 1025, 6),
    {OP_BRUTE, CLOUD_RANDOM, 40000, 30000, 7, PTREG_NN_AUTO, 0, 0, 1, 1, 0, 0, 0, 0},
    NN_CASE(OP_KDTREE, CLOUD_RANDOM, 1, 1, 11),
    NN_CASE(OP_KDTREE, CLOUD_RANDOM, 255, 257, 12),
    NN_CASE(OP_KDTREE, CLOUD_RANDOM, 4097, 1025, 13),
    NN_CASE(OP_KDTREE, CLOUD_DUPLICATES, 3000, 1023, 14),
    NN_CASE(OP_KDTREE, CLOUD_LATTICE, 1000, 729, 15),
    NN_CASE(OP_KDTREE, CLOUD_FAR, 1847, 1025, 16),
    {OP_KDTREE, CLOUD_SURFACE, 40000, 30000, 17, PTREG_NN_AUTO, 0, 0, 1, 1, 0, 0, 0, 0},
    NN_CASE(OP_KDTREE_LBKD, CLOUD_RANDOM, 1, 1, 61),
    NN_CASE(OP_KDTREE_LBKD, CLOUD_RANDOM, 2, 5, 62),
    NN_CASE(OP_KDTREE_LBKD, CLOUD_RANDOM, 3, 9, 63),
    NN_CASE(OP_KDTREE_LBKD, CLOUD_RANDOM, 4097, 1025, 64),
    NN_CASE(OP_KDTREE_LBKD, CLOUD_DUPLICATES, 3000, 1023, 65),
    NN_CASE(OP_KDTREE_LBKD, CLOUD_LATTICE, 1000, 729, 66),
    NN_CASE(OP_KDTREE_LBKD, CLOUD_FAR, 1847, 1025, 67),
    NN_CASE(OP_WALK_FIXED, CLOUD_RANDOM, 257, 255, 21),
    NN_CASE(OP_WALK_FIXED, CLOUD_DUPLICATES, 1000, 1025, 22),
    NN_CASE(OP_WALK_KDANN, CLOUD_RANDOM, 2000, 1023, 23),
    NN_CASE(OP_WALK_KDANN, CLOUD_LATTICE, 512, 343, 24),
    NN_CASE(OP_WALK_KDANN, CLOUD_FAR, 1000, 257, 25),
    NN_CASE(OP_WALK_SEED, CLOUD_RANDOM, 2000, 1025, 26),
    NN_CASE(OP_WALK_SEED, CLOUD_DUPLICATES, 999, 1023, 27),
    {OP_WALK_SEED, CLOUD_SURFACE, 40000, 30000, 28, PTREG_NN_AUTO, 0, 0, 1, 1, 0, 0, 0, 0},
    ICP_CASE(OP_ICP_PASS, CLOUD_SURFACE, 2000, 3, 31, PTREG_NN_KDTREE, 0, 0, 1), /* the fewest ICP takes */
    ICP_CASE(OP_ICP_PASS, CLOUD_SURFACE, 2000, 1023, 32, PTREG_NN_BRUTE, 0.05, 0, 1),
    ICP_CASE(OP_ICP_PASS, CLOUD_SURFACE, 3000, 1025, 33, PTREG_NN_KDTREE, 0, 1.5, 1),
    ICP_CASE(OP_ICP_PASS, CLOUD_SURFACE, 3000, 2049, 34, PTREG_NN_DELAUNAY_PNNOPT, 0, 0, 0.7),
    ICP_CASE(OP_ICP_PASS, CLOUD_DUPLICATES, 1000, 1025, 35, PTREG_NN_KDTREE, 0.2, 2.0, 0.5),
    ICP_CASE(OP_ICP_PASS, CLOUD_FAR, 1000, 300, 36, PTREG_NN_KDTREE, 0, 0, 0.9),
    ICP_CASE(OP_ICP_STEP, CLOUD_SURFACE, 4000, 3000, 41, PTREG_NN_KDTREE, 0, 0, 1),
    ICP_CASE(OP_ICP_STEP, CLOUD_SURFACE, 4000, 1025, 42, PTREG_NN_BRUTE, 0.1, 0, 0.8),
    ICP_CASE(OP_ICP, CLOUD_SURFACE, 4000, 3000, 51, PTREG_NN_BRUTE, 0, 0, 1),
    ICP_CASE(OP_ICP, CLOUD_SURFACE, 4000, 3000, 52, PTREG_NN_KDTREE, 0.1, 2.0, 1),
    {OP_ICP, CLOUD_SURFACE, 4000, 3000, 58, PTREG_NN_KDTREE, 0.1, 2.0, 1, 0, 1, 0, 0, 0},
    ICP_CASE(OP_ICP, CLOUD_SURFACE, 4000, 3000, 53, PTREG_NN_DELAUNAY_ZERO, 0, 0, 0.9),
    ICP_CASE(OP_ICP, CLOUD_SURFACE, 4000, 3000, 54, PTREG_NN_DELAUNAY_KDANN, 0, 1.0, 1),
    ICP_CASE(OP_ICP, CLOUD_SURFACE, 4000, 3000, 55, PTREG_NN_DELAUNAY_PNN, 0, 0, 1),
    {OP_ICP, CLOUD_SURFACE, 40000, 30000, 56, PTREG_NN_DELAUNAY_PNNOPT, 0, 0, 1, 1, 0, 0, 0, 0},
    {OP_ICP, CLOUD_SURFACE, 40000, 30000, 57, PTREG_NN_KDTREE, 0, 0, 1, 1, 0, 0, 0, 0},
    GN_CASE(OP_ICP_STEP, 4000, 3000, 61, PTREG_NN_KDTREE, 0, 0, 1, PTREG_ICP_PLANE, PTREG_KERNEL_NONE, 0),
    GN_CASE(OP_ICP_STEP, 4000, 1025, 62, PTREG_NN_BRUTE, 0.1, 0, 1, PTREG_ICP_GICP, PTREG_KERNEL_NONE, 0),
    GN_CASE(OP_ICP_STEP, 4000, 3000, 63, PTREG_NN_KDTREE, 0, 0, 0.8, PTREG_ICP_SYMMETRIC, PTREG_KERNEL_HUBER, 0),
    GN_CASE(OP_ICP_STEP, 4000, 2049, 64, PTREG_NN_DELAUNAY_PNNOPT, 0, 0, 1, PTREG_ICP_POINT, PTREG_KERNEL_TUKEY, 0),
    GN_CASE(OP_ICP, 4000, 3000, 65, PTREG_NN_KDTREE, 0, 0, 1, PTREG_ICP_PLANE, PTREG_KERNEL_CAUCHY, 0),
    GN_CASE(OP_ICP, 4000, 3000, 66, PTREG_NN_KDTREE, 0.1, 2.0, 1, PTREG_ICP_GICP, PTREG_KERNEL_GM, 0),
    GN_CASE(OP_ICP, 4000, 3000, 67, PTREG_NN_DELAUNAY_PNN, 0, 0, 0.9, PTREG_ICP_SYMMETRIC, PTREG_KERNEL_NONE, 0),
    GN_CASE(OP_ICP, 4000, 3000, 68, PTREG_NN_BRUTE, 0, 0, 1, PTREG_ICP_PLANE, PTREG_KERNEL_HUBER, 1e-3),
};

static const char *op_name(parity_op op)
{
    static const char *names[] = {"brute",     "kdtree",   "lbkd",     "walk-fixed", "walk-kdann",
                                  "walk-seed", "icp-pass", "icp-step", "icp"};
    return names[op];
}

static const char *cloud_name(parity_cloud c)
{
    static const char *names[] = {"random", "duplicates", "lattice", "far", "surface"};
    return names[c];
}

/* ---- inputs ---- */

static double uniform(ptreg_rng *rng) { return ptreg_rng_uniform(rng); }

typedef struct clouds {
    float *model, *queries;
    size_t m, n;
    double truth[16]; /* surface scans: the pose */
} clouds;

static void free_clouds(clouds *c)
{
    free(c->model);
    free(c->queries);
}

static void fill_model(const parity_case *pc, ptreg_rng *rng, float *model, size_t m)
{
    size_t side = (size_t)ceil(cbrt((double)m));
    for (size_t i = 0; i < m; i++) {
        size_t src = pc->cloud == CLOUD_DUPLICATES ? i - i % 3 : i; /* the first of its three */
        for (int k = 0; k < 3; k++) {
            if (pc->cloud == CLOUD_LATTICE)
                model[3 * i + k] = (float)(k == 0 ? i % side : k == 1 ? i / side % side : i / (side * side));
            else if (pc->cloud == CLOUD_DUPLICATES && src != i)
                model[3 * i + k] = model[3 * src + k];
            else
                model[3 * i + k] = (float)(uniform(rng) * 2.0 - 1.0);
        }
    }
}

/* Coordinate k of the centre of lattice cell i (side points a side). */
static double cell_centre(size_t i, int k, size_t side)
{
    size_t cells = side > 1 ? side - 1 : 1;
    size_t at = k == 0 ? i % side : k == 1 ? i / side % side : i / (side * side);
    return (double)(at % cells) + 0.5;
}

static void fill_queries(const parity_case *pc, ptreg_rng *rng, const float *model, size_t m, float *q, size_t n)
{
    size_t side = (size_t)ceil(cbrt((double)m));
    for (size_t i = 0; i < n; i++) {
        size_t at = (size_t)(uniform(rng) * (double)m) % m;
        for (int k = 0; k < 3; k++) {
            double v = model[3 * at + k];
            if (pc->cloud == CLOUD_RANDOM)
                v += (uniform(rng) - 0.5) * 0.1;
            else if (pc->cloud == CLOUD_LATTICE)
                v = cell_centre(i, k, side);
            else if (pc->cloud == CLOUD_FAR)
                v = (uniform(rng) - 0.5) * 2000.0 + (k == 0 ? 500.0 : 0.0);
            q[3 * i + k] = (float)v;
        }
    }
}

static int make_clouds(const parity_case *pc, clouds *c)
{
    memset(c, 0, sizeof *c);
    c->m = pc->m, c->n = pc->n;
    ptreg_transform_identity(c->truth);
    if (pc->cloud == CLOUD_SURFACE) {
        ptreg_cloud model, scan;
        ptreg_synth_options so;
        ptreg_synth_options_default(&so);
        so.points = pc->n;
        so.seed = pc->seed;
        so.max_angle_deg = 10.0;
        if (ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, pc->m, pc->seed, &model, NULL) ||
            ptreg_synth_scan(PTREG_SHAPE_AIRCRAFT, &so, &scan, c->truth, NULL))
            return -1;
        c->model = model.xyz, c->queries = scan.xyz, c->n = scan.n;
        free(model.normals), free(scan.normals);
        free(model.curvature), free(scan.curvature);
        return 0;
    }
    ptreg_rng rng;
    ptreg_rng_seed(&rng, pc->seed);
    c->model = malloc(3 * c->m * sizeof(float));
    c->queries = malloc(3 * c->n * sizeof(float));
    if (!c->model || !c->queries)
        return -1;
    fill_model(pc, &rng, c->model, c->m);
    fill_queries(pc, &rng, c->model, c->m, c->queries, c->n);
    return 0;
}

/* ---- nearest neighbors ---- */

typedef struct nn_answer {
    uint32_t *index; /* original indices */
    float *dist2;
    ptreg_walk_stats stats;
} nn_answer;

static ptreg_nn_method search_of(parity_op op)
{
    return op == OP_KDTREE || op == OP_KDTREE_LBKD ? PTREG_NN_KDTREE
           : op == OP_WALK_FIXED                   ? PTREG_NN_DELAUNAY_ZERO
           : op == OP_WALK_KDANN                   ? PTREG_NN_DELAUNAY_KDANN
                                                   : PTREG_NN_DELAUNAY_PNN;
}

/* Seeds for the seeded cases: arbitrary points (the answer must not
 * depend on them), some missing. */
static uint32_t *make_seeds(size_t n, size_t m, uint64_t seed)
{
    uint32_t *s = malloc(n * sizeof *s);
    for (size_t i = 0; s && i < n; i++)
        s[i] = (i + seed) % 7 == 0 ? PTREG_NO_NEIGHBOR : (uint32_t)((i * 2654435761u + seed) % m);
    return s;
}

static ptreg_status cpu_nearest(const parity_case *pc, const clouds *c, const ptreg_model_index *idx,
                                const uint32_t *seeds, nn_answer *a, ptreg_error *err)
{
    memset(&a->stats, 0, sizeof a->stats);
    if (pc->op == OP_BRUTE)
        return ptreg_brute_nearest(c->model, c->m, c->queries, c->n, a->index, a->dist2, err);
    return ptreg_model_index_nearest(idx, c->queries, c->n, search_of(pc->op), seeds, a->index, a->dist2,
                                     pc->op <= OP_KDTREE_LBKD ? NULL : &a->stats, err);
}

static ptreg_status device_nearest(const parity_case *pc, const clouds *c, nn_device_model *dm, const uint32_t *seeds,
                                   nn_answer *a, ptreg_error *err)
{
    dev_handle *dev = dm->dev;
    const ptreg_kdtree *t = dm->index->tree;
    size_t n = c->n, groups = device_groups(n);
    uint32_t *slots = malloc(n * sizeof *slots);
    if (!slots)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        slots[i] = seeds && seeds[i] != PTREG_NO_NEIGHBOR ? t->slot[seeds[i]] : PTREG_NO_NEIGHBOR;
    dbuf *q = NULL, *near = NULL, *d2 = NULL, *info = NULL, *part = NULL, *stats = NULL;
    ptreg_status st = dbuf_upload(dev, c->queries, 3 * n * sizeof(float), &q, err);
    st = st ? st : dbuf_upload(dev, slots, n * sizeof *slots, &near, err);
    st = st ? st : dbuf_alloc(dev, n * sizeof(float), &d2, err);
    st = st ? st : dbuf_alloc(dev, n * sizeof(uint32_t), &info, err);
    st = st ? st : dbuf_alloc(dev, groups * PTREG_WALK_FIELDS * sizeof(uint64_t), &part, err);
    st = st ? st : dbuf_alloc(dev, PTREG_WALK_FIELDS * sizeof(uint64_t), &stats, err);
    int start = pc->op == OP_WALK_FIXED   ? PTREG_WALK_FIXED
                : pc->op == OP_WALK_KDANN ? PTREG_WALK_KDANN
                                          : PTREG_WALK_SEED;
    if (!st && pc->op == OP_BRUTE)
        st = nn_device_brute(dm, q, n, near, d2, err);
    else if (!st && pc->op <= OP_KDTREE_LBKD) {
        dm->kd_search = pc->op == OP_KDTREE_LBKD ? NN_KD_LBKD : NN_KD_CLIMB;
        st = nn_device_kdtree(dm, q, n, INFINITY, NULL, near, d2, err);
    } else if (!st) {
        st = nn_device_walk(dm, q, n, start, near, d2, NULL, info, err);
        st = st ? st : nn_device_walk_stats(dm, info, n, part, stats, 0, err);
    }
    uint64_t words[PTREG_WALK_FIELDS] = {0};
    st = st ? st : dbuf_read(near, 0, a->index, n * sizeof(uint32_t), err);
    st = st ? st : dbuf_read(d2, 0, a->dist2, n * sizeof(float), err);
    if (!st && pc->op >= OP_WALK_FIXED)
        st = dbuf_read(stats, 0, words, sizeof words, err);
    walk_stats_from_words(words, &a->stats);
    for (size_t i = 0; !st && pc->op != OP_BRUTE && i < n; i++)
        a->index[i] = a->index[i] == PTREG_NO_NEIGHBOR ? PTREG_NO_NEIGHBOR : t->index[a->index[i]];
    dbuf *all[] = {q, near, d2, info, part, stats};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dbuf_free(all[i]);
    free(slots);
    return st;
}

static int nn_answers_alloc(nn_answer *a, size_t n)
{
    a->index = malloc(n * sizeof *a->index);
    a->dist2 = malloc(n * sizeof *a->dist2);
    return a->index && a->dist2 ? 0 : -1;
}

static int run_nn_case(dev_handle *dev, const parity_case *pc, const clouds *c, char *detail, size_t size)
{
    ptreg_model_index *idx = NULL;
    nn_device_model *dm = NULL;
    ptreg_error err;
    nn_answer ref = {0}, got = {0};
    uint32_t *seeds = pc->op == OP_WALK_SEED || pc->op == OP_KDTREE_LBKD ? make_seeds(c->n, c->m, pc->seed) : NULL;
    int ok = 0;
    if (ptreg_model_index_create(c->model, c->m, NULL, &idx, &err) || nn_device_create(dev, idx, 1, &dm, &err) ||
        nn_answers_alloc(&ref, c->n) || nn_answers_alloc(&got, c->n)) {
        snprintf(detail, size, "set-up failed: %s", err.message);
        goto done;
    }
    if (pc->op >= OP_WALK_FIXED && !idx->graph) {
        snprintf(detail, size, "no Delaunay graph: %s", idx->note);
        ok = -1;
        goto done;
    }
    if (cpu_nearest(pc, c, idx, seeds, &ref, &err) || device_nearest(pc, c, dm, seeds, &got, &err)) {
        snprintf(detail, size, "%s", err.message);
        goto done;
    }
    digest(got.index, c->n * sizeof *got.index);
    digest(got.dist2, c->n * sizeof *got.dist2);
    size_t bad = 0, first = 0;
    /* (on a device that fuses, a tie may fall the other way: another
     * index at a distance within rounding; and the walks' steps differ) */
    for (size_t i = 0; i < c->n; i++)
        if (!same_floats(&ref.dist2[i], &got.dist2[i], 1) || (device_exact && ref.index[i] != got.index[i])) {
            first = bad++ ? first : i;
        }
    int same_walks = pc->op < OP_WALK_FIXED || !device_exact || !memcmp(&ref.stats, &got.stats, sizeof ref.stats);
    ok = bad == 0 && same_walks;
    if (bad)
        snprintf(detail, size, "%zu of %zu answers differ (query %zu: cpu %u %.9g, device %u %.9g)", bad, c->n, first,
                 ref.index[first], ref.dist2[first], got.index[first], got.dist2[first]);
    else if (!same_walks)
        snprintf(detail, size, "the walks differ: steps %llu vs %llu, fallbacks %llu vs %llu",
                 (unsigned long long)ref.stats.steps, (unsigned long long)got.stats.steps,
                 (unsigned long long)ref.stats.fallbacks, (unsigned long long)got.stats.fallbacks);
    else
        snprintf(detail, size, "all %zu answers equal%s", c->n, pc->op >= OP_WALK_FIXED ? ", the walks too" : "");
done:
    free(seeds);
    free(ref.index), free(ref.dist2), free(got.index), free(got.dist2);
    nn_device_destroy(dm);
    ptreg_model_index_destroy(idx);
    return ok;
}

/* ---- ICP ---- */

static void icp_options(const parity_case *pc, const clouds *c, ptreg_icp_options *o)
{
    ptreg_icp_options_default(o);
    o->nn = pc->nn;
    o->max_dist = pc->max_dist;
    o->filter_sigma = pc->sigma;
    o->trim = pc->trim;
    o->method = pc->method;
    o->kernel = pc->kernel;
    o->kernel_scale = pc->kernel ? GN_KERNEL_SCALE : 0.0;
    o->lm_lambda = pc->lm;
    o->max_iter = pc->op == OP_ICP_PASS ? 0 : pc->op == OP_ICP_STEP ? 1 : 30;
    o->tol = 0.0;
    /* the pass and the step start off the answer, where pairs differ */
    double angle = pc->op == OP_ICP ? 0.0 : 3.0, axis[3] = {1, 2, 3}, t[3] = {0.01, -0.02, 0.005};
    double off[16];
    ptreg_transform_from_axis_angle(axis, angle, t, off);
    ptreg_transform_mul(off, c->truth, o->init);
}

/* ||a - b|| / ||a|| over the iterations both ran. */
static double normalised_error(const double *a, const double *b, int n)
{
    double num = 0.0, den = 0.0;
    for (int i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += a[i] * a[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static int same_walks(const ptreg_icp_result *a, const ptreg_icp_result *b)
{
    if (!a->walk || !b->walk)
        return a->walk == b->walk;
    return !memcmp(a->walk, b->walk, (size_t)(a->iterations + 1) * sizeof *a->walk);
}

/* ptreg_icp with the device in its options (the model built, uploaded and
 * dropped inside the call) gives the resident model's bits. */
static int one_off_same(const ptreg_device *device, const ptreg_icp_options *o, const clouds *c,
                        const ptreg_icp_result *resident)
{
    ptreg_icp_options on = *o;
    on.device = *device;
    ptreg_icp_result r;
    if (ptreg_icp(c->queries, c->n, c->model, c->m, &on, &r, NULL))
        return 0;
    int same = !memcmp(r.transformation, resident->transformation, sizeof r.transformation) &&
               r.device.backend == device->backend && r.upload_ms > 0.0;
    ptreg_icp_result_free(&r);
    return same;
}

static int run_icp_case(const ptreg_device *device, int fp64, const parity_case *pc, const clouds *c, char *detail,
                        size_t size)
{
    ptreg_icp_options o;
    icp_options(pc, c, &o);
    ptreg_icp_result ref, got, again;
    ptreg_error err;
    ptreg_model_index *idx = NULL;
    ptreg_icp_model *model = NULL;
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    io.delaunay = ptreg_nn_method_is_delaunay(pc->nn);
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    if (ptreg_model_index_create(c->model, c->m, &io, &idx, &err) ||
        ptreg_icp_indexed(c->queries, c->n, idx, &o, &ref, &err)) {
        snprintf(detail, size, "CPU: %s", err.message);
        ptreg_model_index_destroy(idx);
        return 0;
    }
    int ok = 0;
    if (ptreg_icp_model_create(idx, device, &model, &err) ||
        ptreg_icp_model_run(model, c->queries, c->n, &o, &got, &err)) {
        snprintf(detail, size, "device: %s", err.message);
        goto done;
    }
    if (ptreg_icp_model_run(model, c->queries, c->n, &o, &again, &err)) {
        snprintf(detail, size, "device, second run: %s", err.message);
        ptreg_icp_result_free(&got);
        goto done;
    }
    digest(got.transformation, sizeof got.transformation);
    digest(got.mse, (size_t)(got.iterations + 1) * sizeof *got.mse);
    digest(&got.pairs, sizeof got.pairs);
    double dT = check_max_abs_diff(ref.transformation, got.transformation, 16);
    int both = (ref.iterations < got.iterations ? ref.iterations : got.iterations) + 1;
    double dmse = normalised_error(ref.mse, got.mse, both);
    int repeatable = !memcmp(got.transformation, again.transformation, sizeof got.transformation) &&
                     got.iterations == again.iterations && got.pairs == again.pairs;
    /* without double precision the sums and the moved points round
     * differently: a pair on a filter's edge may change sides */
    double tol_T = pc->op == OP_ICP ? 1e-5 : fp64 ? 1e-12 : 1e-5;
    double tol_mse = pc->op == OP_ICP ? 1e-6 : fp64 ? 1e-12 : 1e-5;
    size_t pair_slack = fp64 ? 0 : (ref.pairs + 999) / 1000;
    size_t dpairs = ref.pairs > got.pairs ? ref.pairs - got.pairs : got.pairs - ref.pairs;
    int walks = !fp64 || same_walks(&ref, &got);
    int one_off = pc->op != OP_ICP || one_off_same(device, &o, c, &got);
    ok = dT <= tol_T && dmse <= tol_mse && dpairs <= pair_slack && ref.iterations == got.iterations && walks &&
         repeatable && one_off;
    snprintf(detail, size,
             "%s %s%s%s%s: |dT| %.2g (tol %.0g), MSEs' normalised error %.2g, pairs %zu vs %zu, iterations %d vs "
             "%d%s%s%s",
             ptreg_icp_method_name(o.method), pc->kernel ? ptreg_robust_kernel_name(o.kernel) : "",
             pc->kernel ? " " : "", pc->lm > 0.0 ? "lm " : "", ptreg_nn_method_name(got.nn), dT, tol_T, dmse, ref.pairs,
             got.pairs, ref.iterations, got.iterations, walks ? "" : ", the walks differ",
             repeatable ? "" : ", NOT REPEATABLE",
             one_off ? "" : ", ptreg_icp on the device differs from the resident model");
    ptreg_icp_result_free(&got);
    ptreg_icp_result_free(&again);
done:
    ptreg_icp_result_free(&ref);
    ptreg_icp_model_destroy(model);
    ptreg_model_index_destroy(idx);
    return ok;
}

/* ---- batched EM-ICP ---- */

typedef struct batch_case {
    const char *name;
    size_t pairs, motif; /* the shared motif's points (fcc: 12 or 42); 0: per pair, 6 to 14 */
    int translation;
    size_t ragged; /* up to this many of a source's points repeated */
    double tol;    /* 0: the whole schedule */
    int bad;       /* pair 3's source is far from its target: no weight, it stops at once */
    uint64_t seed;
} batch_case;

/* The APT case (one motif, many rotated noisy neighborhoods), per-pair
 * targets of ragged sizes with translation (groups of 32 pairs: the last
 * one part-filled), lanes that stop early on the tolerance (with sources of
 * up to 34 points against the 12-point motif: the 64-point layout), a pair
 * that cannot register, and per-pair targets of up to 44 points.
 * Sources hold every point of their motif: a source that lacks some
 * matches several poses almost equally well, and there rounding alone
 * picks the pose (the CPU's own plain path and its lanes then differ too). */
static const batch_case batch_cases[] = {
    {"shared-12", 1200, 12, 0, 0, 0.0, 0, 61},   {"ragged-targets", 301, 0, 1, 2, 0.0, 0, 62},
    {"early-stop", 403, 12, 1, 22, 1e-4, 0, 63}, {"bad-pair", 70, 0, 1, 2, 0.0, 1, 64},
    {"ragged-42", 97, 42, 1, 2, 0.0, 0, 65},
};

typedef struct batch_pairs {
    ptreg_pair_set set;
    float *source, *target;
    size_t *offsets, *target_offsets;
    double radius; /* the motif's RMS radius */
} batch_pairs;

static void free_batch_pairs(batch_pairs *b)
{
    free(b->source), free(b->target), free(b->offsets), free(b->target_offsets);
}

static void random_rotation(ptreg_rng *rng, double max_deg, double R[9])
{
    double axis[3] = {ptreg_rng_normal(rng), ptreg_rng_normal(rng), ptreg_rng_normal(rng)}, T[16];
    ptreg_transform_from_axis_angle(axis, max_deg * (2.0 * ptreg_rng_uniform(rng) - 1.0), NULL, T);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            R[3 * r + c] = T[4 * r + c];
}

/* The per-pair motifs: simple cubic, bcc's first one and two shells,
 * fcc's first shell (a = 0.405). */
static const struct {
    ptreg_lattice lattice;
    size_t k;
} pair_motifs[] = {{PTREG_LATTICE_SC, 6}, {PTREG_LATTICE_BCC, 8}, {PTREG_LATTICE_FCC, 12}, {PTREG_LATTICE_BCC, 14}};

/* Sources: their motif's points (up to `ragged` of them repeated)
 * turned up to 30 degrees (40 for the shared fcc shell, whose nearest
 * equivalent turn is 90 degrees away), with noise, shifted when with
 * translation; targets: the shared motif, or per pair one of
 * pair_motifs. */
static int make_batch_pairs(const batch_case *bc, batch_pairs *b)
{
    memset(b, 0, sizeof *b);
    const size_t n = bc->pairs, k_max = (bc->motif ? bc->motif : 14) + bc->ragged;
    float motif[3 * 42];
    if (bc->motif && ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, bc->motif, motif, NULL))
        return -1;
    b->offsets = malloc((n + 1) * sizeof *b->offsets);
    b->target_offsets = bc->motif ? NULL : malloc((n + 1) * sizeof *b->target_offsets);
    b->source = malloc(n * k_max * 3 * sizeof(float));
    b->target = malloc((bc->motif ? 1 : n) * 3 * k_max * sizeof(float));
    if (!b->offsets || (!bc->motif && !b->target_offsets) || !b->source || !b->target)
        return -1;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, bc->seed);
    b->offsets[0] = 0;
    if (!bc->motif)
        b->target_offsets[0] = 0;
    double sum = 0.0, count = 0.0;
    for (size_t i = 0; i < n; i++) {
        size_t m_pts = bc->motif;
        float *t = motif;
        if (!bc->motif) {
            const size_t which = (size_t)(ptreg_rng_next(&rng) % 4);
            m_pts = pair_motifs[which].k;
            t = b->target + 3 * b->target_offsets[i];
            if (ptreg_motif_lattice(pair_motifs[which].lattice, 0.405, m_pts, t, NULL))
                return -1;
            b->target_offsets[i + 1] = b->target_offsets[i] + m_pts;
        }
        const size_t k = m_pts + (size_t)(ptreg_rng_next(&rng) % (bc->ragged + 1));
        double R[9], shift[3];
        random_rotation(&rng, bc->motif ? 40.0 : 30.0, R);
        for (int r = 0; r < 3; r++)
            shift[r] = bc->translation ? 0.1 * (ptreg_rng_uniform(&rng) - 0.5) : 0.0;
        if (bc->bad && i == 3)
            shift[0] += 1000.0;
        float *src = b->source + 3 * b->offsets[i];
        for (size_t j = 0; j < k; j++) {
            const float *m = t + 3 * (j % m_pts);
            for (int r = 0; r < 3; r++)
                src[3 * j + (size_t)r] = (float)(R[3 * r] * m[0] + R[3 * r + 1] * m[1] + R[3 * r + 2] * m[2] +
                                                 0.01 * ptreg_rng_normal(&rng) + shift[r]);
        }
        b->offsets[i + 1] = b->offsets[i] + k;
        for (size_t j = 0; j < 3 * m_pts && (!bc->motif || i == 0); j++)
            sum += (double)t[j] * t[j], count += 1.0 / 3.0;
    }
    if (bc->motif)
        memcpy(b->target, motif, 3 * bc->motif * sizeof(float));
    b->radius = sqrt(sum / count); /* the targets' RMS radius, about */
    b->set = (ptreg_pair_set){n, b->source, b->offsets, b->target, b->target_offsets, bc->motif};
    return 0;
}

typedef struct batch_answer {
    double *T;
    int *iterations, *stop;
    ptreg_batch_stats stats;
} batch_answer;

static void free_batch_answer(batch_answer *a) { free(a->T), free(a->iterations), free(a->stop); }

static ptreg_status batch_run(const batch_pairs *b, const batch_case *bc, const ptreg_device *device, int reference,
                              batch_answer *a, ptreg_error *err)
{
    const size_t n = b->set.count;
    a->T = malloc(16 * n * sizeof *a->T);
    a->iterations = malloc(n * sizeof *a->iterations);
    a->stop = malloc(n * sizeof *a->stop);
    if (!a->T || !a->iterations || !a->stop)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.translation = bc->translation;
    o.tol = bc->tol;
    o.device = *device;
    o.reference = reference;
    return ptreg_batch_register(&b->set, &o, a->T, a->iterations, a->stop, &a->stats, err);
}

typedef struct batch_parity {
    double dq, dt; /* the largest quaternion component and translation (over r) differences */
    size_t worst, iterations_differ, stops_differ, stopped_early, no_weight;
    double dq_step, dt_step; /* the same over the pairs one iteration apart */
} batch_parity;

static batch_parity compare_batch(const batch_pairs *b, const batch_answer *ref, const batch_answer *got)
{
    batch_parity p = {0};
    for (size_t i = 0; i < b->set.count; i++) {
        const double *A = ref->T + 16 * i, *B = got->T + 16 * i;
        const double dq = ptreg_transform_quaternion_difference(A, B);
        double dt = 0.0;
        for (int r = 0; r < 3; r++)
            dt = check_worse(dt, fabs(A[4 * r + 3] - B[4 * r + 3]) / b->radius);
        if (abs(ref->iterations[i] - got->iterations[i]) == 1) {
            p.dq_step = check_worse(p.dq_step, dq), p.dt_step = check_worse(p.dt_step, dt);
            p.iterations_differ++;
            p.stops_differ += ref->stop[i] != got->stop[i];
            continue;
        }
        if (!isnan(p.dq) && (isnan(dq) || dq > p.dq)) /* the first NaN lane, else the largest */
            p.worst = i;
        p.dq = check_worse(p.dq, dq), p.dt = check_worse(p.dt, dt);
        p.iterations_differ += ref->iterations[i] != got->iterations[i];
        p.stops_differ += ref->stop[i] != got->stop[i];
        p.stopped_early += ref->stop[i] == PTREG_STOP_CONVERGED;
        p.no_weight += ref->stop[i] == PTREG_STOP_TOO_FEW_PAIRS;
    }
    return p;
}

static int same_batch_bits(const batch_answer *a, const batch_answer *b, size_t n)
{
    return !memcmp(a->T, b->T, 16 * n * sizeof *a->T) && !memcmp(a->iterations, b->iterations, n * sizeof(int)) &&
           !memcmp(a->stop, b->stop, n * sizeof(int));
}

static int run_batch_case(const ptreg_device_info *info, int fp64, const batch_case *bc, char *detail, size_t size)
{
    batch_pairs b;
    batch_answer ref = {0}, got = {0}, again = {0}, plain = {0};
    ptreg_error err;
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    int ok = 0;
    if (make_batch_pairs(bc, &b)) {
        snprintf(detail, size, "set-up failed");
        goto done;
    }
    if (batch_run(&b, bc, &cpu, 0, &ref, &err) || batch_run(&b, bc, &cpu, 1, &plain, &err)) {
        snprintf(detail, size, "CPU: %s", err.message);
        goto done;
    }
    if (batch_run(&b, bc, &info->device, 0, &got, &err) || batch_run(&b, bc, &info->device, 0, &again, &err)) {
        snprintf(detail, size, "device: %s", err.message);
        goto done;
    }
    /* the CPU's plain path (libm's exp, no FMA) against its lanes: how far
     * rounding alone moves these answers */
    digest(got.T, 16 * b.set.count * sizeof *got.T);
    digest(got.iterations, b.set.count * sizeof *got.iterations);
    const batch_parity p = compare_batch(&b, &ref, &got), base = compare_batch(&b, &ref, &plain);
    /* the same tolerance without double precision (moments and Horn in
     * float): the answers are then within ~3e-7 on POCL */
    const double tol = 1e-5;
    const size_t n = b.set.count;
    const int repeatable = same_batch_bits(&got, &again, n);
    const int named = got.stats.isa && !strcmp(got.stats.isa, info->name) && got.stats.pairs == n &&
                      got.stats.pairs_per_s > 0;
    const int early = bc->tol == 0.0 || p.stopped_early > 0, bad = !bc->bad || ref.stop[3] == PTREG_STOP_TOO_FEW_PAIRS;
    /* In single precision a pair whose last pose change is within float
     * rounding of tol may stop one iteration apart (at most 1% of them):
     * its answers then differ by about that last step, under tol. */
    const size_t step_slack = fp64 ? 0 : (n + 99) / 100;
    const int steps_ok = p.iterations_differ <= step_slack && p.dq_step <= bc->tol && p.dt_step <= bc->tol;
    const int terms_ok = p.iterations_differ ? 1 : got.stats.pair_terms == ref.stats.pair_terms;
    ok = p.dq <= tol && p.dt <= tol && steps_ok && p.stops_differ == 0 && repeatable && named && terms_ok && early &&
         bad;
    snprintf(detail, size,
             "%zu pairs: |dq| %.2g (pair %zu), |dt|/r %.2g (tol %.0g), iterations differ in %zu (allowed %zu; "
             "|dq| %.2g, |dt|/r %.2g there), stops in %zu, %zu stopped early, %zu without weight; CPU plain path vs "
             "lanes |dq| %.2g%s%s",
             n, p.dq, p.worst, p.dt, tol, p.iterations_differ, step_slack, p.dq_step, p.dt_step, p.stops_differ,
             p.stopped_early, p.no_weight, base.dq, repeatable ? "" : ", NOT REPEATABLE", named ? "" : ", stats wrong");
done:
    free_batch_answer(&ref), free_batch_answer(&got), free_batch_answer(&again), free_batch_answer(&plain);
    free_batch_pairs(&b);
    return ok;
}

/* ---- orientation maps: each atom's neighborhood from every start ---- */

/* The angle between two rotations as unit quaternions, degrees: from the
 * chord between them (q and -q are one rotation), well conditioned where
 * their dot product near 1 is not. */
static double rotation_angle_deg(const float *a, const float *b)
{
    double minus = 0.0, plus = 0.0;
    for (int c = 0; c < 4; c++)
        minus += ((double)a[c] - b[c]) * ((double)a[c] - b[c]), plus += ((double)a[c] + b[c]) * ((double)a[c] + b[c]);
    const double chord = sqrt(minus < plus ? minus : plus);
    return 4.0 * asin(chord < 2.0 ? chord / 2.0 : 1.0) * 180.0 / 3.14159265358979323846;
}

/* The atoms within 10 degrees of their grain's true orientation. */
static size_t near_truth(const ptreg_orientations *o, const ptreg_apt_synth *poly)
{
    size_t near = 0;
    for (size_t i = 0; i < poly->n; i++) {
        const double q[4] = {o->q[4 * i], o->q[4 * i + 1], o->q[4 * i + 2], o->q[4 * i + 3]};
        near += ptreg_misorientation_deg(q, poly->orientation + 4 * poly->grain[i], (const double(*)[4])o->symmetry,
                                         o->symmetry_count) < 10.0;
    }
    return near;
}

/* A thinned, noisy bicrystal's map (every atom's 12 neighbors from the 8
 * starts of a cubic motif, the batch engine underneath), the same bits on
 * every run of the device. An atom whose best starts score alike within
 * rounding may keep another start on the device, as the lanes' answers
 * agree to 1e-5, not to the bit: with double precision the device's
 * orientations are within 0.01 degrees of the CPU's for at least 98.5% of
 * the atoms (99.45% on POCL, the rest off by tens of degrees); without it
 * (moments and Horn in float) 95.3% are, and then the map must be as right
 * as the CPU's: atoms within 10 degrees of the truth no fewer than the
 * CPU's less 1% of the atoms. */
static int run_orientation_case(const ptreg_device_info *info, int fp64, char *detail, size_t size)
{
    ptreg_apt_synth_options so;
    ptreg_apt_synth_options_default(&so);
    so.box[0] = so.box[1] = so.box[2] = 4.5;
    so.grains = 2, so.efficiency = 0.6, so.noise = 0.03, so.seed = 7;
    ptreg_apt_synth poly;
    ptreg_error err;
    if (ptreg_apt_synth_polycrystal(&so, &poly, &err)) {
        snprintf(detail, size, "set-up: %s", err.message);
        return 0;
    }
    float motif[36];
    ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 12, motif, NULL);
    ptreg_orientation_options opt;
    ptreg_orientation_options_default(&opt);
    opt.motif = motif, opt.motif_points = 12;
    ptreg_orientations cpu, got, again;
    memset(&got, 0, sizeof got), memset(&again, 0, sizeof again);
    int ok = 0;
    opt.batch.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    if (ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &cpu, &err)) {
        snprintf(detail, size, "CPU: %s", err.message);
        goto done;
    }
    opt.batch.device = info->device;
    if (ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &got, &err) ||
        ptreg_orientations_compute(poly.xyz, poly.n, NULL, &opt, &again, &err)) {
        snprintf(detail, size, "device: %s", err.message);
        goto done;
    }
    size_t close = 0, flags_differ = 0;
    for (size_t i = 0; i < poly.n; i++) {
        close += rotation_angle_deg(cpu.q + 4 * i, got.q + 4 * i) <= 0.01 ||
                 (isnan(cpu.q[4 * i]) && isnan(got.q[4 * i]));
        flags_differ += cpu.flag[i] != got.flag[i];
    }
    const size_t truth_cpu = near_truth(&cpu, &poly), truth_got = near_truth(&got, &poly);
    digest(got.q, 4 * poly.n * sizeof *got.q);
    const int repeatable = !memcmp(got.q, again.q, 4 * poly.n * sizeof *got.q);
    const int named = got.stats.isa && !strcmp(got.stats.isa, info->name) && got.registered == cpu.registered;
    const int agree = fp64 ? close >= 0.985 * (double)poly.n && flags_differ <= poly.n / 100
                           : (double)truth_got >= (double)truth_cpu - 0.01 * (double)poly.n;
    ok = agree && repeatable && named;
    snprintf(detail, size,
             "%zu atoms (%s): %zu within 0.01 deg of the CPU's (%.2f%%%s), flags differ in %zu; within 10 deg of the "
             "truth %zu, the CPU %zu%s%s%s",
             poly.n, fp64 ? "double" : "float", close, 100.0 * (double)close / (double)poly.n,
             fp64 ? "; need 98.5" : "", flags_differ, truth_got, truth_cpu,
             fp64 ? "" : " (need no fewer than the CPU's less 1%)", repeatable ? "" : ", NOT REPEATABLE",
             named ? "" : ", stats wrong");
done:
    ptreg_orientations_free(&cpu), ptreg_orientations_free(&got), ptreg_orientations_free(&again);
    ptreg_apt_synth_free(&poly);
    return ok;
}

/* The CPU's refusal of a set, and the device's: the same status and message. */
static int same_refusal(const ptreg_pair_set *p, const ptreg_device *device)
{
    double T[32];
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    ptreg_error cpu_err, dev_err;
    o.device = *device;
    ptreg_status dev_st = ptreg_batch_register(p, &o, T, NULL, NULL, NULL, &dev_err);
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_status cpu_st = ptreg_batch_register(p, &o, T, NULL, NULL, NULL, &cpu_err);
    return dev_st == PTREG_ERR_ARG && cpu_st == dev_st && !strcmp(cpu_err.message, dev_err.message);
}

/* Refusals the device path shares with the CPU's, and its own: a pair
 * with a non-finite point, a target without extent (both named), a pair
 * over the device's cap. */
static int run_batch_refusals(const ptreg_device *device, char *detail, size_t size)
{
    float src[3 * 65], tgt[6] = {0, 0, 0, 0, 1, 0}, flat[12] = {0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1};
    size_t off[3] = {0, 2, 4}, big[2] = {0, 65};
    for (size_t i = 0; i < 3 * 65; i++)
        src[i] = (float)(i % 7) * 0.1f;
    src[7] = NAN; /* pair 1's first point */
    ptreg_pair_set p = {2, src, off, tgt, NULL, 2};
    const int same = same_refusal(&p, device);
    src[7] = 0.0f;
    p = (ptreg_pair_set){2, src, off, flat, off, 2}; /* pair 1's target: one point twice */
    const int extent = same_refusal(&p, device);
    double T[16];
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = *device;
    ptreg_error dev_err;
    p = (ptreg_pair_set){1, src, big, tgt, NULL, 2};
    ptreg_status cap_st = ptreg_batch_register(&p, &o, T, NULL, NULL, NULL, &dev_err);
    const int cap = cap_st == PTREG_ERR_ARG && strstr(dev_err.message, "at most 64");
    const char *as_cpu = "refused as on the CPU", *not_as_cpu = "NOT AS ON THE CPU";
    snprintf(detail, size, "non-finite point: %s; no extent: %s; 65 points: %s", same ? as_cpu : not_as_cpu,
             extent ? as_cpu : not_as_cpu, cap ? dev_err.message : "NOT REFUSED");
    return same && extent && cap;
}

/* ---- EM-ICP's and LDDMM's pair sums ---- */

#include "parity_pairs.h"
#include "parity_features.h"
#include "parity_harris.h"
#include "parity_global.h"
#include "parity_normals.h"
#include "parity_voxel.h"
#include "parity_odometry.h"

/* ---- a model's own normals stay on the device ---- */

/* One registration on model: its transform, and the bytes it sent up. */
static int register_counting(ptreg_icp_model *model, const clouds *c, const ptreg_icp_options *o, double T[16],
                             uint64_t *bytes_to)
{
    ptreg_device_stats before, used;
    ptreg_icp_result r;
    ptreg_device_stats_get(&before);
    if (ptreg_icp_model_run(model, c->queries, c->n, o, &r, NULL))
        return 0;
    ptreg_device_stats_since(&before, &used);
    memcpy(T, r.transformation, sizeof r.transformation);
    *bytes_to = used.bytes_to;
    ptreg_icp_result_free(&r);
    return 1;
}

/* ptreg_icp_model_set_normals: a point-to-plane registration sends up what
 * a point-to-point one does, the frame's points and their order once (not
 * the target's normals again), and gives the CPU's transform with those
 * normals. */
static int run_model_normals_case(const ptreg_device *device, int fp64, char *detail, size_t size)
{
    const parity_case pc = ICP_CASE(OP_ICP, CLOUD_SURFACE, 4000, 3000, 71, PTREG_NN_KDTREE, 0, 0, 1);
    clouds c;
    ptreg_cloud model;
    ptreg_model_index *idx = NULL;
    ptreg_icp_model *dm = NULL;
    int ok = 0;
    if (make_clouds(&pc, &c) || ptreg_synth_model(PTREG_SHAPE_AIRCRAFT, pc.m, pc.seed, &model, NULL)) {
        snprintf(detail, size, "no clouds");
        return 0;
    }
    ptreg_icp_options o;
    icp_options(&pc, &c, &o);
    o.max_iter = 10;
    ptreg_icp_result ref;
    double T_point[16], T_plane[16];
    uint64_t up_point = 0, up_plane = 0;
    o.method = PTREG_ICP_PLANE;
    o.target_normals = model.normals;
    if (ptreg_model_index_create(c.model, c.m, NULL, &idx, NULL) ||
        ptreg_icp_indexed(c.queries, c.n, idx, &o, &ref, NULL)) {
        snprintf(detail, size, "the CPU's registration failed");
        goto done;
    }
    o.target_normals = NULL;
    o.method = PTREG_ICP_POINT;
    /* the first registration also fills the workspace's reusable parts */
    int ran = !ptreg_icp_model_create(idx, device, &dm, NULL) &&
              !ptreg_icp_model_set_normals(dm, model.normals, NULL) &&
              register_counting(dm, &c, &o, T_point, &up_point) && register_counting(dm, &c, &o, T_point, &up_point);
    o.method = PTREG_ICP_PLANE;
    ran = ran && register_counting(dm, &c, &o, T_plane, &up_plane);
    double dT = ran ? check_max_abs_diff(ref.transformation, T_plane, 16) : INFINITY;
    /* the points, their order and the filters' state: the trimming's 40
     * bytes and the sigma filter's limit in the sums' precision */
    ok = ran && up_plane == up_point && up_plane == 16 * c.n + 40 + (fp64 ? 8 : 4) && dT <= 1e-6;
    snprintf(detail, size,
             "plane with the model's normals: %llu bytes up (point-to-point: %llu), |dT| %.2g (tol 1e-6)%s",
             (unsigned long long)up_plane, (unsigned long long)up_point, dT, ran ? "" : "; a registration failed");
    ptreg_icp_result_free(&ref);
done:
    ptreg_icp_model_destroy(dm);
    ptreg_model_index_destroy(idx);
    ptreg_cloud_free(&model);
    free_clouds(&c);
    return ok;
}

/* ---- the runner ---- */

static int wanted(const ptreg_device_info *d)
{
    const char *only = getenv("PTREG_TEST_DEVICE");
    ptreg_device want;
    if (!only || !*only || ptreg_device_parse(only, &want))
        return d->device.backend != PTREG_BACKEND_CPU;
    return want.backend == d->device.backend && want.index == d->device.index;
}

static void run_device(const ptreg_device_info *info, int quick, int *passed, int *failed)
{
    dev_handle *dev;
    ptreg_error err;
    char name[32];
    ptreg_device_format(&info->device, name, sizeof name);
    ptreg_device_info probed; /* fma_contracts known */
    if (ptreg_device_probe(&info->device, &probed, &err) || dev_get(&info->device, &dev, &err)) {
        printf("FAIL %s: %s\n", name, err.message);
        ++*failed;
        return;
    }
    device_exact = probed.fma_contracts == 0;
    printf("device %s: %s (%s; fp64 %s; %s)\n", name, info->name, info->platform, dev->info.fp64 ? "yes" : "no",
           device_exact ? "bit-exact" : "fuses a*b+c: the CPU's bits held to tolerances");
    /* the exact double-precision checks need both */
    const int exact64 = dev->info.fp64 && device_exact;
    dev->check_guards = 1;
    const char *only = getenv("PTREG_PARITY_ONLY");
    if (only && (!strcmp(only, "lddmm") || !strcmp(only, "lddmm-splits"))) {
        const uint64_t guards = dev->guard_violations;
        run_lddmm_cases(info, dev, quick, !strcmp(only, "lddmm-splits"), passed, failed);
        if (dev->guard_violations != guards) {
            printf("FAIL lddmm: %llu guard words overwritten\n", (unsigned long long)(dev->guard_violations - guards));
            ++*failed;
        }
        return;
    }
    if (only && !strcmp(only, "odometry")) {
        run_odometry_operations(info, dev->info.fp64, passed, failed);
        return;
    }
    if (only && !strcmp(only, "geometry")) { /* normals and voxels alone (a quick look) */
        run_normals_operations(info, dev->info.fp64, passed, failed);
        run_voxel_operations(info, dev->info.fp64, passed, failed);
        return;
    }
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const parity_case *pc = &cases[k];
        if (quick && pc->large)
            continue;
        clouds c;
        char detail[PTREG_ERROR_MESSAGE_MAX + 128] = "";
        uint64_t guards = dev->guard_violations;
        double t0 = ptreg_time_ms();
        int ok = 0;
        if (pc->lbkd)
            setenv("PTREG_NN_DEVICE_KDTREE", "lbkd", 1);
        if (!make_clouds(pc, &c))
            ok = pc->op >= OP_ICP_PASS ? run_icp_case(&info->device, exact64, pc, &c, detail, sizeof detail)
                                       : run_nn_case(dev, pc, &c, detail, sizeof detail);
        if (pc->lbkd) {
            unsetenv("PTREG_NN_DEVICE_KDTREE");
            snprintf(detail + strlen(detail), sizeof detail - strlen(detail), " (the left-balanced tree)");
        }
        if (dev->guard_violations != guards) {
            ok = 0;
            snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "; %llu guard words overwritten",
                     (unsigned long long)(dev->guard_violations - guards));
        }
        printf("%s %-10s %-10s m=%zu n=%zu seed=%llu: %s (%.0f ms) [bits %016llx]\n",
               ok > 0   ? "ok  "
               : ok < 0 ? "skip"
                        : "FAIL",
               op_name(pc->op), cloud_name(pc->cloud), c.m, c.n, (unsigned long long)pc->seed, detail,
               ptreg_time_ms() - t0, take_digest());
        *passed += ok > 0; /* nan-ok: an int */
        *failed += ok == 0;
        free_clouds(&c);
    }
    char normals_detail[256];
    uint64_t normals_guards = dev->guard_violations;
    int normals_ok = run_model_normals_case(&info->device, dev->info.fp64, normals_detail, sizeof normals_detail) &&
                     dev->guard_violations == normals_guards;
    printf("%s icp-model  surface    %s\n", normals_ok ? "ok  " : "FAIL", normals_detail);
    *passed += normals_ok;
    *failed += !normals_ok;
    for (size_t k = 0; k <= sizeof batch_cases / sizeof batch_cases[0]; k++) {
        const batch_case *bc = k < sizeof batch_cases / sizeof batch_cases[0] ? &batch_cases[k] : NULL;
        char detail[PTREG_ERROR_MESSAGE_MAX + 256] = "";
        uint64_t guards = dev->guard_violations;
        double t0 = ptreg_time_ms();
        int ok = bc ? run_batch_case(info, exact64, bc, detail, sizeof detail)
                    : run_batch_refusals(&info->device, detail, sizeof detail);
        if (dev->guard_violations != guards) {
            ok = 0;
            snprintf(detail + strlen(detail), sizeof detail - strlen(detail), "; %llu guard words overwritten",
                     (unsigned long long)(dev->guard_violations - guards));
        }
        printf("%s batch      %-14s seed=%llu: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL",
               bc ? bc->name : "refusals", (unsigned long long)(bc ? bc->seed : 0), detail, ptreg_time_ms() - t0,
               take_digest());
        *passed += ok;
        *failed += !ok;
    }
    {
        char detail[PTREG_ERROR_MESSAGE_MAX + 256] = "";
        const uint64_t before = dev->guard_violations;
        const double t0 = ptreg_time_ms();
        const int ok = run_orientation_case(info, exact64, detail, sizeof detail) && dev->guard_violations == before;
        printf("%s batch      orientations   seed=7: %s (%.0f ms) [bits %016llx]\n", ok ? "ok  " : "FAIL", detail,
               ptreg_time_ms() - t0, take_digest());
        *passed += ok;
        *failed += !ok;
    }
    uint64_t guards = dev->guard_violations;
    run_pair_operations(info, dev, quick, passed, failed);
    run_feature_operations(info, passed, failed);
    run_harris_operations(info, passed, failed);
    run_global_operations(info, dev->info.fp64, quick, passed, failed);
    run_normals_operations(info, dev->info.fp64, passed, failed);
    run_voxel_operations(info, dev->info.fp64, passed, failed);
    run_odometry_operations(info, dev->info.fp64, passed, failed);
    if (dev->guard_violations != guards) {
        printf("FAIL pair sums: %llu guard words overwritten\n", (unsigned long long)(dev->guard_violations - guards));
        ++*failed;
    }
}

int main(void)
{
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    const char *q = getenv("PTREG_PARITY_QUICK");
    int quick = q && *q && strcmp(q, "0"), passed = 0, failed = 0, devices = 0;
    for (size_t i = 0; i < count; i++)
        if (wanted(&list[i]) && list[i].device.backend != PTREG_BACKEND_CPU) {
            run_device(&list[i], quick, &passed, &failed);
            devices++;
        }
    if (!devices) {
        const int required = check_env_set("PTREG_TEST_REQUIRE_DEVICE");
        printf("no CUDA or OpenCL device to test (cuda: %s; opencl: %s): %s\n", ptreg_backend_note(PTREG_BACKEND_CUDA),
               ptreg_backend_note(PTREG_BACKEND_OPENCL),
               required ? "FAILED (PTREG_TEST_REQUIRE_DEVICE: POCL is installed)" : "skipped");
        return required ? 1 : CHECK_EXIT_SKIP;
    }
    printf("%d passed, %d failed\n", passed, failed);
    ptreg_devices_release();
    if (!failed && !passed)
        printf("FAIL: no parity case ran on %d device%s\n", devices, devices == 1 ? "" : "s");
    return failed || !passed ? 1 : 0;
}
