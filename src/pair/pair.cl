/* The pair engine's Gaussian sums on a device (pair_device.c drives them;
 * the CPU's are pair_kernels_isa.c): for each row point a_i, over every
 * column point b_j, with e_ij = exp(-scale |a_i - b_j|^2),
 *   sum e, sum e^2, sum e b_x, sum e b_y, sum e b_z
 * in O(n + m) memory. A work-group takes WG rows, one per thread, and
 * sweeps a split of the columns, WG columns at a time through local memory
 * (every thread loads one, all read each one: a broadcast); a thread keeps
 * its row's sums over one local tile in float32 and adds them into acc_t
 * sums tile by tile, in column order. Splits of the columns let small row
 * counts fill a GPU: split s of row block r is group s * row_blocks + r,
 * and writes its own partial sums, which pair_row_sums adds in split order.
 * So every sum has a fixed order: the same bits on every run of a device.
 *
 * -D options: WG (a power of two); PAIR_PREC 32 (float32 coordinates and
 * pair terms), 16 (columns stored as binary16, widened as a tile is
 * loaded; rows rounded through binary16 by the host or emicp_move) or 64
 * (double throughout, libm's exp: the reference, devices with fp64 only);
 * PAIR_EXP_NATIVE (exp.cl). Needs device/reduce.cl and pair/exp.cl first.
 *
 * Layouts: rows and columns as three planes (x, y, z) of rstride and
 * cstride values; partial sums as [split][5][row_blocks * WG] acc_t. */

#define PAIR_SUMS 5

#if PAIR_PREC == 64 && !PTREG_FP64
#error "PAIR_PREC 64 needs a device with double precision"
#endif

#if PAIR_PREC == 64
typedef double pair_t;
typedef double col_t;
#define LOAD_COL(c, i) ((c)[i])
#elif PAIR_PREC == 16
typedef float pair_t;
typedef u16 col_t;
#define LOAD_COL(c, i) half_load((c), (i))
#else
typedef float pair_t;
typedef float col_t;
#define LOAD_COL(c, i) ((c)[i])
#endif

/* One row's sums over the local tile's len columns. */
FN void sweep_local(const pair_t a[3], LOCAL const pair_t *tx, LOCAL const pair_t *ty, LOCAL const pair_t *tz,
                    u32 len, pair_t neg_scale, acc_t sums[PAIR_SUMS])
{
#if PAIR_PREC == 64
    for (u32 j = 0; j < len; j++) {
        const double dx = a[0] - tx[j], dy = a[1] - ty[j], dz = a[2] - tz[j];
        const double e = EXP(neg_scale * (dx * dx + dy * dy + dz * dz));
        sums[0] += e;
        sums[1] += e * e;
        sums[2] += e * tx[j];
        sums[3] += e * ty[j];
        sums[4] += e * tz[j];
    }
#else
    float se = 0.0f, se2 = 0.0f, sx = 0.0f, sy = 0.0f, sz = 0.0f;
    for (u32 j = 0; j < len; j++) {
        const float bx = tx[j], by = ty[j], bz = tz[j];
        const float dx = a[0] - bx, dy = a[1] - by, dz = a[2] - bz;
        const float e = PAIR_EXPF(FMAF(dz, dz, FMAF(dy, dy, dx * dx)) * neg_scale);
        se += e;
        se2 = FMAF(e, e, se2);
        sx = FMAF(e, bx, sx);
        sy = FMAF(e, by, sy);
        sz = FMAF(e, bz, sz);
    }
    sums[0] += (acc_t)se;
    sums[1] += (acc_t)se2;
    sums[2] += (acc_t)sx;
    sums[3] += (acc_t)sy;
    sums[4] += (acc_t)sz;
#endif
}

KERNEL ptreg_pair_gauss_partial(GLOBAL const pair_t *rows, u32 n, u32 rstride, GLOBAL const col_t *cols, u32 m,
                                u32 cstride, pair_t neg_scale, u32 row_blocks, u32 split_cols,
                                GLOBAL acc_t *partial)
{
    SHARED pair_t tile[3 * WG];
    const u32 t = LOCAL_ID_X, block = GROUP_ID_X % row_blocks, split = GROUP_ID_X / row_blocks;
    const u32 i = block * WG + t, npad = row_blocks * WG;
    const int valid = i < n;
    const pair_t a[3] = {valid ? rows[i] : (pair_t)0, valid ? rows[rstride + i] : (pair_t)0,
                         valid ? rows[2 * rstride + i] : (pair_t)0};
    acc_t sums[PAIR_SUMS] = {0, 0, 0, 0, 0};
    const u32 begin = split * split_cols, end = MIN_U32(m, begin + split_cols);
    for (u32 j0 = begin; j0 < end; j0 += WG) {
        const u32 j = j0 + t, len = MIN_U32(WG, end - j0);
        if (j < end) {
            tile[t] = (pair_t)LOAD_COL(cols, j);
            tile[WG + t] = (pair_t)LOAD_COL(cols, cstride + j);
            tile[2 * WG + t] = (pair_t)LOAD_COL(cols, 2 * cstride + j);
        }
        BARRIER();
        sweep_local(a, tile, tile + WG, tile + 2 * WG, len, neg_scale, sums);
        BARRIER();
    }
    if (valid)
        for (int k = 0; k < PAIR_SUMS; k++)
            partial[((size_t)split * PAIR_SUMS + (size_t)k) * npad + i] = sums[k];
}

/* Row i's five sums: its splits' partials added in split order. */
FN void pair_row_sums(GLOBAL const acc_t *partial, u32 splits, u32 npad, u32 i, acc_t sums[PAIR_SUMS])
{
    for (int k = 0; k < PAIR_SUMS; k++)
        sums[k] = 0;
    for (u32 s = 0; s < splits; s++)
        for (int k = 0; k < PAIR_SUMS; k++)
            sums[k] += partial[((size_t)s * PAIR_SUMS + (size_t)k) * npad + i];
}

/* The sums as ptreg_pair_gauss returns them: sum e, sum e^2 (n each), then
 * sum e b (3n, xyz interleaved, the columns' centre c added back:
 * sum e (b - c) + c sum e). */
KERNEL ptreg_pair_gauss_sums(GLOBAL const acc_t *partial, u32 splits, u32 npad, u32 n, acc_t cx, acc_t cy, acc_t cz,
                             GLOBAL acc_t *out)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    acc_t s[PAIR_SUMS];
    pair_row_sums(partial, splits, npad, i, s);
    out[i] = s[0];
    out[n + i] = s[1];
    out[2 * (size_t)n + 3 * (size_t)i] = s[2] + cx * s[0];
    out[2 * (size_t)n + 3 * (size_t)i + 1] = s[3] + cy * s[0];
    out[2 * (size_t)n + 3 * (size_t)i + 2] = s[4] + cz * s[0];
}
