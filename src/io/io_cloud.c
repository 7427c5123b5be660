/* The first and last steps every reader shares: room for the points and the
 * clean-up that turns what was read into a usable cloud. */
#include "io/io_internal.h"

#include <stdlib.h>

ptreg_status io_cloud_reserve(const io_in *in, ptreg_cloud *cloud, size_t cap, int normals)
{
    ptreg_error quiet;
    if (ptreg_cloud_alloc(cloud, cap ? cap : 1, normals, &quiet) != PTREG_OK)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %zu points",
                               in->name, cap);
    cloud->n = 0;
    return PTREG_OK;
}

/* Readers reserve for the most points the input could hold; a cloud that
 * lives on (a model, a scan kept in memory) should not carry the slack. */
static void shrink(ptreg_cloud *cloud, size_t cap)
{
    if (cloud->n == 0 || cloud->n == cap)
        return;
    size_t bytes = cloud->n * 3 * sizeof(float);
    float *p = realloc(cloud->xyz, bytes);
    if (p)
        cloud->xyz = p;
    if (cloud->normals) {
        p = realloc(cloud->normals, bytes);
        if (p)
            cloud->normals = p;
    }
}

ptreg_status io_cloud_finish(const io_in *in, ptreg_cloud *cloud, size_t cap, int is_line,
                             size_t at)
{
    size_t read = cloud->n;
    ptreg_cloud_drop_nonfinite(cloud);
    if (cloud->n == 0) {
        const char *why = read ? "every point has a non-finite coordinate" : "the file has none";
        return is_line ? io_fail_line(in, PTREG_ERR_FORMAT, at, "no usable point: %s", why)
                       : io_fail_byte(in, PTREG_ERR_FORMAT, at, "no usable point: %s", why);
    }
    shrink(cloud, cap);
    return PTREG_OK;
}
