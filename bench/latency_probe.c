/* Measures the cost of a random memory access, as a tree or graph walk
 * sees it, for working sets from L1 to DRAM: a random cyclic permutation of
 * 64-byte lines chased
 *   - by one chain (each load's address is the previous load's value): the
 *     latency, ns per load;
 *   - by 8 independent chains interleaved (the out-of-order core overlaps
 *     them as it overlaps independent queries): the random-access
 *     throughput, ns per line.
 * Prints one JSON line per working-set size; --quick: three sizes, short.
 * Build: cc -O2 bench/latency_probe.c -o latency_probe */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LINE_WORDS = 8, CHAINS = 8 }; /* 8 x 8-byte words: one 64-byte line */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* lines[i * LINE_WORDS] holds the index of the line after line i in one
 * random cycle through all of them (Sattolo's shuffle). */
static uint64_t *make_cycle(size_t lines)
{
    uint64_t *mem = aligned_alloc(64, lines * LINE_WORDS * sizeof(uint64_t));
    size_t *order = malloc(lines * sizeof(size_t));
    if (!mem || !order) {
        fprintf(stderr, "latency_probe: out of memory\n");
        exit(4);
    }
    uint64_t state = 42;
    for (size_t i = 0; i < lines; i++)
        order[i] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_random(&state) % i;
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < lines; i++)
        mem[order[i] * LINE_WORDS] = order[(i + 1) % lines] * LINE_WORDS;
    free(order);
    return mem;
}

static double chase(const uint64_t *mem, size_t lines, int chains, size_t steps)
{
    uint64_t at[CHAINS];
    for (int c = 0; c < chains; c++)
        at[c] = (uint64_t)(lines / (size_t)chains * (size_t)c) * LINE_WORDS;
    double t0 = now_s();
    for (size_t s = 0; s < steps; s++)
        for (int c = 0; c < chains; c++)
            at[c] = mem[at[c]];
    double t = now_s() - t0;
    uint64_t sink = 0;
    for (int c = 0; c < chains; c++)
        sink += at[c];
    if (sink == 1)
        puts("");
    return t / ((double)steps * chains) * 1e9;
}

int main(int argc, char **argv)
{
    static const size_t all[] = {16, 256, 1024, 4096, 16384, 65536, 262144}, few[] = {16, 1024, 16384};
    const int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const size_t *kib = quick ? few : all, sizes = quick ? 3 : sizeof all / sizeof all[0];
    for (size_t k = 0; k < sizes; k++) {
        size_t lines = kib[k] * 1024 / 64;
        uint64_t *mem = make_cycle(lines);
        size_t steps = quick ? 200000 : 2000000;
        chase(mem, lines, 1, lines); /* touch every line once */
        double one = 1e30, many = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double a = chase(mem, lines, 1, steps), b = chase(mem, lines, CHAINS, steps / CHAINS);
            one = a < one ? a : one;
            many = b < many ? b : many;
        }
        printf("{\"kib\": %zu, \"latency_ns\": %.3f, \"random_ns_per_line\": %.3f}\n", kib[k], one, many);
        fflush(stdout);
        free(mem);
    }
    return 0;
}
