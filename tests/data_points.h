/* A cloud of the shared data folder as bare points, for the tests that
 * register real scans. */
#ifndef PTREG_TESTS_DATA_POINTS_H
#define PTREG_TESTS_DATA_POINTS_H

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

#endif
