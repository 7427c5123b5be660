#include "nn/tiles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/kdtree_query.h"

/* A tile, or a cell: a piece of a tile, whose box lets the halo's search
 * skip most of the other tiles' points. */
typedef struct tile {
    size_t first, count; /* its points: order[first .. first + count) */
    float lo[3], hi[3];
    size_t cell0, cell1; /* a tile's cells: cells[cell0 .. cell1) */
} tile;

/* Points a cell holds at most. */
#define CELL_POINTS 16384

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

typedef struct splitting {
    const float *xyz;
    uint32_t *order;
    size_t most, cell_most; /* points a tile, and a cell (no more than a tile), hold at most */
    tile *tiles, *cells;
    size_t tile_count, cell_count;
} splitting;

/* How many cells, and tiles, a piece of `count` points splits into: the
 * split halves counts, so the shape follows from the count alone, and
 * each half's cells and tiles have known places before it is split. */
static size_t cells_in(const splitting *sp, size_t count)
{
    return count <= sp->cell_most ? 1 : cells_in(sp, count / 2) + cells_in(sp, count - count / 2);
}

static size_t tiles_in(const splitting *sp, size_t count, int in_tile)
{
    if (in_tile)
        return 0;
    return count <= sp->most ? 1 : tiles_in(sp, count / 2, 0) + tiles_in(sp, count - count / 2, 0);
}

/* Pieces above this many points split their halves as parallel tasks. */
#define PARALLEL_SPLIT_MIN ((size_t)1 << 18)

/* Splits order[first .. first + count) at the median of its box's widest
 * axis, down to cells (placed from cells[cell]); the first piece of at
 * most sp->most points (and not inside another) is a tile (placed at
 * tiles[at]), its cells the run split from it. */
static void split_into_tiles(splitting *sp, size_t first, size_t count, int in_tile, size_t cell, size_t at)
{
    tile t = {first, count, {0, 0, 0}, {0, 0, 0}, cell, cell + cells_in(sp, count)};
    box_of(sp->xyz, sp->order + first, count, t.lo, t.hi);
    const int opens = !in_tile && count <= sp->most;
    if (opens)
        sp->tiles[at] = t;
    if (count <= sp->cell_most) {
        sp->cells[cell] = t;
        return;
    }
    int axis = 0;
    for (int a = 1; a < 3; a++)
        axis = t.hi[a] - t.lo[a] > t.hi[axis] - t.lo[axis] ? a : axis;
    const size_t half = count / 2, cell2 = cell + cells_in(sp, half), tile2 = at + tiles_in(sp, half, in_tile || opens);
    select_nth(sp->xyz, sp->order + first, count, half, axis);
    if (count >= PARALLEL_SPLIT_MIN) {
#pragma omp task default(shared) firstprivate(first, half, in_tile, opens, cell, at)
        split_into_tiles(sp, first, half, in_tile || opens, cell, at);
        split_into_tiles(sp, first + half, count - half, in_tile || opens, cell2, tile2);
#pragma omp taskwait
    } else {
        split_into_tiles(sp, first, half, in_tile || opens, cell, at);
        split_into_tiles(sp, first + half, count - half, in_tile || opens, cell2, tile2);
    }
}

/* ---- a tile and its halo ---- */

static double gap(double below, double above)
{
    const double g = below > above ? below : above;
    return g > 0 ? g : 0;
}

/* The squared distance from p to the box [lo, hi], in double. */
static double box_distance2(const float *p, const float lo[3], const float hi[3])
{
    double s = 0;
    for (int a = 0; a < 3; a++) {
        const double g = gap((double)lo[a] - p[a], (double)p[a] - hi[a]);
        s += g * g;
    }
    return s;
}

static double boxes_distance2(const tile *a, const tile *b)
{
    double s = 0;
    for (int k = 0; k < 3; k++) {
        const double g = gap((double)a->lo[k] - b->hi[k], (double)b->lo[k] - a->hi[k]);
        s += g * g;
    }
    return s;
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

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 1;
    const size_t c = need > 2 * *cap ? need : 2 * *cap;
    void *q = realloc(*p, c * size);
    if (!q)
        return 0;
    *p = q, *cap = c;
    return 1;
}

/* ---- lists that may reach past the subset ---- */

/* Such a point keeps its list as keys (kd_key, with the cloud's indices)
 * from key[first] on; the points beyond the subset within its farthest
 * key join them later. */
typedef struct left_point {
    uint32_t point;
    size_t first, count;
    float reach2; /* infinity: the subset held fewer points than asked for */
} left_point;

