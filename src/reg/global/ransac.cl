/* RANSAC's scoring on a device (ransac_device.c drives it): each group
 * counts one hypothesis's inliers, the matches within max_dist of their
 * target point under its transform, with the CPU's arithmetic (ransac.c's
 * apply and dist2, in double, no contraction), so the counts, and with
 * them the winner, are the CPU's exactly. Needs device/reduce.cl before it
 * and double precision. */

/* counts[h] = the inliers of hypothesis h (T: 12 numbers each, its rows)
 * among the count matches p[k] -> q[k]. One group per hypothesis. */
KERNEL ptreg_ransac_inliers(GLOBAL const float *p, GLOBAL const float *q, u32 count, GLOBAL const acc_t *T,
                            acc_t max_d2, GLOBAL u64 *counts)
{
    SHARED u64 red[WG];
    GLOBAL const acc_t *t = T + 12 * (size_t)GROUP_ID_X;
    u64 inliers = 0;
    for (u32 k = LOCAL_ID_X; k < count; k += WG) {
        acc_t x = p[3 * (size_t)k], y = p[3 * (size_t)k + 1], z = p[3 * (size_t)k + 2];
        acc_t d0 = (t[0] * x + t[1] * y + t[2] * z + t[3]) - (acc_t)q[3 * (size_t)k];
        acc_t d1 = (t[4] * x + t[5] * y + t[6] * z + t[7]) - (acc_t)q[3 * (size_t)k + 1];
        acc_t d2 = (t[8] * x + t[9] * y + t[10] * z + t[11]) - (acc_t)q[3 * (size_t)k + 2];
        inliers += d0 * d0 + d1 * d1 + d2 * d2 <= max_d2;
    }
    u64 total = group_sum_u64(red, inliers, 0);
    if (LOCAL_ID_X == 0)
        counts[GROUP_ID_X] = total;
}
