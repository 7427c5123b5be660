/* The pair engine on a GPU device (pair_device.h; the kernels: pair.cl). */
#include "pair/pair_device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair/pair_kernels.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"

#define PAIR_SUMS 5 /* pair.cl's: e, e^2, e b */

static int prec_bits(ptreg_precision precision)
{
    return precision == PTREG_PRECISION_FP64 ? 64 : precision == PTREG_PRECISION_FP16 ? 16 : 32;
}

ptreg_status pair_device_exp(const dev_handle *dev, int *native, ptreg_error *err)
{
    const char *env = getenv("PTREG_PAIR_EXP");
    if (env && *env && strcmp(env, "native") && strcmp(env, "engine"))
        return ptreg_error_set(err, PTREG_ERR_ARG, "PTREG_PAIR_EXP='%.32s' is not engine or native", env);
    *native = env && *env ? !strcmp(env, "native") : dev->info.device.backend == PTREG_BACKEND_CUDA;
    return PTREG_OK;
}

void pair_device_config_of(const ptreg_pair_gpu *g, pair_device_config *c)
{
    c->wg = g && g->wg ? (unsigned)g->wg : PTREG_PAIR_DEVICE_WG;
    c->wg_asked = g && g->wg;
    c->native_exp = g ? g->exp : -1;
    c->groups_per_unit = g && g->groups ? (unsigned)g->groups : PTREG_PAIR_DEVICE_GROUPS;
}

ptreg_status pair_device_supports(const pair_device_config *c, const char *fp64_for, const ptreg_device_info *device,
                                  ptreg_error *err)
{
    if (fp64_for && !device->fp64)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s has no double precision: %s", device->name, fp64_for);
    if (c->wg > device->max_work_group)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: work-groups of %u threads; the device takes %zu",
                               device->name, c->wg, device->max_work_group);
    return PTREG_OK;
}

static pair_device_config config_or_default(const pair_device_config *cfg)
{
    pair_device_config c;
    if (cfg)
        return *cfg;
    pair_device_config_of(NULL, &c);
    return c;
}

ptreg_status pair_device_defines(const dev_handle *dev, ptreg_precision precision, const pair_device_config *cfg,
                                 char *defines, size_t size, ptreg_error *err)
{
    const pair_device_config c = config_or_default(cfg);
    int native = c.native_exp;
    ptreg_status st = native < 0 ? pair_device_exp(dev, &native, err) : PTREG_OK;
    if (st)
        return st;
    st = pair_device_supports(&c, precision == PTREG_PRECISION_FP64 ? PAIR_FP64_NEED : NULL, &dev->info, err);
    if (st)
        return st;
    snprintf(defines, size, "-DWG=%u -DITEMS=1 -DPAIR_PREC=%d -DPAIR_EXP_NATIVE=%d", c.wg, prec_bits(precision),
             native);
    return PTREG_OK;
}

static size_t group_target(const dev_handle *dev, const pair_device_config *c)
{
    return (size_t)c->groups_per_unit * (dev->info.compute_units ? dev->info.compute_units : 1);
}

unsigned pair_device_splits(const dev_handle *dev, const pair_device_config *cfg, size_t rows, size_t cols,
                            unsigned forced)
{
    const pair_device_config c = config_or_default(cfg);
    const size_t wg = c.wg, blocks = (rows + wg - 1) / wg, tiles = (cols + wg - 1) / wg;
    size_t want = forced;
    if (!want)
        want = blocks >= group_target(dev, &c) ? 1 : (group_target(dev, &c) + blocks - 1) / blocks;
    return (unsigned)(want < tiles ? want : tiles);
}

size_t pair_device_planes(const dev_handle *dev, const pair_device_config *cfg, size_t rows_cap, unsigned forced)
{
    /* splits * row blocks is at most the group target plus one split per
     * row block, or the splits forced per row block */
    const pair_device_config c = config_or_default(cfg);
    const size_t npad = (rows_cap + c.wg - 1) / c.wg * c.wg;
    return forced ? (size_t)forced * npad : group_target(dev, &c) * c.wg + npad;
}

void pair_device_free(pair_device_state *pd)
{
    if (!pd)
        return;
    dbuf_free(pd->cols);
    dbuf_free(pd->rows);
    dbuf_free(pd->partial);
    dbuf_free(pd->sums);
    free(pd);
}

size_t pair_device_npad(const pair_device_state *pd, size_t n) { return (n + pd->wg - 1) / pd->wg * pd->wg; }

/* Columns relative to their centroid, as the CPU engine packs them
 * (pair.c): three planes of float, binary16 or double. */
