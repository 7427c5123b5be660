#include "feat/neighborhood.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/counts.h"
#include "core/large_alloc.h"
#include "nn/kdtree_query.h"

ptreg_status feat_check_neighborhood(const ptreg_neighborhood *nb, ptreg_error *err)
{
    if (nb->k == 0 && !(nb->radius > 0 && isfinite(nb->radius)))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "neighborhood: k must be > 0 or the radius > 0 (got k %zu, "
                               "radius %g)",
                               nb->k, nb->radius);
    if (nb->k > 0 && !(nb->radius >= 0 && isfinite(nb->radius)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "neighborhood: the radius %g is not finite and >= 0", nb->radius);
    if (nb->k > ((size_t)1 << 20))
        return ptreg_error_set(err, PTREG_ERR_ARG, "neighborhood: k %zu is too large", nb->k);
    return PTREG_OK;
}

/* The squared radius as PCL hands it to FLANN: r * r in double, then float. */
static float strict_radius2(double radius) { return (float)(radius * radius); }

/* A radius search that finds every point the strict test keeps (the tree's
 * own test is d <= r^2 in float, with the radius one float step out), then
 * drops those at or beyond r^2, keeping the order. */
static ptreg_status radius_strict(const ptreg_kdtree *tree, const float q[3], double radius, feat_order order,
                                  ptreg_neighbors *out, ptreg_error *err)
{
    const float reach = nextafterf((float)radius, INFINITY);
    if (kd_radius_within(tree, q, reach * reach, order == FEAT_SORTED, out)) {
        out->count = 0;
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a radius neighborhood");
    }
    const float r2 = strict_radius2(radius);
    size_t kept = 0;
    for (size_t j = 0; j < out->count; j++)
        if (out->dist2[j] < r2) {
            out->index[kept] = out->index[j];
            out->dist2[kept++] = out->dist2[j];
        }
    out->count = kept;
    return PTREG_OK;
}

/* A sorted list's length once the entries at or beyond the radius (the
 * strict test) are cut: Open3D's hybrid search keeps the k nearest that
 * are strictly within it. */
static size_t within_radius(const float *dist2, size_t count, double radius)
{
    if (!(radius > 0))
        return count;
    const float r2 = strict_radius2(radius);
    while (count > 0 && !(dist2[count - 1] < r2))
        count--;
    return count;
}

ptreg_status feat_neighbors(const ptreg_kdtree *tree, const ptreg_neighborhood *nb, feat_order order, const float q[3],
                            ptreg_neighbors *out, ptreg_error *err)
{
    if (nb->k == 0)
        return radius_strict(tree, q, nb->radius, order, out, err);
    if (kd_neighbors_reserve(out, nb->k))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu neighbors", nb->k);
    out->count = within_radius(out->dist2, ptreg_kdtree_knn(tree, q, nb->k, out->index, out->dist2), nb->radius);
    return PTREG_OK;
}

/* ---- the table ------------------------------------------------------------ */

/* Queries run in blocks of the tree's slots: nearby points, one after the
 * other, so each k-NN search starts bounded by its predecessor's answer. */
#define TABLE_BLOCK_SLOTS 256

/* The farthest of a seed's neighbors from q: at least kk points (those
 * neighbors) lie within it, so it bounds q's k-th nearest. */
static float bound_from(const float *xyz, const float q[3], const feat_list *seed)
{
    float limit = 0;
    for (size_t j = 0; j < seed->count; j++) {
        const float *p = xyz + 3 * (size_t)seed->index[j];
        float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        limit = d > limit ? d : limit;
    }
    return limit;
}

/* Of the points already done in this block, the one nearest q among the
 * last four (q's chunk-mates): its neighbors give the tightest bound of
 * those cheaply at hand. Looking at the last 16 found a nearer seed too
 * rarely to pay for the distances: the bunny's normals ran 6% slower. */
#define SEED_CANDIDATES 4