typedef struct left_points {
    left_point *at;
    uint64_t *key;
    size_t count, cap, keys, key_cap;
    int failed;
} left_points;

/* Appends point i's list (cloud indices) to l. */
static void keep_left(left_points *l, uint32_t i, const nn_list *list, float reach2)
{
    if (l->failed || !grow((void **)&l->at, &l->cap, l->count + 1, sizeof *l->at) ||
        !grow((void **)&l->key, &l->key_cap, l->keys + list->count, sizeof *l->key)) {
        l->failed = 1;
        return;
    }
    for (size_t q = 0; q < list->count; q++)
        l->key[l->keys + q] = kd_key(list->dist2[q], list->index[q]);
    l->at[l->count++] = (left_point){i, l->keys, list->count, reach2};
    l->keys += list->count;
}

/* ---- one tile ---- */

/* A tile's search: its points and those within `halo` of its box, in the
 * cloud's index order, with their own tree. */
typedef struct tile_run {
    const float *xyz; /* the whole cloud */
    size_t n;
    const ptreg_neighborhood *nb;
    const uint32_t *order;
    const tile *tiles, *cells;
    size_t t, cell_count;
    double halo;
    uint32_t *point;    /* the subset: cloud indices, ascending */
    unsigned char *own; /* per subset point: the tile's own (not the halo's) */
    float *local;       /* the subset's coordinates */
    size_t m;           /* subset points */
    left_points left;   /* own points whose lists may reach past the subset */
    nn_block_fn fn;
    void *ctx;
} tile_run;

/* Whether point p (not the tile's) lies in the halo (add_beyond makes the
 * same test). */
static int in_halo(const tile_run *r, const float *p)
{
    return box_distance2(p, r->tiles[r->t].lo, r->tiles[r->t].hi) <= r->halo * r->halo;
}

/* Whether cell c lies outside the tile and within reach of its box. */
static int cell_near(const tile_run *r, size_t c, double reach)
{
    const tile *t = &r->tiles[r->t];
    return (c < t->cell0 || c >= t->cell1) && boxes_distance2(&r->cells[c], t) <= reach * reach;
}

/* The halo: the points of other tiles within it (cells near enough
 * first), appended to *halo; 0 when out of memory. */
static int gather_halo(const tile_run *r, uint32_t **halo, size_t *count, size_t *cap)
{
    for (size_t c = 0; c < r->cell_count; c++) {
        if (!cell_near(r, c, r->halo))
            continue;
        const tile *v = &r->cells[c];
        for (size_t i = v->first; i < v->first + v->count; i++) {
            const uint32_t p = r->order[i];
            if (!in_halo(r, r->xyz + 3 * (size_t)p))
                continue;
            if (!grow((void **)halo, cap, *count + 1, sizeof **halo))
                return 0;
            (*halo)[(*count)++] = p;
        }
    }
    return 1;
}

/* The subset: the tile's own points and the halo's, merged in the cloud's
 * index order (own: which are the tile's). Returns 0 when out of memory. */
static int gather_subset(tile_run *r)
{
    const tile *t = &r->tiles[r->t];
    size_t halo = 0, cap = t->count / 8 + 16;
    uint32_t *other = malloc(cap * sizeof *other), *mine = malloc((t->count ? t->count : 1) * sizeof *mine);
    int ok = other && mine && gather_halo(r, &other, &halo, &cap);
    uint32_t *tmp = ok ? malloc((t->count > halo ? t->count : halo ? halo : 1) * sizeof *tmp) : NULL;
    r->m = t->count + halo;
    r->point = tmp ? malloc((r->m ? r->m : 1) * sizeof *r->point) : NULL;
    r->own = r->point ? malloc(r->m ? r->m : 1) : NULL;
    r->local = r->own ? malloc(3 * (r->m ? r->m : 1) * sizeof *r->local) : NULL;
    if (r->local) {
        memcpy(mine, r->order + t->first, t->count * sizeof *mine);
        radix_sort(mine, tmp, t->count);
        radix_sort(other, tmp, halo);
        for (size_t a = 0, b = 0, j = 0; j < r->m; j++) {
            const int own = b == halo || (a < t->count && mine[a] < other[b]);
            r->point[j] = own ? mine[a++] : other[b++];
            r->own[j] = (unsigned char)own;
            memcpy(r->local + 3 * j, r->xyz + 3 * (size_t)r->point[j], 3 * sizeof *r->local);
        }
    }
    free(other), free(mine), free(tmp);
    return r->local != NULL;
}

