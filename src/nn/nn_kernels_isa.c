/* Nearest-neighbor kernels, compiled once per ISA by cmake/isa.cmake:
 * PTREG_ISA_SUFFIX names the copy (_generic, _avx2, _avx512) and the
 * compiler flags decide which vector path below is built. Every path
 * computes each distance with the formula of nn.h and resolves ties by the
 * lowest index, so all copies return the same bits. */
#include <math.h>
#include <string.h>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/cpu_isa.h"
#include "nn/nn_kernels.h"

/* Brute force: the target in tiles that stay in L1 while a block of
 * queries runs over them. */
#define BRUTE_TILE 2048
#define BRUTE_QUERY_BLOCK 64

#if defined(__AVX512F__)
/* Best (d, j) of one query over target [j0, j1): per-lane minima with the
 * strict < keep each lane's lowest index, then a lexicographic reduction. */
static void brute_tile(const brute_target *t, size_t j0, size_t j1, const float *q, float *best_d, uint32_t *best_i)
{
    __m512 qx = _mm512_set1_ps(q[0]), qy = _mm512_set1_ps(q[1]), qz = _mm512_set1_ps(q[2]);
    __m512 bd = _mm512_set1_ps(INFINITY);
    __m512i bi = _mm512_set1_epi32(-1);
    __m512i j = _mm512_add_epi32(_mm512_set1_epi32((int)j0),
                                 _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m512i step = _mm512_set1_epi32(16);
    for (size_t k = j0; k < j1; k += 16) {
        __m512 dx = _mm512_sub_ps(qx, _mm512_loadu_ps(t->x + k));
        __m512 dy = _mm512_sub_ps(qy, _mm512_loadu_ps(t->y + k));
        __m512 dz = _mm512_sub_ps(qz, _mm512_loadu_ps(t->z + k));
        __m512 d = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)), _mm512_mul_ps(dz, dz));
        __mmask16 lt = _mm512_cmp_ps_mask(d, bd, _CMP_LT_OQ);
        bd = _mm512_mask_mov_ps(bd, lt, d);
        bi = _mm512_mask_mov_epi32(bi, lt, j);
        j = _mm512_add_epi32(j, step);
    }
    float lane_d[16];
    uint32_t lane_i[16];
    _mm512_storeu_ps(lane_d, bd);
    _mm512_storeu_si512((void *)lane_i, bi);
    for (int l = 0; l < 16; l++)
        if (lane_i[l] != PTREG_NO_NEIGHBOR && kd_better(lane_d[l], lane_i[l], *best_d, *best_i)) {
            *best_d = lane_d[l];
            *best_i = lane_i[l];
        }
}
#elif defined(__AVX2__)
static void brute_tile(const brute_target *t, size_t j0, size_t j1, const float *q, float *best_d, uint32_t *best_i)
{
    __m256 qx = _mm256_set1_ps(q[0]), qy = _mm256_set1_ps(q[1]), qz = _mm256_set1_ps(q[2]);
    __m256 bd = _mm256_set1_ps(INFINITY);
    __m256i bi = _mm256_set1_epi32(-1);
    __m256i j = _mm256_add_epi32(_mm256_set1_epi32((int)j0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i step = _mm256_set1_epi32(8);
    for (size_t k = j0; k < j1; k += 8) {
        __m256 dx = _mm256_sub_ps(qx, _mm256_loadu_ps(t->x + k));
        __m256 dy = _mm256_sub_ps(qy, _mm256_loadu_ps(t->y + k));
        __m256 dz = _mm256_sub_ps(qz, _mm256_loadu_ps(t->z + k));
        __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
        __m256 lt = _mm256_cmp_ps(d, bd, _CMP_LT_OQ);
        bd = _mm256_blendv_ps(bd, d, lt);
        bi = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(bi), _mm256_castsi256_ps(j), lt));
        j = _mm256_add_epi32(j, step);
    }
    float lane_d[8];
    uint32_t lane_i[8];
    _mm256_storeu_ps(lane_d, bd);
    _mm256_storeu_si256((__m256i *)lane_i, bi);
    for (int l = 0; l < 8; l++)
        if (lane_i[l] != PTREG_NO_NEIGHBOR && kd_better(lane_d[l], lane_i[l], *best_d, *best_i)) {
            *best_d = lane_d[l];
            *best_i = lane_i[l];
        }
}
#else
static void brute_tile(const brute_target *t, size_t j0, size_t j1, const float *q, float *best_d, uint32_t *best_i)
{
    if (j1 > t->m)
        j1 = t->m;
    for (size_t k = j0; k < j1; k++) {
        float d = kd_dist2(q[0], q[1], q[2], t->x[k], t->y[k], t->z[k]);
        if (kd_better(d, (uint32_t)k, *best_d, *best_i)) {
            *best_d = d;
            *best_i = (uint32_t)k;
        }
    }
}
#endif

/* The vector paths skip distances that overflow to +inf (inf < inf is
 * false); the rare query whose every distance overflows is redone in the
 * lexicographic scalar order so the answer still matches the other
 * methods. */
