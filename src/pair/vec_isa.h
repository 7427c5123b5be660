/* Vector lanes for the pairwise kernels compiled per ISA (*_isa.c files
 * include this after defining nothing: the compiler flags pick AVX-512,
 * AVX2 or portable lanes). vf is VW floats; v_exp is the engine's exp;
 * flush_denormals/restore_fp bracket a kernel. Rows sit in lanes and
 * columns are broadcast one at a time, so per-row sums need no horizontal
 * reductions. */
#ifndef PTREG_PAIR_VEC_ISA_H
#define PTREG_PAIR_VEC_ISA_H

#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* exp(x) = 2^n * p(r), n = round(x / ln2), r = x - n ln2 in [-ln2/2, ln2/2];
 * p is a degree-5 fit minimising the relative error (1.7e-7 evaluated in
 * float). Results below float32's smallest normal are returned as 0. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2 0.693147180559945309f
#define EXP_LN2_HI 0.693145751953125f /* 12 significant bits: n * LN2_HI is exact */
#define EXP_LN2_LO 1.42860682030941723e-6f
#define EXP_MIN_X (-87.33654f) /* ln(FLT_MIN) */
#define EXP_MAX_X 88.0f
#define EXP_C1 0x1.fffff6p-1f
#define EXP_C2 0x1.fffdc4p-2f
#define EXP_C3 0x1.555a6ep-3f
#define EXP_C4 0x1.573ad0p-5f
#define EXP_C5 0x1.0fa7d8p-7f

/* The pair kernel's exp: 2^t for t <= 0 (the caller folds log2(e) into its
 * scale, so exp's multiply by log2(e) and its inexact reduction go):
 * 2^t = 2^floor(t) * q(u), u = t - floor(t) in [0, 1) exact, q(u) =
 * 1 + u (Q1 + u (Q2 + ...)) the degree-5 fit to 2^u on [0, 1] with q(0) = 1
 * minimising the relative error (8.2e-8; 1.42e-7 evaluated in float32 with
 * FMAs, every float u checked). Results below FLT_MIN (t < -126) are 0 on
 * every ISA; AVX-512 leaves that to flush-to-zero (flush_denormals). Written
 * for the kernel's arguments: t <= 0, -inf allowed, no NaN. */
#define EXP2_MIN_T (-126.0f) /* log2(FLT_MIN) */
#define EXP2_Q1 0x1.62e4bap-1f
#define EXP2_Q2 0x1.ebdb5ap-3f
#define EXP2_Q3 0x1.c91ce8p-5f
#define EXP2_Q4 0x1.277856p-7f
#define EXP2_Q5 0x1.e974fap-10f

