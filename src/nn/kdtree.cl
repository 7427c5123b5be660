/* The k-d tree's exact 1-NN on a device: the CPU tree's own arrays
 * (kdtree_impl.h), uploaded once as words, searched by one thread per
 * query, seeded by the last answer. The layout's offsets come as -D options
 * from the host's structs (nn_device.c), so the two cannot drift apart.
 * Every distance and box bound is the CPU's formula in the CPU's order
 * (no FMA), and ties go to the lower original index: the answer is the
 * CPU's, bit for bit. The CPU's leaf neighbor lists (a shortcut in double
 * precision) are not used: the climb to an enclosing cell is exact too. */

typedef struct kd_tree {
    GLOBAL const u32 *nodes;  /* KD_NODE_WORDS per internal node */
    GLOBAL const u32 *cells;  /* KD_CELL_WORDS per node: what lies outside it */
    GLOBAL const u32 *parent; /* per node */
    GLOBAL const u32 *leaves; /* KD_LEAF_WORDS per leaf */
    GLOBAL const u32 *chunks; /* KD_CHUNK_WORDS per chunk of KD_LANES points */
    GLOBAL const u32 *index;  /* per slot: the original index */
} kd_tree;

FN float kd_dist2(float qx, float qy, float qz, float px, float py, float pz)
{
    float dx = qx - px, dy = qy - py, dz = qz - pz;
    return (dx * dx + dy * dy) + dz * dz;
}

FN float kd_word(GLOBAL const u32 *a, size_t at) { return AS_FLOAT(a[at]); }

/* Words are counted in size_t: a chunk is KD_CHUNK_WORDS words for
 * KD_LANES slots, so a slot's word passes 2^32 at 2^30 slots. */
FN void kd_slot_point(const kd_tree *t, u32 slot, float p[3])
{
    size_t base = (size_t)(slot / KD_LANES) * KD_CHUNK_WORDS + slot % KD_LANES;
    p[0] = kd_word(t->chunks, base + KD_CHUNK_X);
    p[1] = kd_word(t->chunks, base + KD_CHUNK_Y);
    p[2] = kd_word(t->chunks, base + KD_CHUNK_Z);
}

/* kd_lane_box_bound: boxes side by side, lane `lane` of rows `stride`
 * words apart starting at lo and hi, against the box qlo..qhi. Float
 * subtraction is monotone, so the bound is never above the bound from any
 * point of qlo..qhi: what a box's gather finds covers its points' searches. */
FN float kd_lane_box_bound(GLOBAL const u32 *lo, GLOBAL const u32 *hi, u32 stride, u32 lane, const float qlo[3],
                           const float qhi[3])
{
    float g[3];
    for (u32 k = 0; k < 3; k++) {
        float below = AS_FLOAT(lo[k * stride + lane]) - qhi[k], above = qlo[k] - AS_FLOAT(hi[k * stride + lane]);
        float gap = below > above ? below : above;
        g[k] = gap > 0.0f ? gap : 0.0f;
    }
    return (g[0] * g[0] + g[1] * g[1]) + g[2] * g[2];
}

/* The same bound from the point q. */
FN float kd_lane_bound(GLOBAL const u32 *lo, GLOBAL const u32 *hi, u32 stride, u32 lane, const float q[3])
{
    return kd_lane_box_bound(lo, hi, stride, lane, q, q);
}

/* (d, slot s) beats the best: ties go to the lower original index. */
FN int kd_better_slot(const kd_tree *t, float d, u32 s, float best_d, u32 best_s)
{
    if (d < best_d)
        return 1;
    if (!(d == best_d) || s == best_s)
        return 0;
    return best_s == NO_NEIGHBOR || t->index[s] < t->index[best_s];
}

/* What one search keeps. KD_NEAREST: the nearest point's slot and distance
 * (the 1-NN kernels); the other modes a query's list of original indices
 * (feat/neighbors.cl): KD_KNN the cap best by (distance, index), kept
 * sorted in the query's own segment of the output; KD_COUNT how many lie
 * strictly within r2; KD_WRITE those, sorted, into a segment of the
 * counted length. One traversal serves every mode: the mode only sets the
 * reach (the bound a box must not exceed to be entered) and what a point
 * offered does. */
#define KD_NEAREST 0
#define KD_KNN 1
#define KD_COUNT 2
#define KD_WRITE 3

typedef struct kd_result {
    int mode;
    float best_d; /* KD_NEAREST */
    u32 best_s;
    GLOBAL u32 *index; /* the lists: the query's segment */
    GLOBAL float *dist2;
    u32 count, cap;
    float r2; /* KD_COUNT, KD_WRITE: the strict bound */
} kd_result;

