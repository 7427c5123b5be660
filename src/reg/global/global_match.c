/* Feature matches (global.h, ptreg_match_features): each descriptor's
 * nearest on the other side, mutual or one way, on the CPU or a device.
 * Part of global registration, with ransac.c, fgr.c, register.c (the pipeline) and global.c (the options). */
#include "ptreg/global.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reg/global/global_impl.h"
#include "reg/global/global_kernels.h"
#include "reg/global/match_device.h"

void ptreg_matches_free(ptreg_matches *m)
{
    if (!m)
        return;
    free(m->source);
    free(m->target);
    memset(m, 0, sizeof *m);
}

/* ---- nearest descriptors ---- */

static int row_is_nan(const float *row, int dim)
{
    for (int k = 0; k < dim; k++)
        if (isnan(row[k]))
            return 1;
    return 0;
}

/* b's rows as columns (dim x nb), a NaN row as infinities: it is then
 * nobody's nearest. */
static float *columns_of(const float *b, size_t nb, int dim, const unsigned char *b_nan)
{
    float *bt = malloc((size_t)dim * (nb ? nb : 1) * sizeof *bt);
    for (size_t j = 0; bt && j < nb; j++)
        for (int k = 0; k < dim; k++)
            bt[(size_t)k * nb + j] = b_nan[j] ? INFINITY : b[j * (size_t)dim + k];
    return bt;
}

/* What a scan answers: each row's nearest column; with col_best each
 * column's nearest row; with row_second each row's second least distance. */
typedef struct match_answers {
    uint32_t *row_best, *col_best;
    float *row_second;
} match_answers;

#define MATCH_UNITS 64 /* units of work, each with its own columns' best: memory 64 x 8 bytes per column */

/* (d, i) beats (bd, bi): nearer, or as near and a lower index. */
static int nearer(float d, uint32_t i, float bd, uint32_t bi) { return d < bd || (d == bd && i < bi); }

/* Every row's nearest column and, with col_best, every column's nearest
 * row, from one pass over the distances: MATCH_UNITS runs of rows go to
 * threads, each with its own columns' best, merged in unit order: the
 * same answer for any thread count. */
static ptreg_status nearest_both(const float *a, size_t na, const unsigned char *a_nan, const float *bt, size_t nb,
                                 int dim, const match_answers *ans, ptreg_error *err)
{
    uint32_t *col_best = ans->col_best;
    const size_t units = na < MATCH_UNITS ? na : MATCH_UNITS, per_unit = units ? (na + units - 1) / units : 0;
    float *cd = col_best ? malloc((units ? units : 1) * nb * sizeof *cd) : NULL;
    uint32_t *ci = col_best ? malloc((units ? units : 1) * nb * sizeof *ci) : NULL;
    float *rows = malloc((units ? units : 1) * DESC_SCAN_ROWS * (size_t)dim * sizeof *rows);
    if ((col_best && (!cd || !ci)) || !rows) {
        free(cd), free(ci), free(rows);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    }
    for (size_t k = 0; cd && k < units * nb; k++)
        cd[k] = INFINITY, ci[k] = UINT32_MAX;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long u = 0; u < (long)units; u++) {
        const size_t r0 = (size_t)u * per_unit, r1 = r0 + per_unit < na ? r0 + per_unit : na;
        const desc_scan scan = {a,
                                bt,
                                a_nan,
                                r0,
                                r1,
                                nb,
                                dim,
                                ans->row_best,
                                ans->row_second,
                                cd ? cd + (size_t)u * nb : NULL,
                                ci ? ci + (size_t)u * nb : NULL,
                                rows + (size_t)u * DESC_SCAN_ROWS * (size_t)dim};
        global_cpu_kernels()->desc_scan_rows(&scan);
    }
    for (size_t j = 0; col_best && j < nb; j++) {
        float bd = INFINITY;
        uint32_t bi = UINT32_MAX;
        for (size_t u = 0; u < units; u++)
            if (ci[u * nb + j] != UINT32_MAX && nearer(cd[u * nb + j], ci[u * nb + j], bd, bi))
                bd = cd[u * nb + j], bi = ci[u * nb + j];
        col_best[j] = bi;
    }
    free(cd), free(ci), free(rows);
    return PTREG_OK;
}

/* Where the matching runs: the CPU, or a GPU whose arithmetic is the
 * CPU's (match_device.c). */
static const engine *const match_engines[] = {&engine_cpu, &match_device_engine};

