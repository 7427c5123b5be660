/* LAS writer: being written (issue 30). */
#include "io/io_internal.h"

ptreg_status io_write_las(FILE *f, const ptreg_cloud *cloud, const char *path, ptreg_error *err)
{
    (void)f;
    (void)cloud;
    return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: LAS is not written yet", path);
}
