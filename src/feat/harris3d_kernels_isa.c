/* 3-D Harris fast path, compiled per ISA. Plain loops over padded rows that
 * the compiler vectorises; no reassociation and no FMA contraction
 * (-ffp-contract=off), so every ISA computes the same operations in the
 * same order and gives the same bits. Per tile of rows, planes stream in z:
 *   intensity rows (edge-clamped) -> gradient products g g^T (6 channels)
 *   -> x pass, row by row into a ring of 2r+1 rows (L1) -> y pass into a
 *   ring of 2r+1 planes (L2) -> z pass and score, fused.
 * Every voxel's sums run in the same order whatever the tile, so tiles and
 * threads never change the result. */
#include "feat/harris3d_kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "device/cpu_isa.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static size_t clamp_index(long v, size_t n)
{
    return v < 0 ? 0 : (size_t)v >= n ? n - 1 : (size_t)v;
}

#define CONVERT_ROW(T)                                                                             \
    do {                                                                                           \
        const T *s = (const T *)data + at;                                                         \
        for (size_t x = 0; x < nx; x++)                                                            \
            o[x] = (float)s[x];                                                                    \
    } while (0)

/* dst[halo + x] = voxel at + x, the halo on each side repeating the edge. */
static void load_row(float *dst, const void *data, ptreg_voxel_type type, size_t at, size_t nx, int halo)
{
    float *o = dst + halo;
    switch (type) {
    case PTREG_VOXEL_U8: CONVERT_ROW(uint8_t); break;
    case PTREG_VOXEL_I8: CONVERT_ROW(int8_t); break;
    case PTREG_VOXEL_U16: CONVERT_ROW(uint16_t); break;
    case PTREG_VOXEL_I16: CONVERT_ROW(int16_t); break;
    case PTREG_VOXEL_U32: CONVERT_ROW(uint32_t); break;
    case PTREG_VOXEL_I32: CONVERT_ROW(int32_t); break;
    case PTREG_VOXEL_F32: CONVERT_ROW(float); break;
    case PTREG_VOXEL_F64: CONVERT_ROW(double); break; /* finite as float: checked by the caller */
    }
    for (int i = 0; i < halo; i++) {
        dst[i] = o[0];
        o[nx + (size_t)i] = o[nx - 1];
    }
}

/* Rows ylo .. ylo + rows - 1 of plane z, clamped to the volume. */
static void load_slab(float *slab, size_t li, const ptreg_harris_tile *t, long z, long ylo, size_t rows)
{
    size_t plane = t->nx * t->ny * clamp_index(z, t->nz);
    for (size_t i = 0; i < rows; i++) {
        size_t y = clamp_index(ylo + (long)i, t->ny);
        load_row(slab + i * li, t->data, t->type, plane + t->nx * y, t->nx, t->r + 1);
    }
}

/* Products at positions p = x + r for x in [-r, nx + r); c is the padded
 * intensity row (x at index x + r + 1), the others its neighbors in y and
 * z. Six separate restrict outputs: GCC 12 does not vectorise the loop when
 * they come out of an array. */
static void gradient_products(float *restrict xx, float *restrict yy, float *restrict zz, float *restrict xy,
                              float *restrict xz, float *restrict yz, const float *restrict c,
                              const float *restrict ym, const float *restrict yp, const float *restrict zm,
                              const float *restrict zp, size_t n)
{
    for (size_t p = 0; p < n; p++) {
        float gx = c[p + 2] - c[p], gy = yp[p + 1] - ym[p + 1], gz = zp[p + 1] - zm[p + 1];
        xx[p] = gx * gx;
        yy[p] = gy * gy;
        zz[p] = gz * gz;
        xy[p] = gx * gy;
        xz[p] = gx * gz;
        yz[p] = gy * gz;
    }
}

/* out[x] = g[r] in[x+r] + sum_t g[r-t] (in[x+r-t] + in[x+r+t]), t = 1..r:
 * in starts r before the first output. */
