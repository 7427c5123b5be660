/* Neighbourhoods of every point of a cloud on a device (pfh_device.c
 * drives them; the CPU's rules: neighborhood.h). The CPU k-d tree built on
 * the cloud itself, its arrays uploaded as words (the layout from
 * ptreg_nn_device_layout), searched by one thread per query point. Needs
 * nn/kdtree.cl first (kd_tree, kd_dist2, kd_lane_bound).
 *
 * - k-NN: the kk best by (squared distance, original index), kept sorted
 *   in the query's own segment of the output (kk entries from i * kk): the
 *   list is the output, so no private array bounds k, and a GPU keeps the
 *   segment in L1. Chunks and subtrees are entered while their box bound
 *   is <= the current k-th distance (ties with a lower index can still
 *   enter). Hybrid: the same, then the count cut at the radius.
 * - radius: squared distance strictly below r2 = (float)(r * r), as the
 *   CPU; one launch counts, the host sums the counts in order (the CSR
 *   offsets), a second launch writes each list sorted by (distance, index)
 *   by insertion into its segment.
 * Distances are kd_dist2, the CPU's formula and order: the lists are the
 * CPU's, bit for bit. */

#define KNN_MODE_KNN 0
#define KNN_MODE_COUNT 1
#define KNN_MODE_WRITE 2

/* A query's list: its segment of the output, how many it holds, and its
 * capacity (kk for k-NN; the counted length for radius writes). */
typedef struct knn_list {
    GLOBAL u32 *index;
    GLOBAL float *dist2;
    u32 count, cap;
    float r2; /* radius modes: the strict bound */
} knn_list;

/* (d, i) before (e, j) in the lists' order */
FN int knn_before(float d, u32 i, float e, u32 j) { return d < e || (d == e && i < j); }

/* The bound a box must not exceed to hold a point of interest. */
FN float knn_reach(const knn_list *l, int mode)
{
    if (mode != KNN_MODE_KNN)
        return l->r2;
    return l->count < l->cap ? INF_F : l->dist2[l->cap - 1];
}

/* (d, i) into the sorted segment: shifts the later entries one place (the
 * last falls off a full k-NN list). */
FN void knn_insert(knn_list *l, float d, u32 i)
{
    u32 at = l->count < l->cap ? l->count : l->cap - 1;
    while (at > 0 && knn_before(d, i, l->dist2[at - 1], l->index[at - 1])) {
        l->dist2[at] = l->dist2[at - 1];
        l->index[at] = l->index[at - 1];
        at--;
    }
    l->dist2[at] = d;
    l->index[at] = i;
    l->count = l->count < l->cap ? l->count + 1 : l->cap;
}

FN void knn_offer(const kd_tree *t, knn_list *l, int mode, float d, u32 slot)
{
    if (!(d == d)) /* NaN padding lanes */
        return;
    if (mode != KNN_MODE_KNN) {
        if (!(d < l->r2))
            return;
        if (mode == KNN_MODE_WRITE && l->count < l->cap)
            knn_insert(l, d, t->index[slot]);
        else if (mode == KNN_MODE_COUNT)
            l->count++;
        return;
    }
    u32 i = t->index[slot];
    if (l->count < l->cap || knn_before(d, i, l->dist2[l->cap - 1], l->index[l->cap - 1]))
        knn_insert(l, d, i);
}

FN void knn_scan_leaf(const kd_tree *t, u32 leaf, const float q[3], knn_list *l, int mode)
{
    GLOBAL const u32 *lf = t->leaves + (size_t)leaf * KD_LEAF_WORDS;
    u32 first = lf[KD_LEAF_FIRST_CHUNK], chunks = lf[KD_LEAF_CHUNK_COUNT];
    for (u32 c = 0; c < chunks && c < KD_LEAF_MAX_CHUNKS; c++) {
        if (!(kd_lane_bound(lf + KD_LEAF_LO, lf + KD_LEAF_HI, KD_LEAF_MAX_CHUNKS, c, q) <= knn_reach(l, mode)))
            continue;
        GLOBAL const u32 *ch = t->chunks + (size_t)(first + c) * KD_CHUNK_WORDS;
        for (u32 lane = 0; lane < KD_LANES; lane++) {
            float d = kd_dist2(q[0], q[1], q[2], AS_FLOAT(ch[KD_CHUNK_X + lane]), AS_FLOAT(ch[KD_CHUNK_Y + lane]),
                               AS_FLOAT(ch[KD_CHUNK_Z + lane]));
            knn_offer(t, l, mode, d, (first + c) * KD_LANES + lane);
        }
    }
}

