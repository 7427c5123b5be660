/* Neighborhoods of every point of a cloud on a device (pfh_device.c
 * drives them; the CPU's rules: neighborhood.h). The CPU k-d tree built on
 * the cloud itself, its arrays uploaded as words (the layout from
 * nn_device_layout), searched by one thread per query point. Needs
 * nn/kdtree.cl first: its one traversal (kd_search_from) with a list's
 * result (kd_list_result: KD_KNN, KD_COUNT, KD_WRITE).
 *
 * - k-NN: the kk best by (squared distance, original index), kept sorted
 *   in the query's own segment of the output (kk entries from i * kk,
 *   counted in 64 bits, as every offset into the lists): the
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

/* The list's length: all of it, or (r2 > 0: the hybrid) those strictly
 * within r2. */
FN u32 knn_cut(const kd_result *l, float r2)
{
    u32 kept = l->count;
    if (r2 > 0.0f)
        while (kept > 0 && !(l->dist2[kept - 1] < r2))
            kept--;
    return kept;
}

/* k-NN of every point: index/dist2 hold kk entries per point from
 * start[i] = i * kk, count[i] the list's length (kk, or fewer when cut at
 * r2 > 0: the hybrid). Offsets are 64-bit: n x kk passes 2^32 at 100 M points
 * and k 43. Threads take the points in the tree's order (the global range
 * covers `slots`; padding slots idle): neighbouring threads search the
 * same leaves. */
KERNEL ptreg_knn_lists(GLOBAL const float *xyz, u32 n, u32 slots, u32 kk, float r2, GLOBAL u64 *start,
                       GLOBAL u32 *index, GLOBAL float *dist2, GLOBAL u32 *count, GLOBAL const u32 *nodes,
                       GLOBAL const u32 *leaves, GLOBAL const u32 *chunks, GLOBAL const u32 *slot_index)
{
    u32 slot = GLOBAL_ID_X;
    u32 i = slot < slots ? slot_index[slot] : NO_NEIGHBOR;
    if (!(i < n)) /* padding slots hold NO_NEIGHBOR */
        return;
    const u64 first = (u64)i * kk;
    start[i] = first;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index}; /* cells and parent: unused */
    GLOBAL const float *qi = xyz + 3 * (size_t)i;
    float q[3] = {qi[0], qi[1], qi[2]};
    kd_result l = kd_list_result(KD_KNN, index + first, dist2 + first, kk, 0.0f);
    kd_search_from(&t, 0, q, &l);
    count[i] = knn_cut(&l, r2);
}

/* The same lists by groups, the CPU engine's idea (nn/hoods.c): a
 * sub-group of KD_LANES threads takes the points of one tree chunk
 * (launched over slots; padding slots idle, every thread reaches every
 * barrier), and no list is kept until few candidates are left:
 * - each point counts its own leaf's points within thresholds a factor 4
 *   apart (no list): its guess is the least with kk within;
 * - the sub-group's reach is the farthest guess, and one thread gathers
 *   once, into local memory, every other chunk whose box lies within that
 *   reach of the chunk's box: every point within a guess is in the own
 *   leaf or a gathered chunk;
 * - each point counts those within finer thresholds below its guess, and
 *   inserts only the points within the least threshold with kk within.
 * A sub-group whose leaf holds fewer than kk points, or whose gather
 * overflows, searches as ptreg_knn_lists does. The list is the kk best by
 * (distance, index), whatever the order they are offered in: the same
 * bits. */
#define KNN_GROUP_WG_MAX 256 /* threads of a work-group, at most */
#define KNN_GATHER_MAX 128   /* chunks one sub-group gathers, at most */
#define KNN_SUBGROUPS (KNN_GROUP_WG_MAX / KD_LANES)
#define KNN_STEPS 16
#define KNN_COARSE 0.25f  /* the guess's thresholds: 4^-j of the leaf's diagonal squared */
#define KNN_FINE 0.917f   /* the last thresholds: 4^(-j/16) of the guess */

FN float knn_chunk_bound(const kd_tree *t, u32 chunk, const float q[3])
{
    GLOBAL const u32 *lf = kd_leaf_words(t, t->chunks[(size_t)chunk * KD_CHUNK_WORDS + KD_CHUNK_LEAF]);
    return kd_lane_bound(lf + KD_LEAF_LO, lf + KD_LEAF_HI, KD_LEAF_MAX_CHUNKS, chunk - lf[KD_LEAF_FIRST_CHUNK], q);
}

/* within[j] += how many of chunk's points lie within th[j] (descending);
 * NaN padding never does. */
FN void knn_count_chunk(const kd_tree *t, u32 chunk, const float q[3], const float th[KNN_STEPS],
                        u32 within[KNN_STEPS])
{
    if (!(knn_chunk_bound(t, chunk, q) <= th[0]))
        return;
    GLOBAL const u32 *ch = t->chunks + (size_t)chunk * KD_CHUNK_WORDS;
    for (u32 lane = 0; lane < KD_LANES; lane++) {
        float d = kd_dist2(q[0], q[1], q[2], AS_FLOAT(ch[KD_CHUNK_X + lane]), AS_FLOAT(ch[KD_CHUNK_Y + lane]),
                           AS_FLOAT(ch[KD_CHUNK_Z + lane]));
        for (u32 j = 0; j < KNN_STEPS; j++)
            within[j] += d <= th[j];
    }
}

