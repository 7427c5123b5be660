/* k-NN and radius searches in the k-d tree, compiled once per ISA by
 * cmake/isa.cmake (PTREG_ISA_SUFFIX names the copy). Plain loops over the
 * 16 lanes of a chunk and the 16 chunk boxes of a leaf, which the compiler
 * vectorises for the ISA; every copy computes each distance with the
 * formula of nn.h and orders by (distance, index), so all give the same
 * lists. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/cpu_isa.h"
#include "nn/nn_kernels.h"

/* The lanes of 16 distances within th (d <= th; NaN never), as a bit
 * mask: one compare where the ISA has it, which the compilers do not make
 * of the plain loop. */
static inline unsigned lanes_within(const float *d, float th)
{
#if defined(__AVX512F__)
    return (unsigned)_mm512_cmp_ps_mask(_mm512_loadu_ps(d), _mm512_set1_ps(th), _CMP_LE_OQ);
#elif defined(__AVX2__)
    const __m256 t = _mm256_set1_ps(th);
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(d), t, _CMP_LE_OQ)) |
           (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(d + 8), t, _CMP_LE_OQ)) << 8;
#else
    unsigned mask = 0;
    for (int l = 0; l < PTREG_KD_LANES; l++)
        mask |= (unsigned)(d[l] <= th) << l;
    return mask;
#endif
}

typedef struct kd_visit {
    uint32_t ref;
    float bound;
} kd_visit;

typedef struct knn_heap {
    float *d;
    uint32_t *i;
    size_t size, k;
} knn_heap;

/* Max-heap by (distance, index): the root is the worst of the k kept. */
static int heap_above(const knn_heap *h, size_t a, size_t b) { return kd_better(h->d[b], h->i[b], h->d[a], h->i[a]); }

static void heap_swap(knn_heap *h, size_t a, size_t b)
{
    float td = h->d[a];
    uint32_t ti = h->i[a];
    h->d[a] = h->d[b], h->i[a] = h->i[b];
    h->d[b] = td, h->i[b] = ti;
}

static void heap_sift_down(knn_heap *h, size_t at)
{
    for (;;) {
        size_t l = 2 * at + 1, r = l + 1, top = at;
        if (l < h->size && heap_above(h, l, top))
            top = l;
        if (r < h->size && heap_above(h, r, top))
            top = r;
        if (top == at)
            return;
        heap_swap(h, at, top);
        at = top;
    }
}

static void heap_offer(knn_heap *h, float d, uint32_t i)
{
    if (h->size < h->k) {
        size_t at = h->size++;
        h->d[at] = d, h->i[at] = i;
        while (at > 0 && heap_above(h, at, (at - 1) / 2)) {
            heap_swap(h, at, (at - 1) / 2);
            at = (at - 1) / 2;
        }
    } else if (kd_better(d, i, h->d[0], h->i[0])) {
        h->d[0] = d, h->i[0] = i;
        heap_sift_down(h, 0);
    }
}

/* Heapsort of parallel arrays into ascending (distance, index). */
static void sort_pairs(float *d, uint32_t *idx, size_t n)
{
    knn_heap h = {d, idx, n, n};
    for (size_t s = n / 2; s-- > 0;)
        heap_sift_down(&h, s);
    while (h.size > 1) {
        heap_swap(&h, 0, h.size - 1);
        h.size--;
        heap_sift_down(&h, 0);
    }
}

typedef struct leaf_visitor {
    void (*visit)(struct leaf_visitor *v, const ptreg_kdtree *t, size_t chunk, const float q[3]);
    float limit; /* subtrees whose bound exceeds it are skipped */
} leaf_visitor;

/* A leaf's chunks whose box is within the limit (bounds computed side by
 * side, one vector pass); each is checked again against the limit as it
 * shrinks. */
static void visit_leaf(const ptreg_kdtree *t, const kd_leaf *leaf, const float q[3], leaf_visitor *v)
{
    float bound[PTREG_KD_LEAF_CHUNKS];
    unsigned near = 0;
    for (unsigned c = 0; c < PTREG_KD_LEAF_CHUNKS; c++) {
        bound[c] = kd_chunk_bound(leaf, c, q);
        near |= (unsigned)(bound[c] <= v->limit) << c;
    }
    for (; near; near &= near - 1) {
        unsigned c = (unsigned)__builtin_ctz(near);
        if (c < leaf->chunks && bound[c] <= v->limit)
            v->visit(v, t, leaf->first_chunk + c, q);
    }
}

