/* The pair engine: its exp against libm, float16 conversions, Gaussian sums
 * against a plain float64 loop on every ISA, precision, tiling and loop
 * order, and the same bits for any thread count or row blocking. */
#include <stdint.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "check.h"
#include "core/cpu.h"
#include "pair/pair_kernels.h"
#include "ptreg/ptreg.h"
#include "hooks.h"
#include "core/numeric.h"
#include "pair/pair_engine.h"

static const int isas[] = {PTREG_ISA_GENERIC, PTREG_ISA_AVX2, PTREG_ISA_AVX512};

static int isa_available(int isa) { return isa <= (int)cpu_best_isa(); }

/* Relative error of the engine's exp over [-87.3, 0] (dense, plus the
 * ends) and exact 0 below float's normal range. */
static void test_exp(void)
{
    const size_t n = 1 << 21;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(-87.33 * (double)i / (double)(n - 1));
    x[1] = -1e-30f;
    x[2] = -0.34657359f; /* ln2/2: the reduction's edge */
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        if (!isa_available(isas[k]))
            continue;
        cpu_set_isa(isas[k]);
        ptreg_pair_exp(x, y, n);
        double worst = 0.0;
        for (size_t i = 0; i < n; i++) {
            const double ref = exp((double)x[i]);
            const double rel = fabs((double)y[i] - ref) / ref;
            worst = rel > worst ? rel : worst;
        }
        CHECK_MSG(worst < 1e-6, "isa %s: exp max relative error %.3g", isa_level_name((isa_level)isas[k]), worst);
        const float zero_in[5] = {0.0f, -87.4f, -100.0f, -1e30f, -INFINITY};
        float zero_out[5];
        ptreg_pair_exp(zero_in, zero_out, 5); /* also a tail shorter than a vector */
        CHECK(zero_out[0] == 1.0f);
        for (int i = 1; i < 5; i++)
            CHECK_MSG(zero_out[i] == 0.0f, "isa %s: exp(%g) = %g", isa_level_name((isa_level)isas[k]), zero_in[i],
                      zero_out[i]);
    }
    cpu_set_isa(-1);
    free(x);
    free(y);
}

/* The kernel's 2^t (t <= 0, log2(e) folded into the scale) against libm's
 * double exp2 on every 97th float t in [-126, 0], and exactly 0 below
 * FLT_MIN. */
static void test_exp2(void)
{
    const float lo = -126.0f;
    uint32_t top, bottom;
    memcpy(&bottom, &lo, sizeof bottom);
    top = 0x80000000u; /* -0.0f; every negative float down to lo has bits in (top, bottom] */
    const size_t n = (size_t)(bottom - top) / 97 + 2;
    float *t = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    for (size_t i = 0; i + 1 < n; i++) {
        const uint32_t b = top + 97u * (uint32_t)i;
        memcpy(&t[i], &b, sizeof b);
    }
    t[n - 1] = lo;
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        if (!isa_available(isas[k]))
            continue;
        cpu_set_isa(isas[k]);
        pair_cpu_kernels()->pair_exp2_array(t, y, n);
        double worst = 0.0;
        for (size_t i = 0; i < n; i++)
            worst = check_worse(worst, fabs((double)y[i] / exp2((double)t[i]) - 1.0));
        /* every float t: 1.65e-7 (AVX-512), 1.6e-7 (AVX2), 1.8e-7 (portable, no FMA) */
        CHECK_MSG(worst < 2e-7, "isa %s: exp2 max relative error %.3g", isa_level_name((isa_level)isas[k]), worst);
        const float edge_in[8] = {0.0f, -0.0f, -126.0001f, -126.5f, -127.0f, -200.0f, -1e30f, -INFINITY};
        float edge_out[8];
        pair_cpu_kernels()->pair_exp2_array(edge_in, edge_out, 8);
        CHECK(edge_out[0] == 1.0f && edge_out[1] == 1.0f);
        for (int i = 2; i < 8; i++)
            CHECK_MSG(edge_out[i] == 0.0f, "isa %s: 2^%g = %g", isa_level_name((isa_level)isas[k]), edge_in[i],
                      edge_out[i]);
    }
    cpu_set_isa(-1);
    free(t);
    free(y);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) static uint16_t f16c_from_float(float f)
{
    return (uint16_t)_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0);
}
#endif