FN kd_result kd_nearest_result(float best_d, u32 best_s)
{
    kd_result r = {KD_NEAREST, best_d, best_s, (GLOBAL u32 *)0, (GLOBAL float *)0, 0, 0, 0.0f};
    return r;
}

FN kd_result kd_list_result(int mode, GLOBAL u32 *index, GLOBAL float *dist2, u32 cap, float r2)
{
    kd_result r = {mode, INF_F, NO_NEIGHBOR, index, dist2, 0, cap, r2};
    return r;
}

/* (d, i) before (e, j) in the lists' order */
FN int kd_before(float d, u32 i, float e, u32 j) { return d < e || (d == e && i < j); }

FN float kd_reach(const kd_result *r)
{
    if (r->mode == KD_NEAREST)
        return r->best_d;
    if (r->mode != KD_KNN)
        return r->r2;
    return r->count < r->cap ? INF_F : r->dist2[r->cap - 1];
}

/* (d, i) into the sorted segment: shifts the later entries one place (the
 * last falls off a full k-NN list). */
FN void kd_insert(kd_result *r, float d, u32 i)
{
    u32 at = r->count < r->cap ? r->count : r->cap - 1;
    while (at > 0 && kd_before(d, i, r->dist2[at - 1], r->index[at - 1])) {
        r->dist2[at] = r->dist2[at - 1];
        r->index[at] = r->index[at - 1];
        at--;
    }
    r->dist2[at] = d;
    r->index[at] = i;
    r->count = r->count < r->cap ? r->count + 1 : r->cap;
}

/* The point in `slot` at squared distance d; NaN (padding lanes) never
 * qualifies. */
FN void kd_offer(const kd_tree *t, kd_result *r, float d, u32 slot)
{
    if (r->mode == KD_NEAREST) {
        if (d <= r->best_d && kd_better_slot(t, d, slot, r->best_d, r->best_s)) {
            r->best_d = d;
            r->best_s = slot;
        }
        return;
    }
    if (!(d == d))
        return;
    if (r->mode != KD_KNN) {
        if (!(d < r->r2))
            return;
        if (r->mode == KD_WRITE && r->count < r->cap)
            kd_insert(r, d, t->index[slot]);
        else if (r->mode == KD_COUNT)
            r->count++;
        return;
    }
    u32 i = t->index[slot];
    if (r->count < r->cap || kd_before(d, i, r->dist2[r->cap - 1], r->index[r->cap - 1]))
        kd_insert(r, d, i);
}

/* Chunk c of leaf lf (its first chunk `first`), when its box is within
 * reach. */
FN void kd_scan_chunk(const kd_tree *t, GLOBAL const u32 *lf, u32 first, u32 c, const float q[3], kd_result *r)
{
    if (!(kd_lane_bound(lf + KD_LEAF_LO, lf + KD_LEAF_HI, KD_LEAF_MAX_CHUNKS, c, q) <= kd_reach(r)))
        return;
    GLOBAL const u32 *ch = t->chunks + (size_t)(first + c) * KD_CHUNK_WORDS;
    for (u32 lane = 0; lane < KD_LANES; lane++) {
        float d = kd_dist2(q[0], q[1], q[2], AS_FLOAT(ch[KD_CHUNK_X + lane]), AS_FLOAT(ch[KD_CHUNK_Y + lane]),
                           AS_FLOAT(ch[KD_CHUNK_Z + lane]));
        kd_offer(t, r, d, (first + c) * KD_LANES + lane);
    }
}

FN GLOBAL const u32 *kd_leaf_words(const kd_tree *t, u32 leaf) { return t->leaves + (size_t)leaf * KD_LEAF_WORDS; }

/* The chunks of a leaf whose box is within reach, in order. */
FN void kd_scan_leaf(const kd_tree *t, u32 leaf, const float q[3], kd_result *r)
{
    GLOBAL const u32 *lf = kd_leaf_words(t, leaf);
    u32 first = lf[KD_LEAF_FIRST_CHUNK], chunks = lf[KD_LEAF_CHUNK_COUNT];
    for (u32 c = 0; c < chunks && c < KD_LEAF_MAX_CHUNKS; c++)
        kd_scan_chunk(t, lf, first, c, q, r);
}

#define KD_GATHER_FAILED 0xffffffffu

/* The chunks outside leaf `skip` whose boxes lie within reach of the box
 * qlo..qhi, in the tree's order, into out (at most cap; the CPU's
 * kd_group_gather): how many, or KD_GATHER_FAILED when more lie within
 * reach or the reach is infinite. */
