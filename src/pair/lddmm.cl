/* Landmark shooting's pair sums on a device (lddmm_device.c drives them;
 * the formulas and the CPU's kernels: lddmm_kernels.h and
 * lddmm_kernels_isa.c). A work-group takes WG rows, one per thread, and
 * sweeps a split of the columns, WG at a time through local memory; in the
 * fp32 variant a thread keeps its sums over one local tile in float32 and
 * adds them into double sums tile by tile, in column order (LDDMM_FP64=1:
 * double pair terms with libm's exp, the reference). Split s of row block r
 * is group s * row_blocks + r and writes its own partial sums,
 * [split][output][row_blocks * WG] doubles, which reg/lddmm/lddmm.cl adds in
 * split order: the same bits on every run of a device. The sums are
 * functions here; the kernels that call them are reg/lddmm/lddmm.cl's.
 *
 * Points come from the device's state arrays: n x 3 doubles, xyz
 * interleaved, at an element offset. Needs device/reduce.cl (PTREG_FP64:
 * the device path needs double precision) and pair/exp.cl first. */

#if !PTREG_FP64
#error "landmark shooting on a device needs double precision"
#endif

#define FLOW_OUTPUTS 6     /* v, f */
#define ADJOINT_OUTPUTS 15 /* A, P, Q1, Q2, Q3 */

#if LDDMM_FP64
typedef double lpair_t;
#define LMAC(a, b, c) ((a) * (b) + (c))
#define LEXP(x) EXP(x)
#else
typedef float lpair_t;
#define LMAC(a, b, c) FMAF((a), (b), (c))
#define LEXP(x) PAIR_EXPF(x)
#endif

FN lpair_t ldot(const lpair_t a[3], const lpair_t b[3]) { return LMAC(a[2], b[2], LMAC(a[1], b[1], a[0] * b[0])); }

/* acc += w * u */
FN void laxpy(lpair_t acc[3], lpair_t w, const lpair_t u[3])
{
    for (int k = 0; k < 3; k++)
        acc[k] = LMAC(w, u[k], acc[k]);
}

FN void load3(GLOBAL const double *v, u32 at, int valid, lpair_t out[3])
{
    for (u32 k = 0; k < 3; k++)
        out[k] = valid ? (lpair_t)v[at + k] : (lpair_t)0;
}

/* The group's rows, its split's column range, and where its partials go. */
typedef struct lgroup {
    u32 t, i, npad, begin, end, split;
    int valid;
} lgroup;

FN lgroup lgroup_of(u32 n, u32 m, u32 row_blocks, u32 split_cols)
{
    lgroup g;
    const u32 block = GROUP_ID_X % row_blocks;
    g.split = GROUP_ID_X / row_blocks;
    g.t = LOCAL_ID_X;
    g.i = block * WG + g.t;
    g.npad = row_blocks * WG;
    g.valid = g.i < n;
    g.begin = g.split * split_cols;
    g.end = MIN_U32(m, g.begin + split_cols);
    return g;
}

FN void write_partials(const lgroup *g, const double *sums, u32 outputs, GLOBAL double *partial)
{
    if (g->valid)
        for (u32 o = 0; o < outputs; o++)
            partial[((size_t)g->split * outputs + o) * g->npad + g->i] = sums[o];
}

/* Row i's velocity v_i = sum_j K_ij p_j and (with_f) f_i = sum_j K_ij
 * (p_i . p_j) (q_i - q_j), against the columns (cq, cp). */
