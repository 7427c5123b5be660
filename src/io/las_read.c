/* LAS reader: being written (issue 30). */
#include "io/io_internal.h"

ptreg_status io_read_las(const io_in *in, ptreg_cloud *cloud)
{
    (void)cloud;
    return ptreg_error_set(in->err, PTREG_ERR_UNSUPPORTED, "%s: LAS is not read yet", in->name);
}