FN u32 kd_gather(const kd_tree *t, const float qlo[3], const float qhi[3], float reach, u32 skip, LOCAL u32 *out,
                 u32 cap)
{
    if (!(reach < INF_F))
        return KD_GATHER_FAILED;
    u32 stack[2 * KD_MAX_DEPTH + 2], got = 0;
    int sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        u32 ref = stack[--sp];
        if (!(ref & KD_LEAF_BIT)) {
            GLOBAL const u32 *nd = t->nodes + (size_t)ref * KD_NODE_WORDS;
            for (int c = nd[KD_NODE_CHILD + 1] != nd[KD_NODE_CHILD]; c >= 0; c--) /* child 0 pops first */
                if (kd_lane_box_bound(nd + KD_NODE_LO, nd + KD_NODE_HI, 2, (u32)c, qlo, qhi) <= reach)
                    stack[sp++] = nd[KD_NODE_CHILD + c];
            continue;
        }
        if ((ref & ~KD_LEAF_BIT) == skip)
            continue;
        GLOBAL const u32 *lf = kd_leaf_words(t, ref & ~KD_LEAF_BIT);
        u32 first = lf[KD_LEAF_FIRST_CHUNK], chunks = lf[KD_LEAF_CHUNK_COUNT];
        for (u32 c = 0; c < chunks && c < KD_LEAF_MAX_CHUNKS; c++) {
            if (!(kd_lane_box_bound(lf + KD_LEAF_LO, lf + KD_LEAF_HI, KD_LEAF_MAX_CHUNKS, c, qlo, qhi) <= reach))
                continue;
            if (got == cap)
                return KD_GATHER_FAILED;
            out[got++] = first + c;
        }
    }
    return got;
}

/* No point outside the cell's subtree can be as close to q as best_d. */
FN int kd_ball_inside(GLOBAL const u32 *cell, const float q[3], float best_d)
{
    for (u32 k = 0; k < 3; k++) {
        float below = q[k] - AS_FLOAT(cell[KD_CELL_LO + k]), above = AS_FLOAT(cell[KD_CELL_HI + k]) - q[k];
        if (!(below > 0.0f && above > 0.0f && below * below > best_d && above * above > best_d))
            return 0;
    }
    return 1;
}

FN void kd_child_bounds(GLOBAL const u32 *nd, const float q[3], float *b0, float *b1)
{
    *b0 = kd_lane_bound(nd + KD_NODE_LO, nd + KD_NODE_HI, 2, 0, q);
    *b1 = kd_lane_bound(nd + KD_NODE_LO, nd + KD_NODE_HI, 2, 1, q);
}

/* Depth-first below node `node` (0: the root), nearer child first; a
 * subtree is entered while its box bound is within the reach. */
FN void kd_search_from(const kd_tree *t, u32 node, const float q[3], kd_result *r)
{
    u32 stack_ref[KD_MAX_DEPTH + 2];
    float stack_bound[KD_MAX_DEPTH + 2];
    int sp = 0;
    u32 ref = node;
    for (;;) {
        int descend = 0;
        if (ref & KD_LEAF_BIT) {
            kd_scan_leaf(t, ref & ~KD_LEAF_BIT, q, r);
        } else {
            GLOBAL const u32 *nd = t->nodes + (size_t)ref * KD_NODE_WORDS;
            float b0, b1;
            kd_child_bounds(nd, q, &b0, &b1);
            int near = b1 < b0;
            float near_b = near ? b1 : b0, far_b = near ? b0 : b1;
            if (far_b <= kd_reach(r)) {
                stack_ref[sp] = nd[KD_NODE_CHILD + !near];
                stack_bound[sp] = far_b;
                sp++;
            }
            if (near_b <= kd_reach(r)) {
                ref = nd[KD_NODE_CHILD + near];
                descend = 1;
            }
        }
        if (descend)
            continue;
        for (;;) {
            if (sp == 0)
                return;
            sp--;
            if (stack_bound[sp] <= kd_reach(r)) {
                ref = stack_ref[sp];
                break;
            }
        }
    }
}

/* Exact 1-NN of q within squared distance limit (INF_F: any). A seeded
 * search scans the seed's leaf, then climbs to the nearest enclosing cell
 * the ball through the best point stays inside (or the root) and searches
 * below it. The ball starts no wider than limit, as the CPU's
 * kd_nearest_one: a query far from every point prunes at once (no answer:
 * NO_NEIGHBOR at +inf). */
