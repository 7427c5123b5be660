/* The Gauss transform (pair_engine.h): weighted Gaussian sums over every
 * (row, column) pair, the products with a Gaussian kernel matrix that
 * Coherent Point Drift's E-step and its deformable M-step need, in
 * O(n + m) memory. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/core.h"
#include "pair/pair_engine.h"
#include "pair/pair_kernels.h"

/* Everything one call packs: float32 rows and columns centred on the
 * columns' centroid, the weights by channel, the tiles' boxes, the sums. */
typedef struct packed {
    size_t padded;
    float *rx, *ry, *rz, *cx, *cy, *cz, *w[PTREG_PAIR_MAX_CHANNELS], *boxes;
    double *out[PTREG_PAIR_MAX_CHANNELS];
} packed;

static void packed_free(packed *p)
{
    free(p->rx), free(p->ry), free(p->rz), free(p->cx), free(p->cy), free(p->cz), free(p->boxes);
    for (int c = 0; c < PTREG_PAIR_MAX_CHANNELS; c++)
        free(p->w[c]), free(p->out[c]);
}

static void columns_centroid(const double *cols, size_t m, double c[3])
{
    double s[3] = {0, 0, 0};
    for (size_t j = 0; j < m; j++)
        for (int k = 0; k < 3; k++)
            s[k] += cols[3 * j + k];
    for (int k = 0; k < 3; k++)
        c[k] = s[k] / (double)m;
}

/* Each column tile's bounding box, in the packed floats. */
static void tile_boxes(const packed *p, size_t m, size_t tile, float *boxes)
{
    const float *axis[3] = {p->cx, p->cy, p->cz};
    for (size_t j0 = 0, k = 0; j0 < m; j0 += tile, k++) {
        const size_t end = j0 + tile < m ? j0 + tile : m;
        float *b = boxes + 6 * k;
        for (int a = 0; a < 3; a++) {
            b[a] = b[3 + a] = axis[a][j0];
            for (size_t j = j0 + 1; j < end; j++) {
                b[a] = axis[a][j] < b[a] ? axis[a][j] : b[a];
                b[3 + a] = axis[a][j] > b[3 + a] ? axis[a][j] : b[3 + a];
            }
        }
    }
}

/* `outputs` sums per row from `nw` weights per column (pair_kernels.h). */
static ptreg_status pack(const double *rows, size_t n, const double *cols, size_t m, const double *weights, int nw,
                         int outputs, size_t tile, const double c[3], packed *p, ptreg_error *err)
{
    memset(p, 0, sizeof *p);
    p->padded = (n + PTREG_PAIR_ROW_PAD - 1) / PTREG_PAIR_ROW_PAD * PTREG_PAIR_ROW_PAD;
    float **rf[3] = {&p->rx, &p->ry, &p->rz}, **cf[3] = {&p->cx, &p->cy, &p->cz};
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        *rf[k] = malloc(p->padded * sizeof(float));
        *cf[k] = malloc(m * sizeof(float));
        ok = ok && *rf[k] && *cf[k];
    }
    for (int ch = 0; ch < nw; ch++)
        ok = (p->w[ch] = malloc(m * sizeof(float))) != NULL && ok;
    for (int ch = 0; ch < outputs; ch++)
        ok = (p->out[ch] = malloc(p->padded * sizeof(double))) != NULL && ok;
    p->boxes = malloc(6 * ((m + tile - 1) / tile) * sizeof(float));
    if (!ok || !p->boxes)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "Gauss transform: out of memory for %zu x %zu points", n, m);
    /* Padding rows repeat row 0: inside every box row 0 is in. */
    for (size_t i = 0; i < p->padded; i++)
        for (int k = 0; k < 3; k++)
            (*rf[k])[i] = (float)(rows[3 * (i < n ? i : 0) + k] - c[k]);
    for (size_t j = 0; j < m; j++) {
        for (int k = 0; k < 3; k++)
            (*cf[k])[j] = (float)(cols[3 * j + k] - c[k]);
        for (int ch = 0; ch < nw; ch++)
            p->w[ch][j] = (float)weights[(size_t)nw * j + (size_t)ch];
    }
    tile_boxes(p, m, tile, p->boxes);
    return PTREG_OK;
}

