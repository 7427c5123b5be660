/* Summaries the library and the CLI each computed in several places: the
 * points' bounding box, the median of a list (core.h) and a run's latency
 * percentiles, from a list or a fixed histogram (core/numeric.h). */
#include "ptreg/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"

/* A comparison, not fmin: NaN fails it and is passed over, and on a tie
 * (-0 against +0) the bound held stays, whatever the C library's fmin
 * does with zeros (glibc's keeps its first argument too, which the
 * voxel grid's copy of this loop used). */
void ptreg_points_bounds(const float *xyz, size_t n, double lo[3], double hi[3])
{
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const double v = xyz[3 * i + k];
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ptreg_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Nearest rank of n > 0 sorted values. */
static double nearest_rank(const double *sorted, size_t n, double p)
{
    const size_t r = (size_t)ceil(p / 100.0 * (double)n);
    return sorted[r ? r - 1 : 0];
}

int ptreg_latency_percentiles(const double *ms, size_t n, double out[5])
{
    memset(out, 0, 5 * sizeof *out);
    if (n == 0)
        return 0;
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted)
        return -1;
    memcpy(sorted, ms, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, by_value);
    out[0] = nearest_rank(sorted, n, 50), out[1] = nearest_rank(sorted, n, 95), out[2] = nearest_rank(sorted, n, 99);
    out[3] = sorted[n - 1];
    for (size_t i = 0; i < n; i++)
        out[4] += ms[i] / (double)n;
    free(sorted);
    return 0;
}

/* Buckets: index 0 holds what is below 2^LATENCY_LOW_EXP ms (and NaN),
 * the last what is at or above 2^LATENCY_HIGH_EXP; between them, each
 * power of two is cut into LATENCY_SUB equal steps. */
enum { LATENCY_LOW_EXP = -10, LATENCY_HIGH_EXP = 20, LATENCY_SUB = 512 };
#define LATENCY_BUCKETS ((size_t)(LATENCY_HIGH_EXP - LATENCY_LOW_EXP) * LATENCY_SUB + 2)

int ptreg_latency_histogram_init(ptreg_latency_histogram *h)
{
    memset(h, 0, sizeof *h);
    h->count = calloc(LATENCY_BUCKETS, sizeof *h->count);
    return h->count ? 0 : -1;
}

void ptreg_latency_histogram_free(ptreg_latency_histogram *h)
{
    free(h->count);
    memset(h, 0, sizeof *h);
}

static size_t latency_bucket(double ms)
{
    if (!(ms >= ldexp(1.0, LATENCY_LOW_EXP)))
        return 0;
    if (ms >= ldexp(1.0, LATENCY_HIGH_EXP))
        return LATENCY_BUCKETS - 1;
    int e;
    const double m = frexp(ms, &e); /* ms = m 2^e, m in [0.5, 1) */
    const size_t step = (size_t)((m - 0.5) * 2.0 * LATENCY_SUB);
    return 1 + (size_t)(e - 1 - LATENCY_LOW_EXP) * LATENCY_SUB + step;
}

/* The bound above every value bucket b holds, which the max then caps
 * (for the last bucket, the max itself). */
static double latency_bucket_top(size_t b)
{
    if (b == 0)
        return ldexp(1.0, LATENCY_LOW_EXP);
    if (b == LATENCY_BUCKETS - 1)
        return INFINITY;
    const size_t octave = (b - 1) / LATENCY_SUB, step = (b - 1) % LATENCY_SUB;
    return ldexp(1.0 + (double)(step + 1) / LATENCY_SUB, (int)octave + LATENCY_LOW_EXP);
}

void ptreg_latency_histogram_add(ptreg_latency_histogram *h, double ms)
{
    h->count[latency_bucket(ms)]++;
    h->n++;
    h->sum += ms;
    h->max = h->n == 1 || ms > h->max ? ms : h->max;
}

static double histogram_rank(const ptreg_latency_histogram *h, double p)
{
    const uint64_t r = (uint64_t)ceil(p / 100.0 * (double)h->n);
    uint64_t seen = 0;
    size_t b = 0;
    while (b + 1 < LATENCY_BUCKETS && (seen += h->count[b]) < (r ? r : 1))
        b++;
    const double top = latency_bucket_top(b);
    return top < h->max ? top : h->max;
}

void ptreg_latency_histogram_percentiles(const ptreg_latency_histogram *h, double out[5])
{
    memset(out, 0, 5 * sizeof *out);
    if (h->n == 0)
        return;
    out[0] = histogram_rank(h, 50), out[1] = histogram_rank(h, 95), out[2] = histogram_rank(h, 99);
    out[3] = h->max;
    out[4] = h->sum / (double)h->n;
}