static void brute_scalar(const brute_target *t, const float *q, float *best_d, uint32_t *best_i)
{
    for (size_t k = 0; k < t->m; k++) {
        float d = kd_dist2(q[0], q[1], q[2], t->x[k], t->y[k], t->z[k]);
        if (kd_better(d, (uint32_t)k, *best_d, *best_i)) {
            *best_d = d;
            *best_i = (uint32_t)k;
        }
    }
}

void ISA_FN(brute_range)(const brute_target *t, const float *q, size_t nq, uint32_t *index, float *dist2)
{
    for (size_t b0 = 0; b0 < nq; b0 += BRUTE_QUERY_BLOCK) {
        size_t b1 = b0 + BRUTE_QUERY_BLOCK < nq ? b0 + BRUTE_QUERY_BLOCK : nq;
        for (size_t i = b0; i < b1; i++) {
            dist2[i] = INFINITY;
            index[i] = PTREG_NO_NEIGHBOR;
        }
        for (size_t j0 = 0; j0 < t->m_pad; j0 += BRUTE_TILE) {
            size_t j1 = j0 + BRUTE_TILE < t->m_pad ? j0 + BRUTE_TILE : t->m_pad;
            for (size_t i = b0; i < b1; i++)
                brute_tile(t, j0, j1, q + 3 * i, &dist2[i], &index[i]);
        }
        for (size_t i = b0; i < b1; i++)
            if (index[i] == PTREG_NO_NEIGHBOR)
                brute_scalar(t, q + 3 * i, &dist2[i], &index[i]);
    }
}

/* ---- k-d tree 1-NN, in slot space ---- */

/* (d, slot s) beats the best so far: ties go to the lower original index,
 * looked up only for a true tie with another point. */
static inline int kd_better_slot(const ptreg_kdtree *t, float d, uint32_t s, float best_d, uint32_t best_s)
{
    if (d < best_d)
        return 1;
    if (!(d == best_d) || s == best_s)
        return 0;
    return best_s == PTREG_NO_NEIGHBOR || t->index[s] < t->index[best_s];
}

/* Lanes of chunk c whose distance is <= best_d (NaN padding never
 * qualifies), and their distances. */
static inline unsigned kd_chunk_candidates(const kd_chunk *c, float qx, float qy, float qz, float best_d,
                                           float lane_d[PTREG_KD_LANES])
{
#if defined(__AVX512F__)
    __m512 dx = _mm512_sub_ps(_mm512_set1_ps(qx), _mm512_load_ps(c->x));
    __m512 dy = _mm512_sub_ps(_mm512_set1_ps(qy), _mm512_load_ps(c->y));
    __m512 dz = _mm512_sub_ps(_mm512_set1_ps(qz), _mm512_load_ps(c->z));
    __m512 d = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)), _mm512_mul_ps(dz, dz));
    unsigned mask = _mm512_cmp_ps_mask(d, _mm512_set1_ps(best_d), _CMP_LE_OQ);
    if (mask)
        _mm512_storeu_ps(lane_d, d);
    return mask;
#elif defined(__AVX2__)
    unsigned mask = 0;
    for (int h = 0; h < 2; h++) {
        __m256 dx = _mm256_sub_ps(_mm256_set1_ps(qx), _mm256_load_ps(c->x + 8 * h));
        __m256 dy = _mm256_sub_ps(_mm256_set1_ps(qy), _mm256_load_ps(c->y + 8 * h));
        __m256 dz = _mm256_sub_ps(_mm256_set1_ps(qz), _mm256_load_ps(c->z + 8 * h));
        __m256 d = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
        unsigned m = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d, _mm256_set1_ps(best_d), _CMP_LE_OQ));
        if (m)
            _mm256_storeu_ps(lane_d + 8 * h, d);
        mask |= m << (8 * h);
    }
    return mask;
#else
    unsigned mask = 0;
    for (unsigned l = 0; l < PTREG_KD_LANES; l++) {
        lane_d[l] = kd_dist2(qx, qy, qz, c->x[l], c->y[l], c->z[l]);
        mask |= (unsigned)(lane_d[l] <= best_d) << l;
    }
    return mask;
#endif
}

/* Scans one leaf chunk: the candidate lanes are settled in lane order. */
static inline void kd_scan_chunk(const ptreg_kdtree *t, uint32_t chunk, float qx, float qy, float qz, float *best_d,
                                 uint32_t *best_s)
{
    float lane_d[PTREG_KD_LANES];
    unsigned mask = kd_chunk_candidates(&t->chunks[chunk], qx, qy, qz, *best_d, lane_d);
    const uint32_t base = chunk * PTREG_KD_LANES;
    while (mask) {
        unsigned l = (unsigned)__builtin_ctz(mask);
        mask &= mask - 1;
        if (kd_better_slot(t, lane_d[l], base + l, *best_d, *best_s)) {
            *best_d = lane_d[l];
            *best_s = base + l;
        }
    }
}

#if defined(__AVX2__)
/* kd_lane_bound for 8 boxes side by side (lanes 0..7 of rows
 * `stride` apart), same bits. */
