/* PFH and FPFH on a device (pfh_device.c drives them; the CPU's: pfh.c,
 * whose conventions these follow: docs/ALGORITHMS.md, "Normals, PFH and
 * FPFH"). One work-group per query point: its neighbor list (from
 * neighbors.cl: start/count into index and dist2; start is 64-bit, as the
 * lists pass 2^32 entries at 100 M points) is brought into local
 * memory, the group's threads take its pairs, and each pair's bins are
 * counted with integer atomics in local memory (counts do not depend on the
 * order they are added in, so the result is the same on every run). The
 * pair feature is pfh.c's ptreg_pair_feature and feat_pair_bins_exact, the
 * same float operations in the same order (no contraction), bin indices in
 * double where the device has it, as the CPU computes them.
 *
 * -D options: FEAT_WG (threads per group), FEAT_CAP (the longest list the
 * local arrays hold; the host checks every list fits), PTREG_FP64. */

#define FEAT_FPFH_BINS 33
#define FEAT_PFH_BINS 125
#define FEAT_FPFH_SPLIT 11
#define FEAT_PFH_SPLIT 5
#define FEAT_NAN AS_FLOAT(0x7fc00000u)

#ifdef PTREG_DIALECT_CUDA
#define PF_ACOS(x) acosf(x)
#define PF_ATAN2(y, x) atan2f((y), (x))
#define PF_FABS(x) fabsf(x)
#define PF_ISNAN(x) isnan(x)
#define PF_ISFINITE(x) isfinite(x)
#else
#define PF_ACOS(x) acos(x)
#define PF_ATAN2(y, x) atan2((y), (x))
#define PF_FABS(x) fabs(x)
#define PF_ISNAN(x) isnan(x)
#define PF_ISFINITE(x) isfinite(x)
#endif

/* The bins' arithmetic: double as the CPU's (float + M_PI promotes), float
 * on a device without it (rows near a bin edge may then differ). */
#if PTREG_FP64
typedef double bin_t;
#define PF_PI 3.14159265358979323846
#define PF_ONE 1.0
#define PF_HALF 0.5
#define PF_HUNDRED 100.0
#else
typedef float bin_t;
#define PF_PI 3.14159265358979323846f
#define PF_ONE 1.0f
#define PF_HALF 0.5f
#define PF_HUNDRED 100.0f
#endif

/* Eigen's 4-lane dot product of vectors whose w is 0: (x + z) + y. */
FN float pf_dot3(const float a[3], const float b[3]) { return (a[0] * b[0] + a[2] * b[2]) + a[1] * b[1]; }

FN void pf_cross3(const float a[3], const float b[3], float out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* ptreg_pair_feature: theta, alpha, phi; 0 when the pair has none. */
FN int pf_feature(const float p1[3], const float n1[3], const float p2[3], const float n2[3], float f[3])
{
    float d[3] = {p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]};
    float dist = SQRTF(pf_dot3(d, d));
    if (dist == 0.0f)
        return 0;
    float a1 = pf_dot3(n1, d) / dist, a2 = pf_dot3(n2, d) / dist;
    float u[3], target[3];
    float phi = a1;
    /* the source: the point whose normal makes the smaller angle with d */
    int swap = PF_ACOS(PF_FABS(a1)) > PF_ACOS(PF_FABS(a2));
    for (int a = 0; a < 3; a++) {
        u[a] = swap ? n2[a] : n1[a];
        target[a] = swap ? n1[a] : n2[a];
        d[a] = swap ? -d[a] : d[a];
    }
    phi = swap ? -a2 : phi;
    float v[3], w[3];
    pf_cross3(d, u, v);
    float vn = SQRTF(pf_dot3(v, v));
    if (vn == 0.0f)
        return 0;
    for (int a = 0; a < 3; a++)
        v[a] /= vn;
    pf_cross3(u, v, w);
    f[0] = PF_ATAN2(pf_dot3(w, target), pf_dot3(u, target));
    f[1] = pf_dot3(v, target);
    f[2] = phi;
    return 1;
}

/* clamp_bin; NaN (a non-finite normal, whose row is NaN anyway) to 0, so
 * the count's index stays in range */
FN i32 pf_clamp_bin(bin_t b, i32 bins) { return !(b >= 0) ? 0 : b >= (bin_t)bins ? bins - 1 : (i32)b; }

/* feat_pair_bins_exact: the pair's three bins (a pair without a feature
 * is binned as zeros, as PCL's estimators do). */
FN void pf_bins(const float p1[3], const float n1[3], const float p2[3], const float n2[3], i32 split, i32 bins[3])
{
    float f[3];
    if (!pf_feature(p1, n1, p2, n2, f))
        f[0] = f[1] = f[2] = 0.0f;
    const float inv_2pi = 1.0f / (2.0f * (float)PF_PI);
    bins[0] = pf_clamp_bin(floor((bin_t)split * (((bin_t)f[0] + PF_PI) * (bin_t)inv_2pi)), split);
    bins[1] = pf_clamp_bin(floor((bin_t)split * (((bin_t)f[1] + PF_ONE) * PF_HALF)), split);
    bins[2] = pf_clamp_bin(floor((bin_t)split * (((bin_t)f[2] + PF_ONE) * PF_HALF)), split);
}

