/* Odometry's ICP step on a GPU (odometry_device.c): a thread per source
 * point moves it by the pose, finds its nearest map point in the voxel
 * hash map exactly as odometry_map.c does (its voxel, then the neighbours
 * whose box is nearer than the best so far, in the same order; distances
 * in float from the voxel's centre), and adds its pair's Geman-McClure
 * weighted normal equations (odometry_icp.c's block_sums); each group's 28
 * sums are reduced by group_sum's tree and written for the host to add in
 * group order. Double precision: the pose and the world coordinates (a
 * drive kilometres long) need it, so a device without it runs odometry on
 * the CPU. -D: WG. */

#if PTREG_FP64

#define ODO_SUMS 28
/* odometry_map.c's key: three 21-bit biased voxel coordinates, plus 1 */
#define ODO_COORD_BITS 21
#define ODO_COORD_BIAS (1 << (ODO_COORD_BITS - 1))
#define ODO_COORD_MASK ((1u << ODO_COORD_BITS) - 1u)

FN u64 odo_pack(i32 x, i32 y, i32 z)
{
    return ((u64)((u32)(x + ODO_COORD_BIAS) & ODO_COORD_MASK) |
            ((u64)((u32)(y + ODO_COORD_BIAS) & ODO_COORD_MASK) << ODO_COORD_BITS) |
            ((u64)((u32)(z + ODO_COORD_BIAS) & ODO_COORD_MASK) << (2 * ODO_COORD_BITS))) +
           (u64)1;
}

FN u32 odo_home(u64 key, u32 mask)
{
    key ^= key >> 33;
    key *= (((u64)0xff51afd7u) << 32) | (u64)0xed558ccdu;
    key ^= key >> 33;
    return (u32)key & mask;
}

/* The table entry of key (the host's odo_entry: key low and high words,
 * cell, count), or NO_NEIGHBOR when the voxel is empty. The table always
 * has empty entries, so the probe ends. */
FN u32 odo_probe(GLOBAL const u32 *table, u32 mask, u64 key)
{
    u32 i = odo_home(key, mask);
    for (;;) {
        const u64 k = (u64)table[4 * i] | ((u64)table[4 * i + 1] << 32);
        if (k == key)
            return i;
        if (k == (u64)0)
            return NO_NEIGHBOR;
        i = (i + 1) & mask;
    }
}

/* Neighbour v's offset along axis, in odometry_map.c's order: each code
 * holds the three offsets as base-3 digits (x first; 0, -1, +1 as 0, 1, 2),
 * 5 bits a code, nine to a word (no table: it would live on the stack). */
FN i32 odo_step(u32 v, u32 axis)
{
    const u64 word = v < 9u ? (((u64)0x724u) << 32) | (u64)0x92618820u
                     : v < 18u ? (((u64)0xfabu) << 32) | (u64)0x28b9a905u
                               : (((u64)0x1a8du) << 32) | (u64)0xdd9859b8u;
    const u32 code = (u32)(word >> (5u * (v % 9u))) & 31u;
    const u32 digit = (code / (axis == 0u ? 1u : axis == 1u ? 3u : 9u)) % 3u;
    return digit == 0u ? 0 : digit == 1u ? -1 : 1;
}

