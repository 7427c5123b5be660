/* The neighbour searches' test and fuzz hooks, and the reference paths the tests compare
 * against: not part of the public API (docs/API.md, "Tiers"). Each layer
 * keeps its hooks in its own testing.h, beside its code; tests/hooks.h
 * includes them all. Not installed, not in <ptreg/ptreg.h>; the functions
 * are hidden in libptreg.so and reached through the static library, which
 * the tests, the fuzzers (tests/fuzz) and the benchmark programs link. */
#ifndef PTREG_NN_TESTING_H
#define PTREG_NN_TESTING_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

ptreg_status ptreg_model_index_load_memory(const void *data, size_t size, const char *name, ptreg_model_index **index,
                                           ptreg_error *err);

/* 1-NN of nq queries against m target points by brute force, blocked over
 * the target, OpenMP over queries: the exact reference of the searches. */
ptreg_status ptreg_brute_nearest(const float *target, size_t m, const float *queries, size_t nq, uint32_t *index,
                                 float *dist2, ptreg_error *err);

size_t ptreg_kdtree_size(const ptreg_kdtree *tree);

/* Enum parsers whose enums are options: a front end sets them through the
 * options table's row (ptreg_option_parse). -1 for an unknown name. */
int ptreg_nn_method_parse(const char *name, ptreg_nn_method *method);

#ifdef __cplusplus
}
#endif

#endif
