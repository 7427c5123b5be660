/* LDDMM's shooting and adjoint on a GPU device (tune.h): the pair kernels'
 * work-group size, exp and column splits (ptreg_pair_gpu), each candidate's
 * objective gradient checked against the CPU's. */
#include <stdlib.h>
#include <string.h>

#include "ptreg/lddmm.h"
#include "ptreg/tune.h"
#include "reg/lddmm/lddmm_impl.h"
#include "tune/tune_impl.h"
#include "tune/tune_kernels.h"
#include "core/numeric.h"

void ptreg_tune_space_lddmm_device(ptreg_tune_space *s)
{
    ptreg_tune_space_pair_device(s);
    s->kernel = "lddmm-device";
    /* the adjoint's tile holds 12 doubles per column (fp64, the larger);
     * wg is the pair space's first parameter */
    s->constraints[1] = (ptreg_tune_constraint){
        "wg * 96 <= local memory", PTREG_TUNE_LE, 0, -1, 96.0, PTREG_TUNE_LOCAL_BYTES, 0};
}

struct ptreg_tune_lddmm_device_job {
    ptreg_lddmm_options opt;
    size_t n;
    double *q0, *target, *p0, *ref, *got; /* n x 3 each: ref and got are gradients */
};

void ptreg_tune_lddmm_device_job_destroy(ptreg_tune_lddmm_device_job *j)
{
    if (!j)
        return;
    free(j->q0), free(j->target), free(j->p0), free(j->ref), free(j->got);
    free(j);
}

/* Random landmarks in a unit cube, the target a smooth warp of them, p0
 * the displacement (the CLI's "displacement" start). Every pair is
 * evaluated whatever sigma is; only the check depends on it. */
static void fill_landmarks(ptreg_tune_lddmm_device_job *j)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 23);
    for (size_t i = 0; i < 3 * j->n; i++)
        j->q0[i] = ptreg_rng_uniform(&rng);
    for (size_t i = 0; i < j->n; i++) {
        const double *q = j->q0 + 3 * i;
        double *t = j->target + 3 * i;
        t[0] = q[0] + 0.05 * q[1] * q[1];
        t[1] = q[1] + 0.04 * q[2];
        t[2] = q[2] - 0.03 * q[0] * q[1];
        for (int k = 0; k < 3; k++)
            j->p0[3 * i + k] = t[k] - q[k];
    }
}

ptreg_status ptreg_tune_lddmm_device_job_create(const ptreg_device *device, size_t n, int precision,
                                                ptreg_tune_lddmm_device_job **out, ptreg_error *err)
{
    *out = NULL;
    if (n < 16 || n > ((size_t)1 << 22))
        return ptreg_error_set(err, PTREG_ERR_ARG, "tune lddmm on a device: %zu landmarks is not in 16..%zu", n,
                               (size_t)1 << 22);
    ptreg_tune_lddmm_device_job *j = calloc(1, sizeof *j);
    if (!j)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory");
    ptreg_lddmm_options_default(&j->opt);
    j->opt.sigma = 0.1;
    j->opt.time_points = 11;
    j->opt.precision = (ptreg_precision)precision;
    j->n = n;
    double **arrays[] = {&j->q0, &j->target, &j->p0, &j->ref, &j->got};
    ptreg_status st = PTREG_OK;
    for (size_t a = 0; !st && a < sizeof arrays / sizeof arrays[0]; a++)
        if (!(*arrays[a] = malloc(3 * n * sizeof(double))))
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory for %zu landmarks", n);
    if (!st) {
        fill_landmarks(j);
        double f;
        j->opt.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
        st = ptreg_lddmm_objective(j->q0, j->target, n, j->p0, &j->opt, &f, j->ref, NULL, err);
        j->opt.device = *device;
    }
    if (st) {
        ptreg_tune_lddmm_device_job_destroy(j);
        return st;
    }
    *out = j;
    return PTREG_OK;
}

/* One run: an objective and gradient evaluation, as each L-BFGS step makes. */
typedef struct lddmm_run {
    ptreg_tune_lddmm_device_job *job;
    lddmm_device_run *d;
} lddmm_run;

static ptreg_status run_evaluation(void *ctx, ptreg_error *err)
{
    lddmm_run *r = ctx;
    double f;
    return lddmm_device_evaluate(r->d, r->job->target, r->job->p0, &f, r->job->got, NULL, err);
}

ptreg_status ptreg_tune_lddmm_device_measure(void *ctx, const double *point, int reps, double *seconds, double *error,
                                             ptreg_error *err)
{
    ptreg_tune_lddmm_device_job *j = ctx;
    ptreg_lddmm_options o = j->opt;
    ptreg_tune_pair_device_apply(point, &o.gpu);
    lddmm_run run = {j, NULL};
    ptreg_status st = lddmm_device_open(&o.device, j->q0, j->n, &o, 0, &run.d, err);
    st = st ? st : tune_time_runs(run_evaluation, &run, ptreg_get_num_threads(), reps, seconds, err);
    lddmm_device_close(run.d);
    if (!st)
        *error = tune_normalised_error(j->ref, j->got, 3 * j->n);
    return st;
}
