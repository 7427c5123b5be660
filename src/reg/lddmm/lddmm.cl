/* Landmark shooting's time loop on a device (lddmm_device.c drives it):
 * each pair sum's groups write their split's partial sums (pair/lddmm.cl);
 * then a row block's partials are added in split order and turned into the
 * flow F(q, p) or the adjoint J_F^T (a, b), fused with the integrator's
 * update of the state; then the objective and the gradient. Every update
 * is the CPU's expression (src/reg/lddmm/lddmm.c) in double, in the same
 * order, so the states differ from the CPU's by the pair sums alone.
 *
 * Who adds the partials (LDDMM_FUSED):
 * - 1 (CUDA): the last group of a row block to finish, in the same launch.
 *   Each thread fences its partials (GLOBAL_FENCE: device scope), one
 *   counts the group in (GLOBAL_ATOMIC_INC), and the one that finds it was
 *   last fences again (GLOBAL_ACQUIRE) before its group reads the others'
 *   partials; which group arrives last changes no bit.
 * - 0 (OpenCL): a second launch, *_combine, one group per row block.
 *   OpenCL 1.2's mem_fence orders a work-item's own accesses only, so a
 *   last group could read another's partials stale on a GPU whose caches
 *   are not coherent across groups (the CUDA stand-in's incoherent mode
 *   shows it: tests/cuda_standin/README.md); the launch boundary is the
 *   one device-wide order OpenCL 1.2 has.
 *
 * A launch must not write what its pair sums read (another row block may
 * still be reading it): the host alternates the buffers (lddmm_device.c).
 *
 * States are 6n doubles, q then p (n x 3 each); a result r of 6n values
 * (or 3n: the velocity of other points, parts = 1) lands in out and, by
 * mode, updates dst (each at an element offset):
 *   AXPY   out = r, dst = base + w1 r             (Euler; RK2's midpoint)
 *   RK2    out = r, dst = base + w1 (0.25 k1 + 0.75 r)
 *   LIN    out = r, dst = w1 base + w2 r
 *   ACC2   dst = base + (k1 + r), out = w1 dst    (RK2's adjoint: mu += w + g,
 *                                                 and the next cotangent) */

#define MODE_AXPY 1
#define MODE_RK2 2
#define MODE_LIN 3
#define MODE_ACC2 4

/* What the last group does with a row's result (the host's `update`). */
typedef struct lupdate {
    u32 mode;
    GLOBAL double *out;
    GLOBAL double *dst;
    u32 dst_off;
    GLOBAL const double *base;
    u32 base_off;
    GLOBAL const double *k1;
    double w1, w2;
} lupdate;

/* Row i's outputs, its splits' partials added in split order (outputs
 * a literal at each call, so out[] stays in registers). */
FN void split_sums(GLOBAL const double *partial, u32 splits, u32 outputs, u32 npad, u32 i, double *out)
{
    for (u32 o = 0; o < outputs; o++) {
        double s = 0;
        for (u32 sp = 0; sp < splits; sp++)
            s += LOAD_COHERENT_F64(partial + ((size_t)sp * outputs + o) * npad + i);
        out[o] = s;
    }
}

FN void apply(const lupdate *u, u32 e, double r)
{
    if (u->mode == MODE_ACC2) {
        const double v = u->base[u->base_off + e] + (u->k1[e] + r);
        u->dst[u->dst_off + e] = v;
        u->out[e] = u->w1 * v;
        return;
    }
    u->out[e] = r;
    if (u->mode == MODE_AXPY)
        u->dst[u->dst_off + e] = u->base[u->base_off + e] + u->w1 * r;
    else if (u->mode == MODE_RK2)
        u->dst[u->dst_off + e] = u->base[u->base_off + e] + u->w1 * (0.25 * u->k1[e] + 0.75 * r);
    else if (u->mode == MODE_LIN)
        u->dst[u->dst_off + e] = u->w1 * u->base[u->base_off + e] + u->w2 * r;
}

/* Row block `block`'s rows of a flow: its splits' partials added, each
 * row's result applied as u says (without f, f is zero). */
