#include "ptreg/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/numeric.h"

void ptreg_cloud_init(ptreg_cloud *cloud) { memset(cloud, 0, sizeof *cloud); }

ptreg_status ptreg_cloud_alloc(ptreg_cloud *cloud, size_t n, int with_normals, ptreg_error *err)
{
    ptreg_cloud_init(cloud);
    if (n > SIZE_MAX / (3 * sizeof(float)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "cloud of %zu points is too large", n);
    size_t bytes = (n ? n : 1) * 3 * sizeof(float);
    cloud->xyz = malloc(bytes);
    if (with_normals)
        cloud->normals = malloc(bytes);
    if (!cloud->xyz || (with_normals && !cloud->normals)) {
        ptreg_cloud_free(cloud);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a cloud of %zu points", n);
    }
    cloud->n = n;
    return PTREG_OK;
}

void ptreg_cloud_free(ptreg_cloud *cloud)
{
    if (!cloud)
        return;
    free(cloud->xyz);
    free(cloud->normals);
    free(cloud->curvature);
    free(cloud->intensity);
    free(cloud->classification);
    free(cloud->rgb);
    ptreg_cloud_init(cloud);
}

void ptreg_cloud_drop_nonfinite(ptreg_cloud *cloud)
{
    size_t kept = 0;
    for (size_t i = 0; i < cloud->n; i++) {
        const float *p = cloud->xyz + 3 * i;
        if (!(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2])))
            continue;
        if (kept != i) {
            memcpy(cloud->xyz + 3 * kept, p, 3 * sizeof(float));
            if (cloud->normals)
                memcpy(cloud->normals + 3 * kept, cloud->normals + 3 * i, 3 * sizeof(float));
            if (cloud->curvature)
                cloud->curvature[kept] = cloud->curvature[i];
            if (cloud->intensity)
                cloud->intensity[kept] = cloud->intensity[i];
            if (cloud->classification)
                cloud->classification[kept] = cloud->classification[i];
            if (cloud->rgb)
                memcpy(cloud->rgb + 3 * kept, cloud->rgb + 3 * i, 3);
        }
        kept++;
    }
    cloud->dropped_nonfinite += cloud->n - kept;
    cloud->n = kept;
}

ptreg_status ptreg_cloud_set_origin(ptreg_cloud *cloud, const double origin[3], ptreg_error *err)
{
    const double shift[3] = {cloud->origin[0] - origin[0], cloud->origin[1] - origin[1], cloud->origin[2] - origin[2]};
    if (shift[0] == 0.0 && shift[1] == 0.0 && shift[2] == 0.0)
        return PTREG_OK;
    for (size_t i = 0; i < 3 * cloud->n; i++)
        if (isfinite(cloud->xyz[i]) && !isfinite(ptreg_double_to_float(shift[i % 3] + cloud->xyz[i])))
            return ptreg_error_set(err, PTREG_ERR_ARG,
                                   "point %zu is beyond float range from the origin %.17g %.17g %.17g", i / 3,
                                   origin[0], origin[1], origin[2]);
    for (size_t i = 0; i < 3 * cloud->n; i++)
        cloud->xyz[i] = (float)(shift[i % 3] + cloud->xyz[i]);
    memcpy(cloud->origin, origin, sizeof cloud->origin);
    return PTREG_OK;
}

void ptreg_points_centroid(const float *xyz, size_t n, double c[3])
{
    double s[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            s[k] += xyz[3 * i + k];
    for (int k = 0; k < 3; k++)
        c[k] = s[k] / (double)n;
}

double ptreg_points_rms_radius(const float *xyz, size_t n, const double c[3])
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const double d = xyz[3 * i + k] - c[k];
            s += d * d;
        }
    return sqrt(s / (double)n);
}

/* Whether every point is the first one. */
static int all_one_point(const float *p, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (p[3 * i] != p[0] || p[3 * i + 1] != p[1] || p[3 * i + 2] != p[2])
            return 0;
    return 1;
}

ptreg_status ptreg_check_shape(const char *what, const float *xyz, size_t n, ptreg_error *err)
{
    if (n < 3)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %zu point%s: at least 3 are needed", what, n,
                               n == 1 ? "" : "s");
    if (all_one_point(xyz, n))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: all %zu points are the same point", what, n);
    return PTREG_OK;
}
