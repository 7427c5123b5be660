/* The pair engine's exp for the device kernels (pair.cl, lddmm.cl, batch.cl),
 * the portable form of src/pair/vec_isa.h's. PAIR_EXP_NATIVE=1 (a -D option)
 * takes the device's fast exp instead (CUDA's __expf: a multiply and the
 * special-function unit's ex2, against ~25 instructions; OpenCL's
 * native_exp): a few ulps from the CPU's near 0, up to ~1e-5 relative for
 * terms below e^-40 that no sum notices; the same bits on every run of
 * one device. */

#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693145751953125f /* 12 significant bits: n * LN2_HI is exact */
#define EXP_LN2_LO 1.42860682030941723e-6f
#define EXP_MIN_X (-87.33654f) /* ln(FLT_MIN) */
#define EXP_MAX_X 88.0f
/* the degree-5 fit, as decimals (NVRTC's C++14 has no hexadecimal floats):
 * 0x1.fffff6p-1, 0x1.fffdc4p-2, 0x1.555a6ep-3, 0x1.573ad0p-5, 0x1.0fa7d8p-7 */
#define EXP_C1 9.999997020e-01f
#define EXP_C2 4.999914765e-01f
#define EXP_C3 1.666763872e-01f
#define EXP_C4 4.189816117e-02f
#define EXP_C5 8.290272206e-03f

/* 2^n p(r) with Cody and Waite's two-part ln2: every operation is
 * correctly rounded or exact, so every device gives the same bits (the
 * CPU's vector forms round r once with an FMA: a few ulps apart). */
FN float engine_exp(float x)
{
    const float clamped = x > EXP_MAX_X ? EXP_MAX_X : x;
    const float n = rint(clamped * EXP_LOG2E);
    const float r = (clamped - n * EXP_LN2_HI) - n * EXP_LN2_LO;
    const float p = 1.0f + r * (EXP_C1 + r * (EXP_C2 + r * (EXP_C3 + r * (EXP_C4 + r * EXP_C5))));
    return x >= EXP_MIN_X ? ldexp(p, (int)n) : 0.0f;
}


#if PAIR_EXP_NATIVE
#define PAIR_EXPF(x) FAST_EXPF(x) /* CUDA: ex2.approx of x log2(e), 2 instructions */
#else
#define PAIR_EXPF(x) engine_exp(x)
#endif