/* How far a list reaches (squared): every point it could hold lies within
 * it; infinity when the subset held fewer points than it asks for. */
static float list_reach(const tile_run *r, const nn_list *l)
{
    const size_t kk = r->nb->k < r->n ? r->nb->k : r->n;
    if (r->nb->k && l->count == kk)
        return l->dist2[kk - 1];
    return r->nb->radius > 0 ? (float)(r->nb->radius * r->nb->radius) : INFINITY;
}

/* How far inside the tile's box the point p lies (0 on its faces). */
static double depth_inside(const tile *t, const float *p)
{
    double d = INFINITY;
    for (int a = 0; a < 3; a++)
        d = fmin(d, fmin((double)p[a] - t->lo[a], (double)t->hi[a] - p[a]));
    return fmax(d, 0.0);
}

/* The rounding allowance of float distances about the tile's box. */
static double allowance(const tile_run *r)
{
    const tile *t = &r->tiles[r->t];
    double mag = r->halo;
    for (int a = 0; a < 3; a++)
        mag = fmax(mag, fmax(fabs((double)t->lo[a]), fabs((double)t->hi[a])));
    return 1e-6 * mag;
}

/* A list is final when the ball it reaches lies in the region the subset
 * covers, the tile's box widened by the halo: its radius at most the halo
 * plus how deep inside the box its point lies (less a rounding
 * allowance). */
static int is_final(const tile_run *r, float reach2, const float *p, double slack)
{
    return sqrt((double)reach2) + slack <= r->halo + depth_inside(&r->tiles[r->t], p) || r->m == r->n;
}

/* A block's own lists in the cloud's indices: the final ones moved to the
 * front (their count returned), the others kept for add_beyond. */
static size_t final_lists(tile_run *r, nn_block *b, double slack)
{
    size_t kept = 0;
    for (size_t j = 0; j < b->count; j++) {
        if (!r->own[b->point[j]])
            continue;
        uint32_t *index = (uint32_t *)b->list[j].index; /* the block's own storage */
        for (size_t q = 0; q < b->list[j].count; q++)
            index[q] = r->point[index[q]];
        const uint32_t i = r->point[b->point[j]];
        const float reach2 = list_reach(r, &b->list[j]);
        if (is_final(r, reach2, r->local + 3 * (size_t)b->point[j], slack)) {
            b->list[kept] = b->list[j];
            b->point[kept++] = i;
        } else {
#pragma omp critical
            keep_left(&r->left, i, &b->list[j], reach2);
        }
    }
    return kept;
}

/* The final lists of a block of the subset's, handed on. */
static int hand_on(void *ctx, nn_block *b)
{
    tile_run *r = ctx;
    b->count = final_lists(r, b, allowance(r));
    return !b->count || r->fn(r->ctx, b);
}

/* Searches the subset's tree, handing on the final lists. */
static ptreg_status search_subset(tile_run *r, ptreg_error *err)
{
    ptreg_kdtree *tree = NULL;
    ptreg_status st = ptreg_kdtree_create(r->local, r->m, NULL, &tree, err);
    if (st)
        return st;
    const nn_hoods h = {tree, r->local, r->m, *r->nb, NN_SORTED, 0};
    const int ok = nn_hoods_each(&h, hand_on, r);
    ptreg_kdtree_destroy(tree);
    return ok && !r->left.failed ? PTREG_OK
                                 : ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods: out of memory in a tile");
}

/* ---- the lists left: points beyond the subset added ---- */

/* Every point beyond the subset within a left list's farthest key (at or
 * below it: a tie there may still win by its index) joins that list's
 * keys; extra[i] holds point i's (the cloud's order of points, scanned
 * once). Only k-NN lists are left (a radius is within the halo). */
static int add_beyond(const tile_run *r, uint64_t **extra, size_t *extra_count, size_t *extra_cap)
{
    double farthest = 0;
    for (size_t i = 0; i < r->left.count; i++)
        farthest = fmax(farthest, sqrt((double)r->left.at[i].reach2));
    const tile *t = &r->tiles[r->t];
    const double reach = farthest + allowance(r);
    for (size_t c = 0; c < r->cell_count; c++) {
        const tile *v = &r->cells[c];
        if (!cell_near(r, c, reach))
            continue;
        for (size_t i = v->first; i < v->first + v->count; i++) {
            const uint32_t p = r->order[i];
            const float *x = r->xyz + 3 * (size_t)p;
            if (in_halo(r, x) || box_distance2(x, t->lo, t->hi) > reach * reach)
                continue; /* in the subset (its lists had it), or beyond every reach */
            for (size_t q = 0; q < r->left.count; q++) {
                const left_point *lp = &r->left.at[q];
                const float *y = r->xyz + 3 * (size_t)lp->point;
                const float d = kd_dist2(y[0], y[1], y[2], x[0], x[1], x[2]);
                if (!(d <= lp->reach2))
                    continue;
                if (!grow((void **)&extra[q], &extra_cap[q], extra_count[q] + 1, sizeof **extra))
                    return 0;
                extra[q][extra_count[q]++] = kd_key(d, p);
            }
        }
    }
    return 1;
}

