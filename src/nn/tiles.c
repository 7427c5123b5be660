#include "nn/tiles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kdtree_query.h"

typedef struct tile {
    size_t first, count; /* its points: order[first .. first + count) */
    float lo[3], hi[3];
} tile;

/* ---- tiles: median splits of an index array ---- */

/* The split order: coordinate `axis`, then index (a total order, so equal
 * coordinates never stall the partition). */
static int before(const float *xyz, uint32_t a, uint32_t b, int axis)
{
    const float x = xyz[3 * (size_t)a + axis], y = xyz[3 * (size_t)b + axis];
    return x < y || (x == y && a < b);
}

/* Reorders idx[0 .. n) so that idx[k] is the k-th in the split order,
 * those before it first (quickselect, the pivot the median of three
 * positions hashed from the range). */
static void select_nth(const float *xyz, uint32_t *idx, size_t n, size_t k, int axis)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        const size_t span = hi - lo, h = (lo * 0x9e3779b97f4a7c15ull + hi * 0xbf58476d1ce4e5b9ull) >> 7;
        const size_t a = lo + h % span, b0 = lo + (h >> 20) % span, c = lo + (h >> 40) % span;
        const int ab = before(xyz, idx[a], idx[b0], axis), bc = before(xyz, idx[b0], idx[c], axis),
                  ac = before(xyz, idx[a], idx[c], axis);
        const size_t b = ab ? (bc ? b0 : (ac ? c : a)) : (ac ? a : (bc ? c : b0));
        uint32_t t = idx[b];
        idx[b] = idx[hi - 1], idx[hi - 1] = t;
        const uint32_t pivot = idx[hi - 1];
        size_t store = lo;
        for (size_t i = lo; i + 1 < hi; i++)
            if (before(xyz, idx[i], pivot, axis)) {
                t = idx[i], idx[i] = idx[store], idx[store++] = t;
            }
        idx[hi - 1] = idx[store], idx[store] = pivot;
        if (store == k)
            return;
        if (k < store)
            hi = store;
        else
            lo = store + 1;
    }
}

static void box_of(const float *xyz, const uint32_t *idx, size_t n, float lo[3], float hi[3])
{
    for (int a = 0; a < 3; a++)
        lo[a] = INFINITY, hi[a] = -INFINITY;
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            const float v = xyz[3 * (size_t)idx[i] + a];
            lo[a] = v < lo[a] ? v : lo[a];
            hi[a] = v > hi[a] ? v : hi[a];
        }
}

/* Splits order[first .. first + count) at the median of its box's widest
 * axis until every piece holds at most `most` points; the pieces are
 * appended to tiles. */
static void split(const float *xyz, uint32_t *order, size_t first, size_t count, size_t most, tile *tiles,
                  size_t *tile_count)
{
    tile t = {first, count, {0, 0, 0}, {0, 0, 0}};
    box_of(xyz, order + first, count, t.lo, t.hi);
    if (count <= most) {
        tiles[(*tile_count)++] = t;
        return;
    }
    int axis = 0;
    for (int a = 1; a < 3; a++)
        axis = t.hi[a] - t.lo[a] > t.hi[axis] - t.lo[axis] ? a : axis;
    const size_t half = count / 2;
    select_nth(xyz, order + first, count, half, axis);
    split(xyz, order, first, half, most, tiles, tile_count);
    split(xyz, order, first + half, count - half, most, tiles, tile_count);
}

/* ---- a tile and its halo ---- */

/* The distance from p to the box [lo, hi], in double. */
static double box_distance(const float *p, const float lo[3], const float hi[3])
{
    double s = 0;
    for (int a = 0; a < 3; a++) {
        const double g = fmax(fmax((double)lo[a] - p[a], (double)p[a] - hi[a]), 0.0);
        s += g * g;
    }
    return sqrt(s);
}

static double boxes_distance(const tile *a, const tile *b)
{
    double s = 0;
    for (int k = 0; k < 3; k++) {
        const double g = fmax(fmax((double)a->lo[k] - b->hi[k], (double)b->lo[k] - a->hi[k]), 0.0);
        s += g * g;
    }
    return sqrt(s);
}

