/* 3-D Harris fast path, compiled per ISA. Plain loops over padded rows that
 * the compiler vectorises; no reassociation and no FMA contraction
 * (-ffp-contract=off), so every ISA computes the same operations in the
 * same order and gives the same bits. Per tile of rows, planes stream in z:
 *   intensity rows (edge-clamped) -> gradient products g g^T (6 channels)
 *   -> x pass, row by row into a ring of 2r+1 rows (L1) -> y pass into a
 *   ring of 2r+1 planes (L2) -> z pass, score and row maximum, fused.
 * The rings hold the six channels interleaved per block of 16 columns.
 * Every voxel's sums run in the same order whatever the tile, so tiles and
 * threads never change the result. */
#include "feat/harris3d_kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/cpu_isa.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static size_t clamp_index(long v, size_t n) { return v < 0 ? 0 : (size_t)v >= n ? n - 1 : (size_t)v; }

#define CONVERT_ROW(T)                     \
    do {                                   \
        const T *s = (const T *)data + at; \
        for (size_t x = 0; x < nx; x++)    \
            o[x] = (float)s[x];            \
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
                              float *restrict xz, float *restrict yz, const float *restrict c, const float *restrict ym,
                              const float *restrict yp, const float *restrict zm, const float *restrict zp, size_t n)
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

/* The passes run on GCC's vector extension at the ISA's own width (VL
 * lanes: 16 AVX-512, 8 AVX2, 4 SSE; a wider type is kept in memory by GCC
 * where the ISA lacks it, 40% slower on AVX2): each lane does the scalar
 * formula's operations in its order, so every ISA keeps the bits. */
#if defined(__AVX512F__)
#define VL 16
#elif defined(__AVX__)
#define VL 8
#else
#define VL 4
#endif
typedef float vf __attribute__((vector_size(VL * sizeof(float))));
typedef int32_t vi __attribute__((vector_size(VL * sizeof(float))));
/* Blocks of 16 columns, the same on every ISA: the x-smoothed rows and the
 * ring interleave the six channels per block (channel c of block j at
 * (6 j + c) * LANES), so one pointer reaches all six, where 6 (2r + 1)
 * separate row pointers spilled to the stack; and the row maximum keeps 16
 * running lanes, as row_max() did. */
#define LANES 16
#define NB (LANES / VL) /* vectors per block */
#define CH_BLOCK (6 * LANES)

/* The helpers below pass and return vectors; all are inlined, so the
 * compilers' note that such a call's ABI differs by ISA never applies. */
#if defined(__clang__)
#if __has_warning("-Wpsabi")
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

ALWAYS_INLINE vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

ALWAYS_INLINE void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* out = g[r] c[0] + sum_t g[r-t] (c[-t] + c[t]), t = 1..r: the order of
 * the scalar formula, over the vectors at c + s (unaligned loads). */
ALWAYS_INLINE vf taps_at(const float *c, const float *g, int r)
{
    vf acc = g[r] * vload(c);
    for (int t = 1; t <= r; t++)
        acc = acc + g[r - t] * (vload(c - t) + vload(c + t));
    return acc;
}

/* The x pass of one row into channel-interleaved out (nv blocks):
 * prod[c][x + r] is channel c's product at voxel x. */
ALWAYS_INLINE void x_pass_r(float *restrict out, float *const *prod, const float *g, int r, size_t nv)
{
    const float *p[6] = {prod[0] + r, prod[1] + r, prod[2] + r, prod[3] + r, prod[4] + r, prod[5] + r};
    for (size_t j = 0; j < nv; j++)
        for (int c = 0; c < 6; c++)
            for (size_t k = 0; k < NB; k++)
                vstore(out + CH_BLOCK * j + LANES * c + VL * k, taps_at(p[c] + LANES * j + VL * k, g, r));
}

#if VL == 16
/* Lanes s .. s + 15 of a followed by b (s = 0 .. 6). */
#define LANES_FROM(a, b, s)                                                                                         \
    __builtin_shufflevector(a, b, s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6, s + 7, s + 8, s + 9, s + 10, s + 11, \
                            s + 12, s + 13, s + 14, s + 15)

