/* Feature matching's nearest descriptors on a device (CUDA or OpenCL): both
 * clouds' descriptors up once, each source row's nearest target row and
 * each target row's nearest source row in one launch each (match.cl), the
 * CPU's distances and ties, so the matches are the CPU's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "reg/global/match_device.h"

static const char *const match_files[] = {"reg/global/match.cl", NULL};
const kernel_program match_kernels = {"feature matching", match_files};

#define MATCH_WG 256

void match_device_defines(int dim, char *defines, size_t size)
{
    snprintf(defines, size, "-DWG=%d -DDIM=%d", MATCH_WG, dim);
}

/* The distances must be the CPU's bits: no a*b + c fused where the kernel
 * asks it not to be. */
static ptreg_status match_device_supports(const void *opt, const ptreg_device_info *device, ptreg_error *err)
{
    (void)opt;
    if (device->fma_contracts == 1)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "feature matching on %s: the device fuses a*b+c where asked not to, so its distances "
                               "could differ from the CPU's",
                               device->name);
    return PTREG_OK;
}

const engine match_device_engine = {ENGINE_GPU_BACKENDS, match_device_supports};

/* The launches, on buffers made by the caller (seconds: the rows' second
 * least distances, or NULL). */
static ptreg_status launch_both(dprogram *prog, const dbuf *const up[4], uint32_t ns, uint32_t nt, dbuf *rows,
                                dbuf *seconds, dbuf *cols, ptreg_error *err)
{
    dkernel *k_rows, *k_cols;
    karg args[] = {KARG_BUF(up[0]), KARG_BUF(up[1]), KARG_U32(ns),   KARG_BUF(up[2]),
                   KARG_BUF(up[3]), KARG_U32(nt),    KARG_BUF(rows), KARG_BUF(seconds)};
    ptreg_status st = dev_kernel(prog, seconds ? "ptreg_match_rows_second" : "ptreg_match_rows", &k_rows, err);
    st = st ? st : dev_launch(k_rows, ns, MATCH_WG, sizeof args / sizeof *args - !seconds, args, err);
    if (st || !cols)
        return st;
    args[6] = KARG_BUF(cols);
    st = dev_kernel(prog, "ptreg_match_columns", &k_cols, err);
    return st ? st : dev_launch(k_cols, nt, MATCH_WG, sizeof args / sizeof *args - 1, args, err);
}

ptreg_status match_device_nearest(const ptreg_device *on, const float *source, size_t ns,
                                  const unsigned char *source_nan, const float *target, size_t nt,
                                  const unsigned char *target_nan, int dim, uint32_t *row_best, uint32_t *col_best,
                                  float *row_second, ptreg_error *err)
{
    if (!ns || !nt) { /* nothing to scan: nobody's nearest */
        for (size_t i = 0; i < ns; i++)
            row_best[i] = UINT32_MAX;
        for (size_t i = 0; row_second && i < ns; i++)
            row_second[i] = INFINITY;
        for (size_t j = 0; col_best && j < nt; j++)
            col_best[j] = UINT32_MAX;
        return PTREG_OK;
    }
    dev_handle *dev;
    dprogram *prog;
    char defines[64];
    match_device_defines(dim, defines, sizeof defines);
    ptreg_status st = dev_get(on, &dev, err);
    st = st ? st : dev_program(dev, &match_kernels, defines, &prog, err);
    /* the probe's answer is known once a program is built */
    st = st ? st : match_device_supports(NULL, &dev->info, err);
    if (st)
        return st;
    dbuf *up[4] = {NULL, NULL, NULL, NULL}, *rows = NULL, *seconds = NULL, *cols = NULL;
    st = dbuf_upload(dev, source, ns * (size_t)dim * sizeof(float), &up[0], err);
    st = st ? st : dbuf_upload(dev, source_nan, ns, &up[1], err);
    st = st ? st : dbuf_upload(dev, target, nt * (size_t)dim * sizeof(float), &up[2], err);
    st = st ? st : dbuf_upload(dev, target_nan, nt, &up[3], err);
    st = st ? st : dbuf_alloc(dev, ns * sizeof(uint32_t), &rows, err);
    if (!st && col_best)
        st = dbuf_alloc(dev, nt * sizeof(uint32_t), &cols, err);
    if (!st && row_second)
        st = dbuf_alloc(dev, ns * sizeof(float), &seconds, err);
    st = st ? st : launch_both(prog, (const dbuf *const *)up, (uint32_t)ns, (uint32_t)nt, rows, seconds, cols, err);
    st = st ? st : dbuf_read(rows, 0, row_best, ns * sizeof(uint32_t), err);
    if (!st && row_second)
        st = dbuf_read(seconds, 0, row_second, ns * sizeof(float), err);
    if (!st && col_best)
        st = dbuf_read(cols, 0, col_best, nt * sizeof(uint32_t), err);
    for (int k = 0; k < 4; k++)
        dbuf_free(up[k]);
    dbuf_free(rows);
    dbuf_free(seconds);
    dbuf_free(cols);
    return st;
}
