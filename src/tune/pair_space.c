/* The pair engine's search space and its candidates' runs (tune.h). The
 * space as data: what the engine's knobs may be and what must hold between
 * them on this machine. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/pair.h"
#include "ptreg/tune.h"
#include "tune/tune_impl.h"
#include "tune/tune_kernels.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"

/* threads first: its constraint (<= cores) then cuts the tree at the root */
enum { P_THREADS, P_COL_TILE, P_ROW_BLOCK, P_ROW_VECTORS, P_ORDER, P_COUNT };

void ptreg_tune_space_pair(ptreg_tune_space *s)
{
    ptreg_pair_options d;
    ptreg_pair_options_default(&d);
    *s = (ptreg_tune_space){
        .kernel = "pair",
        .param_count = P_COUNT,
        .params =
            {
                [P_COL_TILE] =
                    {"col_tile", PTREG_TUNE_LIST, 8, {64, 128, 256, 512, 1024, 2048, 4096, 8192}, 0, 0, 0, d.col_tile},
                [P_ROW_BLOCK] =
                    {"row_block", PTREG_TUNE_LIST, 6, {64, 128, 256, 512, 1024, 2048}, 0, 0, 0, d.row_block},
                [P_ROW_VECTORS] = {"row_vectors", PTREG_TUNE_LIST, 3, {1, 2, 4}, 0, 0, 0, d.row_vectors},
                [P_ORDER] = {"tiles_outside", PTREG_TUNE_BINARY, 0, {0}, 0, 0, 0, d.order},
                [P_THREADS] = {"threads", PTREG_TUNE_LIST, 5, {1, 2, 4, 8, 16}, 0, 0, 0, 0},
            },
        .constraint_count = 4,
        .constraints =
            {
                /* a column tile (x, y, z floats) stays in L2 beside the rows */
                {"col_tile * 12 <= L2 / 2", PTREG_TUNE_LE, P_COL_TILE, -1, 24.0, PTREG_TUNE_L2_BYTES, 0},
                /* a row block holds whole groups of row vectors (16 lanes) */
                {"row_block multiple of row_vectors * 16", PTREG_TUNE_MULTIPLE, P_ROW_BLOCK, P_ROW_VECTORS, 16.0,
                 PTREG_TUNE_CONST, 0},
                /* the group's sums (5 per row, 4 bytes) stay in L1 while a tile sweeps */
                {"row_vectors * 16 * 5 * 4 <= L1 / 8", PTREG_TUNE_LE, P_ROW_VECTORS, -1, 320.0 * 8.0,
                 PTREG_TUNE_L1_BYTES, 0},
                {"threads <= cores", PTREG_TUNE_LE, P_THREADS, -1, 1.0, PTREG_TUNE_CORES, 0},
            },
    };
    /* the default runs on every core */
    const int cores = ptreg_get_num_threads();
    s->params[P_THREADS].fallback = cores;
    int listed = 0;
    for (int v = 0; v < s->params[P_THREADS].count; v++)
        listed |= s->params[P_THREADS].values[v] == cores;
    if (!listed && s->params[P_THREADS].count < PTREG_TUNE_MAX_VALUES)
        s->params[P_THREADS].values[s->params[P_THREADS].count++] = cores;
}

struct ptreg_tune_pair_job {
    size_t n;
    ptreg_precision precision;
    float *rows, *cols;
    double scale;
    double *ref, *got; /* 5n each: e, e^2, e b */
};

void ptreg_tune_pair_job_destroy(ptreg_tune_pair_job *j)
{
    if (!j)
        return;
    free(j->rows), free(j->cols), free(j->ref), free(j->got);
    free(j);
}

static ptreg_status sums(ptreg_tune_pair_job *j, const ptreg_pair_options *o, double *out, ptreg_error *err)
{
    return ptreg_pair_gauss_sums(j->rows, j->n, j->cols, j->n, j->scale, o, out, out + j->n, out + 2 * j->n, err);
}

ptreg_status ptreg_tune_pair_job_create(size_t n, int precision, ptreg_tune_pair_job **out, ptreg_error *err)
{
    *out = NULL;
    if (n < 16 || n > ((size_t)1 << 26))
        return ptreg_error_set(err, PTREG_ERR_ARG, "tune pair: size %zu is not in 16..%zu", n, (size_t)1 << 26);
    ptreg_tune_pair_job *j = calloc(1, sizeof *j);
    if (!j)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune pair: out of memory");
    j->n = n;
    j->precision = (ptreg_precision)precision;
    j->rows = malloc(3 * n * sizeof(float));
    j->cols = malloc(3 * n * sizeof(float));
    j->ref = malloc(5 * n * sizeof(double));
    j->got = malloc(5 * n * sizeof(double));
    if (!j->rows || !j->cols || !j->ref || !j->got) {
        ptreg_tune_pair_job_destroy(j);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tune pair: out of memory for %zu points", n);
    }
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 17);
    for (size_t i = 0; i < 3 * n; i++) {
        j->cols[i] = (float)ptreg_rng_uniform(&rng);
        j->rows[i] = (float)(ptreg_rng_uniform(&rng) * 1.1 - 0.05);
    }
    j->scale = 0.5 / (0.03 * 0.25); /* sigma^2 = 0.03 r^2 of a unit cube: EM-ICP's middle */
    ptreg_pair_options o;
    ptreg_pair_options_default(&o);
    o.precision = j->precision;
    ptreg_status st = sums(j, &o, j->ref, err);
    if (st) {
        ptreg_tune_pair_job_destroy(j);
        return st;
    }
    *out = j;
    return PTREG_OK;
}

void ptreg_tune_pair_apply(const double *point, ptreg_pair_options *o, int *threads)
{
    o->col_tile = (int)point[P_COL_TILE];
    o->row_block = (int)point[P_ROW_BLOCK];
    o->row_vectors = (int)point[P_ROW_VECTORS];
    o->order = point[P_ORDER] != 0 ? PTREG_PAIR_TILES_OUTSIDE : PTREG_PAIR_TILES_INSIDE;
    *threads = (int)point[P_THREADS];
}

/* One run of the candidate's options (tune_run_fn). */
typedef struct pair_run {
    ptreg_tune_pair_job *job;
    ptreg_pair_options o;
} pair_run;

static ptreg_status run_sums(void *ctx, ptreg_error *err)
{
    pair_run *r = ctx;
    return sums(r->job, &r->o, r->job->got, err);
}

ptreg_status ptreg_tune_pair_measure(void *ctx, const double *point, int reps, double *seconds, double *error,
                                     ptreg_error *err)
{
    ptreg_tune_pair_job *j = ctx;
    pair_run run = {j, {0}};
    ptreg_pair_options_default(&run.o);
    run.o.precision = j->precision;
    int threads;
    ptreg_tune_pair_apply(point, &run.o, &threads);
    ptreg_status st = tune_time_runs(run_sums, &run, threads, reps, seconds, err);
    if (!st)
        *error = tune_normalised_error(j->ref, j->got, 5 * j->n);
    return st;
}