/* Depth-first from the root, nearer child first; a subtree is entered
 * while its box bound is within the current reach. */
FN void knn_search(const kd_tree *t, const float q[3], knn_list *l, int mode)
{
    u32 stack_ref[KD_MAX_DEPTH + 2];
    float stack_bound[KD_MAX_DEPTH + 2];
    int sp = 0;
    u32 ref = 0;
    for (;;) {
        int descend = 0;
        if (ref & KD_LEAF_BIT) {
            knn_scan_leaf(t, ref & ~KD_LEAF_BIT, q, l, mode);
        } else {
            GLOBAL const u32 *nd = t->nodes + (size_t)ref * KD_NODE_WORDS;
            float b0, b1;
            kd_child_bounds(nd, q, &b0, &b1);
            int near = b1 < b0;
            float near_b = near ? b1 : b0, far_b = near ? b0 : b1;
            if (far_b <= knn_reach(l, mode)) {
                stack_ref[sp] = nd[KD_NODE_CHILD + !near];
                stack_bound[sp] = far_b;
                sp++;
            }
            if (near_b <= knn_reach(l, mode)) {
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
            if (stack_bound[sp] <= knn_reach(l, mode)) {
                ref = stack_ref[sp];
                break;
            }
        }
    }
}

/* k-NN of every point: index/dist2 hold kk entries per point, count[i]
 * the list's length (kk, or fewer when cut at r2 > 0: the hybrid). */
KERNEL ptreg_knn_lists(GLOBAL const float *xyz, u32 n, u32 kk, float r2, GLOBAL u32 *index, GLOBAL float *dist2,
                       GLOBAL u32 *count, GLOBAL const u32 *nodes, GLOBAL const u32 *leaves,
                       GLOBAL const u32 *chunks, GLOBAL const u32 *slot_index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index}; /* cells and parent: unused */
    float q[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
    knn_list l = {index + (size_t)i * kk, dist2 + (size_t)i * kk, 0, kk, 0.0f};
    knn_search(&t, q, &l, KNN_MODE_KNN);
    u32 kept = l.count;
    if (r2 > 0.0f)
        while (kept > 0 && !(l.dist2[kept - 1] < r2))
            kept--;
    count[i] = kept;
}

/* Radius lists, pass 1: how many points lie strictly within r2 of each. */
KERNEL ptreg_knn_radius_count(GLOBAL const float *xyz, u32 n, float r2, GLOBAL u32 *count, GLOBAL const u32 *nodes,
                              GLOBAL const u32 *leaves, GLOBAL const u32 *chunks, GLOBAL const u32 *slot_index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index};
    float q[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
    knn_list l = {(GLOBAL u32 *)0, (GLOBAL float *)0, 0, 0, r2}; /* counts only */
    knn_search(&t, q, &l, KNN_MODE_COUNT);
    count[i] = l.count;
}

/* Pass 2: the lists, from start[i] (the counts' prefix sums), sorted. */
KERNEL ptreg_knn_radius_lists(GLOBAL const float *xyz, u32 n, float r2, GLOBAL const u32 *start,
                              GLOBAL const u32 *count, GLOBAL u32 *index, GLOBAL float *dist2,
                              GLOBAL const u32 *nodes, GLOBAL const u32 *leaves, GLOBAL const u32 *chunks,
                              GLOBAL const u32 *slot_index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index};
    float q[3] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
    knn_list l = {index + start[i], dist2 + start[i], 0, count[i], r2};
    knn_search(&t, q, &l, KNN_MODE_WRITE);
}