/* Depth-first, nearer child first; a subtree is entered only while its
 * box bound is within the visitor's limit, which may shrink as it goes. */
static void kd_traverse(const ptreg_kdtree *t, const float q[3], leaf_visitor *v)
{
    kd_visit stack[2 * PTREG_KD_MAX_DEPTH + 2];
    int sp = 0;
    stack[sp++] = (kd_visit){0, 0.0f};
    while (sp > 0) {
        kd_visit cur = stack[--sp];
        if (cur.bound > v->limit)
            continue;
        if (cur.ref & PTREG_KD_LEAF_BIT) {
            visit_leaf(t, &t->leaves[cur.ref & ~PTREG_KD_LEAF_BIT], q, v);
            continue;
        }
        const kd_node *nd = &t->nodes[cur.ref];
        float b0 = kd_box_bound(nd, 0, q), b1 = kd_box_bound(nd, 1, q);
        int near = b1 < b0;
        /* far first on the stack, so the near child pops next */
        if (nd->child[1] != nd->child[0])
            stack[sp++] = (kd_visit){nd->child[!near], near ? b0 : b1};
        stack[sp++] = (kd_visit){nd->child[near], near ? b1 : b0};
    }
}

/* The lanes of a chunk within limit, as a bit mask; the distances go to d.
 * Padding lanes hold NaN and never pass. */
static unsigned chunk_within(const kd_chunk *c, const float q[3], float limit, float d[PTREG_KD_LANES])
{
    for (int l = 0; l < PTREG_KD_LANES; l++)
        d[l] = kd_dist2(q[0], q[1], q[2], c->x[l], c->y[l], c->z[l]);
    return lanes_within(d, limit);
}

/* Small k (the features' neighborhoods) collect candidates within the
 * limit in a buffer of 2k + a chunk; when it fills, a selection keeps the
 * k best and the k-th becomes the limit. Each candidate then costs O(1),
 * where a sorted array or a heap pays per insertion. A candidate is one
 * 64-bit key (kd_key). Large k use a heap. */
#define KNN_BUFFERED_MAX 128 /* FPFH's usual hybrid cap, 100, among them */
#define KNN_BUFFER (2 * KNN_BUFFERED_MAX + PTREG_KD_LANES)

typedef struct knn_visitor {
    leaf_visitor base;
    knn_heap heap;
} knn_visitor;

typedef struct knn_buffer {
    leaf_visitor base;
    uint64_t key[KNN_BUFFER];
    size_t size, k;
} knn_buffer;

/* Reorders so the k smallest keys come first, the k-th last of them
 * (quickselect; the partition swaps unconditionally, so it has no
 * data-dependent branch). */
static void select_keys(uint64_t *key, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1, target = k - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t pivot = key[mid];
        key[mid] = key[hi];
        key[hi] = pivot;
        size_t store = lo;
        for (size_t j = lo; j < hi; j++) {
            uint64_t x = key[j];
            int less = x < pivot;
            key[j] = key[store]; /* when x >= pivot this swaps two keys >= pivot: harmless */
            key[store] = x;
            store += (size_t)less;
        }
        key[hi] = key[store];
        key[store] = pivot;
        if (store == target)
            return;
        if (store < target)
            lo = store + 1;
        else
            hi = store - 1;
    }
}

/* The k smallest of n (<= RANK_SORT_MAX) distinct keys, in order, into
 * out: each key's rank is the count of smaller keys, counted for all keys
 * side by side (one broadcast compare per key, no branch and no
 * horizontal sum): n^2 compares, but fewer instructions than a selection
 * and a sort spend on mispredicted branches for the few dozen candidates
 * of a bounded search. */
#define RANK_SORT_MAX 256
#define RANK_REGISTERS_MAX 64 /* AVX-512: eight vectors of keys and their ranks */

#if defined(__AVX512F__)
/* rank_keys for n <= 8 * blocks, every rank held in registers: keys past
 * n are all ones, ranked n (>= k), so never stored. */