static inline __m256 kd_bounds8(const float *lo, const float *hi, unsigned stride, const float *q)
{
    __m256 g2[3];
    for (unsigned k = 0; k < 3; k++) {
        const __m256 qk = _mm256_set1_ps(q[k]);
        const __m256 below = _mm256_sub_ps(_mm256_loadu_ps(lo + k * stride), qk);
        const __m256 above = _mm256_sub_ps(qk, _mm256_loadu_ps(hi + k * stride));
        const __m256 gap = _mm256_max_ps(_mm256_max_ps(below, above), _mm256_setzero_ps());
        g2[k] = _mm256_mul_ps(gap, gap);
    }
    return _mm256_add_ps(_mm256_add_ps(g2[0], g2[1]), g2[2]);
}
#endif

#if defined(__AVX512F__)
/* The box bounds of a leaf's 16 chunks (kd_chunk_bound, same bits). */
static inline __m512 kd_leaf_bounds16(const kd_leaf *leaf, const float *q)
{
    __m512 g2[3];
    for (int k = 0; k < 3; k++) {
        const __m512 qk = _mm512_set1_ps(q[k]);
        const __m512 below = _mm512_sub_ps(_mm512_load_ps(leaf->lo[k]), qk);
        const __m512 above = _mm512_sub_ps(qk, _mm512_load_ps(leaf->hi[k]));
        const __m512 gap = _mm512_max_ps(_mm512_max_ps(below, above), _mm512_setzero_ps());
        g2[k] = _mm512_mul_ps(gap, gap);
    }
    return _mm512_add_ps(_mm512_add_ps(g2[0], g2[1]), g2[2]);
}
#endif

/* Which of the leaf's chunks can hold a point within best_d: bit c set
 * when chunk c's box bound (kd_chunk_bound, same bits) is <= best_d. */
static inline unsigned kd_leaf_chunk_mask(const kd_leaf *leaf, const float *q, float best_d)
{
#if defined(__AVX512F__)
    return _mm512_cmp_ps_mask(kd_leaf_bounds16(leaf, q), _mm512_set1_ps(best_d), _CMP_LE_OQ);
#elif defined(__AVX2__)
    unsigned mask = 0;
    for (unsigned h = 0; h < PTREG_KD_LEAF_CHUNKS / 8; h++) {
        const __m256 bound = kd_bounds8(&leaf->lo[0][8 * h], &leaf->hi[0][8 * h], PTREG_KD_LEAF_CHUNKS, q);
        mask |= (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(bound, _mm256_set1_ps(best_d), _CMP_LE_OQ)) << (8 * h);
    }
    return mask;
#else
    unsigned mask = 0;
    for (unsigned c = 0; c < PTREG_KD_LEAF_CHUNKS; c++)
        mask |= (unsigned)(kd_chunk_bound(leaf, c, q) <= best_d) << c;
    return mask;
#endif
}

/* Scans the chunks of a leaf that can hold a point within best_d. */
static inline void kd_scan_leaf(const ptreg_kdtree *t, const kd_leaf *leaf, const float *q, float *best_d,
                                uint32_t *best_s)
{
    /* the empty boxes of missing chunks bound to +inf, which an unseeded
     * search's best (+inf) would not reject */
    unsigned mask = kd_leaf_chunk_mask(leaf, q, *best_d) & ((1u << leaf->chunks) - 1u);
    while (mask) {
        unsigned c = (unsigned)__builtin_ctz(mask);
        mask &= mask - 1;
        kd_scan_chunk(t, leaf->first_chunk + c, q[0], q[1], q[2], best_d, best_s);
    }
}

/* Scans the seed leaf's neighbors (but leaf `skip`, already scanned) that
 * can hold a point within best_d (8 box bounds per vector operation, same
 * bits as kd_box_bound). */
static inline void kd_scan_neighbors(const ptreg_kdtree *t, const kd_leaf *leaf, uint32_t skip, const float *q,
                                     float *best_d, uint32_t *best_s)
{
    const kd_near *blk = &t->near[leaf->near_first], *end = blk + leaf->near_blocks;
    for (; blk < end; blk++) {
#if defined(__AVX2__)
        const __m256 bound = kd_bounds8(&blk->lo[0][0], &blk->hi[0][0], PTREG_KD_NEAR_LANES, q);
        unsigned mask = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(bound, _mm256_set1_ps(*best_d), _CMP_LE_OQ));
#else
        unsigned mask = 0;
        for (unsigned l = 0; l < PTREG_KD_NEAR_LANES; l++)
            mask |= (unsigned)(kd_lane_bound(&blk->lo[0][0], &blk->hi[0][0], PTREG_KD_NEAR_LANES, l, q) <= *best_d)
                    << l;
#endif
        /* missing lanes bound to +inf, which a +inf best would not reject */
        while (mask) {
            unsigned l = (unsigned)__builtin_ctz(mask);
            mask &= mask - 1;
            if (blk->leaf[l] != PTREG_NO_NEIGHBOR && blk->leaf[l] != skip)
                kd_scan_leaf(t, &t->leaves[blk->leaf[l]], q, best_d, best_s);
        }
    }
}