/* The nearest map point to q within sqrt(*best2) into out; 0 when none. */
FN int odo_nearest(GLOBAL const u32 *table, u32 mask, GLOBAL const float *offset, u32 per, double voxel,
                   double inv_voxel, const double q[3], double *best2, double out[3])
{
    const i32 c[3] = {(i32)floor(q[0] * inv_voxel), (i32)floor(q[1] * inv_voxel), (i32)floor(q[2] * inv_voxel)};
    double rel[3];
    for (int k = 0; k < 3; k++)
        rel[k] = q[k] - (double)c[k] * voxel;
    int found = 0;
    for (u32 v = 0; v < 27u; v++) {
        i32 d[3];
        double bound = 0.0;
        for (u32 k = 0; k < 3u; k++) {
            d[k] = odo_step(v, k);
            const double gap = d[k] < 0 ? rel[k] : d[k] > 0 ? voxel - rel[k] : 0.0;
            bound += gap * gap;
        }
        if (bound >= *best2)
            continue;
        const i32 nc[3] = {c[0] + d[0], c[1] + d[1], c[2] + d[2]};
        const u32 at = odo_probe(table, mask, odo_pack(nc[0], nc[1], nc[2]));
        if (at == NO_NEIGHBOR)
            continue;
        const u32 cell = table[4 * at + 2], count = table[4 * at + 3];
        double centre[3];
        for (int k = 0; k < 3; k++)
            centre[k] = ((double)nc[k] + 0.5) * voxel;
        const float qr[3] = {(float)(q[0] - centre[0]), (float)(q[1] - centre[1]), (float)(q[2] - centre[2])};
        GLOBAL const float *x = offset + (u64)3 * per * cell;
        GLOBAL const float *y = x + per;
        GLOBAL const float *z = y + per;
        float best_d2 = (float)*best2;
        u32 best = NO_NEIGHBOR;
        for (u32 p = 0; p < count; p++) {
            const float dx = x[p] - qr[0], dy = y[p] - qr[1], dz = z[p] - qr[2];
            const float d2 = dx * dx + dy * dy + dz * dz;
            if (d2 < best_d2)
                best_d2 = d2, best = p;
        }
        if (best == NO_NEIGHBOR)
            continue;
        *best2 = best_d2;
        out[0] = centre[0] + x[best], out[1] = centre[1] + y[best], out[2] = centre[2] + z[best];
        found = 1;
    }
    return found;
}

/* Point i's pair added to s: J = [I | -[p]x] of the moved point p,
 * r = p - q, weight k^2 / (k + |r|^2)^2. */
FN void odo_point_sums(GLOBAL const double *src, u32 i, GLOBAL const double *pose, GLOBAL const u32 *table, u32 mask,
                       GLOBAL const float *offset, u32 per, double voxel, double inv_voxel, double max_dist2,
                       double kernel_k, acc_t *s)
{
    const double sx = src[3 * i], sy = src[3 * i + 1], sz = src[3 * i + 2];
    double p[3], q[3], best2 = max_dist2;
    for (int r = 0; r < 3; r++)
        p[r] = pose[4 * r] * sx + pose[4 * r + 1] * sy + pose[4 * r + 2] * sz + pose[4 * r + 3];
    if (!odo_nearest(table, mask, offset, per, voxel, inv_voxel, p, &best2, q))
        return;
    const double res[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
    const double r2 = res[0] * res[0] + res[1] * res[1] + res[2] * res[2];
    const double w = kernel_k * kernel_k / ((kernel_k + r2) * (kernel_k + r2));
    const double J[3][6] = {{1.0, 0.0, 0.0, 0.0, p[2], -p[1]},
                            {0.0, 1.0, 0.0, -p[2], 0.0, p[0]},
                            {0.0, 0.0, 1.0, p[1], -p[0], 0.0}};
    int u = 0;
    for (int a = 0; a < 6; a++)
        for (int b = a; b < 6; b++, u++)
            s[u] += w * (J[0][a] * J[0][b] + J[1][a] * J[1][b] + J[2][a] * J[2][b]);
    for (int a = 0; a < 6; a++)
        s[21 + a] += w * (J[0][a] * res[0] + J[1][a] * res[1] + J[2][a] * res[2]);
    s[27] += 1.0;
}

/* pose: the 3 x 4 rows of T; sums: a group's 28 (the 6 x 6 system's upper
 * triangle, its right-hand side, the pairs). */
KERNEL ptreg_odometry_sums(GLOBAL const double *src, u32 n, GLOBAL const double *pose, GLOBAL const u32 *table,
                                u32 mask, GLOBAL const float *offset, u32 per, double voxel, double inv_voxel,
                                double max_dist2, double kernel_k, GLOBAL double *sums)
{
    SHARED acc_t red[WG];
    acc_t s[ODO_SUMS];
    for (int k = 0; k < ODO_SUMS; k++)
        s[k] = 0.0;
    const u32 i = GLOBAL_ID_X;
    if (i < n)
        odo_point_sums(src, i, pose, table, mask, offset, per, voxel, inv_voxel, max_dist2, kernel_k, s);
    for (int k = 0; k < ODO_SUMS; k++) {
        const acc_t total = group_sum(red, s[k]);
        if (LOCAL_ID_X == 0u)
            sums[ODO_SUMS * GROUP_ID_X + k] = total;
    }
}

#endif
