/* The pair engine's space on a GPU device (tune.h): the kernels'
 * work-group size, exp and column-split target (pair_device.h), each
 * candidate's sums checked against the CPU's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair/pair_device.h"
#include "ptreg/tune.h"
#include "tune/tune_impl.h"
#include "reg/emicp/emicp_impl.h"
#include "tune/tune_kernels.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"

enum { D_WG, D_EXP, D_GROUPS, D_COUNT };

void ptreg_tune_space_pair_device(ptreg_tune_space *s)
{
    *s = (ptreg_tune_space){
        .kernel = "pair-device",
        .param_count = D_COUNT,
        .params = {[D_WG] = {"wg", PTREG_TUNE_LIST, 4, {32, 64, 128, 256}, 0, 0, 0, PTREG_PAIR_DEVICE_WG},
                   [D_EXP] = {"native_exp", PTREG_TUNE_BINARY, 0, {0}, 0, 0, 0, -1},
                   [D_GROUPS] =
                       {"groups_per_unit", PTREG_TUNE_LIST, 5, {2, 4, 8, 16, 32}, 0, 0, 0, PTREG_PAIR_DEVICE_GROUPS}},
        .constraint_count = 2,
        .constraints = {{"wg <= the device's work-group", PTREG_TUNE_LE, D_WG, -1, 1.0, PTREG_TUNE_WORK_GROUP, 0},
                        /* the column tile: x, y, z floats per thread */
                        {"wg * 12 <= local memory", PTREG_TUNE_LE, D_WG, -1, 12.0, PTREG_TUNE_LOCAL_BYTES, 0}},
    };
}

void ptreg_tune_pair_device_apply(const double *point, ptreg_pair_gpu *gpu)
{
    *gpu = (ptreg_pair_gpu){(int)point[D_WG], (int)point[D_EXP], (int)point[D_GROUPS]};
}

ptreg_status ptreg_tune_space_on_device(ptreg_tune_space *s, const ptreg_device *device, ptreg_error *err)
{
    dev_handle *dev;
    ptreg_status st = dev_get(device, &dev, err);
    for (int p = 0; !st && p < s->param_count; p++)
        if (!strcmp(s->params[p].name, "native_exp") && s->params[p].fallback < 0) {
            int native;
            st = pair_device_exp(dev, &native, err);
            s->params[p].fallback = native;
        }
    return st;
}

ptreg_status ptreg_tune_machine_device(const ptreg_device *device, ptreg_tune_machine *m, ptreg_error *err)
{
    memset(m, 0, sizeof *m);
    dev_handle *dev;
    ptreg_status st = dev_get(device, &dev, err);
    if (st)
        return st;
    char name[32];
    ptreg_device_format(device, name, sizeof name);
    snprintf(m->name, sizeof m->name, "%.24s: %.96s, %.64s", name, dev->info.name, dev->info.platform);
    m->cores = dev->info.compute_units;
    m->work_group = (double)dev->info.max_work_group;
    m->local_bytes = (double)dev->info.local_memory_bytes;
    m->l1_bytes = m->local_bytes;
    m->l2_bytes = m->local_bytes;
    return PTREG_OK;
}

struct ptreg_tune_pair_device_job {
    ptreg_device device;
    dev_handle *dev;
    size_t n;
    ptreg_precision precision;
    float *cols;
    double *rows, *ref, *got; /* rows: n x 3; sums: 5n */
};

void ptreg_tune_pair_device_job_destroy(ptreg_tune_pair_device_job *j)
{
    if (!j)
        return;
    free(j->cols), free(j->rows), free(j->ref), free(j->got);
    free(j);
}

#define SCALE (0.5 / (0.03 * 0.25)) /* sigma^2 = 0.03 r^2 of a unit cube, as the CPU space's job */

ptreg_status ptreg_tune_pair_device_job_create(const ptreg_device *device, size_t n, int precision,
                                               ptreg_tune_pair_device_job **out, ptreg_error *err)
{
    *out = NULL;
    if (n < 16 || n > ((size_t)1 << 24))
        return ptreg_error_set(err, PTREG_ERR_ARG, "tune pair on a device: size %zu is not in 16..%zu", n,
                               (size_t)1 << 24);
    ptreg_tune_pair_device_job *j = calloc(1, sizeof *j);
    if (!j)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory");
    j->device = *device;
    j->n = n;
    j->precision = (ptreg_precision)precision;
    j->cols = malloc(3 * n * sizeof *j->cols);
    j->rows = malloc(3 * n * sizeof *j->rows);
    j->ref = malloc(5 * n * sizeof *j->ref);
    j->got = malloc(5 * n * sizeof *j->got);
    ptreg_status st = j->cols && j->rows && j->ref && j->got
                          ? dev_get(device, &j->dev, err)
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory for %zu points", n);
    if (!st) {
        ptreg_rng rng;
        ptreg_rng_seed(&rng, 17);
        for (size_t i = 0; i < 3 * n; i++) {
            j->cols[i] = (float)ptreg_rng_uniform(&rng);
            j->rows[i] = (double)(float)(ptreg_rng_uniform(&rng) * 1.1 - 0.05);
        }
        ptreg_pair_options o;
        ptreg_pair_options_default(&o);
        o.precision = j->precision;
        ptreg_pair_plan *plan;
        st = ptreg_pair_plan_create(j->cols, n, &o, &plan, err);
        st = st ? st : ptreg_pair_gauss(plan, j->rows, n, SCALE, j->ref, j->ref + n, j->ref + 2 * n, err);
        if (!st)
            ptreg_pair_plan_destroy(plan);
    }
    if (st) {
        ptreg_tune_pair_device_job_destroy(j);
        return st;
    }
    *out = j;
    return PTREG_OK;
}

/* One run of the device sums (tune_run_fn). */
typedef struct device_run {
    ptreg_tune_pair_device_job *job;
    pair_device_state *pd;
} device_run;

static ptreg_status run_device_sums(void *ctx, ptreg_error *err)
{
    device_run *r = ctx;
    const size_t n = r->job->n;
    return pair_device_gauss(r->pd, r->job->rows, n, SCALE, r->job->got, r->job->got + n, r->job->got + 2 * n, err);
}

/* The candidate's sums on the device: the columns resident, the rows
 * uploaded and the sums back each run (what an E-step moves, and more). */
ptreg_status ptreg_tune_pair_device_measure(void *ctx, const double *point, int reps, double *seconds, double *error,
                                            ptreg_error *err)
{
    ptreg_tune_pair_device_job *j = ctx;
    ptreg_pair_gpu gpu;
    ptreg_tune_pair_device_apply(point, &gpu);
    pair_device_config cfg;
    pair_device_config_of(&gpu, &cfg);
    pair_device_state *pd;
    ptreg_status st = pair_device_create(j->dev, &emicp_kernels, j->cols, j->n, j->precision, &cfg, j->n, 0, &pd, err);
    if (st)
        return st;
    device_run run = {j, pd};
    st = tune_time_runs(run_device_sums, &run, ptreg_get_num_threads(), reps, seconds, err);
    pair_device_free(pd);
    if (!st)
        *error = tune_normalised_error(j->ref, j->got, 5 * j->n);
    return st;
}