/* True when no point outside the seed leaf's neighbors can tie or beat
 * best_d: such a point is farther than reach - g from q (g: q's distance to
 * the leaf's box). Worked in double with margins far above every rounding
 * of the float distances (1e-5 relative on best_d), so the answer stays the
 * one brute force gives. */
static inline int kd_neighbors_certify(const kd_leaf *leaf, const float *q, float best_d)
{
    double g2 = 0.0;
    for (int k = 0; k < 3; k++) {
        double below = (double)leaf->box_lo[k] - q[k], above = (double)q[k] - leaf->box_hi[k];
        double g = below > above ? below : above;
        g = g > 0.0 ? g : 0.0; /* compares, not fmax: that is a call to libm */
        g2 += g * g;
    }
    return sqrt((double)best_d * (1.0 + 1e-5)) + sqrt(g2) * (1.0 + 1e-12) < leaf->reach * (1.0 - 1e-12);
}

/* True when no point outside the cell's subtree can be as close to q as
 * best_d: on every axis the query's gap to the outside is positive and its
 * square (rounded as in a distance) exceeds best_d. */
static inline int kd_ball_inside(const kd_cell *cell, const float *q, float best_d)
{
#if defined(__AVX2__)
    /* lanes x y z and the cell's pad, masked off */
    const __m128 qv = _mm_setr_ps(q[0], q[1], q[2], 0.0f), bd = _mm_set1_ps(best_d);
    const __m128 below = _mm_sub_ps(qv, _mm_loadu_ps(cell->lo));
    const __m128 above = _mm_sub_ps(_mm_loadu_ps(cell->hi), qv);
    const __m128 zero = _mm_setzero_ps();
    __m128 ok = _mm_and_ps(_mm_cmpgt_ps(below, zero), _mm_cmpgt_ps(above, zero));
    ok = _mm_and_ps(ok, _mm_cmpgt_ps(_mm_mul_ps(below, below), bd));
    ok = _mm_and_ps(ok, _mm_cmpgt_ps(_mm_mul_ps(above, above), bd));
    return (_mm_movemask_ps(ok) & 7) == 7;
#else
    for (int k = 0; k < 3; k++) {
        float below = q[k] - cell->lo[k], above = cell->hi[k] - q[k];
        if (!(below > 0.0f && above > 0.0f && below * below > best_d && above * above > best_d))
            return 0;
    }
    return 1;
#endif
}

/* A subtree waiting to be searched and the lower bound of its distance. */
typedef struct kd_frame {
    uint32_t ref;
    float bound;
} kd_frame;

/* Both children's box bounds (kd_box_bound) at once: lanes hold
 * x0 x1 y0 y1 z0 z1 of the node's boxes; lanes 6 and 7 read past them and
 * are ignored. The sum keeps the distance formula's order,
 * (x*x + y*y) + z*z, so the bounds are the same bits as the scalar ones. */
#if defined(__AVX2__)
typedef __m256 kd_query_lanes; /* the query as x x y y z z 0 0 */
static inline kd_query_lanes kd_query_lanes_of(const float *q)
{
    return _mm256_setr_ps(q[0], q[0], q[1], q[1], q[2], q[2], 0.0f, 0.0f);
}
#else
typedef const float *kd_query_lanes;
static inline kd_query_lanes kd_query_lanes_of(const float *q) { return q; }
#endif

static inline void kd_child_bounds(const kd_node *nd, kd_query_lanes qv, float *b0, float *b1)
{
#if defined(__AVX2__)
    const __m256 below = _mm256_sub_ps(_mm256_loadu_ps(&nd->lo[0][0]), qv);
    const __m256 above = _mm256_sub_ps(qv, _mm256_loadu_ps(&nd->hi[0][0]));
    const __m256 gap = _mm256_max_ps(_mm256_max_ps(below, above), _mm256_setzero_ps());
    const __m256 sq = _mm256_mul_ps(gap, gap);
    const __m128 xy = _mm256_castps256_ps128(sq), z = _mm256_extractf128_ps(sq, 1);
    const __m128 sum = _mm_add_ps(_mm_add_ps(xy, _mm_movehl_ps(xy, xy)), z);
    *b0 = _mm_cvtss_f32(sum);
    *b1 = _mm_cvtss_f32(_mm_shuffle_ps(sum, sum, 1));
#else
    *b0 = kd_box_bound(nd, 0, qv);
    *b1 = kd_box_bound(nd, 1, qv);
#endif
}

/* Depth-first search below internal node `node`, nearer child first;
 * children whose box bound exceeds the best distance are skipped. */
