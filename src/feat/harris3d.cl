/* 3-D Harris on a device (harris3d_device.c drives it; the CPU fast path,
 * harris3d_kernels_isa.c, is the reference). Every method computes each
 * voxel's sums in the CPU's order: the gradient products, a symmetric x
 * sum g[R] P(0) + sum_t g[R-t] (P(-t) + P(+t)), the same sum of those in
 * y, then in z, then det(M) - k tr(M)^3 as the CPU writes it. With no FMA
 * contraction (dialect.h) the scores have the CPU's bits, so the keypoints
 * are the CPU's too.
 *
 * -D options:
 *   WG            threads of the 1-D kernels (keypoints, max), a power of two
 *   SORT_RUN      keys a group sorts in local memory, a power of two >= 2 WG
 *   HARRIS_INPUT  8, 16 or 32: the volume's voxels are u8, u16 or float
 *                 (read directly; the host converts other types to float,
 *                 as the CPU path does)
 *   HARRIS_R      window radius (W = 2 R + 1); sizes the register and
 *                 local arrays and lets the compiler unroll the taps
 *   HARRIS_METHOD 0 direct: one voxel per thread, every window voxel's
 *                   gradient recomputed from global memory (W^3 products)
 *                 1 tile: a TX x TY x TZ brick of voxels per group, its
 *                   gradient products plus a halo of R in local memory,
 *                   then each thread's W^3 window sums (per channel, in
 *                   the separable order) from local memory
 *                 2 separable: three launches through global scratch (x
 *                   pass over a padded volume, y pass, z pass and score)
 *                 3 zchunk: a TX x TY column tile per group walks ZC planes
 *                   in z; per plane the intensities (a ring of 3 planes),
 *                   the products and the x pass sit in local memory, the y
 *                   pass goes to registers, and the last W planes' sums
 *                   stay in registers for the z pass
 *   HARRIS_TX, HARRIS_TY, HARRIS_TZ  tile of methods 1 (all three) and 3
 *                 (TX x TY threads); HARRIS_ZC: planes per group (method 3)
 * Borders: intensities are read edge-clamped, so a gradient outside the
 * volume is I(clamp(q + e)) - I(clamp(q - e)) as on the CPU; in skip mode
 * (border > 0) the voxels within `border` of a face are written as 0. */

#if HARRIS_INPUT == 8
typedef u8 vox_t;
#elif HARRIS_INPUT == 16
typedef u16 vox_t;
#else
typedef float vox_t;
#endif

#define HW (2 * HARRIS_R + 1)

FN i32 clamp_i(i32 v, u32 n) { return v < 0 ? 0 : v >= (i32)n ? (i32)n - 1 : v; }

FN float vox_at(GLOBAL const vox_t *vol, i32 x, i32 y, i32 z, u32 nx, u32 ny, u32 nz)
{
    u64 at = (u64)clamp_i(x, nx) + (u64)nx * ((u64)clamp_i(y, ny) + (u64)ny * (u64)clamp_i(z, nz));
    return (float)vol[at];
}

/* The six products of a gradient: xx yy zz xy xz yz (the CPU's channels). */
FN void products(float gx, float gy, float gz, float *p)
{
    p[0] = gx * gx;
    p[1] = gy * gy;
    p[2] = gz * gz;
    p[3] = gx * gy;
    p[4] = gx * gz;
    p[5] = gy * gz;
}

FN float harris_score(const float *m, float k)
{
    float det = m[0] * (m[1] * m[2] - m[5] * m[5]) - m[3] * (m[3] * m[2] - m[4] * m[5]) +
                m[4] * (m[3] * m[5] - m[1] * m[4]);
    float tr = m[0] + m[1] + m[2];
    return det - k * (tr * tr * tr);
}

FN int in_border(u32 i, u32 n, u32 b) { return i < b || i + b >= n; }

FN int skipped(u32 x, u32 y, u32 z, u32 nx, u32 ny, u32 nz, u32 border)
{
    return border && (in_border(x, nx, border) || in_border(y, ny, border) || in_border(z, nz, border));
}

/* acc = g[R] c + sum_t g[R-t] (lo_t + hi_t): one tap pair at a time. */
FN void tap_first(float *acc, const float *c, float g)
{
    for (int ch = 0; ch < 6; ch++)
        acc[ch] = g * c[ch];
}

