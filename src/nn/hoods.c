#include "nn/hoods.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/counts.h"
#include "nn/kdtree_query.h"

ptreg_status nn_check_neighborhood(const ptreg_neighborhood *nb, ptreg_error *err)
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

/* ---- one independent search: the reference, and radius lists ---- */

/* The squared radius as PCL hands it to FLANN: r * r in double, then float. */
static float strict_radius2(double radius) { return (float)(radius * radius); }

/* A radius search that finds every point the strict test keeps (the tree's
 * own test is d <= r^2 in float, with the radius one float step out), then
 * drops those at or beyond r^2, keeping the order. */
static ptreg_status radius_strict(const ptreg_kdtree *tree, const float q[3], double radius, nn_order order,
                                  ptreg_neighbors *out, ptreg_error *err)
{
    const float reach = nextafterf((float)radius, INFINITY);
    if (kd_radius_within(tree, q, reach * reach, order == NN_SORTED, out)) {
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

ptreg_status nn_neighbors(const ptreg_kdtree *tree, const ptreg_neighborhood *nb, nn_order order, const float q[3],
                          ptreg_neighbors *out, ptreg_error *err)
{
    if (nb->k == 0)
        return radius_strict(tree, q, nb->radius, order, out, err);
    if (kd_neighbors_reserve(out, nb->k))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu neighbors", nb->k);
    out->count = within_radius(out->dist2, ptreg_kdtree_knn(tree, q, nb->k, out->index, out->dist2), nb->radius);
    return PTREG_OK;
}

/* ---- blocks ---- */

/* k-NN queries go in groups of a chunk's slots (below). */
#define GROUP_SLOTS 16

static int knn_path(const nn_hoods *h) { return h->nb.k && !h->reference; }

static size_t positions(const nn_hoods *h) { return h->reference ? h->n : kdtree_slot_count(h->tree); }

/* Positions per block: NN_HOOD_BLOCK, fewer (whole groups) where k is so
 * large that a block's k-NN lists would pass KNN_BLOCK_ENTRIES. */
#define KNN_BLOCK_ENTRIES ((size_t)1 << 20)
static size_t block_positions(const nn_hoods *h)
{
    const size_t kk = h->nb.k < h->n ? h->nb.k : h->n;
    if (!kk || kk * NN_HOOD_BLOCK <= KNN_BLOCK_ENTRIES)
        return NN_HOOD_BLOCK;
    const size_t groups = KNN_BLOCK_ENTRIES / kk / GROUP_SLOTS;
    return groups ? groups * GROUP_SLOTS : GROUP_SLOTS;
}

size_t nn_hoods_blocks(const nn_hoods *h)
{
    const size_t per = block_positions(h);
    return (positions(h) + per - 1) / per;
}

/* The point at position s of the query order, or PTREG_NO_NEIGHBOR. */
static uint32_t point_at(const nn_hoods *h, size_t s)
{
    if (h->reference)
        return s < h->n ? (uint32_t)s : PTREG_NO_NEIGHBOR;
    return s < kdtree_slot_count(h->tree) ? kdtree_slot_index(h->tree, s) : PTREG_NO_NEIGHBOR;
}

/* The block's points, in the query order. */
static void block_points(const nn_hoods *h, size_t block, nn_block *b)
{
    b->count = 0;
    const size_t per = block_positions(h);
    for (size_t s = block * per; s < (block + 1) * per; s++) {
        const uint32_t i = point_at(h, s);
        if (i != PTREG_NO_NEIGHBOR)
            b->point[b->count++] = i;
    }
}

/* Room for `need` entries of storage, the contents kept (doubling, so
 * appends cost O(1) each). */
static int reserve_storage(nn_block *b, size_t need)
{
    const size_t cap = b->store.capacity;
    return need <= cap || !kd_neighbors_reserve(&b->store, need > 2 * cap ? need : 2 * cap);
}

/* Radius and reference searches: one independent search per point,
 * appended to the block's storage (offsets first: it may move). */
static int search_block(const nn_hoods *h, nn_block *b)
{
    size_t used = 0, start[NN_HOOD_BLOCK];
    for (size_t j = 0; j < b->count; j++) {
        if (nn_neighbors(h->tree, &h->nb, h->order, h->xyz + 3 * (size_t)b->point[j], &b->search, NULL) ||
            !reserve_storage(b, used + b->search.count))
            return 0;
        memcpy(b->store.index + used, b->search.index, b->search.count * sizeof *b->store.index);
        memcpy(b->store.dist2 + used, b->search.dist2, b->search.count * sizeof *b->store.dist2);
        start[j] = used;
        b->list[j].count = b->search.count;
        used += b->search.count;
    }
    for (size_t j = 0; j < b->count; j++) {
        b->list[j].index = b->store.index + start[j];
        b->list[j].dist2 = b->store.dist2 + start[j];
    }
    return 1;
}

/* ---- k-NN: groups of a chunk's points ---- */

/* A group is a chunk's slots (a compact cluster of the tree's order). Its
 * chunks are gathered by one walk of the tree, within a reach that holds
 * every point's k nearest (from the previous group's lists); each point's
 * search then scans those within its own guess (kd_group_knn). A block's
 * first point, which has no previous group, is searched alone and stands
 * for one. A group whose chunks are too many to gather searches point by
 * point, each bounded by its nearest chunk-mate already done (the last
 * few: the tightest bound cheaply at hand). */
#define MATE_CANDIDATES 4

typedef struct knn_job {
    const nn_hoods *h;
    size_t kk;
    float cap; /* the hybrid search's squared radius (a float step out), or infinity */
    nn_block *b;
} knn_job;

/* The farthest of a seed's neighbours from q: at least kk points (those
 * neighbours) lie within it, so it bounds q's k-th nearest. */
static float bound_from(const float *xyz, const float q[3], const nn_list *seed)
{
    float limit = 0;
    for (size_t j = 0; j < seed->count; j++) {
        const float *p = xyz + 3 * (size_t)seed->index[j];
        float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        limit = d > limit ? d : limit;
    }
    return limit;
}

/* A k-NN bound for block position j from its nearest of the positions
 * [from, j): a seed's farthest neighbour, cut to the cap; a seed cut by
 * the radius holds fewer than kk points: no bound. */
static float mate_limit(const knn_job *job, size_t from, size_t j)
{
    const float *xyz = job->h->xyz, *q = xyz + 3 * (size_t)job->b->point[j];
    const nn_list *seed = NULL;
    float best_d = INFINITY;
    for (size_t m = from; m < j; m++) {
        const float *p = xyz + 3 * (size_t)job->b->point[m];
        float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        if (d < best_d) {
            best_d = d;
            seed = &job->b->list[m];
        }
    }
    const float limit = seed && seed->count == job->kk ? bound_from(xyz, q, seed) : INFINITY;
    return fminf(limit, job->cap);
}

/* q's k-th nearest, guessed from its nearest of the block positions
 * [from, to) (done): (|q - s| + s's k-th distance)^2 by the triangle
 * inequality, a little wider for rounding (a guess short of it costs only
 * a single search), cut to the cap. */
static float knn_guess(const knn_job *job, const float q[3], size_t from, size_t to)
{
    const float *xyz = job->h->xyz;
    float best_d = INFINITY, best_kth = INFINITY;
    for (size_t m = from; m < to; m++) {
        const float *p = xyz + 3 * (size_t)job->b->point[m];
        const float d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        best_kth = d < best_d ? job->b->kth[m] : best_kth;
        best_d = d < best_d ? d : best_d;
    }
    const float reach = sqrtf(best_d) + sqrtf(best_kth);
    return fminf(reach * reach * 1.001f, job->cap);
}

/* The box of the block positions [from, to). */
static void points_box(const knn_job *job, size_t from, size_t to, float lo[3], float hi[3])
{
    for (int a = 0; a < 3; a++)
        lo[a] = INFINITY, hi[a] = -INFINITY;
    for (size_t m = from; m < to; m++)
        for (int a = 0; a < 3; a++) {
            const float v = job->h->xyz[3 * (size_t)job->b->point[m] + a];
            lo[a] = v < lo[a] ? v : lo[a];
            hi[a] = v > hi[a] ? v : hi[a];
        }
}

/* A reach for the whole group from the previous one (positions [from,
 * to)): its largest k-th distance plus the farthest two points of the two
 * groups can be apart (the triangle inequality's bound for every point of
 * the group, widened a little for rounding), cut to the cap. */
static float group_reach(const knn_job *job, const float lo[3], const float hi[3], size_t from, size_t to)
{
    float plo[3], phi[3], kth = 0, span = 0;
    points_box(job, from, to, plo, phi);
    for (size_t m = from; m < to; m++)
        kth = fmaxf(kth, job->b->kth[m]);
    for (int a = 0; a < 3; a++) {
        const float far = fmaxf(hi[a] - plo[a], phi[a] - lo[a]);
        span += far * far;
    }
    const float reach = sqrtf(span) + sqrtf(kth);
    return fminf(reach * reach * 1.001f, job->cap);
}

/* Block positions [from, to), after the group [prev, from). */
static void knn_group(const knn_job *job, size_t prev, size_t from, size_t to)
{
    const float *xyz = job->h->xyz;
    nn_block *b = job->b;
    kd_group g;
    float lo[3], hi[3];
    points_box(job, from, to, lo, hi);
    const float reach = prev < from ? group_reach(job, lo, hi, prev, from) : INFINITY;
    const int gathered = to > from && kd_group_gather(job->h->tree, lo, hi, reach, &g);
    for (size_t j = from; j < to; j++) {
        const float *q = xyz + 3 * (size_t)b->point[j];
        const size_t mates = j - from < MATE_CANDIDATES ? j - from : MATE_CANDIDATES;
        uint32_t *index = b->store.index + (j * job->kk);
        float *dist2 = b->store.dist2 + (j * job->kk);
        size_t found;
        if (gathered) {
            /* the first point's guess from the previous group, the others' from their chunk-mates */
            const float guess = j > from ? knn_guess(job, q, j - mates, j) : knn_guess(job, q, prev, from);
            found = kd_group_knn(job->h->tree, &g, q, job->kk, fminf(guess, reach), job->cap, index, dist2);
        } else {
            found = kd_knn_within(job->h->tree, q, job->kk, mate_limit(job, j - mates, j), index, dist2);
        }
        b->kth[j] = found == job->kk ? dist2[found - 1] : INFINITY;
        b->list[j].index = index;
        b->list[j].dist2 = dist2;
        b->list[j].count = within_radius(dist2, found, job->h->nb.radius);
    }
}

/* The groups are the block's chunks of slots: a group's points are those
 * whose slots fall in one chunk (block_points kept the slots' order). */
static int knn_block(const nn_hoods *h, size_t block, nn_block *b)
{
    const size_t kk = h->nb.k < h->n ? h->nb.k : h->n;
    const size_t per = block_positions(h);
    if (!reserve_storage(b, per * kk))
        return 0;
    const float reach = nextafterf((float)h->nb.radius, INFINITY);
    const knn_job job = {h, kk, h->nb.radius > 0 ? reach * reach : INFINITY, b};
    size_t prev = 0, from = 0;
    for (size_t g0 = block * per; g0 < (block + 1) * per; g0 += GROUP_SLOTS) {
        size_t to = from;
        for (size_t s = g0; s < g0 + GROUP_SLOTS; s++)
            to += point_at(h, s) != PTREG_NO_NEIGHBOR;
        if (to == from)
            continue;
        if (prev == from) { /* the block's first group: its first point alone seeds the rest */
            knn_group(&job, prev, from, from + 1);
            from++;
        }
        if (to > from) { /* (a first group of one point stays the previous group) */
            knn_group(&job, prev, from, to);
            prev = from;
            from = to;
        }
    }
    return 1;
}

int nn_hoods_block(const nn_hoods *h, size_t block, nn_block *b)
{
    b->number = block;
    block_points(h, block, b);
    return knn_path(h) ? knn_block(h, block, b) : search_block(h, b);
}

int nn_hoods_each(const nn_hoods *h, nn_block_fn fn, void *ctx)
{
    const long blocks = (long)nn_hoods_blocks(h);
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed)
    {
        nn_block *b = calloc(1, sizeof *b);
        failed = !b;
#pragma omp for schedule(dynamic, 2)
        for (long k = 0; k < blocks; k++)
            if (!failed && (!nn_hoods_block(h, (size_t)k, b) || !fn(ctx, b)))
                failed = 1;
        if (b)
            nn_block_free(b);
        free(b);
    }
    return !failed;
}

void nn_block_free(nn_block *b)
{
    ptreg_neighbors_free(&b->store);
    ptreg_neighbors_free(&b->search);
}
