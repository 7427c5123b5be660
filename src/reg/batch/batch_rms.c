/* How far each registered pair of a batch is from its target: the RMS of
 * its moved source points' nearest target distances, by brute force (a
 * batch's pairs are small: hundreds of points a side). */
#include <math.h>

#include "ptreg/batch.h"

/* RMS distance from each moved source point of pair i to its nearest
 * target point. */
static double pair_rms(const ptreg_pair_set *p, size_t i, const double T[16])
{
    const size_t s0 = p->source_offset[i], s1 = p->source_offset[i + 1];
    const size_t t0 = p->target_offset ? p->target_offset[i] : 0;
    const size_t t1 = p->target_offset ? p->target_offset[i + 1] : p->target_points;
    double sum = 0.0;
    for (size_t s = s0; s < s1; s++) {
        const float *y = p->source + 3 * s;
        double m[3], best = INFINITY;
        for (int r = 0; r < 3; r++)
            m[r] = T[4 * r] * y[0] + T[4 * r + 1] * y[1] + T[4 * r + 2] * y[2] + T[4 * r + 3];
        for (size_t t = t0; t < t1; t++) {
            const float *x = p->target + 3 * t;
            const double d = (m[0] - x[0]) * (m[0] - x[0]) + (m[1] - x[1]) * (m[1] - x[1]) +
                             (m[2] - x[2]) * (m[2] - x[2]);
            best = fmin(best, d);
        }
        sum += best;
    }
    return sqrt(sum / (double)(s1 - s0));
}

ptreg_status ptreg_batch_rms(const ptreg_pair_set *pairs, const double *transform, double *rms, ptreg_error *err)
{
    if (!pairs || (pairs->count && (!pairs->source || !pairs->source_offset || !pairs->target || !transform || !rms)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "batch rms: no pairs, transforms or room for the results");
    const long n = (long)pairs->count;
#pragma omp parallel for schedule(dynamic, 64) num_threads(ptreg_get_num_threads())
    for (long i = 0; i < n; i++)
        rms[i] = pair_rms(pairs, (size_t)i, transform + 16 * i);
    return PTREG_OK;
}