ALWAYS_INLINE vf shift_lanes(vf a, vf b, int s)
{
    switch (s) {
    case 1: return LANES_FROM(a, b, 1);
    case 2: return LANES_FROM(a, b, 2);
    case 3: return LANES_FROM(a, b, 3);
    case 4: return LANES_FROM(a, b, 4);
    case 5: return LANES_FROM(a, b, 5);
    case 6: return LANES_FROM(a, b, 6);
    default: return a;
    }
}

/* x_pass_r for r <= 3 on AVX-512, from aligned loads: the taps of block j
 * are lanes of product vectors j and j + 1, moved into place by one
 * valignd each. Four of the five unaligned loads a tap took crossed a
 * cache line, and the loads bounded the pass. The same values meet the same
 * operations: the same bits. prod[c][16 (nv + 1) - 1] is the last product
 * read. */
ALWAYS_INLINE void x_pass_shuffled_r(float *restrict out, float *const *prod, const float *g, int r, size_t nv)
{
    for (int c = 0; c < 6; c++) {
        const float *p = prod[c];
        vf a = vload(p);
        for (size_t j = 0; j < nv; j++) {
            vf b = vload(p + LANES * (j + 1));
            vf acc = g[r] * shift_lanes(a, b, r);
            for (int t = 1; t <= r; t++)
                acc = acc + g[r - t] * (shift_lanes(a, b, r - t) + shift_lanes(a, b, r + t));
            vstore(out + CH_BLOCK * j + LANES * c, acc);
            a = b;
        }
    }
}
#endif

/* The same sum across 2r + 1 rows, over n floats: rows[s] is row y - r + s
 * (equal strides do not hold in a ring, hence the pointers). */
