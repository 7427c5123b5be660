/* What the feature commands' pages show (ptreg/report.h): a cloud coloured
 * by a value per point (curvature, a descriptor's distinctiveness), the
 * points without one in grey, and some of its normals as segments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/report.h"

/* The points of a page's cloud: n of them, x y z each. */
typedef struct cloud_view {
    const float *xyz;
    size_t n;
} cloud_view;

/* normals --html: segments along at most this many normals (more would
 * hide the surface), each this fraction of the cloud's bounding-box diagonal. */
#define NORMALS_SHOWN_MAX 20000
#define NORMAL_LENGTH_OF_DIAGONAL 0.02
/* Points without a descriptor, and the normals' segments: grey. */
#define COLOR_PLAIN 0x9c9c9cu

static double bounding_diagonal(const float *xyz, size_t n)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(xyz, n, lo, hi);
    double d2 = 0;
    for (int k = 0; n && k < 3; k++)
        d2 += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    return sqrt(d2);
}

/* Segments from every stride-th point with a normal along it; the count into *count. */
static float *normal_segments(const cloud_view *c, const float *normals, size_t *count)
{
    const size_t stride = (c->n + NORMALS_SHOWN_MAX - 1) / NORMALS_SHOWN_MAX;
    const double length = NORMAL_LENGTH_OF_DIAGONAL * bounding_diagonal(c->xyz, c->n);
    float *ends = malloc((c->n / (stride ? stride : 1) + 1) * 6 * sizeof *ends);
    size_t m = 0;
    for (size_t i = 0; ends && i < c->n; i += stride) {
        const float *p = c->xyz + 3 * i, *v = normals + 3 * i;
        if (!isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]))
            continue;
        for (int k = 0; k < 3; k++)
            ends[6 * m + k] = p[k], ends[6 * m + 3 + k] = (float)(p[k] + length * v[k]);
        m++;
    }
    *count = m;
    return ends;
}


/* Each row's Euclidean distance to the mean of the finite rows (NaN for
 * the others): a point far from the mean stands out among its cloud's. */
static float *distance_to_mean(const float *rows, size_t n, int bins)
{
    double *mean = calloc((size_t)bins, sizeof *mean);
    float *d = malloc((n ? n : 1) * sizeof *d);
    if (!mean || !d) {
        free(mean);
        free(d);
        return NULL;
    }
    size_t finite = 0;
    for (size_t i = 0; i < n; i++) {
        const float *row = rows + i * (size_t)bins;
        double sum = 0;
        for (int b = 0; b < bins; b++)
            sum += row[b];
        d[i] = isfinite(sum) ? 0.0f : NAN; /* one NaN bin makes the row's sum NaN */
        for (int b = 0; isfinite(sum) && b < bins; b++)
            mean[b] += row[b];
        finite += isfinite(sum) ? 1 : 0;
    }
    for (size_t i = 0; i < n; i++) {
        const float *row = rows + i * (size_t)bins;
        double d2 = 0;
        for (int b = 0; b < bins && isfinite(d[i]); b++)
            d2 += (row[b] - mean[b] / (double)finite) * (row[b] - mean[b] / (double)finite);
        d[i] = isfinite(d[i]) ? (float)sqrt(d2) : NAN;
    }
    free(mean);
    return d;
}

/* The points whose value is (finite) or is not (!finite) a number, with their values. */
static size_t split_points(const cloud_view *c, const float *values, int finite, float *xyz, float *kept)
{
    size_t m = 0;
    for (size_t i = 0; i < c->n; i++) {
        if ((isfinite(values[i]) != 0) != (finite != 0))
            continue;
        memcpy(xyz + 3 * m, c->xyz + 3 * i, 3 * sizeof *xyz);
        kept[m++] = values[i];
    }
    return m;
}

/* The cloud coloured by values (NaN: a point without one, which the
 * colour map cannot show): those with a value in layer "cloud", the others
 * in grey in layer `without`. */
static ptreg_status add_valued_cloud(ptreg_report *r, const cloud_view *c, const float *values, const char *values_name,
                                     const char *without, ptreg_error *err)
{
    float *xyz = malloc((c->n ? c->n : 1) * 3 * sizeof *xyz), *kept = malloc((c->n ? c->n : 1) * sizeof *kept);
    ptreg_status st = xyz && kept ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    size_t m = st ? 0 : split_points(c, values, 1, xyz, kept);
    st = st ? st : ptreg_report_add_cloud_values(r, "cloud", xyz, m, kept, values_name, err);
    m = st ? 0 : split_points(c, values, 0, xyz, kept);
    if (!st && m)
        st = ptreg_report_add_cloud(r, without, xyz, m, COLOR_PLAIN, err);
    free(xyz);
    free(kept);
    return st;
}

ptreg_status ptreg_report_add_normals(ptreg_report *report, const float *xyz, size_t n, const float *normals,
                                      const float *curvature, ptreg_error *err)
{
    const cloud_view c = {xyz, n};
    size_t m = 0;
    float *ends = normal_segments(&c, normals, &m);
    ptreg_status st = ends ? add_valued_cloud(report, &c, curvature, "curvature", "without a normal", err)
                           : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the normals' segments");
    st = st ? st : ptreg_report_add_lines(report, "normals", ends, m, COLOR_PLAIN, err);
    free(ends);
    return st;
}

ptreg_status ptreg_report_add_descriptors(ptreg_report *report, const float *xyz, size_t n, const float *rows, int bins,
                                          const char *values_name, ptreg_error *err)
{
    const cloud_view c = {xyz, n};
    float *d = distance_to_mean(rows, n, bins);
    ptreg_status st = d ? add_valued_cloud(report, &c, d, values_name, "without a descriptor", err)
                        : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the distances");
    free(d);
    return st;
}