static float float_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Every half round-trips; random and edge floats round as F16C does. */
static void test_half(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        const int nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
        if (!nan && half_from_float(half_to_float((uint16_t)h)) != h)
            bad++;
    }
    CHECK_MSG(bad == 0, "%d halves do not round-trip", bad);
#if defined(__x86_64__)
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_F16C))
        return;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 16);
    bad = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)ptreg_rng_next(&rng);
        if (i % 2) /* half the draws near half's range, where the rounding cases are */
            u = (u & 0x80ffffffu) | ((uint32_t)(100 + (i / 2) % 45) << 23);
        const float f = float_of_bits(u);
        if (isnan(f))
            continue;
        if (half_from_float(f) != f16c_from_float(f))
            bad++;
    }
    CHECK_MSG(bad == 0, "%d floats round differently from F16C", bad);
#endif
}

/* The plain float64 loop every engine path is compared with; points are
 * offset + p[i] (the offset is 0 except for the float16 check). */
static void gauss_reference(const double *a, size_t n, const double *b, size_t m, const double offset[3], double scale,
                            double *se, double *se2, double *seb, double *seabsb)
{
    for (size_t i = 0; i < n; i++) {
        double s = 0, s2 = 0, sb[3] = {0, 0, 0}, sab = 0;
        for (size_t j = 0; j < m; j++) {
            double d2 = 0;
            for (int k = 0; k < 3; k++) {
                const double d = a[3 * i + k] - b[3 * j + k];
                d2 += d * d;
            }
            const double e = exp(-scale * d2);
            s += e;
            s2 += e * e;
            for (int k = 0; k < 3; k++) {
                sb[k] += e * (offset[k] + b[3 * j + k]);
                sab += e * fabs(offset[k] + b[3 * j + k]);
            }
        }
        se[i] = s;
        se2[i] = s2;
        memcpy(seb + 3 * i, sb, sizeof sb);
        seabsb[i] = sab;
    }
}

static float *random_points(ptreg_rng *rng, size_t n, double offset)
{
    float *p = malloc((n ? n : 1) * 3 * sizeof(float));
    for (size_t i = 0; i < 3 * n; i++)
        p[i] = (float)(offset + ptreg_rng_uniform(rng));
    return p;
}

/* Points in double: as given, or (float16 mode) relative to the columns'
 * centroid and rounded as that mode stores them. */
static double *reference_points(const float *p, size_t n, const double center[3], int as_half)
{
    double *q = malloc((n ? n : 1) * 3 * sizeof(double));
    for (size_t i = 0; i < 3 * n; i++)
        q[i] = as_half ? half_to_float(half_from_float((float)(p[i] - center[i % 3]))) : p[i];
    return q;
}

typedef struct sums {
    double *e, *e2, *eb;
} sums;

static sums sums_alloc(size_t n)
{
    sums s = {calloc(n + 1, sizeof(double)), calloc(n + 1, sizeof(double)), calloc(3 * n + 3, sizeof(double))};
    return s;
}

static void sums_free(sums *s)
{
    free(s->e);
    free(s->e2);
    free(s->eb);
}

static int sums_identical(const sums *a, const sums *b, size_t n)
{
    return !memcmp(a->e, b->e, n * sizeof(double)) && !memcmp(a->e2, b->e2, n * sizeof(double)) &&
           !memcmp(a->eb, b->eb, 3 * n * sizeof(double));
}

/* Compares one engine run with the float64 loop: each sum within tol of
 * the size of its terms (sum_e for e and e^2, sum e|b| for e b). The
 * float16 mode is compared on the points as it stores them, so what is
 * left is its arithmetic. */