ALWAYS_INLINE void smooth_row_r(float *restrict out, const float *restrict in, const float *g, int r, size_t n)
{
    for (size_t x = 0; x < n; x++) {
        float acc = g[r] * in[x + (size_t)r];
        for (int t = 1; t <= r; t++)
            acc += g[r - t] * (in[x + (size_t)(r - t)] + in[x + (size_t)(r + t)]);
        out[x] = acc;
    }
}

/* The same sum across 2r + 1 rows: out[x] = g[r] row[r][x] + ... */
ALWAYS_INLINE void combine_rows_r(float *restrict out, const float *const *rows, const float *g, int r,
                                  size_t n)
{
    for (size_t x = 0; x < n; x++) {
        float acc = g[r] * rows[r][x];
        for (int t = 1; t <= r; t++)
            acc += g[r - t] * (rows[r - t][x] + rows[r + t][x]);
        out[x] = acc;
    }
}

/* Constant radii for the common windows (3, 5, 7), so the compiler unrolls
 * the taps; other radii take the general loop. */
static void smooth_row(float *out, const float *in, const float *g, int r, size_t n)
{
    switch (r) {
    case 1: smooth_row_r(out, in, g, 1, n); break;
    case 2: smooth_row_r(out, in, g, 2, n); break;
    case 3: smooth_row_r(out, in, g, 3, n); break;
    default: smooth_row_r(out, in, g, r, n); break;
    }
}

static void combine_rows(float *out, const float *const *rows, const float *g, int r, size_t n)
{
    switch (r) {
    case 1: combine_rows_r(out, rows, g, 1, n); break;
    case 2: combine_rows_r(out, rows, g, 2, n); break;
    case 3: combine_rows_r(out, rows, g, 3, n); break;
    default: combine_rows_r(out, rows, g, r, n); break;
    }
}

/* The z pass and the score, fused so the tensor never leaves registers:
 * taps[ch][s] is channel ch's row in plane z - r + s, and
 * out[x] = det(M) - k tr(M)^3 with M = [xx xy xz; xy yy yz; xz yz zz]. */
typedef const float *tap_rows[2 * PTREG_HARRIS_MAX_RADIUS + 1];

ALWAYS_INLINE void z_pass_score_r(float *restrict out, const tap_rows *taps, const float *g, int r, float k,
                                  size_t n)
{
    for (size_t x = 0; x < n; x++) {
        float m[6];
        for (int ch = 0; ch < 6; ch++) {
            float acc = g[r] * taps[ch][r][x];
            for (int t = 1; t <= r; t++)
                acc += g[r - t] * (taps[ch][r - t][x] + taps[ch][r + t][x]);
            m[ch] = acc;
        }
        float det = m[0] * (m[1] * m[2] - m[5] * m[5]) - m[3] * (m[3] * m[2] - m[4] * m[5]) +
                    m[4] * (m[3] * m[5] - m[1] * m[4]);
        float tr = m[0] + m[1] + m[2];
        out[x] = det - k * (tr * tr * tr);
    }
}

static void z_pass_score(float *out, const tap_rows *taps, const float *g, int r, float k, size_t n)
{
    switch (r) {
    case 1: z_pass_score_r(out, taps, g, 1, k, n); break;
    case 2: z_pass_score_r(out, taps, g, 2, k, n); break;
    case 3: z_pass_score_r(out, taps, g, 3, k, n); break;
    default: z_pass_score_r(out, taps, g, r, k, n); break;
    }
}

typedef struct tile_buffers {
    size_t stride;      /* rows of the slabs, x-smoothed rows and the ring: harris_stride(nx, r) */
    size_t prod_stride; /* rows of products: stride + room for the x pass's reach */
    float *slab[3];
    float *prod[6];
    float *xy[2 * PTREG_HARRIS_MAX_RADIUS + 1][6];   /* the last 2r + 1 x-smoothed rows (L1) */
    float *ring[2 * PTREG_HARRIS_MAX_RADIUS + 1][6]; /* the last 2r + 1 xy-smoothed planes (L2) */
} tile_buffers;

