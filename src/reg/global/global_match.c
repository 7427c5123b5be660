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

/* A row's squared norm (double: the estimates' bound needs no more). */
static double norm2(const float *row, int dim)
{
    double n = 0.0;
    for (int k = 0; k < dim; k++)
        n += (double)row[k] * row[k];
    return n;
}

/* The largest squared norm of rows without a NaN, as a float (infinite
 * past float range). */
static float max_norm2(const float *rows, size_t n, int dim, const unsigned char *nan_rows)
{
    double most = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double n2 = nan_rows[i] ? 0.0 : norm2(rows + i * (size_t)dim, dim);
        most = n2 > most ? n2 : most;
    }
    return (float)most;
}

/* The largest of the columns' squared norms (b2; a NaN column's infinite
 * one left out). */
static float max_column_norm2(const float *b2, size_t nb, const unsigned char *b_nan)
{
    float most = 0.0f;
    for (size_t j = 0; j < nb; j++)
        most = !b_nan[j] && b2[j] > most ? b2[j] : most;
    return most;
}

/* b's rows as columns (dim x nb; a NaN row zeros) and their squared norms
 * (a NaN row infinite: nobody's nearest), for the scan's estimates. */
static ptreg_status columns_of(const float *b, size_t nb, int dim, const unsigned char *b_nan, float **bt, float **b2,
                               ptreg_error *err)
{
    *bt = malloc((size_t)dim * (nb ? nb : 1) * sizeof **bt);
    *b2 = malloc((nb ? nb : 1) * sizeof **b2);
    if (!*bt || !*b2)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    for (size_t j = 0; j < nb; j++) {
        (*b2)[j] = b_nan[j] ? INFINITY : (float)norm2(b + j * (size_t)dim, dim);
        for (int k = 0; k < dim; k++)
            (*bt)[(size_t)k * nb + j] = b_nan[j] ? 0.0f : b[j * (size_t)dim + k];
    }
    return PTREG_OK;
}

/* What a scan answers: each row's nearest column; with col_best each
 * column's nearest row; with row_second each row's second least distance. */
typedef struct match_answers {
    uint32_t *row_best, *col_best;
    float *row_second;
} match_answers;

#define MATCH_UNITS 16 /* units of work, each with its own columns' estimates: memory 16 x 20 bytes per column */

/* (v, row) into a column's three least (l) and the rows of the first two
 * (r): a tie goes after. */
static void insert_least(float l[3], uint32_t r[2], float v, uint32_t row)
{
    if (!(v < l[2]))
        return;
    int at = 2;
    for (; at > 0 && v < l[at - 1]; at--) {
        l[at] = l[at - 1];
        if (at < 2)
            r[at] = r[at - 1];
    }
    l[at] = v;
    if (at < 2)
        r[at] = row;
}

/* The matching's inputs as the column resolution reads them. */
typedef struct match_rows {
    const float *a, *b;
    const unsigned char *a_nan, *b_nan;
    size_t na, nb;
    int dim;
    float a2max;
    const float *b2; /* the columns' squared norms (columns_of) */
} match_rows;

/* Column j's nearest row by exact distances (ties: the lower row), every
 * row estimated (at: a transposed, a NaN row zeros; a2: the rows' squared
 * norms, a NaN row infinite) and measured within twice the bound of the
 * least estimate. */
static uint32_t column_by_scan(const match_rows *m, const float *at, const float *a2, float *est, size_t j)
{
    const float *y = m->b + j * (size_t)m->dim;
    const float y2 = m->b2[j], margin = 2.0f * desc_scan_bound(m->dim, m->a2max, y2);
    global_cpu_kernels()->desc_column_estimates(at, a2, m->na, y, y2, m->dim, est);
    float least = INFINITY, best = INFINITY;
    for (size_t i = 0; i < m->na; i++)
        least = est[i] < least ? est[i] : least;
    uint32_t arg = UINT32_MAX;
    for (size_t i = 0; i < m->na; i++) {
        if (m->a_nan[i] || est[i] > least + margin)
            continue;
        const float e = desc_dist2(m->a + i * (size_t)m->dim, y, m->dim);
        if (e < best)
            best = e, arg = (uint32_t)i;
    }
    return arg;
}

/* Column j's nearest row from its three least estimates over all rows
 * (l, r): the nearer by exact distance of the first two rows (ties: the
 * lower row) when every other row's estimate lies beyond that distance
 * plus the bound; else COLUMN_UNDECIDED. */