FN void tap_pair(float *acc, const float *lo, const float *hi, float g)
{
    for (int ch = 0; ch < 6; ch++)
        acc[ch] += g * (lo[ch] + hi[ch]);
}

/* ---- window sums from a source of intensities --------------------------
 * The x, y and z sums of methods 0, 1 and 2, generated for a source: the
 * volume in global memory (edge-clamped reads) or a brick in local memory.
 * SRC_ARGS are the source's parameters, SRC_FETCH(x, y, z) an intensity. */

#define HARRIS_WINDOW_SUMS(SFX, SRC_PARAMS, SRC_ARGS, SRC_FETCH)                                               \
    FN void prod_##SFX(SRC_PARAMS, i32 x, i32 y, i32 z, float *p)                                              \
    {                                                                                                          \
        products(SRC_FETCH(x + 1, y, z) - SRC_FETCH(x - 1, y, z), SRC_FETCH(x, y + 1, z) - SRC_FETCH(x, y - 1, z), \
                 SRC_FETCH(x, y, z + 1) - SRC_FETCH(x, y, z - 1), p);                                          \
    }                                                                                                          \
    FN void xsum_##SFX(SRC_PARAMS, GLOBAL const float *g, i32 x, i32 y, i32 z, float *acc)                    \
    {                                                                                                          \
        float lo[6], hi[6];                                                                                    \
        prod_##SFX(SRC_ARGS, x, y, z, lo);                                                                     \
        tap_first(acc, lo, g[HARRIS_R]);                                                                       \
        for (int t = 1; t <= HARRIS_R; t++) {                                                                  \
            prod_##SFX(SRC_ARGS, x - t, y, z, lo);                                                             \
            prod_##SFX(SRC_ARGS, x + t, y, z, hi);                                                             \
            tap_pair(acc, lo, hi, g[HARRIS_R - t]);                                                            \
        }                                                                                                      \
    }                                                                                                          \
    FN void ysum_##SFX(SRC_PARAMS, GLOBAL const float *g, i32 x, i32 y, i32 z, float *acc)                    \
    {                                                                                                          \
        float lo[6], hi[6];                                                                                    \
        xsum_##SFX(SRC_ARGS, g, x, y, z, lo);                                                                  \
        tap_first(acc, lo, g[HARRIS_R]);                                                                       \
        for (int t = 1; t <= HARRIS_R; t++) {                                                                  \
            xsum_##SFX(SRC_ARGS, g, x, y - t, z, lo);                                                          \
            xsum_##SFX(SRC_ARGS, g, x, y + t, z, hi);                                                          \
            tap_pair(acc, lo, hi, g[HARRIS_R - t]);                                                            \
        }                                                                                                      \
    }                                                                                                          \
    FN void zsum_##SFX(SRC_PARAMS, GLOBAL const float *g, i32 x, i32 y, i32 z, float *acc)                    \
    {                                                                                                          \
        float lo[6], hi[6];                                                                                    \
        ysum_##SFX(SRC_ARGS, g, x, y, z, lo);                                                                  \
        tap_first(acc, lo, g[HARRIS_R]);                                                                       \
        for (int t = 1; t <= HARRIS_R; t++) {                                                                  \
            ysum_##SFX(SRC_ARGS, g, x, y, z - t, lo);                                                          \
            ysum_##SFX(SRC_ARGS, g, x, y, z + t, hi);                                                          \
            tap_pair(acc, lo, hi, g[HARRIS_R - t]);                                                            \
        }                                                                                                      \
    }

#define GLOBAL_SRC_PARAMS GLOBAL const vox_t *vol, u32 nx, u32 ny, u32 nz
#define GLOBAL_SRC_ARGS vol, nx, ny, nz
#define GLOBAL_FETCH(x, y, z) vox_at(vol, (x), (y), (z), nx, ny, nz)
HARRIS_WINDOW_SUMS(vol, GLOBAL_SRC_PARAMS, GLOBAL_SRC_ARGS, GLOBAL_FETCH)

/* ---- method 0: direct ---------------------------------------------------- */

#if HARRIS_METHOD == 0
KERNEL ptreg_harris_direct(GLOBAL const vox_t *RESTRICT vol, u32 nx, u32 ny, u32 nz, GLOBAL const float *RESTRICT g,
                           float k, u32 border, GLOBAL float *RESTRICT scores)
{
    u32 i = GLOBAL_ID_X;
    u32 n = nx * ny * nz; /* the host keeps volumes below 2^32 voxels */
    if (i < n) {
        u32 x = i % nx, y = i / nx % ny, z = i / nx / ny;
        float m[6];
        if (skipped(x, y, z, nx, ny, nz, border)) {
            scores[i] = 0.0f;
        } else {
            zsum_vol(GLOBAL_SRC_ARGS, g, (i32)x, (i32)y, (i32)z, m);
            scores[i] = harris_score(m, k);
        }
    }
}
#endif

