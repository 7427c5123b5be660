/* Selecting points of a cloud by a mask, and the masks of random and
 * uniform downsampling (core.h; the outlier filters' masks are nn/'s). */
#include "ptreg/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/numeric.h"

static size_t count_kept(const unsigned char *keep, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        kept += keep[i] != 0;
    return kept;
}

/* The optional per-point arrays out needs, as in has them. */
static ptreg_status alloc_attributes(const ptreg_cloud *in, size_t kept, ptreg_cloud *out, ptreg_error *err)
{
    const size_t m = kept ? kept : 1;
    if (in->curvature && !(out->curvature = malloc(m * sizeof *out->curvature)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a cloud of %zu points", kept);
    if (in->intensity && !(out->intensity = malloc(m * sizeof *out->intensity)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a cloud of %zu points", kept);
    if (in->classification && !(out->classification = malloc(m * sizeof *out->classification)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a cloud of %zu points", kept);
    if (in->rgb && !(out->rgb = malloc(3 * m * sizeof *out->rgb)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a cloud of %zu points", kept);
    return PTREG_OK;
}

ptreg_status ptreg_cloud_select(const ptreg_cloud *in, const unsigned char *keep, ptreg_cloud *out, ptreg_error *err)
{
    const size_t kept = count_kept(keep, in->n);
    ptreg_status st = ptreg_cloud_alloc(out, kept, in->normals != NULL, err);
    if (!st && (st = alloc_attributes(in, kept, out, err)))
        ptreg_cloud_free(out);
    if (st)
        return st;
    memcpy(out->origin, in->origin, sizeof out->origin);
    out->dropped_nonfinite = in->dropped_nonfinite;
    size_t j = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (!keep[i])
            continue;
        memcpy(out->xyz + 3 * j, in->xyz + 3 * i, 3 * sizeof(float));
        if (in->normals)
            memcpy(out->normals + 3 * j, in->normals + 3 * i, 3 * sizeof(float));
        if (in->curvature)
            out->curvature[j] = in->curvature[i];
        if (in->intensity)
            out->intensity[j] = in->intensity[i];
        if (in->classification)
            out->classification[j] = in->classification[i];
        if (in->rgb)
            memcpy(out->rgb + 3 * j, in->rgb + 3 * i, 3);
        j++;
    }
    return PTREG_OK;
}

size_t ptreg_random_downsample_count(size_t n, double fraction)
{
    if (!(fraction > 0.0))
        return 0;
    if (fraction >= 1.0)
        return n;
    return (size_t)floor(fraction * (double)n);
}

/* A uniform draw in [0, bound): draws in the last, incomplete run of bound
 * values are drawn again, so no index is likelier than another. */
static uint64_t draw_below(ptreg_rng *rng, uint64_t bound)
{
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do
        r = ptreg_rng_next(rng);
    while (r >= limit);
    return r % bound;
}

ptreg_status ptreg_random_downsample(size_t n, size_t count, uint64_t seed, unsigned char *keep, ptreg_error *err)
{
    if (count > n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "random downsampling: %zu points asked of %zu", count, n);
    memset(keep, 0, n);
    if (count == n) {
        memset(keep, 1, n);
        return PTREG_OK;
    }
    /* the first count places of a Fisher-Yates shuffle of 0 .. n - 1 */
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "random downsampling: out of memory for %zu points", n);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; i < count; i++) {
        const size_t j = i + (size_t)draw_below(&rng, (uint64_t)(n - i));
        const size_t t = order[i];
        order[i] = order[j], order[j] = t;
        keep[order[i]] = 1;
    }
    free(order);
    return PTREG_OK;
}

ptreg_status ptreg_uniform_downsample(size_t n, size_t every, unsigned char *keep, ptreg_error *err)
{
    if (every < 1)
        return ptreg_error_set(err, PTREG_ERR_ARG, "uniform downsampling: every %zu-th point: at least 1 is needed",
                               every);
    for (size_t i = 0; i < n; i++)
        keep[i] = i % every == 0;
    return PTREG_OK;
}
