/* Feature matching's distance scan, compiled once per ISA (cmake/isa.cmake).
 * Distances are first estimated as |a|^2 + |b|^2 - 2 a.b, one fused
 * multiply-add per dimension along columns in the ISA's vector registers;
 * only the columns whose estimate lies within the error bound (margin) of
 * a row's or a column's best so far are measured exactly, as the sum of
 * squared differences over the dimensions in order: the answers are the
 * exact scan's, on every ISA. */
#include <math.h>
#include <string.h>

#include "core/cpu_isa.h"
#include "reg/global/global_kernels.h"

#define MATCH_BLOCK 512 /* columns estimated together */

/* Rows are taken ROWS at a time and columns TILE at a time, the tile's
 * dot products held in registers over every dimension: each column's
 * values are loaded once for ROWS rows, and no partial sum goes to memory. */
#if defined(__AVX512F__)
#define ROWS 8
#define TILE 32
#else
#define ROWS 4
#define TILE 16
#endif

#if defined(__FMA__)
#define MADD(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define MADD(a, b, c) ((a) * (b) + (c))
#endif

/* The exact distance of row i and column j, as the plain scan sums it (a
 * column without a descriptor: infinity). */
static float exact_dist2(const desc_scan *s, size_t i, size_t j)
{
    return s->b_nan[j] ? INFINITY : desc_dist2(s->a + i * (size_t)s->dim, s->b + j * (size_t)s->dim, s->dim);
}

/* A row's nearest column and its second least distance so far. */
typedef struct row_best {
    float d, second;
    uint32_t arg;
} row_best;

/* Column j at exact distance e, offered once: nearer, or as near and a
 * lower column (a finite distance only), takes the row; the others feed the
 * second least. */
static void offer(row_best *b, float e, uint32_t j)
{
    if (e < b->d || (e == b->d && e < INFINITY && j < b->arg)) {
        b->second = b->d, b->d = e, b->arg = j;
    } else if (e < b->second) {
        b->second = e;
    }
}

/* The two least of d[0 .. len) (NaN left out; a tie: both the same), lane
 * by lane. */
static void block_two_least(const float *d, size_t len, float *least, float *second)
{
    float lo[16], hi[16];
    for (int l = 0; l < 16; l++)
        lo[l] = hi[l] = INFINITY;
    size_t j = 0;
    for (; j + 16 <= len; j += 16)
        for (int l = 0; l < 16; l++) {
            const float v = d[j + l], above = v > lo[l] ? v : lo[l];
            hi[l] = above < hi[l] ? above : hi[l];
            lo[l] = v < lo[l] ? v : lo[l];
        }
    for (int l = 0; j < len; j++, l++) {
        const float v = d[j], above = v > lo[l] ? v : lo[l];
        hi[l] = above < hi[l] ? above : hi[l];
        lo[l] = v < lo[l] ? v : lo[l];
    }
    *least = *second = INFINITY;
    for (int l = 0; l < 16; l++) {
        const float above = lo[l] > *least ? lo[l] : *least;
        *second = above < *second ? above : *second;
        *second = hi[l] < *second ? hi[l] : *second;
        *least = lo[l] < *least ? lo[l] : *least;
    }
}

/* What a column must be estimated within to be measured: the best so far
 * (the second least when the ratio test asks it) plus the bound, and no
 * more than cap. */
static float row_reach(const desc_scan *s, const row_best *b, float cap)
{
    const float reach = (s->row_second ? b->second : b->d) + s->bound;
    return reach < cap ? reach : cap;
}

/* Row i (estimates d of columns j0 ..) against its best: every column
 * estimated within reach measured, in column order, 16 estimates tested at
 * once. NaN estimates (overflow) are measured. */
static void row_block(const desc_scan *s, size_t i, const float *d, size_t j0, size_t len, row_best *b)
{
    float least, second;
    block_two_least(d, len, &least, &second);
    /* the block's best (second) measures no more than its least (second
     * least) estimate plus the bound: a column beyond that plus the bound
     * cannot reach it */
    const float cap = (s->row_second ? second : least) + 2.0f * s->bound;
    float reach = row_reach(s, b, cap);
    for (size_t j = 0; j < len; j += 16) {
        const size_t n = len - j < 16 ? len - j : 16;
        int any = 0;
        for (size_t l = 0; l < n; l++)
            any |= !(d[j + l] > reach);
        for (size_t l = 0; any && l < n; l++)
            if (!(d[j + l] > reach)) {
                offer(b, exact_dist2(s, i, j0 + j + l), (uint32_t)(j0 + j + l));
                reach = row_reach(s, b, cap);
            }
    }
}

