/* The voxel grid on a device (voxel_device.c drives it): ptreg_voxel_
 * downsample's output, the same bits. The CPU adds each point, in cloud
 * order, to its voxel's double sums and lists voxels in the order of their
 * first point; here:
 *   1. ptreg_voxel_bounds: one group finds the points' minimum and maximum
 *      (exact: min and max do not round) and the first non-finite point;
 *      they go back to the host, which checks the grid as the CPU does;
 *   2. ptreg_voxel_insert: per point its key (the CPU's formula, in
 *      double) and its voxel's slot in an open-addressing table, claimed
 *      by a 32-bit compare-and-swap of 1 + the point's index (a slot's key
 *      is recomputed from its owner's point, never read from another
 *      thread's write); the slot keeps the smallest index (atomic min)
 *      and the count (atomic add): integers, whatever the order;
 *   3. ptreg_voxel_group_sums, 4. ptreg_voxel_number: an exclusive scan
 *      over the points, in index order, of (is the first of its voxel,
 *      that voxel's count): at a voxel's first point it gives the voxel's
 *      number (the CPU's order) and the offset of its points;
 *   5. ptreg_voxel_scatter: each point into its voxel's segment (in any
 *      order: atomic);
 *   6. ptreg_voxel_sums: one thread per voxel sorts its segment by index
 *      (heap sort, in place) and adds the points in that order in double,
 *      as the CPU does; centroid, unit mean normal and rounded mean colour
 *      by voxel.c's voxel_finish.
 * Needs double (the keys and the sums): the device path refuses a device
 * without it. -D options: VOXEL_WG (threads per group, a power of two),
 * VOXEL_ITEMS (consecutive points per thread of the scan). */

#define VOXEL_AXIS_BITS 21 /* voxel_impl.h's */
#define VOXEL_EMPTY 0u
#define VOXEL_NONE 0xffffffffu

#if PTREG_DIALECT_CUDA
#define VOXEL_CAS(p, cmp, v) atomicCAS((p), (cmp), (v))
#define VOXEL_MIN(p, v) atomicMin((p), (v))
#define VOXEL_INC(p) atomicAdd((p), 1u)
#define VOXEL_DEC(p) atomicSub((p), 1u)
#else
#define VOXEL_CAS(p, cmp, v) atomic_cmpxchg((p), (cmp), (v))
#define VOXEL_MIN(p, v) atomic_min((p), (v))
#define VOXEL_INC(p) atomic_inc(p)
#define VOXEL_DEC(p) atomic_dec(p)
#endif

FN int voxel_finite(float x) { return x - x == 0.0f; }

/* 1. lo[3], hi[3] (as float bits) and the first non-finite point
 * (VOXEL_NONE: none) into out[0..7); one group of VOXEL_WG threads. */
KERNEL ptreg_voxel_bounds(GLOBAL const float *xyz, u32 n, GLOBAL u32 *out)
{
    SHARED float lo[3 * VOXEL_WG], hi[3 * VOXEL_WG];
    SHARED u32 bad[VOXEL_WG];
    const u32 t = LOCAL_ID_X;
    float l[3] = {INF_F, INF_F, INF_F}, h[3] = {-INF_F, -INF_F, -INF_F};
    u32 b = VOXEL_NONE;
    for (u32 i = t; i < n; i += VOXEL_WG)
        for (int k = 0; k < 3; k++) {
            const float v = xyz[3 * (size_t)i + k];
            if (!voxel_finite(v))
                b = MIN_U32(b, i);
            else
                l[k] = v < l[k] ? v : l[k], h[k] = v > h[k] ? v : h[k];
        }
    for (int k = 0; k < 3; k++)
        lo[3 * t + k] = l[k], hi[3 * t + k] = h[k];
    bad[t] = b;
    BARRIER();
    for (u32 stride = VOXEL_WG / 2; stride > 0; stride /= 2) {
        if (t < stride) {
            for (int k = 0; k < 3; k++) {
                const float a = lo[3 * (t + stride) + k], c = hi[3 * (t + stride) + k];
                lo[3 * t + k] = a < lo[3 * t + k] ? a : lo[3 * t + k];
                hi[3 * t + k] = c > hi[3 * t + k] ? c : hi[3 * t + k];
            }
            bad[t] = MIN_U32(bad[t], bad[t + stride]);
        }
        BARRIER();
    }
    if (t == 0) {
        for (int k = 0; k < 3; k++)
            out[k] = AS_UINT(lo[k]), out[3 + k] = AS_UINT(hi[k]);
        out[6] = bad[0];
    }
}

