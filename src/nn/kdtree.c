/* A 3-D k-d tree for exact nearest-neighbor queries: splits on the widest
 * axis into whole leaves, leaf buckets stored as SoA chunks (kdtree_impl.h),
 * depth-first node order. 1-NN runs in the per-ISA kernels; k-NN and radius
 * queries are here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/counts.h"
#include "core/large_alloc.h"
#include "nn/nn_kernels.h"
#include "ptreg/nn.h"
#include "nn/testing.h"

void ptreg_kdtree_options_default(ptreg_kdtree_options *opt) { opt->leaf_size = 256; }

/* ---- build ---- */

typedef kd_point build_point;

/* The split order: coordinate `dim`, then index. The float's bits are
 * mapped to an unsigned integer that orders like the float (-0 below +0,
 * which only makes the order total), so one 64-bit compare decides. */
static uint64_t split_key(const build_point *a, unsigned dim)
{
    uint32_t bits;
    memcpy(&bits, &a->p[dim], sizeof bits);
    bits ^= (bits >> 31) ? 0xffffffffu : 0x80000000u;
    return (uint64_t)bits << 32 | a->index;
}

static void swap_points(build_point *a, build_point *b)
{
    build_point t = *a;
    *a = *b;
    *b = t;
}

/* Reorders pts[0..n) so pts[k] is the k-th smallest by split_key, smaller
 * keys before it and larger after. Keys are unique, so equal coordinates
 * never degrade the partition; the pivot is the median of three positions
 * hashed from the range, so sorted input is no worst case either. The
 * partition swaps every element unconditionally and advances by the
 * comparison: no branch to mispredict. */
static void select_kth(build_point *pts, size_t n, size_t k, unsigned dim)
{
    size_t lo = 0, hi = n; /* the k-th lies in [lo, hi) */
    while (hi - lo > 1) {
        size_t span = hi - lo, h = (lo * 0x9e3779b97f4a7c15ull + hi * 0xbf58476d1ce4e5b9ull) >> 7;
        size_t a = lo + h % span, b = lo + (h >> 20) % span, c = lo + (h >> 40) % span;
        uint64_t ka = split_key(&pts[a], dim), kb = split_key(&pts[b], dim), kc = split_key(&pts[c], dim);
        size_t m = (ka < kb) ? (kb < kc ? b : (ka < kc ? c : a)) : (ka < kc ? a : (kb < kc ? c : b));
        swap_points(&pts[m], &pts[hi - 1]);
        const uint64_t pivot = split_key(&pts[hi - 1], dim);
        size_t store = lo;
        for (size_t i = lo; i + 1 < hi; i++) {
            build_point t = pts[i];
            size_t less = split_key(&t, dim) < pivot;
            pts[i] = pts[store];
            pts[store] = t;
            store += less;
        }
        swap_points(&pts[store], &pts[hi - 1]);
        if (store == k)
            return;
        if (k < store)
            hi = store;
        else
            lo = store + 1;
    }
}

typedef struct box {
    float lo[3], hi[3];
} box;

/* The build's most frequent loop: each point's x y z (and its index bits,
 * ignored) as one SSE vector. */
static box bounding_box(const build_point *pts, size_t count)
{
    box b;
#if defined(__SSE2__)
    __m128 lo = _mm_loadu_ps(pts[0].p), hi = lo;
    for (size_t i = 1; i < count; i++) {
        __m128 v = _mm_loadu_ps(pts[i].p);
        lo = _mm_min_ps(lo, v);
        hi = _mm_max_ps(hi, v);
    }
    float l[4], h[4];
    _mm_storeu_ps(l, lo);
    _mm_storeu_ps(h, hi);
    for (int d = 0; d < 3; d++)
        b.lo[d] = l[d], b.hi[d] = h[d];
#else
    for (int d = 0; d < 3; d++)
        b.lo[d] = b.hi[d] = pts[0].p[d];
    for (size_t i = 1; i < count; i++)
        for (int d = 0; d < 3; d++) {
            float v = pts[i].p[d];
            b.lo[d] = v < b.lo[d] ? v : b.lo[d];
            b.hi[d] = v > b.hi[d] ? v : b.hi[d];
        }
#endif
    return b;
}

static unsigned widest_axis(const box *b)
{
    unsigned best = 0;
    for (unsigned d = 1; d < 3; d++)
        if (b->hi[d] - b->lo[d] > b->hi[best] - b->lo[best])
            best = d;
    return best;
}