static void transform_float(const packed *p, size_t m, int channels, double scale, const ptreg_pair_options *opt,
                            ptreg_pair_cull *cull)
{
    const size_t rb = (size_t)(opt->row_block + PTREG_PAIR_ROW_PAD - 1) / PTREG_PAIR_ROW_PAD * PTREG_PAIR_ROW_PAD;
    const size_t blocks = (p->padded + rb - 1) / rb;
    void (*kernel)(pair_wsum_block *) = pair_cpu_kernels()->pair_wsum_block;
    const float f = pair_exp2_factor(scale);
    size_t sweeps = 0, skipped = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads()) reduction(+ : sweeps, skipped)
    for (size_t b = 0; b < blocks; b++) {
        const size_t r0 = b * rb, nr = p->padded - r0 < rb ? p->padded - r0 : rb;
        pair_wsum_block blk = {
            .rx = p->rx + r0,
            .ry = p->ry + r0,
            .rz = p->rz + r0,
            .nr = nr,
            .cx = p->cx,
            .cy = p->cy,
            .cz = p->cz,
            .channels = channels,
            .m = m,
            .neg_scale_log2e = f,
            .col_tile = opt->col_tile,
            .tile_box = p->boxes,
        };
        for (int c = 0; c < channels; c++) {
            blk.w[c] = p->w[c]; /* NULL past the weights (the moments' one) */
            blk.out[c] = p->out[c] + r0;
        }
        kernel(&blk);
        sweeps += blk.sweeps;
        skipped += blk.skipped;
    }
    if (cull) {
        cull->sweeps += (double)sweeps;
        cull->skipped += (double)skipped;
    }
}

/* Float64: the same blocks through pair_wsum64_block, the points centred
 * in double. */
typedef struct packed64 {
    double *rx, *ry, *rz, *cx, *cy, *cz, *w[PTREG_PAIR_MAX_CHANNELS], *boxes;
    double *out[PTREG_PAIR_MAX_CHANNELS];
} packed64;

static void packed64_free(packed64 *p)
{
    free(p->rx), free(p->ry), free(p->rz), free(p->cx), free(p->cy), free(p->cz), free(p->boxes);
    for (int c = 0; c < PTREG_PAIR_MAX_CHANNELS; c++)
        free(p->w[c]), free(p->out[c]);
}

static ptreg_status pack64(const double *rows, size_t n, size_t padded, const double *cols, size_t m,
                           const double *weights, int nw, int outputs, size_t tile, const double c[3], packed64 *p,
                           ptreg_error *err)
{
    memset(p, 0, sizeof *p);
    double **rd[3] = {&p->rx, &p->ry, &p->rz}, **cd[3] = {&p->cx, &p->cy, &p->cz};
    int ok = 1;
    for (int k = 0; k < 3; k++) {
        *rd[k] = malloc(padded * sizeof(double));
        *cd[k] = malloc(m * sizeof(double));
        ok = ok && *rd[k] && *cd[k];
    }
    for (int ch = 0; ch < nw; ch++)
        ok = (p->w[ch] = malloc(m * sizeof(double))) != NULL && ok;
    for (int ch = 0; ch < outputs; ch++)
        ok = (p->out[ch] = malloc(padded * sizeof(double))) != NULL && ok;
    const size_t tiles = (m + tile - 1) / tile;
    p->boxes = malloc(6 * tiles * sizeof(double));
    if (!ok || !p->boxes)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "Gauss transform: out of memory for %zu x %zu points", n, m);
    for (size_t i = 0; i < padded; i++)
        for (int k = 0; k < 3; k++)
            (*rd[k])[i] = rows[3 * (i < n ? i : 0) + k] - c[k];
    for (size_t j = 0; j < m; j++) {
        for (int k = 0; k < 3; k++)
            (*cd[k])[j] = cols[3 * j + k] - c[k];
        for (int ch = 0; ch < nw; ch++)
            p->w[ch][j] = weights[(size_t)nw * j + (size_t)ch];
    }
    for (size_t j0 = 0, k = 0; j0 < m; j0 += tile, k++) {
        const size_t end = j0 + tile < m ? j0 + tile : m;
        double *b = p->boxes + 6 * k;
        for (int a = 0; a < 3; a++) {
            b[a] = b[3 + a] = (*cd[a])[j0];
            for (size_t j = j0 + 1; j < end; j++) {
                b[a] = (*cd[a])[j] < b[a] ? (*cd[a])[j] : b[a];
                b[3 + a] = (*cd[a])[j] > b[3 + a] ? (*cd[a])[j] : b[3 + a];
            }
        }
    }
    return PTREG_OK;
}

