/* libFuzzer entry point for the cloud readers. Built with FUZZ_FORMAT set
 * to a ptreg_format it drives that parser alone (FUZZ_MESHES: the OBJ, STL
 * and OFF readers); without it every input goes through each parser and
 * the sniffer. Any broken contract aborts, so the fuzzer keeps the input.
 * See run.sh. */
#include "ptreg/io.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A read either gives a cloud of finite points or an error with a message
 * that names the input and a place, and leaves the cloud empty. */
static void check(ptreg_status s, const ptreg_error *err, ptreg_cloud *c)
{
    if (s == PTREG_OK) {
        if (c->n == 0 || !c->xyz)
            abort();
        for (size_t i = 0; i < 3 * c->n; i++)
            if (!isfinite(c->xyz[i]))
                abort();
        if (c->normals) /* touch every normal: ASan checks the extent */
            for (volatile size_t i = 0; i < 3 * c->n; i++)
                (void)c->normals[i];
        if (c->rgb) /* and every colour */
            for (volatile size_t i = 0; i < 3 * c->n; i++)
                (void)c->rgb[i];
    } else {
        if (c->n || c->xyz || c->normals || c->rgb || c->intensity || c->dropped_nonfinite)
            abort();
        if (!strstr(err->message, "fuzz: ") || (!strstr(err->message, ": line ") && !strstr(err->message, ": byte ")))
            abort();
    }
    ptreg_cloud_free(c);
}

static void run(const uint8_t *data, size_t size, ptreg_format format)
{
    ptreg_cloud c;
    ptreg_error err;
    ptreg_status s = ptreg_cloud_read_memory(data, size, format, "fuzz", &c, &err);
    check(s, &err, &c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#if defined(FUZZ_MESHES)
    for (int f = PTREG_FORMAT_OBJ; f <= PTREG_FORMAT_OFF; f++)
        run(data, size, (ptreg_format)f);
#elif defined(FUZZ_FORMAT)
    run(data, size, FUZZ_FORMAT);
#else
    for (int f = PTREG_FORMAT_AUTO; f <= PTREG_FORMAT_KITTI; f++)
        run(data, size, (ptreg_format)f);
#endif
    return 0;
}
