/* Feature matching's distance scan, compiled once per ISA (cmake/isa.cmake):
 * the distances of a block of columns are summed dimension by dimension,
 * so the inner loop runs along columns in the ISA's vector registers. */
#include <math.h>
#include <string.h>

#include "device/cpu_isa.h"
#include "reg/global/global_kernels.h"

#define MATCH_BLOCK 512 /* columns whose distances are summed together */

/* Rows are taken ROWS at a time and columns TILE at a time, the tile's
 * sums held in registers over every dimension: each column's values are
 * loaded once for ROWS rows, and no partial sum goes to memory. */
#if defined(__AVX512F__)
#define ROWS 4
#define TILE 64
#else
#define ROWS 2
#define TILE 32
#endif

/* The least of d[0 .. len) (no NaN: a missing column's distances are
 * infinite), lane by lane: a minimum is exact in any order. */
static float block_min(const float *d, size_t len)
{
    float lane[16], least = INFINITY;
    for (int l = 0; l < 16; l++)
        lane[l] = INFINITY;
    size_t j = 0;
    for (; j + 16 <= len; j += 16)
        for (int l = 0; l < 16; l++)
            lane[l] = d[j + l] < lane[l] ? d[j + l] : lane[l];
    for (; j < len; j++)
        least = d[j] < least ? d[j] : least;
    for (int l = 0; l < 16; l++)
        least = lane[l] < least ? lane[l] : least;
    return least;
}

/* The least of the block but column `at` (the block's nearest). */
static float block_min_except(const float *d, size_t len, size_t at)
{
    const float before = block_min(d, at), after = block_min(d + at + 1, len - at - 1);
    return before < after ? before : after;
}

/* A row's nearest and second least distances (bd, b2) after a block whose
 * least is `least`, first at column `at` (second: the block's least but
 * that column). A later block's tie with bd keeps bd's column and makes the
 * second bd. */
static void merge_second(float least, float second, float bd, float *b2)
{
    if (least < bd)
        *b2 = bd < second ? bd : second;
    else if (least < *b2)
        *b2 = least;
}

static size_t first_at(const float *d, size_t len, float value)
{
    size_t j = 0;
    while (j < len && d[j] != value)
        j++;
    return j;
}

/* Row i against each column's best so far (kept when strictly nearer: rows
 * come in increasing order), without a branch per column. */
static void columns_best(const float *restrict d, size_t len, uint32_t i, float *restrict col_d,
                         uint32_t *restrict col_i)
{
    for (size_t j = 0; j < len; j++) {
        const int nearer = d[j] < col_d[j];
        col_d[j] = nearer ? d[j] : col_d[j];
        col_i[j] = nearer ? i : col_i[j];
    }
}

/* The distances of rows i0 .. i0 + ROWS (x: their ROWS x dim values; rows
 * past the scan's end are zeros, their sums unused) to the columns j0 ..
 * j0 + len, each summed over the dimensions in order. */
static void tile_distances(const desc_scan *s, const float *x, size_t j0, size_t len, float d[ROWS][MATCH_BLOCK])
{
    size_t jt = 0;
    for (; jt + TILE <= len; jt += TILE) {
        float acc[ROWS][TILE];
        for (int r = 0; r < ROWS; r++)
            for (int l = 0; l < TILE; l++)
                acc[r][l] = 0.0f;
        for (int k = 0; k < s->dim; k++) {
            const float *col = s->bt + (size_t)k * s->nb + j0 + jt;
            for (int r = 0; r < ROWS; r++) {
                const float xk = x[r * s->dim + k];
                for (int l = 0; l < TILE; l++) {
                    const float diff = xk - col[l];
                    acc[r][l] += diff * diff;
                }
            }
        }
        for (int r = 0; r < ROWS; r++)
            memcpy(d[r] + jt, acc[r], sizeof acc[r]);
    }
    for (int r = 0; r < ROWS; r++)
        for (size_t j = jt; j < len; j++) {
            float sum = 0.0f;
            for (int k = 0; k < s->dim; k++) {
                const float diff = x[r * s->dim + k] - s->bt[(size_t)k * s->nb + j0 + j];
                sum += diff * diff;
            }
            d[r][j] = sum;
        }
}

/* Up to ROWS rows from i0, copied side by side (missing rows zero). */
static size_t load_rows(const desc_scan *s, size_t i0, float *x)
{
    const size_t rows = s->r1 - i0 < ROWS ? s->r1 - i0 : ROWS;
    memset(x, 0, ROWS * (size_t)s->dim * sizeof *x);
    memcpy(x, s->a + i0 * (size_t)s->dim, rows * (size_t)s->dim * sizeof *x);
    return rows;
}

void ISA_FN(desc_scan_rows)(const desc_scan *s)
{
    _Static_assert(ROWS <= DESC_SCAN_ROWS, "a scan's scratch holds DESC_SCAN_ROWS rows");
    float d[ROWS][MATCH_BLOCK], bd[ROWS], b2[ROWS], *x = s->rows;
    uint32_t arg[ROWS];
    for (size_t i0 = s->r0; i0 < s->r1; i0 += ROWS) {
        const size_t rows = load_rows(s, i0, x);
        for (size_t r = 0; r < rows; r++)
            bd[r] = b2[r] = INFINITY, arg[r] = UINT32_MAX;
        for (size_t j0 = 0; j0 < s->nb; j0 += MATCH_BLOCK) {
            const size_t len = s->nb - j0 < MATCH_BLOCK ? s->nb - j0 : MATCH_BLOCK;
            tile_distances(s, x, j0, len, d);
            for (size_t r = 0; r < rows; r++) { /* in row order: the columns' ties keep the lowest row */
                if (s->a_nan[i0 + r])
                    continue;
                const float least = block_min(d[r], len);
                if (s->row_second || least < bd[r]) {
                    const size_t at = first_at(d[r], len, least);
                    if (s->row_second)
                        merge_second(least, block_min_except(d[r], len, at), bd[r], &b2[r]);
                    if (least < bd[r]) /* the block's first at its least: ties keep the lowest column */
                        bd[r] = least, arg[r] = (uint32_t)(j0 + at);
                }
                if (s->col_d)
                    columns_best(d[r], len, (uint32_t)(i0 + r), s->col_d + j0, s->col_i + j0);
            }
        }
        for (size_t r = 0; r < rows; r++)
            s->row_best[i0 + r] = arg[r];
        for (size_t r = 0; s->row_second && r < rows; r++)
            s->row_second[i0 + r] = b2[r];
    }
}
