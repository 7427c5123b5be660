/* PFH / FPFH pair bins, compiled per ISA. One loop over the batch that the
 * compiler vectorises (selects instead of branches, no calls), then the
 * reference for the few pairs the loop flags. No FMA contraction
 * (-ffp-contract=off): d, the dot products, |d|, v, w, alpha and phi are the
 * reference's float operations in its order, so they are the same bits;
 * only theta is approximated. */
#include "feat/pfh_kernels.h"

#include <math.h>

#include "core/cpu_isa.h"
#include "pair/vec_isa.h"

#define PAIR_PI 3.14159265358979323846
#define PAIR_PI_F 3.14159265f
#define PAIR_HALF_PI_F 1.57079633f
/* Pairs whose theta lies within this many bins of a bin edge, or whose
 * |n.d| differ by less than SWAP_MARGIN without being equal, go to the
 * reference. The polynomial's theta is within 1e-6 rad of atan2f (3.3e-7
 * from the fit, the rest from the reduction), i.e. 2e-6 bins at 11 bins.
 * acos has slope <= -1, so |n.d| values 1e-6 apart have acosf values
 * apart by 8 float ulps or more: their order is the reference's. */
#define THETA_MARGIN 1e-4
#define SWAP_MARGIN 1e-6f
#define SUB_BATCH 64

/* atan(a) for a in [0, 1]: a * P(a^2), P a least-squares minimax fit of
 * degree 6 (bench/NOTES.md has how it was fitted). */
static inline float atan_unit(float a)
{
    float s = a * a;
    float p = 0.006811759900301695f;
    p = p * s - 0.03360413387417793f;
    p = p * s + 0.07962358742952347f;
    p = p * s - 0.1323333978652954f;
    p = p * s + 0.19807815551757812f;
    p = p * s - 0.3331736922264099f;
    p = p * s + 0.9999961256980896f;
    return a * p;
}

/* floor(t) clamped to [0, split - 1], as the reference's clamp_bin: the
 * clamp comes first, so truncation is floor (GCC cannot vectorise an
 * integer floor). */
static inline int32_t clamp_floor(double t, double top)
{
    t = t < 0.0 ? 0.0 : t;
    t = t > top ? top : t;
    return (int32_t)t;
}

/* The pairs j0 .. j0 + count - 1: bins, and unsure[k] = 1 for those the
 * reference must decide. `first` is a constant after inlining, so each
 * caller gets a loop without it. */
static inline __attribute__((always_inline)) void pair_bins_loop(const feat_pair_batch *b, int first, size_t j0,
                                                                 size_t count, int32_t *restrict unsure)
{
    const float px = b->p[0], py = b->p[1], pz = b->p[2];
    const float qx = b->n[0], qy = b->n[1], qz = b->n[2];
    const double split = b->split, top = b->split - 1, inv_2pi = 1.0f / (2.0f * (float)PAIR_PI);
    const float *restrict X
    = b->x + j0, *restrict Y = b->y + j0, *restrict Z = b->z + j0;
    const float *restrict NX = b->nx + j0, *restrict NY = b->ny + j0, *restrict NZ = b->nz + j0;
    int32_t *restrict theta_bin = b->theta + j0, *restrict alpha_bin = b->alpha + j0, *restrict phi_bin = b->phi + j0;
    for (size_t k = 0; k < count; k++) {
        float ox = X
        [k], oy = Y[k], oz = Z[k], mx = NX[k], my = NY[k], mz = NZ[k];
        /* n1, n2 and d = p2 - p1 of the reference's call */
        float n1x = first ? qx : mx, n1y = first ? qy : my, n1z = first ? qz : mz;
        float n2x = first ? mx : qx, n2y = first ? my : qy, n2z = first ? mz : qz;
        float dx = first ? ox - px : px - ox, dy = first ? oy - py : py - oy, dz = first ? oz - pz : pz - oz;
        float dist = sqrtf((dx * dx + dz * dz) + dy * dy);
        float safe = dist > 0.0f ? dist : 1.0f;
        float a1 = ((n1x * dx + n1z * dz) + n1y * dy) / safe;
        float a2 = ((n2x * dx + n2z * dz) + n2y * dy) / safe;
        float f1 = fabsf(a1), f2 = fabsf(a2);
        /* acosf(f1) > acosf(f2): an |n.d| rounded above 1 has acosf NaN,
         * which compares false, so it never swaps */
        int swap = (f1 < f2) & (f2 <= 1.0f);
        int close = (f1 != f2) & (fabsf(f1 - f2) < SWAP_MARGIN); /* & not &&: no branch */
        float ux = swap ? n2x : n1x, uy = swap ? n2y : n1y, uz = swap ? n2z : n1z;
        float tx = swap ? n1x : n2x, ty = swap ? n1y : n2y, tz = swap ? n1z : n2z;
        float ex = swap ? -dx : dx, ey = swap ? -dy : dy, ez = swap ? -dz : dz;
        float phi = swap ? -a2 : a1;
        float vx = ey * uz - ez * uy, vy = ez * ux - ex * uz, vz = ex * uy - ey * ux;
        float vn = sqrtf((vx * vx + vz * vz) + vy * vy);
        float vsafe = vn > 0.0f ? vn : 1.0f;
        vx /= vsafe;
        vy /= vsafe;
        vz /= vsafe;
        float wx = uy * vz - uz * vy, wy = uz * vx - ux * vz, wz = ux * vy - uy * vx;
        float alpha = (vx * tx + vz * tz) + vy * ty;
        float ys = (wx * tx + wz * tz) + wy * ty, xs = (ux * tx + uz * tz) + uy * ty;
        float ax = fabsf(xs), ay = fabsf(ys);
        float big = ax > ay ? ax : ay, small = ax > ay ? ay : ax;
        float r = atan_unit(small / (big > 0.0f ? big : 1.0f));
        r = ay > ax ? PAIR_HALF_PI_F - r : r;
        r = xs < 0.0f ? PAIR_PI_F - r : r;
        float theta = copysignf(r, ys);
        double t = split * (((double)theta + PAIR_PI) * inv_2pi);
        double frac = t - (double)(int32_t)t; /* t > -1: truncation is floor, or flags the lane */
        int edge = (frac < THETA_MARGIN) | (frac > 1.0 - THETA_MARGIN);
        theta_bin[k] = clamp_floor(t, top);
        alpha_bin[k] = clamp_floor(split * ((alpha + 1.0) * 0.5), top);
        phi_bin[k] = clamp_floor(split * ((phi + 1.0) * 0.5), top);
        unsure[k] = close | edge | (dist == 0.0f) | (vn == 0.0f) | (big == 0.0f);
    }
}

