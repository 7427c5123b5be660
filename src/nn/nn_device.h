/* A model's nearest-neighbor structures on a device: the model index's k-d
 * tree and Delaunay graph (their CPU arrays, uploaded once) and the points
 * brute force scans; the kernels (the nn/ .cl files) that search them. Every method
 * gives the CPU's answers bit for bit. Private to the library and tests. */
#ifndef PTREG_NN_DEVICE_H
#define PTREG_NN_DEVICE_H

#include "device/backend.h"
#include "ptreg/nn.h"

/* Threads per work-group and items per thread of the device kernels. */
#define PTREG_DEVICE_WG 256
#define PTREG_DEVICE_ITEMS 4
/* Floats per query of a walk's memory (dt_memory). */
#define PTREG_WALK_MEMORY_FLOATS 8
/* The walk records' flags (delaunay.cl). */
#define PTREG_WALK_FALLBACK (1u << 24)
#define PTREG_WALK_KEPT (1u << 25)
#define PTREG_WALK_STEPS_MASK 0xffffffu
#define PTREG_WALK_FIELDS 38 /* ptreg_walk_stats: 5 counts and the histogram */

/* The program of the searches (kdtree.cl, delaunay.cl, brute.cl). */
extern const kernel_program nn_kernels;

/* A k-d tree on a device: its arrays as the host builds them (the layout
 * the .cl files read). The k-NN and radius searches read the nodes, leaves,
 * chunks and each slot's index; the 1-NN search and the walks' descent the
 * cells and parents too (full). */
typedef struct nn_device_tree {
    size_t slots;
    dbuf *nodes, *leaves, *chunks, *index_of_slot;
    dbuf *cells, *parent; /* full only */
} nn_device_tree;

ptreg_status nn_device_tree_upload(dev_handle *dev, const ptreg_kdtree *t, int full, nn_device_tree *out,
                                   ptreg_error *err);
void nn_device_tree_free(nn_device_tree *t);

/* The left-balanced tree's nodes (lbkd.c): a point, and its CPU slot with
 * the node's split axis in the top bits. */
#define LBKD_SLOT_MASK 0x3fffffffu
#define LBKD_AXIS_SHIFT 30
typedef struct lbkd_node {
    float x, y, z;
    uint32_t word;
} lbkd_node;

/* The model's points as a left-balanced tree (*count nodes, malloc'ed). */
ptreg_status lbkd_build(const ptreg_kdtree *t, lbkd_node **out, size_t *count, ptreg_error *err);
/* Nodes left of a left-balanced subtree's root, of n. */
size_t lbkd_left_size(size_t n);

/* The k-d tree's two exact searches on a device, the same answers: climb
 * the CPU tree's cells from the seed's leaf (the default: on POCL the
 * faster), or walk the left-balanced tree from its root without a stack
 * (PTREG_NN_DEVICE_KDTREE=lbkd; the GPU run measures both). */
typedef enum nn_kd_search { NN_KD_CLIMB = 0, NN_KD_LBKD } nn_kd_search;

typedef struct nn_device_model {
    dev_handle *dev;
    const ptreg_model_index *index;
    size_t points;
    int has_graph;
    uint32_t graph_start;
    char defines[1024]; /* the layout and sizes every device program here is built with */
    dbuf *point_xyz;    /* original order, x y z: brute force's names */
    dbuf *slot_xyz;     /* the tree's slot order: the tree's and the walks' names */
    dbuf *brute_x, *brute_y, *brute_z;
    nn_device_tree tree;
    dbuf *lbkd; /* the left-balanced tree (lbkd_node) */
    size_t lbkd_count;
    nn_kd_search kd_search; /* how nn_device_kdtree searches */
    dbuf *rows, *row_at, *nbr;
    dkernel *brute, *kdtree, *lbkd_search, *walk, *walk_partials, *walk_total;
} nn_device_model;

/* Uploads the index's structures (the graph only when with_graph and the
 * index has one) and builds the kernels. The index must outlive it. */
ptreg_status nn_device_create(dev_handle *dev, const ptreg_model_index *index, int with_graph, nn_device_model **out,
                              ptreg_error *err);
void nn_device_destroy(nn_device_model *m);
/* Builds the kernels on the device ahead of any model (compiling takes
 * time worth timing apart). */
ptreg_status nn_device_prepare(dev_handle *dev, ptreg_error *err);
/* Device memory the model holds. */
size_t nn_device_bytes(const nn_device_model *m);

/* The -D options of the host's layouts and the kernels' sizes. */
void nn_device_layout(const dev_handle *dev, char *defines, size_t size);

/* Exact 1-NN of n queries (3n floats on the device). Brute force answers
 * original indices, the tree and the walks slots. kdtree: nearest holds
 * each query's seed (NO_NEIGHBOR: none) and receives the answer, by the
 * model's kd_search, within squared distance limit (INFINITY: any; none
 * within it: NO_NEIGHBOR at +inf, as the CPU's bounded search, which
 * spares a query far from the model the long search). first_equal (n u32,
 * or NULL): only the queries i with first_equal[i] == i are answered, the
 * others left for their callers to read at first_equal[i]. */
ptreg_status nn_device_brute(const nn_device_model *m, const dbuf *queries, size_t n, dbuf *nearest, dbuf *dist2,
                             ptreg_error *err);
ptreg_status nn_device_kdtree(const nn_device_model *m, const dbuf *queries, size_t n, float limit,
                              const dbuf *first_equal, dbuf *nearest, dbuf *dist2, ptreg_error *err);
/* Walks from start (PTREG_WALK_FIXED, _KDANN, _SEED: nearest holds the
 * seeds); memory (PTREG_WALK_MEMORY_FLOATS per query, or NULL) carries
 * each answer's certificate to the next pass; info receives each walk's
 * record, which nn_device_walk_stats adds up into stats (a device
 * buffer holding PTREG_WALK_FIELDS u64 from word `offset`; partials:
 * PTREG_WALK_FIELDS u64 per group of device_groups). */
ptreg_status nn_device_walk(const nn_device_model *m, const dbuf *queries, size_t n, int start, dbuf *nearest,
                            dbuf *dist2, dbuf *memory, dbuf *info, ptreg_error *err);
ptreg_status nn_device_walk_stats(const nn_device_model *m, const dbuf *info, size_t n, dbuf *partials, dbuf *stats,
                                  size_t offset, ptreg_error *err);
/* ptreg_walk_stats from the PTREG_WALK_FIELDS words. */
void walk_stats_from_words(const uint64_t *words, ptreg_walk_stats *stats);

/* Groups of the reductions over n items. */
size_t device_groups(size_t n);

#endif
