/* The voxel grid on a GPU device (voxel_device.h; the steps: feat/voxel.cl).
 * The host checks the grid from the device's bounds exactly as voxel.c
 * does (voxel_grid_init), and reads the number of voxels to size the
 * outputs: two small waits, 32 bytes back. */
#include "feat/voxel_device.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/voxel_impl.h"
#include "device/engine.h"

static const char *const voxel_files[] = {"feat/voxel.cl", NULL};
const kernel_program voxel_kernels = {"voxel-grid", voxel_files};

#define VOXEL_WG 256
#define VOXEL_ITEMS 4
#define VOXEL_NONE 0xffffffffu

/* The buffers of one run. */
typedef struct voxel_run {
    dev_handle *dev;
    dprogram *program;
    size_t n, slots, groups;
    dbuf *bounds, *owner, *first, *count, *slot_of, *partials, *offset_of, *voxel_offset, *voxel_count, *total, *order;
} voxel_run;

static void run_free(voxel_run *r)
{
    dbuf *bufs[] = {r->bounds,    r->owner,        r->first,       r->count, r->slot_of, r->partials,
                    r->offset_of, r->voxel_offset, r->voxel_count, r->total, r->order};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
}

static ptreg_status kernel_of(voxel_run *r, const char *name, dkernel **k, ptreg_error *err)
{
    ptreg_status st = dev_kernel(r->program, name, k, err);
    if (!st && (*k)->max_threads && (*k)->max_threads < VOXEL_WG)
        st = ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "voxel grid on %s: %s takes %zu threads per group, not %d",
                             r->dev->label, name, (*k)->max_threads, VOXEL_WG);
    return st;
}

static ptreg_status launch_groups(const dkernel *k, size_t groups, size_t nargs, const karg *args, ptreg_error *err)
{
    const size_t grid[3] = {groups, 1, 1}, local[3] = {VOXEL_WG, 1, 1};
    return dev_launch_groups(k, 1, grid, local, nargs, args, err);
}

/* Step 1 and the host's checks: voxel_grid_init's grid, or its error. */
static ptreg_status bounds(voxel_run *r, const dbuf *xyz, double voxel, voxel_grid *grid, ptreg_error *err)
{
    dkernel *k;
    uint32_t words[7];
    ptreg_status st = kernel_of(r, "ptreg_voxel_bounds", &k, err);
    st = st ? st : dbuf_alloc(r->dev, sizeof words, &r->bounds, err);
    if (!st) {
        karg args[] = {KARG_BUF(xyz), KARG_U32(r->n), KARG_BUF(r->bounds)};
        st = launch_groups(k, 1, 3, args, err);
    }
    st = st ? st : dbuf_read(r->bounds, 0, words, sizeof words, err);
    if (st)
        return st;
    if (words[6] != VOXEL_NONE)
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: point %u is not finite", words[6]);
    double lo[3], hi[3];
    for (int k3 = 0; k3 < 3; k3++) {
        float l, h;
        memcpy(&l, &words[k3], sizeof l);
        memcpy(&h, &words[3 + k3], sizeof h);
        lo[k3] = l, hi[k3] = h;
    }
    return voxel_grid_init(lo, hi, voxel, grid, err);
}