static int by_key(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Each left point's list: its keys and the points beyond, the kk least. */
static ptreg_status finish_left(tile_run *r, ptreg_error *err)
{
    const size_t kk = r->nb->k < r->n ? r->nb->k : r->n, left = r->left.count;
    uint64_t **extra = calloc(left ? left : 1, sizeof *extra);
    size_t *count = calloc(left ? left : 1, sizeof *count), *cap = calloc(left ? left : 1, sizeof *cap);
    nn_block *b = calloc(1, sizeof *b);
    int ok = extra && count && cap && b && add_beyond(r, extra, count, cap) &&
             !kd_neighbors_reserve(&b->store, kk ? kk : 1);
    for (size_t q = 0; ok && q < left; q++) {
        const left_point *lp = &r->left.at[q];
        if (!grow((void **)&extra[q], &cap[q], count[q] + lp->count, sizeof **extra)) {
            ok = 0;
            break;
        }
        memcpy(extra[q] + count[q], r->left.key + lp->first, lp->count * sizeof **extra);
        const size_t all = count[q] + lp->count, keep = all < kk ? all : kk;
        qsort(extra[q], all, sizeof **extra, by_key);
        for (size_t j = 0; j < keep; j++) {
            b->store.index[j] = (uint32_t)extra[q][j];
            b->store.dist2[j] = kd_key_dist2(extra[q][j]);
        }
        b->point[0] = lp->point;
        b->list[0] = (nn_list){b->store.index, b->store.dist2, keep};
        b->count = 1;
        ok = r->fn(r->ctx, b);
    }
    for (size_t q = 0; extra && q < left; q++)
        free(extra[q]);
    free(extra), free(count), free(cap);
    if (b)
        nn_block_free(b);
    free(b);
    return ok ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods: out of memory at a tile's edge");
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

static ptreg_status run_tile(tile_run *r, ptreg_error *err)
{
    r->halo = first_halo(&r->tiles[r->t], r->nb);
    r->halo += 2 * allowance(r); /* a radius list, reaching the radius, is then final */
    r->left.count = r->left.keys = 0;
    ptreg_status st = gather_subset(r) ? search_subset(r, err)
                                       : ptreg_error_set(err, PTREG_ERR_NOMEM,
                                                         "neighborhoods: out of memory for a tile of %zu points",
                                                         r->tiles[r->t].count);
    free(r->point), free(r->own), free(r->local);
    r->point = NULL, r->own = NULL, r->local = NULL;
    return st || !r->left.count ? st : finish_left(r, err);
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
    splitting sp = {xyz, NULL, tile_points, tile_points < CELL_POINTS ? tile_points : CELL_POINTS, NULL, NULL, 0, 0};
    sp.cell_count = cells_in(&sp, n); /* the split's shape follows from n: its pieces are counted first */
    sp.tile_count = tiles_in(&sp, n, 0);
    sp.order = malloc(n * sizeof *sp.order);
    sp.tiles = malloc(sp.tile_count * sizeof *sp.tiles);
    sp.cells = malloc(sp.cell_count * sizeof *sp.cells);
    if (!sp.order || !sp.tiles || !sp.cells)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "neighborhoods: out of memory for the tiles of %zu points", n);
    if (!st) {
        for (size_t i = 0; i < n; i++)
            sp.order[i] = (uint32_t)i;
#pragma omp parallel num_threads(ptreg_get_num_threads())
#pragma omp single
        split_into_tiles(&sp, 0, n, 0, 0, 0);
    }
    tile_run r = {xyz, n, nb, sp.order, sp.tiles, sp.cells, 0, sp.cell_count, 0, NULL, NULL, NULL, 0, {0}, fn, ctx};
    for (size_t t = 0; !st && t < sp.tile_count; t++) {
        r.t = t;
        st = run_tile(&r, err);
    }
    free(r.left.at), free(r.left.key);
    free(sp.order), free(sp.tiles), free(sp.cells);
    return st;
}