static inline void rank_in_registers(const uint64_t *key, size_t n, size_t k, uint64_t *out, const int blocks)
{
    __m512i K[8], R[8];
    const __m512i ones = _mm512_set1_epi64(-1), limit = _mm512_set1_epi64((long long)k);
    for (int b = 0; b < blocks; b++) {
        const size_t at = 8 * (size_t)b, left = n > at ? n - at : 0;
        const __mmask8 real = (__mmask8)(left >= 8 ? 0xff : (1u << left) - 1);
        K[b] = _mm512_mask_loadu_epi64(ones, real, key + at);
        R[b] = _mm512_setzero_si512();
    }
    for (size_t j = 0; j < n; j++) {
        const __m512i y = _mm512_set1_epi64((long long)key[j]);
        for (int b = 0; b < blocks; b++)
            R[b] = _mm512_mask_sub_epi64(R[b], _mm512_cmpgt_epu64_mask(K[b], y), R[b], ones);
    }
    for (int b = 0; b < blocks; b++)
        _mm512_mask_i64scatter_epi64(out, _mm512_cmplt_epu64_mask(R[b], limit), R[b], K[b], 8);
}
#endif

#if defined(__AVX512F__)
/* The first k of two ascending runs, merged. */
static void merge_keys(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, size_t k, uint64_t *out)
{
    size_t i = 0, j = 0;
    for (size_t m = 0; m < k; m++)
        out[m] = j == nb || (i < na && a[i] < b[j]) ? a[i++] : b[j++];
}
#endif

__attribute__((noinline)) static void rank_keys(const uint64_t *key, size_t n, size_t k, uint64_t *out)
{
#if defined(__AVX512F__)
    if (n <= 32) {
        rank_in_registers(key, n, k, out, 4);
        return;
    }
    if (n <= RANK_REGISTERS_MAX) {
        rank_in_registers(key, n, k, out, 8);
        return;
    }
    if (n <= 2 * RANK_REGISTERS_MAX) { /* two halves in registers, then merged */
        uint64_t a[RANK_REGISTERS_MAX], b[RANK_REGISTERS_MAX];
        const size_t nb = n - RANK_REGISTERS_MAX;
        rank_in_registers(key, RANK_REGISTERS_MAX, RANK_REGISTERS_MAX, a, 8);
        rank_in_registers(key + RANK_REGISTERS_MAX, nb, nb, b, 8);
        merge_keys(a, RANK_REGISTERS_MAX, b, nb, k, out);
        return;
    }
#endif
    uint64_t rank[RANK_SORT_MAX];
    for (size_t i = 0; i < n; i++)
        rank[i] = 0;
    for (size_t j = 0; j < n; j++) {
        const uint64_t y = key[j];
        for (size_t i = 0; i < n; i++)
            rank[i] += key[i] > y;
    }
    for (size_t i = 0; i < n; i++)
        if (rank[i] < k)
            out[rank[i]] = key[i];
}

static void knn_visit_buffered(leaf_visitor *v, const ptreg_kdtree *t, size_t chunk, const float q[3])
{
    knn_buffer *b = (knn_buffer *)v;
    if (b->size + PTREG_KD_LANES > KNN_BUFFER) {
        select_keys(b->key, b->size, b->k);
        b->size = b->k;
        v->limit = kd_key_dist2(b->key[b->k - 1]);
    }
    float d[PTREG_KD_LANES];
    const uint32_t *index = t->index + chunk * PTREG_KD_LANES;
    size_t before = b->size;
    for (unsigned m = chunk_within(&t->chunks[chunk], q, v->limit, d); m; m &= m - 1) {
        int l = __builtin_ctz(m);
        b->key[b->size++] = kd_key(d[l], index[l]);
    }
    if (before < b->k && b->size >= b->k) { /* the worst of the first k bounds the k-th best */
        uint64_t worst = 0;
        for (size_t j = 0; j < b->size; j++)
            worst = b->key[j] > worst ? b->key[j] : worst;
        float w = kd_key_dist2(worst);
        v->limit = w < v->limit ? w : v->limit;
    }
}

static void knn_visit_heap(leaf_visitor *v, const ptreg_kdtree *t, size_t chunk, const float q[3])
{
    knn_visitor *kv = (knn_visitor *)v;
    float d[PTREG_KD_LANES];
    const uint32_t *index = t->index + chunk * PTREG_KD_LANES;
    for (unsigned m = chunk_within(&t->chunks[chunk], q, v->limit, d); m; m &= m - 1) {
        int l = __builtin_ctz(m);
        heap_offer(&kv->heap, d[l], index[l]);
    }
    if (kv->heap.size == kv->heap.k)
        v->limit = kv->heap.d[0];
}

