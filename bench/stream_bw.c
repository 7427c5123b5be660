/* Measures memory bandwidth as the Harris fast path sees it: reading a
 * uint8 array and writing a float32 array four times its size (1 byte in,
 * 4 bytes out per voxel), with 1 and 2 OpenMP threads, over 256 MiB of
 * output (far past any cache). Prints GB/s of bytes moved (read + written)
 * and the voxels/s that bandwidth allows.
 * Build: cc -O3 -fopenmp bench/stream_bw.c -o stream_bw */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(void)
{
    const size_t n = (size_t)64 << 20; /* voxels */
    uint8_t *in = malloc(n);
    float *out = malloc(n * sizeof *out);
    if (!in || !out)
        return 1;
    memset(in, 7, n);
    memset(out, 0, n * sizeof *out); /* pages touched once, outside the timing */
    for (int threads = 1; threads <= 2; threads++) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            double t0 = now_s();
#pragma omp parallel for num_threads(threads) schedule(static)
            for (size_t i = 0; i < n; i++)
                out[i] = (float)in[i] * 0.5f;
            double t = now_s() - t0;
            best = t < best ? t : best;
        }
        printf("{\"threads\": %d, \"gb_per_s\": %.2f, \"voxels_per_s\": %.4g}\n", threads, 5.0 * n / best / 1e9,
               n / best);
    }
    volatile float keep = out[n / 2]; /* the stores are used */
    (void)keep;
    free(in);
    free(out);
    return 0;
}