FN void kd_nearest(const kd_tree *t, const float q[3], u32 seed, float limit, u32 *out_s, float *out_d)
{
    kd_result r = kd_nearest_result(limit, NO_NEIGHBOR);
    u32 node = 0;
    if (seed != NO_NEIGHBOR) {
        float p[3];
        kd_slot_point(t, seed, p);
        float seed_d = kd_dist2(q[0], q[1], q[2], p[0], p[1], p[2]);
        if (seed_d <= limit)
            r = kd_nearest_result(seed_d, seed);
        u32 leaf = t->chunks[(size_t)(seed / KD_LANES) * KD_CHUNK_WORDS + KD_CHUNK_LEAF];
        GLOBAL const u32 *lf = t->leaves + (size_t)leaf * KD_LEAF_WORDS;
        kd_scan_leaf(t, leaf, q, &r);
        if (kd_ball_inside(lf + KD_LEAF_CELL, q, r.best_d)) {
            *out_s = r.best_s;
            *out_d = r.best_s == NO_NEIGHBOR ? INF_F : r.best_d;
            return;
        }
        node = lf[KD_LEAF_PARENT];
        while (node != 0 && !kd_ball_inside(t->cells + (size_t)node * KD_CELL_WORDS, q, r.best_d))
            node = t->parent[node];
    }
    kd_search_from(t, node, q, &r);
    *out_s = r.best_s;
    *out_d = r.best_s == NO_NEIGHBOR ? INF_F : r.best_d;
}

/* The lane of the smallest of v[0..count) treating NaN as +inf, ties to the
 * lowest lane (the CPU's argmin16). */
FN u32 kd_argmin(const float *v, u32 count)
{
    u32 best = 0;
    float best_v = INF_F;
    for (u32 l = 0; l < count; l++) {
        float x = v[l] == v[l] ? v[l] : INF_F;
        if (x < best_v) {
            best_v = x;
            best = l;
        }
    }
    return best;
}

/* delaunay-kdann's start: descend towards q without backtracking, to the
 * leaf's chunk whose box is nearest, and its nearest point. */
FN u32 kd_descend_start(const kd_tree *t, const float q[3])
{
    u32 ref = 0;
    while (!(ref & KD_LEAF_BIT)) {
        GLOBAL const u32 *nd = t->nodes + (size_t)ref * KD_NODE_WORDS;
        float b0, b1;
        kd_child_bounds(nd, q, &b0, &b1);
        ref = nd[KD_NODE_CHILD + (b1 < b0)];
    }
    GLOBAL const u32 *lf = t->leaves + (size_t)(ref & ~KD_LEAF_BIT) * KD_LEAF_WORDS;
    float v[KD_LANES > KD_LEAF_MAX_CHUNKS ? KD_LANES : KD_LEAF_MAX_CHUNKS];
    for (u32 c = 0; c < KD_LEAF_MAX_CHUNKS; c++)
        v[c] = kd_lane_bound(lf + KD_LEAF_LO, lf + KD_LEAF_HI, KD_LEAF_MAX_CHUNKS, c, q);
    u32 c = kd_argmin(v, KD_LEAF_MAX_CHUNKS);
    c = c < lf[KD_LEAF_CHUNK_COUNT] ? c : 0;
    u32 chunk = lf[KD_LEAF_FIRST_CHUNK] + c;
    GLOBAL const u32 *ch = t->chunks + (size_t)chunk * KD_CHUNK_WORDS;
    for (u32 l = 0; l < KD_LANES; l++)
        v[l] = kd_dist2(q[0], q[1], q[2], AS_FLOAT(ch[KD_CHUNK_X + l]), AS_FLOAT(ch[KD_CHUNK_Y + l]),
                        AS_FLOAT(ch[KD_CHUNK_Z + l]));
    return chunk * KD_LANES + kd_argmin(v, KD_LANES);
}

/* ---- the left-balanced tree (lbkd.c), walked without a stack ---------- */

#define LBKD_SLOT_MASK 0x3fffffffu
#define LBKD_NONE 0xffffffffu

/* Node i: x y z, then its slot with its split axis in the top two bits. */
FN float lbkd_coord(GLOBAL const float *tree, u32 i, u32 axis) { return tree[4 * (size_t)i + axis]; }

FN u32 lbkd_word(GLOBAL const float *tree, u32 i) { return AS_UINT(tree[4 * (size_t)i + 3]); }

/* (d, slot s) beats the best: ties go to the lower original index. */
FN int lbkd_better(GLOBAL const u32 *index, float d, u32 s, float best_d, u32 best_s)
{
    if (d < best_d)
        return 1;
    return d == best_d && s != best_s && (best_s == NO_NEIGHBOR || index[s] < index[best_s]);
}