/* The k best of the buffer, in order, into index and dist2; the count. */
static size_t knn_buffer_finish(knn_buffer *b, uint32_t *index, float *dist2)
{
    const size_t k = b->k, found = b->size < k ? b->size : k;
    if (b->size > k && (b->size > k + k / 2 || b->size > RANK_REGISTERS_MAX)) {
        /* ranking is quadratic: cut to the k best first */
        select_keys(b->key, b->size, k);
        b->size = k;
    }
    uint64_t best[KNN_BUFFERED_MAX];
    rank_keys(b->key, b->size, found, best);
    for (size_t j = 0; j < found; j++) {
        dist2[j] = kd_key_dist2(best[j]);
        index[j] = (uint32_t)best[j];
    }
    return found;
}

static size_t knn_buffered(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index,
                           float *dist2)
{
    knn_buffer b;
    b.base = (leaf_visitor){knn_visit_buffered, limit};
    b.size = 0;
    b.k = k;
    kd_traverse(t, q, &b.base);
    return knn_buffer_finish(&b, index, dist2);
}

/* ---- a group of nearby queries: the chunks gathered once ---- */

static int add_leaf_chunks(const kd_leaf *leaf, const float qlo[3], const float qhi[3], float reach, kd_group *g)
{
    float bound[PTREG_KD_LEAF_CHUNKS];
    unsigned near = 0;
    for (unsigned c = 0; c < PTREG_KD_LEAF_CHUNKS; c++) /* side by side: no branch on the data */
        bound[c] = kd_lane_box_bound(&leaf->lo[0][0], &leaf->hi[0][0], PTREG_KD_LEAF_CHUNKS, c, qlo, qhi);
    for (unsigned c = 0; c < PTREG_KD_LEAF_CHUNKS; c++)
        near |= (unsigned)(bound[c] <= reach) << c; /* missing chunks have empty boxes: never */
    if (g->count + (size_t)__builtin_popcount(near) > KD_GROUP_MAX_CHUNKS)
        return 0;
    for (; near; near &= near - 1) {
        const unsigned c = (unsigned)__builtin_ctz(near);
        kd_group_block *b = &g->block[g->count / KD_GROUP_LANES];
        const size_t lane = g->count++ % KD_GROUP_LANES;
        for (int k = 0; k < 3; k++) {
            b->lo[k][lane] = leaf->lo[k][c];
            b->hi[k][lane] = leaf->hi[k][c];
        }
        b->chunk[lane] = leaf->first_chunk + c;
    }
    return 1;
}

/* The last block's lanes past the count get empty boxes, which no query
 * is within. */
static void close_group(kd_group *g)
{
    for (size_t lane = g->count % KD_GROUP_LANES; lane && lane < KD_GROUP_LANES; lane++) {
        kd_group_block *b = &g->block[g->count / KD_GROUP_LANES];
        for (int k = 0; k < 3; k++) {
            b->lo[k][lane] = INFINITY;
            b->hi[k][lane] = -INFINITY;
        }
        b->chunk[lane] = 0;
    }
}

int ISA_FN(kd_group_gather)(const ptreg_kdtree *t, const float qlo[3], const float qhi[3], float reach, kd_group *g)
{
    uint32_t stack[2 * PTREG_KD_MAX_DEPTH + 2];
    int sp = 0;
    stack[sp++] = 0;
    g->count = 0;
    if (!(reach < INFINITY))
        return 0;
    while (sp > 0) {
        uint32_t ref = stack[--sp];
        if (ref & PTREG_KD_LEAF_BIT) {
            if (!add_leaf_chunks(&t->leaves[ref & ~PTREG_KD_LEAF_BIT], qlo, qhi, reach, g))
                return 0;
            continue;
        }
        const kd_node *nd = &t->nodes[ref];
        for (int c = nd->child[1] != nd->child[0]; c >= 0; c--) /* child 0 pops first: the tree's order */
            if (kd_lane_box_bound(&nd->lo[0][0], &nd->hi[0][0], 2, (unsigned)c, qlo, qhi) <= reach)
                stack[sp++] = nd->child[c];
    }
    close_group(g);
    return 1;
}

/* A query of a group scans every gathered chunk within its guess at once
 * (distances side by side, no list kept), then narrows the guess to a
 * threshold with at least k points within by counting below a few
 * candidates (the k-th lies near guess * k / count: a surface's count
 * grows with the squared distance), and keeps only the points within it.
 * The few dozen left are ranked as a single search ranks them. */