static void kd_search_from(const ptreg_kdtree *t, uint32_t node, const float *q, float *best_d, uint32_t *best_s)
{
    kd_frame stack[PTREG_KD_MAX_DEPTH + 2];
    int sp = 0;
    uint32_t ref = node;
    const kd_query_lanes qv = kd_query_lanes_of(q);
    for (;;) {
        if (ref & PTREG_KD_LEAF_BIT) {
            kd_scan_leaf(t, &t->leaves[ref & ~PTREG_KD_LEAF_BIT], q, best_d, best_s);
        } else {
            const kd_node *nd = &t->nodes[ref];
            float b0, b1;
            kd_child_bounds(nd, qv, &b0, &b1);
            /* Branch-free: which side is nearer is a coin flip per level. */
            const int near = b1 < b0;
            const float near_b = near ? b1 : b0, far_b = near ? b0 : b1;
            stack[sp] = (kd_frame){nd->child[!near], far_b};
            sp += far_b <= *best_d;
            if (near_b <= *best_d) {
                ref = nd->child[near];
                continue;
            }
        }
        for (;;) {
            if (sp == 0)
                return;
            const kd_frame *f = &stack[--sp];
            if (f->bound <= *best_d) {
                ref = f->ref;
                break;
            }
        }
    }
}

/* A seeded search ends in the seed's leaf when the ball through the seed
 * stays inside it, or in the leaf's neighbors when they certify the best;
 * otherwise it climbs to the nearest ancestor the ball stays inside (or the
 * root) and searches below. An unseeded one searches from the root. The
 * ball starts no wider than limit: a query far from every point then
 * prunes at once instead of searching far (no answer: NO_NEIGHBOR). */
static void kd_nearest_one(const ptreg_kdtree *t, const float *q, uint32_t seed, float limit, uint32_t *out_s,
                           float *out_d)
{
    float best_d = limit;
    uint32_t best_s = PTREG_NO_NEIGHBOR, node = 0;
    if (seed != PTREG_NO_NEIGHBOR) {
        const kd_chunk *c = &t->chunks[seed / PTREG_KD_LANES];
        unsigned l = seed % PTREG_KD_LANES;
        const float seed_d = kd_dist2(q[0], q[1], q[2], c->x[l], c->y[l], c->z[l]);
        if (seed_d <= limit)
            best_d = seed_d, best_s = seed;
        /* The answer is usually in the seed's leaf: scanning it first
         * shrinks the ball, which then more often stays inside the leaf and
         * meets fewer of its neighbors. */
        const uint32_t seed_leaf = c->leaf;
        const kd_leaf *leaf = &t->leaves[seed_leaf];
        kd_scan_leaf(t, leaf, q, &best_d, &best_s);
        if (kd_ball_inside(&leaf->cell, q, best_d))
            goto found;
        /* the neighbors can only certify a ball narrower than their reach */
        if ((double)best_d < leaf->reach * leaf->reach) {
            kd_scan_neighbors(t, leaf, seed_leaf, q, &best_d, &best_s);
            if (kd_neighbors_certify(leaf, q, best_d))
                goto found;
        }
        node = leaf->parent;
        while (node != 0 && !kd_ball_inside(&t->cells[node], q, best_d))
            node = t->parent[node];
    }
    kd_search_from(t, node, q, &best_d, &best_s);
found:
    *out_s = best_s;
    *out_d = best_s == PTREG_NO_NEIGHBOR ? INFINITY : best_d;
}

void ISA_FN(kd_nearest_range)(const ptreg_kdtree *tree, const float *q, size_t nq, float limit,
                              const uint32_t *hint_slot, uint32_t *out_slot, float *dist2)
{
    /* Without a seed of its own a query starts from its predecessor's
     * answer: callers pass spatially coherent batches (scans in raster
     * order, ICP's moved source), where that is usually close. A query
     * equal to its predecessor takes its answer: a scanner's invalid
     * returns, thousands of points at the origin, would each scan the
     * target's thousands of copies of it. */
    for (size_t i = 0; i < nq; i++) {
        const float *qi = q + 3 * i;
        if (i > 0 && qi[0] == qi[-3] && qi[1] == qi[-2] && qi[2] == qi[-1]) {
            out_slot[i] = out_slot[i - 1];
            dist2[i] = dist2[i - 1];
            continue;
        }
        uint32_t seed = hint_slot ? hint_slot[i] : PTREG_NO_NEIGHBOR;
        if (seed == PTREG_NO_NEIGHBOR && i > 0)
            seed = out_slot[i - 1];
        kd_nearest_one(tree, q + 3 * i, seed, limit, &out_slot[i], &dist2[i]);
    }
}

/* ---- Delaunay walks ---- */

/* delaunay-kdann's start: the leaf the tree's descent reaches without
 * backtracking (nearer box at each node), and in it the nearest point of
 * the chunk whose box is nearest. The walk makes the answer exact, so the
 * start only has to be close, and cheap. */
#if defined(__AVX512F__)
/* The lane holding the smallest value (NaN lanes never): ties to the
 * lowest lane. */
