/* The tuner's test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_TUNE_TESTING_H
#define PTREG_TUNE_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/tune.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ptreg_tune_cache_lookup on the cache's text (path names it in the
 * warning). */
int ptreg_tune_cache_lookup_text(const char *text, const char *path, const ptreg_tune_space *space,
                                 const ptreg_tune_machine *m, const char *size_class, double *point, char *found_class,
                                 size_t class_size);

#ifdef __cplusplus
}
#endif

#endif