#define GROUP_SCAN_MAX (KD_GROUP_MAX_CHUNKS * PTREG_KD_LANES)
static const float narrow_steps[] = {1.0f, 1.08f, 1.2f, 1.4f, 1.7f, 2.2f, 3.0f};
#define NARROW_STEPS (sizeof narrow_steps / sizeof narrow_steps[0])

typedef struct group_scan {
    float d[GROUP_SCAN_MAX]; /* chunk by chunk, 16 lanes each */
    uint32_t chunk[KD_GROUP_MAX_CHUNKS];
    size_t chunks;
} group_scan;

static void scan_chunk(const ptreg_kdtree *t, uint32_t chunk, const float q[3], group_scan *s)
{
    const kd_chunk *restrict c = &t->chunks[chunk];
    float *restrict d = s->d + s->chunks * PTREG_KD_LANES; /* restrict: the compiler otherwise keeps it scalar */
    for (int l = 0; l < PTREG_KD_LANES; l++)
        d[l] = kd_dist2(q[0], q[1], q[2], c->x[l], c->y[l], c->z[l]);
    s->chunk[s->chunks++] = chunk;
}

/* The gathered chunks within guess of q, found by bit masks (which chunks
 * pass is data the branch predictor cannot know). */
static void scan_chunks(const ptreg_kdtree *t, const kd_group *g, const float q[3], float guess, group_scan *s)
{
    s->chunks = 0;
    for (size_t b = 0; b < (g->count + KD_GROUP_LANES - 1) / KD_GROUP_LANES; b++) {
        const kd_group_block *blk = &g->block[b];
        float bound[KD_GROUP_LANES];
        for (unsigned l = 0; l < KD_GROUP_LANES; l++)
            bound[l] = kd_lane_bound(&blk->lo[0][0], &blk->hi[0][0], KD_GROUP_LANES, l, q);
        for (unsigned m = lanes_within(bound, guess); m; m &= m - 1)
            scan_chunk(t, blk->chunk[__builtin_ctz(m)], q, s);
    }
}

/* How many scanned distances are <= each threshold. */
static void count_within(const group_scan *s, const float *threshold, size_t count, size_t *within)
{
    for (size_t m = 0; m < count; m++)
        within[m] = 0;
    for (size_t c = 0; c < s->chunks; c++)
        for (size_t m = 0; m < count; m++)
            within[m] += (size_t)__builtin_popcount(lanes_within(s->d + c * PTREG_KD_LANES, threshold[m]));
}

/* The smallest threshold of the narrowing steps below guess with at least
 * k points within; guess itself when none. */
static float narrow(const group_scan *s, size_t k, float guess, size_t at_guess)
{
    float threshold[NARROW_STEPS];
    size_t within[NARROW_STEPS];
    const float estimate = guess * (float)k / (float)at_guess;
    size_t steps = 0;
    for (size_t m = 0; m < NARROW_STEPS && estimate * narrow_steps[m] < guess; m++)
        threshold[steps++] = estimate * narrow_steps[m];
    if (!steps)
        return guess;
    count_within(s, threshold, steps, within);
    for (size_t m = 0; m < steps; m++)
        if (within[m] >= k)
            return threshold[m];
    return guess;
}

/* The lanes of mask as keys, appended at b->key + b->size. */
static void append_keys(const float *d, const uint32_t *index, unsigned mask, knn_buffer *b)
{
#if defined(__AVX512F__)
    /* the 16 keys built side by side and the passing ones compressed out:
     * no loop over the mask's bits */
    const __m512i bits = _mm512_castps_si512(_mm512_loadu_ps(d)), idx = _mm512_loadu_si512(index);
    const __m512i lo = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(bits)), 32),
                                       _mm512_cvtepu32_epi64(_mm512_castsi512_si256(idx)));
    const __m512i hi = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(bits, 1)), 32),
                                       _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(idx, 1)));
    _mm512_mask_compressstoreu_epi64(b->key + b->size, (__mmask8)(mask & 0xff), lo);
    b->size += (size_t)__builtin_popcount(mask & 0xff);
    _mm512_mask_compressstoreu_epi64(b->key + b->size, (__mmask8)(mask >> 8), hi);
    b->size += (size_t)__builtin_popcount(mask >> 8);
#else
    for (; mask; mask &= mask - 1) {
        int l = __builtin_ctz(mask);
        b->key[b->size++] = kd_key(d[l], index[l]);
    }
#endif
}

/* The scanned points within the threshold as keys; 0 when more than the
 * buffer holds. */