static inline unsigned argmin16(__m512 v)
{
    v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), v, _mm512_set1_ps(INFINITY));
    const __m512 least = _mm512_set1_ps(_mm512_reduce_min_ps(v));
    return (unsigned)__builtin_ctz(_mm512_cmp_ps_mask(v, least, _CMP_EQ_OQ) | 0x10000u) & 15u;
}
#elif defined(__AVX2__)
static inline unsigned argmin16(__m256 lo, __m256 hi)
{
    const __m256 inf = _mm256_set1_ps(INFINITY);
    lo = _mm256_blendv_ps(lo, inf, _mm256_cmp_ps(lo, lo, _CMP_UNORD_Q));
    hi = _mm256_blendv_ps(hi, inf, _mm256_cmp_ps(hi, hi, _CMP_UNORD_Q));
    __m256 m = _mm256_min_ps(lo, hi);
    m = _mm256_min_ps(m, _mm256_permute2f128_ps(m, m, 1));
    m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    unsigned mask = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(lo, m, _CMP_EQ_OQ)) |
                    (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(hi, m, _CMP_EQ_OQ)) << 8;
    return (unsigned)__builtin_ctz(mask | 0x10000u) & 15u;
}
#else
static inline unsigned argmin16(const float *v)
{
    unsigned best = 0;
    for (unsigned l = 1; l < 16; l++)
        best = v[l] < v[best] || v[best] != v[best] ? l : best;
    return best;
}
#endif

/* The leaf's chunk whose box is nearest q (missing chunks' empty boxes
 * bound to +inf). */
static inline unsigned kd_nearest_chunk(const kd_leaf *leaf, const float *q)
{
#if defined(__AVX512F__)
    return argmin16(kd_leaf_bounds16(leaf, q));
#elif defined(__AVX2__)
    return argmin16(kd_bounds8(&leaf->lo[0][0], &leaf->hi[0][0], PTREG_KD_LEAF_CHUNKS, q),
                    kd_bounds8(&leaf->lo[0][8], &leaf->hi[0][8], PTREG_KD_LEAF_CHUNKS, q));
#else
    float b[PTREG_KD_LEAF_CHUNKS];
    for (unsigned c = 0; c < PTREG_KD_LEAF_CHUNKS; c++)
        b[c] = kd_chunk_bound(leaf, c, q);
    return argmin16(b);
#endif
}

/* The chunk's lane nearest q (NaN padding never). */
static inline unsigned kd_nearest_lane(const kd_chunk *c, const float *q)
{
    float d[PTREG_KD_LANES];
    for (unsigned l = 0; l < PTREG_KD_LANES; l++) /* kept where no lane qualifies (q not finite) */
        d[l] = INFINITY;
    kd_chunk_candidates(c, q[0], q[1], q[2], INFINITY, d);
#if defined(__AVX512F__)
    return argmin16(_mm512_loadu_ps(d));
#elif defined(__AVX2__)
    return argmin16(_mm256_loadu_ps(d), _mm256_loadu_ps(d + 8));
#else
    return argmin16(d);
#endif
}

/* delaunay-kdann's start: descend the tree towards q without
 * backtracking, to the leaf's chunk whose box is nearest and its nearest
 * point. The walk makes the answer exact, so the start only has to be
 * close, and cheap. */
static uint32_t kd_descend_start(const ptreg_kdtree *t, const float *q)
{
    uint32_t ref = 0;
    const kd_query_lanes qv = kd_query_lanes_of(q);
    while (!(ref & PTREG_KD_LEAF_BIT)) {
        const kd_node *nd = &t->nodes[ref];
        float b0, b1;
        kd_child_bounds(nd, qv, &b0, &b1);
        ref = nd->child[b1 < b0];
    }
    const kd_leaf *leaf = &t->leaves[ref & ~PTREG_KD_LEAF_BIT];
    unsigned c = kd_nearest_chunk(leaf, q);
    c = c < leaf->chunks ? c : 0; /* missing chunks' boxes are empty, unless a loaded file lies */
    const uint32_t chunk = leaf->first_chunk + c;
    return chunk * PTREG_KD_LANES + kd_nearest_lane(&t->chunks[chunk], q);
}

/* One step's test over point i's edges, u = q - x_i: the neighbor with the
 * largest c = u.e among those with c > half (q is closer to it than to x_i),
 * or PTREG_NO_NEIGHBOR when there is none and x_i is where the walk stops.
 * Then *certain tells whether x_i is certainly q's nearest point under the
 * float distances of nn.h: q lies inside x_i's Voronoi cell (the half-spaces
 * of its Delaunay neighbors) by a margin delta that makes every other point
 * at least 4 * half_min * delta farther in squared distance (the point
 * nearest x_i is a neighbor, so no other is closer to x_i than
 * 2 * half_min), and that gap is over 1e-5 of q's squared distance, far
 * above the rounding of float distances. delta is each edge's half - c less
 * 4e-7 of |u| + half, more than the rounding of c and of the stored edge. */
#define DT_ROUNDING 4e-7f
#define DT_GAP 1e-5f

static inline const dt_head *dt_row(const delaunay_graph *g, uint32_t slot)
{
    return (const dt_head *)(g->rows + (size_t)g->row_at[slot] * sizeof(dt_head));
}

/* A walk's stop: whether it is certain, and then q's margin inside the
 * cell (delta) and 4 * half_min, which ICP's next pass can reuse
 * (dt_memory). */
typedef struct dt_stop {
    int certain;
    float margin, scale;
} dt_stop;

