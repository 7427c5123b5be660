/* libFuzzer entry point for the readers of ptreg batch's inputs: .pos and
 * .epos reconstructions, .rrng/.rng range files and pairs files. Any
 * broken contract aborts. See run.sh. */
#include "ptreg/apt.h"
#include "ptreg/io.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failure names the input and, for a format error, the place. */
static void check_failure(ptreg_status s, const ptreg_error *err)
{
    if (!strstr(err->message, "fuzz"))
        abort();
    if (s == PTREG_ERR_FORMAT && !strstr(err->message, ": byte ") && !strstr(err->message, ": line ") &&
        !strstr(err->message, "no [Ranges]"))
        abort();
}

static void read_apt(const uint8_t *data, size_t size, ptreg_apt_format format, size_t record)
{
    ptreg_apt a;
    ptreg_error err;
    ptreg_status s = ptreg_apt_read_memory(data, size, format, "fuzz", &a, &err);
    if (s == PTREG_OK) {
        if (a.n != size / record || size % record || !a.xyz || !a.mq)
            abort();
        volatile float sink = a.xyz[3 * a.n - 1] + a.mq[a.n - 1]; /* ASan checks the extents */
        (void)sink;
    } else {
        check_failure(s, &err);
        if (a.n || a.xyz || a.mq)
            abort();
    }
    ptreg_apt_free(&a);
}

static void read_ranges(const uint8_t *data, size_t size)
{
    ptreg_ranges r;
    ptreg_error err;
    ptreg_status s = ptreg_ranges_read_memory(data, size, "fuzz", &r, &err);
    if (s == PTREG_OK) {
        for (size_t i = 0; i < r.n; i++)
            if (!(r.range[i].lo <= r.range[i].hi) || !r.range[i].ion[0] || strlen(r.range[i].ion) >= PTREG_ION_NAME_MAX)
                abort();
    } else {
        check_failure(s, &err);
        if (r.n || r.range)
            abort();
    }
    ptreg_ranges_free(&r);
}

static void read_pairs(const uint8_t *data, size_t size)
{
    ptreg_pairs_file pf;
    ptreg_error err;
    ptreg_status s = ptreg_pairs_read_memory(data, size, "fuzz", &pf, &err);
    if (s == PTREG_OK) {
        if (!pf.count || (pf.targets != 1 && pf.targets != pf.count))
            abort();
        for (size_t i = 0; i < pf.count; i++)
            if (pf.source_offset[i] >= pf.source_offset[i + 1])
                abort();
        for (size_t i = 0; i < 3 * pf.source_offset[pf.count]; i++)
            if (!isfinite(pf.source[i]))
                abort();
        for (size_t i = 0; i < 3 * pf.target_offset[pf.targets]; i++)
            if (!isfinite(pf.target[i]))
                abort();
    } else {
        check_failure(s, &err);
        if (pf.count || pf.source || pf.source_offset || pf.target || pf.target_offset)
            abort();
    }
    ptreg_pairs_file_free(&pf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_apt(data, size, PTREG_APT_POS, 16);
    read_apt(data, size, PTREG_APT_EPOS, 44);
    read_ranges(data, size);
    read_pairs(data, size);
    return 0;
}