/* voxel.c's voxel_key: 21 bits per axis. */
FN u64 voxel_key(GLOBAL const float *p, double lx, double ly, double lz, double voxel)
{
    u64 key = (u64)floor(((double)p[0] - lx) / voxel);
    key = key << VOXEL_AXIS_BITS | (u64)floor(((double)p[1] - ly) / voxel);
    return key << VOXEL_AXIS_BITS | (u64)floor(((double)p[2] - lz) / voxel);
}

/* voxel.c's hash_of (MurmurHash3's finaliser). */
FN u64 voxel_hash(u64 key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    return key ^ (key >> 33);
}

/* 2. Every point's slot (slot_of); owner, first and count per slot
 * (mask + 1 slots, at least twice the points: a probe ends). owner starts
 * at VOXEL_EMPTY, first at VOXEL_NONE, count at 0. */
KERNEL ptreg_voxel_insert(GLOBAL const float *xyz, u32 n, double lx, double ly, double lz, double voxel, u32 mask,
                          GLOBAL u32 *owner, GLOBAL u32 *first, GLOBAL u32 *count, GLOBAL u32 *slot_of)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    const u64 key = voxel_key(xyz + 3 * (size_t)i, lx, ly, lz, voxel);
    u32 s = (u32)voxel_hash(key) & mask;
    for (;;) {
        const u32 prev = VOXEL_CAS(&owner[s], VOXEL_EMPTY, i + 1u);
        if (prev == VOXEL_EMPTY || voxel_key(xyz + 3 * (size_t)(prev - 1u), lx, ly, lz, voxel) == key)
            break;
        s = (s + 1u) & mask;
    }
    VOXEL_MIN(&first[s], i);
    VOXEL_INC(&count[s]);
    slot_of[i] = s;
}

/* Point i's (is first of its voxel, its voxel's count or 0). */
FN void voxel_item(u32 i, u32 n, GLOBAL const u32 *first, GLOBAL const u32 *count, GLOBAL const u32 *slot_of,
                   u32 *a, u32 *b)
{
    *a = 0, *b = 0;
    if (i >= n)
        return;
    const u32 s = slot_of[i];
    if (first[s] == i)
        *a = 1, *b = count[s];
}

/* A group's sum of x over its threads (integers: any order gives it). */
FN u32 voxel_group_total(LOCAL u32 *red, u32 x)
{
    const u32 t = LOCAL_ID_X;
    red[t] = x;
    BARRIER();
    for (u32 stride = VOXEL_WG / 2; stride > 0; stride /= 2) {
        if (t < stride)
            red[t] += red[t + stride];
        BARRIER();
    }
    const u32 total = red[0];
    BARRIER();
    return total;
}

/* 3. Each group's sums of the pairs over its VOXEL_WG * VOXEL_ITEMS
 * points into partials[2 g], partials[2 g + 1]. */
KERNEL ptreg_voxel_group_sums(u32 n, GLOBAL const u32 *first, GLOBAL const u32 *count, GLOBAL const u32 *slot_of,
                              GLOBAL u32 *partials)
{
    SHARED u32 red[VOXEL_WG];
    const u32 base = GROUP_ID_X * VOXEL_WG * VOXEL_ITEMS + LOCAL_ID_X * VOXEL_ITEMS;
    u32 sa = 0, sb = 0;
    for (u32 j = 0; j < VOXEL_ITEMS; j++) {
        u32 a, b;
        voxel_item(base + j, n, first, count, slot_of, &a, &b);
        sa += a, sb += b;
    }
    sa = voxel_group_total(red, sa);
    sb = voxel_group_total(red, sb);
    if (LOCAL_ID_X == 0)
        partials[2 * GROUP_ID_X] = sa, partials[2 * GROUP_ID_X + 1] = sb;
}

/* 4. The exclusive scan: each group adds the partials of the groups
 * before it, then its threads' sums in order; at a voxel's first point
 * its number v and offset go to offset_of[slot], and v's offset and count
 * to voxel_offset[v], voxel_count[v]. The last group writes the number
 * of voxels to total[0]. */
