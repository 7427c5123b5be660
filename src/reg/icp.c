/* Rigid point-to-point ICP (Besl & McKay 1992) with Horn's quaternion
 * solution, the sigma filter of the aerial-refuelling study and trimming.
 * See docs/ALGORITHMS.md. Every sum over points is taken in fixed blocks
 * added in block order, so the result has the same bits for any thread
 * count. */
#include "ptreg/icp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cpu_kernels.h"
#include "nn/index_impl.h"
#include "nn/kdtree_impl.h"
#include "nn/nn_dispatch.h"
#include "reg/icp_impl.h"
#include "reg/icp_kernels.h"
#include "ptreg/nn.h"

/* Points per block: the unit of work a thread takes and of every
 * deterministic partial sum. */
#define SUM_BLOCK 1024

/* The index stores methods by number (nn/index_impl.h). */
_Static_assert(PTREG_NN_DELAUNAY_PNNOPT == PTREG_INDEX_NN_LAST && PTREG_NN_DELAUNAY_ZERO == PTREG_INDEX_NN_FIRST_WALK &&
                   PTREG_INDEX_NN_LAST < PTREG_INDEX_NN_SLOTS,
               "ptreg_nn_method as the model index stores it");

const char *ptreg_nn_method_name(ptreg_nn_method method)
{
    switch (method) {
    case PTREG_NN_BRUTE: return "brute";
    case PTREG_NN_KDTREE: return "kdtree";
    case PTREG_NN_DELAUNAY_ZERO: return "delaunay-zero";
    case PTREG_NN_DELAUNAY_KDANN: return "delaunay-kdann";
    case PTREG_NN_DELAUNAY_PNN: return "delaunay-pnn";
    case PTREG_NN_DELAUNAY_PNNOPT: return "delaunay-pnnopt";
    case PTREG_NN_AUTO: break;
    }
    return "auto";
}

int ptreg_nn_method_parse(const char *name, ptreg_nn_method *method)
{
    for (int m = PTREG_NN_AUTO; m <= PTREG_NN_DELAUNAY_PNNOPT; m++)
        if (!strcmp(name, ptreg_nn_method_name((ptreg_nn_method)m))) {
            *method = (ptreg_nn_method)m;
            return 0;
        }
    return -1;
}

int ptreg_nn_method_is_delaunay(ptreg_nn_method m) { return m >= PTREG_NN_DELAUNAY_ZERO && m <= PTREG_NN_DELAUNAY_PNNOPT; }

const char *ptreg_stop_reason_name(ptreg_stop_reason reason)
{
    switch (reason) {
    case PTREG_STOP_CONVERGED: return "converged";
    case PTREG_STOP_MAX_ITERATIONS: return "max_iterations";
    case PTREG_STOP_TOO_FEW_PAIRS: return "too_few_pairs";
    case PTREG_STOP_DEGENERATE: return "degenerate";
    case PTREG_STOP_SIGMA_FINAL: return "sigma_final";
    }
    return "unknown";
}

