/* libFuzzer entry point for the volume readers (NRRD, NIfTI-1 plain and
 * gzip, raw by file name). Any broken contract aborts. See run.sh. */
#include "ptreg/io.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A read gives a volume whose every voxel can be touched, or an error naming
 * the input and a place, with the volume left empty. */
static void run(const uint8_t *data, size_t size, ptreg_volume_format format, const char *name)
{
    ptreg_volume v;
    ptreg_error err;
    ptreg_status s = ptreg_volume_read_memory(data, size, format, name, NULL, &v, &err);
    if (s == PTREG_OK) {
        size_t n = ptreg_volume_count(&v);
        if (!v.data || !n)
            abort();
        volatile float sink = 0;
        for (size_t i = 0; i < n; i += 1 + n / 4096)
            sink += ptreg_volume_voxel(&v, i);
        sink += ptreg_volume_voxel(&v, n - 1);
        (void)sink;
    } else {
        if (v.data || v.nx || !strstr(err.message, name))
            abort();
        if (s == PTREG_ERR_FORMAT && !strstr(err.message, ": line ") && !strstr(err.message, ": byte "))
            abort();
    }
    ptreg_volume_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run(data, size, PTREG_VOLUME_NRRD, "fuzz.nrrd");
    run(data, size, PTREG_VOLUME_NIFTI, "fuzz.nii");
    run(data, size, PTREG_VOLUME_AUTO, "fuzz_4x3x2_u16.raw");
    return 0;
}
