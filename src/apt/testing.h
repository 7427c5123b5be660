/* Atom-probe crystallography's test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_APT_TESTING_H
#define PTREG_APT_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/apt.h"
#include "ptreg/motif.h"
#include "ptreg/synth_apt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of points in the first shells: the k values that close a shell
 * (up to max, written to shells[]; returns how many). */
size_t ptreg_lattice_shells(ptreg_lattice lattice, size_t *shells, size_t max);

void ptreg_apt_synth_init(ptreg_apt_synth *s);

#ifdef __cplusplus
}
#endif

#endif
