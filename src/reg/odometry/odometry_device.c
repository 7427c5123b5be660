/* Odometry's ICP steps on a GPU device (odometry_impl.h's odo_device):
 * the map stays the host's (it changes every frame) and is copied up once
 * a registration, its table as it is and the offsets of its cells in use,
 * with the frame's points; each step then writes the pose (12 doubles),
 * launches odometry.cl's sums, a thread a point, and reads each group's
 * 28 sums back, added in group order here: the same bits on every run. */
#include "reg/odometry/odometry_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/engine.h"
#include "reg/odometry/odometry_impl.h"

static const char *const odometry_files[] = {"device/reduce.cl", "reg/odometry/odometry.cl", NULL};
const kernel_program odometry_kernels = {"odometry", odometry_files};

/* Threads per group (ODOMETRY_DEVICE_DEFINES): a group's sums are one
 * row of the host's read. */
#define ODO_WG 256

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    (void)options;
    if (!device->fp64)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "odometry on %s: its steps need double precision (poses kilometres from the start), "
                               "which the device lacks: use the CPU",
                               device->name);
    if (ODO_WG > device->max_work_group)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "odometry on %s: work-groups of %d threads; the device takes %zu", device->name, ODO_WG,
                               device->max_work_group);
    return PTREG_OK;
}

const engine odometry_device_engine = {ENGINE_GPU_BACKENDS, device_supports};

/* A device buffer that keeps its largest size. */
typedef struct grow_buf {
    dbuf *buf;
    size_t cap;
} grow_buf;

struct odo_device {
    dev_handle *dev;
    dkernel *sums;
    size_t wg;
    grow_buf table, offset, src, group_sums;
    dbuf *pose;
    double *host_sums; /* groups x ODO_STEP_SUMS */
    size_t host_cap;
    /* the registration loaded */
    size_t n, groups;
    uint32_t mask, per;
    double voxel, inv_voxel;
};

static ptreg_status grow(odo_device *d, grow_buf *g, size_t bytes, ptreg_error *err)
{
    if (bytes <= g->cap && g->buf)
        return PTREG_OK;
    const size_t cap = bytes > 2 * g->cap ? bytes : 2 * g->cap;
    dbuf_free(g->buf);
    g->buf = NULL, g->cap = 0;
    ptreg_status st = dbuf_alloc(d->dev, cap ? cap : 1, &g->buf, err);
    if (!st)
        g->cap = cap;
    return st;
}

ptreg_status odo_device_open(const ptreg_device *on, odo_device **out, ptreg_error *err)
{
    *out = NULL;
    odo_device *d = calloc(1, sizeof *d);
    if (!d)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    dprogram *program;
    ptreg_status st = dev_get(on, &d->dev, err);
    if (!st && !d->dev->info.fp64) /* the opened device's word (PTREG_DEVICE_NO_FP64 too) */
        st = device_supports(NULL, &d->dev->info, err);
    st = st ? st : dev_program(d->dev, &odometry_kernels, ODOMETRY_DEVICE_DEFINES, &program, err);
    st = st ? st : dev_kernel(program, "ptreg_odometry_sums", &d->sums, err);
    st = st ? st : dev_kernel_fits(d->sums, ODO_WG, err);
    st = st ? st : dbuf_alloc(d->dev, 12 * sizeof(double), &d->pose, err);
    if (st) {
        odo_device_close(d);
        return st;
    }
    *out = d;
    return PTREG_OK;
}

void odo_device_close(odo_device *d)
{
    if (!d)
        return;
    dbuf_free(d->table.buf), dbuf_free(d->offset.buf), dbuf_free(d->src.buf), dbuf_free(d->group_sums.buf);
    dbuf_free(d->pose);
    free(d->host_sums);
    free(d);
}

ptreg_status odo_device_load(odo_device *d, const odo_map *m, const double *src, size_t n, ptreg_error *err)
{
    const size_t groups = (n + ODO_WG - 1) / ODO_WG;
    const size_t table_bytes = (m->mask + 1) * sizeof *m->table;
    const size_t offset_bytes = 3 * (size_t)m->per * m->cells * sizeof *m->offset;
    const size_t sums_bytes = ODO_STEP_SUMS * (groups ? groups : 1) * sizeof(double);
    if (m->mask > UINT32_MAX || n > UINT32_MAX || !dev_grid_fits(groups, ODO_WG))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "odometry on %s: %zu points or a map of %zu voxels is beyond "
                               "a launch's reach",
                               d->dev->label, n, m->cells);
    if (groups > d->host_cap) {
        double *h = realloc(d->host_sums, ODO_STEP_SUMS * groups * sizeof *h);
        if (!h)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
        d->host_sums = h, d->host_cap = groups;
    }
    ptreg_status st = grow(d, &d->table, table_bytes, err);
    st = st ? st : grow(d, &d->offset, offset_bytes ? offset_bytes : sizeof(float), err);
    st = st ? st : grow(d, &d->src, n ? 3 * n * sizeof *src : sizeof *src, err);
    st = st ? st : grow(d, &d->group_sums, sums_bytes, err);
    st = st ? st : dbuf_write(d->table.buf, 0, m->table, table_bytes, err);
    if (!st && offset_bytes)
        st = dbuf_write(d->offset.buf, 0, m->offset, offset_bytes, err);
    if (!st && n)
        st = dbuf_write(d->src.buf, 0, src, 3 * n * sizeof *src, err);
    d->n = n, d->groups = groups;
    d->mask = (uint32_t)m->mask, d->per = (uint32_t)m->per;
    d->voxel = m->voxel, d->inv_voxel = m->inv_voxel;
    return st;
}

ptreg_status odo_device_sums(odo_device *d, const double T[16], double max_dist2, double kernel,
                             double total[ODO_STEP_SUMS], ptreg_error *err)
{
    memset(total, 0, ODO_STEP_SUMS * sizeof *total);
    if (!d->n)
        return PTREG_OK;
    ptreg_status st = dbuf_write(d->pose, 0, T, 12 * sizeof *T, err);
    if (!st) {
        karg args[] = {KARG_BUF(d->src.buf),   KARG_U32(d->n),          KARG_BUF(d->pose), KARG_BUF(d->table.buf),
                       KARG_U32(d->mask),      KARG_BUF(d->offset.buf), KARG_U32(d->per),  KARG_F64(d->voxel),
                       KARG_F64(d->inv_voxel), KARG_F64(max_dist2),     KARG_F64(kernel),  KARG_BUF(d->group_sums.buf)};
        st = dev_launch(d->sums, d->n, ODO_WG, sizeof args / sizeof args[0], args, err);
    }
    st = st ? st : dbuf_read(d->group_sums.buf, 0, d->host_sums, ODO_STEP_SUMS * d->groups * sizeof(double), err);
    for (size_t g = 0; !st && g < d->groups; g++) /* in order: the same bits on every run */
        for (int k = 0; k < ODO_STEP_SUMS; k++)
            total[k] += d->host_sums[ODO_STEP_SUMS * g + k];
    return st;
}
