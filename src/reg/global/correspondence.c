/* A given pose judged (Open3D's evaluate_registration) and the pose of
 * given correspondences (weighted Horn, optionally after RANSAC): the tools
 * Open3D's and PCL's users reach for beside registration (global.h). */
#include "ptreg/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/nn.h"
#include "core/numeric.h"

static void moved(const double T[16], const float *p, double out[3])
{
    for (int r = 0; r < 3; r++)
        out[r] = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
}

static double distance2(const double a[3], const float *b)
{
    const double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return (dx * dx + dy * dy) + dz * dz;
}

static int finite_transform(const double T[16])
{
    for (int i = 0; i < 16; i++)
        if (!isfinite(T[i]))
            return 0;
    return 1;
}

/* Each source point's squared distance to its nearest target point under
 * T, or -1 when that is not within max_dist; the pair's target in pair. */
static void nearest_within(const ptreg_kdtree *tree, const float *source, size_t ns, const float *target,
                           const double T[16], double max_d2, double *d2, uint32_t *pair)
{
#pragma omp parallel for schedule(dynamic, 512) num_threads(ptreg_get_num_threads())
    for (size_t i = 0; i < ns; i++) {
        double p[3];
        moved(T, source + 3 * i, p);
        const float q[3] = {(float)p[0], (float)p[1], (float)p[2]};
        uint32_t j = 0;
        float fd2;
        d2[i] = -1.0;
        if (ptreg_kdtree_knn(tree, q, 1, &j, &fd2) != 1)
            continue;
        const double d = distance2(p, target + 3 * (size_t)j);
        if (d < max_d2)
            d2[i] = d, pair[i] = j;
    }
}

static ptreg_status gather_pairs(const double *d2, const uint32_t *pair, size_t ns, size_t inliers, ptreg_matches *out,
                                 ptreg_error *err)
{
    const size_t m = inliers ? inliers : 1;
    out->source = malloc(m * sizeof *out->source);
    out->target = malloc(m * sizeof *out->target);
    if (!out->source || !out->target) {
        ptreg_matches_free(out);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "evaluate: out of memory for %zu correspondences", inliers);
    }
    for (size_t i = 0; i < ns; i++)
        if (d2[i] >= 0.0) {
            out->source[out->count] = (uint32_t)i;
            out->target[out->count++] = pair[i];
        }
    return PTREG_OK;
}

ptreg_status ptreg_evaluate_registration(const float *source, size_t ns, const float *target, size_t nt,
                                         const double T[16], double max_dist, ptreg_evaluation *r,
                                         ptreg_matches *correspondences, ptreg_error *err)
{
    memset(r, 0, sizeof *r);
    if (correspondences)
        memset(correspondences, 0, sizeof *correspondences);
    if (!(max_dist > 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "evaluate: max_dist %g: a distance > 0 is needed", max_dist);
    if (!finite_transform(T))
        return ptreg_error_set(err, PTREG_ERR_ARG, "evaluate: the transform has an entry that is not finite");
    if (nt == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "evaluate: the target has no points");
    ptreg_kdtree *tree = NULL;
    ptreg_status st = ptreg_kdtree_create(target, nt, NULL, &tree, err);
    if (st)
        return st;
    double *d2 = malloc((ns ? ns : 1) * sizeof *d2);
    uint32_t *pair = malloc((ns ? ns : 1) * sizeof *pair);
    if (!d2 || !pair)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "evaluate: out of memory for %zu points", ns);
    if (!st) {
        nearest_within(tree, source, ns, target, T, max_dist * max_dist, d2, pair);
        double sum = 0.0;
        for (size_t i = 0; i < ns; i++)
            if (d2[i] >= 0.0)
                sum += d2[i], r->inliers++;
        if (r->inliers) {
            r->fitness = (double)r->inliers / (double)ns;
            r->inlier_rmse = sqrt(sum / (double)r->inliers);
        }
        if (correspondences)
            st = gather_pairs(d2, pair, ns, r->inliers, correspondences, err);
    }
    free(d2);
    free(pair);
    ptreg_kdtree_destroy(tree);
    return st;
}

