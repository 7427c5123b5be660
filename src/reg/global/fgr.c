/* Fast Global Registration (global.h, ptreg_fgr): the tuple test, then
 * Gauss-Newton on the Geman-McClure cost with graduated non-convexity. */
#include "ptreg/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/global/global_impl.h"
#include "reg/icp/icp_impl.h"
#include "core/numeric.h"
#include "reg/testing.h"

/* Open3D's tuple test: the kept matches (three per passing triple, in the
 * order drawn) into keep; returns the triples. */
static size_t tuple_test(const float *src, const float *tgt, const ptreg_matches *m, const ptreg_fgr_options *opt,
                         uint32_t *keep)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, opt->seed);
    const double s = opt->tuple_scale;
    size_t tuples = 0;
    const uint64_t trials = 100 * (uint64_t)m->count;
    for (uint64_t t = 0; t < trials && tuples < (size_t)opt->max_tuples; t++) {
        uint32_t pick[3];
        double ls[3], lt[3];
        for (int a = 0; a < 3; a++)
            pick[a] = (uint32_t)(ptreg_rng_next(&rng) % m->count);
        for (int a = 0; a < 3; a++) {
            double p0[3], p1[3], q0[3], q1[3];
            point_of(src, m->source[pick[a]], p0), point_of(src, m->source[pick[(a + 1) % 3]], p1);
            point_of(tgt, m->target[pick[a]], q0), point_of(tgt, m->target[pick[(a + 1) % 3]], q1);
            ls[a] = sqrt(dist2(p0, p1)), lt[a] = sqrt(dist2(q0, q1));
        }
        int pass = 1;
        for (int a = 0; a < 3; a++)
            pass &= ls[a] * s < lt[a] && lt[a] < ls[a] / s;
        if (!pass)
            continue;
        for (int a = 0; a < 3; a++)
            keep[3 * tuples + (size_t)a] = pick[a];
        tuples++;
    }
    return tuples;
}

/* A cloud's mean and its largest distance from it. */
static double mean_and_radius(const float *xyz, size_t n, double mean[3])
{
    ptreg_points_centroid(xyz, n, mean);
    double r2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
            d2 += (xyz[3 * i + k] - mean[k]) * (xyz[3 * i + k] - mean[k]);
        r2 = fmax(r2, d2);
    }
    return sqrt(r2);
}

/* Gauss-Newton on the kept pairs (in the unit ball): the Geman-McClure
 * weights (mu / (mu + r^2))^2 are ICP's GM kernel with k = mu times mu, a
 * factor the step does not see; so each step is ICP's point-to-point
 * Gauss-Newton step with that kernel. */
static ptreg_status fgr_optimise(const float *p, const float *q, size_t n, const ptreg_fgr_options *opt, double T[16],
                                 ptreg_error *err)
{
    float *moved = malloc(3 * (n ? n : 1) * sizeof *moved);
    unsigned char *use = malloc(n ? n : 1);
    if (!moved || !use) {
        free(moved), free(use);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "FGR: out of memory");
    }
    memset(use, 1, n);
    ptreg_icp_options io;
    ptreg_icp_options_default(&io);
    io.kernel = PTREG_KERNEL_GM;
    const double origin[3] = {0, 0, 0};
    double mu = 1.0;
    ptreg_transform_identity(T);
    for (int it = 0; it < opt->iterations; it++) {
        ptreg_transform_points(T, p, moved, n);
        io.kernel_scale = mu;
        const icp_gn_pairs pairs = {moved, q, NULL, NULL, use, n};
        icp_normal_eq eq;
        double r2, dT[16];
        size_t used;
        icp_gn_block(&io, origin, &pairs, &eq, &r2, &used);
        if (!icp_gn_step(&eq, origin, 0, 0.0, dT))
            break;
        ptreg_transform_mul(dT, T, T);
        if (it % 4 == 0 && mu > opt->max_dist)
            mu /= opt->division_factor;
    }
    free(moved), free(use);
    return PTREG_OK;
}

ptreg_status ptreg_fgr(const float *source, size_t ns, const float *target, size_t nt, const ptreg_matches *m,
                       const ptreg_fgr_options *opt, ptreg_fgr_result *r, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    const ptreg_status bad = ptreg_options_check(ptreg_fgr_option_table(), opt, err);
    if (bad)
        return bad;
    if (!ns || !nt || m->count == 0) {
        r->time_ms = ptreg_time_ms() - t0;
        return PTREG_OK;
    }
    double ms[3], mt[3];
    const double radius = fmax(mean_and_radius(source, ns, ms), mean_and_radius(target, nt, mt));
    const double scale = radius > 0.0 ? radius : 1.0;
    uint32_t *keep = malloc(3 * (size_t)opt->max_tuples * sizeof *keep);
    float *p = malloc(9 * (size_t)opt->max_tuples * sizeof *p), *q = malloc(9 * (size_t)opt->max_tuples * sizeof *q);
    ptreg_status st = keep && p && q ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "FGR: out of memory");
    if (!st) {
        r->tuples = tuple_test(source, target, m, opt, keep);
        const size_t n = 3 * r->tuples;
        for (size_t k = 0; k < n; k++)
            for (int a = 0; a < 3; a++) {
                p[3 * k + a] = (float)(((double)source[3 * (size_t)m->source[keep[k]] + a] - ms[a]) / scale);
                q[3 * k + a] = (float)(((double)target[3 * (size_t)m->target[keep[k]] + a] - mt[a]) / scale);
            }
        double T[16];
        if (n >= 10 && !(st = fgr_optimise(p, q, n, opt, T, err))) {
            /* back from the unit ball: x -> R (x - mean_s) + scale t + mean_t */
            for (int i = 0; i < 3; i++) {
                double rm = 0.0;
                for (int j = 0; j < 3; j++) {
                    r->transformation[4 * i + j] = T[4 * i + j];
                    rm += T[4 * i + j] * ms[j];
                }
                r->transformation[4 * i + 3] = scale * T[4 * i + 3] + mt[i] - rm;
            }
        }
    }
    free(keep), free(p), free(q);
    r->time_ms = ptreg_time_ms() - t0;
    return st;
}