FN int pf_finite3(GLOBAL const float *v) { return PF_ISFINITE(v[0]) && PF_ISFINITE(v[1]) && PF_ISFINITE(v[2]); }

/* A group's list in local memory: points, normals and indices side by
 * side; nonfinite counts the entries whose normal is not finite, others
 * those that are not the query. Every thread calls it (it holds barriers). */
FN void pf_load_list(GLOBAL const float *xyz, GLOBAL const float *normals, GLOBAL const u32 *index, u64 first,
                     u32 m, u32 query, LOCAL float *pts, LOCAL u32 *idx, LOCAL u32 *flags)
{
    for (u32 j = LOCAL_ID_X; j < m; j += FEAT_WG) {
        u32 q = index[first + j];
        for (u32 a = 0; a < 3; a++) {
            pts[a * FEAT_CAP + j] = xyz[3 * (size_t)q + a];
            pts[(3 + a) * FEAT_CAP + j] = normals[3 * (size_t)q + a];
        }
        idx[j] = q;
        if (!pf_finite3(normals + 3 * (size_t)q))
            LOCAL_ATOMIC_INC(&flags[0]);
        if (q != query)
            LOCAL_ATOMIC_INC(&flags[1]);
    }
    BARRIER();
}

FN void pf_local_point(LOCAL const float *pts, u32 j, float p[3], float nrm[3])
{
    for (u32 a = 0; a < 3; a++) {
        p[a] = pts[a * FEAT_CAP + j];
        nrm[a] = pts[(3 + a) * FEAT_CAP + j];
    }
}

/* count * (100 / pairs) as counts_to_values rounds it. */
FN float pf_value(u32 count, u32 pairs) { return (float)((bin_t)count * (PF_HUNDRED / (bin_t)(pairs ? pairs : 1))); }

/* SPFH of every point (one group each): its pairs (point first) with every
 * list entry but itself, 11 bins per feature; NaN when its normal or a
 * listed normal is not finite. */
KERNEL ptreg_feat_spfh(GLOBAL const float *xyz, GLOBAL const float *normals, u32 n, GLOBAL const u64 *start,
                       GLOBAL const u32 *count, GLOBAL const u32 *index, GLOBAL float *spfh)
{
    SHARED float pts[6 * FEAT_CAP];
    SHARED u32 idx[FEAT_CAP];
    SHARED u32 bins[FEAT_FPFH_BINS];
    SHARED u32 flags[2]; /* non-finite normals, pairs */
    const u32 i = GROUP_ID_X, t = LOCAL_ID_X;
    const int valid = i < n;
    for (u32 b = t; b < FEAT_FPFH_BINS; b += FEAT_WG)
        bins[b] = 0;
    if (t < 2)
        flags[t] = 0;
    BARRIER();
    const u32 m = valid ? count[i] : 0;
    pf_load_list(xyz, normals, index, valid ? start[i] : 0, m, i, pts, idx, flags);
    float p[3] = {0, 0, 0}, np[3] = {0, 0, 0};
    if (valid)
        for (u32 a = 0; a < 3; a++) {
            p[a] = xyz[3 * (size_t)i + a];
            np[a] = normals[3 * (size_t)i + a];
        }
    for (u32 j = t; j < m; j += FEAT_WG) {
        if (idx[j] == i)
            continue;
        float q[3], nq[3];
        i32 b3[3];
        pf_local_point(pts, j, q, nq);
        pf_bins(p, np, q, nq, FEAT_FPFH_SPLIT, b3);
        LOCAL_ATOMIC_INC(&bins[b3[0]]);
        LOCAL_ATOMIC_INC(&bins[FEAT_FPFH_SPLIT + b3[1]]);
        LOCAL_ATOMIC_INC(&bins[2 * FEAT_FPFH_SPLIT + b3[2]]);
    }
    BARRIER();
    const int nan_row = valid && (flags[0] != 0 || !pf_finite3(normals + 3 * (size_t)i));
    for (u32 b = t; valid && b < FEAT_FPFH_BINS; b += FEAT_WG)
        spfh[(size_t)i * FEAT_FPFH_BINS + b] = nan_row ? FEAT_NAN : pf_value(bins[b], flags[1]);
}

/* The point of a row: which[row] when the caller picked points, else the
 * row itself. */
FN u32 picked_point(GLOBAL const u32 *which, u32 picked, u32 row) { return picked ? which[row] : row; }

/* PFH of every point (one group each): all unordered pairs of its list,
 * of entries j < k the later, k, first (PCL's order), in bin
 * theta + 5 alpha + 25 phi. Pairs are numbered j * m + k over the square,
 * those with k > j taken: every thread the same share. */