static ptreg_status check_pairs(size_t ns, size_t nt, const ptreg_matches *m, const double *weights, ptreg_error *err)
{
    if (m->count < 3)
        return ptreg_error_set(err, PTREG_ERR_ARG, "correspondences: %zu pairs; at least 3 are needed", m->count);
    double total = 0.0;
    for (size_t k = 0; k < m->count; k++) {
        if (m->source[k] >= ns || m->target[k] >= nt)
            return ptreg_error_set(err, PTREG_ERR_ARG,
                                   "correspondences: pair %zu (%u, %u) names a point beyond the clouds' %zu and %zu", k,
                                   m->source[k], m->target[k], ns, nt);
        if (weights && !(weights[k] >= 0.0 && isfinite(weights[k])))
            return ptreg_error_set(err, PTREG_ERR_ARG, "correspondences: pair %zu's weight %g is not a number >= 0", k,
                                   weights[k]);
        total += weights ? weights[k] : 1.0;
    }
    if (!(total > 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "correspondences: every weight is 0");
    return PTREG_OK;
}

/* Horn's transform of the pairs whose use[k] is set (all when use is NULL),
 * about the first pair's points so that far clouds keep their digits. */
static ptreg_status weighted_fit(const float *source, const float *target, const ptreg_matches *m,
                                 const double *weights, const unsigned char *use, double T[16], ptreg_error *err)
{
    const float *p0 = source + 3 * (size_t)m->source[0], *q0 = target + 3 * (size_t)m->target[0];
    const double ref_p[3] = {p0[0], p0[1], p0[2]}, ref_q[3] = {q0[0], q0[1], q0[2]};
    ptreg_moments mom;
    ptreg_moments_init(&mom, ref_p, ref_q);
    for (size_t k = 0; k < m->count; k++) {
        if (use && !use[k])
            continue;
        const float *a = source + 3 * (size_t)m->source[k], *b = target + 3 * (size_t)m->target[k];
        const double p[3] = {a[0], a[1], a[2]}, q[3] = {b[0], b[1], b[2]};
        ptreg_moments_add(&mom, p, q, weights ? weights[k] : 1.0);
    }
    int degenerate = 0;
    ptreg_status st = ptreg_horn_solve(&mom, T, &degenerate, err);
    if (!st && degenerate)
        st = ptreg_error_set(err, PTREG_ERR_RUNTIME,
                             "correspondences: the pairs do not fix a rotation (their points are collinear or one "
                             "point)");
    return st;
}

/* RANSAC's inliers under its transform, then the weighted fit on them. */
static ptreg_status refit_inliers(const float *source, const float *target, const ptreg_matches *m,
                                  const double *weights, double max_dist, double T[16], ptreg_error *err)
{
    unsigned char *use = malloc(m->count);
    if (!use)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "correspondences: out of memory for %zu pairs", m->count);
    for (size_t k = 0; k < m->count; k++) {
        double p[3];
        moved(T, source + 3 * (size_t)m->source[k], p);
        use[k] = distance2(p, target + 3 * (size_t)m->target[k]) <= max_dist * max_dist;
    }
    const ptreg_status st = weighted_fit(source, target, m, weights, use, T, err);
    free(use);
    return st;
}

ptreg_status ptreg_register_correspondences(const float *source, size_t ns, const float *target, size_t nt,
                                            const ptreg_matches *m, const double *weights,
                                            const ptreg_ransac_options *ransac, ptreg_ransac_result *r,
                                            ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(r, 0, sizeof *r);
    ptreg_transform_identity(r->transformation);
    ptreg_status st = check_pairs(ns, nt, m, weights, err);
    if (st)
        return st;
    if (!ransac) {
        if (!(st = weighted_fit(source, target, m, weights, NULL, r->transformation, err)))
            r->inliers = m->count;
    } else {
        st = ptreg_ransac(source, NULL, ns, target, NULL, nt, m, ransac, r, err);
        if (!st && r->inliers < 3)
            st = ptreg_error_set(err, PTREG_ERR_RUNTIME,
                                 "correspondences: RANSAC found no transform that brings 3 pairs within %g",
                                 ransac->max_dist);
        else if (!st && weights)
            st = refit_inliers(source, target, m, weights, ransac->max_dist, r->transformation, err);
    }
    r->time_ms = ptreg_time_ms() - t0;
    return st;
}

double ptreg_correspondences_rmse(const float *source, const float *target, const ptreg_matches *m, const double T[16],
                                  double within, size_t *used)
{
    double sum = 0.0;
    *used = 0;
    for (size_t k = 0; k < m->count; k++) {
        const float *p = source + 3 * (size_t)m->source[k], *q = target + 3 * (size_t)m->target[k];
        double d2 = 0.0;
        for (int r = 0; r < 3; r++) {
            const double x = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3] - q[r];
            d2 += x * x;
        }
        if (within > 0.0 && !(d2 <= within * within))
            continue;
        sum += d2, ++*used;
    }
    return *used ? sqrt(sum / (double)*used) : 0.0;
}