static int keys_within(const ptreg_kdtree *t, const group_scan *s, float threshold, knn_buffer *b)
{
    b->size = 0;
    for (size_t c = 0; c < s->chunks; c++) {
        const float *d = s->d + c * PTREG_KD_LANES;
        const unsigned mask = lanes_within(d, threshold);
        if (b->size + (size_t)__builtin_popcount(mask) > KNN_BUFFER)
            return 0;
        append_keys(d, t->index + (size_t)s->chunk[c] * PTREG_KD_LANES, mask, b);
    }
    return 1;
}

size_t ISA_FN(kd_group_knn)(const ptreg_kdtree *t, const kd_group *g, const float q[3], size_t k, float guess,
                            float limit, uint32_t *index, float *dist2)
{
    if (k > KNN_BUFFERED_MAX || !(guess <= limit))
        return ISA_FN(kd_knn)(t, q, k, limit, index, dist2);
    group_scan s;
    scan_chunks(t, g, q, guess, &s);
    size_t at_guess;
    count_within(&s, &guess, 1, &at_guess);
    if (at_guess < k && guess < limit) /* the guess was short: points beyond it may be among the k */
        return ISA_FN(kd_knn)(t, q, k, limit, index, dist2);
    knn_buffer b;
    b.k = k;
    if (!keys_within(t, &s, at_guess > k ? narrow(&s, k, guess, at_guess) : guess, &b))
        return ISA_FN(kd_knn)(t, q, k, limit, index, dist2);
    return knn_buffer_finish(&b, index, dist2);
}

typedef struct radius_visitor {
    leaf_visitor base;
    ptreg_neighbors *nb;
    int failed;
} radius_visitor;

/* Room for one more neighbor, doubling as the list grows. */
static int reserve_neighbors(ptreg_neighbors *nb)
{
    if (nb->count < nb->capacity)
        return 0;
    return kd_neighbors_reserve(nb, nb->capacity ? 2 * nb->capacity : 64);
}

static void radius_visit(leaf_visitor *v, const ptreg_kdtree *t, size_t chunk, const float q[3])
{
    radius_visitor *rv = (radius_visitor *)v;
    float d[PTREG_KD_LANES];
    const uint32_t *index = t->index + chunk * PTREG_KD_LANES;
    for (unsigned m = chunk_within(&t->chunks[chunk], q, v->limit, d); m; m &= m - 1) {
        int l = __builtin_ctz(m);
        if (reserve_neighbors(rv->nb)) {
            rv->failed = 1;
            return;
        }
        rv->nb->index[rv->nb->count] = index[l];
        rv->nb->dist2[rv->nb->count++] = d[l];
    }
}

/* Ascending (distance, index): lists up to RANK_SORT_MAX long by ranking
 * their keys (branch-free, O(n^2) vector compares, below a heapsort's
 * mispredicted branches), longer ones by heapsort. */
static void sort_neighbors(float *d, uint32_t *idx, size_t n)
{
    if (n > RANK_SORT_MAX) {
        sort_pairs(d, idx, n);
        return;
    }
    if (n < 2)
        return;
    uint64_t key[RANK_SORT_MAX], sorted[RANK_SORT_MAX];
    for (size_t j = 0; j < n; j++)
        key[j] = kd_key(d[j], idx[j]);
    rank_keys(key, n, n, sorted);
    for (size_t j = 0; j < n; j++) {
        d[j] = kd_key_dist2(sorted[j]);
        idx[j] = (uint32_t)sorted[j];
    }
}

size_t ISA_FN(kd_knn)(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2)
{
    if (k <= KNN_BUFFERED_MAX)
        return knn_buffered(t, q, k, limit, index, dist2);
    knn_visitor v = {{knn_visit_heap, limit}, {dist2, index, 0, k}};
    kd_traverse(t, q, &v.base);
    sort_pairs(dist2, index, v.heap.size);
    return v.heap.size;
}

/* sorted 0 leaves the list in the order the traversal met the points: the
 * same for a tree and a query on every run, without the sort, which at a
 * hundred neighbors costs more than the search (bench/NOTES.md, issue 16). */
int ISA_FN(kd_radius)(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb)
{
    nb->count = 0;
    radius_visitor v = {{radius_visit, limit}, nb, 0};
    kd_traverse(t, q, &v.base);
    if (v.failed)
        return -1;
    if (sorted)
        sort_neighbors(nb->dist2, nb->index, nb->count);
    return 0;
}
