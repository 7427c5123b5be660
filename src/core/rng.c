#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "ptreg/core.h"

#include <math.h>
#include <time.h>
#include "core/numeric.h"

/* splitmix64 spreads a small seed over the 256-bit xoshiro state. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void ptreg_rng_seed(ptreg_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t ptreg_rng_next(ptreg_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ptreg_rng_uniform(ptreg_rng *rng) { return (double)(ptreg_rng_next(rng) >> 11) * 0x1.0p-53; }

/* Box-Muller; one of the pair is thrown away to keep the state simple. */
double ptreg_rng_normal(ptreg_rng *rng)
{
    double u1 = ptreg_rng_uniform(rng), u2 = ptreg_rng_uniform(rng);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

double ptreg_time_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