static size_t chunks_of(size_t count) { return (count + PTREG_KD_LANES - 1) / PTREG_KD_LANES; }

static size_t left_count(size_t count, size_t leaf_size);

/* Orders a leaf's points by k-d splits into runs of whole chunks, so each
 * chunk is a spatial cluster with a small box. */
static void order_into_chunks(build_point *pts, size_t count)
{
    if (count <= PTREG_KD_LANES)
        return;
    box b = bounding_box(pts, count);
    size_t mid = left_count(count, PTREG_KD_LANES);
    select_kth(pts, count, mid, widest_axis(&b));
    order_into_chunks(pts, mid);
    order_into_chunks(pts + mid, count - mid);
}

/* Stores leaf number `id` (its points, outside bounds and parent) in
 * chunks from `first` on; returns its reference. */
static uint32_t make_leaf(ptreg_kdtree *t, build_point *pts, size_t count, uint32_t parent, const kd_cell *cell,
                          size_t first, size_t id)
{
    size_t chunks = chunks_of(count);
    order_into_chunks(pts, count);
    kd_leaf *leaf = &t->leaves[id];
    memset(leaf, 0, sizeof *leaf);
    leaf->cell = *cell;
    leaf->first_chunk = (uint32_t)first;
    leaf->chunks = (uint32_t)chunks;
    leaf->parent = parent;
    box whole = bounding_box(pts, count);
    memcpy(leaf->box_lo, whole.lo, sizeof whole.lo);
    memcpy(leaf->box_hi, whole.hi, sizeof whole.hi);
    for (size_t c = 0; c < PTREG_KD_LEAF_CHUNKS; c++) {
        size_t k0 = c * PTREG_KD_LANES,
               n = c < chunks ? (count - k0 < PTREG_KD_LANES ? count - k0 : PTREG_KD_LANES) : 0;
        box b = n ? bounding_box(pts + k0, n)
                  : (box){{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
        for (int k = 0; k < 3; k++) {
            leaf->lo[k][c] = b.lo[k];
            leaf->hi[k][c] = b.hi[k];
        }
    }
    for (size_t c = 0; c < chunks; c++) {
        size_t chunk = first + c;
        kd_chunk *ch = &t->chunks[chunk];
        memset(ch, 0, sizeof *ch);
        ch->leaf = (uint32_t)id;
        for (unsigned l = 0; l < PTREG_KD_LANES; l++) {
            size_t k = c * PTREG_KD_LANES + l, s = chunk * PTREG_KD_LANES + l;
            int real = k < count;
            ch->x[l] = real ? pts[k].p[0] : NAN;
            ch->y[l] = real ? pts[k].p[1] : NAN;
            ch->z[l] = real ? pts[k].p[2] : NAN;
            t->index[s] = real ? pts[k].index : PTREG_NO_NEIGHBOR;
            if (real)
                t->slot[pts[k].index] = (uint32_t)s;
        }
    }
    return PTREG_KD_LEAF_BIT | (uint32_t)id;
}

/* How many points go left: whole leaves of leaf_size (a multiple of the
 * chunk width fills every chunk), half of them on each side, so all leaves
 * but the last are full and the depth stays ceil(log2(leaves)). */
static size_t left_count(size_t count, size_t leaf_size)
{
    if (count <= leaf_size) /* a root of two small leaves */
        return count / 2;
    size_t leaves = (count + leaf_size - 1) / leaf_size;
    return leaves / 2 * leaf_size;
}

static void set_child_box(kd_node *nd, int c, const box *b)
{
    for (int k = 0; k < 3; k++) {
        nd->lo[k][c] = b->lo[k];
        nd->hi[k][c] = b->hi[k];
    }
}

/* The shape of a subtree follows from its point count alone, so every
 * subtree's node and chunk ranges are known before it is built and
 * subtrees can be built in parallel into their own ranges. */
static size_t subtree_nodes(size_t count, size_t leaf_size)
{
    if (count <= leaf_size)
        return count < 2 ? 0 : 1; /* a leaf; or the root of two small leaves */
    return (count + leaf_size - 1) / leaf_size - 1;
}

static size_t subtree_leaves(size_t count, size_t leaf_size)
{
    if (count <= leaf_size)
        return count < 2 ? 1 : 2;
    return (count + leaf_size - 1) / leaf_size;
}

static size_t subtree_chunks(size_t count, size_t leaf_size)
{
    if (count <= leaf_size)
        return chunks_of(count / 2) + chunks_of(count - count / 2);
    return count / leaf_size * chunks_of(leaf_size) + chunks_of(count % leaf_size);
}

/* Subtrees above this many points are built as separate tasks. */
#define PARALLEL_BUILD_MIN 8192

typedef struct build_job {
    build_point *pts;
    size_t count;
    box bb;
    uint32_t parent;
    kd_cell cell;
    size_t node;  /* index of this subtree's root */
    size_t chunk; /* its first chunk */
    size_t leaf;  /* its first leaf */
} build_job;

static uint32_t build_child(ptreg_kdtree *t, const build_job *job);

/* Builds the internal node for job->pts (count >= 2) at job->node. Points
 * are split on the widest axis by (coordinate, index), so even equal
 * points split. */
static void build_node(ptreg_kdtree *t, const build_job *job)
{
    size_t self = job->node, count = job->count;
    t->cells[self] = job->cell;
    t->parent[self] = job->parent;
    unsigned dim = widest_axis(&job->bb);
    size_t mid = left_count(count, t->leaf_size);
    select_kth(job->pts, count, mid, dim);
    build_job sub[2];
    for (int c = 0; c < 2; c++) {
        build_point *p = c ? job->pts + mid : job->pts;
        size_t n = c ? count - mid : mid;
        sub[c] = (build_job){p, n, bounding_box(p, n), (uint32_t)self, job->cell, 0, 0, 0};
    }
    sub[0].cell.hi[dim] = fminf(job->cell.hi[dim], sub[1].bb.lo[dim]); /* the right subtree starts there */
    sub[1].cell.lo[dim] = fmaxf(job->cell.lo[dim], sub[0].bb.hi[dim]);
    sub[0].node = self + 1;
    sub[0].chunk = job->chunk;
    sub[1].node = sub[0].node + (mid > t->leaf_size ? subtree_nodes(mid, t->leaf_size) : 0);
    sub[1].chunk = job->chunk + (mid > t->leaf_size ? subtree_chunks(mid, t->leaf_size) : chunks_of(mid));
    sub[0].leaf = job->leaf;
    sub[1].leaf = job->leaf + (mid > t->leaf_size ? subtree_leaves(mid, t->leaf_size) : 1);
    uint32_t child[2];
    if (mid >= PARALLEL_BUILD_MIN) {
#pragma omp task default(none) shared(t, sub, child)
        child[0] = build_child(t, &sub[0]);
        child[1] = build_child(t, &sub[1]);
#pragma omp taskwait
    } else {
        child[0] = build_child(t, &sub[0]);
        child[1] = build_child(t, &sub[1]);
    }
    kd_node *nd = &t->nodes[self];
    for (int c = 0; c < 2; c++) {
        set_child_box(nd, c, &sub[c].bb);
        nd->child[c] = child[c];
    }
    nd->unused[0] = nd->unused[1] = 0;
}

static uint32_t build_child(ptreg_kdtree *t, const build_job *job)
{
    if (job->count <= t->leaf_size)
        return make_leaf(t, job->pts, job->count, job->parent, &job->cell, job->chunk, job->leaf);
    build_node(t, job);
    return (uint32_t)job->node;
}

/* A one-point cloud still gets a root: both children are its leaf, the
 * second with an empty box, so searches enter it once. */
static void build_single_leaf(ptreg_kdtree *t, build_point *pts, const box *bb, const kd_cell *everything)
{
    t->cells[0] = *everything;
    t->parent[0] = 0;
    kd_node *nd = &t->nodes[0];
    uint32_t ref = make_leaf(t, pts, 1, 0, everything, 0, 0);
    box empty = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};
    set_child_box(nd, 0, bb);
    set_child_box(nd, 1, &empty);
    nd->child[0] = nd->child[1] = ref;
    nd->unused[0] = nd->unused[1] = 0;
}

ptreg_status kd_check_points(const char *what, size_t n, ptreg_error *err)
{
    return count_check_points(what, n, KD_MAX_POINTS, "the k-d tree's uint32 indices", err);
}

/* Slots are uint32: a tree whose chunks would hold 2^32 slots or more (the
 * points, padded to whole chunks per leaf) is refused, not wrapped. */
static ptreg_status check_slots(size_t n, size_t leaf_size, size_t chunks, ptreg_error *err)
{
    if (chunks <= KD_MAX_CHUNKS)
        return PTREG_OK;
    return ptreg_error_set(err, PTREG_ERR_ARG,
                           "k-d tree: %zu points in leaves of %zu take %zu slots, more than 2^32 - 1 (its uint32 "
                           "slots): use a larger leaf size",
                           n, leaf_size, chunks * PTREG_KD_LANES);
}

static ptreg_status check_build_input(const float *xyz, size_t n, const ptreg_kdtree_options *opt, ptreg_error *err)
{
    if (n == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "k-d tree: no points");
    ptreg_status st = kd_check_points("k-d tree", n, err);
    if (st)
        return st;
    if (opt->leaf_size < 4 || opt->leaf_size > PTREG_KD_MAX_LEAF)
        return ptreg_error_set(err, PTREG_ERR_ARG, "k-d tree: leaf size %d outside 4..%d", opt->leaf_size,
                               PTREG_KD_MAX_LEAF);
    const size_t ls = (size_t)opt->leaf_size;
    if ((st = check_slots(n, ls, n < 2 ? 1 : subtree_chunks(n, ls), err)))
        return st;
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(xyz[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "k-d tree: point %zu is not finite", i / 3);
    return PTREG_OK;
}

/* aligned_alloc wants a size that is a multiple of the alignment. */
static size_t round_up(size_t size, size_t align) { return (size + align - 1) / align * align; }

ptreg_status ptreg_kdtree_create(const float *xyz, size_t n, const ptreg_kdtree_options *opt, ptreg_kdtree **out,
                                 ptreg_error *err)
{
    *out = NULL;
    ptreg_kdtree_options def;
    if (!opt) {
        ptreg_kdtree_options_default(&def);
        opt = &def;
    }
    ptreg_status st = check_build_input(xyz, n, opt, err);
    if (st)
        return st;
    size_t ls = (size_t)opt->leaf_size;
    size_t nodes = n < 2 ? 1 : subtree_nodes(n, ls), chunks = n < 2 ? 1 : subtree_chunks(n, ls);
    size_t leaves = subtree_leaves(n, ls);
    ptreg_kdtree *t = calloc(1, sizeof *t);
    build_point *pts = core_alloc_large(n * sizeof *pts);
    if (t) {
        t->nodes = aligned_alloc(64, round_up(nodes * sizeof *t->nodes, 64));
        t->cells = malloc(nodes * sizeof *t->cells);
        t->parent = malloc(nodes * sizeof *t->parent);
        t->chunks = aligned_alloc(64, round_up(chunks * sizeof *t->chunks, 64));
        t->index = malloc(chunks * PTREG_KD_LANES * sizeof *t->index);
        t->slot = malloc(n * sizeof *t->slot);
        t->leaves = aligned_alloc(64, leaves * sizeof *t->leaves);
    }
    if (!t || !pts || !t->nodes || !t->cells || !t->parent || !t->chunks || !t->index || !t->slot || !t->leaves) {
        free(pts);
        ptreg_kdtree_destroy(t);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "k-d tree: out of memory for %zu points", n);
    }
    t->n = n;
    t->leaf_size = (uint32_t)ls;
    t->node_count = nodes;
    t->chunk_count = chunks;
    t->leaf_count = leaves;
    for (size_t i = 0; i < n; i++) {
        memcpy(pts[i].p, xyz + 3 * i, 3 * sizeof(float));
        pts[i].index = (uint32_t)i;
    }
    kd_cell everything = {.lo = {-INFINITY, -INFINITY, -INFINITY}, .hi = {INFINITY, INFINITY, INFINITY}};
    box bb = bounding_box(pts, n);
    if (n == 1) {
        build_single_leaf(t, pts, &bb, &everything);
    } else {
        build_job root = {pts, n, bb, 0, everything, 0, 0, 0};
#pragma omp parallel num_threads(ptreg_get_num_threads())
#pragma omp single
        build_node(t, &root);
    }
    free(pts);
    if (kd_build_neighbors(t)) {
        ptreg_kdtree_destroy(t);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "k-d tree: out of memory for %zu points", n);
    }
    *out = t;
    return PTREG_OK;
}