#if defined(__AVX512F__)
#define VW 16
typedef __m512 vf;
static inline vf v_set1(float x) { return _mm512_set1_ps(x); }
static inline vf v_zero(void) { return _mm512_setzero_ps(); }
static inline vf v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, vf a) { _mm512_storeu_ps(p, a); }
static inline vf v_add(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf v_fma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
static inline vf v_exp(vf x)
{
    const __mmask16 normal = _mm512_cmp_ps_mask(x, v_set1(EXP_MIN_X), _CMP_GE_OQ);
    x = _mm512_min_ps(x, v_set1(EXP_MAX_X));
    const vf n = _mm512_roundscale_ps(v_mul(x, v_set1(EXP_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const vf r = _mm512_fnmadd_ps(n, v_set1(EXP_LN2), x);
    vf p = v_fma(v_set1(EXP_C5), r, v_set1(EXP_C4));
    p = v_fma(p, r, v_set1(EXP_C3));
    p = v_fma(p, r, v_set1(EXP_C2));
    p = v_fma(p, r, v_set1(EXP_C1));
    p = v_fma(p, r, v_set1(1.0f));
    return _mm512_maskz_scalef_ps(normal, p, n);
}
#elif defined(__AVX2__)
#define VW 8
typedef __m256 vf;
static inline vf v_set1(float x) { return _mm256_set1_ps(x); }
static inline vf v_zero(void) { return _mm256_setzero_ps(); }
static inline vf v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void v_store(float *p, vf a) { _mm256_storeu_ps(p, a); }
static inline vf v_add(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf v_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf v_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf v_fma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline vf v_exp(vf x)
{
    const vf normal = _mm256_cmp_ps(x, v_set1(EXP_MIN_X), _CMP_GE_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, v_set1(EXP_MIN_X)), v_set1(EXP_MAX_X));
    const vf n = _mm256_round_ps(v_mul(x, v_set1(EXP_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const vf r = _mm256_fnmadd_ps(n, v_set1(EXP_LN2), x);
    vf p = v_fma(v_set1(EXP_C5), r, v_set1(EXP_C4));
    p = v_fma(p, r, v_set1(EXP_C3));
    p = v_fma(p, r, v_set1(EXP_C2));
    p = v_fma(p, r, v_set1(EXP_C1));
    p = v_fma(p, r, v_set1(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(v_mul(p, _mm256_castsi256_ps(bits)), normal);
}
#else
/* Portable lanes: plain arrays the compiler may vectorise. */
#define VW 8
typedef struct vf {
    float v[VW];
} vf;
static inline vf v_set1(float x)
{
    vf r;
    for (int k = 0; k < VW; k++)
        r.v[k] = x;
    return r;
}
static inline vf v_zero(void) { return v_set1(0.0f); }
static inline vf v_load(const float *p)
{
    vf r;
    memcpy(r.v, p, sizeof r.v);
    return r;
}
static inline void v_store(float *p, vf a) { memcpy(p, a.v, sizeof a.v); }
#define V_LANEWISE(name, expr)        \
    static inline vf name(vf a, vf b) \
    {                                 \
        vf r;                         \
        for (int k = 0; k < VW; k++)  \
            r.v[k] = expr;            \
        return r;                     \
    }
V_LANEWISE(v_add, a.v[k] + b.v[k])
V_LANEWISE(v_sub, a.v[k] - b.v[k])
V_LANEWISE(v_mul, a.v[k] * b.v[k])
static inline vf v_fma(vf a, vf b, vf c) { return v_add(v_mul(a, b), c); }

/* Without a fused multiply-add the reduction needs the two-part ln2 of
 * Cody and Waite to keep r exact. */
static inline float exp_scalar(float x)
{
    if (!(x >= EXP_MIN_X))
        return 0.0f;
    if (x > EXP_MAX_X)
        x = EXP_MAX_X;
    const float n = rintf(x * EXP_LOG2E);
    const float r = (x - n * EXP_LN2_HI) - n * EXP_LN2_LO;
    const float p = 1.0f + r * (EXP_C1 + r * (EXP_C2 + r * (EXP_C3 + r * (EXP_C4 + r * EXP_C5))));
    return ldexpf(p, (int)n);
}
static inline vf v_exp(vf x)
{
    vf r;
    for (int k = 0; k < VW; k++)
        r.v[k] = exp_scalar(x.v[k]);
    return r;
}
#endif

#if defined(__AVX2__)
/* q(u) of the exp2 fit, 5 FMAs. */
static inline vf v_exp2_poly(vf u)
{
    vf q = v_fma(v_set1(EXP2_Q5), u, v_set1(EXP2_Q4));
    q = v_fma(q, u, v_set1(EXP2_Q3));
    q = v_fma(q, u, v_set1(EXP2_Q2));
    q = v_fma(q, u, v_set1(EXP2_Q1));
    return v_fma(q, u, v_set1(1.0f));
}
#endif
#if defined(__AVX512F__)
/* VREDUCEPS gives u = t - floor(t) in one instruction and VSCALEFPS takes
 * floor(t) from t itself: 7 instructions. -inf reduces to 0 and scales to 0;
 * t < -126 scales to a denormal that flush-to-zero makes 0. */
static inline vf v_exp2(vf t)
{
    const vf u = _mm512_reduce_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    return _mm512_scalef_ps(v_exp2_poly(u), t);
}
#elif defined(__AVX2__)
/* Clamped at -127, n = floor(t) is in [-127, 0]; n + 0x1.8p23 + 127 holds
 * n + 127 in its low mantissa bits, which a shift makes 2^n's exponent
 * field. n = -127 gives the bits of 0, so t < -126 gives 0 without
 * flush-to-zero: 11 instructions. */
static inline vf v_exp2(vf t)
{
    t = _mm256_max_ps(t, v_set1(EXP2_MIN_T - 1.0f));
    const vf n = _mm256_round_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const vf q = v_exp2_poly(v_sub(t, n));
    const __m256i field = _mm256_castps_si256(v_add(n, v_set1(0x1.8p23f + 127.0f)));
    return v_mul(q, _mm256_castsi256_ps(_mm256_slli_epi32(field, 23)));
}
#else
/* The exp2 fit without FMA (u is exact, so only q's roundings differ). */
static inline float exp2_scalar(float t)
{
    if (!(t >= EXP2_MIN_T))
        return 0.0f;
    const float n = floorf(t), u = t - n;
    const float q = 1.0f + u * (EXP2_Q1 + u * (EXP2_Q2 + u * (EXP2_Q3 + u * (EXP2_Q4 + u * EXP2_Q5))));
    return ldexpf(q, (int)n);
}
static inline vf v_exp2(vf t)
{
    vf r;
    for (int k = 0; k < VW; k++)
        r.v[k] = exp2_scalar(t.v[k]);
    return r;
}
#endif

/* Denormal sums are flushed to zero: their assists cost far more than the
 * pair itself, and terms that small carry no weight. */
typedef struct fp_env {
    unsigned csr;
} fp_env;

static inline fp_env flush_denormals(void)
{
    fp_env env = {0};
#if defined(__x86_64__)
    env.csr = _mm_getcsr();
    _mm_setcsr(env.csr | 0x8040u); /* FTZ | DAZ */
#endif
    return env;
}

static inline void restore_fp(fp_env env)
{
#if defined(__x86_64__)
    _mm_setcsr(env.csr);
#else
    (void)env;
#endif
}

#endif
