/* Result tables (ptreg/results.h): finding a field, and what several
 * tables share. */
#include <string.h>

#include "core/results_table.h"
#include "core/testing.h"

const ptreg_result_field *ptreg_result_find(const ptreg_result_table *table, const char *name)
{
    for (size_t k = 0; table && name && k < table->count; k++)
        if (!strcmp(table->fields[k].name, name))
            return &table->fields[k];
    return NULL;
}

const char *result_stop_reason_name(int value) { return ptreg_stop_reason_name((ptreg_stop_reason)value); }

size_t result_iterations_plus_one(const void *result, size_t offset)
{
    int iterations;
    memcpy(&iterations, (const char *)result + offset, sizeof iterations);
    return iterations >= 0 ? (size_t)iterations + 1 : 0;
}
