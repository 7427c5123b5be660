/* Rigid ICP's entry points: the inputs checked (icp_loop.c) and the engine
 * that runs the options (icp_cpu.c or icp_device.c), chosen once. Point-to-
 * point (Besl & McKay 1992) with Horn's quaternion solution, or Gauss-Newton
 * steps (point-to-plane, robust kernels: icp_gn.c), the sigma filter of the
 * aerial-refuelling study and trimming. See docs/ALGORITHMS.md. */
#include "ptreg/icp.h"

#include "nn/index_impl.h"
#include "reg/icp/icp_impl.h"

static const engine *const icp_engines[] = {&icp_cpu_engine.base, &icp_device_engine.base};

ptreg_status ptreg_icp_resolve_device(const ptreg_icp_options *opt, ptreg_device *on, ptreg_error *err)
{
    return engine_choose(icp_engines, 2, &opt->device, opt, "ICP", on, NULL, err);
}

/* The registration on an index, by the engine of the device resolved. */
static ptreg_status icp_on(const ptreg_device *on, const float *source, size_t n, const ptreg_model_index *idx,
                           const ptreg_icp_options *opt, double t0, ptreg_icp_result *r, ptreg_error *err)
{
    r->device = *on;
    const icp_engine *e = on->backend == PTREG_BACKEND_CPU ? &icp_cpu_engine : &icp_device_engine;
    return e->run(on, source, n, idx, opt, t0, r, err);
}

ptreg_status ptreg_icp_indexed(const float *source, size_t n, const ptreg_model_index *target,
                               const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    size_t m;
    const float *points = target ? ptreg_model_index_points(target, &m) : NULL;
    ptreg_status st = icp_begin(source, n, points, target ? m : 0, &opt_in, &def, r, err);
    st = st ? st : ptreg_icp_resolve_device(opt_in, &on, err);
    return st ? st : icp_on(&on, source, n, target, opt_in, t0, r, err);
}

ptreg_status ptreg_icp(const float *source, size_t n, const float *target, size_t m,
                       const ptreg_icp_options *opt_in, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options def;
    ptreg_device on;
    ptreg_status st = icp_begin(source, n, target, m, &opt_in, &def, r, err);
    st = st ? st : ptreg_icp_resolve_device(opt_in, &on, err);
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
    st = icp_on(&on, source, n, idx, opt_in, t0, r, err);
    ptreg_model_index_destroy(idx);
    return st;
}