FN void flow_partial(GLOBAL const double *rq, u32 rq_off, GLOBAL const double *rp, u32 rp_off, u32 with_f, u32 n,
                     GLOBAL const double *cq, u32 cq_off, GLOBAL const double *cp, u32 cp_off, u32 m,
                     lpair_t neg_half_s, u32 row_blocks, u32 split_cols, GLOBAL double *partial,
                     LOCAL lpair_t *tile /* 6 WG */)
{
    const lgroup g = lgroup_of(n, m, row_blocks, split_cols);
    lpair_t qi[3], pi[3];
    load3(rq, rq_off + 3 * g.i, g.valid, qi);
    load3(rp, rp_off + 3 * g.i, g.valid && with_f, pi);
    double sums[FLOW_OUTPUTS] = {0, 0, 0, 0, 0, 0};
    for (u32 j0 = g.begin; j0 < g.end; j0 += WG) {
        const u32 j = j0 + g.t, len = MIN_U32(WG, g.end - j0);
        for (u32 k = 0; k < 3 && j < g.end; k++) {
            tile[k * WG + g.t] = (lpair_t)cq[cq_off + 3 * j + k];
            tile[(3 + k) * WG + g.t] = (lpair_t)cp[cp_off + 3 * j + k];
        }
        BARRIER();
        lpair_t v[3] = {0, 0, 0}, f[3] = {0, 0, 0};
        for (u32 c = 0; c < len; c++) {
            const lpair_t qj[3] = {tile[c], tile[WG + c], tile[2 * WG + c]};
            const lpair_t pj[3] = {tile[3 * WG + c], tile[4 * WG + c], tile[5 * WG + c]};
            const lpair_t d[3] = {qi[0] - qj[0], qi[1] - qj[1], qi[2] - qj[2]};
            const lpair_t e = LEXP(ldot(d, d) * neg_half_s);
            laxpy(v, e, pj);
            if (with_f)
                laxpy(f, e * ldot(pi, pj), d);
        }
        for (int k = 0; k < 3; k++) {
            sums[k] += (double)v[k];
            sums[3 + k] += (double)f[k];
        }
        BARRIER();
    }
    write_partials(&g, sums, FLOW_OUTPUTS, partial);
}

/* Row i's adjoint sums A, P, Q1, Q2, Q3 (lddmm_kernels.h) over the
 * landmarks q, p (the state x at x_off) and the cotangents a, b (cot). */
FN void adjoint_partial(GLOBAL const double *x, u32 x_off, GLOBAL const double *cot, u32 n, lpair_t neg_half_s,
                        u32 row_blocks, u32 split_cols, GLOBAL double *partial, LOCAL lpair_t *tile /* 12 WG */)
{
    const lgroup g = lgroup_of(n, n, row_blocks, split_cols);
    const u32 p_off = 3 * n; /* p and b follow q and a */
    lpair_t qi[3], pi[3], ai[3], bi[3];
    load3(x, x_off + 3 * g.i, g.valid, qi);
    load3(x, x_off + p_off + 3 * g.i, g.valid, pi);
    load3(cot, 3 * g.i, g.valid, ai);
    load3(cot, p_off + 3 * g.i, g.valid, bi);
    double sums[ADJOINT_OUTPUTS];
    for (int o = 0; o < ADJOINT_OUTPUTS; o++)
        sums[o] = 0;
    for (u32 j0 = g.begin; j0 < g.end; j0 += WG) {
        const u32 j = j0 + g.t, len = MIN_U32(WG, g.end - j0);
        for (u32 k = 0; k < 3 && j < g.end; k++) {
            tile[k * WG + g.t] = (lpair_t)x[x_off + 3 * j + k];
            tile[(3 + k) * WG + g.t] = (lpair_t)x[x_off + p_off + 3 * j + k];
            tile[(6 + k) * WG + g.t] = (lpair_t)cot[3 * j + k];
            tile[(9 + k) * WG + g.t] = (lpair_t)cot[p_off + 3 * j + k];
        }
        BARRIER();
        lpair_t A[3] = {0, 0, 0}, P[3] = {0, 0, 0}, Q1[3] = {0, 0, 0}, Q2[3] = {0, 0, 0}, Q3[3] = {0, 0, 0};
        for (u32 c = 0; c < len; c++) {
            lpair_t qj[3], pj[3], aj[3], d[3], db[3];
            for (int k = 0; k < 3; k++) {
                qj[k] = tile[k * WG + c];
                pj[k] = tile[(3 + k) * WG + c];
                aj[k] = tile[(6 + k) * WG + c];
                d[k] = qi[k] - qj[k];
                db[k] = bi[k] - tile[(9 + k) * WG + c];
            }
            const lpair_t e = LEXP(ldot(d, d) * neg_half_s);
            const lpair_t dbd = ldot(db, d), ec = e * ldot(pi, pj);
            laxpy(A, e, aj);
            laxpy(P, e * dbd, pj);
            laxpy(Q1, e * (ldot(ai, pj) + ldot(aj, pi)), d);
            laxpy(Q2, ec, db);
            laxpy(Q3, ec * dbd, d);
        }
        for (int k = 0; k < 3; k++) {
            sums[k] += (double)A[k];
            sums[3 + k] += (double)P[k];
            sums[6 + k] += (double)Q1[k];
            sums[9 + k] += (double)Q2[k];
            sums[12 + k] += (double)Q3[k];
        }
        BARRIER();
    }
    write_partials(&g, sums, ADJOINT_OUTPUTS, partial);
}
