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
    const float *w[PTREG_PAIR_MAX_CHANNELS];
    for (int c = 0; c < channels; c++)
        w[c] = b->w[c] + j0;
    for (size_t j = 0; j < len; j++) {
        const vf bx = v_set1(cx[j]), by = v_set1(cy[j]), bz = v_set1(cz[j]);
        vf wj[PTREG_PAIR_MAX_CHANNELS];
        for (int c = 0; c < channels; c++)
            wj[c] = v_set1(w[c][j]);
        for (int v = 0; v < rv; v++) {
            const vf dx = v_sub(ax[v], bx), dy = v_sub(ay[v], by), dz = v_sub(az[v], bz);
            const vf d2 = v_fma(dz, dz, v_fma(dy, dy, v_mul(dx, dx)));
            const vf e = v_exp2(v_mul(d2, neg_scale_log2e));
            for (int c = 0; c < channels; c++)
                s[c][v] = v_fma(e, wj[c], s[c][v]);
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
        default: wsum_tile(rx, ry, rz, 2, 4, b, j0, len, f, out); break;
        }
    } else {
        switch (b->channels) {
        case 1: wsum_tile(rx, ry, rz, 1, 1, b, j0, len, f, out); break;
        case 3: wsum_tile(rx, ry, rz, 1, 3, b, j0, len, f, out); break;
        default: wsum_tile(rx, ry, rz, 1, 4, b, j0, len, f, out); break;
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