KERNEL ptreg_voxel_number(u32 n, u32 groups, GLOBAL const u32 *first, GLOBAL const u32 *count,
                          GLOBAL const u32 *slot_of, GLOBAL const u32 *partials, GLOBAL u32 *offset_of,
                          GLOBAL u32 *voxel_offset, GLOBAL u32 *voxel_count, GLOBAL u32 *total)
{
    SHARED u32 red[VOXEL_WG];
    SHARED u32 scan_a[VOXEL_WG], scan_b[VOXEL_WG];
    const u32 t = LOCAL_ID_X, g = GROUP_ID_X;
    u32 before_a = 0, before_b = 0;
    for (u32 j = t; j < g; j += VOXEL_WG)
        before_a += partials[2 * j], before_b += partials[2 * j + 1];
    before_a = voxel_group_total(red, before_a);
    before_b = voxel_group_total(red, before_b);
    const u32 base = g * VOXEL_WG * VOXEL_ITEMS + t * VOXEL_ITEMS;
    u32 sa = 0, sb = 0;
    for (u32 j = 0; j < VOXEL_ITEMS; j++) {
        u32 a, b;
        voxel_item(base + j, n, first, count, slot_of, &a, &b);
        sa += a, sb += b;
    }
    scan_a[t] = sa, scan_b[t] = sb;
    BARRIER();
    if (t == 0) { /* the threads' exclusive prefix, in order */
        u32 ra = before_a, rb = before_b;
        for (u32 k = 0; k < VOXEL_WG; k++) {
            const u32 xa = scan_a[k], xb = scan_b[k];
            scan_a[k] = ra, scan_b[k] = rb;
            ra += xa, rb += xb;
        }
        if (g + 1 == groups)
            total[0] = ra;
    }
    BARRIER();
    u32 va = scan_a[t], vb = scan_b[t];
    for (u32 j = 0; j < VOXEL_ITEMS; j++) {
        u32 a, b;
        voxel_item(base + j, n, first, count, slot_of, &a, &b);
        if (a) {
            offset_of[slot_of[base + j]] = vb;
            voxel_offset[va] = vb;
            voxel_count[va] = b;
        }
        va += a, vb += b;
    }
}

/* 5. Each point into its voxel's segment of order (count is used up). */
KERNEL ptreg_voxel_scatter(u32 n, GLOBAL const u32 *slot_of, GLOBAL const u32 *offset_of, GLOBAL u32 *count,
                           GLOBAL u32 *order)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    const u32 s = slot_of[i];
    order[offset_of[s] + VOXEL_DEC(&count[s]) - 1u] = i;
}

/* Heap sort of a[0 .. m) ascending, in place. */
FN void voxel_sift(GLOBAL u32 *a, u32 root, u32 m)
{
    for (;;) {
        u32 child = 2 * root + 1;
        if (child >= m)
            return;
        if (child + 1 < m && a[child + 1] > a[child])
            child++;
        if (!(a[child] > a[root]))
            return;
        const u32 x = a[root];
        a[root] = a[child], a[child] = x;
        root = child;
    }
}

FN void voxel_sort(GLOBAL u32 *a, u32 m)
{
    for (u32 r = m / 2; r > 0; r--)
        voxel_sift(a, r - 1, m);
    for (u32 end = m; end > 1; end--) {
        const u32 x = a[0];
        a[0] = a[end - 1], a[end - 1] = x;
        voxel_sift(a, 0, end - 1);
    }
}

/* 6. Voxel v's centroid (and unit mean normal, rounded mean colour when
 * has_normals, has_rgb): its points in index order, summed in double. */
KERNEL ptreg_voxel_sums(GLOBAL const float *xyz, GLOBAL const float *normals, GLOBAL const u8 *rgb, u32 has_normals,
                        u32 has_rgb, u32 limit, GLOBAL const u32 *total, GLOBAL const u32 *voxel_offset,
                        GLOBAL const u32 *voxel_count, GLOBAL u32 *order, GLOBAL float *out_xyz,
                        GLOBAL float *out_normals, GLOBAL u8 *out_rgb)
{
    const u32 v = GLOBAL_ID_X;
    if (v >= limit || v >= total[0])
        return;
    const u32 m = voxel_count[v];
    GLOBAL u32 *seg = order + voxel_offset[v];
    voxel_sort(seg, m);
    double s[3] = {0, 0, 0}, ns[3] = {0, 0, 0};
    u64 cs[3] = {0, 0, 0};
    for (u32 j = 0; j < m; j++) {
        const size_t i = seg[j];
        for (int k = 0; k < 3; k++)
            s[k] += xyz[3 * i + k];
        for (int k = 0; has_normals && k < 3; k++)
            ns[k] += normals[3 * i + k];
        for (int k = 0; has_rgb && k < 3; k++)
            cs[k] += rgb[3 * i + k];
    }
    const double scale = 1.0 / (double)m;
    for (int k = 0; k < 3; k++)
        out_xyz[3 * (size_t)v + k] = (float)(s[k] * scale);
    if (has_normals) {
        const double len = SQRT(ns[0] * ns[0] + ns[1] * ns[1] + ns[2] * ns[2]);
        const double unit = len > 0 ? 1.0 / len : (double)AS_FLOAT(0x7fc00000u);
        for (int k = 0; k < 3; k++)
            out_normals[3 * (size_t)v + k] = (float)(ns[k] * unit);
    }
    for (int k = 0; has_rgb && k < 3; k++) /* the mean, rounded half up */
        out_rgb[3 * (size_t)v + k] = (u8)((2 * cs[k] + m) / (2 * (u64)m));
}
