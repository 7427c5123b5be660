/* Measures this CPU's fp32 FMA peak per core: 12 independent chains of
 * vector FMAs (enough to cover latency x ports), timed over a fixed count.
 * Build: cc -O3 bench/peak_flops.c -o peak_flops (at -O2 gcc keeps the
 * chains in memory and measures stores, a quarter of the peak).
 * Prints GFLOP/s for 256-bit and 512-bit FMAs (an FMA counts as 2 flops). */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define CHAINS 12
#define ROUNDS 20000000L

__attribute__((target("avx2,fma"))) static double fma256_rate(void)
{
    __m256 acc[CHAINS];
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++)
        acc[k] = _mm256_set1_ps((float)k);
    double t0 = now_s();
    for (long r = 0; r < ROUNDS; r++)
        for (int k = 0; k < CHAINS; k++)
            acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    double t = now_s() - t0;
    float sink = 0;
    for (int k = 0; k < CHAINS; k++)
        sink += _mm256_cvtss_f32(acc[k]);
    if (sink == 12345.0f)
        puts("");
    return (double)ROUNDS * CHAINS * 8 * 2 / t;
}

__attribute__((target("avx512f"))) static double fma512_rate(void)
{
    __m512 acc[CHAINS];
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++)
        acc[k] = _mm512_set1_ps((float)k);
    double t0 = now_s();
    for (long r = 0; r < ROUNDS; r++)
        for (int k = 0; k < CHAINS; k++)
            acc[k] = _mm512_fmadd_ps(acc[k], a, b);
    double t = now_s() - t0;
    float sink = 0;
    for (int k = 0; k < CHAINS; k++)
        sink += _mm512_cvtss_f32(acc[k]);
    if (sink == 12345.0f)
        puts("");
    return (double)ROUNDS * CHAINS * 16 * 2 / t;
}

int main(void)
{
    __builtin_cpu_init();
    double best256 = 0, best512 = 0;
    for (int rep = 0; rep < 5; rep++) {
        if (__builtin_cpu_supports("fma")) {
            double r = fma256_rate();
            best256 = r > best256 ? r : best256;
        }
        if (__builtin_cpu_supports("avx512f")) {
            double r = fma512_rate();
            best512 = r > best512 ? r : best512;
        }
    }
    printf("{\"fp32_gflops_avx2_per_core\": %.1f, \"fp32_gflops_avx512_per_core\": %.1f}\n", best256 / 1e9,
           best512 / 1e9);
    return 0;
}
