/* The pair engine's test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_PAIR_TESTING_H
#define PTREG_PAIR_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/pair.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The pair engine's vectorised exp on n floats (out may alias in):
 * relative error under 1e-6 for x in [-87.3, 0], 0 below. The Gaussian
 * sums and LDDMM's kernels fold log2(e) into their scale and take 2^t
 * instead (docs/ALGORITHMS.md, "Pair engine"), with the same 0 below. */
void ptreg_pair_exp(const float *in, float *out, size_t n);

#ifdef __cplusplus
}
#endif

#endif