static void pair_bins_first(const feat_pair_batch *b, size_t j0, size_t count, int32_t *unsure)
{
    pair_bins_loop(b, 1, j0, count, unsure);
}

static void pair_bins_second(const feat_pair_batch *b, size_t j0, size_t count, int32_t *unsure)
{
    pair_bins_loop(b, 0, j0, count, unsure);
}

void ISA_FN(feat_pair_bins)(const feat_pair_batch *b)
{
    int32_t unsure[SUB_BATCH];
    for (size_t j0 = 0; j0 < b->m; j0 += SUB_BATCH) {
        size_t count = b->m - j0 < SUB_BATCH ? b->m - j0 : SUB_BATCH;
        if (b->fixed_first)
            pair_bins_first(b, j0, count, unsure);
        else
            pair_bins_second(b, j0, count, unsure);
        for (size_t k = 0; k < count; k++) {
            if (!unsure[k])
                continue;
            size_t j = j0 + k;
            float o[3] = {b->x[j], b->y[j], b->z[j]}, on[3] = {b->nx[j], b->ny[j], b->nz[j]};
            int32_t bins[3];
            if (b->fixed_first)
                feat_pair_bins_exact(b->p, b->n, o, on, b->split, bins);
            else
                feat_pair_bins_exact(o, on, b->p, b->n, b->split, bins);
            b->theta[j] = bins[0];
            b->alpha[j] = bins[1];
            b->phi[j] = bins[2];
        }
    }
}

/* The first 32 bins in whole vectors held in registers across the
 * neighbors, the 33rd alone. */
_Static_assert(PTREG_FPFH_BINS == 33, "feat_fpfh_sum's vectors cover 32 bins and one more");
void ISA_FN(feat_fpfh_sum)(feat_fpfh_gather *g)
{
    enum { VECTORS = 32 / VW };
    vf acc[VECTORS];
    for (int v = 0; v < VECTORS; v++)
        acc[v] = v_zero();
    float last = 0.0f;
    int nan = 0;
    for (size_t j = 0; j < g->count; j++) {
        const float *row = g->spfh + PTREG_FPFH_BINS * (size_t)g->index[j];
        nan |= isnan(row[0]); /* NaN rows are NaN in every bin */
        if (g->dist2[j] == 0.0f)
            continue;
        const float w = 1.0f / g->dist2[j];
        const vf wv = v_set1(w);
        for (int v = 0; v < VECTORS; v++)
            acc[v] = v_add(acc[v], v_mul(v_load(row + v * VW), wv));
        last += row[32] * w;
    }
    for (int v = 0; v < VECTORS; v++)
        v_store(g->hist + v * VW, acc[v]);
    g->hist[32] = last;
    g->any_nan = nan;
}
