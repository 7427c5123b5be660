/* Two summaries the library and the CLI each computed in several places:
 * the points' bounding box and the median of a list (core.h). */
#include "ptreg/core.h"

#include <stdlib.h>

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
