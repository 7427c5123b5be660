/* Rigid ICP's steps on a device (icp_device.c drives them): the transform
 * of the source, the pair filters (max distance, the sigma filter, trimming
 * by a radix selection) and the moments of the kept pairs. Every sum is
 * taken in fixed-size groups (threads add their items in order, then a
 * tree in local memory), written as partials, then summed in a fixed order
 * by one group: the same bits on every run of a device, no atomics on
 * floats. Needs device/reduce.cl before it. */

#define ICP_MOMENTS 17 /* w, sp[3], sq[3], spq[9], d2sum */
#define SIGMA_SUMS 3   /* count, sum e, sum e^2 */
#define TRIM_BINS 256
#define TRIM_PASSES 8
/* select[]: the trimming threshold and the selection's state */
#define SELECT_KTH 0    /* pairs with key <= kth are kept (all ones: all) */
#define SELECT_PREFIX 1 /* the digits chosen so far */
#define SELECT_LEFT 2   /* the rank still to find among the keys with that prefix */
#define SELECT_DONE 3   /* nothing to trim this iteration */
#define SELECT_USED 4
#define SELECT_WORDS 5

/* moved = T source, T's rows as 12 numbers; in double then rounded, as
 * ptreg_transform_points. */
KERNEL ptreg_icp_transform(GLOBAL const float *source, u32 n, acc_t t0, acc_t t1, acc_t t2, acc_t t3, acc_t t4,
                           acc_t t5, acc_t t6, acc_t t7, acc_t t8, acc_t t9, acc_t t10, acc_t t11,
                           GLOBAL float *moved)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    GLOBAL const float *p = source + 3 * (size_t)i; /* 3 i passes 2^32 at 1.4 G points */
    GLOBAL float *out = moved + 3 * (size_t)i;
    acc_t x = p[0], y = p[1], z = p[2];
    out[0] = (float)(t0 * x + t1 * y + t2 * z + t3);
    out[1] = (float)(t4 * x + t5 * y + t6 * z + t7);
    out[2] = (float)(t8 * x + t9 * y + t10 * z + t11);
}

FN u64 pair_key(float d2, u32 caller_index) { return ((u64)AS_UINT(d2) << 32) | (u64)caller_index; }

/* The filters before trimming: max distance, then the sigma filter's limit
 * (+inf when it does not apply). */
FN int within_limits(float d2, float max_d2, acc_t sigma_limit)
{
    return d2 <= max_d2 && !(SQRT((acc_t)d2) > sigma_limit);
}

/* The first of a thread's ITEMS pairs, in 64 bits: the last groups'
 * threads start past n, and near 2^32 pairs a 32-bit start would wrap back
 * below it and count pairs twice. */
FN u64 first_item(void) { return ((u64)GROUP_ID_X * WG + LOCAL_ID_X) * ITEMS; }

/* ---- moments of the kept pairs ---- */

/* Partial moments of group g's pairs (moved source i -> the target point
 * nearest[i] names), relative to ref, as pair_sums adds them. */
KERNEL ptreg_icp_moments(GLOBAL const float *moved, GLOBAL const u32 *nearest, GLOBAL const float *dist2,
                         GLOBAL const u32 *order, u32 n, GLOBAL const float *target, float max_d2,
                         GLOBAL const acc_t *filter, GLOBAL const u64 *select, acc_t r0, acc_t r1, acc_t r2,
                         GLOBAL acc_t *partials)
{
    SHARED acc_t red[WG];
    acc_t s[ICP_MOMENTS];
    for (u32 c = 0; c < ICP_MOMENTS; c++)
        s[c] = 0;
    acc_t limit = filter[0];
    u64 kth = select[SELECT_KTH];
    u64 first = first_item();
    for (u32 k = 0; k < ITEMS; k++) {
        u64 i = first + k;
        if (i >= n)
            break;
        float d2 = dist2[i];
        if (!within_limits(d2, max_d2, limit) || pair_key(d2, order[i]) > kth)
            continue;
        GLOBAL const float *p = moved + 3 * i, *q = target + 3 * (size_t)nearest[i];
        acc_t a[3] = {p[0] - r0, p[1] - r1, p[2] - r2};
        acc_t b[3] = {q[0] - r0, q[1] - r1, q[2] - r2};
        s[0] += 1;
        for (u32 r = 0; r < 3; r++) {
            s[1 + r] += a[r];
            s[4 + r] += b[r];
            for (u32 c = 0; c < 3; c++)
                s[7 + 3 * r + c] += a[r] * b[c];
        }
        s[16] += d2;
    }
    for (u32 c = 0; c < ICP_MOMENTS; c++) {
        acc_t total = group_sum(red, s[c]);
        if (LOCAL_ID_X == 0)
            partials[(size_t)GROUP_ID_X * ICP_MOMENTS + c] = total;
    }
}

/* out[c] = the sum over groups of partials[g * fields + c], for every c:
 * thread t adds a fixed run of groups in order, then the tree. One group. */
KERNEL ptreg_icp_total(GLOBAL const acc_t *partials, u32 groups, u32 fields, GLOBAL acc_t *out)
{
    SHARED acc_t red[WG];
    u32 t = LOCAL_ID_X, run = (groups + WG - 1) / WG;
    for (u32 c = 0; c < fields; c++) {
        acc_t s = 0;
        for (u32 g = t * run; g < (t + 1) * run && g < groups; g++)
            s += partials[(size_t)g * fields + c];
        acc_t total = group_sum(red, s);
        if (t == 0)
            out[c] = total;
    }
}

