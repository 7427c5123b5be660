#include "core/counts.h"

ptreg_status count_check_points(const char *what, size_t n, size_t most, const char *why, ptreg_error *err)
{
    if (n <= most)
        return PTREG_OK;
    return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %zu points: more than %zu (%s)", what, n, most, why);
}
