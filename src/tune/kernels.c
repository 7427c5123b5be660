/* The tuner's kernels, listed once: `ptreg tune` and Python's tune both
 * take them from here (ptreg_tune_kernels). */
#include <stdlib.h>
#include <string.h>

#include "tune/tune_kernels.h"

/* A job of any kernel: its own job, measure and destroy, so that one
 * measure and one destroy serve every kernel on the CPU or a device. */
typedef struct kernel_job {
    void *inner;
    ptreg_tune_measure_fn measure;
    void (*destroy)(void *inner);
} kernel_job;

static ptreg_status job_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                ptreg_error *err)
{
    const kernel_job *j = job;
    return j->measure(j->inner, point, reps, seconds, error, err);
}

static void job_destroy(void *job)
{
    kernel_job *j = job;
    if (j && j->inner)
        j->destroy(j->inner);
    free(j);
}

static void destroy_pair(void *job) { ptreg_tune_pair_job_destroy(job); }
static void destroy_pair_device(void *job) { ptreg_tune_pair_device_job_destroy(job); }
static void destroy_lddmm(void *job) { ptreg_tune_lddmm_device_job_destroy(job); }
static void destroy_feature(void *job) { ptreg_tune_feature_job_destroy(job); }

/* The wrapper for a new job (its inner job still to be made). */
static kernel_job *job_new(void **job, ptreg_error *err)
{
    kernel_job *j = calloc(1, sizeof *j);
    if (!j)
        ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    *job = j;
    return j;
}

/* The wrapper's end: on failure nothing is left. */
static ptreg_status job_done(ptreg_status st, void **job)
{
    if (st) {
        job_destroy(*job);
        *job = NULL;
    }
    return st;
}

static ptreg_status pair_create(const ptreg_device *on, size_t n, int precision, void **job, ptreg_error *err)
{
    kernel_job *j = job_new(job, err);
    if (!j)
        return PTREG_ERR_NOMEM;
    ptreg_status st;
    if (on) {
        ptreg_tune_pair_device_job *pj = NULL;
        st = ptreg_tune_pair_device_job_create(on, n, precision, &pj, err);
        *j = (kernel_job){pj, ptreg_tune_pair_device_measure, destroy_pair_device};
    } else {
        ptreg_tune_pair_job *pj = NULL;
        st = ptreg_tune_pair_job_create(n, precision, &pj, err);
        *j = (kernel_job){pj, ptreg_tune_pair_measure, destroy_pair};
    }
    return job_done(st, job);
}

static ptreg_status feature_create(int harris, const ptreg_device *on, size_t n, void **job, ptreg_error *err)
{
    kernel_job *j = job_new(job, err);
    if (!j)
        return PTREG_ERR_NOMEM;
    ptreg_tune_feature_job *fj = NULL;
    ptreg_status st = ptreg_tune_feature_job_create(harris, n, &fj, err);
    *j = (kernel_job){fj, ptreg_tune_feature_measure, destroy_feature};
    if (!st && on)
        st = ptreg_tune_feature_job_on(fj, on, err);
    return job_done(st, job);
}

static ptreg_status harris_create(const ptreg_device *on, size_t n, int precision, void **job, ptreg_error *err)
{
    (void)precision;
    return feature_create(1, on, n, job, err);
}

static ptreg_status fpfh_create(const ptreg_device *on, size_t n, int precision, void **job, ptreg_error *err)
{
    (void)precision;
    return feature_create(0, on, n, job, err);
}

static ptreg_status lddmm_create(const ptreg_device *on, size_t n, int precision, void **job, ptreg_error *err)
{
    *job = NULL;
    if (!on)
        return ptreg_error_set(err, PTREG_ERR_ARG, "the lddmm kernel is tuned on a GPU device only");
    kernel_job *j = job_new(job, err);
    if (!j)
        return PTREG_ERR_NOMEM;
    ptreg_tune_lddmm_device_job *lj = NULL;
    ptreg_status st = ptreg_tune_lddmm_device_job_create(on, n, precision, &lj, err);
    *j = (kernel_job){lj, ptreg_tune_lddmm_device_measure, destroy_lddmm};
    return job_done(st, job);
}

static double pairs_work(size_t n) { return (double)n * (double)n; }
static double voxels_work(size_t n) { return (double)n * (double)n * (double)(n / 2); }
static double points_work(size_t n) { return (double)n; }

/* lddmm's work is n^2 landmark pairs, and its candidate, one evaluation
 * over 10 Euler steps, sums 20 pair terms for each */
static const ptreg_tune_kernel kernels[] = {
    {"pair", ptreg_tune_space_pair, ptreg_tune_space_pair_device, 20000, (size_t)1 << 26, "Gpts/s", 1e9, 1, pairs_work,
     pair_create, job_measure, job_destroy},
    {"harris", ptreg_tune_space_harris, ptreg_tune_space_harris_device, 256, 1024, "Mvoxels/s", 1e6, 1, voxels_work,
     harris_create, job_measure, job_destroy},
    {"fpfh", ptreg_tune_space_fpfh, ptreg_tune_space_fpfh_device, 50000, (size_t)1 << 24, "Mpoints/s", 1e6, 1,
     points_work, fpfh_create, job_measure, job_destroy},
    {"lddmm", NULL, ptreg_tune_space_lddmm_device, 2000, (size_t)1 << 22, "Gpts/s", 1e9, 20, pairs_work, lddmm_create,
     job_measure, job_destroy},
};

const ptreg_tune_kernel *ptreg_tune_kernels(size_t *count)
{
    *count = sizeof kernels / sizeof kernels[0];
    return kernels;
}

const ptreg_tune_kernel *ptreg_tune_kernel_find(const char *name)
{
    for (size_t k = 0; name && k < sizeof kernels / sizeof kernels[0]; k++)
        if (!strcmp(name, kernels[k].name))
            return &kernels[k];
    return NULL;
}
