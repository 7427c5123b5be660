/* ICP's CPU engine: the correspondences of a pass found in fixed blocks of
 * the source (brute force, the k-d tree, the Delaunay walks), the filters
 * (max distance, the sigma filter, trimming) and the sums a step needs,
 * every sum added in block order, so the result has the same bits for any
 * thread count. The loop is icp_loop.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/searcher.h"
#include "ptreg/nn.h"
#include "reg/icp/icp_impl.h"
#include "reg/icp/icp_kernels.h"
#include "core/numeric.h"

/* Points per block: the unit of work a thread takes and of every
 * deterministic partial sum. */
#define SUM_BLOCK 1024

/* ---- the working state of one registration ---- */

typedef struct icp_state {
    float *source;   /* the caller's source in Morton order (see morton_order) */
    uint32_t *order; /* per position there: the caller's index */
    size_t n;
    const ptreg_icp_options *opt;
    nn_searcher *search;
    ptreg_walk_stats *block_walk; /* Delaunay methods: per block, this pass */
    int pass;                     /* correspondence passes made */
    float max_d2;                 /* pairs farther apart are not used */
    int filters;                  /* sigma filter or trimming: a second pass picks pairs */
    float *moved;                 /* source under the current transform */
    uint32_t *nearest;            /* its nearest target point (the searcher's answer), also
                           the next pass's seed */
    float *dist2;
    float *matched;       /* the nearest target point's coordinates */
    const float *normals; /* PLANE, GICP: the target's normals, in its order */
    float *owned_normals; /* them, when estimated here */
    float *matched_n;     /* PLANE, GICP: the nearest target point's normal */
    float *source_n;      /* GICP: the source's normals, in the source's order here */
    float *moved_n;       /* GICP: them under the current transform */
    float limit;          /* the k-d tree's search bound: max_d2 */
    int gauss_newton;     /* steps by Gauss-Newton (else Horn's) */
    unsigned char *use;   /* the pair survives the filters */
    uint64_t *keys;       /* trimming: (distance bits, the caller's index) */
    uint32_t *position;   /* trimming: per caller's index, its position here */
    double ref[3];        /* reference point of the moment sums */
    size_t blocks;
    ptreg_moments *block_moments;
    icp_normal_eq *block_eq;
    double *block_sums; /* per block: summed squared distances */
    size_t *block_used; /* per block: pairs used */
} icp_state;

