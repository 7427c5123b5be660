/* The CPU's searcher (searcher.h): each method's kernel through the
 * per-ISA table (nn_kernels.h), on the model index's tree and graph; and
 * the public nearest-neighbor queries of an index, made with it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/index_impl.h"
#include "nn/kdtree_query.h"
#include "nn/nn_dispatch.h"
#include "nn/searcher.h"

struct nn_searcher {
    ptreg_nn_method method;
    const ptreg_kdtree *tree;
    const delaunay_graph *graph; /* the walks' */
    const float *points;         /* brute force's answers index them */
    brute_target brute;
    dt_memory *memory; /* seeded walks: each query's certificate */
};

int nn_walk_start(ptreg_nn_method method, int seeded)
{
    switch (method) {
    case PTREG_NN_DELAUNAY_KDANN: return PTREG_WALK_KDANN;
    case PTREG_NN_DELAUNAY_PNN: return PTREG_WALK_SEED; /* without a seed: the fixed start */
    case PTREG_NN_DELAUNAY_PNNOPT: return seeded ? PTREG_WALK_SEED : PTREG_WALK_KDANN;
    default: return PTREG_WALK_FIXED;
    }
}

static int seeded_walk(ptreg_nn_method m) { return m == PTREG_NN_DELAUNAY_PNN || m == PTREG_NN_DELAUNAY_PNNOPT; }

static ptreg_status check_method(const ptreg_model_index *idx, ptreg_nn_method method, ptreg_error *err)
{
    if (method != PTREG_NN_BRUTE && method != PTREG_NN_KDTREE && !ptreg_nn_method_is_delaunay(method))
        return ptreg_error_set(err, PTREG_ERR_ARG, "nearest neighbors: unknown method %d", (int)method);
    if (ptreg_nn_method_is_delaunay(method) && !idx->graph)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "nearest neighbors: the index has no Delaunay graph (%s)",
                               idx->note);
    return PTREG_OK;
}

static ptreg_status remember_walks(nn_searcher *s, size_t remembered, ptreg_error *err)
{
    if (!remembered || !seeded_walk(s->method))
        return PTREG_OK;
    if (!(s->memory = malloc(remembered * sizeof *s->memory)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "nearest neighbors: out of memory for %zu queries", remembered);
    for (size_t i = 0; i < remembered; i++)
        s->memory[i].margin = -1.0f; /* nothing to reuse yet */
    return PTREG_OK;
}

ptreg_status nn_searcher_create(const ptreg_model_index *idx, ptreg_nn_method method, size_t remembered,
                                nn_searcher **out, ptreg_error *err)
{
    *out = NULL;
    method = method == PTREG_NN_AUTO ? PTREG_NN_KDTREE : method;
    ptreg_status st = check_method(idx, method, err);
    if (st)
        return st;
    nn_searcher *s = calloc(1, sizeof *s);
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "nearest neighbors: out of memory");
    s->method = method, s->tree = idx->tree, s->points = idx->points;
    s->graph = ptreg_nn_method_is_delaunay(method) ? idx->graph : NULL;
    st = method == PTREG_NN_BRUTE ? brute_target_init(&s->brute, idx->points, idx->n, err) : PTREG_OK;
    st = st ? st : remember_walks(s, remembered, err);
    if (st) {
        nn_searcher_destroy(s);
        return st;
    }
    *out = s;
    return PTREG_OK;
}

void nn_searcher_destroy(nn_searcher *s)
{
    if (!s)
        return;
    brute_target_free(&s->brute);
    free(s->memory);
    free(s);
}