/* One estimate (row i) into 16 columns' three least (a, b, c) and the rows
 * of the first two: a tie goes after. */
static void insert16(const float *restrict v, uint32_t i, float *restrict a, float *restrict b, float *restrict c,
                     uint32_t *restrict ra, uint32_t *restrict rb)
{
    for (int l = 0; l < 16; l++) {
        const int below0 = v[l] < a[l], below1 = v[l] < b[l], below2 = v[l] < c[l];
        c[l] = below1 ? b[l] : below2 ? v[l] : c[l];
        b[l] = below0 ? a[l] : below1 ? v[l] : b[l];
        rb[l] = below0 ? ra[l] : below1 ? i : rb[l];
        a[l] = below0 ? v[l] : a[l];
        ra[l] = below0 ? i : ra[l];
    }
}

/* Whether any of the tile's rows (those with a descriptor) estimates any
 * of 16 columns from j below its third least (third): most tiles, once
 * the columns have seen a few rows, leave every column as it was. */
static int tile_reaches(const float (*d)[MATCH_BLOCK], const unsigned char *nan_rows, size_t rows, size_t j,
                        const float *third)
{
    float least[16];
    for (int l = 0; l < 16; l++)
        least[l] = INFINITY;
    for (size_t r = 0; r < rows; r++)
        for (int l = 0; l < 16; l++)
            least[l] = !nan_rows[r] && d[r][j + l] < least[l] ? d[r][j + l] : least[l];
    int any = 0;
    for (int l = 0; l < 16; l++)
        any |= least[l] < third[l];
    return any;
}

/* The estimates of rows i0 .. i0 + rows (those without a descriptor left
 * out) into each column's three least so far, in row order, 16 columns at
 * a time without a branch: each column's state is loaded once for the
 * tile's rows. */
static void columns_least(const desc_scan *s, const float (*d)[MATCH_BLOCK], size_t i0, size_t rows, size_t j0,
                          size_t len)
{
    float *l0 = s->col->least[0] + j0, *l1 = s->col->least[1] + j0, *l2 = s->col->least[2] + j0;
    uint32_t *r0 = s->col->row[0] + j0, *r1 = s->col->row[1] + j0;
    for (size_t j = 0; j < len; j += 16) {
        const size_t n = len - j < 16 ? len - j : 16;
        float a[16], b[16], c[16], v[16];
        uint32_t ra[16], rb[16];
        if (n == 16 && !tile_reaches(d, s->a_nan + i0, rows, j, l2 + j))
            continue;
        if (n == 16) {
            memcpy(a, l0 + j, sizeof a), memcpy(b, l1 + j, sizeof b), memcpy(c, l2 + j, sizeof c);
            memcpy(ra, r0 + j, sizeof ra), memcpy(rb, r1 + j, sizeof rb);
        } else {
            for (size_t l = 0; l < 16; l++) { /* lanes past len: infinite, never stored */
                const int in = l < n;
                a[l] = in ? l0[j + l] : INFINITY, b[l] = in ? l1[j + l] : INFINITY;
                c[l] = in ? l2[j + l] : INFINITY;
                ra[l] = in ? r0[j + l] : UINT32_MAX, rb[l] = in ? r1[j + l] : UINT32_MAX;
            }
        }
        for (size_t r = 0; r < rows; r++) {
            if (s->a_nan[i0 + r])
                continue;
            if (n == 16)
                memcpy(v, d[r] + j, sizeof v);
            else
                for (size_t l = 0; l < 16; l++)
                    v[l] = l < n ? d[r][j + l] : INFINITY;
            insert16(v, (uint32_t)(i0 + r), a, b, c, ra, rb);
        }
        if (n == 16) { /* a fixed count: vector stores, not a copy loop */
            memcpy(l0 + j, a, sizeof a), memcpy(l1 + j, b, sizeof b), memcpy(l2 + j, c, sizeof c);
            memcpy(r0 + j, ra, sizeof ra), memcpy(r1 + j, rb, sizeof rb);
        } else {
            for (size_t l = 0; l < n; l++)
                l0[j + l] = a[l], l1[j + l] = b[l], l2[j + l] = c[l], r0[j + l] = ra[l], r1[j + l] = rb[l];
        }
    }
}