/* The chunk's points within th into the list. */
FN void knn_offer_chunk(const kd_tree *t, u32 chunk, const float q[3], float th, kd_result *r)
{
    if (!(knn_chunk_bound(t, chunk, q) <= th))
        return;
    GLOBAL const u32 *ch = t->chunks + (size_t)chunk * KD_CHUNK_WORDS;
    for (u32 lane = 0; lane < KD_LANES; lane++) {
        float d = kd_dist2(q[0], q[1], q[2], AS_FLOAT(ch[KD_CHUNK_X + lane]), AS_FLOAT(ch[KD_CHUNK_Y + lane]),
                           AS_FLOAT(ch[KD_CHUNK_Z + lane]));
        if (d <= th)
            kd_offer(t, r, d, chunk * KD_LANES + lane);
    }
}

/* Thresholds from top, each `factor` times the last. */
FN void knn_thresholds(float top, float factor, float th[KNN_STEPS])
{
    th[0] = top;
    for (u32 j = 1; j < KNN_STEPS; j++)
        th[j] = th[j - 1] * factor;
}

/* The least threshold with at least kk within; infinity when none. */
FN float knn_least(const float th[KNN_STEPS], const u32 within[KNN_STEPS], u32 kk)
{
    float least = INF_F;
    for (u32 j = 0; j < KNN_STEPS; j++)
        least = within[j] >= kk ? th[j] : least;
    return least;
}

/* The own leaf's diagonal squared: no two of its points lie farther
 * (up to rounding, which at worst makes the guess infinite). */
FN float knn_leaf_diagonal(GLOBAL const u32 *lf)
{
    float d = 0.0f;
    for (u32 k = 0; k < 3; k++) {
        float lo = INF_F, hi = -INF_F;
        for (u32 c = 0; c < lf[KD_LEAF_CHUNK_COUNT] && c < KD_LEAF_MAX_CHUNKS; c++) {
            float a = AS_FLOAT(lf[KD_LEAF_LO + k * KD_LEAF_MAX_CHUNKS + c]),
                  b = AS_FLOAT(lf[KD_LEAF_HI + k * KD_LEAF_MAX_CHUNKS + c]);
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
        }
        d += (hi - lo) * (hi - lo);
    }
    return d;
}

/* Point q's guess: the least of the coarse thresholds with kk of its own
 * leaf's points within. */
FN float knn_guess(const kd_tree *t, u32 leaf, const float q[3], u32 kk)
{
    GLOBAL const u32 *lf = kd_leaf_words(t, leaf);
    float th[KNN_STEPS];
    u32 within[KNN_STEPS] = {0};
    knn_thresholds(knn_leaf_diagonal(lf), KNN_COARSE, th);
    for (u32 c = 0; c < lf[KD_LEAF_CHUNK_COUNT] && c < KD_LEAF_MAX_CHUNKS; c++)
        knn_count_chunk(t, lf[KD_LEAF_FIRST_CHUNK] + c, q, th, within);
    return knn_least(th, within, kk);
}

/* The farthest of lanes' guesses (infinity when one is). */
FN float knn_group_reach(LOCAL const float *lane_guess)
{
    float reach = 0.0f;
    for (u32 l = 0; l < KD_LANES; l++)
        reach = lane_guess[l] > reach ? lane_guess[l] : reach;
    return reach;
}

/* The gather of chunk `chunk`'s sub-group: within reach of the chunk's box,
 * its own leaf left out (scanned apart). */
FN u32 knn_group_gather(const kd_tree *t, u32 chunk, float reach, LOCAL u32 *out)
{
    u32 leaf = t->chunks[(size_t)chunk * KD_CHUNK_WORDS + KD_CHUNK_LEAF];
    GLOBAL const u32 *lf = kd_leaf_words(t, leaf);
    u32 c = chunk - lf[KD_LEAF_FIRST_CHUNK];
    float lo[3], hi[3];
    for (u32 k = 0; k < 3; k++) {
        lo[k] = AS_FLOAT(lf[KD_LEAF_LO + k * KD_LEAF_MAX_CHUNKS + c]);
        hi[k] = AS_FLOAT(lf[KD_LEAF_HI + k * KD_LEAF_MAX_CHUNKS + c]);
    }
    return kd_gather(t, lo, hi, reach, leaf, out, KNN_GATHER_MAX);
}

/* Point q's list from its own leaf and the gathered chunks, within the
 * least fine threshold below its guess with kk within. */