FN void flow_rows(GLOBAL const double *partial, u32 block, u32 row_blocks, u32 splits, u32 n, u32 with_f, double s,
                  const lupdate *u)
{
    const u32 i = block * WG + LOCAL_ID_X;
    if (i >= n)
        return;
    double r[6];
    split_sums(partial, splits, 6, row_blocks * WG, i, r);
    for (u32 k = 0; k < 3; k++) {
        apply(u, 3 * i + k, r[k]);
        if (with_f)
            apply(u, 3 * n + 3 * i + k, r[3 + k] * s);
    }
}

/* The same for an adjoint: gp = A + s P, gq = -s Q1 + s Q2 - s^2 Q3. */
FN void adjoint_rows(GLOBAL const double *partial, u32 block, u32 row_blocks, u32 splits, u32 n, double s,
                     const lupdate *u)
{
    const u32 i = block * WG + LOCAL_ID_X;
    if (i >= n)
        return;
    double r[15];
    split_sums(partial, splits, 15, row_blocks * WG, i, r);
    for (u32 k = 0; k < 3; k++) {
        const double gp = r[k] + s * r[3 + k];
        const double gq = -s * r[6 + k] + s * r[9 + k] - s * s * r[12 + k];
        apply(u, 3 * i + k, gq);
        apply(u, 3 * n + 3 * i + k, gp);
    }
}

#if LDDMM_FUSED
/* Is this group the last of its row block to have written its partials?
 * That one resets the block's count for the next launch. The counts are
 * volatile: the stand-in's incoherent mode keeps volatile arguments
 * coherent, as a GPU keeps its atomics. */
FN int last_of_block(volatile GLOBAL u32 *arrivals, u32 row_blocks, LOCAL u32 *flag)
{
    const u32 block = GROUP_ID_X % row_blocks, splits = GROUPS_X / row_blocks;
    GLOBAL_FENCE(); /* release: this thread's partials before the count */
    BARRIER();
    if (LOCAL_ID_X == 0) {
        flag[0] = GLOBAL_ATOMIC_INC(&arrivals[block]) == splits - 1;
        if (flag[0]) {
            GLOBAL_ACQUIRE(); /* the others' partials after their counts */
            arrivals[block] = 0;
        }
    }
    BARRIER();
    return flag[0] != 0;
}
#endif

/* F = (v, s f): dq/dt and dp/dt (with_f), or the velocity v of other
 * points (no f), of the rows (rq, rp) against the columns (cq, cp), each
 * row's result applied as mode says. */
KERNEL ptreg_lddmm_flow_step(GLOBAL const double *rq, u32 rq_off, GLOBAL const double *rp, u32 rp_off, u32 with_f,
                             u32 n, GLOBAL const double *cq, u32 cq_off, GLOBAL const double *cp, u32 cp_off, u32 m,
                             lpair_t neg_half_s, u32 row_blocks, u32 split_cols, GLOBAL double *partial,
                             volatile GLOBAL u32 *arrivals, double s, u32 mode, GLOBAL double *out,
                             GLOBAL double *dst, u32 dst_off, GLOBAL const double *base, u32 base_off,
                             GLOBAL const double *k1, double w1, double w2)
{
    SHARED lpair_t tile[6 * WG];
    flow_partial(rq, rq_off, rp, rp_off, with_f, n, cq, cq_off, cp, cp_off, m, neg_half_s, row_blocks, split_cols,
                 partial, tile);
#if LDDMM_FUSED
    SHARED u32 flag[1];
    if (!last_of_block(arrivals, row_blocks, flag))
        return;
    const lupdate u = {mode, out, dst, dst_off, base, base_off, k1, w1, w2};
    flow_rows(partial, GROUP_ID_X % row_blocks, row_blocks, GROUPS_X / row_blocks, n, with_f, s, &u);
#endif
}

/* (gq, gp) = J_F^T (a, b) at state x with the cotangents cot: gp = A + s P,
 * gq = -s Q1 + s Q2 - s^2 Q3, each row's result applied as mode says. */
