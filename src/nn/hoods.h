/* The neighbourhood engine: every point's neighbourhood within the cloud a
 * k-d tree holds, found block by block, so a consumer (normals, the
 * feature table) holds one block's lists at a time, whatever the cloud's
 * size.
 *
 * k-NN: the k nearest, the point itself among them, as PCL's and Open3D's
 * searches count them. Radius: every point with squared distance strictly
 * below (float)(r * r), as FLANN (PCL) and nanoflann (Open3D) test it, so a
 * point exactly at distance r is not a neighbour. Hybrid (k and r): the k
 * nearest of those. k-NN lists are sorted by (squared distance, index);
 * radius lists too (NN_SORTED), or in the order the k-d tree's traversal
 * meets the points (NN_TREE_ORDER: the same on every run, and no sort).
 * Float squared distances as the k-d tree computes them.
 *
 * A block is NN_HOOD_BLOCK positions of the tree's order (nearby points;
 * fewer where k is so large that their lists would pass 2^20 entries).
 * Its k-NN queries go in groups of a chunk's points: one walk of the tree
 * gathers the chunks a group can need, each query scans those
 * (kd_group_knn); the lists equal independent searches' (nn_neighbors,
 * in index order with `reference`) bit for bit, for any thread count. */
#ifndef PTREG_NN_HOODS_H
#define PTREG_NN_HOODS_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/features.h"
#include "ptreg/nn.h"

#define NN_HOOD_BLOCK 256

typedef enum nn_order { NN_SORTED = 0, NN_TREE_ORDER } nn_order;

typedef struct nn_list {
    const uint32_t *index;
    const float *dist2;
    size_t count;
} nn_list;

/* What to search: the cloud the tree was built on (xyz, the same n
 * points), the neighbourhood (checked by nn_check_neighborhood), the order
 * of radius lists, and `reference`: independent searches in index order
 * (the plain path tests compare with). */
typedef struct nn_hoods {
    const ptreg_kdtree *tree;
    const float *xyz;
    size_t n;
    ptreg_neighborhood nb;
    nn_order order;
    int reference;
} nn_hoods;

/* One block's lists, and the storage they live in (a thread's own, reused
 * block after block; nn_block_free releases it). */
typedef struct nn_block {
    uint32_t point[NN_HOOD_BLOCK]; /* the block's points, by index in the cloud */
    nn_list list[NN_HOOD_BLOCK];   /* list[j]: point[j]'s neighbourhood */
    float kth[NN_HOOD_BLOCK];      /* k-NN: point[j]'s k-th nearest, infinity where the radius cut the list */
    size_t count;
    size_t number;          /* the block's number */
    ptreg_neighbors store;  /* where the lists live (its index and dist2; count unused) */
    ptreg_neighbors search; /* one query's answer (radius and reference searches) */
} nn_block;

ptreg_status nn_check_neighborhood(const ptreg_neighborhood *nb, ptreg_error *err);

/* How many blocks the searches take (block numbers 0 .. count - 1). */
size_t nn_hoods_blocks(const nn_hoods *h);

/* Block number `block`'s lists into b (reusing its storage); 0 when out
 * of memory. Blocks are independent: threads may run any of them. */
int nn_hoods_block(const nn_hoods *h, size_t block, nn_block *b);

void nn_block_free(nn_block *b);

/* A consumer of blocks: called from several threads at once, each block
 * once, which it may rewrite (the storage is the thread's own); 0 stops
 * the search (as out of memory). */
typedef int (*nn_block_fn)(void *ctx, nn_block *b);

/* Every block of h, in parallel, each handed to fn as it is found (a
 * thread's own storage: the lists live until fn returns); 0 when out of
 * memory or fn said stop. */
int nn_hoods_each(const nn_hoods *h, nn_block_fn fn, void *ctx);

/* One independent search (the plain reference), the same rules. */
ptreg_status nn_neighbors(const ptreg_kdtree *tree, const ptreg_neighborhood *nb, nn_order order, const float q[3],
                          ptreg_neighbors *out, ptreg_error *err);

#endif
