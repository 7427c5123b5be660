/* libFuzzer entry point for 4x4 transform files (ptreg_transform_read's
 * parser): a read gives 16 finite numbers with a bottom row from the file
 * or (0, 0, 0, 1), or an error naming the input and its line. See run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    double T[16];
    ptreg_error err;
    ptreg_status s = ptreg_transform_read_memory(data, size, "fuzz", T, &err);
    if (s == PTREG_OK) {
        for (int i = 0; i < 16; i++)
            if (!isfinite(T[i]))
                abort();
    } else if (s != PTREG_ERR_FORMAT || !strstr(err.message, "fuzz: line ")) {
        abort();
    }
    return 0;
}