ALWAYS_INLINE void y_pass_r(float *restrict out, const float *const *rows, const float *g, int r, size_t n)
{
    const float *rw[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    for (int s = 0; s <= 2 * r; s++)
        rw[s] = rows[s];
    for (size_t i = 0; i < n; i += VL) {
        vf acc = g[r] * vload(rw[r] + i);
        for (int t = 1; t <= r; t++)
            acc = acc + g[r - t] * (vload(rw[r - t] + i) + vload(rw[r + t] + i));
        vstore(out + i, acc);
    }
}

/* det(M) - k tr(M)^3 with M = [xx xy xz; xy yy yz; xz yz zz], m in the order
 * xx yy zz xy xz yz: the scalar expression, lane by lane. */
ALWAYS_INLINE vf harris_score(const vf *m, float k)
{
    vf det = m[0] * (m[1] * m[2] - m[5] * m[5]) - m[3] * (m[3] * m[2] - m[4] * m[5]) +
             m[4] * (m[3] * m[5] - m[1] * m[4]);
    vf tr = m[0] + m[1] + m[2];
    return det - k * (tr * tr * tr);
}

/* The lanes of the vector at column x0 within the skipped border set to 0. */
ALWAYS_INLINE vf zero_border_lanes(vf s, size_t x0, size_t nx, size_t border)
{
    float lane[VL];
    vstore(lane, s);
    for (size_t l = 0; l < VL; l++)
        if (x0 + l < border || x0 + l + border >= nx)
            lane[l] = 0.0f;
    return vload(lane);
}

/* The largest lanes so far: v where it is above m (bitwise select, since
 * a plain max loop does not vectorise without -ffast-math). */
ALWAYS_INLINE vf lane_max(vf m, vf v)
{
    vi gt = v > m;
    return (vf)(((vi)v & gt) | ((vi)m & ~gt));
}

/* One output row being written: its scores, the 16 running maxima over its
 * whole blocks, and the last, partial block. */
typedef struct row_out {
    float *out;
    vf best[NB];
    float tail[LANES];
} row_out;

ALWAYS_INLINE void row_begin(row_out *o, float *out)
{
    vf zero = {0};
    o->out = out;
    for (size_t k = 0; k < NB; k++)
        o->best[k] = zero - INFINITY;
    memset(o->tail, 0, sizeof o->tail);
}

/* Vector k of block j, scores s: border columns 0 (border 0: none), stored
 * to out[0, nx); full: how many whole blocks the row has. */
ALWAYS_INLINE void row_put(row_out *o, vf s, size_t j, size_t k, size_t nx, size_t full, size_t border)
{
    size_t x0 = LANES * j + VL * k;
    if (border && (x0 < border || x0 + VL + border > nx))
        s = zero_border_lanes(s, x0, nx, border);
    if (j < full) {
        vstore(o->out + x0, s);
        o->best[k] = lane_max(o->best[k], s);
        return;
    }
    vstore(o->tail + VL * k, s);
    if (k == NB - 1)
        memcpy(o->out + LANES * j, o->tail, (nx - LANES * j) * sizeof *o->out);
}

/* The row's largest score, found as row_max() of harris3d's earlier
 * versions did (sixteen lanes over the whole blocks in order, then the
 * tail), so even the sign of a zero maximum stays the same. */
static float row_end(const row_out *o, size_t nx, size_t full)
{
    float best = o->best[0][0];
    for (size_t l = 1; l < LANES; l++)
        best = o->best[l / VL][l % VL] > best ? o->best[l / VL][l % VL] : best;
    for (size_t x = LANES * full; x < nx; x++)
        best = o->tail[x - LANES * full] > best ? o->tail[x - LANES * full] : best;
    return best;
}

/* One output row: the z pass over planes[s] (plane z - r + s, this row) and
 * the score, stored to out[0, nx); returns the row's maximum. */
ALWAYS_INLINE float z_pass_row_r(float *restrict out, const float *const *planes, const float *g, int r, float k,
                                 size_t nx, size_t border)
{
    const float *pl[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    for (int s = 0; s <= 2 * r; s++)
        pl[s] = planes[s];
    size_t nv = harris_pad(nx) / LANES, full = nx / LANES;
    row_out o;
    row_begin(&o, out);
    for (size_t j = 0; j < nv; j++)
        for (size_t q = 0; q < NB; q++) {
            vf m[6];
            for (int c = 0; c < 6; c++) {
                size_t at = CH_BLOCK * j + LANES * (size_t)c + VL * q;
                m[c] = g[r] * vload(pl[r] + at);
                for (int t = 1; t <= r; t++)
                    m[c] = m[c] + g[r - t] * (vload(pl[r - t] + at) + vload(pl[r + t] + at));
            }
            row_put(&o, harris_score(m, k), j, q, nx, full, border);
        }
    return row_end(&o, nx, full);
}

/* Constant radii for the common windows (3, 5, 7), so the compiler unrolls
 * the taps; other radii take the general loop. */
#define BY_RADIUS(call_r, r)   \
    switch (r) {               \
    case 1: call_r(1); break;  \
    case 2: call_r(2); break;  \
    case 3: call_r(3); break;  \
    default: call_r(r); break; \
    }

static void x_pass(float *out, float *const *prod, const float *g, int r, size_t nv)
{
#if VL == 16
    switch (r) {
    case 1: x_pass_shuffled_r(out, prod, g, 1, nv); return;
    case 2: x_pass_shuffled_r(out, prod, g, 2, nv); return;
    case 3: x_pass_shuffled_r(out, prod, g, 3, nv); return;
    default: break;
    }
#endif
#define X_PASS(R) x_pass_r(out, prod, g, R, nv)
    BY_RADIUS(X_PASS, r)
#undef X_PASS
}

static void y_pass(float *out, const float *const *rows, const float *g, int r, size_t n)
{
#define Y_PASS(R) y_pass_r(out, rows, g, R, n)
    BY_RADIUS(Y_PASS, r)
#undef Y_PASS
}

static float z_pass_row(float *out, const float *const *planes, const float *g, int r, float k, size_t nx,
                        size_t border)
{
    float best = 0;
#define Z_PASS(R) best = z_pass_row_r(out, planes, g, R, k, nx, border)
    BY_RADIUS(Z_PASS, r)
#undef Z_PASS
    return best;
}

typedef struct tile_buffers {
    size_t stride;      /* intensity rows: harris_stride(nx, r) */
    size_t prod_stride; /* product rows: stride + room for the x pass's reach */
    size_t row_floats;  /* one x-smoothed row, six channels interleaved: 6 harris_pad(nx) */
    float *slab[3];
    float *prod[6];
    float *xr[2 * PTREG_HARRIS_MAX_RADIUS + 1];   /* the last 2r + 1 x-smoothed rows (L1) */
    float *ring[2 * PTREG_HARRIS_MAX_RADIUS + 1]; /* the last 2r + 1 xy-smoothed planes (L2) */
} tile_buffers;

/* Rows are whole vectors, and every pass runs over whole vectors: columns
 * past the volume's edge hold finite values that no stored output reads. */
static void carve(const ptreg_harris_tile *t, size_t rows, tile_buffers *b)
{
    size_t w = 2 * (size_t)t->r + 1;
    b->stride = harris_stride(t->nx, t->r);
    b->prod_stride = harris_prod_stride(t->nx, t->r);
    b->row_floats = 6 * harris_pad(t->nx);
    float *p = t->scratch;
    for (int i = 0; i < 3; i++, p += harris_slab_floats(t->nx, t->r, rows))
        b->slab[i] = p;
    for (int c = 0; c < 6; c++, p += b->prod_stride)
        b->prod[c] = p;
    for (size_t s = 0; s < w; s++, p += b->row_floats)
        b->xr[s] = p;
    for (size_t s = 0; s < w; s++, p += rows * b->row_floats)
        b->ring[s] = p;
}

/* Plane zp, smoothed in x and y, into its ring slot. Row by row (slab row
 * 0 is y0 - r - 1): gradient products, the x pass into a ring of 2r + 1
 * rows, and once 2r + 1 rows are there, the y pass. */
static void xy_passes(const ptreg_harris_tile *t, const tile_buffers *b, long zp, size_t rows)
{
    int r = t->r;
    size_t L = b->stride, w = 2 * (size_t)r + 1, nv = harris_pad(t->nx) / LANES;
    /* Products for voxels -r .. 16 nv + r - 1: the x pass's reach. */
    size_t np = harris_pad(LANES * nv + 2 * (size_t)r);
    const float *cur = b->slab[(zp + r + 1) % 3], *below = b->slab[(zp + r) % 3], *above = b->slab[(zp + r + 2) % 3];
    float *const *pr = b->prod;
    float *dst = b->ring[(zp + r) % (long)w];
    const float *rws[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    for (size_t i = 0; i < rows + 2 * (size_t)r; i++) {
        size_t at = (i + 1) * L;
        const float *c = cur + at;
        gradient_products(pr[0], pr[1], pr[2], pr[3], pr[4], pr[5], c, c - L, c + L, below + at, above + at, np);
        x_pass(b->xr[i % w], pr, t->weights, r, nv);
        if (i < 2 * (size_t)r)
            continue;
        size_t y = i - 2 * (size_t)r; /* rows y .. i of the x-smoothed ring */
        for (size_t s = 0; s < w; s++)
            rws[s] = b->xr[(y + s) % w];
        y_pass(dst + y * b->row_floats, rws, t->weights, r, b->row_floats);
    }
}

static int in_border(size_t i, size_t n, int b) { return i < (size_t)b || i + (size_t)b >= n; }

/* One output plane's rows: the z pass and the score, the skipped border set
 * to 0, each row's maximum and the tile's. */
static void score_plane(ptreg_harris_tile *t, const tile_buffers *b, long z, size_t rows)
{
    int r = t->r, border = t->border;
    size_t w = 2 * (size_t)r + 1;
    const float *planes[2 * PTREG_HARRIS_MAX_RADIUS + 1];
    for (size_t y = 0; y < rows; y++) {
        float *out = t->scores + t->nx * (t->y0 + y + t->ny * (size_t)z);
        float *row_best = t->row_max + t->y0 + y + t->ny * (size_t)z;
        if (border && (in_border(t->y0 + y, t->ny, border) || in_border((size_t)z, t->nz, border))) {
            memset(out, 0, t->nx * sizeof *out);
            *row_best = 0.0f;
            t->max = t->max > 0 ? t->max : 0;
            continue;
        }
        for (size_t s = 0; s < w; s++) /* plane z - r + s */
            planes[s] = b->ring[((size_t)z + s) % w] + y * b->row_floats;
        *row_best = z_pass_row(out, planes, t->weights, r, t->k, t->nx, (size_t)border);
        t->max = *row_best > t->max ? *row_best : t->max;
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
static void beat_row(int32_t *restrict peak, const float *restrict c, const float *restrict nb, size_t nx, int earlier)
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