static void compare_with_reference(const char *what, const float *a, size_t n, const float *b, size_t m, double scale,
                                   const ptreg_pair_options *opt, double tol)
{
    sums got = sums_alloc(n);
    double *re = malloc((n + 1) * sizeof(double)), *re2 = malloc((n + 1) * sizeof(double)),
           *reb = malloc((3 * n + 3) * sizeof(double)), *rabs = malloc((n + 1) * sizeof(double));
    ptreg_error err;
    const ptreg_status st = ptreg_pair_gauss_sums(a, n, b, m, scale, opt, got.e, got.e2, got.eb, &err);
    CHECK_MSG(st == PTREG_OK, "%s: %s", what, err.message);
    const int as_half = opt->precision == PTREG_PRECISION_FP16;
    double center[3] = {0, 0, 0}, sum[3] = {0, 0, 0};
    for (size_t j = 0; j < m; j++)
        for (int k = 0; k < 3; k++)
            sum[k] += b[3 * j + k];
    for (int k = 0; k < 3; k++)
        center[k] = as_half ? sum[k] / (double)m : 0.0;
    double *ad = reference_points(a, n, center, as_half), *bd = reference_points(b, m, center, as_half);
    gauss_reference(ad, n, bd, m, center, scale, re, re2, reb, rabs);
    free(ad);
    free(bd);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double unit = re[i] > 1e-30 ? re[i] : 1e-30;
        double rel = fabs(got.e[i] - re[i]) / unit;
        rel = check_worse(rel, fabs(got.e2[i] - re2[i]) / unit);
        for (int k = 0; k < 3; k++)
            rel = check_worse(rel,
                              fabs(got.eb[3 * i + k] - reb[3 * i + k]) / fmax(rabs[i], 1e-30)); /* nan-ok: a scale */
        worst = check_worse(worst, rel);
    }
    CHECK_MSG(worst <= tol, "%s: n %zu m %zu: worst relative difference %.3g (tol %g)", what, n, m, worst, tol);
    sums_free(&got);
    free(re);
    free(re2);
    free(reb);
    free(rabs);
}

static void test_against_reference(void)
{
    static const size_t sizes[][2] = {{1, 1},     {1, 300},   {300, 1},   {17, 33},  {15, 16},
                                      {64, 1025}, {129, 257}, {1000, 37}, {333, 999}};
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 4);
    char what[160];
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t n = sizes[s][0], m = sizes[s][1];
        /* Away from the origin: the engine must centre before rounding. */
        float *a = random_points(&rng, n, 100.0), *b = random_points(&rng, m, 100.0);
        const double scale = 2.0 + 30.0 * ptreg_rng_uniform(&rng);
        for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
            if (!isa_available(isas[k]))
                continue;
            cpu_set_isa(isas[k]);
            for (int prec = 0; prec < 3; prec++) {
                ptreg_pair_options opt;
                ptreg_pair_options_default(&opt);
                opt.precision = (ptreg_precision)prec;
                opt.col_tile = (int)(16 + s * 40);
                opt.row_vectors = 1 << (s % 3);
                opt.order = (ptreg_pair_order)(s % 2);
                snprintf(what, sizeof what, "isa %s %s tile %d rv %d order %d", isa_level_name((isa_level)isas[k]),
                         ptreg_precision_name(opt.precision), opt.col_tile, opt.row_vectors, (int)opt.order);
                compare_with_reference(what, a, n, b, m, scale, &opt,
                                       opt.precision == PTREG_PRECISION_FP64 ? 1e-12 : 2e-5);
            }
        }
        free(a);
        free(b);
    }
    cpu_set_isa(-1);
}

static void run_sums(const float *a, size_t n, const float *b, size_t m, const ptreg_pair_options *opt, sums *out)
{
    ptreg_error err;
    CHECK(ptreg_pair_gauss_sums(a, n, b, m, 40.0, opt, out->e, out->e2, out->eb, &err) == PTREG_OK);
}

