/* Rigid ICP's entry points and its resident model: the inputs checked
 * (icp_loop.c) and the engine that runs the options (icp_cpu.c or
 * icp_device.c), chosen once and kept by the model; icp_run (icp_loop.c)
 * owns each registration. Point-to-point (Besl & McKay 1992) with Horn's
 * quaternion solution, or Gauss-Newton steps (point-to-plane, robust
 * kernels: icp_gn.c), the sigma filter of the aerial-refuelling study and
 * trimming. See docs/ALGORITHMS.md. */
#include <stdlib.h>
#include <string.h>

#include "ptreg/icp.h"

#include "nn/index_impl.h"
#include "reg/icp/icp_impl.h"

static const engine *const icp_engines[] = {&icp_cpu_engine.base, &icp_device_engine.base};

/* The device `request` names and the engine that runs opt there (opt NULL:
 * a model for every option): the one choice a call makes. */
static ptreg_status icp_choose(const ptreg_device *request, const ptreg_icp_options *opt, ptreg_device *on,
                               const icp_engine **chosen, ptreg_error *err)
{
    const engine *e = NULL;
    ptreg_status st = engine_choose(icp_engines, 2, request, opt, "ICP", on, &e, err);
    /* every engine in the list is an icp_engine, its base first */
    *chosen = (const icp_engine *)e;
    return st;
}

ptreg_status ptreg_icp_resolve_device(const ptreg_icp_options *opt, ptreg_device *on, ptreg_error *err)
{
    const icp_engine *unused;
    return icp_choose(&opt->device, opt, on, &unused, err);
}

/* ---- the model: the engine chosen, the target, what stays on the device ---- */

static ptreg_status model_open(const ptreg_model_index *index, const ptreg_device *on, const icp_engine *e,
                               ptreg_icp_model **out, ptreg_error *err)
{
    ptreg_icp_model *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    m->engine = e;
    m->device = *on;
    m->index = index;
    size_t points;
    const float *target = ptreg_model_index_points(index, &points);
    icp_target_extent(target, points, m->ref, &m->diag2);
    ptreg_status st = e->open ? e->open(m, err) : PTREG_OK;
    if (st) {
        ptreg_icp_model_destroy(m);
        return st;
    }
    *out = m;
    return PTREG_OK;
}

ptreg_status ptreg_icp_model_create(const ptreg_model_index *index, const ptreg_device *device, ptreg_icp_model **out,
                                    ptreg_error *err)
{
    ptreg_device on;
    const icp_engine *e;
    ptreg_status st = icp_choose(device, NULL, &on, &e, err);
    return st ? st : model_open(index, &on, e, out, err);
}

void ptreg_icp_model_destroy(ptreg_icp_model *m)
{
    if (!m)
        return;
    if (m->resident)
        m->engine->close(m->resident);
    free(m);
}

void ptreg_icp_model_get_info(const ptreg_icp_model *m, ptreg_icp_model_info *info)
{
    memset(info, 0, sizeof *info);
    info->device = m->device;
    if (m->resident)
        m->engine->info(m->resident, info);
}

ptreg_status ptreg_icp_model_set_normals(ptreg_icp_model *m, const float *normals, ptreg_error *err)
{
    if (!normals)
        return ptreg_error_set(err, PTREG_ERR_ARG, "ICP model: no normals given");
    m->normals = normals;
    return m->engine->set_normals ? m->engine->set_normals(m, err) : PTREG_OK;
}

ptreg_status ptreg_icp_model_run(ptreg_icp_model *m, const float *source, size_t n, const ptreg_icp_options *opt,
                                 ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options defaults;
    size_t points;
    const float *target = ptreg_model_index_points(m->index, &points);
    ptreg_status st = icp_begin(source, n, target, points, &opt, &defaults, r, err);
    r->device = m->device;
    return st ? st : icp_run(m, source, n, opt, t0, r, err);
}

/* ---- one registration: a model used once ---- */

static ptreg_status icp_once(const ptreg_device *on, const icp_engine *e, const float *source, size_t n,
                             const ptreg_model_index *idx, const ptreg_icp_options *opt, double t0, ptreg_icp_result *r,
                             ptreg_error *err)
{
    r->device = *on;
    ptreg_icp_model *m;
    ptreg_status st = model_open(idx, on, e, &m, err);
    if (st)
        return st;
    st = icp_run(m, source, n, opt, t0, r, err);
    if (!st) {
        ptreg_icp_model_info info;
        ptreg_icp_model_get_info(m, &info);
        r->upload_ms = info.upload_ms;
    }
    ptreg_icp_model_destroy(m);
    return st;
}

ptreg_status ptreg_icp_indexed(const float *source, size_t n, const ptreg_model_index *target,
                               const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    const icp_engine *e;
    size_t m;
    const float *points = target ? ptreg_model_index_points(target, &m) : NULL;
    ptreg_status st = icp_begin(source, n, points, target ? m : 0, &opt_in, &def, r, err);
    st = st ? st : icp_choose(&opt_in->device, opt_in, &on, &e, err);
    return st ? st : icp_once(&on, e, source, n, target, opt_in, t0, r, err);
}

ptreg_status ptreg_icp(const float *source, size_t n, const float *target, size_t m, const ptreg_icp_options *opt_in,
                       ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    const icp_engine *e;
    ptreg_status st = icp_begin(source, n, target, m, &opt_in, &def, r, err);
    st = st ? st : icp_choose(&opt_in->device, opt_in, &on, &e, err);
    if (st)
        return st;
    /* Without a prebuilt index only the structures the method needs are
     * built, inside the timing: the tree always (Delaunay walks fall back on
     * it), the Delaunay graph (seconds for 40k points) only when asked. */
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    io.delaunay = ptreg_nn_method_is_delaunay(opt_in->nn);
    ptreg_model_index *idx;
    double tb = ptreg_time_ms();
    if ((st = index_create_borrowing(target, m, &io, &idx, err)))
        return st;
    r->build_ms = ptreg_time_ms() - tb;
    st = icp_once(&on, e, source, n, idx, opt_in, t0, r, err);
    ptreg_model_index_destroy(idx);
    return st;
}