/* Rows are whole vectors, and every pass runs over whole rows: columns past
 * the volume's edge hold finite values that no output reads. */
static void carve(const ptreg_harris_tile *t, size_t rows, tile_buffers *b)
{
    size_t r = (size_t)t->r, L = harris_stride(t->nx, t->r);
    b->stride = L;
    b->prod_stride = harris_prod_stride(t->nx, t->r);
    float *p = t->scratch;
    for (int i = 0; i < 3; i++, p += harris_slab_floats(t->nx, t->r, rows))
        b->slab[i] = p;
    for (int c = 0; c < 6; c++, p += b->prod_stride)
        b->prod[c] = p;
    for (size_t s = 0; s < 2 * r + 1; s++)
        for (int c = 0; c < 6; c++, p += L)
            b->xy[s][c] = p;
    for (size_t s = 0; s < 2 * r + 1; s++)
        for (int c = 0; c < 6; c++, p += rows * L)
            b->ring[s][c] = p;
}

/* Plane zp, smoothed in x and y, into its ring slot. Row by row (slab row
 * 0 is y0 - r - 1): gradient products, the x pass into a ring of 2r + 1
 * rows, and once 2r + 1 rows are there, the y pass. */
static void xy_passes(const ptreg_harris_tile *t, const tile_buffers *b, long zp, size_t rows)
{
    int r = t->r, w = 2 * r + 1;
    size_t L = b->stride;
    const float *cur = b->slab[(zp + r + 1) % 3], *below = b->slab[(zp + r) % 3], *above = b->slab[(zp + r + 2) % 3];
    float *const *pr = b->prod;
    float *const *dst = b->ring[(zp + r) % w];
    const float *taps[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    for (size_t i = 0; i < rows + 2 * (size_t)r; i++) {
        size_t at = (i + 1) * L;
        const float *c = cur + at;
        gradient_products(pr[0], pr[1], pr[2], pr[3], pr[4], pr[5], c, c - L, c + L, below + at, above + at,
                          b->prod_stride);
        for (int ch = 0; ch < 6; ch++)
            smooth_row(b->xy[i % (size_t)w][ch], pr[ch], t->weights, r, L);
        if (i < 2 * (size_t)r)
            continue;
        size_t y = i - 2 * (size_t)r; /* rows y .. i of the x-smoothed ring */
        for (int ch = 0; ch < 6; ch++) {
            for (int s = 0; s < w; s++)
                taps[s] = b->xy[(y + (size_t)s) % (size_t)w][ch];
            combine_rows(dst[ch] + y * L, taps, t->weights, r, L);
        }
    }
}

/* The largest of n floats. GCC's vector extension (16 lanes, lowered to
 * what the ISA has) because a plain max loop does not vectorise without
 * -ffast-math. */
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

static float row_max(const float *s, size_t n)
{
    v16f m;
    for (int j = 0; j < 16; j++)
        m[j] = -INFINITY;
    size_t x = 0;
    for (; x + 16 <= n; x += 16) {
        v16f v;
        memcpy(&v, s + x, sizeof v);
        v16i gt = v > m;
        m = (v16f)(((v16i)v & gt) | ((v16i)m & ~gt));
    }
    float best = m[0];
    for (int j = 1; j < 16; j++)
        best = m[j] > best ? m[j] : best;
    for (; x < n; x++)
        best = s[x] > best ? s[x] : best;
    return best;
}

static int in_border(size_t i, size_t n, int b) { return i < (size_t)b || i + (size_t)b >= n; }

/* One output plane's rows: the z pass and the score, the skipped border set
 * to 0, and the tile's maximum. */
static void score_plane(ptreg_harris_tile *t, const tile_buffers *b, long z, size_t rows)
{
    int r = t->r, border = t->border;
    tap_rows taps[6];
    for (size_t y = 0; y < rows; y++) {
        float *out = t->scores + t->nx * (t->y0 + y + t->ny * (size_t)z);
        if (border && (in_border(t->y0 + y, t->ny, border) || in_border((size_t)z, t->nz, border))) {
            memset(out, 0, t->nx * sizeof *out);
            t->row_max[t->y0 + y + t->ny * (size_t)z] = 0.0f;
            t->max = t->max > 0 ? t->max : 0;
            continue;
        }
        for (int ch = 0; ch < 6; ch++)
            for (int s = 0; s <= 2 * r; s++)
                taps[ch][s] = b->ring[(z + s) % (2 * r + 1)][ch] + y * b->stride; /* plane z - r + s */
        z_pass_score(out, taps, t->weights, r, t->k, t->nx);
        if (border) {
            size_t edge = (size_t)border < t->nx ? (size_t)border : t->nx;
            memset(out, 0, edge * sizeof *out);
            memset(out + t->nx - edge, 0, edge * sizeof *out);
        }
        float row_best = row_max(out, t->nx);
        t->row_max[t->y0 + y + t->ny * (size_t)z] = row_best;
        t->max = row_best > t->max ? row_best : t->max;
    }
}

void ISA_FN(ptreg_harris_tile)(ptreg_harris_tile *t)
{
    int r = t->r;
    size_t rows = t->y1 - t->y0, slab_rows = rows + 2 * (size_t)r + 2;
    long ylo = (long)t->y0 - r - 1, nz = (long)t->nz;
    tile_buffers b;
    carve(t, rows, &b);
    t->max = -INFINITY;
    /* Slab slot of plane z is (z + r + 1) % 3; ring slot (z + r) % (2r + 1). */
    load_slab(b.slab[0], b.stride, t, -r - 1, ylo, slab_rows);
    load_slab(b.slab[1], b.stride, t, -r, ylo, slab_rows);
    for (long zp = -r; zp < nz + r; zp++) {
        load_slab(b.slab[(zp + r + 2) % 3], b.stride, t, zp + 1, ylo, slab_rows);
        xy_passes(t, &b, zp, rows);
        if (zp >= r)
            score_plane(t, &b, zp - r, rows);
    }
}

/* peak[x] &= the centre beats row nb at x - 1, x, x + 1 (strictly when nb
 * comes earlier in raster order). x = 0 and nx - 1 see only their
 * neighbors inside the row. */
static void beat_row(int32_t *restrict peak, const float *restrict c, const float *restrict nb, size_t nx,
                     int earlier)
{
    size_t last = nx - 1;
    if (earlier) {
        for (size_t x = 1; x < last; x++)
            peak[x] &= (c[x] > nb[x - 1]) & (c[x] > nb[x]) & (c[x] > nb[x + 1]);
    } else {
        for (size_t x = 1; x < last; x++)
            peak[x] &= (c[x] >= nb[x - 1]) & (c[x] >= nb[x]) & (c[x] >= nb[x + 1]);
    }
    for (size_t x = 0; x < nx; x += last ? last : 1)
        for (size_t j = x ? x - 1 : 0; j <= x + 1 && j < nx; j++)
            peak[x] &= earlier ? c[x] > nb[j] : c[x] >= nb[j];
}

void ISA_FN(harris_peaks)(const harris_peak_row *row)
{
    size_t nx = row->nx, y = row->y, z = row->z;
    const float *c = row->scores + nx * (y + row->ny * z);
    int32_t *peak = row->peak;
    for (size_t x = 0; x < nx; x++)
        peak[x] = c[x] > row->thr;
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++) {
            if ((dz < 0 && z == 0) || (dz > 0 && z + 1 == row->nz) || (dy < 0 && y == 0) ||
                (dy > 0 && y + 1 == row->ny) || (!dz && !dy))
                continue;
            const float *nb = row->scores + nx * (y + (size_t)dy + row->ny * (z + (size_t)dz));
            beat_row(peak, c, nb, nx, dz < 0 || (dz == 0 && dy < 0));
        }
    /* The row itself: x - 1 comes earlier, x + 1 later. */
    for (size_t x = 1; x < nx; x++)
        peak[x] &= c[x] > c[x - 1];
    for (size_t x = 0; x + 1 < nx; x++)
        peak[x] &= c[x] >= c[x + 1];
}
