/* The model index's layout, shared by index.c (building), index_file.c
 * (the .pti file) and ICP. */
#ifndef PTREG_NN_INDEX_IMPL_H
#define PTREG_NN_INDEX_IMPL_H

#include "nn/delaunay_impl.h"
#include "nn/kdtree_impl.h"

struct ptreg_model_index {
    float *points;          /* the model, original order */
    size_t n;
    ptreg_kdtree *tree;
    ptreg_delaunay *graph;  /* NULL when the model has none (see note) */
    char note[256];
    double kdtree_ms, delaunay_ms;
    void *storage;          /* loaded: the one buffer the arrays live in */
};

/* The .pti checksum (docs/FORMATS.md): four lanes of FNV-1a 64 over
 * little 64-bit words (lane k takes words k, k + 4, ...; each step
 * h = (h ^ w) * prime, then h ^= h >> 32), then FNV-1a 64 of the lanes'
 * 32 bytes. Every step is invertible, so any one changed word changes it.
 * Fast enough (~1 ms for 15 MB) that loading is dominated by the read. */
uint64_t ptreg_pti_checksum(const void *data, size_t size);

#endif