FN void knn_from_gathered(const kd_tree *t, u32 leaf, LOCAL const u32 *gathered, u32 got, const float q[3],
                          float guess, kd_result *r)
{
    GLOBAL const u32 *lf = kd_leaf_words(t, leaf);
    const u32 first = lf[KD_LEAF_FIRST_CHUNK], own = lf[KD_LEAF_CHUNK_COUNT];
    float th[KNN_STEPS];
    u32 within[KNN_STEPS] = {0};
    knn_thresholds(guess, KNN_FINE, th);
    for (u32 c = 0; c < own && c < KD_LEAF_MAX_CHUNKS; c++)
        knn_count_chunk(t, first + c, q, th, within);
    for (u32 g = 0; g < got; g++)
        knn_count_chunk(t, gathered[g], q, th, within);
    const float least = knn_least(th, within, r->cap); /* <= guess: kk lie within the guess */
    for (u32 c = 0; c < own && c < KD_LEAF_MAX_CHUNKS; c++)
        knn_offer_chunk(t, first + c, q, least, r);
    for (u32 g = 0; g < got; g++)
        knn_offer_chunk(t, gathered[g], q, least, r);
}

/* k-NN of every point, as ptreg_knn_lists, by groups (the global range
 * covers `slots`, a work-group a multiple of KD_LANES threads, at most
 * KNN_GROUP_WG_MAX). */
KERNEL ptreg_knn_lists_grouped(GLOBAL const float *xyz, u32 n, u32 slots, u32 kk, float r2, GLOBAL u64 *start,
                               GLOBAL u32 *index, GLOBAL float *dist2, GLOBAL u32 *count, GLOBAL const u32 *nodes,
                               GLOBAL const u32 *leaves, GLOBAL const u32 *chunks, GLOBAL const u32 *slot_index)
{
    SHARED float lane_guess[KNN_GROUP_WG_MAX];
    SHARED u32 gathered[KNN_SUBGROUPS * KNN_GATHER_MAX];
    SHARED u32 gathered_count[KNN_SUBGROUPS];
    const u32 slot = GLOBAL_ID_X, lid = LOCAL_ID_X, sub = lid / KD_LANES;
    const u32 i = slot < slots ? slot_index[slot] : NO_NEIGHBOR;
    const int active = i < n; /* padding slots hold NO_NEIGHBOR */
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index};
    const u32 leaf = slot < slots ? chunks[(size_t)(slot / KD_LANES) * KD_CHUNK_WORDS + KD_CHUNK_LEAF] : 0;
    float q[3] = {0.0f, 0.0f, 0.0f}, guess = 0.0f;
    if (active) {
        for (u32 k = 0; k < 3; k++)
            q[k] = xyz[3 * (size_t)i + k];
        guess = knn_guess(&t, leaf, q, kk);
    }
    lane_guess[lid] = guess;
    BARRIER();
    if (lid % KD_LANES == 0 && slot < slots) /* slots is a multiple of KD_LANES: the sub-group is whole */
        gathered_count[sub] = knn_group_gather(&t, slot / KD_LANES, knn_group_reach(lane_guess + lid),
                                               gathered + sub * KNN_GATHER_MAX);
    BARRIER();
    if (!active)
        return;
    const u64 first = (u64)i * kk;
    start[i] = first;
    kd_result l = kd_list_result(KD_KNN, index + first, dist2 + first, kk, 0.0f);
    const u32 got = gathered_count[sub];
    if (got == KD_GATHER_FAILED)
        kd_search_from(&t, 0, q, &l);
    else
        knn_from_gathered(&t, leaf, gathered + sub * KNN_GATHER_MAX, got, q, guess, &l);
    count[i] = knn_cut(&l, r2);
}

/* Radius lists, pass 1: how many points lie strictly within r2 of each. */
KERNEL ptreg_knn_radius_count(GLOBAL const float *xyz, u32 n, float r2, GLOBAL u32 *count, GLOBAL const u32 *nodes,
                              GLOBAL const u32 *leaves, GLOBAL const u32 *chunks, GLOBAL const u32 *slot_index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index};
    GLOBAL const float *qi = xyz + 3 * (size_t)i;
    float q[3] = {qi[0], qi[1], qi[2]};
    kd_result l = kd_list_result(KD_COUNT, (GLOBAL u32 *)0, (GLOBAL float *)0, 0, r2); /* counts only */
    kd_search_from(&t, 0, q, &l);
    count[i] = l.count;
}

/* Pass 2: the lists, from start[i] (the counts' prefix sums, 64-bit),
 * sorted. */
KERNEL ptreg_knn_radius_lists(GLOBAL const float *xyz, u32 n, float r2, GLOBAL const u64 *start,
                              GLOBAL const u32 *count, GLOBAL u32 *index, GLOBAL float *dist2,
                              GLOBAL const u32 *nodes, GLOBAL const u32 *leaves, GLOBAL const u32 *chunks,
                              GLOBAL const u32 *slot_index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index};
    GLOBAL const float *qi = xyz + 3 * (size_t)i;
    float q[3] = {qi[0], qi[1], qi[2]};
    kd_result l = kd_list_result(KD_WRITE, index + start[i], dist2 + start[i], count[i], r2);
    kd_search_from(&t, 0, q, &l);
}