void ptreg_kdtree_destroy(ptreg_kdtree *t)
{
    if (!t)
        return;
    if (!t->borrowed) {
        free(t->nodes);
        free(t->cells);
        free(t->parent);
        free(t->leaves);
        free(t->near);
        free(t->chunks);
        free(t->index);
        free(t->slot);
    }
    free(t);
}

size_t ptreg_kdtree_size(const ptreg_kdtree *t) { return t->n; }

/* ---- 1-NN ---- */

#define NEAREST_CHUNK 512

void ptreg_kdtree_nearest(const ptreg_kdtree *t, const float *queries, size_t nq, const uint32_t *hint, uint32_t *index,
                          float *dist2)
{
    long chunks = (long)((nq + NEAREST_CHUNK - 1) / NEAREST_CHUNK);
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long c = 0; c < chunks; c++) {
        size_t i0 = (size_t)c * NEAREST_CHUNK;
        size_t cnt = nq - i0 < NEAREST_CHUNK ? nq - i0 : NEAREST_CHUNK;
        uint32_t slots[NEAREST_CHUNK];
        for (size_t i = 0; i < cnt; i++) {
            uint32_t h = hint ? hint[i0 + i] : PTREG_NO_NEIGHBOR;
            slots[i] = h < t->n ? t->slot[h] : PTREG_NO_NEIGHBOR;
        }
        nn_cpu_kernels()->kd_nearest_range(t, queries + 3 * i0, cnt, INFINITY, slots, slots, dist2 + i0);
        for (size_t i = 0; i < cnt; i++)
            index[i0 + i] = slots[i] == PTREG_NO_NEIGHBOR ? PTREG_NO_NEIGHBOR : t->index[slots[i]];
    }
}