static void state_free(icp_state *s)
{
    nn_searcher_destroy(s->search);
    free(s->owned_normals);
    free(s->block_walk);
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

/* The state of a registration whose source (in Morton order, icp_loop.c)
 * s->source, s->order and s->source_n hold already. */
static ptreg_status state_init(icp_state *s, const icp_setup *setup, ptreg_error *err)
{
    const ptreg_icp_options *opt = setup->opt;
    const size_t n = setup->n;
    s->n = n, s->opt = opt;
    s->max_d2 = setup->max_d2;
    s->limit = s->max_d2;
    s->gauss_newton = setup->gauss_newton;
    memcpy(s->ref, setup->model->ref, sizeof s->ref);
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
    s->block_eq = s->gauss_newton ? malloc(s->blocks * sizeof(icp_normal_eq)) : NULL;
    s->matched_n = opt->method != PTREG_ICP_POINT ? malloc(3 * n * sizeof(float)) : NULL;
    s->moved_n = icp_uses_source_normals(opt) ? malloc(3 * n * sizeof(float)) : NULL;
    s->block_sums = malloc(s->blocks * sizeof(double));
    s->block_used = malloc(s->blocks * sizeof(size_t));
    s->block_walk = nn_searcher_walks(s->search) ? malloc(s->blocks * sizeof(ptreg_walk_stats)) : NULL;
    if (!s->moved || !s->nearest || !s->dist2 || !s->matched || !s->use ||
        (opt->trim < 1.0 && (!s->keys || !s->position)) || !s->block_moments || !s->block_sums || !s->block_used ||
        (nn_searcher_walks(s->search) && !s->block_walk) || (s->gauss_newton && !s->block_eq) ||
        (opt->method != PTREG_ICP_POINT && !s->matched_n) || (icp_uses_source_normals(opt) && !s->moved_n))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++)
        s->nearest[i] = PTREG_NO_NEIGHBOR;
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
        const icp_gn_pairs pairs = {s->moved + 3 * i0,
                                    s->matched + 3 * i0,
                                    s->matched_n ? s->matched_n + 3 * i0 : NULL,
                                    s->moved_n ? s->moved_n + 3 * i0 : NULL,
                                    s->use + i0,
                                    cnt};
        icp_gn_block(s->opt, s->ref, &pairs, &s->block_eq[b], &s->block_sums[b], &s->block_used[b]);
        return;
    }
    pair_sums sums;
    icp_cpu_kernels()->pair_sums_range(s->moved + 3 * i0, s->matched + 3 * i0, s->dist2 + i0, s->use + i0, cnt, s->ref,
                                       &sums);
    ptreg_moments *mb = &s->block_moments[b];
    ptreg_moments_init(mb, s->ref, s->ref);
    mb->w = sums.w;
    memcpy(mb->sp, sums.sp, sizeof mb->sp);
    memcpy(mb->sq, sums.sq, sizeof mb->sq);
    memcpy(mb->spq, sums.spq, sizeof mb->spq);
    mb->spp = sums.spp;
    s->block_sums[b] = sums.d2sum;
    s->block_used[b] = (size_t)sums.w;
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
        else
            nn_searcher_point(s->search, nearest[i], matched + 3 * i);
        if (s->matched_n) {
            float *nm = s->matched_n + 3 * (i0 + i);
            if (use)
                memcpy(nm, s->normals + 3 * (size_t)nn_searcher_index(s->search, nearest[i]), 3 * sizeof(float));
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
    ptreg_transform_points(T, s->source + 3 * i0, s->moved + 3 * i0, cnt);
    if (s->moved_n)
        ptreg_transform_vectors(T, s->source_n + 3 * i0, s->moved_n + 3 * i0, cnt);
    ptreg_walk_stats *walk = s->block_walk ? &s->block_walk[b] : NULL;
    if (walk)
        memset(walk, 0, sizeof *walk);
    nn_searcher_nearest(s->search, s->moved, i0, cnt, s->pass > 0, s->limit, s->nearest, s->dist2, walk);
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
static void correspond(icp_state *s, const double T[16], int iteration, icp_pass *pass, ptreg_walk_stats *walk)
{
    long blocks = (long)s->blocks;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long b = 0; b < blocks; b++)
        correspond_block(s, T, (size_t)b);
    s->pass++;
    if (walk) {
        memset(walk, 0, sizeof *walk);
        for (size_t b = 0; b < s->blocks; b++)
            nn_walk_stats_merge(walk, &s->block_walk[b]);
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
            icp_normal_eq_merge(&pass->eq, &s->block_eq[b]);
        else
            ptreg_moments_merge(&pass->moments, &s->block_moments[b]);
        pass->sum_r2 += s->block_sums[b];
        pass->used += s->block_used[b];
    }
}

static ptreg_status cpu_correspond(void *ctx, const double T[16], int iteration, icp_pass *pass, ptreg_walk_stats *walk,
                                   ptreg_error *err)
{
    (void)err;
    correspond(ctx, T, iteration, pass, walk);
    return PTREG_OK;
}

/* The engine's set-up of a registration: the searcher for the method
 * chosen (r->build_ms counts it), the target's normals (PLANE, GICP,
 * SYMMETRIC), the source in Morton order, the working state. */
static ptreg_status cpu_begin(const icp_setup *setup, void **ctx, ptreg_icp_result *r, ptreg_error *err)
{
    icp_state *s = calloc(1, sizeof *s);
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    *ctx = s;
    const ptreg_model_index *idx = setup->model->index;
    const ptreg_icp_options *opt = setup->opt;
    const double tb = ptreg_time_ms();
    ptreg_status st = nn_searcher_create(idx, setup->nn, setup->n, &s->search, err);
    r->build_ms += ptreg_time_ms() - tb;
    size_t m;
    const float *target = ptreg_model_index_points(idx, &m);
    if (!st && opt->method != PTREG_ICP_POINT)
        st = icp_cloud_normals(target, m, nn_index_tree(idx), opt->target_normals, opt, &s->normals, &s->owned_normals,
                               r, err);
    icp_sorted_source sorted = {NULL, NULL, NULL};
    st = st ? st : icp_sort_source(setup->source, setup->n, opt, icp_uses_source_normals(opt), &sorted, r, err);
    /* the state owns them, whatever came of it (state_free) */
    s->source = sorted.xyz, s->order = sorted.order, s->source_n = sorted.normals;
    return st ? st : state_init(s, setup, err);
}

static void cpu_end(void *ctx)
{
    state_free(ctx);
    free(ctx);
}

/* Every method, filter and optimiser; the index's measured method was
 * timed here. */
const icp_engine icp_cpu_engine = {
    .base = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL},
    .measured_nn = 1,
    .begin = cpu_begin,
    .correspond = cpu_correspond,
    .end = cpu_end,
};

PTREG_ISA_TABLE(icp_cpu_kernel_table, icp_cpu_kernels, ICP_CPU_KERNELS)