static const feat_list *nearest_done(const float *xyz, const float q[3], const uint32_t *done, size_t count,
                                     const feat_list *list)
{
    const feat_list *best = NULL;
    float best_d = INFINITY;
    for (size_t j = count > SEED_CANDIDATES ? count - SEED_CANDIDATES : 0; j < count; j++) {
        const float *p = xyz + 3 * (size_t)done[j];
        float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        if (d < best_d) {
            best_d = d;
            best = &list[done[j]];
        }
    }
    return best;
}

static void knn_block(const ptreg_kdtree *t, const float *xyz, size_t kk, double radius, size_t block, uint32_t *index,
                      float *dist2, feat_list *list)
{
    size_t end = (block + 1) * TABLE_BLOCK_SLOTS, slots = kdtree_slot_count(t), done_count = 0;
    uint32_t done[TABLE_BLOCK_SLOTS];
    for (size_t s = block * TABLE_BLOCK_SLOTS; s < end && s < slots; s++) {
        uint32_t i = kdtree_slot_index(t, s);
        if (i == PTREG_NO_NEIGHBOR)
            continue;
        const float *q = xyz + 3 * (size_t)i;
        const feat_list *seed = nearest_done(xyz, q, done, done_count, list);
        /* a seed cut by the radius holds fewer than kk points: no bound */
        float limit = seed && seed->count == kk ? bound_from(xyz, q, seed) : INFINITY;
        if (radius > 0) { /* the hybrid search keeps nothing beyond the radius */
            const float reach = nextafterf((float)radius, INFINITY);
            limit = fminf(limit, reach * reach);
        }
        feat_list *l = &list[i];
        const size_t at = count_slot(i, kk, 0);
        l->index = index + at;
        l->dist2 = dist2 + at;
        l->count = within_radius(dist2 + at, kd_knn_within(t, q, kk, limit, index + at, dist2 + at), radius);
        done[done_count++] = i;
    }
}

static ptreg_status build_knn(const ptreg_kdtree *t, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                              feat_table *table)
{
    const size_t k = nb->k;
    size_t kk = k < n ? k : n, bytes;
    /* n x k entries pass 2^32 at 100 M points and k 43: counted in size_t,
     * and a table no size_t can hold is refused as memory it cannot have */
    if (!count_mul3(n, kk, sizeof(uint32_t), &bytes))
        return PTREG_ERR_NOMEM;
    uint32_t *index = core_alloc_large(bytes);
    float *dist2 = core_alloc_large(bytes);
    table->blocks[table->block_count++] = index;
    table->blocks[table->block_count++] = dist2;
    if (!index || !dist2)
        return PTREG_ERR_NOMEM;
    long blocks = (long)((kdtree_slot_count(t) + TABLE_BLOCK_SLOTS - 1) / TABLE_BLOCK_SLOTS);
#pragma omp parallel for schedule(dynamic, 4) num_threads(ptreg_get_num_threads())
    for (long b = 0; b < blocks; b++)
        knn_block(t, xyz, kk, nb->radius, (size_t)b, index, dist2, table->list);
    return PTREG_OK;
}

typedef struct table_job {
    const ptreg_kdtree *tree;
    const float *xyz;
    size_t n;
    const ptreg_neighborhood *nb;
    int reference; /* points in index order, k-NN unbounded */
    feat_order order;
} table_job;

/* The point at position s of the query order, or PTREG_NO_NEIGHBOR. */
static uint32_t point_at(const table_job *job, size_t s)
{
    if (job->reference)
        return s < job->n ? (uint32_t)s : PTREG_NO_NEIGHBOR;
    return s < kdtree_slot_count(job->tree) ? kdtree_slot_index(job->tree, s) : PTREG_NO_NEIGHBOR;
}

static size_t positions(const table_job *job) { return job->reference ? job->n : kdtree_slot_count(job->tree); }

/* One block's lists by independent searches, appended to one buffer the
 * block owns (storage[0], storage[1]). */