/* Steps 2 to 4: the table, the voxels' numbers and offsets; *count. */
static ptreg_status number(voxel_run *r, const dbuf *xyz, const voxel_grid *g, size_t *count, ptreg_error *err)
{
    dkernel *insert, *sums, *num;
    ptreg_status st = kernel_of(r, "ptreg_voxel_insert", &insert, err);
    st = st ? st : kernel_of(r, "ptreg_voxel_group_sums", &sums, err);
    st = st ? st : kernel_of(r, "ptreg_voxel_number", &num, err);
    const size_t s = r->slots, n = r->n;
    st = st ? st : dbuf_alloc(r->dev, s * 4, &r->owner, err);
    st = st ? st : dbuf_alloc(r->dev, s * 4, &r->first, err);
    st = st ? st : dbuf_alloc(r->dev, s * 4, &r->count, err);
    st = st ? st : dbuf_alloc(r->dev, s * 4, &r->offset_of, err);
    st = st ? st : dbuf_alloc(r->dev, n * 4, &r->slot_of, err);
    st = st ? st : dbuf_alloc(r->dev, n * 4, &r->voxel_offset, err);
    st = st ? st : dbuf_alloc(r->dev, n * 4, &r->voxel_count, err);
    st = st ? st : dbuf_alloc(r->dev, 2 * r->groups * 4, &r->partials, err);
    st = st ? st : dbuf_alloc(r->dev, 4, &r->total, err);
    st = st ? st : dbuf_fill(r->owner, 0, s * 4, 0, err);
    st = st ? st : dbuf_fill(r->first, 0, s * 4, VOXEL_NONE, err);
    st = st ? st : dbuf_fill(r->count, 0, s * 4, 0, err);
    if (st)
        return st;
    karg ia[] = {KARG_BUF(xyz),      KARG_U32(n),        KARG_F64(g->lo[0]),  KARG_F64(g->lo[1]),
                 KARG_F64(g->lo[2]), KARG_F64(g->voxel), KARG_U32(s - 1),     KARG_BUF(r->owner),
                 KARG_BUF(r->first), KARG_BUF(r->count), KARG_BUF(r->slot_of)};
    st = dev_launch(insert, n, VOXEL_WG, sizeof ia / sizeof ia[0], ia, err);
    karg sa[] = {KARG_U32(n), KARG_BUF(r->first), KARG_BUF(r->count), KARG_BUF(r->slot_of), KARG_BUF(r->partials)};
    st = st ? st : launch_groups(sums, r->groups, sizeof sa / sizeof sa[0], sa, err);
    karg na[] = {KARG_U32(n),
                 KARG_U32(r->groups),
                 KARG_BUF(r->first),
                 KARG_BUF(r->count),
                 KARG_BUF(r->slot_of),
                 KARG_BUF(r->partials),
                 KARG_BUF(r->offset_of),
                 KARG_BUF(r->voxel_offset),
                 KARG_BUF(r->voxel_count),
                 KARG_BUF(r->total)};
    st = st ? st : launch_groups(num, r->groups, sizeof na / sizeof na[0], na, err);
    uint32_t v = 0;
    st = st ? st : dbuf_read(r->total, 0, &v, sizeof v, err);
    *count = v;
    return st;
}

/* Steps 5 and 6 into the outputs (count voxels). */
static ptreg_status gather(voxel_run *r, const dbuf *xyz, const dbuf *normals, const dbuf *rgb, size_t count,
                           dbuf *out_xyz, dbuf *out_normals, dbuf *out_rgb, ptreg_error *err)
{
    dkernel *scatter, *sums;
    ptreg_status st = kernel_of(r, "ptreg_voxel_scatter", &scatter, err);
    st = st ? st : kernel_of(r, "ptreg_voxel_sums", &sums, err);
    st = st ? st : dbuf_alloc(r->dev, r->n * 4, &r->order, err);
    if (st)
        return st;
    karg ca[] = {KARG_U32(r->n), KARG_BUF(r->slot_of), KARG_BUF(r->offset_of), KARG_BUF(r->count), KARG_BUF(r->order)};
    st = dev_launch(scatter, r->n, VOXEL_WG, sizeof ca / sizeof ca[0], ca, err);
    /* absent inputs and outputs: a buffer named but not read or written */
    karg sa[] = {KARG_BUF(xyz),
                 KARG_BUF(normals ? normals : xyz),
                 KARG_BUF(rgb ? rgb : xyz),
                 KARG_U32(normals != NULL),
                 KARG_U32(rgb != NULL),
                 KARG_U32(count),
                 KARG_BUF(r->total),
                 KARG_BUF(r->voxel_offset),
                 KARG_BUF(r->voxel_count),
                 KARG_BUF(r->order),
                 KARG_BUF(out_xyz),
                 KARG_BUF(out_normals ? out_normals : out_xyz),
                 KARG_BUF(out_rgb ? out_rgb : out_xyz)};
    return st ? st : dev_launch(sums, count, VOXEL_WG, sizeof sa / sizeof sa[0], sa, err);
}

static size_t table_slots(size_t n)
{
    size_t s = 1024;
    while (s < 2 * n)
        s *= 2;
    return s;
}

