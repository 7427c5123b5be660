/* Choosing a kernel's variant for one run: the cache's winner for this
 * machine and problem size, applied to an algorithm's options (tune.h). */
#include "ptreg/emicp.h"
#include "ptreg/features.h"
#include "ptreg/harris3d.h"
#include "ptreg/lddmm.h"
#include "ptreg/tune.h"

#include <string.h>

static void choose_default(const ptreg_tune_space *space, ptreg_tune_choice *choice)
{
    memset(choice, 0, sizeof *choice);
    choice->source = "default";
    choice->space = *space;
    for (int p = 0; p < space->param_count; p++)
        choice->point[p] = space->params[p].fallback;
}

ptreg_status ptreg_tune_choose(const ptreg_tune_space *space, const ptreg_device *on, double work,
                               ptreg_tune_choice *choice, ptreg_error *err)
{
    choose_default(space, choice);
    ptreg_tune_machine m;
    ptreg_error device_err;
    if (on->backend == PTREG_BACKEND_CPU) {
        ptreg_tune_machine_cpu(&m);
    } else {
        const ptreg_status st = ptreg_tune_machine_device(on, &m, &device_err);
        if (st == PTREG_ERR_NOMEM)
            return ptreg_error_set(err, st, "%s", device_err.message);
        if (st)
            return PTREG_OK;
    }
    char want[16];
    ptreg_tune_size_class(work, want, sizeof want);
    const int found = ptreg_tune_cache_lookup(space, &m, want, choice->point, choice->size_class,
                                              sizeof choice->size_class);
    if (found < 0)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory reading the tuning cache");
    if (found)
        choice->source = "tuned";
    return PTREG_OK;
}

ptreg_status ptreg_tune_emicp(ptreg_emicp_options *opt, size_t n, size_t m, int use_cache,
                              ptreg_tune_choice *choice, ptreg_error *err)
{
    ptreg_device on;
    const int resolved = !ptreg_device_resolve(&opt->device, PTREG_EMICP_BACKENDS, "EM-ICP", &on, NULL);
    const int cpu = !resolved || on.backend == PTREG_BACKEND_CPU;
    ptreg_tune_space space;
    if (cpu)
        ptreg_tune_space_pair(&space);
    else
        ptreg_tune_space_pair_device(&space);
    if (opt->pair.precision == PTREG_PRECISION_FP16)
        space.kernel = cpu ? "pair-fp16" : "pair-device-fp16";
    /* a device that does not resolve is ptreg_emicp's to report; fp64 on
     * the CPU runs the reference, which has no knobs */
    if (!use_cache || !resolved || (cpu && opt->pair.precision == PTREG_PRECISION_FP64)) {
        choose_default(&space, choice);
        return PTREG_OK;
    }
    const ptreg_status st = ptreg_tune_choose(&space, &on, (double)n * (double)m, choice, err);
    if (st || strcmp(choice->source, "tuned"))
        return st;
    if (cpu)
        ptreg_tune_pair_apply(choice->point, &opt->pair, &choice->threads);
    else
        ptreg_tune_pair_device_apply(choice->point, &opt->pair.gpu);
    return PTREG_OK;
}

/* The device an algorithm's options resolve to; 0 when they do not (the
 * algorithm reports that itself). */
static int resolved(const ptreg_device *request, unsigned backends, const char *who, ptreg_device *on)
{
    return !ptreg_device_resolve(request, backends, who, on, NULL);
}

ptreg_status ptreg_tune_harris3d(ptreg_harris3d_options *opt, size_t voxels, int use_cache,
                                 ptreg_tune_choice *choice, ptreg_error *err)
{
    ptreg_device on;
    const int found = resolved(&opt->device, PTREG_HARRIS3D_BACKENDS, "harris3d", &on);
    const int cpu = !found || on.backend == PTREG_BACKEND_CPU;
    ptreg_tune_space space;
    (cpu ? ptreg_tune_space_harris : ptreg_tune_space_harris_device)(&space);
    ptreg_status st = PTREG_OK;
    if (!use_cache || !found || opt->reference)
        choose_default(&space, choice);
    else
        st = ptreg_tune_choose(&space, &on, (double)voxels, choice, err);
    const int tuned = !st && !strcmp(choice->source, "tuned");
    if (tuned && cpu)
        ptreg_tune_harris_apply(choice->point, opt, &choice->threads);
    if (tuned && !cpu)
        opt->device_method = (int)choice->point[0];
    if (!cpu) /* the method that runs: the caller's when not tuned */
        choice->point[0] = opt->device_method;
    return st;
}

ptreg_status ptreg_tune_fpfh(ptreg_feature_options *opt, size_t n, int use_cache, ptreg_tune_choice *choice,
                             ptreg_error *err)
{
    ptreg_device on;
    const int found = resolved(&opt->device, PTREG_FEATURES_BACKENDS, "fpfh", &on);
    const int cpu = !found || on.backend == PTREG_BACKEND_CPU;
    ptreg_tune_space space;
    (cpu ? ptreg_tune_space_fpfh : ptreg_tune_space_fpfh_device)(&space);
    if (!use_cache || !found || opt->reference) {
        choose_default(&space, choice);
        return PTREG_OK;
    }
    const ptreg_status st = ptreg_tune_choose(&space, &on, (double)n, choice, err);
    if (st || strcmp(choice->source, "tuned"))
        return st;
    if (cpu)
        ptreg_tune_fpfh_apply(choice->point, &choice->threads);
    else
        ptreg_tune_fpfh_device_apply(choice->point, &opt->gpu);
    return PTREG_OK;
}

ptreg_status ptreg_tune_lddmm(ptreg_lddmm_options *opt, size_t n, int use_cache, ptreg_tune_choice *choice,
                              ptreg_error *err)
{
    ptreg_device on;
    ptreg_tune_space space;
    ptreg_tune_space_lddmm_device(&space);
    if (!use_cache || !resolved(&opt->device, PTREG_LDDMM_BACKENDS, "lddmm", &on) ||
        on.backend == PTREG_BACKEND_CPU) { /* the CPU's LDDMM has no knobs to tune */
        choose_default(&space, choice);
        return PTREG_OK;
    }
    const ptreg_status st = ptreg_tune_choose(&space, &on, (double)n * (double)n, choice, err);
    if (!st && !strcmp(choice->source, "tuned"))
        ptreg_tune_pair_device_apply(choice->point, &opt->gpu);
    return st;
}
