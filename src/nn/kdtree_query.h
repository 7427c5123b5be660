/* What other modules may ask of a k-d tree (feat's neighborhood tables,
 * ICP's correspondences), without its layout: the distance formula every
 * exact method shares, bounded k-NN, and the tree's own order of its
 * points. A "slot" is a position in that order: searches answer with slots
 * (nn_kernels.h), which callers hand back as the next search's seeds and
 * resolve here, never by reading the tree. */
#ifndef PTREG_NN_KDTREE_QUERY_H
#define PTREG_NN_KDTREE_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ptreg/nn.h"

/* The most points a tree takes, and the most chunks of PTREG_KD_LANES
 * slots: its nodes, leaves (below the leaf bit) and slots are uint32, with
 * PTREG_NO_NEIGHBOR kept for "none". Small leaves pad more: at leaf size 4
 * a tree has 4 slots per point, so the slots, not the points, reach 2^32
 * first. */
#define KD_MAX_POINTS ((size_t)PTREG_NO_NEIGHBOR / 2 - 1)
#define KD_MAX_CHUNKS ((size_t)PTREG_NO_NEIGHBOR / 16)

/* PTREG_ERR_ARG when n points are more than a tree takes; called by every
 * entry that builds one, before any point is read. */
ptreg_status kd_check_points(const char *what, size_t n, ptreg_error *err);

/* The one distance formula of every exact method (see nn.h). */
static inline float kd_dist2(float qx, float qy, float qz, float px, float py, float pz)
{
    float dx = qx - px, dy = qy - py, dz = qz - pz;
    return (dx * dx + dy * dy) + dz * dz;
}

/* A neighbour as one 64-bit key, its squared distance's bits above its
 * index: squared distances are >= 0, whose float bits order as integers,
 * so keys order as (distance, index), the order of every list. */
static inline uint64_t kd_key(float dist2, uint32_t index)
{
    uint32_t bits;
    memcpy(&bits, &dist2, sizeof bits);
    return (uint64_t)bits << 32 | index;
}

static inline float kd_key_dist2(uint64_t key)
{
    const uint32_t bits = (uint32_t)(key >> 32);
    float d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* The k nearest points of q (sorted by (distance, index)) among those with
 * squared distance <= limit: the whole k-NN answer when at least k points
 * lie within the limit, which a caller that knows such points (a nearby
 * query's neighbors) uses to prune the search from the start. */
size_t kd_knn_within(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2);

/* A group of nearby queries searches the chunks one walk of the tree
 * gathered for all of them: those within `reach` (a squared distance) of
 * the group's box, with their boxes side by side. */
#define KD_GROUP_LANES 16
#define KD_GROUP_BLOCKS 16
#define KD_GROUP_MAX_CHUNKS (KD_GROUP_LANES * KD_GROUP_BLOCKS)
typedef struct kd_group_block {
    float lo[3][KD_GROUP_LANES], hi[3][KD_GROUP_LANES]; /* lanes past the count: empty boxes */
    uint32_t chunk[KD_GROUP_LANES];
} kd_group_block;
typedef struct kd_group {
    kd_group_block block[KD_GROUP_BLOCKS];
    size_t count;
} kd_group;

/* Gathers the chunks within reach of the box [lo, hi]; 0 when they are
 * more than a group holds (search singly then). */
int kd_group_gather(const ptreg_kdtree *t, const float lo[3], const float hi[3], float reach, kd_group *g);

/* kd_knn_within(t, q, k, limit) for a query of the group (inside its box),
 * bit for bit: the gathered chunks within `guess` (at most the group's
 * reach) are scanned, and when fewer than k points lie within it (a guess
 * short of the k-th nearest, below the limit) the query is searched
 * singly. */
size_t kd_group_knn(const ptreg_kdtree *t, const kd_group *g, const float q[3], size_t k, float guess, float limit,
                    uint32_t *index, float *dist2);

/* Every point with squared distance <= limit, sorted by (distance, index)
 * when asked (else in the tree's order); -1 when out of memory. */
int kd_radius_within(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb);

/* Grows nb's arrays to hold at least cap neighbors (contents kept); -1
 * when out of memory (the arrays then hold what they held). */
int kd_neighbors_reserve(ptreg_neighbors *nb, size_t cap);

/* Slots: positions 0 .. count - 1 in the tree's order (nearby points at
 * nearby positions; some positions are padding). */
size_t kdtree_slot_count(const ptreg_kdtree *t);
/* The point at a slot (its index in the cloud), or PTREG_NO_NEIGHBOR for
 * padding. */
uint32_t kdtree_slot_index(const ptreg_kdtree *t, size_t slot);
/* The coordinates of the point at a slot (a real one). */
void kdtree_slot_point(const ptreg_kdtree *t, uint32_t slot, float p[3]);

#endif