/* Threads, row blocks, row vectors and loop order change speed, never bits. */
static void test_same_bits(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 9);
    const size_t n = 3001, m = 2500;
    float *a = random_points(&rng, n, 0.0), *b = random_points(&rng, m, 0.0);
    for (int prec = 0; prec < 3; prec++) {
        ptreg_pair_options opt;
        ptreg_pair_options_default(&opt);
        opt.precision = (ptreg_precision)prec;
        opt.col_tile = 300;
        sums base = sums_alloc(n), other = sums_alloc(n);
        ptreg_set_num_threads(1);
        run_sums(a, n, b, m, &opt, &base);
        ptreg_set_num_threads(2);
        run_sums(a, n, b, m, &opt, &other);
        CHECK_MSG(sums_identical(&base, &other, n), "%s: 1 vs 2 threads", ptreg_precision_name(opt.precision));
        opt.row_block = 48;
        opt.row_vectors = 4;
        opt.order = PTREG_PAIR_TILES_OUTSIDE;
        run_sums(a, n, b, m, &opt, &other);
        CHECK_MSG(sums_identical(&base, &other, n), "%s: row block, vectors, order",
                  ptreg_precision_name(opt.precision));
        ptreg_set_num_threads(0);
        sums_free(&base);
        sums_free(&other);
    }
    free(a);
    free(b);
}

/* A plan reused for row sets of different sizes gives what one-shot runs give. */
static void test_plan_reuse(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 12);
    const size_t m = 700;
    float *b = random_points(&rng, m, 5.0);
    ptreg_pair_plan *plan;
    ptreg_error err;
    CHECK(ptreg_pair_plan_create(b, m, NULL, &plan, &err) == PTREG_OK);
    const size_t sizes[] = {50, 900, 3};
    for (size_t s = 0; s < 3; s++) {
        const size_t n = sizes[s];
        float *a = random_points(&rng, n, 5.0);
        double *ad = malloc(3 * n * sizeof(double));
        for (size_t i = 0; i < 3 * n; i++)
            ad[i] = a[i];
        sums x = sums_alloc(n), y = sums_alloc(n);
        CHECK(ptreg_pair_gauss(plan, ad, n, 10.0, x.e, x.e2, x.eb, &err) == PTREG_OK);
        CHECK(ptreg_pair_gauss_sums(a, n, b, m, 10.0, NULL, y.e, y.e2, y.eb, &err) == PTREG_OK);
        CHECK(sums_identical(&x, &y, n));
        sums_free(&x);
        sums_free(&y);
        free(a);
        free(ad);
    }
    ptreg_pair_plan_destroy(plan);
    free(b);
}

static void test_bad_arguments(void)
{
    const float b[6] = {0, 0, 0, 1, 1, 1};
    const float nan_pt[3] = {0, NAN, 0};
    double e[2], e2[2], eb[6];
    ptreg_error err;
    ptreg_pair_options opt;
    ptreg_pair_options_default(&opt);
    CHECK(ptreg_pair_gauss_sums(b, 2, b, 2, 0.0, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_pair_gauss_sums(b, 2, b, 2, -1.0, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_pair_gauss_sums(b, 2, b, 2, INFINITY, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_pair_gauss_sums(b, 2, b, 0, 1.0, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_pair_gauss_sums(b, 2, nan_pt, 1, 1.0, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(strstr(err.message, "column point 0") != NULL);
    CHECK(ptreg_pair_gauss_sums(nan_pt, 1, b, 2, 1.0, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(strstr(err.message, "row point 0") != NULL);
    CHECK(ptreg_pair_gauss_sums(b, 0, b, 2, 1.0, &opt, e, e2, eb, &err) == PTREG_OK);
    opt.col_tile = 8;
    CHECK(ptreg_pair_gauss_sums(b, 2, b, 2, 1.0, &opt, e, e2, eb, &err) == PTREG_ERR_ARG);
    CHECK(strstr(err.message, "col_tile") != NULL);
    ptreg_pair_options_default(&opt);
    opt.row_vectors = 3;
    CHECK(ptreg_pair_options_check(&opt, &err) == PTREG_ERR_ARG);
    ptreg_precision p;
    CHECK(ptreg_precision_parse("fp16", &p) == 0 && p == PTREG_PRECISION_FP16);
    CHECK(ptreg_precision_parse("fp8", &p) == -1);
}

int main(void)
{
    test_exp();
    test_exp2();
    test_half();
    test_against_reference();
    test_same_bits();
    test_plan_reuse();
    test_bad_arguments();
    return check_exit();
}