/* Ascending uint32 values, by bytes (4 passes; tmp as long as v). */
static void radix_sort(uint32_t *v, uint32_t *tmp, size_t n)
{
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((v[i] >> shift) & 255) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            tmp[count[(v[i] >> shift) & 255]++] = v[i];
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* One tile's search: its points and those within `halo` of its box, in
 * the cloud's index order, with their own tree. */
typedef struct tile_run {
    const float *xyz; /* the whole cloud */
    size_t n;
    const ptreg_neighborhood *nb;
    const uint32_t *order;
    const tile *tiles;
    size_t tile_count, t;
    double halo;
    uint32_t *point;   /* the subset: cloud indices, ascending */
    uint32_t *own;     /* per subset point: its rank among the tile's own points, or UINT32_MAX (halo) */
    float *local;      /* the subset's coordinates */
    size_t m;          /* subset points */
    unsigned char *done; /* per own point (by rank): its list was handed on */
    nn_block_fn fn;
    void *ctx;
} tile_run;

/* The tile's own points (sorted: ranks) and the halo's, merged into the
 * subset. Returns 0 when out of memory. */
static int gather_subset(tile_run *r, uint32_t *own_sorted, uint32_t *scratch)
{
    const tile *t = &r->tiles[r->t];
    memcpy(own_sorted, r->order + t->first, t->count * sizeof *own_sorted);
    radix_sort(own_sorted, scratch, t->count);
    size_t halo = 0, cap = t->count;
    uint32_t *other = malloc(cap * sizeof *other);
    for (size_t u = 0; other && u < r->tile_count; u++) {
        const tile *v = &r->tiles[u];
        if (u == r->t || boxes_distance(t, v) > r->halo)
            continue;
        for (size_t i = v->first; other && i < v->first + v->count; i++) {
            const uint32_t p = r->order[i];
            if (box_distance(r->xyz + 3 * (size_t)p, t->lo, t->hi) > r->halo)
                continue;
            if (halo == cap) {
                uint32_t *grown = realloc(other, 2 * cap * sizeof *other);
                if (!grown)
                    free(other);
                other = grown, cap *= 2;
            }
            if (other)
                other[halo++] = p;
        }
    }
    uint32_t *tmp = other ? malloc((halo ? halo : 1) * sizeof *tmp) : NULL;
    r->m = t->count + halo;
    r->point = tmp ? malloc(r->m * sizeof *r->point) : NULL;
    r->own = r->point ? malloc(r->m * sizeof *r->own) : NULL;
    r->local = r->own ? malloc(3 * r->m * sizeof *r->local) : NULL;
    if (r->local) {
        radix_sort(other, tmp, halo);
        for (size_t a = 0, b = 0, j = 0; j < r->m; j++) {
            const int mine = b == halo || (a < t->count && own_sorted[a] < other[b]);
            r->point[j] = mine ? own_sorted[a] : other[b];
            r->own[j] = mine ? (uint32_t)a++ : UINT32_MAX;
            b += !mine;
            memcpy(r->local + 3 * j, r->xyz + 3 * (size_t)r->point[j], 3 * sizeof *r->local);
        }
    }
    free(other), free(tmp);
    return r->local != NULL;
}

/* How far a list reaches (squared): all the points it could hold lie
 * within it; infinity when the subset held fewer points than it asks. */
static float list_reach(const tile_run *r, const nn_list *l)
{
    const size_t kk = r->nb->k < r->n ? r->nb->k : r->n;
    const float r2 = (float)(r->nb->radius * r->nb->radius);
    if (r->nb->k && l->count == kk)
        return l->dist2[kk - 1];
    return r->nb->radius > 0 ? r2 : INFINITY;
}

/* A block's lists that are final, moved to the front in the cloud's
 * indices; their count. Sets *short_of when one is not. */
static size_t final_lists(tile_run *r, nn_block *b, float limit2, int *short_of)
{
    size_t kept = 0;
    for (size_t j = 0; j < b->count; j++) {
        const uint32_t rank = r->own[b->point[j]];
        if (rank == UINT32_MAX || r->done[rank])
            continue;
        if (!(list_reach(r, &b->list[j]) <= limit2) && r->m < r->n) {
            *short_of = 1;
            continue;
        }
        r->done[rank] = 1;
        uint32_t *index = (uint32_t *)b->list[j].index; /* the block's own storage */
        for (size_t q = 0; q < b->list[j].count; q++)
            index[q] = r->point[index[q]];
        b->list[kept] = b->list[j];
        b->point[kept++] = r->point[b->point[j]];
    }
    return kept;
}

/* The halo's reach as a list's squared distance may use it: a little
 * inside, for the rounding of float distances. */
static float usable(const tile_run *r)
{
    const tile *t = &r->tiles[r->t];
    double mag = r->halo;
    for (int a = 0; a < 3; a++)
        mag = fmax(mag, fmax(fabs((double)t->lo[a]), fabs((double)t->hi[a])));
    const double h = r->halo * (1.0 - 1e-5) - 1e-6 * mag;
    return h > 0 ? (float)(h * h) : 0.0f;
}

/* Searches the subset's tree; 0 on failure (memory), *short_of when some
 * list was not final. */
static ptreg_status search_subset(tile_run *r, int *short_of, ptreg_error *err)
{
    ptreg_kdtree *tree = NULL;
    ptreg_status st = ptreg_kdtree_create(r->local, r->m, NULL, &tree, err);
    if (st)
        return st;
    const nn_hoods h = {tree, r->local, r->m, *r->nb, NN_SORTED, 0};
    const long blocks = (long)nn_hoods_blocks(&h);
    const float limit2 = usable(r);
    int failed = 0, shorter = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed, shorter)
    {
        nn_block *b = calloc(1, sizeof *b);
        failed = !b;
#pragma omp for schedule(dynamic, 2)
        for (long k = 0; k < blocks; k++) {
            if (failed || !nn_hoods_block(&h, (size_t)k, b)) {
                failed = 1;
                continue;
            }
            b->count = final_lists(r, b, limit2, &shorter);
            if (b->count && !r->fn(r->ctx, b))
                failed = 1;
        }
        if (b)
            nn_block_free(b);
        free(b);
    }
    ptreg_kdtree_destroy(tree);
    *short_of = shorter;
    return failed ? ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods: out of memory in a tile") : PTREG_OK;
}