/* ---- k-NN and radius: the per-ISA kernels (knn_kernels_isa.c) ---- */

size_t kd_knn_within(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2)
{
    if (k > t->n)
        k = t->n;
    return k ? nn_cpu_kernels()->kd_knn(t, q, k, limit, index, dist2) : 0;
}

int kd_group_gather(const ptreg_kdtree *t, const float lo[3], const float hi[3], float reach, kd_group *g)
{
    return nn_cpu_kernels()->kd_group_gather(t, lo, hi, reach, g);
}

size_t kd_group_knn(const ptreg_kdtree *t, const kd_group *g, const float q[3], size_t k, float guess, float limit,
                    uint32_t *index, float *dist2)
{
    if (k > t->n)
        k = t->n;
    return k ? nn_cpu_kernels()->kd_group_knn(t, g, q, k, guess, limit, index, dist2) : 0;
}

int kd_radius_within(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb)
{
    return nn_cpu_kernels()->kd_radius(t, q, limit, sorted, nb);
}

size_t ptreg_kdtree_knn(const ptreg_kdtree *t, const float q[3], size_t k, uint32_t *index, float *dist2)
{
    return kd_knn_within(t, q, k, INFINITY, index, dist2);
}

int kd_neighbors_reserve(ptreg_neighbors *nb, size_t cap)
{
    if (nb->capacity >= cap)
        return 0;
    uint32_t *ni = realloc(nb->index, cap * sizeof *ni);
    if (ni)
        nb->index = ni;
    float *nd = realloc(nb->dist2, cap * sizeof *nd);
    if (nd)
        nb->dist2 = nd;
    if (!ni || !nd)
        return -1;
    nb->capacity = cap;
    return 0;
}