/* ---- method 1: a brick in local memory ------------------------------------ */

#if HARRIS_METHOD == 1
/* The group's brick of gradient products: the tile plus R each side;
 * brick (x, y, z) is voxel (x0 + x - R, ...). The sums are scalar, one
 * channel at a time: POCL's default work-group method gave NaN for the
 * private 6-channel arrays of the global-memory form after a barrier. */
#define BX (HARRIS_TX + 2 * HARRIS_R)
#define BY (HARRIS_TY + 2 * HARRIS_R)
#define BZ (HARRIS_TZ + 2 * HARRIS_R)
#define BRICK (BX * BY * BZ)
#define BAT(x, y, z) ((u32)((x) + HARRIS_R) + BX * ((u32)((y) + HARRIS_R) + BY * (u32)((z) + HARRIS_R)))

FN float brick_x(LOCAL const float *p, GLOBAL const float *g, i32 x, i32 y, i32 z)
{
    float acc = g[HARRIS_R] * p[BAT(x, y, z)];
    for (int t = 1; t <= HARRIS_R; t++)
        acc += g[HARRIS_R - t] * (p[BAT(x - t, y, z)] + p[BAT(x + t, y, z)]);
    return acc;
}

FN float brick_y(LOCAL const float *p, GLOBAL const float *g, i32 x, i32 y, i32 z)
{
    float acc = g[HARRIS_R] * brick_x(p, g, x, y, z);
    for (int t = 1; t <= HARRIS_R; t++)
        acc += g[HARRIS_R - t] * (brick_x(p, g, x, y - t, z) + brick_x(p, g, x, y + t, z));
    return acc;
}

FN float brick_z(LOCAL const float *p, GLOBAL const float *g, i32 x, i32 y, i32 z)
{
    float acc = g[HARRIS_R] * brick_y(p, g, x, y, z);
    for (int t = 1; t <= HARRIS_R; t++)
        acc += g[HARRIS_R - t] * (brick_y(p, g, x, y, z - t) + brick_y(p, g, x, y, z + t));
    return acc;
}

KERNEL ptreg_harris_tile(GLOBAL const vox_t *RESTRICT vol, u32 nx, u32 ny, u32 nz, GLOBAL const float *RESTRICT g,
                         float k, u32 border, GLOBAL float *RESTRICT scores)
{
    SHARED float prod[6 * BRICK];
    u32 tiles_x = (nx + HARRIS_TX - 1) / HARRIS_TX, tiles_y = (ny + HARRIS_TY - 1) / HARRIS_TY;
    u32 gid = GROUP_ID_X, t = LOCAL_ID_X;
    i32 x0 = (i32)(gid % tiles_x * HARRIS_TX), y0 = (i32)(gid / tiles_x % tiles_y * HARRIS_TY),
        z0 = (i32)(gid / tiles_x / tiles_y * HARRIS_TZ);
    for (u32 j = t; j < BRICK; j += HARRIS_TX * HARRIS_TY * HARRIS_TZ) {
        i32 x = x0 + (i32)(j % BX) - HARRIS_R, y = y0 + (i32)(j / BX % BY) - HARRIS_R,
            z = z0 + (i32)(j / BX / BY) - HARRIS_R;
        float p[6];
        products(GLOBAL_FETCH(x + 1, y, z) - GLOBAL_FETCH(x - 1, y, z),
                 GLOBAL_FETCH(x, y + 1, z) - GLOBAL_FETCH(x, y - 1, z),
                 GLOBAL_FETCH(x, y, z + 1) - GLOBAL_FETCH(x, y, z - 1), p);
        for (int ch = 0; ch < 6; ch++)
            prod[ch * BRICK + j] = p[ch];
    }
    BARRIER();
    i32 lx = (i32)(t % HARRIS_TX), ly = (i32)(t / HARRIS_TX % HARRIS_TY), lz = (i32)(t / HARRIS_TX / HARRIS_TY);
    u32 x = (u32)(x0 + lx), y = (u32)(y0 + ly), z = (u32)(z0 + lz);
    if (x < nx && y < ny && z < nz) {
        u64 at = (u64)x + (u64)nx * ((u64)y + (u64)ny * z);
        float m[6];
        for (int ch = 0; ch < 6; ch++)
            m[ch] = brick_z(prod + ch * BRICK, g, lx, ly, lz);
        scores[at] = skipped(x, y, z, nx, ny, nz, border) ? 0.0f : harris_score(m, k);
    }
}
#endif