static inline uint32_t dt_next(const delaunay_graph *g, const dt_head *row, const float u[3], dt_stop *stop)
{
    const dt_block *blk = (const dt_block *)(row + 1);
    const uint32_t blocks = (row->degree + PTREG_DT_LANES - 1) / PTREG_DT_LANES;
    const float ulen = sqrtf((u[0] * u[0] + u[1] * u[1]) + u[2] * u[2]);
    uint32_t next = PTREG_NO_NEIGHBOR;
    float best_c = -INFINITY, delta = INFINITY, half_min = INFINITY;
#if defined(__AVX512F__)
    const __m512 ux = _mm512_set1_ps(u[0]), uy = _mm512_set1_ps(u[1]), uz = _mm512_set1_ps(u[2]);
    const __m512 slack = _mm512_set1_ps(DT_ROUNDING * ulen), keep = _mm512_set1_ps(1.0f - DT_ROUNDING);
    __m512 gap_min = _mm512_set1_ps(INFINITY), half_lo = gap_min;
    for (uint32_t b = 0; b < blocks; b++) {
        const __m512 half = _mm512_load_ps(blk[b].half);
        const __m512 c = _mm512_add_ps(
            _mm512_add_ps(_mm512_mul_ps(ux, _mm512_load_ps(blk[b].ex)), _mm512_mul_ps(uy, _mm512_load_ps(blk[b].ey))),
            _mm512_mul_ps(uz, _mm512_load_ps(blk[b].ez)));
        const __mmask16 over = _mm512_cmp_ps_mask(c, half, _CMP_GT_OQ);
        if (over) {
            float m = _mm512_mask_reduce_max_ps(over, c);
            if (m > best_c) {
                __mmask16 at = _mm512_mask_cmp_ps_mask(over, c, _mm512_set1_ps(m), _CMP_EQ_OQ);
                best_c = m;
                next = g->nbr[row->nbr_first + b * PTREG_DT_LANES + (uint32_t)__builtin_ctz(at)];
            }
            continue;
        }
        gap_min = _mm512_min_ps(gap_min, _mm512_sub_ps(_mm512_sub_ps(_mm512_mul_ps(half, keep), c), slack));
        half_lo = _mm512_min_ps(half_lo, half);
    }
    if (next == PTREG_NO_NEIGHBOR) {
        delta = _mm512_reduce_min_ps(gap_min);
        half_min = _mm512_reduce_min_ps(half_lo);
    }
#elif defined(__AVX2__)
    const __m256 ux = _mm256_set1_ps(u[0]), uy = _mm256_set1_ps(u[1]), uz = _mm256_set1_ps(u[2]);
    const __m256 slack = _mm256_set1_ps(DT_ROUNDING * ulen), keep = _mm256_set1_ps(1.0f - DT_ROUNDING);
    __m256 gap_min = _mm256_set1_ps(INFINITY), half_lo = gap_min;
    for (uint32_t k = 0; k < blocks * 2; k++) {
        const dt_block *b = &blk[k / 2];
        const unsigned h = 8 * (k % 2);
        const __m256 half = _mm256_load_ps(b->half + h);
        const __m256 c = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(ux, _mm256_load_ps(b->ex + h)), _mm256_mul_ps(uy, _mm256_load_ps(b->ey + h))),
            _mm256_mul_ps(uz, _mm256_load_ps(b->ez + h)));
        unsigned over = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(c, half, _CMP_GT_OQ));
        if (over) {
            float lanes[8];
            _mm256_storeu_ps(lanes, c);
            for (; over; over &= over - 1) {
                unsigned l = (unsigned)__builtin_ctz(over);
                if (lanes[l] > best_c) {
                    best_c = lanes[l];
                    next = g->nbr[row->nbr_first + k * 8 + l];
                }
            }
            continue;
        }
        gap_min = _mm256_min_ps(gap_min, _mm256_sub_ps(_mm256_sub_ps(_mm256_mul_ps(half, keep), c), slack));
        half_lo = _mm256_min_ps(half_lo, half);
    }
    if (next == PTREG_NO_NEIGHBOR) {
        float g8[8], h8[8];
        _mm256_storeu_ps(g8, gap_min);
        _mm256_storeu_ps(h8, half_lo);
        for (int l = 0; l < 8; l++) {
            delta = g8[l] < delta ? g8[l] : delta;
            half_min = h8[l] < half_min ? h8[l] : half_min;
        }
    }
#else
    for (uint32_t k = 0; k < blocks * PTREG_DT_LANES; k++) {
        const dt_block *b = &blk[k / PTREG_DT_LANES];
        unsigned l = k % PTREG_DT_LANES;
        float c = (u[0] * b->ex[l] + u[1] * b->ey[l]) + u[2] * b->ez[l];
        if (c > b->half[l] && c > best_c) {
            best_c = c;
            next = g->nbr[row->nbr_first + k];
        }
        float gap = (b->half[l] * (1.0f - DT_ROUNDING) - c) - DT_ROUNDING * ulen;
        delta = gap < delta ? gap : delta;
        half_min = b->half[l] < half_min ? b->half[l] : half_min;
    }
#endif
    stop->margin = delta, stop->scale = 4.0f * half_min;
    stop->certain = next == PTREG_NO_NEIGHBOR && blocks && delta > 0.0f && stop->scale * delta > DT_GAP * ulen * ulen;
    return next;
}