/* Wald's traversal: from the parent, a node offers its point and goes to
 * its near child; back from the near child, to the far child unless the
 * split plane lies beyond the best distance; back from the far child (or
 * from a child that does not exist), up. Only the current and previous
 * nodes are kept. A far subtree is left out only when the plane's squared
 * distance, which no point beyond the plane can undercut in float either,
 * is strictly above the best: a point that ties the best is still seen, so
 * the tie rule (the lower original index) gives the CPU's answer. */
FN void lbkd_nearest(GLOBAL const float *tree, u32 count, GLOBAL const u32 *index, const float q[3], u32 *best_s,
                     float *best_d)
{
    u32 curr = 0, prev = LBKD_NONE;
    while (count) {
        if (curr >= count) { /* an absent child: back to its parent */
            prev = curr;
            curr = (curr - 1) / 2;
            continue;
        }
        const u32 word = lbkd_word(tree, curr), axis = word >> 30, parent = curr ? (curr - 1) / 2 : LBKD_NONE;
        const float diff = q[axis] - lbkd_coord(tree, curr, axis);
        const u32 near_child = 2 * curr + 1 + (diff >= 0.0f), far_child = 4 * curr + 3 - near_child;
        u32 next = parent;
        if (prev == LBKD_NONE || prev < curr) { /* from the parent */
            const u32 s = word & LBKD_SLOT_MASK;
            const float d = kd_dist2(q[0], q[1], q[2], lbkd_coord(tree, curr, 0), lbkd_coord(tree, curr, 1),
                                     lbkd_coord(tree, curr, 2));
            if (lbkd_better(index, d, s, *best_d, *best_s)) {
                *best_d = d;
                *best_s = s;
            }
            next = near_child;
        } else if (prev == near_child && !(diff * diff > *best_d)) {
            next = far_child;
        }
        if (next == LBKD_NONE)
            return;
        prev = curr;
        curr = next;
    }
}

/* nearest[i] (a slot; in: the seed, NO_NEIGHBOR for none, whose distance
 * is the first bound when within limit) and dist2[i] of query i, by the
 * left-balanced tree; none within limit: NO_NEIGHBOR at +inf. skip_equal
 * as ptreg_nn_kdtree's. */
KERNEL ptreg_nn_lbkd(GLOBAL const float *queries, u32 n, float limit, u32 skip_equal, GLOBAL const u32 *first_equal,
                     GLOBAL u32 *nearest, GLOBAL float *dist2, GLOBAL const float *tree, u32 count,
                     GLOBAL const float *slot_xyz, GLOBAL const u32 *index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n || (skip_equal && first_equal[i] != i))
        return;
    GLOBAL const float *qi = queries + 3 * (size_t)i;
    const float q[3] = {qi[0], qi[1], qi[2]};
    u32 s = nearest[i];
    float d = limit;
    if (s != NO_NEIGHBOR) {
        float seed_d = kd_dist2(q[0], q[1], q[2], slot_xyz[3 * (size_t)s], slot_xyz[3 * (size_t)s + 1],
                                slot_xyz[3 * (size_t)s + 2]);
        if (seed_d <= limit)
            d = seed_d;
        else
            s = NO_NEIGHBOR;
    }
    lbkd_nearest(tree, count, index, q, &s, &d);
    nearest[i] = s;
    dist2[i] = s == NO_NEIGHBOR ? INF_F : d;
}

/* nearest[i] (a slot; in: the seed, NO_NEIGHBOR for none) and dist2[i] of
 * query i within squared distance limit (kd_nearest). skip_equal: only the
 * queries with first_equal[i] == i are answered (their equals read there). */
KERNEL ptreg_nn_kdtree(GLOBAL const float *queries, u32 n, float limit, u32 skip_equal, GLOBAL const u32 *first_equal,
                       GLOBAL u32 *nearest, GLOBAL float *dist2, GLOBAL const u32 *nodes, GLOBAL const u32 *cells,
                       GLOBAL const u32 *parent, GLOBAL const u32 *leaves, GLOBAL const u32 *chunks,
                       GLOBAL const u32 *index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n || (skip_equal && first_equal[i] != i))
        return;
    kd_tree t = {nodes, cells, parent, leaves, chunks, index};
    GLOBAL const float *qi = queries + 3 * (size_t)i;
    float q[3] = {qi[0], qi[1], qi[2]};
    u32 s;
    float d;
    kd_nearest(&t, q, nearest[i], limit, &s, &d);
    nearest[i] = s;
    dist2[i] = d;
}