#define COLUMN_UNDECIDED (UINT32_MAX - 1)
static uint32_t column_by_estimates(const match_rows *m, size_t j, const float l[3], const uint32_t r[2])
{
    const float *y = m->b + j * (size_t)m->dim;
    float best = INFINITY;
    uint32_t arg = UINT32_MAX;
    if (m->b_nan[j] || !(l[0] < INFINITY))
        return UINT32_MAX;
    for (int c = 0; c < 2 && l[c] < INFINITY; c++) {
        if (r[c] == UINT32_MAX) /* cannot happen (a unit's third follows its two): measure all */
            return COLUMN_UNDECIDED;
        const float e = desc_dist2(m->a + r[c] * (size_t)m->dim, y, m->dim);
        if (e < best || (e == best && r[c] < arg))
            best = e, arg = r[c];
    }
    return l[2] > best + desc_scan_bound(m->dim, m->a2max, m->b2[j]) ? arg : COLUMN_UNDECIDED;
}

/* Each column's three least estimates over all rows and the rows of the
 * first two (l, r: 3 and 2 per column), merged from the units' in unit
 * (row) order, unit by unit: the reads run along memory. */
static void merge_units(const desc_columns *units_col, size_t units, size_t nb, float *l, uint32_t *r)
{
    for (size_t j = 0; j < nb; j++)
        l[3 * j] = l[3 * j + 1] = l[3 * j + 2] = INFINITY, r[2 * j] = r[2 * j + 1] = UINT32_MAX;
    for (size_t u = 0; u < units; u++)
        for (size_t j = 0, at_u = u * nb; j < nb; j++, at_u++) {
            insert_least(l + 3 * j, r + 2 * j, units_col->least[0][at_u], units_col->row[0][at_u]);
            insert_least(l + 3 * j, r + 2 * j, units_col->least[1][at_u], units_col->row[1][at_u]);
            insert_least(l + 3 * j, r + 2 * j, units_col->least[2][at_u], UINT32_MAX); /* after its unit's two */
        }
}

/* The source transposed (a NaN row zeros) and its rows' squared norms (a
 * NaN row infinite), for column scans. */
static ptreg_status rows_transposed(const match_rows *m, float **at, float **a2, ptreg_error *err)
{
    *at = malloc((size_t)m->dim * (m->na ? m->na : 1) * sizeof **at);
    *a2 = malloc((m->na ? m->na : 1) * sizeof **a2);
    if (!*at || !*a2)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    for (size_t i = 0; i < m->na; i++) {
        (*a2)[i] = m->a_nan[i] ? INFINITY : (float)norm2(m->a + i * (size_t)m->dim, m->dim);
        for (int k = 0; k < m->dim; k++)
            (*at)[(size_t)k * m->na + i] = m->a_nan[i] ? 0.0f : m->a[i * (size_t)m->dim + k];
    }
    return PTREG_OK;
}

/* The undecided columns by scans, split over threads (a thread without
 * memory for its estimates leaves its columns undecided). */
static void scan_undecided(const match_rows *m, const float *at, const float *a2, uint32_t *col_best)
{
#pragma omp parallel num_threads(ptreg_get_num_threads())
    {
        float *est = malloc((m->na ? m->na : 1) * sizeof *est);
#pragma omp for schedule(dynamic, 8)
        for (long j = 0; j < (long)m->nb; j++)
            if (est && col_best[j] == COLUMN_UNDECIDED)
                col_best[j] = column_by_scan(m, at, a2, est, (size_t)j);
        free(est);
    }
}

/* Each column's nearest row (ties: the lower row; none: UINT32_MAX) from
 * the units' three least estimates, else by a scan of the column; columns
 * split over threads, each answer its column's alone. */