/* Walks from slot s (one with a row) towards q while a neighbor is closer
 * (its float distance must drop too, so rounding cannot make the walk
 * cycle); returns where it stopped, its distance, the steps taken and the
 * stop (dt_next). */
#define DT_MAX_STEPS 100000

static uint32_t dt_walk(const delaunay_graph *g, const float *q, uint32_t s, float *d, unsigned *steps, dt_stop *stop)
{
    const dt_head *row = dt_row(g, s);
    *d = kd_dist2(q[0], q[1], q[2], row->x, row->y, row->z);
    stop->certain = 0;
    for (*steps = 0; *steps < DT_MAX_STEPS; ++*steps) {
        const float u[3] = {q[0] - row->x, q[1] - row->y, q[2] - row->z};
        uint32_t next = dt_next(g, row, u, stop);
        if (next == PTREG_NO_NEIGHBOR)
            break;
        const dt_head *nrow = dt_row(g, next);
        float dn = kd_dist2(q[0], q[1], q[2], nrow->x, nrow->y, nrow->z);
        if (!(dn < *d)) {
            stop->certain = 0;
            break;
        }
        s = next, row = nrow, *d = dn;
    }
    return s;
}

/* The last answer, for a query that has moved since it was certain there:
 * q is still inside the answer's Voronoi cell by at least the old margin
 * less the distance moved (each rounded the safe way), and that margin
 * certifies exactly as in dt_next, with d = q's distance to the answer. */
static inline int dt_still_certain(const dt_memory *mem, const float *q, float d, float *margin)
{
    const float dx = q[0] - mem->q[0], dy = q[1] - mem->q[1], dz = q[2] - mem->q[2];
    const float moved = sqrtf((dx * dx + dy * dy) + dz * dz);
    *margin = mem->margin * (1.0f - DT_ROUNDING) - moved * (1.0f + DT_ROUNDING);
    return *margin > 0.0f && mem->scale * *margin > DT_GAP * d * (1.0f + DT_ROUNDING);
}

static inline void dt_remember(dt_memory *mem, const float *q, float margin, const float *p, float scale)
{
    *mem = (dt_memory){{q[0], q[1], q[2]}, margin, {p[0], p[1], p[2]}, scale};
}

static void tally_walk(ptreg_walk_stats *tally, unsigned steps, int fallback, int kept)
{
    tally->queries++;
    tally->steps += steps;
    tally->max_steps = steps > tally->max_steps ? steps : tally->max_steps;
    tally->histogram[steps < PTREG_WALK_HISTOGRAM - 1 ? steps : PTREG_WALK_HISTOGRAM - 1]++;
    tally->fallbacks += (uint64_t)fallback;
    tally->kept += (uint64_t)kept;
}

/* Nearest points by Delaunay walks. A walk the certificate does not accept
 * (q near a Voronoi face, or a row missing) is finished by the tree's
 * search seeded with where it stopped, so every answer is exact. With
 * memory (seeded starts only: mem[i] belongs to the seed slot[i]), a query
 * that moved less than its margin keeps its answer without a walk. */
void ISA_FN(dt_nearest_range)(const ptreg_kdtree *t, const delaunay_graph *g, const float *q, size_t nq,
                              walk_start start, uint32_t *slot, float *dist2, dt_memory *mem, ptreg_walk_stats *tally)
{
    for (size_t i = 0; i < nq; i++) {
        const float *qi = q + 3 * i;
        uint32_t s = start == PTREG_WALK_SEED ? slot[i] : PTREG_NO_NEIGHBOR;
        if (start == PTREG_WALK_KDANN)
            s = kd_descend_start(t, qi);
        if (s == PTREG_NO_NEIGHBOR || g->row_at[s] == UINT32_MAX)
            s = g->start;
        float d;
        if (mem && start == PTREG_WALK_SEED && s == slot[i] && mem[i].margin > 0.0f) {
            const float *p = mem[i].p;
            float margin;
            d = kd_dist2(qi[0], qi[1], qi[2], p[0], p[1], p[2]);
            if (dt_still_certain(&mem[i], qi, d, &margin)) {
                mem[i].q[0] = qi[0], mem[i].q[1] = qi[1], mem[i].q[2] = qi[2], mem[i].margin = margin;
                dist2[i] = d;
                tally_walk(tally, 0, 0, 1);
                continue;
            }
        }
        unsigned steps;
        dt_stop stop;
        s = dt_walk(g, qi, s, &d, &steps, &stop);
        if (!stop.certain)
            kd_nearest_one(t, qi, s, INFINITY, &s, &d);
        if (mem && stop.certain) {
            const dt_head *row = dt_row(g, s);
            const float p[3] = {row->x, row->y, row->z};
            dt_remember(&mem[i], qi, stop.margin, p, stop.scale);
        } else if (mem) {
            mem[i].margin = -1.0f; /* the tree's answer comes without a margin */
        }
        slot[i] = s;
        dist2[i] = d;
        tally_walk(tally, steps, !stop.certain, 0);
    }
}
