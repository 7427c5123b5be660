/* The pair engine's driver: packing, row blocks in parallel, the per-ISA
 * kernel, and the float64 reference path. */
#include "ptreg/pair.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/cpu.h"
#include "pair/lddmm_kernels.h"
#include "pair/pair_kernels.h"
#include "pair/pair_options.h"
#include "pair/testing.h"
#include "pair/pair_engine.h"

struct ptreg_pair_plan {
    ptreg_pair_options opt;
    isa_level isa;
    size_t m;
    double center[3];       /* the columns' centroid: every point is packed relative to it */
    float *cx, *cy, *cz;    /* float32 mode */
    uint16_t *hx, *hy, *hz; /* float16 mode */
    double *dx, *dy, *dz;   /* float64 mode */
    /* Per-call workspace, grown as needed: padded rows and row sums. */
    size_t rows_cap;
    float *rx, *ry, *rz;
    double *se, *se2, *sbx, *sby, *sbz;
    float *tiles; /* one column tile of scratch per thread */
    int tiles_threads;
};

const ptreg_option_name pair_precision_names[] = {
    {"fp32", PTREG_PRECISION_FP32}, {"fp64", PTREG_PRECISION_FP64}, {"fp16", PTREG_PRECISION_FP16}, {NULL, 0}};
const ptreg_option_name pair_order_names[] = {
    {"tiles-inside", PTREG_PAIR_TILES_INSIDE}, {"tiles-outside", PTREG_PAIR_TILES_OUTSIDE}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_pair_options, precision);
OPTION_ENUM_IS_INT(ptreg_pair_options, order);
static const ptreg_option pair_rows[] = {PAIR_OPTION_ROWS(0)};
OPTION_TABLE(ptreg_pair_option_table, "pair options", ptreg_pair_options, ptreg_pair_options_default, pair_rows)

OPTION_ENUM_FUNCTIONS(ptreg_precision, pair_precision_names, "fp32", ptreg_precision_name, ptreg_precision_parse)

void ptreg_pair_options_default(ptreg_pair_options *opt)
{
    opt->row_block = 512;
    opt->col_tile = 1024;
    opt->row_vectors = 2;
    opt->order = PTREG_PAIR_TILES_INSIDE;
    opt->precision = PTREG_PRECISION_FP32;
    ptreg_pair_gpu_default(&opt->gpu);
}

void ptreg_pair_gpu_default(ptreg_pair_gpu *gpu) { *gpu = (ptreg_pair_gpu){0, -1, 0}; }

ptreg_status ptreg_pair_gpu_check(const ptreg_pair_gpu *gpu, const char *who, ptreg_error *err)
{
    if (gpu->wg != 0 && gpu->wg != 32 && gpu->wg != 64 && gpu->wg != 128 && gpu->wg != 256)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: gpu.wg %d is not 32, 64, 128 or 256 (0: 128)", who, gpu->wg);
    if (gpu->exp < -1 || gpu->exp > 1)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: gpu.exp %d is not -1, 0 or 1", who, gpu->exp);
    if (gpu->groups < 0 || gpu->groups > 64)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: gpu.groups %d is not in 0..64", who, gpu->groups);
    return PTREG_OK;
}

ptreg_status ptreg_pair_options_check(const ptreg_pair_options *opt, ptreg_error *err)
{
    const ptreg_status st = ptreg_options_check(ptreg_pair_option_table(), opt, err);
    return st ? st : ptreg_pair_gpu_check(&opt->gpu, "pair options", err);
}

void ptreg_pair_plan_destroy(ptreg_pair_plan *plan)
{
    if (!plan)
        return;
    void *owned[] = {plan->cx, plan->cy, plan->cz, plan->hx, plan->hy,  plan->hz,  plan->dx,  plan->dy,  plan->dz,
                     plan->rx, plan->ry, plan->rz, plan->se, plan->se2, plan->sbx, plan->sby, plan->sbz, plan->tiles};
    for (size_t k = 0; k < sizeof owned / sizeof owned[0]; k++)
        free(owned[k]);
    free(plan);
}