KERNEL ptreg_lddmm_adjoint_step(GLOBAL const double *x, u32 x_off, GLOBAL const double *cot, u32 n,
                                lpair_t neg_half_s, u32 row_blocks, u32 split_cols, GLOBAL double *partial,
                                volatile GLOBAL u32 *arrivals, double s, u32 mode, GLOBAL double *out,
                                GLOBAL double *dst, u32 dst_off, GLOBAL const double *base, u32 base_off,
                                GLOBAL const double *k1, double w1, double w2)
{
    SHARED lpair_t tile[12 * WG];
    adjoint_partial(x, x_off, cot, n, neg_half_s, row_blocks, split_cols, partial, tile);
#if LDDMM_FUSED
    SHARED u32 flag[1];
    if (!last_of_block(arrivals, row_blocks, flag))
        return;
    const lupdate u = {mode, out, dst, dst_off, base, base_off, k1, w1, w2};
    adjoint_rows(partial, GROUP_ID_X % row_blocks, row_blocks, GROUPS_X / row_blocks, n, s, &u);
#endif
}

/* The second launch of a flow (LDDMM_FUSED 0): group b adds row block b's
 * splits' partials and applies them. */
KERNEL ptreg_lddmm_flow_combine(GLOBAL const double *partial, u32 splits, u32 n, u32 with_f, double s, u32 mode,
                                GLOBAL double *out, GLOBAL double *dst, u32 dst_off, GLOBAL const double *base,
                                u32 base_off, GLOBAL const double *k1, double w1, double w2)
{
    const lupdate u = {mode, out, dst, dst_off, base, base_off, k1, w1, w2};
    flow_rows(partial, GROUP_ID_X, GROUPS_X, splits, n, with_f, s, &u);
}

/* The same for an adjoint. */
KERNEL ptreg_lddmm_adjoint_combine(GLOBAL const double *partial, u32 splits, u32 n, u32 with_f, double s, u32 mode,
                                   GLOBAL double *out, GLOBAL double *dst, u32 dst_off, GLOBAL const double *base,
                                   u32 base_off, GLOBAL const double *k1, double w1, double w2)
{
    (void)with_f;
    const lupdate u = {mode, out, dst, dst_off, base, base_off, k1, w1, w2};
    adjoint_rows(partial, GROUP_ID_X, GROUPS_X, splits, n, s, &u);
}

/* The objective's two sums per group (p0 . v0 and |q1 - target|^2), the
 * final cotangent mu = (lambda (q1 - target), 0) and cot = w mu (RK2's
 * first scaled cotangent). */
KERNEL ptreg_lddmm_objective(GLOBAL const double *x, GLOBAL const double *v0, u32 q1_off,
                             GLOBAL const double *target, double lambda, u32 n, GLOBAL double *mu, double w,
                             GLOBAL double *cot, GLOBAL double *group_sums)
{
    SHARED acc_t red[WG];
    const u32 i = GLOBAL_ID_X;
    double pv = 0, data = 0;
    if (i < n)
        for (u32 k = 0; k < 3; k++) {
            const u32 e = 3 * i + k;
            const double r = x[q1_off + e] - target[e];
            pv += x[3 * n + e] * v0[e];
            data += r * r;
            mu[e] = lambda * r;
            mu[3 * n + e] = 0.0;
            cot[e] = w * mu[e];
            cot[3 * n + e] = w * 0.0;
        }
    const double total_pv = group_sum(red, pv), total_data = group_sum(red, data);
    if (LOCAL_ID_X == 0) {
        group_sums[2 * (size_t)GROUP_ID_X] = total_pv;
        group_sums[2 * (size_t)GROUP_ID_X + 1] = total_data;
    }
}

/* grad = gamma v0 + mu_p. */
KERNEL ptreg_lddmm_gradient(GLOBAL const double *v0, GLOBAL const double *mu, double gamma, u32 n,
                            GLOBAL double *grad)
{
    const u32 e = GLOBAL_ID_X;
    if (e < 3 * n)
        grad[e] = gamma * v0[e] + mu[3 * n + e];
}