static void *pack_columns(const float *cols, size_t m, const double c[3], ptreg_precision precision, size_t *bytes)
{
    const size_t each = precision == PTREG_PRECISION_FP64 ? 8 : precision == PTREG_PRECISION_FP16 ? 2 : 4;
    *bytes = 3 * m * each;
    void *out = malloc(*bytes);
    if (!out)
        return NULL;
    for (size_t k = 0; k < 3; k++)
        for (size_t j = 0; j < m; j++) {
            const double v = cols[3 * j + k] - c[k];
            if (precision == PTREG_PRECISION_FP64)
                ((double *)out)[k * m + j] = v;
            else if (precision == PTREG_PRECISION_FP16)
                ((uint16_t *)out)[k * m + j] = half_from_float((float)v);
            else
                ((float *)out)[k * m + j] = (float)v;
        }
    return out;
}

static ptreg_status check_columns(const float *cols, size_t m, ptreg_error *err)
{
    if (m == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: no column points");
    if (m > UINT32_MAX / 3)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine on a device: %zu columns is more than %u", m,
                               UINT32_MAX / 3);
    for (size_t i = 0; i < 3 * m; i++)
        if (!isfinite(cols[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: column point %zu is not finite", i / 3);
    return PTREG_OK;
}

/* The program and its two kernels in groups of the configuration's wg,
 * or where that is ptreg's default and a kernel's own limit is below it
 * (ROCm, Intel), of the largest power of two within the limit; an asked
 * wg beyond a kernel's limit is refused, naming both limits. */
static ptreg_status open_kernels(pair_device_state *pd, const kernel_program *program, ptreg_precision precision,
                                 ptreg_error *err)
{
    for (;;) {
        char defines[256];
        ptreg_status st = pair_device_defines(pd->dev, precision, &pd->cfg, defines, sizeof defines, err);
        st = st ? st : dev_program(pd->dev, program, defines, &pd->program, err);
        st = st ? st : dev_kernel(pd->program, "ptreg_pair_gauss_partial", &pd->partial_kernel, err);
        st = st ? st : dev_kernel(pd->program, "ptreg_pair_gauss_sums", &pd->sums_kernel, err);
        if (st)
            return st;
        const size_t a = dev_kernel_limit(pd->partial_kernel), b = dev_kernel_limit(pd->sums_kernel);
        const size_t limit = a < b ? a : b;
        if (pd->cfg.wg <= limit || pd->cfg.wg_asked || limit < 32)
            break;
        unsigned wg = 32;
        while (wg * 2 <= limit)
            wg *= 2;
        pd->cfg.wg = wg;
    }
    pd->wg = pd->cfg.wg;
    ptreg_status st = dev_kernel_fits(pd->partial_kernel, pd->wg, err);
    return st ? st : dev_kernel_fits(pd->sums_kernel, pd->wg, err);
}

ptreg_status pair_device_create(dev_handle *dev, const kernel_program *program, const float *cols, size_t m,
                                ptreg_precision precision, const pair_device_config *cfg, size_t rows_cap,
                                unsigned splits, pair_device_state **out, ptreg_error *err)
{
    *out = NULL;
    char defines[256];
    ptreg_status st = check_columns(cols, m, err);
    st = st ? st : pair_device_defines(dev, precision, cfg, defines, sizeof defines, err);
    if (!st && (rows_cap == 0 || rows_cap > UINT32_MAX / 4))
        st = ptreg_error_set(err, PTREG_ERR_ARG, "pair engine on a device: %zu rows is not in 1..%u", rows_cap,
                             UINT32_MAX / 4);
    if (st)
        return st;
    pair_device_state *pd = calloc(1, sizeof *pd);
    if (!pd)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory");
    pd->dev = dev;
    pd->precision = precision;
    pd->m = m;
    pd->rows_cap = rows_cap;
    pd->cfg = config_or_default(cfg);
    pd->wg = pd->cfg.wg;
    pd->forced_splits = splits;
    pd->acc = dev->info.fp64 ? sizeof(double) : sizeof(float);
    pd->pair_bytes = precision == PTREG_PRECISION_FP64 ? sizeof(double) : sizeof(float);
    ptreg_points_centroid(cols, m, pd->center);
    st = open_kernels(pd, program, precision, err);
    size_t bytes = 0;
    void *packed = st ? NULL : pack_columns(cols, m, pd->center, precision, &bytes);
    if (!st && !packed)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu columns", m);
    st = st ? st : dbuf_upload(dev, packed, bytes, &pd->cols, err);
    free(packed);
    const size_t planes = pair_device_planes(dev, &pd->cfg, rows_cap, splits);
    st = st ? st : dbuf_alloc(dev, 3 * rows_cap * pd->pair_bytes, &pd->rows, err);
    st = st ? st : dbuf_alloc(dev, PAIR_SUMS * planes * pd->acc, &pd->partial, err);
    if (st) {
        pair_device_free(pd);
        return st;
    }
    *out = pd;
    return PTREG_OK;
}

static karg karg_pair(const pair_device_state *pd, double v)
{
    return pd->precision == PTREG_PRECISION_FP64 ? KARG_F64(v) : KARG_F32(v);
}

static karg karg_acc(const pair_device_state *pd, double v)
{
    return pd->acc == sizeof(double) ? KARG_F64(v) : KARG_F32(v);
}

ptreg_status pair_device_run(pair_device_state *pd, size_t n, double scale, ptreg_error *err)
{
    if (!(scale > 0.0) || !isfinite(scale))
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: scale %g must be finite and > 0", scale);
    if (pd->precision != PTREG_PRECISION_FP64 && scale > 3.4e38)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: scale %g overflows float32", scale);
    if (n == 0 || n > pd->rows_cap)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine on a device: %zu rows is not in 1..%zu", n,
                               pd->rows_cap);
    pd->row_blocks = (unsigned)((n + pd->wg - 1) / pd->wg);
    pd->splits = pair_device_splits(pd->dev, &pd->cfg, n, pd->m, pd->forced_splits);
    const size_t tiles = (pd->m + pd->wg - 1) / pd->wg;
    const size_t split_cols = (tiles + pd->splits - 1) / pd->splits * pd->wg;
    const karg args[] = {KARG_BUF(pd->rows),   KARG_U32(n),          KARG_U32(pd->rows_cap), KARG_BUF(pd->cols),
                         KARG_U32(pd->m),      KARG_U32(pd->m),      karg_pair(pd, -scale),  KARG_U32(pd->row_blocks),
                         KARG_U32(split_cols), KARG_BUF(pd->partial)};
    return dev_launch(pd->partial_kernel, (size_t)pd->row_blocks * pd->splits * pd->wg, pd->wg,
                      sizeof args / sizeof args[0], args, err);
}

/* Rows relative to the columns' centre, rounded as pair.c's stored_float,
 * in the planes of pd->rows. */
static void *pack_rows(const pair_device_state *pd, const double *rows, size_t n)
{
    void *out = malloc(3 * pd->rows_cap * pd->pair_bytes);
    if (!out)
        return NULL;
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < n; i++) {
            const double v = rows[3 * i + k] - pd->center[k];
            const size_t at = k * pd->rows_cap + i;
            if (pd->precision == PTREG_PRECISION_FP64)
                ((double *)out)[at] = v;
            else if (pd->precision == PTREG_PRECISION_FP16)
                ((float *)out)[at] = half_to_float(half_from_float((float)v));
            else
                ((float *)out)[at] = (float)v;
        }
    return out;
}

static double acc_at(const pair_device_state *pd, const void *v, size_t i)
{
    return pd->acc == sizeof(double) ? ((const double *)v)[i] : ((const float *)v)[i];
}

ptreg_status pair_device_gauss(pair_device_state *pd, const double *rows, size_t n, double scale, double *sum_e,
                               double *sum_e2, double *sum_eb, ptreg_error *err)
{
    if (n == 0)
        return PTREG_OK;
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(rows[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: row point %zu is not finite", i / 3);
    if (n > pd->rows_cap)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine on a device: %zu rows is more than %zu", n,
                               pd->rows_cap);
    void *packed = pack_rows(pd, rows, n), *sums = malloc(5 * n * pd->acc);
    ptreg_status st = packed && sums
                          ? PTREG_OK
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu rows", n);
    st = st ? st : dbuf_write(pd->rows, 0, packed, 3 * pd->rows_cap * pd->pair_bytes, err);
    if (!st && (!pd->sums || pd->sums->bytes < 5 * n * pd->acc)) {
        dbuf_free(pd->sums);
        pd->sums = NULL;
        st = dbuf_alloc(pd->dev, 5 * pd->rows_cap * pd->acc, &pd->sums, err);
    }
    st = st ? st : pair_device_run(pd, n, scale, err);
    if (!st) {
        const karg args[] = {KARG_BUF(pd->partial),
                             KARG_U32(pd->splits),
                             KARG_U32(pair_device_npad(pd, n)),
                             KARG_U32(n),
                             karg_acc(pd, pd->center[0]),
                             karg_acc(pd, pd->center[1]),
                             karg_acc(pd, pd->center[2]),
                             KARG_BUF(pd->sums)};
        st = dev_launch(pd->sums_kernel, n, pd->wg, sizeof args / sizeof args[0], args, err);
    }
    st = st ? st : dbuf_read(pd->sums, 0, sums, 5 * n * pd->acc, err);
    for (size_t i = 0; !st && i < n; i++) {
        sum_e[i] = acc_at(pd, sums, i);
        sum_e2[i] = acc_at(pd, sums, n + i);
        for (size_t k = 0; k < 3; k++)
            sum_eb[3 * i + k] = acc_at(pd, sums, 2 * n + 3 * i + k);
    }
    free(packed);
    free(sums);
    return st;
}