void ptreg_icp_options_default(ptreg_icp_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->max_iter = 30;
    opt->tol = -1.0;
    opt->max_dist = 0.0;
    opt->filter_sigma = 0.0;
    opt->filter_start = 0;
    opt->trim = 1.0;
    ptreg_transform_identity(opt->init);
    opt->nn = PTREG_NN_AUTO;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

void ptreg_icp_result_free(ptreg_icp_result *result)
{
    free(result->mse);
    free(result->walk);
    result->mse = NULL;
    result->walk = NULL;
}

/* ---- the working state of one registration ---- */

typedef struct icp_state {
    float *source;      /* the caller's source in Morton order (see morton_order) */
    uint32_t *order;    /* per position there: the caller's index */
    const float *target;
    size_t n, m;
    const ptreg_icp_options *opt;
    ptreg_nn_method nn;
    const ptreg_kdtree *tree;
    const ptreg_delaunay *graph;
    ptreg_brute_target brute;
    ptreg_walk_stats *block_walk; /* Delaunay methods: per block, this pass */
    ptreg_dt_memory *walk_memory; /* pnn, pnnopt: each answer's certificate for the next pass */
    int pass;           /* correspondence passes made */
    float max_d2;       /* pairs farther apart are not used */
    int filters;        /* sigma filter or trimming: a second pass picks pairs */
    float *moved;       /* source under the current transform */
    uint32_t *nearest;  /* its nearest target point: a tree slot or an index;
                           also the next pass's seed */
    float *dist2;
    float *matched;     /* the nearest target point's coordinates */
    unsigned char *use; /* the pair survives the filters */
    uint64_t *keys;     /* trimming: (distance bits, the caller's index) */
    uint32_t *position; /* trimming: per caller's index, its position here */
    double ref[3];      /* reference point of the moment sums */
    size_t blocks;
    ptreg_moments *block_moments;
    double *block_sums; /* per block: summed squared distance */
} icp_state;

static int finite_points(const float *p, size_t n, size_t *bad)
{
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(p[i])) {
            *bad = i / 3;
            return 0;
        }
    return 1;
}

