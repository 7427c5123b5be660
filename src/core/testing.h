/* Core's test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_CORE_TESTING_H
#define PTREG_CORE_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/core.h"
#include "ptreg/transform.h"
#include "ptreg/results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest difference between the components of A's and B's rotation
 * quaternions (4x4 transforms), q and -q being one rotation: the parity
 * measure of the batch device suites. NaN when either rotation has an entry
 * that is not finite, so that `difference <= tol` fails it. */
double ptreg_transform_quaternion_difference(const double A[16], const double B[16]);

/* The field called name, or NULL (the front ends loop over a table). */
const ptreg_result_field *ptreg_result_find(const ptreg_result_table *table, const char *name);

void ptreg_error_clear(ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