/* ---- method 2: separable passes through global scratch -------------------
 * X: 6 channels over x in [0, nx), y in [-R, ny + R), z in [-R, nz + R);
 * Y: 6 channels over x, y in the volume, z in [-R, nz + R). */

#if HARRIS_METHOD == 2
KERNEL ptreg_harris_sep_x(GLOBAL const vox_t *RESTRICT vol, u32 nx, u32 ny, u32 nz, GLOBAL const float *RESTRICT g,
                          GLOBAL float *RESTRICT xs)
{
    u32 i = GLOBAL_ID_X, py = ny + 2 * HARRIS_R, pz = nz + 2 * HARRIS_R;
    u64 plane = (u64)nx * py * pz;
    if (i < plane) {
        u32 x = i % nx, y = i / nx % py, z = i / nx / py;
        float acc[6];
        xsum_vol(GLOBAL_SRC_ARGS, g, (i32)x, (i32)y - HARRIS_R, (i32)z - HARRIS_R, acc);
        for (int ch = 0; ch < 6; ch++)
            xs[ch * plane + i] = acc[ch];
    }
}

KERNEL ptreg_harris_sep_y(GLOBAL const float *RESTRICT xs, u32 nx, u32 ny, u32 nz, GLOBAL const float *RESTRICT g,
                          GLOBAL float *RESTRICT ys)
{
    u32 i = GLOBAL_ID_X, py = ny + 2 * HARRIS_R, pz = nz + 2 * HARRIS_R;
    u64 xplane = (u64)nx * py * pz, yplane = (u64)nx * ny * pz;
    if (i < yplane) {
        u32 x = i % nx, y = i / nx % ny, z = i / nx / ny;
        u64 c = (u64)x + (u64)nx * ((u64)(y + HARRIS_R) + (u64)py * z);
        for (int ch = 0; ch < 6; ch++) {
            GLOBAL const float *s = xs + ch * xplane + c;
            float acc = g[HARRIS_R] * s[0];
            for (int t = 1; t <= HARRIS_R; t++)
                acc += g[HARRIS_R - t] * (s[-(i64)t * nx] + s[(i64)t * nx]);
            ys[ch * yplane + i] = acc;
        }
    }
}

KERNEL ptreg_harris_sep_z(GLOBAL const float *RESTRICT ys, u32 nx, u32 ny, u32 nz, GLOBAL const float *RESTRICT g,
                          float k, u32 border, GLOBAL float *RESTRICT scores)
{
    u32 i = GLOBAL_ID_X, pz = nz + 2 * HARRIS_R;
    u64 yplane = (u64)nx * ny * pz, slice = (u64)nx * ny;
    if (i < (u64)nx * ny * nz) {
        u32 x = i % nx, y = i / nx % ny, z = i / nx / ny;
        float m[6];
        u64 c = (u64)x + (u64)nx * ((u64)y + (u64)ny * (z + HARRIS_R));
        for (int ch = 0; ch < 6; ch++) {
            GLOBAL const float *s = ys + ch * yplane + c;
            float acc = g[HARRIS_R] * s[0];
            for (int t = 1; t <= HARRIS_R; t++)
                acc += g[HARRIS_R - t] * (s[-(i64)t * (i64)slice] + s[(i64)t * (i64)slice]);
            m[ch] = acc;
        }
        scores[i] = skipped(x, y, z, nx, ny, nz, border) ? 0.0f : harris_score(m, k);
    }
}
#endif

/* ---- method 3: z chunks, planes rotating through local memory ------------ */

#if HARRIS_METHOD == 3
#define ZT (HARRIS_TX * HARRIS_TY)        /* threads per group */
#define IX (HARRIS_TX + 2 * HARRIS_R + 2) /* an intensity plane of the tile */
#define IY (HARRIS_TY + 2 * HARRIS_R + 2)
#define PX (HARRIS_TX + 2 * HARRIS_R) /* products: the tile plus R each side */
#define PY (HARRIS_TY + 2 * HARRIS_R)

