/* The pair engine's Gaussian-sum rate on its own: ptreg_pair_gauss_sums on
 * n uniform points in [0, 1]^3 against n more (scale 30, default options),
 * median process CPU time of `calls` calls (on a shared machine, wall time
 * counts the other jobs; CPU time does not). Link against the build to test:
 *   cc -O2 -Iinclude -Ibuild/include bench/pair_rate.c -o /tmp/pair_rate \
 *      build/libptreg.so -Wl,-rpath,$PWD/build -lm
 *   /tmp/pair_rate [n 10000] [calls 9] [threads 1]
 * Prints Gpairs/s: the CPU-time rate summed over threads, and the wall rate. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ptreg/ptreg.h"

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const size_t n = argc > 1 ? (size_t)atol(argv[1]) : 10000;
    int calls = argc > 2 ? atoi(argv[2]) : 9;
    const int threads = argc > 3 ? atoi(argv[3]) : 1;
    calls = calls < 1 ? 1 : calls > 64 ? 64 : calls;
    ptreg_set_num_threads(threads);
    float *a = malloc(3 * n * sizeof(float)), *b = malloc(3 * n * sizeof(float));
    double *e = malloc(n * sizeof(double)), *e2 = malloc(n * sizeof(double)), *eb = malloc(3 * n * sizeof(double));
    if (!a || !b || !e || !e2 || !eb)
        return 1;
    srand(1);
    for (size_t i = 0; i < 3 * n; i++) {
        a[i] = (float)rand() / (float)RAND_MAX;
        b[i] = (float)rand() / (float)RAND_MAX;
    }
    double cpu[64], wall[64];
    ptreg_error err;
    for (int c = 0; c < calls; c++) {
        const double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
        if (ptreg_pair_gauss_sums(a, n, b, n, 30.0, NULL, e, e2, eb, &err) != PTREG_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        cpu[c] = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
        wall[c] = seconds(CLOCK_MONOTONIC) - w0;
    }
    qsort(cpu, (size_t)calls, sizeof(double), by_value);
    qsort(wall, (size_t)calls, sizeof(double), by_value);
    const double pairs = (double)n * (double)n;
    printf("{\"n\": %zu, \"threads\": %d, \"cpu_gpairs\": %.3f, \"wall_gpairs\": %.3f, \"sum_e0\": %.17g}\n", n,
           threads, pairs / cpu[calls / 2] / 1e9 * threads, pairs / wall[calls / 2] / 1e9, e[0]);
    free(a), free(b), free(e), free(e2), free(eb);
    return 0;
}
