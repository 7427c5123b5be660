/* libFuzzer entry point for the LAS reader (src/io/las_read.c) and its
 * header summary. The input's length mod 3 picks the read options: none;
 * classes 2 and 6 with the attributes; a crop box around the seeds'
 * offset (500000, 4500000, 0) with the attributes. Any broken contract
 * aborts, so the fuzzer keeps the input. Seeds: tests/fuzz/seeds/las
 * (test_las --seeds). See run.sh. */
#include "ptreg/io.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../hooks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void options_for(size_t size, ptreg_read_options *opt)
{
    ptreg_read_options_default(opt);
    opt->format = PTREG_FORMAT_LAS;
    if (size % 3 == 1) {
        opt->attributes = 1;
        opt->classes = 1;
        if (ptreg_classes_parse("2,6", opt->keep_class) != 0)
            abort();
    } else if (size % 3 == 2) {
        opt->attributes = 1;
        opt->crop = 1;
        if (ptreg_crop_parse("499900,4499900,-100,500100,4500100,100", opt->crop_min, opt->crop_max) != 0)
            abort();
    }
}

/* A point read inside the crop box stays in it, up to float32's rounding
 * of its coordinate relative to the origin. */
static int inside(const ptreg_read_options *opt, const ptreg_cloud *c, size_t i)
{
    for (int k = 0; k < 3; k++) {
        const double v = c->xyz[3 * i + k], w = c->origin[k] + v, slack = 1e-6 + fabs(v) * 0x1p-23;
        if (!(w >= opt->crop_min[k] - slack && w <= opt->crop_max[k] + slack))
            return 0;
    }
    return 1;
}

static void check_success(const ptreg_read_options *opt, const ptreg_cloud *c)
{
    if (c->n == 0 || !c->xyz || c->normals || (opt->attributes != (c->intensity != NULL)) ||
        (c->intensity == NULL) != (c->classification == NULL))
        abort();
    for (size_t i = 0; i < c->n; i++) {
        for (int k = 0; k < 3; k++)
            if (!isfinite(c->xyz[3 * i + k]))
                abort();
        if (opt->classes && c->classification[i] != 2 && c->classification[i] != 6)
            abort();
        if (opt->crop && !inside(opt, c, i))
            abort();
        if (c->intensity) /* touch every value: ASan checks the extent */
            (void)*(volatile uint16_t *)&c->intensity[i];
    }
}

/* A failure names the input and a byte (an empty input: line 1) and
 * leaves the cloud empty. */
static void check_failure(const ptreg_error *err, const ptreg_cloud *c, size_t size)
{
    if (c->n || c->xyz || c->normals || c->intensity || c->classification || c->dropped_nonfinite)
        abort();
    if (strncmp(err->message, size ? "fuzz: byte " : "fuzz: line 1: ", size ? 11 : 14) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ptreg_read_options opt;
    options_for(size, &opt);
    ptreg_cloud c;
    ptreg_error err;
    memset(&err, 0, sizeof err);
    ptreg_status s = ptreg_cloud_read_memory_with(data, size, &opt, "fuzz", &c, &err);
    if (s == PTREG_OK)
        check_success(&opt, &c);
    else
        check_failure(&err, &c, size);
    ptreg_cloud_free(&c);
    if (size == 0)
        return 0;

    /* The header alone gives the read's verdict on the header: a header
     * that passes leaves the read nothing to fail on but its points. */
    char read_message[PTREG_ERROR_MESSAGE_MAX];
    memcpy(read_message, err.message, sizeof read_message);
    ptreg_las_header h;
    ptreg_status hs = ptreg_las_header_read_memory(data, size, "fuzz", &h, &err);
    if (hs == PTREG_OK && s != PTREG_OK && !strstr(read_message, "no usable point"))
        abort();
    if (hs != PTREG_OK && (s != hs || strcmp(read_message, err.message) != 0))
        abort();
    return 0;
}
