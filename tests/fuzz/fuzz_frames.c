/* libFuzzer entry point for track's frame stream (ptreg_frame_stream_next,
 * docs/FORMATS.md "Frame streams"): every frame read holds finite points
 * no more than its bytes allow, the offset counts the bytes read, and the
 * stream ends cleanly or with a FORMAT error naming its frame and byte.
 * See run.sh. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0; /* fmemopen takes no empty buffer; an empty stream is test_io's */
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
        return 0;
    ptreg_frame_stream s = {f, 0, 0};
    ptreg_status st = PTREG_OK;
    for (int end = 0; !st && !end;) {
        ptreg_cloud c;
        double t;
        ptreg_error err;
        const uint64_t before = s.offset;
        st = ptreg_frame_stream_next(&s, &c, &t, &end, &err);
        if (st && (st != PTREG_ERR_FORMAT || strncmp(err.message, "frame ", 6) || c.n || c.xyz))
            abort();
        if (!st && !end && (20 + 12 * (uint64_t)(c.n + c.dropped_nonfinite) != s.offset - before))
            abort();
        for (size_t i = 0; !st && i < 3 * c.n; i++)
            if (!isfinite(c.xyz[i]))
                abort();
        ptreg_cloud_free(&c);
    }
    if (s.offset > size)
        abort();
    fclose(f);
    return 0;
}
