/* The model index's layout, shared by index.c (building), index_file.c
 * (the .pti file) and ICP. */
#ifndef PTREG_NN_INDEX_IMPL_H
#define PTREG_NN_INDEX_IMPL_H

#include "nn/delaunay_impl.h"
#include "nn/kdtree_impl.h"

struct ptreg_model_index {
    float *points; /* the model, original order */
    size_t n;
    ptreg_kdtree *tree;
    delaunay_graph *graph; /* NULL when the model has none (see note) */
    char note[256];
    double kdtree_ms, delaunay_ms;
    ptreg_index_nn_tuning tuning; /* the measured method (method 0: none) */
    void *storage;                /* loaded: the one buffer the arrays live in */
    int borrowed_points;          /* points are the caller's (index_create_borrowing) */
};

/* ptreg_model_index_create without the copy of the points: the index reads
 * the caller's, which must outlive it. A one-call index (ICP without a
 * prebuilt one) of 10^8 points would otherwise hold them twice. */
ptreg_status index_create_borrowing(const float *xyz, size_t n, const ptreg_index_options *opt, ptreg_model_index **out,
                                    ptreg_error *err);

/* The ptreg_nn_method values the index may store as its measured choice:
 * 1 (brute) .. PTREG_INDEX_NN_LAST, the walks from PTREG_INDEX_NN_FIRST_WALK
 * on. The .pti file stores the numbers: they must not change. */
#define PTREG_INDEX_NN_LAST PTREG_NN_DELAUNAY_PNNOPT
#define PTREG_INDEX_NN_FIRST_WALK PTREG_NN_DELAUNAY_ZERO
_Static_assert(PTREG_NN_BRUTE == 1 && PTREG_NN_DELAUNAY_ZERO == 3 && PTREG_NN_DELAUNAY_PNNOPT == 6 &&
                   PTREG_INDEX_NN_LAST < PTREG_INDEX_NN_SLOTS,
               "ptreg_nn_method as .pti files store it");

/* No measurement: method 0, every time "not measured". */
void index_nn_tuning_clear(ptreg_index_nn_tuning *tuning);
/* Whether t is a measurement an index (with a graph or not) may hold; why
 * not in why (for messages). */
int index_nn_tuning_valid(const ptreg_index_nn_tuning *t, int has_graph, const char **why);

/* Writes the index in an older layout of the .pti format (version 1: no
 * tuning section), for the tests of reading old files. */
ptreg_status pti_save_version(const ptreg_model_index *index, const char *path, unsigned version, ptreg_error *err);

/* The .pti checksum (docs/FORMATS.md): four lanes of FNV-1a 64 over
 * little 64-bit words (lane k takes words k, k + 4, ...; each step
 * h = (h ^ w) * prime, then h ^= h >> 32), then FNV-1a 64 of the lanes'
 * 32 bytes. Every step is invertible, so any one changed word changes it.
 * Fast enough (~1 ms for 15 MB) that loading is dominated by the read. */
uint64_t pti_checksum(const void *data, size_t size);

/* Declared in the public headers before 1.x; the library's own (not exported). */
/* Stores a measurement (ptreg_model_index_tune does); a method the index
 * cannot run (a walk without a graph), or one without a time of its own, is
 * PTREG_ERR_ARG. method 0 clears it. */
ptreg_status ptreg_model_index_set_nn_tuning(ptreg_model_index *index, const ptreg_index_nn_tuning *tuning,
                                             ptreg_error *err);

#endif