void ptreg_neighbors_free(ptreg_neighbors *nb)
{
    free(nb->index);
    free(nb->dist2);
    memset(nb, 0, sizeof *nb);
}

ptreg_status ptreg_kdtree_radius(const ptreg_kdtree *t, const float q[3], float radius, ptreg_neighbors *nb,
                                 ptreg_error *err)
{
    nb->count = 0;
    if (!(radius >= 0.0f))
        return ptreg_error_set(err, PTREG_ERR_ARG, "k-d tree radius search: radius %g is not >= 0", (double)radius);
    if (nn_cpu_kernels()->kd_radius(t, q, radius * radius, 1, nb)) {
        nb->count = 0;
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "k-d tree radius search: out of memory");
    }
    return PTREG_OK;
}

size_t kdtree_slot_count(const ptreg_kdtree *t) { return t->chunk_count * PTREG_KD_LANES; }

uint32_t kdtree_slot_index(const ptreg_kdtree *t, size_t slot) { return t->index[slot]; }

void kdtree_slot_point(const ptreg_kdtree *t, uint32_t slot, float p[3])
{
    const kd_chunk *c = &t->chunks[slot / PTREG_KD_LANES];
    unsigned l = slot % PTREG_KD_LANES;
    p[0] = c->x[l], p[1] = c->y[l], p[2] = c->z[l];
}

PTREG_ISA_TABLE(nn_cpu_kernel_table, nn_cpu_kernels, NN_CPU_KERNELS)