static void transform_double(const packed64 *p, size_t padded, size_t m, int channels, double scale,
                             const ptreg_pair_options *opt, ptreg_pair_cull *cull)
{
    const size_t rb = (size_t)(opt->row_block + PTREG_PAIR_ROW_PAD - 1) / PTREG_PAIR_ROW_PAD * PTREG_PAIR_ROW_PAD;
    const size_t blocks = (padded + rb - 1) / rb;
    void (*kernel)(pair_wsum64_block *) = pair_cpu_kernels()->pair_wsum64_block;
    size_t sweeps = 0, skipped = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads()) reduction(+ : sweeps, skipped)
    for (size_t b = 0; b < blocks; b++) {
        const size_t r0 = b * rb, nr = padded - r0 < rb ? padded - r0 : rb;
        pair_wsum64_block blk = {
            .rx = p->rx + r0,
            .ry = p->ry + r0,
            .rz = p->rz + r0,
            .nr = nr,
            .cx = p->cx,
            .cy = p->cy,
            .cz = p->cz,
            .channels = channels,
            .m = m,
            .neg_scale_log2e = -scale * 1.4426950408889634,
            .col_tile = opt->col_tile,
            .tile_box = p->boxes,
            .skip_below = cull && cull->drop_below_log2 < 0 && cull->drop_below_log2 > -1023 ? cull->drop_below_log2
                                                                                             : -1023.0,
        };
        for (int c = 0; c < channels; c++) {
            blk.w[c] = p->w[c]; /* NULL past the weights (the moments' one) */
            blk.out[c] = p->out[c] + r0;
        }
        kernel(&blk);
        sweeps += blk.sweeps;
        skipped += blk.skipped;
    }
    if (cull) {
        cull->sweeps += (double)sweeps;
        cull->skipped += (double)skipped;
    }
}

static ptreg_status check_finite(const char *what, const double *v, size_t count, ptreg_error *err)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(v[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "Gauss transform: %s value %zu is not finite", what, i);
    return PTREG_OK;
}

ptreg_status ptreg_pair_gauss_transform(const double *rows, size_t n, const double *cols, size_t m,
                                        const double *weights, int channels, double scale,
                                        const ptreg_pair_options *opt, double *out, ptreg_pair_cull *cull,
                                        ptreg_error *err)
{
    ptreg_status st = ptreg_pair_options_check(opt, err);
    if (st)
        return st;
    if (channels != 1 && channels != 3 && channels != 4 && channels != PTREG_PAIR_MOMENTS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "Gauss transform: %d channels (1, 3, 4 or 5, the moments)",
                               channels);
    const int nw = channels == PTREG_PAIR_MOMENTS ? 1 : channels;
    if (!(scale > 0.0) || !isfinite(scale) || scale > 3.4e38)
        return ptreg_error_set(err, PTREG_ERR_ARG, "Gauss transform: scale %g must be in (0, 3.4e38]", scale);
    if (opt->precision == PTREG_PRECISION_FP16)
        return ptreg_error_set(err, PTREG_ERR_ARG, "Gauss transform: precision fp16 is not offered (fp32 or fp64)");
    if (n == 0)
        return PTREG_OK;
    if (m == 0) {
        memset(out, 0, n * (size_t)channels * sizeof(double));
        return PTREG_OK;
    }
    if ((st = check_finite("row", rows, 3 * n, err)) || (st = check_finite("column", cols, 3 * m, err)) ||
        (st = check_finite("weight", weights, (size_t)nw * m, err)))
        return st;
    double c[3];
    columns_centroid(cols, m, c);
    if (opt->precision == PTREG_PRECISION_FP64) {
        const size_t padded = (n + PTREG_PAIR_ROW_PAD - 1) / PTREG_PAIR_ROW_PAD * PTREG_PAIR_ROW_PAD;
        packed64 p;
        st = pack64(rows, n, padded, cols, m, weights, nw, channels, (size_t)opt->col_tile, c, &p, err);
        if (!st) {
            transform_double(&p, padded, m, channels, scale, opt, cull);
            for (size_t i = 0; i < n; i++)
                for (int ch = 0; ch < channels; ch++)
                    out[(size_t)channels * i + (size_t)ch] = p.out[ch][i];
        }
        packed64_free(&p);
        return st;
    }
    packed p;
    st = pack(rows, n, cols, m, weights, nw, channels, (size_t)opt->col_tile, c, &p, err);
    if (!st) {
        transform_float(&p, m, channels, scale, opt, cull);
        for (size_t i = 0; i < n; i++)
            for (int ch = 0; ch < channels; ch++)
                out[(size_t)channels * i + (size_t)ch] = p.out[ch][i];
    }
    packed_free(&p);
    return st;
}