/* Plane z of the tile (x0 - R - 1 .., y0 - R - 1 ..), edge-clamped. */
FN void load_plane(LOCAL float *dst, GLOBAL const vox_t *vol, i32 x0, i32 y0, i32 z, u32 nx, u32 ny, u32 nz)
{
    for (u32 j = LOCAL_ID_X; j < IX * IY; j += ZT)
        dst[j] = vox_at(vol, x0 - HARRIS_R - 1 + (i32)(j % IX), y0 - HARRIS_R - 1 + (i32)(j / IX), z, nx, ny, nz);
}

KERNEL ptreg_harris_zchunk(GLOBAL const vox_t *RESTRICT vol, u32 nx, u32 ny, u32 nz, GLOBAL const float *RESTRICT g,
                           float k, u32 border, GLOBAL float *RESTRICT scores)
{
    SHARED float inten[3 * IX * IY];
    SHARED float prod[6 * PX * PY];
    SHARED float xsm[6 * HARRIS_TX * PY];
    u32 tiles_x = (nx + HARRIS_TX - 1) / HARRIS_TX, tiles_y = (ny + HARRIS_TY - 1) / HARRIS_TY;
    u32 gid = GROUP_ID_X, t = LOCAL_ID_X;
    i32 x0 = (i32)(gid % tiles_x * HARRIS_TX), y0 = (i32)(gid / tiles_x % tiles_y * HARRIS_TY),
        z0 = (i32)(gid / tiles_x / tiles_y * HARRIS_ZC);
    i32 tx = (i32)(t % HARRIS_TX), ty = (i32)(t / HARRIS_TX);
    float gw[HW];
    for (int s = 0; s < HW; s++)
        gw[s] = g[s];
    /* win[ch][s]: the xy sums of plane zp - 2R + s at this thread's column */
    float win[6][HW];
    for (int ch = 0; ch < 6; ch++)
        for (int s = 0; s < HW; s++)
            win[ch][s] = 0.0f;
    /* ring slot of plane z0 - R - 1 + j is j % 3 */
    load_plane(inten, vol, x0, y0, z0 - HARRIS_R - 1, nx, ny, nz);
    load_plane(inten + IX * IY, vol, x0, y0, z0 - HARRIS_R, nx, ny, nz);
    for (i32 j = 0; j < HARRIS_ZC + 2 * HARRIS_R; j++) {
        i32 zp = z0 - HARRIS_R + j;
        load_plane(inten + (u32)((j + 2) % 3) * IX * IY, vol, x0, y0, zp + 1, nx, ny, nz);
        BARRIER();
        LOCAL const float *below = inten + (u32)(j % 3) * IX * IY, *cur = inten + (u32)((j + 1) % 3) * IX * IY,
                          *above = inten + (u32)((j + 2) % 3) * IX * IY;
        for (u32 q = t; q < PX * PY; q += ZT) {
            u32 c = (q % PX + 1) + IX * (q / PX + 1);
            float p[6];
            products(cur[c + 1] - cur[c - 1], cur[c + IX] - cur[c - IX], above[c] - below[c], p);
            for (int ch = 0; ch < 6; ch++)
                prod[ch * PX * PY + q] = p[ch];
        }
        BARRIER();
        for (u32 q = t; q < HARRIS_TX * PY; q += ZT) {
            u32 c = q % HARRIS_TX + HARRIS_R + PX * (q / HARRIS_TX);
            for (int ch = 0; ch < 6; ch++) {
                LOCAL const float *s = prod + ch * PX * PY + c;
                float acc = gw[HARRIS_R] * s[0];
                for (int u = 1; u <= HARRIS_R; u++)
                    acc += gw[HARRIS_R - u] * (s[-u] + s[u]);
                xsm[ch * HARRIS_TX * PY + q] = acc;
            }
        }
        BARRIER();
        for (int ch = 0; ch < 6; ch++) {
            LOCAL const float *s = xsm + ch * HARRIS_TX * PY + (u32)tx + HARRIS_TX * (u32)(ty + HARRIS_R);
            float acc = gw[HARRIS_R] * s[0];
            for (int u = 1; u <= HARRIS_R; u++)
                acc += gw[HARRIS_R - u] * (s[-u * HARRIS_TX] + s[u * HARRIS_TX]);
            for (int s2 = 0; s2 < HW - 1; s2++)
                win[ch][s2] = win[ch][s2 + 1];
            win[ch][HW - 1] = acc;
        }
        i32 z = zp - HARRIS_R;
        u32 x = (u32)(x0 + tx), y = (u32)(y0 + ty);
        if (j >= 2 * HARRIS_R && x < nx && y < ny && (u32)z < nz) {
            float m[6];
            for (int ch = 0; ch < 6; ch++) {
                float acc = gw[HARRIS_R] * win[ch][HARRIS_R];
                for (int u = 1; u <= HARRIS_R; u++)
                    acc += gw[HARRIS_R - u] * (win[ch][HARRIS_R - u] + win[ch][HARRIS_R + u]);
                m[ch] = acc;
            }
            u64 at = (u64)x + (u64)nx * ((u64)y + (u64)ny * (u32)z);
            scores[at] = skipped(x, y, (u32)z, nx, ny, nz, border) ? 0.0f : harris_score(m, k);
        }
        /* the next plane's load overwrites slot j % 3, read above */
        BARRIER();
    }
}
#endif