/* A first halo: twice the k-th distance a surface of the tile's density
 * would give (a scan is a surface: the box's two largest extents), and at
 * least the radius. */
static double first_halo(const tile *t, const ptreg_neighborhood *nb)
{
    double e[3];
    for (int a = 0; a < 3; a++)
        e[a] = (double)t->hi[a] - t->lo[a];
    const double smallest = fmin(e[0], fmin(e[1], e[2])), sum = e[0] + e[1] + e[2];
    const double largest = fmax(e[0], fmax(e[1], e[2])), middle = sum - smallest - largest;
    const double area = largest * middle;
    double h = area > 0 ? 2.0 * sqrt((double)nb->k * area / (3.14159265358979 * (double)t->count)) : 0;
    h = fmax(h, nb->radius * 1.01);
    return h > 0 ? h : 1e-3 * sum + 1e-6;
}

static ptreg_status run_tile(tile_run *r, uint32_t *own_sorted, uint32_t *scratch, ptreg_error *err)
{
    const tile *t = &r->tiles[r->t];
    memset(r->done, 0, t->count);
    r->halo = first_halo(t, r->nb);
    for (;;) {
        int short_of = 0;
        if (!gather_subset(r, own_sorted, scratch))
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods: out of memory for a tile of %zu points",
                                   t->count);
        ptreg_status st = search_subset(r, &short_of, err);
        free(r->point), free(r->own), free(r->local);
        r->point = r->own = NULL, r->local = NULL;
        if (st || !short_of)
            return st;
        r->halo *= 2;
    }
}

static ptreg_status check_finite(const float *xyz, size_t n, ptreg_error *err)
{
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(xyz[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "k-d tree: point %zu is not finite", i / 3);
    return PTREG_OK;
}

ptreg_status nn_hoods_tiled(const float *xyz, size_t n, const ptreg_neighborhood *nb, size_t tile_points,
                            nn_block_fn fn, void *ctx, ptreg_error *err)
{
    ptreg_status st = nn_check_neighborhood(nb, err);
    st = st ? st : kd_check_points("neighborhoods", n, err);
    st = st ? st : check_finite(xyz, n, err);
    if (st || !n)
        return st;
    tile_points = tile_points ? tile_points : 1;
    const size_t most_tiles = 2 * (n / tile_points) + 2;
    uint32_t *order = malloc(n * sizeof *order);
    tile *tiles = malloc(most_tiles * sizeof *tiles);
    const size_t largest = n < tile_points ? n : tile_points;
    uint32_t *own_sorted = malloc(largest * sizeof *own_sorted), *scratch = malloc(largest * sizeof *scratch);
    unsigned char *done = malloc(largest);
    if (!order || !tiles || !own_sorted || !scratch || !done)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods: out of memory for the tiles of %zu points", n);
    size_t tile_count = 0;
    if (!st) {
        for (size_t i = 0; i < n; i++)
            order[i] = (uint32_t)i;
        split(xyz, order, 0, n, tile_points, tiles, &tile_count);
    }
    tile_run r = {xyz, n, nb, order, tiles, tile_count, 0, 0, NULL, NULL, NULL, 0, done, fn, ctx};
    for (size_t t = 0; !st && t < tile_count; t++) {
        r.t = t;
        st = run_tile(&r, own_sorted, scratch, err);
    }
    free(order), free(tiles), free(own_sorted), free(scratch), free(done);
    return st;
}
