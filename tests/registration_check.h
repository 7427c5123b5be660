/* What the registration tests share: a cloud of the shared data folder as
 * bare points, and a result's distance from a pose. */
#ifndef PTREG_TESTS_REGISTRATION_CHECK_H
#define PTREG_TESTS_REGISTRATION_CHECK_H

#include "check.h"
#include "ptreg/ptreg.h"

/* dir/name's points (its normals dropped), n set; NULL (and a failed
 * check) when it cannot be read. */
static inline float *read_points(const char *dir, const char *name, size_t *n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ptreg_cloud c;
    ptreg_error err;
    if (ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err) != PTREG_OK) {
        CHECK_MSG(0, "%s", err.message);
        return NULL;
    }
    free(c.normals);
    free(c.curvature);
    *n = c.n;
    return c.xyz;
}

static inline double rotation_error(const double A[16], const double B[16])
{
    double angle, trans;
    ptreg_transform_difference(A, B, &angle, &trans);
    return angle;
}

static inline double translation_error(const double A[16], const double B[16])
{
    double angle, trans;
    ptreg_transform_difference(A, B, &angle, &trans);
    return trans;
}

#endif