ptreg_status voxel_device_downsample(dev_handle *dev, const dbuf *xyz, const dbuf *normals, const dbuf *rgb, size_t n,
                                     double voxel, size_t *count, dbuf **out_xyz, dbuf **out_normals, dbuf **out_rgb,
                                     ptreg_error *err)
{
    *count = 0;
    *out_xyz = NULL;
    if (out_normals)
        *out_normals = NULL;
    if (out_rgb)
        *out_rgb = NULL;
    if (!(voxel > 0.0) || !isfinite(voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: the voxel size %g is not a positive number",
                               voxel);
    if (n > (size_t)UINT32_MAX / 2) /* indices + 1 in 32 bits, 2n slots */
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: %zu points is too many", n);
    if (!dev->info.fp64)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "voxel grid on %s: the device has no double precision (the keys and sums need it): "
                               "use the CPU",
                               dev->label);
    if (!n)
        return PTREG_OK;
    voxel_run r;
    memset(&r, 0, sizeof r);
    r.dev = dev, r.n = n, r.slots = table_slots(n);
    r.groups = (n + VOXEL_WG * VOXEL_ITEMS - 1) / (VOXEL_WG * VOXEL_ITEMS);
    voxel_grid grid;
    size_t v = 0;
    dbuf *ox = NULL, *on = NULL, *oc = NULL;
    ptreg_status st = dev_program(dev, &voxel_kernels, VOXEL_DEVICE_DEFINES, &r.program, err);
    st = st ? st : bounds(&r, xyz, voxel, &grid, err);
    st = st ? st : number(&r, xyz, &grid, &v, err);
    st = st ? st : dbuf_alloc(dev, 3 * v * sizeof(float), &ox, err);
    if (!st && normals && out_normals)
        st = dbuf_alloc(dev, 3 * v * sizeof(float), &on, err);
    if (!st && rgb && out_rgb)
        st = dbuf_alloc(dev, 3 * v, &oc, err);
    st = st ? st : gather(&r, xyz, on ? normals : NULL, oc ? rgb : NULL, v, ox, on, oc, err);
    run_free(&r);
    if (st) {
        dbuf_free(ox), dbuf_free(on), dbuf_free(oc);
        return st;
    }
    *count = v;
    *out_xyz = ox;
    if (out_normals)
        *out_normals = on;
    if (out_rgb)
        *out_rgb = oc;
    return PTREG_OK;
}

/* The voxels back into out. */
static ptreg_status read_cloud(const ptreg_cloud *in, size_t v, const dbuf *ox, const dbuf *on, const dbuf *oc,
                               ptreg_cloud *out, ptreg_error *err)
{
    ptreg_status st = ptreg_cloud_alloc(out, v, in->normals != NULL, err);
    if (!st && in->rgb && !(out->rgb = malloc(3 * (v ? v : 1))))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory for %zu colours", v);
    if (!st && v)
        st = dbuf_read(ox, 0, out->xyz, 3 * v * sizeof(float), err);
    if (!st && v && on)
        st = dbuf_read(on, 0, out->normals, 3 * v * sizeof(float), err);
    if (!st && v && oc)
        st = dbuf_read(oc, 0, out->rgb, 3 * v, err);
    if (!st)
        memcpy(out->origin, in->origin, sizeof out->origin);
    return st;
}

ptreg_status voxel_device_downsample_host(const ptreg_device *device, const ptreg_cloud *in, double voxel,
                                          ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    dev_handle *dev;
    dbuf *xyz = NULL, *normals = NULL, *rgb = NULL, *ox = NULL, *on = NULL, *oc = NULL;
    size_t v = 0;
    const size_t n = in->n;
    ptreg_status st = dev_get(device, &dev, err);
    if (!st && n) {
        st = dbuf_upload(dev, in->xyz, 3 * n * sizeof(float), &xyz, err);
        if (!st && in->normals)
            st = dbuf_upload(dev, in->normals, 3 * n * sizeof(float), &normals, err);
        if (!st && in->rgb)
            st = dbuf_upload(dev, in->rgb, 3 * n, &rgb, err);
    }
    st = st ? st : voxel_device_downsample(dev, xyz, normals, rgb, n, voxel, &v, &ox, &on, &oc, err);
    st = st ? st : read_cloud(in, v, ox, on, oc, out, err);
    dbuf_free(xyz), dbuf_free(normals), dbuf_free(rgb);
    dbuf_free(ox), dbuf_free(on), dbuf_free(oc);
    if (st)
        ptreg_cloud_free(out);
    return st;
}

/* The device engine: a GPU with double precision. */
static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    (void)options;
    if (!device->fp64)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "voxel grid on %s: the device has no double precision (the keys and sums need it): "
                               "use the CPU",
                               device->name);
    if (VOXEL_WG > device->max_work_group)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "voxel grid on %s: work-groups of %d threads; the device "
                               "takes %zu",
                               device->name, VOXEL_WG, device->max_work_group);
    return PTREG_OK;
}

static const engine voxel_device_engine = {ENGINE_GPU_BACKENDS, device_supports};
static const engine *const voxel_engines[] = {&engine_cpu, &voxel_device_engine};

ptreg_status ptreg_voxel_resolve_device(const ptreg_device *request, ptreg_device *on, ptreg_error *err)
{
    return engine_choose(voxel_engines, 2, request, NULL, "the voxel grid", on, NULL, err);
}

ptreg_status ptreg_voxel_downsample_on(const ptreg_cloud *in, double voxel, const ptreg_device *device,
                                       ptreg_device *on, ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    ptreg_device where;
    ptreg_status st = ptreg_voxel_resolve_device(device, &where, err);
    if (st)
        return st;
    if (on)
        *on = where;
    return where.backend == PTREG_BACKEND_CPU ? ptreg_voxel_downsample(in, voxel, out, err)
                                              : voxel_device_downsample_host(&where, in, voxel, out, err);
}