/* ---- the sigma filter ---- */

KERNEL ptreg_icp_sigma_partials(GLOBAL const float *dist2, u32 n, float max_d2, GLOBAL acc_t *partials)
{
    SHARED acc_t red[WG];
    acc_t s[SIGMA_SUMS] = {0, 0, 0};
    u64 first = first_item();
    for (u32 k = 0; k < ITEMS; k++) {
        u64 i = first + k;
        if (i >= n)
            break;
        if (!(dist2[i] <= max_d2))
            continue;
        acc_t e = SQRT((acc_t)dist2[i]);
        s[0] += 1;
        s[1] += e;
        s[2] += e * e;
    }
    for (u32 c = 0; c < SIGMA_SUMS; c++) {
        acc_t total = group_sum(red, s[c]);
        if (LOCAL_ID_X == 0)
            partials[(size_t)GROUP_ID_X * SIGMA_SUMS + c] = total;
    }
}

/* filter[0] = mean + sigma std of the pairs' errors (+inf when the filter
 * does not apply this iteration, or fewer than 2 pairs), from the partials
 * summed as ptreg_icp_total does. One group. */
KERNEL ptreg_icp_sigma_limit(GLOBAL const acc_t *partials, u32 groups, u32 apply, acc_t sigma,
                             GLOBAL acc_t *filter)
{
    SHARED acc_t red[WG];
    u32 t = LOCAL_ID_X, run = (groups + WG - 1) / WG;
    acc_t sums[SIGMA_SUMS];
    for (u32 c = 0; c < SIGMA_SUMS; c++) {
        acc_t s = 0;
        for (u32 g = t * run; apply && g < (t + 1) * run && g < groups; g++)
            s += partials[(size_t)g * SIGMA_SUMS + c];
        sums[c] = group_sum(red, s);
    }
    if (t == 0) {
        acc_t limit = AS_FLOAT(0x7f800000u);
        if (apply && sums[0] >= 2) {
            acc_t mean = sums[1] / sums[0];
            acc_t var = sums[2] / sums[0] - mean * mean;
            limit = mean + sigma * SQRT(var > 0 ? var : 0);
        }
        filter[0] = limit;
    }
}

/* ---- trimming: the kth smallest key, by radix selection ---- */

/* Per group, a histogram of the next digit of the keys of the pairs that
 * passed the other filters and share the digits chosen so far. */
KERNEL ptreg_icp_trim_histogram(GLOBAL const float *dist2, GLOBAL const u32 *order, u32 n, float max_d2,
                                GLOBAL const acc_t *filter, GLOBAL const u64 *select, u32 pass, GLOBAL u32 *hist)
{
    SHARED u32 bins[TRIM_BINS];
    u32 t = LOCAL_ID_X;
    for (u32 b = t; b < TRIM_BINS; b += WG)
        bins[b] = 0;
    BARRIER();
    acc_t limit = filter[0];
    u64 prefix = select[SELECT_PREFIX];
    int active = pass == 0 || select[SELECT_DONE] == 0;
    u32 shift = 56 - 8 * pass;
    u64 first = first_item();
    for (u32 k = 0; active && k < ITEMS; k++) {
        u64 i = first + k;
        if (i >= n)
            break;
        float d2 = dist2[i];
        if (!within_limits(d2, max_d2, limit))
            continue;
        u64 key = pair_key(d2, order[i]);
        if (pass > 0 && (key >> (shift + 8)) != (prefix >> (shift + 8)))
            continue;
        LOCAL_ATOMIC_INC(&bins[(u32)(key >> shift) & (TRIM_BINS - 1)]);
    }
    BARRIER();
    for (u32 b = t; b < TRIM_BINS; b += WG)
        hist[(size_t)GROUP_ID_X * TRIM_BINS + b] = bins[b];
}

/* Sums the histograms (bin by bin, groups in order) and picks the digit of
 * the kth key; the first pass also counts the pairs and sets k =
 * ceil(trim used) (nothing to do when that keeps them all). One group. */
KERNEL ptreg_icp_trim_pick(GLOBAL const u32 *hist, u32 groups, u32 pass, acc_t trim, GLOBAL u64 *select)
{
    SHARED u32 counts[TRIM_BINS];
    u32 t = LOCAL_ID_X;
    for (u32 b = t; b < TRIM_BINS; b += WG) {
        u32 s = 0;
        for (u32 g = 0; g < groups; g++)
            s += hist[(size_t)g * TRIM_BINS + b];
        counts[b] = s;
    }
    BARRIER();
    if (t != 0)
        return; /* no barrier follows */
    if (pass == 0) {
        u64 used = 0;
        for (u32 b = 0; b < TRIM_BINS; b++)
            used += counts[b];
        u64 keep = (u64)CEIL(trim * (acc_t)used);
        select[SELECT_USED] = used;
        select[SELECT_DONE] = keep >= used;
        select[SELECT_LEFT] = keep;
        select[SELECT_PREFIX] = 0;
        select[SELECT_KTH] = 0xffffffffffffffffull;
    }
    if (select[SELECT_DONE])
        return;
    u32 shift = 56 - 8 * pass;
    u64 left = select[SELECT_LEFT], below = 0;
    u32 b = 0;
    while (b < TRIM_BINS - 1 && below + counts[b] < left)
        below += counts[b++];
    select[SELECT_PREFIX] |= (u64)b << shift;
    select[SELECT_LEFT] = left - below;
    if (pass == TRIM_PASSES - 1)
        select[SELECT_KTH] = select[SELECT_PREFIX];
}
