/* RANSAC's hypotheses scored on a device (CUDA or OpenCL): the matches'
 * points uploaded once, then per batch the hypotheses' transforms (drawn,
 * checked and fitted on the host, as the CPU path does) up, one launch
 * that counts each one's inliers (ransac.cl), the counts back. The counts
 * are the CPU's exactly (the same double arithmetic), so the same
 * hypothesis wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reg/global/ransac_device.h"

static const char *const ransac_files[] = {"device/reduce.cl", "reg/global/ransac.cl", NULL};
const kernel_program ransac_kernels = {"RANSAC", ransac_files};

#define RANSAC_WG 256

struct ransac_device {
    dev_handle *dev;
    dkernel *inliers;
    dbuf *p, *q, *transforms, *counts;
    size_t matches, batch;
};

void ransac_device_destroy(ransac_device *rd)
{
    if (!rd)
        return;
    dbuf_free(rd->p);
    dbuf_free(rd->q);
    dbuf_free(rd->transforms);
    dbuf_free(rd->counts);
    free(rd);
}

/* The counts must be the CPU's exactly (the winner follows them): double
 * precision, and no a*b + c fused where the kernel asks it not to be. */
static ptreg_status ransac_device_supports(const void *opt, const ptreg_device_info *device, ptreg_error *err)
{
    (void)opt;
    if (!device->fp64)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "RANSAC on %s: the inlier counts need double precision (the CPU's arithmetic), which "
                               "the device lacks",
                               device->name);
    if (device->fma_contracts == 1)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "RANSAC on %s: the device fuses a*b+c where asked not to, so its inlier counts could "
                               "differ from the CPU's",
                               device->name);
    return PTREG_OK;
}

const engine ransac_device_engine = {ENGINE_GPU_BACKENDS, ransac_device_supports};

void ransac_device_defines(char *defines, size_t size) { snprintf(defines, size, "-DWG=%d -DITEMS=1", RANSAC_WG); }

ptreg_status ransac_device_create(const ptreg_device *on, const float *p, const float *q, size_t matches, size_t batch,
                                  ransac_device **out, ptreg_error *err)
{
    ransac_device *rd = calloc(1, sizeof *rd);
    if (!rd)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "RANSAC: out of memory");
    rd->matches = matches, rd->batch = batch;
    if (matches > UINT32_MAX) {
        free(rd);
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "RANSAC on a device: at most 2^32 - 1 matches");
    }
    dprogram *prog;
    char defines[64];
    ransac_device_defines(defines, sizeof defines);
    ptreg_status st = dev_get(on, &rd->dev, err);
    st = st ? st : dev_program(rd->dev, &ransac_kernels, defines, &prog, err);
    /* the engine asked the list's description; the handle knows more: the
     * contraction probe's answer (made before its first program), and less
     * precision where asked (PTREG_DEVICE_NO_FP64, the parity suite's
     * single-precision run) */
    st = st ? st : ransac_device_supports(NULL, &rd->dev->info, err);
    st = st ? st : dev_kernel(prog, "ptreg_ransac_inliers", &rd->inliers, err);
    st = st ? st : dbuf_upload(rd->dev, p, 3 * matches * sizeof(float), &rd->p, err);
    st = st ? st : dbuf_upload(rd->dev, q, 3 * matches * sizeof(float), &rd->q, err);
    st = st ? st : dbuf_alloc(rd->dev, 12 * batch * sizeof(double), &rd->transforms, err);
    st = st ? st : dbuf_alloc(rd->dev, batch * sizeof(uint64_t), &rd->counts, err);
    if (st) {
        ransac_device_destroy(rd);
        return st;
    }
    *out = rd;
    return PTREG_OK;
}

ptreg_status ransac_device_count(ransac_device *rd, const double *transforms, size_t count, double max_d2,
                                 uint64_t *inliers, ptreg_error *err)
{
    if (count == 0)
        return PTREG_OK;
    if (count > rd->batch)
        return ptreg_error_set(err, PTREG_ERR_ARG, "RANSAC on a device: %zu hypotheses in a batch of %zu", count,
                               rd->batch);
    const size_t groups[3] = {count, 1, 1}, local[3] = {RANSAC_WG, 1, 1};
    karg args[] = {KARG_BUF(rd->p),          KARG_BUF(rd->q),  KARG_U32(rd->matches),
                   KARG_BUF(rd->transforms), KARG_F64(max_d2), KARG_BUF(rd->counts)};
    ptreg_status st = dbuf_write(rd->transforms, 0, transforms, 12 * count * sizeof(double), err);
    st = st ? st : dev_launch_groups(rd->inliers, 1, groups, local, sizeof args / sizeof *args, args, err);
    return st ? st : dbuf_read(rd->counts, 0, inliers, count * sizeof(uint64_t), err);
}
