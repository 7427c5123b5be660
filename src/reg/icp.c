/* Rigid ICP: point-to-point (Besl & McKay 1992) with Horn's quaternion
 * solution, or Gauss-Newton steps (point-to-plane, robust kernels:
 * icp_gn.c), the sigma filter of the aerial-refuelling study and trimming.
 * See docs/ALGORITHMS.md. Every sum over points is taken in fixed blocks
 * added in block order, so the result has the same bits for any thread
 * count. */
#include "ptreg/icp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cpu_kernels.h"
#include "feat/neighborhood.h"
#include "ptreg/features.h"
#include "nn/index_impl.h"
#include "nn/kdtree_impl.h"
#include "nn/nn_dispatch.h"
#include "reg/icp_impl.h"
#include "reg/icp_kernels.h"
#include "ptreg/nn.h"

/* Points per block: the unit of work a thread takes and of every
 * deterministic partial sum. */
#define SUM_BLOCK 1024


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
    opt->method = PTREG_ICP_POINT;
    opt->kernel = PTREG_KERNEL_NONE;
    opt->kernel_scale = 1.0;
    opt->normal_k = 10;
    opt->gicp_epsilon = 1e-3;
}

void ptreg_icp_result_free(ptreg_icp_result *result)
{
    if (!result)
        return;
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
    const float *normals; /* PLANE, GICP: the target's normals, in its order */
    float *matched_n;   /* PLANE, GICP: the nearest target point's normal */
    float *source_n;    /* GICP: the source's normals, in the source's order here */
    float *moved_n;     /* GICP: them under the current transform */
    float limit;        /* the k-d tree's search bound: max_d2 */
    int gauss_newton;   /* steps by Gauss-Newton (else Horn's) */
    unsigned char *use; /* the pair survives the filters */
    uint64_t *keys;     /* trimming: (distance bits, the caller's index) */
    uint32_t *position; /* trimming: per caller's index, its position here */
    double ref[3];      /* reference point of the moment sums */
    size_t blocks;
    ptreg_moments *block_moments;
    ptreg_icp_normal_eq *block_eq;
    double *block_sums; /* per block: summed squared distances */
    size_t *block_used; /* per block: pairs used */
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
    ptreg_status st = ptreg_check_shape("ICP: the source", source, n, err);
    if (st || (st = ptreg_check_shape("ICP: the target", target, m, err)))
        return st;
    if (opt->max_iter < 0 || opt->max_iter > 1000000)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: max_iter %d is outside 0..1000000", opt->max_iter);
    if (!(opt->trim > 0.0 && opt->trim <= 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: trim fraction %g is outside (0, 1]", opt->trim);
    if (isnan(opt->tol) || isnan(opt->max_dist) || isnan(opt->filter_sigma) || opt->filter_start < 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: invalid tolerance, distance or filter option");
    if (!ptreg_transform_is_rigid(opt->init, PTREG_RIGID_TOL))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "ICP: the initial transform is not a rigid motion (ptreg_transform_make_rigid "
                               "repairs one within %g)",
                               PTREG_NEARLY_RIGID_TOL);
    if ((unsigned)opt->method > PTREG_ICP_SYMMETRIC || (unsigned)opt->kernel > PTREG_KERNEL_GM)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: unknown method %d or robust kernel %d", (int)opt->method,
                               (int)opt->kernel);
    if (opt->kernel != PTREG_KERNEL_NONE && !(opt->kernel_scale > 0.0 && isfinite(opt->kernel_scale)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: the %s kernel's scale %g is not a positive number",
                               ptreg_robust_kernel_name(opt->kernel), opt->kernel_scale);
    if (opt->method != PTREG_ICP_POINT && (opt->normal_k < 3 || opt->normal_k > 1000))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: normal_k %d is outside 3..1000", opt->normal_k);
    if (!(opt->normal_radius >= 0.0) || !isfinite(opt->normal_radius))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: normal_radius %g is not a distance", opt->normal_radius);
    if (opt->method == PTREG_ICP_GICP && !(opt->gicp_epsilon > 0.0 && opt->gicp_epsilon <= 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: gicp_epsilon %g is outside (0, 1]", opt->gicp_epsilon);
    if (!(opt->relative_fitness >= 0.0) || !(opt->relative_rmse >= 0.0) || !(opt->transformation_epsilon >= 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "ICP: relative fitness, relative RMSE and transformation epsilon must be >= 0");
    if (!(opt->lm_lambda >= 0.0 && opt->lm_lambda <= 1e6))
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP: lm_lambda %g is outside [0, 1e6]", opt->lm_lambda);
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
    free(s->matched_n);
    free(s->source_n);
    free(s->moved_n);
    free(s->block_eq);
    free(s->use);
    free(s->keys);
    free(s->position);
    free(s->block_moments);
    free(s->block_sums);
    free(s->block_used);
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

static int uses_source_normals(const ptreg_icp_options *opt)
{
    return opt->method == PTREG_ICP_GICP || opt->method == PTREG_ICP_SYMMETRIC;
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
    s->limit = s->max_d2;
    s->gauss_newton = ptreg_icp_uses_gauss_newton(opt);
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
    s->block_eq = s->gauss_newton ? malloc(s->blocks * sizeof(ptreg_icp_normal_eq)) : NULL;
    s->matched_n = opt->method != PTREG_ICP_POINT ? malloc(3 * n * sizeof(float)) : NULL;
    s->moved_n = uses_source_normals(opt) ? malloc(3 * n * sizeof(float)) : NULL;
    s->block_sums = malloc(s->blocks * sizeof(double));
    s->block_used = malloc(s->blocks * sizeof(size_t));
    s->block_walk = s->graph ? malloc(s->blocks * sizeof(ptreg_walk_stats)) : NULL;
    int seeded = nn == PTREG_NN_DELAUNAY_PNN || nn == PTREG_NN_DELAUNAY_PNNOPT;
    s->walk_memory = s->graph && seeded ? malloc(n * sizeof(ptreg_dt_memory)) : NULL;
    if (!s->moved || !s->nearest || !s->dist2 || !s->matched || !s->use ||
        (opt->trim < 1.0 && (!s->keys || !s->position)) ||
        !s->block_moments || !s->block_sums || !s->block_used ||
        (s->graph && (!s->block_walk || (seeded && !s->walk_memory))) ||
        (s->gauss_newton && !s->block_eq) || (opt->method != PTREG_ICP_POINT && !s->matched_n) ||
        (uses_source_normals(opt) && !s->moved_n))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++)
        s->nearest[i] = PTREG_NO_NEIGHBOR;
    for (size_t i = 0; s->walk_memory && i < n; i++)
        s->walk_memory[i].margin = -1.0f;
    for (size_t i = 0; s->position && i < n; i++)
        s->position[s->order[i]] = (uint32_t)i;
    return PTREG_OK;
}

/* What a step needs of block b's used pairs (moved source -> matched
 * target) and their summed squared residuals. Horn's: the moments, what
 * ptreg_moments_add with unit weights would sum, in the same order, by the
 * per-ISA kernel; Gauss-Newton's: the normal equations (icp_gn.c). */
static void block_sums(icp_state *s, size_t b)
{
    size_t i0 = b * SUM_BLOCK, cnt = s->n - i0 < SUM_BLOCK ? s->n - i0 : SUM_BLOCK;
    if (s->gauss_newton) {
        const ptreg_icp_gn_pairs pairs = {s->moved + 3 * i0, s->matched + 3 * i0,
                                          s->matched_n ? s->matched_n + 3 * i0 : NULL,
                                          s->moved_n ? s->moved_n + 3 * i0 : NULL, s->use + i0, cnt};
        ptreg_icp_gn_block(s->opt, s->ref, &pairs, &s->block_eq[b], &s->block_sums[b], &s->block_used[b]);
        return;
    }
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
    s->block_used[b] = (size_t)sums.w;
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

/* The target's index of an answer (a tree slot, or brute force's index). */
static uint32_t target_index(const icp_state *s, uint32_t answer)
{
    return s->nn == PTREG_NN_BRUTE ? answer : ptreg_kdtree_slot_index(s->tree, answer);
}

/* Each answered pair's target point (and normal), and whether it is used:
 * within max_dist. An unanswered query (none within the k-d tree's bound)
 * is matched to itself, unused. */
static void gather_matches(icp_state *s, size_t i0, size_t cnt)
{
    const float *moved = s->moved + 3 * i0, *d2 = s->dist2 + i0;
    const uint32_t *nearest = s->nearest + i0;
    float *matched = s->matched + 3 * i0;
    for (size_t i = 0; i < cnt; i++) {
        int use = nearest[i] != PTREG_NO_NEIGHBOR && d2[i] <= s->max_d2;
        if (!use)
            memcpy(matched + 3 * i, moved + 3 * i, 3 * sizeof(float));
        else if (s->nn == PTREG_NN_BRUTE)
            memcpy(matched + 3 * i, s->target + 3 * (size_t)nearest[i], 3 * sizeof(float));
        else
            ptreg_kdtree_slot_point(s->tree, nearest[i], matched + 3 * i);
        if (s->matched_n) {
            float *nm = s->matched_n + 3 * (i0 + i);
            if (use)
                memcpy(nm, s->normals + 3 * (size_t)target_index(s, nearest[i]), 3 * sizeof(float));
            else
                nm[0] = nm[1] = nm[2] = 0.0f;
        }
        s->use[i0 + i] = (unsigned char)use;
    }
}

/* Block b of one iteration: move the source points by T, find each one's
 * nearest target point, keep those within max_dist, and, when no filter
 * needs global statistics first, take the block's sums too. The tree is
 * searched in its own slot order, seeded by the last iteration's answer,
 * which after the first few iterations usually is the answer, and bounded
 * by max_dist, so a point far from the target costs little. */
static void correspond_block(icp_state *s, const double T[16], size_t b)
{
    size_t i0 = b * SUM_BLOCK, cnt = s->n - i0 < SUM_BLOCK ? s->n - i0 : SUM_BLOCK;
    float *moved = s->moved + 3 * i0, *d2 = s->dist2 + i0;
    uint32_t *nearest = s->nearest + i0;
    ptreg_transform_points(T, s->source + 3 * i0, moved, cnt);
    if (s->moved_n)
        ptreg_transform_vectors(T, s->source_n + 3 * i0, s->moved_n + 3 * i0, cnt);
    if (s->graph) {
        memset(&s->block_walk[b], 0, sizeof s->block_walk[b]);
        ptreg_walk_start start = ptreg_icp_walk_start(s->nn, s->pass);
        ptreg_cpu_kernels()->dt_nearest_range(s->tree, s->graph, moved, cnt, start, nearest, d2,
                                              s->walk_memory ? s->walk_memory + i0 : NULL, &s->block_walk[b]);
    } else if (s->nn == PTREG_NN_KDTREE) {
        ptreg_cpu_kernels()->kd_nearest_range(s->tree, moved, cnt, s->limit, nearest, nearest, d2);
    } else {
        ptreg_cpu_kernels()->brute_range(&s->brute, moved, cnt, nearest, d2);
    }
    gather_matches(s, i0, cnt);
    if (!s->filters)
        block_sums(s, b);
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

/* One pass of correspondences under T: pairs, filters, and the sums of
 * the pairs kept, over blocks in block order. */
static void correspond(icp_state *s, const double T[16], int iteration, ptreg_icp_pass *pass, ptreg_walk_stats *walk)
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
            block_sums(s, (size_t)b);
    }
    memset(pass, 0, sizeof *pass);
    ptreg_moments_init(&pass->moments, s->ref, s->ref);
    for (size_t b = 0; b < s->blocks; b++) {
        if (s->gauss_newton)
            ptreg_icp_normal_eq_merge(&pass->eq, &s->block_eq[b]);
        else
            ptreg_moments_merge(&pass->moments, &s->block_moments[b]);
        pass->sum_r2 += s->block_sums[b];
        pass->used += s->block_used[b];
    }
}

static ptreg_status cpu_correspond(void *ctx, const double T[16], int iteration, ptreg_icp_pass *pass,
                                   ptreg_walk_stats *walk, ptreg_error *err)
{
    (void)err;
    correspond(ctx, T, iteration, pass, walk);
    return PTREG_OK;
}

/* PCL's transformation epsilon: the step's squared translation and its
 * rotation's cosine, (trace R - 1) / 2, against eps (DefaultConvergenceCriteria
 * with the rotation threshold it derives from eps). */
static int small_step(const double dT[16], double eps)
{
    const double t2 = dT[3] * dT[3] + dT[7] * dT[7] + dT[11] * dT[11];
    const double cos_angle = 0.5 * (dT[0] + dT[5] + dT[10] - 1.0);
    return t2 <= eps && cos_angle >= 1.0 - eps;
}

/* Why the iterations stop after pass k (its MSE and fitness in r), or -1
 * to go on; small: the step before it was PCL's small step. */
static int stop_after_pass(const ptreg_icp_options *opt, double tol, const ptreg_icp_result *r, int k,
                           double last_fitness, double last_rmse, int small)
{
    if (small)
        return PTREG_STOP_SMALL_STEP;
    /* Besl's test on the size of the change: with rejection the MSE can
     * rise as pairs rejoin, which is not convergence. */
    if (k > 0 && tol > 0.0 && fabs(r->mse[k - 1] - r->mse[k]) < tol)
        return PTREG_STOP_CONVERGED;
    /* Open3D's: both changed by less than asked */
    if (k > 0 && opt->relative_fitness > 0.0 && opt->relative_rmse > 0.0 &&
        fabs(r->fitness - last_fitness) < opt->relative_fitness && fabs(r->rmse - last_rmse) < opt->relative_rmse)
        return PTREG_STOP_RELATIVE_CHANGE;
    if (k == opt->max_iter)
        return PTREG_STOP_MAX_ITERATIONS;
    if (r->pairs < (opt->method == PTREG_ICP_PLANE ? 6u : 3u)) /* a plane's pair fixes one direction */
        return PTREG_STOP_TOO_FEW_PAIRS;
    return -1;
}

/* The step from a pass: Horn's closed form, or Gauss-Newton's damped by
 * lambda; 0 when the pairs do not fix it. */
static ptreg_status step_of(const ptreg_icp_options *opt, const ptreg_icp_pass *pass, double lambda, double dT[16],
                            int *fixed, ptreg_error *err)
{
    if (ptreg_icp_uses_gauss_newton(opt)) {
        *fixed = ptreg_icp_gn_step(&pass->eq, pass->moments.ref_p, opt->method == PTREG_ICP_SYMMETRIC, lambda, dT);
        return PTREG_OK;
    }
    int degenerate;
    ptreg_status st = ptreg_horn_solve(&pass->moments, dT, &degenerate, err);
    *fixed = !degenerate;
    return st;
}

/* Levenberg-Marquardt's memory: the last accepted pass, where it was taken
 * and what it reported, and the damping. A pass whose mean cost (over the
 * pairs it kept: their sets differ) is above the accepted one's is taken
 * back; the next try starts from the accepted pass with 10x the damping. */
#define LM_LAMBDA_MIN 1e-12
#define LM_LAMBDA_MAX 1e12 /* 15 failed tries in a row from 1e-3: no damped step lowers the cost */

typedef struct lm_memory {
    int on, have;
    double lambda, T[16], mean_cost, fitness, rmse;
    size_t pairs;
    ptreg_icp_pass pass;
} lm_memory;

static double mean_cost(const ptreg_icp_pass *pass) { return pass->used ? pass->eq.cost / (double)pass->used : 0.0; }

/* Whether pass (at T, reported in r) is taken back; if not, it becomes the
 * accepted one and the damping drops. */
static int lm_rejects(lm_memory *lm, const ptreg_icp_pass *pass, const double T[16], const ptreg_icp_result *r)
{
    if (!lm->on)
        return 0;
    const double cost = mean_cost(pass);
    if (lm->have && !(cost <= lm->mean_cost)) {
        lm->lambda *= 10.0;
        return 1;
    }
    if (lm->have)
        lm->lambda = fmax(lm->lambda / 10.0, LM_LAMBDA_MIN);
    lm->have = 1;
    memcpy(lm->T, T, sizeof lm->T);
    lm->pass = *pass;
    lm->mean_cost = cost;
    lm->fitness = r->fitness, lm->rmse = r->rmse, lm->pairs = r->pairs;
    return 0;
}

/* Back to the accepted pass: its transform and what it reported. */
static void lm_restore(const lm_memory *lm, double T[16], ptreg_icp_result *r)
{
    memcpy(T, lm->T, 16 * sizeof(double));
    r->fitness = lm->fitness, r->rmse = lm->rmse, r->pairs = lm->pairs;
}

ptreg_status ptreg_icp_iterate(ptreg_icp_correspond_fn correspond_pass, void *ctx, size_t n,
                               const ptreg_icp_options *opt, double tol, ptreg_icp_result *r, ptreg_error *err)
{
    double *T = r->transformation;
    memcpy(T, opt->init, 16 * sizeof(double));
    int small = 0;
    lm_memory lm = {.on = opt->lm_lambda > 0.0, .lambda = opt->lm_lambda};
    for (int k = 0;; k++) {
        ptreg_icp_pass pass;
        ptreg_status st = correspond_pass(ctx, T, k, &pass, r->walk ? &r->walk[k] : NULL, err);
        if (st)
            return st;
        const double last_fitness = r->fitness, last_rmse = r->rmse;
        double mse = pass.used ? pass.sum_r2 / (double)pass.used : 0.0;
        r->mse[k] = mse;
        r->iterations = k;
        r->pairs = pass.used;
        r->rmse = sqrt(mse);
        r->fitness = (double)pass.used / (double)n;
        if (opt->progress.fn)
            opt->progress.fn(opt->progress.ctx, k, opt->max_iter, mse);
        const ptreg_icp_pass *from = &pass;
        if (lm_rejects(&lm, &pass, T, r)) {
            lm_restore(&lm, T, r);
            if (k == opt->max_iter || lm.lambda > LM_LAMBDA_MAX) {
                r->stop_reason = k == opt->max_iter ? PTREG_STOP_MAX_ITERATIONS : PTREG_STOP_CONVERGED;
                r->converged = r->stop_reason == PTREG_STOP_CONVERGED;
                return PTREG_OK;
            }
            from = &lm.pass;
        } else {
            const int stop = stop_after_pass(opt, tol, r, k, last_fitness, last_rmse, small);
            if (stop >= 0) {
                r->stop_reason = (ptreg_stop_reason)stop;
                r->converged = stop == PTREG_STOP_CONVERGED || stop == PTREG_STOP_RELATIVE_CHANGE ||
                               stop == PTREG_STOP_SMALL_STEP;
                return PTREG_OK;
            }
        }
        double dT[16];
        int fixed;
        if ((st = step_of(opt, from, lm.lambda, dT, &fixed, err)))
            return st;
        if (!fixed) {
            r->stop_reason = PTREG_STOP_DEGENERATE;
            return PTREG_OK;
        }
        ptreg_transform_mul(dT, T, T);
        /* one more pass measures the pairs at the final transform */
        small = opt->transformation_epsilon > 0.0 && small_step(dT, opt->transformation_epsilon);
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

/* A cloud's normals: the caller's (given), or estimated from normal_k
 * neighbours into *owned (build_ms counts them), on tree when one was built
 * on xyz already. */
static ptreg_status cloud_normals(const float *xyz, size_t n, const ptreg_kdtree *tree, const float *given,
                                  const ptreg_icp_options *opt, const float **normals, float **owned,
                                  ptreg_icp_result *r, ptreg_error *err)
{
    *normals = given;
    *owned = NULL;
    if (given)
        return PTREG_OK;
    if (!(*owned = malloc(3 * n * sizeof(float))))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu normals", n);
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){(size_t)opt->normal_k, opt->normal_radius};
    double tb = ptreg_time_ms();
    ptreg_status st = tree ? feat_normals_on_tree(tree, xyz, n, &no, *owned, NULL, NULL, err)
                           : ptreg_normals(xyz, n, &no, *owned, NULL, NULL, err);
    r->build_ms += ptreg_time_ms() - tb;
    *normals = *owned;
    return st;
}

/* The target's normals, and for GICP and SYMMETRIC the source's in the
 * source's order here; *owned: what was estimated. */
static ptreg_status state_normals(icp_state *s, const float *source, const ptreg_model_index *idx,
                                  const ptreg_icp_options *opt, float **owned, ptreg_icp_result *r, ptreg_error *err)
{
    if (opt->method == PTREG_ICP_POINT)
        return PTREG_OK;
    ptreg_status st =
        cloud_normals(idx->points, idx->n, idx->tree, opt->target_normals, opt, &s->normals, &owned[0], r, err);
    if (st || !uses_source_normals(opt))
        return st;
    const float *src_n;
    st = cloud_normals(source, s->n, NULL, opt->source_normals, opt, &src_n, &owned[1], r, err);
    if (!st && !(s->source_n = malloc(3 * s->n * sizeof(float))))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu normals", s->n);
    for (size_t i = 0; !st && i < s->n; i++)
        memcpy(s->source_n + 3 * i, src_n + 3 * (size_t)s->order[i], 3 * sizeof(float));
    return st;
}

/* The registration proper, on an index; t0 is when the caller's clouds were
 * in memory (time_ms counts from it). */
static ptreg_status icp_run(const float *source, size_t n, const ptreg_model_index *idx,
                            const ptreg_icp_options *opt, double t0, ptreg_icp_result *r, ptreg_error *err)
{
    icp_state s;
    ptreg_nn_method nn = ptreg_icp_choose_nn(opt, n, idx, 1, r);
    float *owned_normals[2] = {NULL, NULL};
    ptreg_status st = state_init(&s, source, n, idx, opt, nn, err);
    st = st ? st : state_normals(&s, source, idx, opt, owned_normals, r, err);
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
    free(owned_normals[0]), free(owned_normals[1]);
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

ptreg_status ptreg_icp_resolve_device(const ptreg_icp_options *opt, ptreg_device *on, ptreg_error *err)
{
    ptreg_status st = ptreg_device_resolve(&opt->device, PTREG_ICP_BACKENDS, "ICP", on, err);
    if (st || on->backend == PTREG_BACKEND_CPU || !ptreg_icp_uses_gauss_newton(opt))
        return st;
    if (opt->device.backend == PTREG_BACKEND_AUTO) {
        *on = (ptreg_device){PTREG_BACKEND_CPU, 0};
        return PTREG_OK;
    }
    return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                           "ICP on a GPU: point-to-point without a robust kernel only (%s%s%s asked for); use "
                           "the CPU",
                           ptreg_icp_method_name(opt->method), opt->kernel ? " with the kernel " : "",
                           opt->kernel ? ptreg_robust_kernel_name(opt->kernel) : "");
}

ptreg_status ptreg_icp_indexed(const float *source, size_t n, const ptreg_model_index *target,
                               const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    ptreg_status st = begin(source, n, target->points, target->n, &opt_in, &def, r, err);
    st = st ? st : ptreg_icp_resolve_device(opt_in, &on, err);
    return st ? st : icp_on(&on, source, n, target, opt_in, t0, r, err);
}

ptreg_status ptreg_icp(const float *source, size_t n, const float *target, size_t m,
                       const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    ptreg_status st = begin(source, n, target, m, &opt_in, &def, r, err);
    st = st ? st : ptreg_icp_resolve_device(opt_in, &on, err);
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
