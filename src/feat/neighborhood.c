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

/* Of the points done, the one nearest q. */
static const feat_list *nearest_done(const float *xyz, const float q[3], const uint32_t *done, size_t count,
                                     const feat_list *list)
{
    const feat_list *best = NULL;
    float best_d = INFINITY;
    for (size_t j = 0; j < count; j++) {
        const float *p = xyz + 3 * (size_t)done[j];
        float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        if (d < best_d) {
            best_d = d;
            best = &list[done[j]];
        }
    }
    return best;
}

/* Queries go in groups of a chunk's slots (a compact cluster of the tree's
 * order). The group's chunks are gathered by one walk of the tree, within
 * the largest of its points' guesses from the previous group's lists
 * (kd_group_gather, kd_group_knn). A block's first group, which has no
 * previous one, searches point by point, each bounded by its nearest
 * chunk-mate already done (the last few: the tightest bound cheaply at
 * hand). */
#define GROUP_SLOTS 16
#define MATE_CANDIDATES 4

typedef struct knn_job {
    const ptreg_kdtree *tree;
    const float *xyz;
    size_t kk;
    float cap; /* the hybrid search's squared radius (a float step out), or infinity */
    double radius;
    uint32_t *index;
    float *dist2;
    feat_list *list;
} knn_job;

/* A k-NN bound from a seed's list: its farthest point from q, cut to the
 * cap. A seed cut by the radius holds fewer than kk points: no bound. */
static float knn_limit(const knn_job *job, const float q[3], const feat_list *seed)
{
    float limit = seed && seed->count == job->kk ? bound_from(job->xyz, q, seed) : INFINITY;
    return fminf(limit, job->cap);
}

/* q's k-th nearest, guessed from the nearest of the points `near` (done;
 * kth: their k-th nearest, infinity where the radius cut the list):
 * (|q - s| + s's k-th distance)^2 by the triangle inequality, a little
 * wider for rounding (a guess short of it costs only a single search), cut
 * to the cap. */
static float knn_guess(const knn_job *job, const float q[3], const uint32_t *near, const float *kth, size_t count)
{
    float best_d = INFINITY, best_kth = INFINITY;
    for (size_t j = 0; j < count; j++) {
        const float *p = job->xyz + 3 * (size_t)near[j];
        const float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        best_kth = d < best_d ? kth[j] : best_kth;
        best_d = d < best_d ? d : best_d;
    }
    const float reach = sqrtf(best_d) + sqrtf(best_kth);
    return fminf(reach * reach * 1.001f, job->cap);
}

/* A group's points and their k-th nearest distances (infinity where the
 * radius cut the list). */
typedef struct knn_done {
    uint32_t point[GROUP_SLOTS];
    float kth[GROUP_SLOTS];
    size_t count;
} knn_done;

/* The real points of the group of slots from s0; their count. */
static size_t group_points(const knn_job *job, size_t s0, size_t end, uint32_t *point)
{
    size_t n = 0;
    for (size_t s = s0; s < s0 + GROUP_SLOTS && s < end; s++) {
        const uint32_t i = kdtree_slot_index(job->tree, s);
        if (i != PTREG_NO_NEIGHBOR)
            point[n++] = i;
    }
    return n;
}

/* The box of n points. */
static void points_box(const float *xyz, const uint32_t *point, size_t n, float lo[3], float hi[3])
{
    for (int a = 0; a < 3; a++)
        lo[a] = INFINITY, hi[a] = -INFINITY;
    for (size_t j = 0; j < n; j++)
        for (int a = 0; a < 3; a++) {
            const float v = xyz[3 * (size_t)point[j] + a];
            lo[a] = fminf(lo[a], v);
            hi[a] = fmaxf(hi[a], v);
        }
}

/* A reach for the whole group from the previous one's lists: its largest
 * k-th distance plus the farthest two points of the two groups can be
 * apart (the triangle inequality's bound for every point of the group,
 * widened a little for rounding), cut to the cap. */
static float group_reach(const knn_job *job, const float lo[3], const float hi[3], const knn_done *prev)
{
    float plo[3], phi[3], kth = 0, span = 0;
    points_box(job->xyz, prev->point, prev->count, plo, phi);
    for (size_t j = 0; j < prev->count; j++)
        kth = fmaxf(kth, prev->kth[j]);
    for (int a = 0; a < 3; a++) {
        const float far = fmaxf(hi[a] - plo[a], phi[a] - lo[a]);
        span += far * far;
    }
    const float reach = sqrtf(span) + sqrtf(kth);
    return fminf(reach * reach * 1.001f, job->cap);
}

/* Searches the group's points (done->point, done->count) into the table;
 * their k-th distances go to done->kth. */
static void knn_group(const knn_job *job, knn_done *done, const knn_done *prev)
{
    const uint32_t *point = done->point;
    const size_t n = done->count;
    kd_group g;
    float lo[3], hi[3];
    points_box(job->xyz, point, n, lo, hi);
    const float reach = prev->count ? group_reach(job, lo, hi, prev) : INFINITY;
    const int gathered = n && kd_group_gather(job->tree, lo, hi, reach, &g);
    for (size_t j = 0; j < n; j++) {
        const uint32_t i = point[j];
        const float *q = job->xyz + 3 * (size_t)i;
        const size_t at = count_slot(i, job->kk, 0), mates = j < MATE_CANDIDATES ? j : MATE_CANDIDATES;
        uint32_t *index = job->index + at;
        float *dist2 = job->dist2 + at;
        size_t found;
        if (gathered) {
            /* the first point's guess from the previous group, the others' from their chunk-mates */
            const float guess = j ? knn_guess(job, q, point + j - mates, done->kth + j - mates, mates)
                                  : knn_guess(job, q, prev->point, prev->kth, prev->count);
            found = kd_group_knn(job->tree, &g, q, job->kk, fminf(guess, reach), job->cap, index, dist2);
        } else {
            const feat_list *seed = nearest_done(job->xyz, q, point + j - mates, mates, job->list);
            found = kd_knn_within(job->tree, q, job->kk, knn_limit(job, q, seed), index, dist2);
        }
        done->kth[j] = found == job->kk ? dist2[found - 1] : INFINITY;
        job->list[i].index = index;
        job->list[i].dist2 = dist2;
        job->list[i].count = within_radius(dist2, found, job->radius);
    }
}

static void knn_block(const knn_job *job, size_t block)
{
    const size_t slots = kdtree_slot_count(job->tree), first = block * TABLE_BLOCK_SLOTS;
    const size_t end = first + TABLE_BLOCK_SLOTS < slots ? first + TABLE_BLOCK_SLOTS : slots;
    knn_done group[2];
    group[1].count = 0;
    for (size_t s0 = first, turn = 0; s0 < end; s0 += GROUP_SLOTS, turn ^= 1) {
        group[turn].count = group_points(job, s0, end, group[turn].point);
        knn_group(job, &group[turn], &group[!turn]);
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
    const float reach = nextafterf((float)nb->radius, INFINITY);
    const knn_job job = {t, xyz, kk, nb->radius > 0 ? reach * reach : INFINITY, nb->radius, index, dist2, table->list};
#pragma omp parallel for schedule(dynamic, 4) num_threads(ptreg_get_num_threads())
    for (long b = 0; b < blocks; b++)
        knn_block(&job, (size_t)b);
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