/* ---- keypoints ----------------------------------------------------------- */

/* Each group's largest score over a stride of the whole grid (the max does
 * not depend on the order, the tree makes it the same work every run); the
 * host takes the largest partial. */
KERNEL ptreg_harris_max_partial(GLOBAL const float *RESTRICT scores, u32 n, GLOBAL float *RESTRICT partial)
{
    SHARED float red[WG];
    u32 t = LOCAL_ID_X, stride = GROUPS_X * WG;
    float best = -INF_F;
    for (u32 i = GLOBAL_ID_X; i < n; i += stride)
        best = scores[i] > best ? scores[i] : best;
    red[t] = best;
    BARRIER();
    for (u32 s = WG / 2; s > 0; s /= 2) {
        if (t < s)
            red[t] = red[t + s] > red[t] ? red[t + s] : red[t];
        BARRIER();
    }
    if (t == 0)
        partial[GROUP_ID_X] = red[0];
}

/* Is voxel i above thr and a peak of its 26 neighbors (an equal neighbor
 * loses when it comes later in raster order, x fastest)? Neighbors outside
 * the volume do not count, as on the CPU. Two neighbors are never both
 * peaks, so a volume holds at most one per 2x2x2 block. */
FN int is_peak(GLOBAL const float *scores, u32 i, u32 nx, u32 ny, u32 nz, float thr)
{
    float c = scores[i];
    if (!(c > thr))
        return 0;
    i32 x = (i32)(i % nx), y = (i32)(i / nx % ny), z = (i32)(i / nx / ny);
    for (i32 dz = -1; dz <= 1; dz++)
        for (i32 dy = -1; dy <= 1; dy++)
            for (i32 dx = -1; dx <= 1; dx++) {
                i32 qx = x + dx, qy = y + dy, qz = z + dz;
                if ((!dx && !dy && !dz) || qx < 0 || qy < 0 || qz < 0 || qx >= (i32)nx || qy >= (i32)ny ||
                    qz >= (i32)nz)
                    continue;
                float nb = scores[(u32)qx + nx * ((u32)qy + ny * (u32)qz)];
                int earlier = dz < 0 || (dz == 0 && (dy < 0 || (dy == 0 && dx < 0)));
                if (earlier ? !(c > nb) : !(c >= nb))
                    return 0;
            }
    return 1;
}

/* Exclusive prefix sum of v over the group (Hillis-Steele in buf[WG]);
 * *total gets the group's sum. Every thread must call it. */
FN u32 group_scan(LOCAL u32 *buf, u32 v, u32 *total)
{
    u32 t = LOCAL_ID_X;
    buf[t] = v;
    BARRIER();
    for (u32 off = 1; off < WG; off *= 2) {
        u32 add = t >= off ? buf[t - off] : 0u;
        BARRIER();
        buf[t] += add;
        BARRIER();
    }
    u32 incl = buf[t];
    *total = buf[WG - 1];
    BARRIER();
    return incl - v;
}

/* Voxel j of the group's items * WG (the rows a group scans: a thread's
 * voxels are WG apart, so neighbors read neighbors). */
FN u32 group_voxel(u32 items, u32 j) { return (GROUP_ID_X * items + j) * WG + LOCAL_ID_X; }

