/* Summaries the library and the CLI each computed in several places: the
 * points' bounding box, the median of a list (core.h) and a run's latency
 * percentiles (core/numeric.h). */
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