/* Every row's nearest column (and with col_best every column's nearest
 * row) on device `on`: the CPU's scan, or the device's, with one answer. */
static ptreg_status nearest_on(const ptreg_device *on, const float *source, size_t ns, const unsigned char *s_nan,
                               const float *target, size_t nt, const unsigned char *t_nan, int dim,
                               const match_answers *ans, ptreg_error *err)
{
    if (on->backend != PTREG_BACKEND_CPU)
        return match_device_nearest(on, source, ns, s_nan, target, nt, t_nan, dim, ans->row_best, ans->col_best,
                                    ans->row_second, err);
    float *tt = columns_of(target, nt, dim, t_nan);
    ptreg_status st = tt ? nearest_both(source, ns, s_nan, tt, nt, dim, ans, err)
                         : ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    free(tt);
    return st;
}

/* The squared distance of two descriptors, as the scans sum it. */
static float desc_dist2(const float *a, const float *b, int dim)
{
    float d = 0.0f;
    for (int k = 0; k < dim; k++)
        d += (a[k] - b[k]) * (a[k] - b[k]);
    return d;
}

/* Lowe's ratio test, on squared distances: the nearest nearer than ratio
 * times the second least (a tie fails; no second: passes). */
static int passes_ratio(float nearest, float second, double ratio)
{
    return !(second < INFINITY) || (double)nearest < ratio * ratio * (double)second;
}

/* ptreg_match_features on device `on` (resolved over match_engines), and
 * with ratio > 0 Lowe's ratio test. */
ptreg_status match_features_on(const ptreg_device *on, const float *source, size_t ns, const float *target, size_t nt,
                               int dim, int mutual, double ratio, ptreg_matches *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    if (dim < 1 || ns >= UINT32_MAX || nt >= UINT32_MAX || !(ratio >= 0.0 && ratio <= 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "feature matching: dimension %d, sizes or ratio %g (in [0, 1]) out of range", dim,
                               ratio);
    uint32_t *fwd = malloc((ns ? ns : 1) * sizeof *fwd), *back = malloc((nt ? nt : 1) * sizeof *back);
    float *second = ratio > 0.0 ? malloc((ns ? ns : 1) * sizeof *second) : NULL;
    unsigned char *s_nan = malloc(ns ? ns : 1), *t_nan = malloc(nt ? nt : 1);
    out->source = malloc((ns ? ns : 1) * sizeof *out->source);
    out->target = malloc((ns ? ns : 1) * sizeof *out->target);
    ptreg_status st = fwd && back && s_nan && t_nan && out->source && out->target && (second || ratio == 0.0)
                          ? PTREG_OK
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    const match_answers ans = {fwd, mutual ? back : NULL, second};
    for (size_t i = 0; !st && i < ns; i++)
        s_nan[i] = (unsigned char)row_is_nan(source + i * (size_t)dim, dim);
    for (size_t j = 0; !st && j < nt; j++)
        t_nan[j] = (unsigned char)row_is_nan(target + j * (size_t)dim, dim);
    st = st ? st : nearest_on(on, source, ns, s_nan, target, nt, t_nan, dim, &ans, err);
    for (size_t i = 0; !st && i < ns; i++) {
        const uint32_t j = fwd[i];
        /* a NaN target row is at infinity: only a NaN-free source row can
         * be matched, and only to a finite distance */
        if (j == UINT32_MAX || t_nan[j] || (mutual && back[j] != (uint32_t)i) ||
            (second &&
             !passes_ratio(desc_dist2(source + i * (size_t)dim, target + j * (size_t)dim, dim), second[i], ratio)))
            continue;
        out->source[out->count] = (uint32_t)i;
        out->target[out->count++] = j;
    }
    free(fwd), free(back), free(second), free(s_nan), free(t_nan);
    if (st)
        ptreg_matches_free(out);
    return st;
}

ptreg_status ptreg_match_features(const float *source, size_t ns, const float *target, size_t nt, int dim, int mutual,
                                  ptreg_matches *out, ptreg_error *err)
{
    const ptreg_device cpu = {PTREG_BACKEND_CPU, 0};
    return match_features_on(&cpu, source, ns, target, nt, dim, mutual, 0.0, out, err);
}

ptreg_status match_choose_device(const ptreg_device *request, ptreg_device *on, ptreg_error *err)
{
    return engine_choose(match_engines, 2, request, NULL, "feature matching", on, NULL, err);
}

PTREG_ISA_TABLE(global_cpu_kernel_table, global_cpu_kernels, GLOBAL_CPU_KERNELS)
