/* The search spaces of 3-D Harris and FPFH on the CPU (tune.h), and their
 * candidates' runs on fixed synthetic inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/features.h"
#include "ptreg/harris3d.h"
#include "ptreg/synth.h"
#include "ptreg/tune.h"
#include "tune/tune_impl.h"
#include "tune/tune_kernels.h"
#include "core/numeric.h"
#include "feat/harris3d_impl.h"

/* Threads, the first level (cut by the cores), every value up to 16 and
 * the core count itself. */
static ptreg_tune_param threads_param(void)
{
    ptreg_tune_param p = {"threads", PTREG_TUNE_LIST, 5, {1, 2, 4, 8, 16}, 0, 0, 0, 0};
    const int cores = ptreg_get_num_threads();
    p.fallback = cores;
    int listed = 0;
    for (int v = 0; v < p.count; v++)
        listed |= p.values[v] == cores;
    if (!listed)
        p.values[p.count++] = cores;
    return p;
}

static const ptreg_tune_constraint threads_le_cores = {
    "threads <= cores", PTREG_TUNE_LE, 0, -1, 1.0, PTREG_TUNE_CORES, 0};

/* Rows per tile rather than the ring's bytes and tiles per thread: those
 * two knobs met in one number (their min), so distinct candidates ran
 * the same tiling and only the timing noise told them apart. 0 is the
 * built-in rule. */
enum { H_THREADS, H_TILE_ROWS, H_COUNT };

void ptreg_tune_space_harris(ptreg_tune_space *s)
{
    *s = (ptreg_tune_space){
        .kernel = "harris",
        .param_count = H_COUNT,
        .params =
            {[H_THREADS] = threads_param(),
             [H_TILE_ROWS] = {"tile_rows", PTREG_TUNE_LIST, 10, {0, 4, 6, 8, 12, 16, 24, 32, 48, 64}, 0, 0, 0, 0}},
        .constraint_count = 1,
        .constraints = {threads_le_cores},
    };
}

void ptreg_tune_space_harris_device(ptreg_tune_space *s)
{
    *s = (ptreg_tune_space){.kernel = "harris-device",
                            .param_count = 1,
                            .params = {{"method", PTREG_TUNE_LIST, 4, {0, 1, 2, 3}, 0, 0, 0, 3}},
                            .constraint_count = 0};
}

enum { F_THREADS, F_COUNT };

void ptreg_tune_space_fpfh(ptreg_tune_space *s)
{
    *s = (ptreg_tune_space){.kernel = "fpfh",
                            .param_count = F_COUNT,
                            .params = {[F_THREADS] = threads_param()},
                            .constraint_count = 1,
                            .constraints = {threads_le_cores}};
}

/* FPFH on a GPU: each point's group and the searches' groups. */
enum { FD_WG, FD_SEARCH_WG, FD_COUNT };

void ptreg_tune_space_fpfh_device(ptreg_tune_space *s)
{
    *s = (ptreg_tune_space){
        .kernel = "fpfh-device",
        .param_count = FD_COUNT,
        .params = {[FD_WG] = {"wg", PTREG_TUNE_LIST, 3, {64, 128, 256}, 0, 0, 0, 64},
                   [FD_SEARCH_WG] = {"search_wg", PTREG_TUNE_LIST, 4, {32, 64, 128, 256}, 0, 0, 0, 256}},
        .constraint_count = 2,
        .constraints = {{"wg <= the device's work-group", PTREG_TUNE_LE, FD_WG, -1, 1.0, PTREG_TUNE_WORK_GROUP, 0},
                        {"search_wg <= the device's work-group", PTREG_TUNE_LE, FD_SEARCH_WG, -1, 1.0,
                         PTREG_TUNE_WORK_GROUP, 0}},
    };
}

void ptreg_tune_fpfh_device_apply(const double *point, ptreg_features_gpu *gpu)
{
    *gpu = (ptreg_features_gpu){(int)point[FD_WG], (int)point[FD_SEARCH_WG]};
}

void ptreg_tune_harris_apply(const double *point, ptreg_harris3d_options *o, int *threads)
{
    o->tile_rows = (size_t)point[H_TILE_ROWS];
    *threads = (int)point[H_THREADS];
}

void ptreg_tune_fpfh_apply(const double *point, int *threads) { *threads = (int)point[F_THREADS]; }

/* ---- the candidates' runs ---- */

struct ptreg_tune_feature_job {
    int harris;
    ptreg_device device; /* Harris's device kernels: a GPU; else the CPU */
    ptreg_volume vol;    /* Harris: a uint8 volume of boxes */
    ptreg_cloud cloud;   /* FPFH: a blob with normals */
    float *ref, *got;
    size_t len;
};

void ptreg_tune_feature_job_destroy(ptreg_tune_feature_job *j)
{
    if (!j)
        return;
    free(j->vol.data);
    ptreg_cloud_free(&j->cloud);
    free(j->ref), free(j->got);
    free(j);
}

