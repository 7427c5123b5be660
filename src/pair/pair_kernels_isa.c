/* Pair-engine kernels, compiled once per ISA by cmake/isa.cmake
 * (PTREG_ISA_SUFFIX names the copy). Rows sit in vector lanes, columns are
 * broadcast one at a time, so the per-row sums need no horizontal
 * reductions and a row's sum order is fixed by the tiling alone. */
#include <math.h>
#include <string.h>

#include "core/cpu_isa.h"
#include "pair/pair_kernels.h"
#include "pair/vec_isa.h"

/* Applies f to n floats, the tail through a zero-padded vector. */
static inline __attribute__((always_inline)) void map_array(vf (*f)(vf), const float *in, float *out, size_t n)
{
    size_t i = 0;
    for (; i + VW <= n; i += VW)
        v_store(out + i, f(v_load(in + i)));
    if (i < n) {
        float buf[VW] = {0};
        memcpy(buf, in + i, (n - i) * sizeof(float));
        v_store(buf, f(v_load(buf)));
        memcpy(out + i, buf, (n - i) * sizeof(float));
    }
}

void ISA_FN(pair_exp_array)(const float *in, float *out, size_t n) { map_array(v_exp, in, out, n); }

/* Under the kernel's flush-to-zero, as sweep_tile runs it. */
void ISA_FN(pair_exp2_array)(const float *in, float *out, size_t n)
{
    const fp_env env = flush_denormals();
    map_array(v_exp2, in, out, n);
    restore_fp(env);
}

/* The float32 sums of rv row vectors over one column tile. */
typedef struct tile_sums {
    float e[4][VW], e2[4][VW], bx[4][VW], by[4][VW], bz[4][VW];
} tile_sums;

/* rv is a literal at every call, so the compiler keeps each row vector's
 * coordinates and sums in registers. */
static inline __attribute__((always_inline)) void sweep_tile(const float *rx, const float *ry, const float *rz, int rv,
                                                             const float *cx, const float *cy, const float *cz,
                                                             size_t len, vf neg_scale_log2e, tile_sums *out)
{
    vf ax[4], ay[4], az[4], se[4], se2[4], sx[4], sy[4], sz[4];
    for (int v = 0; v < rv; v++) {
        ax[v] = v_load(rx + v * VW);
        ay[v] = v_load(ry + v * VW);
        az[v] = v_load(rz + v * VW);
        se[v] = se2[v] = sx[v] = sy[v] = sz[v] = v_zero();
    }
    for (size_t j = 0; j < len; j++) {
        const vf bx = v_set1(cx[j]), by = v_set1(cy[j]), bz = v_set1(cz[j]);
        for (int v = 0; v < rv; v++) {
            const vf dx = v_sub(ax[v], bx), dy = v_sub(ay[v], by), dz = v_sub(az[v], bz);
            const vf d2 = v_fma(dz, dz, v_fma(dy, dy, v_mul(dx, dx)));
            const vf e = v_exp2(v_mul(d2, neg_scale_log2e));
            se[v] = v_add(se[v], e);
            se2[v] = v_fma(e, e, se2[v]);
            sx[v] = v_fma(e, bx, sx[v]);
            sy[v] = v_fma(e, by, sy[v]);
            sz[v] = v_fma(e, bz, sz[v]);
        }
    }
    for (int v = 0; v < rv; v++) {
        v_store(out->e[v], se[v]);
        v_store(out->e2[v], se2[v]);
        v_store(out->bx[v], sx[v]);
        v_store(out->by[v], sy[v]);
        v_store(out->bz[v], sz[v]);
    }
}

static void sweep_tile_rv(const pair_gauss_block *b, size_t row, int rv, const float *cx, const float *cy,
                          const float *cz, size_t len, tile_sums *out)
{
    const vf ns = v_set1(b->neg_scale_log2e);
    switch (rv) {
    case 4: sweep_tile(b->rx + row, b->ry + row, b->rz + row, 4, cx, cy, cz, len, ns, out); break;
    case 2: sweep_tile(b->rx + row, b->ry + row, b->rz + row, 2, cx, cy, cz, len, ns, out); break;
    default: sweep_tile(b->rx + row, b->ry + row, b->rz + row, 1, cx, cy, cz, len, ns, out); break;
    }
}

