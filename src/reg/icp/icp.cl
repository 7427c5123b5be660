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
 * ptreg_transform_points. with_normals: the source's normals turned too
 * (GICP and SYMMETRIC), as ptreg_transform_vectors, in the same launch. */
KERNEL ptreg_icp_transform(GLOBAL const float *source, u32 n, acc_t t0, acc_t t1, acc_t t2, acc_t t3, acc_t t4,
                           acc_t t5, acc_t t6, acc_t t7, acc_t t8, acc_t t9, acc_t t10, acc_t t11,
                           GLOBAL float *moved, u32 with_normals, GLOBAL const float *normals,
                           GLOBAL float *moved_normals)
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
    if (!with_normals)
        return;
    GLOBAL const float *v = normals + 3 * (size_t)i;
    GLOBAL float *vo = moved_normals + 3 * (size_t)i;
    x = v[0], y = v[1], z = v[2];
    vo[0] = (float)(t0 * x + t1 * y + t2 * z);
    vo[1] = (float)(t4 * x + t5 * y + t6 * z);
    vo[2] = (float)(t8 * x + t9 * y + t10 * z);
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

/* Every kernel below reads pair i's answer (nearest, dist2) at
 * first_equal[i]: the first position of its run of equal source points
 * (the source is in Morton order, so equal points are neighbours). The k-d
 * tree's search answers that one only: a scanner's thousands of returns
 * at its origin, each tied with the target's own thousands, would each
 * scan them all (the CPU's searcher takes the predecessor's answer). */

/* The pair filters' state a kernel reads once: the max distance, the
 * sigma filter's limit, trimming's kth key. */
typedef struct pair_filter {
    float max_d2;
    acc_t limit;
    u64 kth;
} pair_filter;

FN pair_filter pair_filter_of(float max_d2, GLOBAL const acc_t *filter, GLOBAL const u64 *select)
{
    pair_filter f = {max_d2, filter[0], select[SELECT_KTH]};
    return f;
}

/* Whether pair i passes every filter; *j: where its answer is. */
FN int pair_kept(const pair_filter *f, GLOBAL const float *dist2, GLOBAL const u32 *first_equal,
                 GLOBAL const u32 *order, u64 i, u32 *j)
{
    *j = first_equal[i];
    float d2 = dist2[*j];
    return within_limits(d2, f->max_d2, f->limit) && pair_key(d2, order[i]) <= f->kth;
}

/* ---- moments of the kept pairs ---- */

/* Partial moments of group g's pairs (moved source i -> the target point
 * nearest[i] names), relative to ref, as pair_sums adds them. */
