/* The pair set of batched EM-ICP: its checks, each pair's schedule and
 * reference points (both paths' first step). */
#include <math.h>

#include "core/options_table.h"
#include "ptreg/emicp.h"
#include "reg/batch/batch_pairs.h"
#include "core/numeric.h"

static int all_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return 0;
    return 1;
}

/* What is wrong with pair i: 0 nothing, 1 no points, 2 a point that is
 * not finite. A shared target is looked at with pair 0 only. */
static int pair_fault(const ptreg_pair_set *p, size_t i)
{
    if (p->source_offset[i + 1] <= p->source_offset[i] ||
        (p->target_offset && p->target_offset[i + 1] <= p->target_offset[i]) || !batch_target_points(p, i))
        return 1;
    if (!all_finite(batch_source_of(p, i), 3 * batch_source_points(p, i)) ||
        ((p->target_offset || i == 0) && !all_finite(batch_target_of(p, i), 3 * batch_target_points(p, i))))
        return 2;
    return 0;
}

ptreg_status batch_check_pairs(const ptreg_pair_set *p, const ptreg_batch_options *o, ptreg_error *err)
{
    if (p->count && (!p->source || !p->source_offset || !p->target))
        return ptreg_error_set(err, PTREG_ERR_ARG, "batch: no points or no offsets");
    const ptreg_status st = ptreg_options_check(ptreg_batch_option_table(), o, err);
    if (st)
        return st;
    /* on all threads (a million pairs are 100 M coordinates); the first
     * faulty pair is named, whatever the thread count */
    const long count = (long)p->count;
    size_t first = SIZE_MAX;
#pragma omp parallel for num_threads(ptreg_get_num_threads()) schedule(static, 4096) reduction(min : first)
    for (long i = 0; i < count; i++)
        if ((size_t)i < first && pair_fault(p, (size_t)i))
            first = (size_t)i;
    if (first != SIZE_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               pair_fault(p, first) == 1 ? "batch: pair %zu has no source or no target points"
                                                         : "batch: pair %zu has a point that is not finite",
                               first);
    return PTREG_OK;
}

ptreg_status ptreg_batch_schedule(const float *target, size_t m, const ptreg_batch_options *o, double *sigma2_init,
                                  double *sigma2_final, double *d02, double *radius, ptreg_error *err)
{
    double c[3];
    ptreg_points_centroid(target, m, c);
    const double r = ptreg_points_rms_radius(target, m, c);
    if (radius)
        *radius = r;
    *sigma2_init = o->sigma2_init > 0 ? o->sigma2_init : PTREG_EMICP_SIGMA2_INIT_REL * r * r;
    *sigma2_final = o->sigma2_final > 0 ? o->sigma2_final : PTREG_EMICP_SIGMA2_FINAL_REL * r * r;
    *d02 = o->d02 >= 0 ? o->d02 : *sigma2_init;
    if (!(*sigma2_init > 0 && *sigma2_final > 0 && isfinite(*sigma2_init) && r > 0))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "batch: the target has no extent (all points equal): give "
                               "sigma2 values");
    return PTREG_OK;
}

int batch_setup_pair(const ptreg_pair_set *p, size_t i, const ptreg_batch_options *o, batch_setup *s)
{
    ptreg_points_centroid(batch_source_of(p, i), batch_source_points(p, i), s->source_c);
    ptreg_points_centroid(batch_target_of(p, i), batch_target_points(p, i), s->target_c);
    return !ptreg_batch_schedule(batch_target_of(p, i), batch_target_points(p, i), o, &s->sigma2_init, &s->sigma2_final,
                                 &s->d02, &s->radius, NULL);
}

ptreg_status batch_no_extent(size_t pair, ptreg_error *err)
{
    return ptreg_error_set(err, PTREG_ERR_ARG,
                           "batch: pair %zu: its target has no extent (all points equal): give sigma2 values", pair);
}

size_t batch_largest_pair(const ptreg_pair_set *p)
{
    size_t largest = p->target_offset ? 0 : p->target_points;
    for (size_t i = 0; i < p->count; i++) {
        largest = batch_source_points(p, i) > largest ? batch_source_points(p, i) : largest;
        largest = batch_target_points(p, i) > largest ? batch_target_points(p, i) : largest;
    }
    return largest;
}