/* Adds one tile's float32 sums into the float64 row sums. */
static void add_tile(const pair_gauss_block *b, size_t row, int rv, const tile_sums *t)
{
    for (int v = 0; v < rv; v++)
        for (int k = 0; k < VW; k++) {
            const size_t i = row + (size_t)v * VW + (size_t)k;
            b->se[i] += t->e[v][k];
            b->se2[i] += t->e2[v][k];
            b->sbx[i] += t->bx[v][k];
            b->sby[i] += t->by[v][k];
            b->sbz[i] += t->bz[v][k];
        }
}

/* Column tile [j0, j0 + len) as float32: the columns themselves, or the
 * float16 columns widened into the scratch tile. */
static void tile_columns(const pair_gauss_block *b, size_t j0, size_t len, const float **cx, const float **cy,
                         const float **cz)
{
    if (!b->hx) {
        *cx = b->cx + j0;
        *cy = b->cy + j0;
        *cz = b->cz + j0;
        return;
    }
    float *t = b->tile;
    const uint16_t *src[3] = {b->hx + j0, b->hy + j0, b->hz + j0};
    for (int c = 0; c < 3; c++) {
        float *dst = t + (size_t)c * (size_t)b->col_tile;
        size_t j = 0;
#if defined(__AVX2__)
        for (; j + 8 <= len; j += 8)
            _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src[c] + j))));
#endif
        for (; j < len; j++)
            dst[j] = half_to_float(src[c][j]);
    }
    *cx = t;
    *cy = t + b->col_tile;
    *cz = t + 2 * (size_t)b->col_tile;
}

/* Row vectors of the block taken rv at a time, the remainder one by one. */
static int group_vectors(size_t row, size_t nr, int rv)
{
    const size_t left = (nr - row) / VW;
    return left >= (size_t)rv ? rv : 1;
}

void ISA_FN(pair_gauss_block)(const pair_gauss_block *b)
{
    const fp_env env = flush_denormals();
    const size_t tile = (size_t)b->col_tile;
    tile_sums t;
    for (size_t i = 0; i < b->nr; i++)
        b->se[i] = b->se2[i] = b->sbx[i] = b->sby[i] = b->sbz[i] = 0.0;
    const float *cx, *cy, *cz;
    if (b->tiles_outside) {
        for (size_t j0 = 0; j0 < b->m; j0 += tile) {
            const size_t len = b->m - j0 < tile ? b->m - j0 : tile;
            tile_columns(b, j0, len, &cx, &cy, &cz);
            for (size_t row = 0; row < b->nr;) {
                const int rv = group_vectors(row, b->nr, b->row_vectors);
                sweep_tile_rv(b, row, rv, cx, cy, cz, len, &t);
                add_tile(b, row, rv, &t);
                row += (size_t)rv * VW;
            }
        }
    } else {
        for (size_t row = 0; row < b->nr;) {
            const int rv = group_vectors(row, b->nr, b->row_vectors);
            for (size_t j0 = 0; j0 < b->m; j0 += tile) {
                const size_t len = b->m - j0 < tile ? b->m - j0 : tile;
                tile_columns(b, j0, len, &cx, &cy, &cz);
                sweep_tile_rv(b, row, rv, cx, cy, cz, len, &t);
                add_tile(b, row, rv, &t);
            }
            row += (size_t)rv * VW;
        }
    }
    restore_fp(env);
}

/* The Gauss transform (pair_wsum_block, pair_kernels.h). */

typedef struct wsum_sums {
    float s[PTREG_PAIR_MAX_CHANNELS][2][VW];
} wsum_sums;

/* rv and channels are literals at every call, so the row coordinates and
 * the sums stay in registers. */