KERNEL ptreg_feat_pfh(GLOBAL const float *xyz, GLOBAL const float *normals, u32 n, GLOBAL const u64 *start,
                      GLOBAL const u32 *count, GLOBAL const u32 *index, GLOBAL const u32 *which, u32 picked,
                      GLOBAL float *out)
{
    SHARED float pts[6 * FEAT_CAP];
    SHARED u32 idx[FEAT_CAP];
    SHARED u32 bins[FEAT_PFH_BINS];
    SHARED u32 flags[2];
    const u32 row = GROUP_ID_X, i = picked_point(which, picked, row), t = LOCAL_ID_X;
    const int valid = i < n;
    for (u32 b = t; b < FEAT_PFH_BINS; b += FEAT_WG)
        bins[b] = 0;
    if (t < 2)
        flags[t] = 0;
    BARRIER();
    const u32 m = valid ? count[i] : 0;
    pf_load_list(xyz, normals, index, valid ? start[i] : 0, m, i, pts, idx, flags);
    for (u32 pair = t; pair < m * m; pair += FEAT_WG) {
        u32 j = pair / m, k = pair % m;
        if (k <= j)
            continue;
        float pj[3], nj[3], pk[3], nk[3];
        i32 b3[3];
        pf_local_point(pts, j, pj, nj);
        pf_local_point(pts, k, pk, nk);
        pf_bins(pk, nk, pj, nj, FEAT_PFH_SPLIT, b3);
        LOCAL_ATOMIC_INC(&bins[b3[0] + FEAT_PFH_SPLIT * b3[1] + FEAT_PFH_SPLIT * FEAT_PFH_SPLIT * b3[2]]);
    }
    BARRIER();
    const int nan_row = valid && (flags[0] != 0 || !pf_finite3(normals + 3 * (size_t)i));
    const u32 pairs = m > 1 ? m * (m - 1) / 2 : 1;
    for (u32 b = t; valid && b < FEAT_PFH_BINS; b += FEAT_WG)
        out[(size_t)row * FEAT_PFH_BINS + b] = nan_row ? FEAT_NAN : pf_value(bins[b], pairs);
}

/* FPFH of every point (one group each): thread b sums bin b of the
 * neighbors' SPFH rows times 1 / d^2 in list order (d^2 = 0 left out: a
 * multiply then an add, as the CPU rounds them), each 11-bin block is
 * scaled to 100 (block sums in double where the device has it, a float
 * scale), and open3d adds the point's own SPFH. NaN when the point's SPFH
 * or a listed one is NaN. */
KERNEL ptreg_feat_fpfh(GLOBAL const float *spfh, u32 n, GLOBAL const u64 *start, GLOBAL const u32 *count,
                       GLOBAL const u32 *index, GLOBAL const float *dist2, GLOBAL const u32 *which, u32 picked,
                       u32 open3d, GLOBAL float *out)
{
    SHARED float hist[FEAT_FPFH_BINS];
    SHARED float scale[3];
    SHARED u32 nan_seen[1];
    const u32 row = GROUP_ID_X, i = picked_point(which, picked, row), t = LOCAL_ID_X;
    const int valid = i < n;
    if (t == 0)
        nan_seen[0] = 0;
    BARRIER();
    const u32 m = valid ? count[i] : 0;
    const u64 first = valid ? start[i] : 0;
    for (u32 j = t; j < m; j += FEAT_WG)
        if (PF_ISNAN(spfh[(size_t)index[first + j] * FEAT_FPFH_BINS]))
            LOCAL_ATOMIC_INC(&nan_seen[0]);
    if (t < FEAT_FPFH_BINS) {
        float acc = 0.0f;
        for (u32 j = 0; j < m; j++) {
            const float d = dist2[first + j];
            if (d == 0.0f)
                continue;
            const float w = 1.0f / d;
            acc += spfh[(size_t)index[first + j] * FEAT_FPFH_BINS + t] * w;
        }
        hist[t] = acc;
    }
    BARRIER();
    if (t < 3) {
        bin_t total = 0;
        for (u32 b = 0; b < FEAT_FPFH_SPLIT; b++)
            total += (bin_t)hist[FEAT_FPFH_SPLIT * t + b];
        scale[t] = total != 0 ? (float)(PF_HUNDRED / total) : 1.0f;
    }
    BARRIER();
    if (valid && t < FEAT_FPFH_BINS) {
        const float own = spfh[(size_t)i * FEAT_FPFH_BINS + t];
        float v = hist[t] * scale[t / FEAT_FPFH_SPLIT];
        if (open3d)
            v += own;
        const int nan_row = nan_seen[0] != 0 || PF_ISNAN(spfh[(size_t)i * FEAT_FPFH_BINS]);
        out[(size_t)row * FEAT_FPFH_BINS + t] = nan_row ? FEAT_NAN : v;
    }
}