/* Boxes of random levels on a dark background, with noise: corners to find. */
static int make_volume(size_t n, ptreg_volume *v)
{
    memset(v, 0, sizeof *v);
    v->nx = v->ny = n, v->nz = n / 2 > 8 ? n / 2 : 8;
    v->type = PTREG_VOXEL_U8;
    v->spacing[0] = v->spacing[1] = v->spacing[2] = 1.0;
    uint8_t *d = malloc(v->nx * v->ny * v->nz);
    if (!d)
        return -1;
    v->data = d;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 23);
    for (size_t i = 0; i < v->nx * v->ny * v->nz; i++)
        d[i] = (uint8_t)(ptreg_rng_next(&rng) % 8);
    for (int b = 0; b < 24; b++) {
        size_t lo[3], hi[3], dims[3] = {v->nx, v->ny, v->nz};
        for (int k = 0; k < 3; k++) {
            lo[k] = (size_t)(ptreg_rng_uniform(&rng) * dims[k] * 0.8);
            hi[k] = lo[k] + 2 + (size_t)(ptreg_rng_uniform(&rng) * dims[k] * 0.3);
            hi[k] = hi[k] < dims[k] ? hi[k] : dims[k];
        }
        const uint8_t level = (uint8_t)(60 + ptreg_rng_next(&rng) % 180);
        for (size_t z = lo[2]; z < hi[2]; z++)
            for (size_t y = lo[1]; y < hi[1]; y++)
                for (size_t x = lo[0]; x < hi[0]; x++)
                    d[(z * v->ny + y) * v->nx + x] = level;
    }
    return 0;
}

static ptreg_status run_kernel(ptreg_tune_feature_job *j, const double *point, float *out, ptreg_error *err)
{
    if (j->harris) {
        ptreg_harris3d_options o;
        ptreg_harris3d_options_default(&o);
        o.device = j->device;
        int threads = ptreg_get_num_threads();
        if (point && j->device.backend != PTREG_BACKEND_CPU)
            o.device_method = (int)point[0];
        else if (point)
            ptreg_tune_harris_apply(point, &o, &threads);
        return ptreg_harris3d_scores(&j->vol, &o, out, err);
    }
    ptreg_features_options o;
    ptreg_features_options_default(&o);
    o.device = j->device;
    o.neighbors = (ptreg_neighborhood){0, 0.12}; /* about fifty neighbors on the blob */
    if (point && j->device.backend != PTREG_BACKEND_CPU)
        ptreg_tune_fpfh_device_apply(point, &o.gpu);
    return ptreg_fpfh(j->cloud.xyz, j->cloud.normals, j->cloud.n, &o, out, NULL, err);
}

ptreg_status ptreg_tune_feature_job_on(ptreg_tune_feature_job *j, const ptreg_device *device, ptreg_error *err)
{
    j->device = *device;
    /* FPFH's knobs keep the device's bits, which differ from the CPU's
     * within the parity suite's 0.01 per bin: the device's default is the
     * reference its candidates must equal */
    return j->harris ? PTREG_OK : run_kernel(j, NULL, j->ref, err);
}

ptreg_status ptreg_tune_feature_job_create(int harris, size_t n, ptreg_tune_feature_job **out, ptreg_error *err)
{
    *out = NULL;
    if (n < 16 || n > (harris ? 1024u : (1u << 24)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "tune %s: size %zu is not in 16..%u", harris ? "harris" : "fpfh", n,
                               harris ? 1024u : (1u << 24));
    ptreg_tune_feature_job *j = calloc(1, sizeof *j);
    if (!j)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory");
    j->harris = harris;
    j->device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    ptreg_status st = PTREG_OK;
    if (harris) {
        if (make_volume(n, &j->vol))
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "tune harris: out of memory for a %zu^3 volume", n);
        j->len = j->vol.nx * j->vol.ny * j->vol.nz;
    } else {
        st = ptreg_synth_model(PTREG_SHAPE_BLOB, n, 29, &j->cloud, err);
        j->len = j->cloud.n * PTREG_FPFH_BINS;
    }
    if (!st && (!(j->ref = malloc(j->len * sizeof(float))) || !(j->got = malloc(j->len * sizeof(float)))))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "tune: out of memory");
    st = st ? st : run_kernel(j, NULL, j->ref, err);
    if (st) {
        ptreg_tune_feature_job_destroy(j);
        return st;
    }
    *out = j;
    return PTREG_OK;
}

/* The largest difference from the reference, relative to its largest
 * value (NaN rows compared as NaN). */
static double relative_error(const float *ref, const float *got, size_t len)
{
    double top = 0, worst = 0;
    for (size_t i = 0; i < len; i++) {
        if (isnan(ref[i]) || isnan(got[i])) {
            worst = isnan(ref[i]) && isnan(got[i]) ? worst : INFINITY;
            continue;
        }
        top = fmax(top, fabs(ref[i]));
        worst = fmax(worst, fabs((double)got[i] - ref[i]));
    }
    return top > 0 ? worst / top : worst;
}

/* One run of a candidate (tune_run_fn). */
typedef struct feature_run {
    ptreg_tune_feature_job *job;
    const double *point;
} feature_run;

static ptreg_status run_candidate(void *ctx, ptreg_error *err)
{
    feature_run *r = ctx;
    return run_kernel(r->job, r->point, r->job->got, err);
}

ptreg_status ptreg_tune_feature_measure(void *ctx, const double *point, int reps, double *seconds, double *error,
                                        ptreg_error *err)
{
    ptreg_tune_feature_job *j = ctx;
    int threads = ptreg_get_num_threads();
    ptreg_harris3d_options unused;
    const int on_cpu = j->device.backend == PTREG_BACKEND_CPU; /* on a GPU, run_kernel reads the point */
    if (on_cpu && j->harris)
        ptreg_tune_harris_apply(point, &unused, &threads);
    else if (on_cpu)
        ptreg_tune_fpfh_apply(point, &threads);
    feature_run run = {j, point};
    ptreg_status st = tune_time_runs(run_candidate, &run, threads, reps, seconds, err);
    if (!st)
        *error = relative_error(j->ref, j->got, j->len);
    return st;
}