static inline __attribute__((always_inline)) void wsum_tile(const float *rx, const float *ry, const float *rz, int rv,
                                                            int channels, const pair_wsum_block *b, size_t j0,
                                                            size_t len, vf neg_scale_log2e, wsum_sums *out)
{
    vf ax[2], ay[2], az[2], s[PTREG_PAIR_MAX_CHANNELS][2];
    for (int v = 0; v < rv; v++) {
        ax[v] = v_load(rx + v * VW);
        ay[v] = v_load(ry + v * VW);
        az[v] = v_load(rz + v * VW);
        for (int c = 0; c < channels; c++)
            s[c][v] = v_zero();
    }
    const float *cx = b->cx + j0, *cy = b->cy + j0, *cz = b->cz + j0;
    const int moments = channels == PTREG_PAIR_MOMENTS, weights = moments ? 1 : channels;
    const float *w[PTREG_PAIR_MAX_CHANNELS];
    for (int c = 0; c < weights; c++)
        w[c] = b->w[c] + j0;
    for (size_t j = 0; j < len; j++) {
        const vf bx = v_set1(cx[j]), by = v_set1(cy[j]), bz = v_set1(cz[j]);
        vf wj[PTREG_PAIR_MAX_CHANNELS];
        for (int c = 0; c < weights; c++)
            wj[c] = v_set1(w[c][j]);
        for (int v = 0; v < rv; v++) {
            const vf dx = v_sub(ax[v], bx), dy = v_sub(ay[v], by), dz = v_sub(az[v], bz);
            const vf d2 = v_fma(dz, dz, v_fma(dy, dy, v_mul(dx, dx)));
            const vf e = v_exp2(v_mul(d2, neg_scale_log2e));
            if (moments) {
                const vf ew = v_mul(e, wj[0]);
                s[0][v] = v_add(s[0][v], ew);
                s[1][v] = v_fma(ew, dx, s[1][v]);
                s[2][v] = v_fma(ew, dy, s[2][v]);
                s[3][v] = v_fma(ew, dz, s[3][v]);
                s[4][v] = v_fma(ew, d2, s[4][v]);
            } else {
                for (int c = 0; c < channels; c++)
                    s[c][v] = v_fma(e, wj[c], s[c][v]);
            }
        }
    }
    for (int v = 0; v < rv; v++)
        for (int c = 0; c < channels; c++)
            v_store(out->s[c][v], s[c][v]);
}

static void wsum_tile_for(const pair_wsum_block *b, size_t row, int rv, size_t j0, size_t len, wsum_sums *out)
{
    const vf f = v_set1(b->neg_scale_log2e);
    const float *rx = b->rx + row, *ry = b->ry + row, *rz = b->rz + row;
    if (rv == 2) {
        switch (b->channels) {
        case 1: wsum_tile(rx, ry, rz, 2, 1, b, j0, len, f, out); break;
        case 3: wsum_tile(rx, ry, rz, 2, 3, b, j0, len, f, out); break;
        case 4: wsum_tile(rx, ry, rz, 2, 4, b, j0, len, f, out); break;
        default: wsum_tile(rx, ry, rz, 2, PTREG_PAIR_MOMENTS, b, j0, len, f, out); break;
        }
    } else {
        switch (b->channels) {
        case 1: wsum_tile(rx, ry, rz, 1, 1, b, j0, len, f, out); break;
        case 3: wsum_tile(rx, ry, rz, 1, 3, b, j0, len, f, out); break;
        case 4: wsum_tile(rx, ry, rz, 1, 4, b, j0, len, f, out); break;
        default: wsum_tile(rx, ry, rz, 1, PTREG_PAIR_MOMENTS, b, j0, len, f, out); break;
        }
    }
}

/* Whether every term between the rows [row, row + count) and the column
 * tile whose box is tb is below float32's smallest normal: the exponent at
 * the boxes' nearest points, with a margin for the rounding of d^2. */
static int wsum_tile_culled(const pair_wsum_block *b, size_t row, size_t count, const float *tb)
{
    float lo[3] = {b->rx[row], b->ry[row], b->rz[row]}, hi[3] = {lo[0], lo[1], lo[2]};
    for (size_t i = row + 1; i < row + count; i++) {
        const float p[3] = {b->rx[i], b->ry[i], b->rz[i]};
        for (int k = 0; k < 3; k++) {
            lo[k] = p[k] < lo[k] ? p[k] : lo[k];
            hi[k] = p[k] > hi[k] ? p[k] : hi[k];
        }
    }
    double gap2 = 0.0;
    for (int k = 0; k < 3; k++) {
        const double g = lo[k] > tb[3 + k] ? (double)lo[k] - tb[3 + k] : tb[k] > hi[k] ? (double)tb[k] - hi[k] : 0.0;
        gap2 += g * g;
    }
    return gap2 * (1.0 - 1e-4) * b->neg_scale_log2e < EXP2_MIN_T - 1.0;
}

