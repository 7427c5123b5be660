/* Choosing a kernel's variant for one run: the cache's winner for this
 * machine and problem size, applied to an algorithm's options (tune.h). */
#include "ptreg/emicp.h"
#include "ptreg/features.h"
#include "ptreg/harris3d.h"
#include "ptreg/lddmm.h"
#include "ptreg/tune.h"

#include <string.h>
#include "tune/tune_kernels.h"

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

/* Where a run's options send it: `on`, found (0 when the options name no
 * usable device: the algorithm reports that itself, and the run gets the
 * defaults) and whether that is the CPU. */
typedef struct run_target {
    ptreg_device on;
    int found, cpu;
} run_target;

/* From an algorithm's ptreg_X_resolve_device: its status and device (read
 * after the call has written it). */
static run_target target_of(ptreg_status resolved, const ptreg_device *on)
{
    run_target t = {*on, !resolved, 0};
    t.cpu = !t.found || t.on.backend == PTREG_BACKEND_CPU;
    return t;
}

/* The cache's variant when the run can use one, else the defaults; 1 in
 * *tuned when the cache's winner is to be applied. */
static ptreg_status choose_if(int usable, const ptreg_tune_space *space, const run_target *t, double work,
                              ptreg_tune_choice *choice, int *tuned, ptreg_error *err)
{
    ptreg_status st = PTREG_OK;
    if (usable && t->found)
        st = ptreg_tune_choose(space, &t->on, work, choice, err);
    else
        choose_default(space, choice);
    *tuned = !st && !strcmp(choice->source, "tuned");
    return st;
}

static ptreg_status emicp_variant(ptreg_emicp_options *opt, size_t n, size_t m, int use_cache,
                                  ptreg_tune_choice *choice, ptreg_error *err)
{
    ptreg_device on = {PTREG_BACKEND_CPU, 0};
    const run_target t = target_of(ptreg_emicp_resolve_device(opt, &on, NULL), &on);
    ptreg_tune_space space;
    (t.cpu ? ptreg_tune_space_pair : ptreg_tune_space_pair_device)(&space);
    if (opt->pair.precision == PTREG_PRECISION_FP16)
        space.kernel = t.cpu ? "pair-fp16" : "pair-device-fp16";
    /* fp64 on the CPU runs the reference, which has no knobs */
    const int usable = use_cache && !(t.cpu && opt->pair.precision == PTREG_PRECISION_FP64);
    int tuned;
    const ptreg_status st = choose_if(usable, &space, &t, (double)n * (double)m, choice, &tuned, err);
    if (tuned && t.cpu)
        ptreg_tune_pair_apply(choice->point, &opt->pair, &choice->threads);
    if (tuned && !t.cpu)
        ptreg_tune_pair_device_apply(choice->point, &opt->pair.gpu);
    return st;
}

static ptreg_status harris3d_variant(ptreg_harris3d_options *opt, size_t voxels, int use_cache,
                                     ptreg_tune_choice *choice, ptreg_error *err)
{
    ptreg_device on = {PTREG_BACKEND_CPU, 0};
    const run_target t = target_of(ptreg_harris3d_resolve_device(opt, &on, NULL), &on);
    ptreg_tune_space space;
    (t.cpu ? ptreg_tune_space_harris : ptreg_tune_space_harris_device)(&space);
    int tuned;
    const ptreg_status st = choose_if(use_cache && !opt->reference, &space, &t, (double)voxels, choice, &tuned, err);
    if (tuned && t.cpu)
        ptreg_tune_harris_apply(choice->point, opt, &choice->threads);
    if (tuned && !t.cpu)
        opt->device_method = (int)choice->point[0];
    if (!t.cpu) /* the method that runs: the caller's when not tuned */
        choice->point[0] = opt->device_method;
    return st;
}

static ptreg_status fpfh_variant(ptreg_features_options *opt, size_t n, int use_cache, ptreg_tune_choice *choice,
                                 ptreg_error *err)
{
    ptreg_device on = {PTREG_BACKEND_CPU, 0};
    const run_target t = target_of(ptreg_features_resolve_device(opt, &on, NULL), &on);
    ptreg_tune_space space;
    (t.cpu ? ptreg_tune_space_fpfh : ptreg_tune_space_fpfh_device)(&space);
    int tuned;
    const ptreg_status st = choose_if(use_cache && !opt->reference, &space, &t, (double)n, choice, &tuned, err);
    if (tuned && t.cpu)
        ptreg_tune_fpfh_apply(choice->point, &choice->threads);
    if (tuned && !t.cpu)
        ptreg_tune_fpfh_device_apply(choice->point, &opt->gpu);
    return st;
}

static ptreg_status lddmm_variant(ptreg_lddmm_options *opt, size_t n, int use_cache, ptreg_tune_choice *choice,
                                  ptreg_error *err)
{
    ptreg_device on = {PTREG_BACKEND_CPU, 0};
    const run_target t = target_of(ptreg_lddmm_resolve_device(opt, &on, NULL), &on);
    ptreg_tune_space space;
    ptreg_tune_space_lddmm_device(&space);
    int tuned; /* the CPU's LDDMM has no knobs to tune */
    const ptreg_status st = choose_if(use_cache && !t.cpu, &space, &t, (double)n * (double)n, choice, &tuned, err);
    if (tuned)
        ptreg_tune_pair_device_apply(choice->point, &opt->gpu);
    return st;
}

ptreg_status ptreg_tune_variant(const char *algorithm, void *options, size_t n, size_t m, int use_cache,
                                ptreg_tune_choice *choice, ptreg_error *err)
{
    if (algorithm && options && !strcmp(algorithm, "emicp"))
        return emicp_variant(options, n, m, use_cache, choice, err);
    if (algorithm && options && !strcmp(algorithm, "harris3d"))
        return harris3d_variant(options, n, use_cache, choice, err);
    if (algorithm && options && !strcmp(algorithm, "features"))
        return fpfh_variant(options, n, use_cache, choice, err);
    if (algorithm && options && !strcmp(algorithm, "lddmm"))
        return lddmm_variant(options, n, use_cache, choice, err);
    memset(choice, 0, sizeof *choice);
    choice->source = "default";
    return ptreg_error_set(err, PTREG_ERR_ARG, "tune: %s%s: no tuned kernel (emicp, harris3d, features, lddmm)",
                           algorithm ? algorithm : "(null)", options ? "" : " without options");
}
