/* One large EM-ICP registration on a device (emicp_device.c drives it):
 * per iteration, emicp_move places the source rows for the pair sums
 * (pair.cl), then emicp_moments turns each row's sums into its weight and
 * weighted target point (emicp_weights.cl) and sums the moments of Horn's
 * problem per work-group, by a tree in local memory; the host adds the
 * groups' moments in group order and solves Horn's 4x4. Needs
 * device/reduce.cl, pair/exp.cl, pair/pair.cl and reg/emicp/emicp_weights.cl
 * first.
 *
 * The pose buffer, rewritten by the host each iteration (acc_t): */
#define POSE_T 0       /* rows 0..2 of the 4x4 */
#define POSE_CENTER 12 /* the columns' centre: the target's centroid */
#define POSE_REF_P 15  /* the moments' reference points: the source's */
#define POSE_REF_Q 18  /* and the target's centroids */
#define POSE_OUTLIER 21 /* exp(-d0^2 / sigma^2) */

/* Row i of the pair sums: T p_i - c, in double where the device has it,
 * rounded as the CPU's pair engine stores rows (ptreg_pair_gauss). */
KERNEL ptreg_emicp_move(GLOBAL const float *source, u32 n, GLOBAL const acc_t *pose, u32 rstride,
                        GLOBAL pair_t *rows)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    const acc_t p[3] = {source[3 * (size_t)i], source[3 * (size_t)i + 1], source[3 * (size_t)i + 2]};
    for (u32 r = 0; r < 3; r++) {
        const acc_t moved = pose[POSE_T + 4 * r] * p[0] + pose[POSE_T + 4 * r + 1] * p[1] +
                            pose[POSE_T + 4 * r + 2] * p[2] + pose[POSE_T + 4 * r + 3];
        const pair_t row = (pair_t)(moved - pose[POSE_CENTER + r]);
#if PAIR_PREC == 16
        rows[r * rstride + i] = round_through_half(row);
#else
        rows[r * rstride + i] = row;
#endif
    }
}

/* Each group's moments (EMICP_MOMENTS acc_t per group): its rows' weighted
 * pairs, summed by group_sum's tree. */
KERNEL ptreg_emicp_moments(GLOBAL const float *source, u32 n, GLOBAL const acc_t *partial, u32 splits, u32 npad,
                           GLOBAL const acc_t *pose, GLOBAL acc_t *group_moments)
{
    SHARED acc_t red[WG];
    const u32 i = GLOBAL_ID_X;
    acc_t m[EMICP_MOMENTS];
    for (int k = 0; k < EMICP_MOMENTS; k++)
        m[k] = 0;
    if (i < n) {
        acc_t s[PAIR_SUMS], center[3], ref_p[3], ref_q[3], q[3], lambda;
        pair_row_sums(partial, splits, npad, i, s);
        const acc_t p[3] = {source[3 * (size_t)i], source[3 * (size_t)i + 1], source[3 * (size_t)i + 2]};
        for (int r = 0; r < 3; r++) {
            center[r] = pose[POSE_CENTER + r];
            ref_p[r] = pose[POSE_REF_P + r];
            ref_q[r] = pose[POSE_REF_Q + r];
        }
        if (emicp_weight(s[0], s[1], s + 2, pose[POSE_OUTLIER], center, &lambda, q))
            moments_add(m, p, q, ref_p, ref_q, lambda);
    }
    for (int k = 0; k < EMICP_MOMENTS; k++) {
        const acc_t total = group_sum(red, m[k]);
        if (LOCAL_ID_X == 0)
            group_moments[(size_t)GROUP_ID_X * EMICP_MOMENTS + (size_t)k] = total;
    }
}