void ISA_FN(pair_wsum_block)(pair_wsum_block *b)
{
    const fp_env env = flush_denormals();
    const size_t tile = (size_t)b->col_tile;
    wsum_sums t;
    for (int c = 0; c < b->channels; c++)
        memset(b->out[c], 0, b->nr * sizeof(double));
    size_t skipped = 0, sweeps = 0;
    for (size_t row = 0; row < b->nr;) {
        const int rv = group_vectors(row, b->nr, 2);
        const size_t count = (size_t)rv * VW;
        for (size_t j0 = 0, k = 0; j0 < b->m; j0 += tile, k++) {
            sweeps++;
            if (b->tile_box && wsum_tile_culled(b, row, count, b->tile_box + 6 * k)) {
                skipped++;
                continue;
            }
            const size_t len = b->m - j0 < tile ? b->m - j0 : tile;
            wsum_tile_for(b, row, rv, j0, len, &t);
            for (int c = 0; c < b->channels; c++)
                for (int v = 0; v < rv; v++)
                    for (int l = 0; l < VW; l++)
                        b->out[c][row + (size_t)v * VW + (size_t)l] += t.s[c][v][l];
        }
        row += count;
    }
    b->sweeps = sweeps;
    b->skipped = skipped;
    restore_fp(env);
}

/* The Gauss transform in float64 (pair_wsum64_block): DW doubles a
 * vector through GCC's vector extensions, FMAs by intrinsic (the build
 * does not contract). */
#if defined(__AVX512F__)
#define DW 8
#elif defined(__AVX2__)
#define DW 4
#else
#define DW 2
#endif
typedef double vd __attribute__((vector_size(DW * 8)));
typedef long long vl __attribute__((vector_size(DW * 8)));

static inline vd vd_fma(vd a, vd b, vd c)
{
#if defined(__AVX512F__)
    return (vd)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
#elif defined(__AVX2__)
    return (vd)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#else
    return a * b + c;
#endif
}