KERNEL ptreg_icp_moments(GLOBAL const float *moved, GLOBAL const u32 *nearest, GLOBAL const float *dist2,
                         GLOBAL const u32 *first_equal, GLOBAL const u32 *order, u32 n, GLOBAL const float *target,
                         float max_d2, GLOBAL const acc_t *filter, GLOBAL const u64 *select, acc_t r0, acc_t r1,
                         acc_t r2, GLOBAL acc_t *partials)
{
    SHARED acc_t red[WG];
    acc_t s[ICP_MOMENTS];
    for (u32 c = 0; c < ICP_MOMENTS; c++)
        s[c] = 0;
    pair_filter f = pair_filter_of(max_d2, filter, select);
    u64 first = first_item();
    for (u32 k = 0; k < ITEMS; k++) {
        u64 i = first + k;
        u32 j;
        if (i >= n)
            break;
        if (!pair_kept(&f, dist2, first_equal, order, i, &j))
            continue;
        float d2 = dist2[j];
        GLOBAL const float *p = moved + 3 * i, *q = target + 3 * (size_t)nearest[j];
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

/* ---- Gauss-Newton's sums: icp_gn.c's icp_gn_block, pair by pair ---- */

/* partials per group: H (upper triangle, row by row), g, the cost, the
 * pairs' summed squared distances, the pairs used */
#define GN_H 0
#define GN_G 21
#define GN_COST 27
#define GN_R2 28
#define GN_USED 29
#define ICP_GN_FIELDS 30
/* ptreg_icp_method's and ptreg_robust_kernel's numbers (icp_device.c
 * checks them) */
#define GN_POINT 0
#define GN_PLANE 1
#define GN_GICP 2
#define GN_SYMMETRIC 3
#define GN_HUBER 1
#define GN_CAUCHY 2
#define GN_TUKEY 3
#define GN_GM 4

/* The method, kernel and numbers every pair's linearisation reads. */
typedef struct gn_rule {
    u32 method, robust;
    acc_t kernel_scale, gicp_epsilon;
} gn_rule;

/* ptreg_robust_weight */
FN acc_t gn_weight(const gn_rule *rule, acc_t r)
{
    acc_t k = rule->kernel_scale, e = r < 0 ? -r : r;
    if (rule->robust == GN_HUBER)
        return e > k ? k / e : (acc_t)1;
    if (rule->robust == GN_CAUCHY)
        return (acc_t)1 / ((acc_t)1 + (r / k) * (r / k));
    if (rule->robust == GN_TUKEY) {
        if (e > k)
            return 0;
        acc_t u = (acc_t)1 - (e / k) * (e / k);
        return u * u;
    }
    if (rule->robust == GN_GM) {
        acc_t s = k + r * r;
        return k / (s * s);
    }
    return 1;
}

/* x - x is 0 for a finite x only (no fast maths here) */
FN int gn_finite3(const acc_t v[3]) { return v[0] - v[0] == 0 && v[1] - v[1] == 0 && v[2] - v[2] == 0; }

/* H += w J J^T, g += w r J, cost += w r^2 (add_row) */
FN void gn_add_row(acc_t *s, const acc_t J[6], acc_t r, acc_t w)
{
    s[GN_COST] += w * r * r;
    u32 at = GN_H;
    for (u32 i = 0; i < 6; i++) {
        acc_t wi = w * J[i];
        for (u32 j = i; j < 6; j++)
            s[at++] += wi * J[j];
        s[GN_G + i] += wi * r;
    }
}

/* the row d.n + omega.(p x n) + t.n (add_normal_row) */
FN void gn_add_normal_row(acc_t *s, const acc_t p[3], const acc_t n[3], acc_t r, acc_t w)
{
    acc_t J[6] = {p[1] * n[2] - p[2] * n[1], p[2] * n[0] - p[0] * n[2], p[0] * n[1] - p[1] * n[0],
                  n[0], n[1], n[2]};
    gn_add_row(s, J, r, w);
}

FN void gn_add_point_pair(acc_t *s, const acc_t p[3], const acc_t d[3], acc_t w)
{
    acc_t J0[6] = {0, p[2], -p[1], 1, 0, 0};
    acc_t J1[6] = {-p[2], 0, p[0], 0, 1, 0};
    acc_t J2[6] = {p[1], -p[0], 0, 0, 0, 1};
    gn_add_row(s, J0, d[0], w);
    gn_add_row(s, J1, d[1], w);
    gn_add_row(s, J2, d[2], w);
}

FN void gn_cross(const acc_t a[3], const acc_t b[3], acc_t out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* W = (C_q + C_p)^-1, C = I - (1 - eps) n n^T (gicp_weight); 0 when the
 * sum is not positive definite or a normal not finite */
FN int gn_gicp_weight(const acc_t nq[3], const acc_t np[3], acc_t eps, acc_t W[9])
{
    acc_t M[9];
    for (u32 i = 0; i < 3; i++)
        for (u32 j = 0; j < 3; j++)
            M[3 * i + j] = (acc_t)(2 * (i == j)) - ((acc_t)1 - eps) * (nq[i] * nq[j] + np[i] * np[j]);
    acc_t C[9] = {M[4] * M[8] - M[5] * M[7], M[2] * M[7] - M[1] * M[8], M[1] * M[5] - M[2] * M[4],
                  M[5] * M[6] - M[3] * M[8], M[0] * M[8] - M[2] * M[6], M[2] * M[3] - M[0] * M[5],
                  M[3] * M[7] - M[4] * M[6], M[1] * M[6] - M[0] * M[7], M[0] * M[4] - M[1] * M[3]};
    acc_t det = M[0] * C[0] + M[1] * C[3] + M[2] * C[6];
    if (!(det > 0) || !(det - det == 0))
        return 0;
    for (u32 i = 0; i < 9; i++)
        W[i] = C[i] / det;
    return 1;
}

/* GICP's pair: A^T W A, A^T W, W and the gradient, weighted by the kernel
 * of the Mahalanobis distance (add_gicp_pair) */
FN void gn_add_gicp_pair(acc_t *s, const gn_rule *rule, const acc_t p[3], const acc_t d[3], const acc_t W[9])
{
    acc_t A[3][3] = {{0, -p[2], p[1]}, {p[2], 0, -p[0]}, {-p[1], p[0], 0}};
    acc_t WA[3][3], AtWA[3][3], Wd[3], AtWd[3];
    for (u32 c = 0; c < 3; c++) {
        for (u32 i = 0; i < 3; i++)
            WA[c][i] = W[3 * i] * A[c][0] + W[3 * i + 1] * A[c][1] + W[3 * i + 2] * A[c][2];
        gn_cross(p, WA[c], AtWA[c]);
    }
    for (u32 i = 0; i < 3; i++)
        Wd[i] = W[3 * i] * d[0] + W[3 * i + 1] * d[1] + W[3 * i + 2] * d[2];
    gn_cross(p, Wd, AtWd);
    acc_t m2 = d[0] * Wd[0] + d[1] * Wd[1] + d[2] * Wd[2];
    acc_t w = gn_weight(rule, SQRT(m2 > 0 ? m2 : (acc_t)0));
    s[GN_COST] += w * m2;
    u32 at = GN_H;
    for (u32 a = 0; a < 3; a++) {
        for (u32 b = a; b < 3; b++)
            s[at++] += w * AtWA[b][a];
        for (u32 b = 0; b < 3; b++)
            s[at++] += w * WA[a][b];
        s[GN_G + a] += w * AtWd[a];
    }
    for (u32 a = 0; a < 3; a++) {
        for (u32 b = a; b < 3; b++)
            s[at++] += w * W[3 * a + b];
        s[GN_G + 3 + a] += w * Wd[a];
    }
}

/* One pair's share: pc the moved source point about the centre, d = p - q,
 * nq the target's normal, np the moved source's (GICP, SYMMETRIC), qc the
 * target point about the centre (SYMMETRIC). */
FN void gn_add_pair(acc_t *s, const gn_rule *rule, const acc_t pc[3], const acc_t qc[3], const acc_t d[3],
                    const acc_t nq[3], const acc_t np[3])
{
    acc_t dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    s[GN_R2] += dd;
    s[GN_USED] += 1;
    if (rule->method == GN_PLANE) {
        /* a pair without a normal counts in fitness and rmse only */
        if (!gn_finite3(nq))
            return;
        acc_t r = d[0] * nq[0] + d[1] * nq[1] + d[2] * nq[2];
        gn_add_normal_row(s, pc, nq, r, gn_weight(rule, r));
    } else if (rule->method == GN_SYMMETRIC) {
        /* the source's normal turned to the target's side: unoriented
         * normals must not cancel */
        acc_t dot = nq[0] * np[0] + nq[1] * np[1] + nq[2] * np[2];
        acc_t sign = dot < 0 ? (acc_t)-1 : (acc_t)1;
        acc_t n[3] = {nq[0] + sign * np[0], nq[1] + sign * np[1], nq[2] + sign * np[2]};
        acc_t sum[3] = {pc[0] + qc[0], pc[1] + qc[1], pc[2] + qc[2]};
        if (!gn_finite3(n))
            return;
        acc_t r = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
        gn_add_normal_row(s, sum, n, r, gn_weight(rule, r));
    } else if (rule->method == GN_GICP) {
        acc_t W[9];
        if (gn_gicp_weight(nq, np, rule->gicp_epsilon, W))
            gn_add_gicp_pair(s, rule, pc, d, W);
    } else {
        gn_add_point_pair(s, pc, d, gn_weight(rule, SQRT(dd)));
    }
}

FN void gn_load3(GLOBAL const float *v, acc_t out[3])
{
    out[0] = v[0], out[1] = v[1], out[2] = v[2];
}

/* Partial normal equations of group g's kept pairs (the filters as
 * ptreg_icp_moments'), about the centre (c0, c1, c2). The target's normals
 * are in its original order: names by slot (by_slot) are mapped through
 * slot_index. moved_normals: the moved source's (GICP, SYMMETRIC). */
KERNEL ptreg_icp_gn(GLOBAL const float *moved, GLOBAL const u32 *nearest, GLOBAL const float *dist2,
                    GLOBAL const u32 *first_equal, GLOBAL const u32 *order, u32 n, GLOBAL const float *target,
                    GLOBAL const float *target_normals, GLOBAL const u32 *slot_index, u32 by_slot,
                    GLOBAL const float *moved_normals, float max_d2,
                    GLOBAL const acc_t *filter, GLOBAL const u64 *select, acc_t c0, acc_t c1, acc_t c2, u32 method,
                    u32 robust_kernel, acc_t kernel_scale, acc_t gicp_epsilon, GLOBAL acc_t *partials)
{
    SHARED acc_t red[WG];
    gn_rule rule = {method, robust_kernel, kernel_scale, gicp_epsilon};
    acc_t s[ICP_GN_FIELDS];
    for (u32 c = 0; c < ICP_GN_FIELDS; c++)
        s[c] = 0;
    pair_filter f = pair_filter_of(max_d2, filter, select);
    u64 first = first_item();
    for (u32 k = 0; k < ITEMS; k++) {
        u64 i = first + k;
        u32 j;
        if (i >= n)
            break;
        if (!pair_kept(&f, dist2, first_equal, order, i, &j))
            continue;
        u32 name = nearest[j];
        acc_t p[3], q[3], pc[3], qc[3], d[3], nq[3] = {0, 0, 0}, np[3] = {0, 0, 0};
        gn_load3(moved + 3 * i, p);
        gn_load3(target + 3 * (size_t)name, q);
        const acc_t c[3] = {c0, c1, c2};
        for (u32 a = 0; a < 3; a++) {
            pc[a] = p[a] - c[a];
            qc[a] = q[a] - c[a];
            d[a] = p[a] - q[a];
        }
        if (method != GN_POINT)
            gn_load3(target_normals + 3 * (size_t)(by_slot ? slot_index[name] : name), nq);
        if (method == GN_GICP || method == GN_SYMMETRIC)
            gn_load3(moved_normals + 3 * i, np);
        gn_add_pair(s, &rule, pc, qc, d, nq, np);
    }
    for (u32 c = 0; c < ICP_GN_FIELDS; c++) {
        acc_t total = group_sum(red, s[c]);
        if (LOCAL_ID_X == 0)
            partials[(size_t)GROUP_ID_X * ICP_GN_FIELDS + c] = total;
    }
}

/* ---- the sigma filter ---- */

KERNEL ptreg_icp_sigma_partials(GLOBAL const float *dist2, GLOBAL const u32 *first_equal, u32 n, float max_d2,
                                GLOBAL acc_t *partials)
{
    SHARED acc_t red[WG];
    acc_t s[SIGMA_SUMS] = {0, 0, 0};
    u64 first = first_item();
    for (u32 k = 0; k < ITEMS; k++) {
        u64 i = first + k;
        if (i >= n)
            break;
        float d2 = dist2[first_equal[i]];
        if (!(d2 <= max_d2))
            continue;
        acc_t e = SQRT((acc_t)d2);
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
KERNEL ptreg_icp_trim_histogram(GLOBAL const float *dist2, GLOBAL const u32 *first_equal, GLOBAL const u32 *order,
                                u32 n, float max_d2, GLOBAL const acc_t *filter, GLOBAL const u64 *select, u32 pass,
                                GLOBAL u32 *hist)
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
        float d2 = dist2[first_equal[i]];
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