static ptreg_status columns_nearest(const match_rows *m, const desc_columns *units_col, size_t units,
                                    uint32_t *col_best, ptreg_error *err)
{
    float *l = malloc(3 * (m->nb ? m->nb : 1) * sizeof *l), *at = NULL, *a2 = NULL;
    uint32_t *r = malloc(2 * (m->nb ? m->nb : 1) * sizeof *r);
    ptreg_status st = l && r ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    if (!st)
        merge_units(units_col, units, m->nb, l, r);
    int undecided = 0;
    if (!st) {
#pragma omp parallel for schedule(static) num_threads(ptreg_get_num_threads()) reduction(| : undecided)
        for (long j = 0; j < (long)m->nb; j++) {
            col_best[j] = column_by_estimates(m, (size_t)j, l + 3 * j, r + 2 * j);
            undecided |= col_best[j] == COLUMN_UNDECIDED;
        }
    }
    st = st || !undecided ? st : rows_transposed(m, &at, &a2, err);
    if (!st && undecided)
        scan_undecided(m, at, a2, col_best);
    for (size_t j = 0; !st && j < m->nb; j++)
        if (col_best[j] == COLUMN_UNDECIDED)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory");
    free(l), free(r), free(at), free(a2);
    return st;
}

/* The scan (whole: rows 0 .. r1) cut into units of per_unit rows, each
 * with its own columns' estimates and scratch rows, on threads. */
static void scan_units(const desc_scan *whole, size_t units, size_t per_unit)
{
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long u = 0; u < (long)units; u++) {
        const size_t r0 = (size_t)u * per_unit, r1 = r0 + per_unit < whole->r1 ? r0 + per_unit : whole->r1,
                     off = (size_t)u * whole->nb;
        desc_columns unit_col;
        desc_scan scan = *whole;
        scan.r0 = r0, scan.r1 = r1;
        scan.rows = whole->rows + (size_t)u * DESC_SCAN_ROWS * (size_t)whole->dim;
        if (whole->col) {
            for (int c = 0; c < 3; c++)
                unit_col.least[c] = whole->col->least[c] + off;
            unit_col.row[0] = whole->col->row[0] + off, unit_col.row[1] = whole->col->row[1] + off;
            scan.col = &unit_col;
        }
        global_cpu_kernels()->desc_scan_rows(&scan);
    }
}

/* Every row's nearest column and, with col_best, every column's nearest
 * row, from one pass of estimates: MATCH_UNITS runs of rows go to threads,
 * each with its own columns' least estimates, merged in unit order: the
 * same answer for any thread count. */
static ptreg_status nearest_both(const float *a, size_t na, const unsigned char *a_nan, const float *b, size_t nb,
                                 const unsigned char *b_nan, int dim, const match_answers *ans, ptreg_error *err)
{
    const int cols = ans->col_best != NULL;
    const size_t units = na < MATCH_UNITS ? na : MATCH_UNITS, per_unit = units ? (na + units - 1) / units : 0;
    const size_t slots = cols ? (units ? units : 1) * nb + 1 : 1;
    desc_columns col = {{malloc(slots * sizeof(float)), malloc(slots * sizeof(float)), malloc(slots * sizeof(float))},
                        {malloc(slots * sizeof(uint32_t)), malloc(slots * sizeof(uint32_t))}};
    float *bt = NULL, *b2 = NULL, *rows = malloc((units ? units : 1) * DESC_SCAN_ROWS * (size_t)dim * sizeof *rows);
    ptreg_status st = !col.least[0] || !col.least[1] || !col.least[2] || !col.row[0] || !col.row[1] || !rows
                          ? ptreg_error_set(err, PTREG_ERR_NOMEM, "feature matching: out of memory")
                          : columns_of(b, nb, dim, b_nan, &bt, &b2, err);
    const match_rows m = {a, b, a_nan, b_nan, na, nb, dim, max_norm2(a, na, dim, a_nan), b2};
    const float bound = st ? 0.0f : desc_scan_bound(dim, m.a2max, max_column_norm2(b2, nb, b_nan));
    for (size_t k = 0; !st && cols && k < units * nb; k++) {
        col.least[0][k] = col.least[1][k] = col.least[2][k] = INFINITY;
        col.row[0][k] = col.row[1][k] = UINT32_MAX;
    }
    if (!st)
        scan_units(&(desc_scan){a, b, bt, b2, a_nan, b_nan, bound, 0, na, nb, dim, ans->row_best, ans->row_second,
                                cols ? &col : NULL, rows},
                   units, per_unit);
    st = st || !cols ? st : columns_nearest(&m, &col, units, ans->col_best, err);
    for (int c = 0; c < 3; c++)
        free(col.least[c]);
    free(col.row[0]), free(col.row[1]), free(rows), free(bt), free(b2);
    return st;
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
    return nearest_both(source, ns, s_nan, target, nt, t_nan, dim, ans, err);
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
