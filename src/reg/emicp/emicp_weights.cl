/* EM-ICP's weights and the moments they feed (ptreg_emicp's, src/reg/emicp/emicp.c),
 * shared by the batched kernels (batch.cl) and one large registration
 * (emicp.cl). acc_t comes from device/reduce.cl. */

#define EMICP_MOMENTS 16       /* w, sp[3], sq[3], spq[9] (ptreg_moments) */
#define EMICP_MIN_NORMALISER 1e-6 /* below it the weights are uniform */

/* A source point's weight lambda and weighted target point q from its
 * E-step sums (se = sum e, se2 = sum e^2, sb = sum e (b - center)):
 * lambda = se / sqrt(se2 + outlier), q = center + sb / se; uniform
 * (lambda 1, q the centre) when the normaliser is tiny. Returns 0 when the
 * point has only the outlier term: no weight. */
FN int emicp_weight(acc_t se, acc_t se2, const acc_t sb[3], acc_t outlier, const acc_t center[3], acc_t *lambda,
                    acc_t q[3])
{
    const acc_t c = se2 + outlier;
    if (c < (acc_t)EMICP_MIN_NORMALISER) {
        *lambda = 1;
        for (int r = 0; r < 3; r++)
            q[r] = center[r];
        return 1;
    }
    if (!(se > 0))
        return 0;
    *lambda = se / SQRT(c);
    for (int r = 0; r < 3; r++)
        q[r] = (sb[r] + center[r] * se) / se;
    return 1;
}

/* ptreg_moments_add: the pair p -> q with weight w, about ref_p and ref_q. */
FN void moments_add(acc_t m[EMICP_MOMENTS], const acc_t p[3], const acc_t q[3], const acc_t ref_p[3],
                    const acc_t ref_q[3], acc_t w)
{
    acc_t a[3], d[3];
    for (int r = 0; r < 3; r++) {
        a[r] = p[r] - ref_p[r];
        d[r] = q[r] - ref_q[r];
    }
    m[0] += w;
    for (int r = 0; r < 3; r++) {
        m[1 + r] += w * a[r];
        m[4 + r] += w * d[r];
        for (int c = 0; c < 3; c++)
            m[7 + 3 * r + c] += w * a[r] * d[c];
    }
}
