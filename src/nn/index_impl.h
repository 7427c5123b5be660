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

#endif