const char *ptreg_pair_plan_isa(const ptreg_pair_plan *plan) { return isa_level_name(plan->isa); }

static ptreg_status check_points(const char *what, const double *p, size_t n, ptreg_error *err)
{
    for (size_t i = 0; i < 3 * n; i++)
        if (!isfinite(p[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: %s point %zu is not finite", what, i / 3);
    return PTREG_OK;
}

/* Rounds a coordinate the way the plan stores it. */
static float stored_float(const ptreg_pair_plan *plan, double v)
{
    const float f = (float)v;
    return plan->opt.precision == PTREG_PRECISION_FP16 ? half_to_float(half_from_float(f)) : f;
}

static ptreg_status pack_columns(ptreg_pair_plan *plan, const float *cols, size_t m, ptreg_error *err)
{
    double sum[3] = {0, 0, 0};
    for (size_t j = 0; j < m; j++)
        for (int k = 0; k < 3; k++) {
            if (!isfinite(cols[3 * j + k]))
                return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: column point %zu is not finite", j);
            sum[k] += cols[3 * j + k];
        }
    for (int k = 0; k < 3; k++)
        plan->center[k] = sum[k] / (double)m;
    const ptreg_precision prec = plan->opt.precision;
    if (prec == PTREG_PRECISION_FP64) {
        plan->dx = malloc(m * sizeof(double));
        plan->dy = malloc(m * sizeof(double));
        plan->dz = malloc(m * sizeof(double));
        if (!plan->dx || !plan->dy || !plan->dz)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu columns", m);
        for (size_t j = 0; j < m; j++) {
            plan->dx[j] = cols[3 * j] - plan->center[0];
            plan->dy[j] = cols[3 * j + 1] - plan->center[1];
            plan->dz[j] = cols[3 * j + 2] - plan->center[2];
        }
        return PTREG_OK;
    }
    if (prec == PTREG_PRECISION_FP16) {
        uint16_t **dst[3] = {&plan->hx, &plan->hy, &plan->hz};
        for (int k = 0; k < 3; k++) {
            *dst[k] = malloc(m * sizeof(uint16_t));
            if (!*dst[k])
                return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu columns", m);
            for (size_t j = 0; j < m; j++)
                (*dst[k])[j] = half_from_float((float)(cols[3 * j + k] - plan->center[k]));
        }
        return PTREG_OK;
    }
    float **dst[3] = {&plan->cx, &plan->cy, &plan->cz};
    for (int k = 0; k < 3; k++) {
        *dst[k] = malloc(m * sizeof(float));
        if (!*dst[k])
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu columns", m);
        for (size_t j = 0; j < m; j++)
            (*dst[k])[j] = (float)(cols[3 * j + k] - plan->center[k]);
    }
    return PTREG_OK;
}

ptreg_status ptreg_pair_plan_create(const float *cols, size_t m, const ptreg_pair_options *opt, ptreg_pair_plan **out,
                                    ptreg_error *err)
{
    *out = NULL;
    ptreg_pair_options defaults;
    if (!opt) {
        ptreg_pair_options_default(&defaults);
        opt = &defaults;
    }
    ptreg_status st = ptreg_pair_options_check(opt, err);
    if (st)
        return st;
    if (m == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: no column points");
    ptreg_pair_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory");
    plan->opt = *opt;
    plan->opt.row_block = (opt->row_block + PTREG_PAIR_ROW_PAD - 1) / PTREG_PAIR_ROW_PAD * PTREG_PAIR_ROW_PAD;
    plan->isa = cpu_isa_level();
    plan->m = m;
    st = pack_columns(plan, cols, m, err);
    if (st) {
        ptreg_pair_plan_destroy(plan);
        return st;
    }
    *out = plan;
    return PTREG_OK;
}

static ptreg_status reserve_rows(ptreg_pair_plan *plan, size_t padded, int threads, ptreg_error *err)
{
    if (padded > plan->rows_cap) {
        float **f[] = {&plan->rx, &plan->ry, &plan->rz};
        double **d[] = {&plan->se, &plan->se2, &plan->sbx, &plan->sby, &plan->sbz};
        for (size_t k = 0; k < 3; k++) {
            free(*f[k]);
            *f[k] = malloc(padded * sizeof(float));
        }
        for (size_t k = 0; k < 5; k++) {
            free(*d[k]);
            *d[k] = malloc(padded * sizeof(double));
        }
        plan->rows_cap = padded;
        for (size_t k = 0; k < 3; k++)
            if (!*f[k])
                plan->rows_cap = 0;
        for (size_t k = 0; k < 5; k++)
            if (!*d[k])
                plan->rows_cap = 0;
        if (!plan->rows_cap)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu rows", padded);
    }
    if (plan->opt.precision == PTREG_PRECISION_FP16 && threads > plan->tiles_threads) {
        free(plan->tiles);
        plan->tiles = malloc((size_t)threads * 3 * (size_t)plan->opt.col_tile * sizeof(float));
        plan->tiles_threads = plan->tiles ? threads : 0;
        if (!plan->tiles)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for column tiles");
    }
    return PTREG_OK;
}

static int thread_index(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Float32/float16 path: rows packed centred, padded with copies of row 0. */
static void gauss_vector(ptreg_pair_plan *plan, size_t padded, double scale, int threads)
{
    const size_t rb = (size_t)plan->opt.row_block;
    const size_t blocks = (padded + rb - 1) / rb;
    void (*kernel)(const pair_gauss_block *) = pair_cpu_kernels_for(plan->isa)->pair_gauss_block;
    const float f = pair_exp2_factor(scale);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t b = 0; b < blocks; b++) {
        const size_t r0 = b * rb, nr = padded - r0 < rb ? padded - r0 : rb;
        pair_gauss_block blk = {
            .rx = plan->rx + r0,
            .ry = plan->ry + r0,
            .rz = plan->rz + r0,
            .nr = nr,
            .cx = plan->cx,
            .cy = plan->cy,
            .cz = plan->cz,
            .hx = plan->hx,
            .hy = plan->hy,
            .hz = plan->hz,
            .m = plan->m,
            .neg_scale_log2e = f,
            .col_tile = plan->opt.col_tile,
            .row_vectors = plan->opt.row_vectors,
            .tiles_outside = plan->opt.order == PTREG_PAIR_TILES_OUTSIDE,
            .tile = plan->tiles ? plan->tiles + (size_t)thread_index() * 3 * (size_t)plan->opt.col_tile : NULL,
            .se = plan->se + r0,
            .se2 = plan->se2 + r0,
            .sbx = plan->sbx + r0,
            .sby = plan->sby + r0,
            .sbz = plan->sbz + r0,
        };
        kernel(&blk);
    }
}

/* Float64 reference path: libm exp, every sum in double, row by row. */
static void gauss_double(ptreg_pair_plan *plan, const double *rows, size_t n, double scale, int threads)
{
    const size_t rb = (size_t)plan->opt.row_block;
    const size_t blocks = (n + rb - 1) / rb;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (size_t b = 0; b < blocks; b++) {
        const size_t end = (b + 1) * rb < n ? (b + 1) * rb : n;
        for (size_t i = b * rb; i < end; i++) {
            const double ax = rows[3 * i] - plan->center[0], ay = rows[3 * i + 1] - plan->center[1],
                         az = rows[3 * i + 2] - plan->center[2];
            double se = 0, se2 = 0, sx = 0, sy = 0, sz = 0;
            for (size_t j = 0; j < plan->m; j++) {
                const double dx = ax - plan->dx[j], dy = ay - plan->dy[j], dz = az - plan->dz[j];
                const double e = exp(-scale * (dx * dx + dy * dy + dz * dz));
                se += e;
                se2 += e * e;
                sx += e * plan->dx[j];
                sy += e * plan->dy[j];
                sz += e * plan->dz[j];
            }
            plan->se[i] = se;
            plan->se2[i] = se2;
            plan->sbx[i] = sx;
            plan->sby[i] = sy;
            plan->sbz[i] = sz;
        }
    }
}

ptreg_status ptreg_pair_gauss(ptreg_pair_plan *plan, const double *rows, size_t n, double scale, double *sum_e,
                              double *sum_e2, double *sum_eb, ptreg_error *err)
{
    if (!(scale > 0.0) || !isfinite(scale))
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: scale %g must be finite and > 0", scale);
    if (plan->opt.precision != PTREG_PRECISION_FP64 && scale > 3.4e38)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pair engine: scale %g overflows float32", scale);
    if (n == 0)
        return PTREG_OK;
    ptreg_status st = check_points("row", rows, n, err);
    if (st)
        return st;
    const int threads = ptreg_get_num_threads();
    const size_t padded = (n + PTREG_PAIR_ROW_PAD - 1) / PTREG_PAIR_ROW_PAD * PTREG_PAIR_ROW_PAD;
    st = reserve_rows(plan, padded, threads, err);
    if (st)
        return st;
    if (plan->opt.precision == PTREG_PRECISION_FP64) {
        gauss_double(plan, rows, n, scale, threads);
    } else {
        for (size_t i = 0; i < padded; i++) {
            const size_t s = i < n ? i : 0;
            plan->rx[i] = stored_float(plan, rows[3 * s] - plan->center[0]);
            plan->ry[i] = stored_float(plan, rows[3 * s + 1] - plan->center[1]);
            plan->rz[i] = stored_float(plan, rows[3 * s + 2] - plan->center[2]);
        }
        gauss_vector(plan, padded, scale, threads);
    }
    for (size_t i = 0; i < n; i++) {
        sum_e[i] = plan->se[i];
        sum_e2[i] = plan->se2[i];
        /* The columns were centred: sum e (b - c) + c sum e. */
        sum_eb[3 * i] = plan->sbx[i] + plan->center[0] * plan->se[i];
        sum_eb[3 * i + 1] = plan->sby[i] + plan->center[1] * plan->se[i];
        sum_eb[3 * i + 2] = plan->sbz[i] + plan->center[2] * plan->se[i];
    }
    return PTREG_OK;
}

ptreg_status ptreg_pair_gauss_sums(const float *rows, size_t n, const float *cols, size_t m, double scale,
                                   const ptreg_pair_options *opt, double *sum_e, double *sum_e2, double *sum_eb,
                                   ptreg_error *err)
{
    ptreg_pair_plan *plan;
    ptreg_status st = ptreg_pair_plan_create(cols, m, opt, &plan, err);
    if (st)
        return st;
    double *r = malloc((n ? n : 1) * 3 * sizeof(double));
    if (!r) {
        ptreg_pair_plan_destroy(plan);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pair engine: out of memory for %zu rows", n);
    }
    for (size_t i = 0; i < 3 * n; i++)
        r[i] = rows[i];
    st = ptreg_pair_gauss(plan, r, n, scale, sum_e, sum_e2, sum_eb, err);
    free(r);
    ptreg_pair_plan_destroy(plan);
    return st;
}

void ptreg_pair_exp(const float *in, float *out, size_t n) { pair_cpu_kernels()->pair_exp_array(in, out, n); }

PTREG_ISA_TABLE(pair_cpu_kernel_table, pair_cpu_kernels, PAIR_CPU_KERNELS)
PTREG_ISA_TABLE(lddmm_cpu_kernel_table, lddmm_cpu_kernels, LDDMM_CPU_KERNELS)
