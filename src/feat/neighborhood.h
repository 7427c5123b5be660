/* The neighborhoods of every point of a cloud kept at once, for the
 * point features that read them twice (FPFH) or across points (the
 * tangent-plane orientation of normals): the neighbourhood engine's
 * (nn/hoods.h) lists, block by block, copied into one table. Memory: the
 * lists themselves, n * (k or the mean count) * 8 bytes, plus 24 bytes
 * per point. */
#ifndef PTREG_FEAT_NEIGHBORHOOD_H
#define PTREG_FEAT_NEIGHBORHOOD_H

#include "core/options_table.h"
#include "nn/hoods.h"
#include "ptreg/features.h"
#include "ptreg/nn.h"

typedef struct feat_table {
    size_t n;
    nn_list *list;    /* per point, by its index in the cloud */
    size_t max_count; /* the longest list */
    void **blocks;    /* the storage the lists point into */
    size_t block_count;
} feat_table;

/* The rows (core/options_table.h) of a neighborhood `member` of options
 * struct `type`; k 0 (no count) and radius 0 (no radius) are "not set". */
#define FEAT_NEIGHBORHOOD_ROWS(type, member)                                                                      \
    OPTION_NUMBER(type, member.k, "k", NULL, SIZE, 0, 1 << 20, PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET, "N", \
                  "the N nearest points, the point itself among them; with radius, at most N (on the command "    \
                  "line only when --k is given: --radius alone has no cap)"),                                     \
        OPTION_NUMBER(type, member.radius, "radius", NULL, DOUBLE, 0, 1e30,                                       \
                      PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET, "R",                                          \
                      "every point closer than R (strictly), the point itself among them; with k, the N nearest " \
                      "of them (Open3D's KDTreeSearchParamHybrid(R, max_nn = N))")

/* Every point's neighborhood within the cloud the tree was built on (xyz,
 * the same n points), as nn_hoods_block gives them (reference != 0: one
 * independent search per point, in index order). */
ptreg_status feat_table_build(const ptreg_kdtree *tree, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                              int reference, nn_order order, feat_table *table, ptreg_error *err);
void feat_table_free(feat_table *table);

/* ptreg_normals on a tree the caller built on xyz (the same n points), for
 * callers that hold one already (ICP's target index); opt as checked by
 * ptreg_normals. */
ptreg_status feat_normals_on_tree(const ptreg_kdtree *tree, const float *xyz, size_t n,
                                  const ptreg_normals_options *opt, float *normals, float *curvature, size_t *missing,
                                  ptreg_error *err);

/* ptreg_normals by tiles of at most tile_points points (nn/tiles.h): the
 * same bits as one tree's, in memory bounded by the tile; not for the
 * tangent-plane orientation. Large clouds take this path. */
ptreg_status feat_normals_tiled(const float *xyz, size_t n, const ptreg_normals_options *opt, size_t tile_points,
                                float *normals, float *curvature, size_t *missing, ptreg_error *err);

#endif
