/* Landmark shooting's time loop on a device (lddmm_device.c drives it):
 * the pair sums' partials (pair/lddmm.cl) added in split order and turned
 * into the flow F(q, p) or the adjoint J_F^T (a, b), fused with the
 * integrator's update of the state, then the objective and the gradient.
 * Every update is the CPU's expression (src/reg/lddmm/lddmm.c) in double, in the
 * same order, so the states differ from the CPU's by the pair sums alone.
 *
 * States are 6n doubles, q then p (n x 3 each); a result r of 6n values
 * (or 3n: the velocity of other points, parts = 1) lands in out and, by
 * mode, updates dst (each at an element offset):
 *   STORE  out = r
 *   AXPY   out = r, dst = base + w1 r             (Euler; RK2's midpoint)
 *   RK2    out = r, dst = base + w1 (0.25 k1 + 0.75 r)
 *   LIN    out = r, dst = w1 base + w2 r
 *   ACC2   dst = base + (k1 + r)                  (RK2's adjoint: mu += w + g) */

#define MODE_STORE 0
#define MODE_AXPY 1
#define MODE_RK2 2
#define MODE_LIN 3
#define MODE_ACC2 4

/* Row i's outputs, its splits' partials added in split order (outputs
 * a literal at each call, so out[] stays in registers). */
FN void split_sums(GLOBAL const double *partial, u32 splits, u32 outputs, u32 npad, u32 i, double *out)
{
    for (u32 o = 0; o < outputs; o++) {
        double s = 0;
        for (u32 sp = 0; sp < splits; sp++)
            s += partial[((size_t)sp * outputs + o) * npad + i];
        out[o] = s;
    }
}

FN void apply(u32 mode, u32 e, double r, GLOBAL double *out, GLOBAL double *dst, u32 dst_off,
              GLOBAL const double *base, u32 base_off, GLOBAL const double *k1, double w1, double w2)
{
    if (mode != MODE_ACC2)
        out[e] = r;
    if (mode == MODE_AXPY)
        dst[dst_off + e] = base[base_off + e] + w1 * r;
    else if (mode == MODE_RK2)
        dst[dst_off + e] = base[base_off + e] + w1 * (0.25 * k1[e] + 0.75 * r);
    else if (mode == MODE_LIN)
        dst[dst_off + e] = w1 * base[base_off + e] + w2 * r;
    else if (mode == MODE_ACC2)
        dst[dst_off + e] = base[base_off + e] + (k1[e] + r);
}

/* F = (v, s f): dq/dt and dp/dt (parts 2), or the velocity v of other
 * points (parts 1). */
KERNEL ptreg_lddmm_flow_combine(GLOBAL const double *partial, u32 splits, u32 npad, u32 n, u32 parts, double s,
                                u32 mode, GLOBAL double *out, GLOBAL double *dst, u32 dst_off,
                                GLOBAL const double *base, u32 base_off, GLOBAL const double *k1, double w1,
                                double w2)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    double r[6];
    split_sums(partial, splits, 6, npad, i, r); /* with parts 1, f is zero */
    for (u32 k = 0; k < 3; k++) {
        apply(mode, 3 * i + k, r[k], out, dst, dst_off, base, base_off, k1, w1, w2);
        if (parts == 2)
            apply(mode, 3 * n + 3 * i + k, r[3 + k] * s, out, dst, dst_off, base, base_off, k1, w1, w2);
    }
}

/* (gq, gp) = J_F^T (a, b): gp = A + s P, gq = -s Q1 + s Q2 - s^2 Q3. */
KERNEL ptreg_lddmm_adjoint_combine(GLOBAL const double *partial, u32 splits, u32 npad, u32 n, double s, u32 mode,
                                   GLOBAL double *out, GLOBAL double *dst, u32 dst_off, GLOBAL const double *base,
                                   u32 base_off, GLOBAL const double *k1, double w1, double w2)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    double r[15];
    split_sums(partial, splits, 15, npad, i, r);
    for (u32 k = 0; k < 3; k++) {
        const double gp = r[k] + s * r[3 + k];
        const double gq = -s * r[6 + k] + s * r[9 + k] - s * s * r[12 + k];
        apply(mode, 3 * i + k, gq, out, dst, dst_off, base, base_off, k1, w1, w2);
        apply(mode, 3 * n + 3 * i + k, gp, out, dst, dst_off, base, base_off, k1, w1, w2);
    }
}

/* dst = w a over len values. */
KERNEL ptreg_lddmm_scale(GLOBAL const double *a, double w, u32 len, GLOBAL double *dst)
{
    const u32 e = GLOBAL_ID_X;
    if (e < len)
        dst[e] = w * a[e];
}

/* The objective's two sums per group (p0 . v0 and |q1 - target|^2) and
 * the final cotangent mu = (lambda (q1 - target), 0). */
KERNEL ptreg_lddmm_objective(GLOBAL const double *x, GLOBAL const double *v0, u32 q1_off,
                             GLOBAL const double *target, double lambda, u32 n, GLOBAL double *mu,
                             GLOBAL double *group_sums)
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