/* counts[group] = the peaks above thr among the group's items * WG voxels. */
KERNEL ptreg_harris_peak_count(GLOBAL const float *RESTRICT scores, u32 nx, u32 ny, u32 nz, float thr, u32 items,
                               GLOBAL u32 *RESTRICT counts)
{
    SHARED u32 buf[WG];
    const u32 n = nx * ny * nz;
    u32 mine = 0, total;
    for (u32 j = 0; j < items; j++) {
        const u32 i = group_voxel(items, j);
        mine += i < n ? (u32)is_peak(scores, i, nx, ny, nz, thr) : 0u;
    }
    group_scan(buf, mine, &total);
    if (LOCAL_ID_X == 0)
        counts[GROUP_ID_X] = total;
}

/* The peaks above thr in raster order, each as a key: the score's bits
 * inverted (best first: every score is > 0, where float bits order as the
 * floats) above the voxel's index (ties in raster order). A group's first
 * slot is the earlier groups' counts added up here (at most a few
 * thousand: the host sizes items so); the last group writes the total. */
KERNEL ptreg_harris_peak_write(GLOBAL const float *RESTRICT scores, u32 nx, u32 ny, u32 nz, float thr, u32 items,
                               GLOBAL const u32 *RESTRICT counts, GLOBAL u64 *RESTRICT key, GLOBAL u32 *RESTRICT total)
{
    SHARED u32 buf[WG];
    const u32 n = nx * ny * nz;
    u32 earlier = 0, sum;
    for (u32 g = LOCAL_ID_X; g < GROUP_ID_X; g += WG)
        earlier += counts[g];
    group_scan(buf, earlier, &sum);
    u32 at = sum;
    for (u32 j = 0; j < items; j++) {
        const u32 i = group_voxel(items, j);
        const u32 flag = i < n ? (u32)is_peak(scores, i, nx, ny, nz, thr) : 0u;
        u32 step;
        const u32 pos = at + group_scan(buf, flag, &step);
        if (flag)
            key[pos] = ((u64)(~AS_UINT(scores[i])) << 32) | (u64)i;
        at += step;
    }
    if (GROUP_ID_X == GROUPS_X - 1 && LOCAL_ID_X == 0)
        total[0] = at;
}

/* Each run of SORT_RUN keys sorted ascending in local memory by a bitonic
 * network (the last run padded with the largest key). */
KERNEL ptreg_harris_sort_runs(GLOBAL u64 *RESTRICT key, u32 count)
{
    SHARED u64 run[SORT_RUN];
    u32 t = LOCAL_ID_X, base = GROUP_ID_X * SORT_RUN;
    for (u32 i = t; i < SORT_RUN; i += WG)
        run[i] = base + i < count ? key[base + i] : ~(u64)0;
    BARRIER();
    for (u32 k = 2; k <= SORT_RUN; k *= 2)
        for (u32 j = k / 2; j > 0; j /= 2) {
            for (u32 p = t; p < SORT_RUN / 2; p += WG) {
                u32 i = 2 * p - (p & (j - 1)), l = i + j;
                u64 a = run[i], b = run[l];
                if ((i & k) == 0 ? a > b : a < b) {
                    run[i] = b;
                    run[l] = a;
                }
            }
            BARRIER();
        }
    for (u32 i = t; i < SORT_RUN; i += WG)
        if (base + i < count)
            key[base + i] = run[i];
}

/* The number of keys in the sorted run [lo, hi) below k. */
FN u32 keys_below(GLOBAL const u64 *key, u32 lo, u32 hi, u64 k)
{
    while (lo < hi) {
        u32 mid = lo + (hi - lo) / 2;
        if (key[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Groups of `fan` sorted runs of `run` keys merged into one sorted run
 * each: a key's place is its place in its own run plus the keys below it
 * in the group's other runs (the keys are distinct). */
KERNEL ptreg_harris_merge_runs(GLOBAL const u64 *RESTRICT src, u32 count, u32 run, u32 fan, GLOBAL u64 *RESTRICT dst)
{
    u32 i = GLOBAL_ID_X;
    if (i >= count)
        return;
    u64 k = src[i];
    u32 r = i / run, first = r / fan * fan, runs = (count + run - 1) / run;
    u32 last = MIN_U32(first + fan, runs), pos = i - r * run;
    for (u32 q = first; q < last; q++)
        if (q != r) {
            u32 lo = q * run, hi = MIN_U32(lo + run, count);
            pos += keys_below(src, lo, hi, k) - lo;
        }
    dst[first * run + pos] = k;
}