static inline vd vd_load(const double *p)
{
    vd v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 2^t for t <= 0: n = round(t) by the 1.5 * 2^52 trick (whose sum holds n
 * in its low bits), u = t - n in [-1/2, 1/2], 2^u = e^(u ln 2) by its
 * Taylor polynomial to degree 13 (truncation under 5e-18), times 2^n built
 * from n's bits. t < -1022 gives 0 (no denormals). */
static inline vd vd_exp2(vd t)
{
    const vd magic = (vd){0} + 0x1.8p52;
    const vd shifted = t + magic;
    const vd n = shifted - magic;
    const vd x = (t - n) * 0.6931471805599453094;
    static const double c[14] = {
        1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,       1.0 / 720,
        1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
    vd p = (vd){0} + c[13];
    for (int k = 12; k >= 0; k--)
        p = vd_fma(p, x, (vd){0} + c[k]);
    const vl low = (vl)shifted - (vl)magic; /* n as an integer */
    const vd scale = (vd)((low + 1023) << 52);
    const vl keep = (vl)(t >= -1022.0); /* all ones where 2^t is normal */
    return (vd)((vl)(p * scale) & keep);
}

typedef struct wsum64_sums {
    double s[PTREG_PAIR_MAX_CHANNELS][2][DW];
} wsum64_sums;

static inline __attribute__((always_inline)) void wsum64_tile(const pair_wsum64_block *b, size_t row, int rv,
                                                              int channels, size_t j0, size_t len, wsum64_sums *out)
{
    vd ax[2], ay[2], az[2], s[PTREG_PAIR_MAX_CHANNELS][2];
    for (int v = 0; v < rv; v++) {
        ax[v] = vd_load(b->rx + row + (size_t)v * DW);
        ay[v] = vd_load(b->ry + row + (size_t)v * DW);
        az[v] = vd_load(b->rz + row + (size_t)v * DW);
        for (int c = 0; c < channels; c++)
            s[c][v] = (vd){0};
    }
    const vd f = (vd){0} + b->neg_scale_log2e;
    const int moments = channels == PTREG_PAIR_MOMENTS;
    for (size_t j = j0; j < j0 + len; j++) {
        const double bx = b->cx[j], by = b->cy[j], bz = b->cz[j];
        for (int v = 0; v < rv; v++) {
            const vd dx = ax[v] - bx, dy = ay[v] - by, dz = az[v] - bz;
            const vd d2 = vd_fma(dz, dz, vd_fma(dy, dy, dx * dx));
            const vd e = vd_exp2(d2 * f);
            if (moments) {
                const vd ew = e * b->w[0][j];
                s[0][v] += ew;
                s[1][v] = vd_fma(ew, dx, s[1][v]);
                s[2][v] = vd_fma(ew, dy, s[2][v]);
                s[3][v] = vd_fma(ew, dz, s[3][v]);
                s[4][v] = vd_fma(ew, d2, s[4][v]);
            } else {
                for (int c = 0; c < channels; c++)
                    s[c][v] = vd_fma(e, (vd){0} + b->w[c][j], s[c][v]);
            }
        }
    }
    for (int v = 0; v < rv; v++)
        for (int c = 0; c < channels; c++)
            memcpy(out->s[c][v], &s[c][v], sizeof s[c][v]);
}

static void wsum64_tile_for(const pair_wsum64_block *b, size_t row, int rv, size_t j0, size_t len, wsum64_sums *out)
{
    if (rv == 2) {
        switch (b->channels) {
        case 1: wsum64_tile(b, row, 2, 1, j0, len, out); break;
        case 3: wsum64_tile(b, row, 2, 3, j0, len, out); break;
        case 4: wsum64_tile(b, row, 2, 4, j0, len, out); break;
        default: wsum64_tile(b, row, 2, PTREG_PAIR_MOMENTS, j0, len, out); break;
        }
    } else {
        switch (b->channels) {
        case 1: wsum64_tile(b, row, 1, 1, j0, len, out); break;
        case 3: wsum64_tile(b, row, 1, 3, j0, len, out); break;
        case 4: wsum64_tile(b, row, 1, 4, j0, len, out); break;
        default: wsum64_tile(b, row, 1, PTREG_PAIR_MOMENTS, j0, len, out); break;
        }
    }
}

/* As wsum_tile_culled, against 2^skip_below. */
static int wsum64_tile_culled(const pair_wsum64_block *b, size_t row, size_t count, const double *tb)
{
    double lo[3] = {b->rx[row], b->ry[row], b->rz[row]}, hi[3] = {lo[0], lo[1], lo[2]};
    for (size_t i = row + 1; i < row + count; i++) {
        const double p[3] = {b->rx[i], b->ry[i], b->rz[i]};
        for (int k = 0; k < 3; k++) {
            lo[k] = p[k] < lo[k] ? p[k] : lo[k];
            hi[k] = p[k] > hi[k] ? p[k] : hi[k];
        }
    }
    double gap2 = 0.0;
    for (int k = 0; k < 3; k++) {
        const double g = lo[k] > tb[3 + k] ? lo[k] - tb[3 + k] : tb[k] > hi[k] ? tb[k] - hi[k] : 0.0;
        gap2 += g * g;
    }
    return gap2 * (1.0 - 1e-9) * b->neg_scale_log2e < b->skip_below;
}

void ISA_FN(pair_wsum64_block)(pair_wsum64_block *b)
{
    const size_t tile = (size_t)b->col_tile;
    wsum64_sums t;
    for (int c = 0; c < b->channels; c++)
        memset(b->out[c], 0, b->nr * sizeof(double));
    size_t skipped = 0, sweeps = 0;
    for (size_t row = 0; row < b->nr;) {
        const int rv = (b->nr - row) / DW >= 2 ? 2 : 1;
        const size_t count = (size_t)rv * DW;
        for (size_t j0 = 0, k = 0; j0 < b->m; j0 += tile, k++) {
            sweeps++;
            if (b->tile_box && wsum64_tile_culled(b, row, count, b->tile_box + 6 * k)) {
                skipped++;
                continue;
            }
            const size_t len = b->m - j0 < tile ? b->m - j0 : tile;
            wsum64_tile_for(b, row, rv, j0, len, &t);
            for (int c = 0; c < b->channels; c++)
                for (int v = 0; v < rv; v++)
                    for (int l = 0; l < DW; l++)
                        b->out[c][row + (size_t)v * DW + (size_t)l] += t.s[c][v][l];
        }
        row += count;
    }
    b->sweeps = sweeps;
    b->skipped = skipped;
}