ptreg_status ptreg_icp_check_inputs(const float *source, size_t n, const float *target, size_t m,
                                    const ptreg_icp_options *opt, ptreg_error *err)
{
    size_t bad;
    if (n == 0 || m == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: the %s cloud is empty", n == 0 ? "source" : "target");
    if (n >= PTREG_NO_NEIGHBOR || m >= PTREG_NO_NEIGHBOR)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: clouds are limited to %u points", PTREG_NO_NEIGHBOR - 1);
    if (!finite_points(source, n, &bad))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: source point %zu is not finite", bad);
    if (!finite_points(target, m, &bad))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: target point %zu is not finite", bad);
    if (opt->max_iter < 0 || opt->max_iter > 1000000)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: max_iter %d is outside 0..1000000", opt->max_iter);
    if (!(opt->trim > 0.0 && opt->trim <= 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: trim fraction %g is outside (0, 1]", opt->trim);
    if (isnan(opt->tol) || isnan(opt->max_dist) || isnan(opt->filter_sigma) || opt->filter_start < 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: invalid tolerance, distance or filter option");
    if (!ptreg_transform_is_rigid(opt->init, 1e-6))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: the initial transform is not a rigid motion");
    return PTREG_OK;
}

/* The method that runs: the one asked for, unless it needs a Delaunay
 * graph the model has not got (then the k-d tree, and a note says why).
 * auto is the index's measured choice when it has one and use_measured
 * (r->nn_measured says so), else the rule. */
ptreg_nn_method ptreg_icp_choose_nn(const ptreg_icp_options *opt, size_t n, const ptreg_model_index *idx,
                                    int use_measured, ptreg_icp_result *r)
{
    ptreg_nn_method asked = opt->nn;
    char *note = r->nn_note;
    size_t note_size = sizeof r->nn_note;
    note[0] = '\0';
    r->nn_measured = 0;
    if (asked == PTREG_NN_AUTO && use_measured && !opt->no_tune && idx->tuning.method != PTREG_NN_AUTO) {
        /* the index's loader and setter checked that it can run it */
        r->nn_measured = 1;
        return (ptreg_nn_method)idx->tuning.method;
    }
    if (asked == PTREG_NN_AUTO) {
        if (idx->graph)
            return PTREG_NN_DELAUNAY_PNNOPT;
        /* Below a few thousand pair distances per query batch the tree's
         * descent costs more than scanning everything. */
        return (double)idx->n * (double)n < 2e5 || idx->n <= 32 ? PTREG_NN_BRUTE : PTREG_NN_KDTREE;
    }
    if (ptreg_nn_method_is_delaunay(asked) && !idx->graph) {
        snprintf(note, note_size, "%s asked for; the model has no Delaunay graph (%.180s): the k-d tree ran",
                 ptreg_nn_method_name(asked), idx->note);
        return PTREG_NN_KDTREE;
    }
    return asked;
}

/* Bounding-box centre and squared diagonal of the target. */
void ptreg_icp_target_extent(const float *t, size_t m, double centre[3], double *diag2)
{
    double lo[3] = {t[0], t[1], t[2]}, hi[3] = {t[0], t[1], t[2]};
    for (size_t j = 1; j < m; j++)
        for (int k = 0; k < 3; k++) {
            double v = t[3 * j + k];
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    *diag2 = 0.0;
    for (int k = 0; k < 3; k++) {
        centre[k] = 0.5 * (lo[k] + hi[k]);
        *diag2 += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    }
}

static void state_free(icp_state *s)
{
    ptreg_brute_target_free(&s->brute);
    free(s->block_walk);
    free(s->walk_memory);
    free(s->source);
    free(s->order);
    free(s->moved);
    free(s->nearest);
    free(s->dist2);
    free(s->matched);
    free(s->use);
    free(s->keys);
    free(s->position);
    free(s->block_moments);
    free(s->block_sums);
}

/* 10 bits of x, y and z interleaved (z y x z y x ...). */
static uint32_t morton_code(const float *p, const float lo[3], const float scale[3])
{
    uint32_t code = 0;
    for (int k = 0; k < 3; k++) {
        uint32_t v = (uint32_t)((p[k] - lo[k]) * scale[k]);
        v = v > 1023 ? 1023 : v;
        for (int bit = 0; bit < 10; bit++)
            code |= ((v >> bit) & 1u) << (3 * bit + k);
    }
    return code;
}

/* The source's points in the order of a Morton curve over their bounding
 * box (a stable radix sort: ties keep the caller's order). Consecutive
 * queries then land near each other in the model, so the rows of the
 * Delaunay graph (tens of MB) and the tree's leaves they read stay in
 * cache; the 40k/30k walks get 12-15% faster (bench/NOTES.md). Every
 * method and thread count sees the same order, so they still agree to the
 * bit. */
int ptreg_icp_morton_order(const float *p, size_t n, uint32_t *order)
{
    float lo[3] = {p[0], p[1], p[2]}, hi[3] = {p[0], p[1], p[2]}, scale[3];
    for (size_t i = 1; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = p[3 * i + k] < lo[k] ? p[3 * i + k] : lo[k];
            hi[k] = p[3 * i + k] > hi[k] ? p[3 * i + k] : hi[k];
        }
    for (int k = 0; k < 3; k++)
        scale[k] = hi[k] > lo[k] ? 1024.0f / (hi[k] - lo[k]) : 0.0f;
    uint32_t *code = malloc(2 * n * sizeof *code), *tmp = malloc(n * sizeof *tmp);
    if (!code || !tmp) {
        free(code), free(tmp);
        return -1;
    }
    uint32_t *sorted_code = code + n;
    for (size_t i = 0; i < n; i++)
        code[i] = morton_code(p + 3 * i, lo, scale), order[i] = (uint32_t)i;
    for (int shift = 0; shift < 30; shift += 10) {
        size_t count[1025] = {0};
        for (size_t i = 0; i < n; i++)
            count[((code[i] >> shift) & 1023u) + 1]++;
        for (int d = 0; d < 1024; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++) {
            size_t at = count[(code[i] >> shift) & 1023u]++;
            sorted_code[at] = code[i], tmp[at] = order[i];
        }
        memcpy(code, sorted_code, n * sizeof *code);
        memcpy(order, tmp, n * sizeof *order);
    }
    free(code), free(tmp);
    return 0;
}

static ptreg_status state_init(icp_state *s, const float *source, size_t n, const ptreg_model_index *idx,
                               const ptreg_icp_options *opt, ptreg_nn_method nn, ptreg_error *err)
{
    memset(s, 0, sizeof *s);
    s->target = idx->points, s->n = n, s->m = idx->n, s->opt = opt;
    s->source = malloc(3 * n * sizeof(float));
    s->order = malloc(n * sizeof(uint32_t));
    if (!s->source || !s->order || ptreg_icp_morton_order(source, n, s->order))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++)
        memcpy(s->source + 3 * i, source + 3 * (size_t)s->order[i], 3 * sizeof(float));
    s->nn = nn;
    s->tree = idx->tree;
    s->graph = ptreg_nn_method_is_delaunay(nn) ? idx->graph : NULL;
    s->max_d2 = opt->max_dist > 0.0 ? (float)(opt->max_dist * opt->max_dist) : INFINITY;
    s->filters = opt->filter_sigma > 0.0 || opt->trim < 1.0;
    s->blocks = (n + SUM_BLOCK - 1) / SUM_BLOCK;
    s->moved = malloc(3 * n * sizeof(float));
    s->nearest = malloc(n * sizeof(uint32_t));
    s->dist2 = malloc(n * sizeof(float));
    s->matched = malloc(3 * n * sizeof(float));
    s->use = malloc(n);
    s->keys = opt->trim < 1.0 ? malloc(n * sizeof(uint64_t)) : NULL;
    s->position = opt->trim < 1.0 ? malloc(n * sizeof(uint32_t)) : NULL;
    s->block_moments = malloc(s->blocks * sizeof(ptreg_moments));
    s->block_sums = malloc(s->blocks * sizeof(double));
    s->block_walk = s->graph ? malloc(s->blocks * sizeof(ptreg_walk_stats)) : NULL;
    int seeded = nn == PTREG_NN_DELAUNAY_PNN || nn == PTREG_NN_DELAUNAY_PNNOPT;
    s->walk_memory = s->graph && seeded ? malloc(n * sizeof(ptreg_dt_memory)) : NULL;
    if (!s->moved || !s->nearest || !s->dist2 || !s->matched || !s->use ||
        (opt->trim < 1.0 && (!s->keys || !s->position)) ||
        !s->block_moments || !s->block_sums || (s->graph && (!s->block_walk || (seeded && !s->walk_memory))))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++)
        s->nearest[i] = PTREG_NO_NEIGHBOR;
    for (size_t i = 0; s->walk_memory && i < n; i++)
        s->walk_memory[i].margin = -1.0f;
    for (size_t i = 0; s->position && i < n; i++)
        s->position[s->order[i]] = (uint32_t)i;
    return PTREG_OK;
}

/* Moments of block b's used pairs (moved source -> matched target) and
 * their summed squared distance: what ptreg_moments_add with unit weights
 * would sum, in the same order, by the per-ISA kernel. */
static void block_moments(icp_state *s, size_t b)
{
    size_t i0 = b * SUM_BLOCK, cnt = s->n - i0 < SUM_BLOCK ? s->n - i0 : SUM_BLOCK;
    ptreg_pair_sums sums;
    ptreg_cpu_kernels()->pair_sums_range(s->moved + 3 * i0, s->matched + 3 * i0, s->dist2 + i0, s->use + i0, cnt,
                                         s->ref, &sums);
    ptreg_moments *mb = &s->block_moments[b];
    ptreg_moments_init(mb, s->ref, s->ref);
    mb->w = sums.w;
    memcpy(mb->sp, sums.sp, sizeof mb->sp);
    memcpy(mb->sq, sums.sq, sizeof mb->sq);
    memcpy(mb->spq, sums.spq, sizeof mb->spq);
    s->block_sums[b] = sums.d2sum;
}

/* Where the Delaunay walks of correspondence pass `pass` start. */
ptreg_walk_start ptreg_icp_walk_start(ptreg_nn_method nn, int pass)
{
    switch (nn) {
    case PTREG_NN_DELAUNAY_KDANN: return PTREG_WALK_KDANN;
    case PTREG_NN_DELAUNAY_PNN: return PTREG_WALK_SEED; /* no answer yet on the first pass: the fixed start */
    case PTREG_NN_DELAUNAY_PNNOPT: return pass == 0 ? PTREG_WALK_KDANN : PTREG_WALK_SEED;
    default: return PTREG_WALK_FIXED;
    }
}

/* Block b of one iteration: move the source points by T, find each one's
 * nearest target point, keep those within max_dist, and, when no filter
 * needs global statistics first, take the block's moments too. The tree is
 * searched in its own slot order, seeded by the last iteration's answer,
 * which after the first few iterations usually is the answer. */
static void correspond_block(icp_state *s, const double T[16], size_t b)
{
    size_t i0 = b * SUM_BLOCK, cnt = s->n - i0 < SUM_BLOCK ? s->n - i0 : SUM_BLOCK;
    float *moved = s->moved + 3 * i0, *matched = s->matched + 3 * i0, *d2 = s->dist2 + i0;
    uint32_t *nearest = s->nearest + i0;
    ptreg_transform_points(T, s->source + 3 * i0, moved, cnt);
    if (s->graph) {
        memset(&s->block_walk[b], 0, sizeof s->block_walk[b]);
        ptreg_walk_start start = ptreg_icp_walk_start(s->nn, s->pass);
        ptreg_cpu_kernels()->dt_nearest_range(s->tree, s->graph, moved, cnt, start, nearest, d2,
                                              s->walk_memory ? s->walk_memory + i0 : NULL, &s->block_walk[b]);
        for (size_t i = 0; i < cnt; i++)
            ptreg_kdtree_slot_point(s->tree, nearest[i], matched + 3 * i);
    } else if (s->nn == PTREG_NN_KDTREE) {
        ptreg_cpu_kernels()->kd_nearest_range(s->tree, moved, cnt, nearest, nearest, d2);
        for (size_t i = 0; i < cnt; i++)
            ptreg_kdtree_slot_point(s->tree, nearest[i], matched + 3 * i);
    } else {
        ptreg_cpu_kernels()->brute_range(&s->brute, moved, cnt, nearest, d2);
        for (size_t i = 0; i < cnt; i++)
            memcpy(matched + 3 * i, s->target + 3 * (size_t)nearest[i], 3 * sizeof(float));
    }
    for (size_t i = 0; i < cnt; i++)
        s->use[i0 + i] = d2[i] <= s->max_d2;
    if (!s->filters)
        block_moments(s, b);
}

/* The sigma filter: pairs whose error is more than sigma standard
 * deviations above the mean error are left out this iteration. */
static void sigma_filter(icp_state *s, double sigma)
{
    double count = 0.0, sum = 0.0, sum_sq = 0.0;
    for (size_t i = 0; i < s->n; i++)
        if (s->use[i]) {
            double e = sqrt((double)s->dist2[i]);
            count += 1.0;
            sum += e;
            sum_sq += e * e;
        }
    if (count < 2)
        return;
    double mean = sum / count;
    double var = fmax(0.0, sum_sq / count - mean * mean);
    double limit = mean + sigma * sqrt(var);
    for (size_t i = 0; i < s->n; i++)
        if (s->use[i] && sqrt((double)s->dist2[i]) > limit)
            s->use[i] = 0;
}

static int key_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Keeps the closest `trim` fraction of the used pairs. Non-negative float
 * bits order like the floats, so (bits << 32 | index) orders pairs by
 * distance with ties broken by the caller's index: the kept set is
 * unique. */
static void trim_pairs(icp_state *s, double trim)
{
    size_t used = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->use[i]) {
            uint32_t bits;
            memcpy(&bits, &s->dist2[i], sizeof bits);
            s->keys[used++] = (uint64_t)bits << 32 | (uint64_t)s->order[i];
        }
    size_t keep = (size_t)ceil(trim * (double)used);
    if (keep >= used)
        return;
    qsort(s->keys, used, sizeof *s->keys, key_cmp);
    for (size_t k = keep; k < used; k++)
        s->use[s->position[s->keys[k] & 0xffffffffu]] = 0;
}

/* One pass of correspondences under T: pairs, filters, and the moments of
 * the pairs kept, summed over blocks in block order. Returns the pairs
 * kept. */
static size_t correspond(icp_state *s, const double T[16], int iteration, ptreg_moments *total,
                         double *sum_d2, ptreg_walk_stats *walk)
{
    long blocks = (long)s->blocks;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long b = 0; b < blocks; b++)
        correspond_block(s, T, (size_t)b);
    s->pass++;
    if (walk) {
        memset(walk, 0, sizeof *walk);
        for (size_t b = 0; b < s->blocks; b++)
            ptreg_walk_stats_merge(walk, &s->block_walk[b]);
    }
    if (s->filters) {
        const ptreg_icp_options *opt = s->opt;
        if (opt->filter_sigma > 0.0 && iteration >= opt->filter_start)
            sigma_filter(s, opt->filter_sigma);
        if (opt->trim < 1.0)
            trim_pairs(s, opt->trim);
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
        for (long b = 0; b < blocks; b++)
            block_moments(s, (size_t)b);
    }
    ptreg_moments_init(total, s->ref, s->ref);
    *sum_d2 = 0.0;
    for (size_t b = 0; b < s->blocks; b++) {
        ptreg_moments_merge(total, &s->block_moments[b]);
        *sum_d2 += s->block_sums[b];
    }
    return (size_t)total->w;
}

static ptreg_status cpu_correspond(void *ctx, const double T[16], int iteration, ptreg_moments *total,
                                   double *sum_d2, size_t *used, ptreg_walk_stats *walk, ptreg_error *err)
{
    (void)err;
    *used = correspond(ctx, T, iteration, total, sum_d2, walk);
    return PTREG_OK;
}

ptreg_status ptreg_icp_iterate(ptreg_icp_correspond_fn correspond_pass, void *ctx, size_t n,
                               const ptreg_icp_options *opt, double tol, ptreg_icp_result *r, ptreg_error *err)
{
    double *T = r->transformation;
    memcpy(T, opt->init, 16 * sizeof(double));
    for (int k = 0;; k++) {
        ptreg_moments mom;
        double sum_d2;
        size_t used;
        ptreg_status st = correspond_pass(ctx, T, k, &mom, &sum_d2, &used, r->walk ? &r->walk[k] : NULL, err);
        if (st)
            return st;
        double mse = used ? sum_d2 / (double)used : 0.0;
        r->mse[k] = mse;
        r->iterations = k;
        r->pairs = used;
        r->rmse = sqrt(mse);
        r->fitness = (double)used / (double)n;
        /* Besl's test on the size of the change: with rejection the MSE can
         * rise as pairs rejoin, which is not convergence. */
        if (k > 0 && tol > 0.0 && fabs(r->mse[k - 1] - mse) < tol) {
            r->converged = 1;
            r->stop_reason = PTREG_STOP_CONVERGED;
            return PTREG_OK;
        }
        if (k == opt->max_iter) {
            r->stop_reason = PTREG_STOP_MAX_ITERATIONS;
            return PTREG_OK;
        }
        if (used < 3) {
            r->stop_reason = PTREG_STOP_TOO_FEW_PAIRS;
            return PTREG_OK;
        }
        double dT[16];
        int degenerate;
        st = ptreg_horn_solve(&mom, dT, &degenerate, err);
        if (st)
            return st;
        if (degenerate) {
            r->stop_reason = PTREG_STOP_DEGENERATE;
            return PTREG_OK;
        }
        ptreg_transform_mul(dT, T, T);
    }
}

ptreg_status ptreg_icp_result_alloc(ptreg_icp_result *r, int max_iter, int walks, ptreg_error *err)
{
    r->mse = malloc(((size_t)max_iter + 1) * sizeof(double));
    if (walks)
        r->walk = calloc((size_t)max_iter + 1, sizeof *r->walk);
    if (!r->mse || (walks && !r->walk))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    return PTREG_OK;
}

double ptreg_icp_tolerance(const ptreg_icp_options *opt, double diag2)
{
    return opt->tol < 0.0 ? 1e-10 * diag2 : opt->tol;
}

/* The registration proper, on an index; t0 is when the caller's clouds were
 * in memory (time_ms counts from it). */
static ptreg_status icp_run(const float *source, size_t n, const ptreg_model_index *idx,
                            const ptreg_icp_options *opt, double t0, ptreg_icp_result *r, ptreg_error *err)
{
    icp_state s;
    ptreg_nn_method nn = ptreg_icp_choose_nn(opt, n, idx, 1, r);
    ptreg_status st = state_init(&s, source, n, idx, opt, nn, err);
    r->nn = nn;
    if (!st)
        st = ptreg_icp_result_alloc(r, opt->max_iter, s.graph != NULL, err);
    double diag2;
    ptreg_icp_target_extent(idx->points, idx->n, s.ref, &diag2);
    if (!st && nn == PTREG_NN_BRUTE) {
        double tb = ptreg_time_ms();
        st = ptreg_brute_target_init(&s.brute, idx->points, idx->n, err);
        r->build_ms += ptreg_time_ms() - tb;
    }
    if (!st)
        st = ptreg_icp_iterate(cpu_correspond, &s, s.n, opt, ptreg_icp_tolerance(opt, diag2), r, err);
    state_free(&s);
    if (st) {
        ptreg_icp_result_free(r);
        return st;
    }
    r->time_ms = ptreg_time_ms() - t0;
    return PTREG_OK;
}

/* What both entry points do first: an empty result, the options (the
 * defaults for NULL), the inputs checked. */
static ptreg_status begin(const float *source, size_t n, const float *target, size_t m,
                          const ptreg_icp_options **opt, ptreg_icp_options *defaults, ptreg_icp_result *r,
                          ptreg_error *err)
{
    memset(r, 0, sizeof *r);
    if (!*opt) {
        ptreg_icp_options_default(defaults);
        *opt = defaults;
    }
    return ptreg_icp_check_inputs(source, n, target, m, *opt, err);
}

/* The registration on an index, on the device the options name. */
static ptreg_status icp_on(const ptreg_device *device, const float *source, size_t n, const ptreg_model_index *idx,
                           const ptreg_icp_options *opt, double t0, ptreg_icp_result *r, ptreg_error *err)
{
    r->device = *device;
    if (device->backend == PTREG_BACKEND_CPU)
        return icp_run(source, n, idx, opt, t0, r, err);
    return ptreg_icp_device_once(device, source, n, idx, opt, t0, r, err);
}

ptreg_status ptreg_icp_indexed(const float *source, size_t n, const ptreg_model_index *target,
                               const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    ptreg_status st = begin(source, n, target->points, target->n, &opt_in, &def, r, err);
    st = st ? st : ptreg_device_resolve(&opt_in->device, PTREG_ICP_BACKENDS, "ICP", &on, err);
    return st ? st : icp_on(&on, source, n, target, opt_in, t0, r, err);
}

ptreg_status ptreg_icp(const float *source, size_t n, const float *target, size_t m,
                       const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    ptreg_status st = begin(source, n, target, m, &opt_in, &def, r, err);
    st = st ? st : ptreg_device_resolve(&opt_in->device, PTREG_ICP_BACKENDS, "ICP", &on, err);
    if (st)
        return st;
    /* Without a prebuilt index only the structures the method needs are
     * built, inside the timing: the tree always (Delaunay walks fall back on
     * it), the Delaunay graph (seconds for 40k points) only when asked. */
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    io.delaunay = ptreg_nn_method_is_delaunay(opt_in->nn);
    ptreg_model_index *idx;
    double tb = ptreg_time_ms();
    if ((st = ptreg_model_index_create(target, m, &io, &idx, err)))
        return st;
    r->build_ms = ptreg_time_ms() - tb;
    st = icp_on(&on, source, n, idx, opt_in, t0, r, err);
    ptreg_model_index_destroy(idx);
    return st;
}
