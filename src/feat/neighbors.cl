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

/* k-NN of every point: index/dist2 hold kk entries per point from
 * start[i] = i * kk, count[i] the list's length (kk, or fewer when cut at
 * r2 > 0: the hybrid). Offsets are 64-bit: n x kk passes 2^32 at 100 M points
 * and k 43. */
KERNEL ptreg_knn_lists(GLOBAL const float *xyz, u32 n, u32 kk, float r2, GLOBAL u64 *start, GLOBAL u32 *index,
                       GLOBAL float *dist2, GLOBAL u32 *count, GLOBAL const u32 *nodes, GLOBAL const u32 *leaves,
                       GLOBAL const u32 *chunks, GLOBAL const u32 *slot_index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    const u64 first = (u64)i * kk;
    start[i] = first;
    kd_tree t = {nodes, nodes, nodes, leaves, chunks, slot_index}; /* cells and parent: unused */
    GLOBAL const float *qi = xyz + 3 * (size_t)i;
    float q[3] = {qi[0], qi[1], qi[2]};
    kd_result l = kd_list_result(KD_KNN, index + first, dist2 + first, kk, 0.0f);
    kd_search_from(&t, 0, q, &l);
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