static int search_block(const table_job *job, size_t block, ptreg_neighbors *nb, void **storage, feat_list *list)
{
    size_t first = block * TABLE_BLOCK_SLOTS, used = 0, cap = 0, start[TABLE_BLOCK_SLOTS];
    uint32_t *index = NULL;
    float *dist2 = NULL;
    for (size_t s = first; s < first + TABLE_BLOCK_SLOTS; s++) {
        uint32_t i = point_at(job, s);
        start[s - first] = used;
        if (i == PTREG_NO_NEIGHBOR)
            continue;
        if (feat_neighbors(job->tree, job->nb, job->order, job->xyz + 3 * (size_t)i, nb, NULL))
            return 0;
        if (used + nb->count > cap) {
            cap = 2 * (used + nb->count) + 64;
            uint32_t *ni = realloc(index, cap * sizeof *ni);
            if (ni)
                index = ni;
            float *nd = realloc(dist2, cap * sizeof *nd);
            if (nd)
                dist2 = nd;
            storage[0] = index;
            storage[1] = dist2;
            if (!ni || !nd)
                return 0;
        }
        memcpy(index + used, nb->index, nb->count * sizeof *index);
        memcpy(dist2 + used, nb->dist2, nb->count * sizeof *dist2);
        list[i].count = nb->count;
        used += nb->count;
    }
    for (size_t s = first; s < first + TABLE_BLOCK_SLOTS; s++) {
        uint32_t i = point_at(job, s);
        if (i != PTREG_NO_NEIGHBOR) {
            list[i].index = index + start[s - first];
            list[i].dist2 = dist2 + start[s - first];
        }
    }
    return 1;
}

static ptreg_status build_by_search(const table_job *job, feat_table *table)
{
    long blocks = (long)((positions(job) + TABLE_BLOCK_SLOTS - 1) / TABLE_BLOCK_SLOTS);
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed)
    {
        ptreg_neighbors nb = {0};
#pragma omp for schedule(dynamic, 4)
        for (long b = 0; b < blocks; b++)
            if (!failed && !search_block(job, (size_t)b, &nb, table->blocks + 2 * b, table->list))
                failed = 1;
        ptreg_neighbors_free(&nb);
    }
    return failed ? PTREG_ERR_NOMEM : PTREG_OK;
}

ptreg_status feat_table_build(const ptreg_kdtree *tree, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                              int reference, feat_order order, feat_table *table, ptreg_error *err)
{
    memset(table, 0, sizeof *table);
    ptreg_status s = feat_check_neighborhood(nb, err);
    if (s)
        return s;
    table_job job = {tree, xyz, n, nb, reference, order};
    int bounded_knn = nb->k && !reference;
    size_t blocks = bounded_knn ? 2 : 2 * ((positions(&job) + TABLE_BLOCK_SLOTS - 1) / TABLE_BLOCK_SLOTS);
    table->n = n;
    table->list = calloc(n, sizeof *table->list);
    table->blocks = calloc(blocks, sizeof *table->blocks);
    table->block_count = bounded_knn ? 0 : blocks;
    s = table->list && table->blocks ? PTREG_OK : PTREG_ERR_NOMEM;
    if (!s)
        s = bounded_knn ? build_knn(tree, xyz, n, nb, table) : build_by_search(&job, table);
    if (s) {
        feat_table_free(table);
        return ptreg_error_set(err, s, "out of memory for the neighborhoods of %zu points", n);
    }
    for (size_t i = 0; i < n; i++)
        table->max_count = table->list[i].count > table->max_count ? table->list[i].count : table->max_count;
    return PTREG_OK;
}

void feat_table_free(feat_table *table)
{
    for (size_t b = 0; table->blocks && b < table->block_count; b++)
        free(table->blocks[b]);
    free(table->blocks);
    free(table->list);
    memset(table, 0, sizeof *table);
}