/* The estimates of rows i0 .. i0 + ROWS (x: their ROWS x dim values, a2
 * their squared norms; rows past the scan's end are zeros, their estimates
 * unused) to the columns j0 .. j0 + len. */
static void tile_estimates(const desc_scan *s, const float *x, const float *a2, size_t j0, size_t len,
                           float d[ROWS][MATCH_BLOCK])
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
                for (int l = 0; l < TILE; l++)
                    acc[r][l] = MADD(xk, col[l], acc[r][l]);
            }
        }
        const float *b2 = s->b2 + j0 + jt;
        for (int r = 0; r < ROWS; r++)
            for (int l = 0; l < TILE; l++)
                d[r][jt + l] = (a2[r] + b2[l]) - 2.0f * acc[r][l];
    }
    for (int r = 0; r < ROWS; r++)
        for (size_t j = jt; j < len; j++) {
            float dot = 0.0f;
            for (int k = 0; k < s->dim; k++)
                dot = MADD(x[r * s->dim + k], s->bt[(size_t)k * s->nb + j0 + j], dot);
            d[r][j] = (a2[r] + s->b2[j0 + j]) - 2.0f * dot;
        }
}

/* Up to ROWS rows from i0, copied side by side (missing rows zero), and
 * their squared norms. */
static size_t load_rows(const desc_scan *s, size_t i0, float *x, float a2[ROWS])
{
    const size_t rows = s->r1 - i0 < ROWS ? s->r1 - i0 : ROWS;
    memset(x, 0, ROWS * (size_t)s->dim * sizeof *x);
    memcpy(x, s->a + i0 * (size_t)s->dim, rows * (size_t)s->dim * sizeof *x);
    for (int r = 0; r < ROWS; r++) {
        a2[r] = 0.0f;
        for (int k = 0; k < s->dim; k++)
            a2[r] = MADD(x[r * s->dim + k], x[r * s->dim + k], a2[r]);
    }
    return rows;
}

void ISA_FN(desc_scan_rows)(const desc_scan *s)
{
    _Static_assert(ROWS <= DESC_SCAN_ROWS, "a scan's scratch holds DESC_SCAN_ROWS rows");
    float d[ROWS][MATCH_BLOCK], a2[ROWS], *x = s->rows;
    row_best best[ROWS];
    for (size_t i0 = s->r0; i0 < s->r1; i0 += ROWS) {
        const size_t rows = load_rows(s, i0, x, a2);
        for (size_t r = 0; r < rows; r++)
            best[r] = (row_best){INFINITY, INFINITY, UINT32_MAX};
        for (size_t j0 = 0; j0 < s->nb; j0 += MATCH_BLOCK) {
            const size_t len = s->nb - j0 < MATCH_BLOCK ? s->nb - j0 : MATCH_BLOCK;
            tile_estimates(s, x, a2, j0, len, d);
            for (size_t r = 0; r < rows; r++)
                if (!s->a_nan[i0 + r])
                    row_block(s, i0 + r, d[r], j0, len, &best[r]);
            if (s->col)
                columns_least(s, (const float(*)[MATCH_BLOCK])d, i0, rows, j0, len);
        }
        for (size_t r = 0; r < rows; r++)
            s->row_best[i0 + r] = best[r].arg;
        for (size_t r = 0; s->row_second && r < rows; r++)
            s->row_second[i0 + r] = best[r].second;
    }
}

void ISA_FN(desc_column_estimates)(const float *at, const float *a2, size_t na, const float *y, float y2, int dim,
                                   float *est)
{
    for (size_t i = 0; i < na; i++)
        est[i] = 0.0f;
    for (int k = 0; k < dim; k++) {
        const float *restrict col = at + (size_t)k * na;
        float *restrict e = est;
        for (size_t i = 0; i < na; i++)
            e[i] = MADD(col[i], y[k], e[i]);
    }
    for (size_t i = 0; i < na; i++)
        est[i] = (a2[i] + y2) - 2.0f * est[i];
}