void nn_searcher_nearest(const nn_searcher *s, const float *q, size_t i0, size_t cnt, int seeded, float limit,
                         uint32_t *answer, float *d2, ptreg_walk_stats *walk)
{
    const nn_cpu_kernel_table *k = nn_cpu_kernels();
    q += 3 * i0, answer += i0, d2 += i0;
    if (s->graph) {
        ptreg_walk_stats unused;
        k->dt_nearest_range(s->tree, s->graph, q, cnt, (walk_start)nn_walk_start(s->method, seeded), answer, d2,
                            s->memory ? s->memory + i0 : NULL, walk ? walk : &unused);
    } else if (s->method == PTREG_NN_KDTREE) {
        k->kd_nearest_range(s->tree, q, cnt, limit, answer, answer, d2);
    } else {
        k->brute_range(&s->brute, q, cnt, answer, d2);
    }
}

uint32_t nn_searcher_index(const nn_searcher *s, uint32_t answer)
{
    return s->method == PTREG_NN_BRUTE ? answer : kdtree_slot_index(s->tree, answer);
}

void nn_searcher_point(const nn_searcher *s, uint32_t answer, float xyz[3])
{
    if (s->method == PTREG_NN_BRUTE)
        memcpy(xyz, s->points + 3 * (size_t)answer, 3 * sizeof(float));
    else
        kdtree_slot_point(s->tree, answer, xyz);
}

uint32_t nn_searcher_seed(const nn_searcher *s, uint32_t index)
{
    if (s->method == PTREG_NN_BRUTE || index >= s->tree->n)
        return PTREG_NO_NEIGHBOR;
    return s->tree->slot[index];
}

void nn_walk_stats_merge(ptreg_walk_stats *a, const ptreg_walk_stats *b)
{
    a->queries += b->queries;
    a->steps += b->steps;
    a->max_steps = b->max_steps > a->max_steps ? b->max_steps : a->max_steps;
    a->fallbacks += b->fallbacks;
    a->kept += b->kept;
    for (int i = 0; i < PTREG_WALK_HISTOGRAM; i++)
        a->histogram[i] += b->histogram[i];
}

int nn_searcher_walks(const nn_searcher *s) { return s->graph != NULL; }

const ptreg_kdtree *nn_index_tree(const ptreg_model_index *idx) { return idx->tree; }

/* Queries per range: the unit a thread takes, and so (a k-d tree search
 * being seeded by the previous answer in its range) part of the bits. */
#define NEAREST_CHUNK 512

ptreg_status ptreg_model_index_nearest(const ptreg_model_index *idx, const float *queries, size_t nq,
                                       ptreg_nn_method method, const uint32_t *seed, uint32_t *nearest, float *dist2,
                                       ptreg_walk_stats *stats, ptreg_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    nn_searcher *s;
    ptreg_status st = nn_searcher_create(idx, method, 0, &s, err);
    const long chunks = (long)((nq + NEAREST_CHUNK - 1) / NEAREST_CHUNK);
    ptreg_walk_stats *tally = st ? NULL : calloc(chunks ? (size_t)chunks : 1, sizeof *tally);
    if (!st && !tally)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "nearest neighbors: out of memory");
    if (st) {
        nn_searcher_destroy(s);
        return st;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long c = 0; c < chunks; c++) {
        const size_t i0 = (size_t)c * NEAREST_CHUNK, cnt = nq - i0 < NEAREST_CHUNK ? nq - i0 : NEAREST_CHUNK;
        for (size_t i = i0; i < i0 + cnt; i++)
            nearest[i] = seed ? nn_searcher_seed(s, seed[i]) : PTREG_NO_NEIGHBOR;
        nn_searcher_nearest(s, queries, i0, cnt, seed != NULL, INFINITY, nearest, dist2, &tally[c]);
        for (size_t i = i0; i < i0 + cnt; i++)
            nearest[i] = nearest[i] == PTREG_NO_NEIGHBOR ? PTREG_NO_NEIGHBOR : nn_searcher_index(s, nearest[i]);
    }
    for (long c = 0; stats && c < chunks; c++)
        nn_walk_stats_merge(stats, &tally[c]);
    free(tally);
    nn_searcher_destroy(s);
    return PTREG_OK;
}
