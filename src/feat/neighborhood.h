/* The neighborhoods of every point of a cloud, found once and shared by
 * the passes of the point features (FPFH reads them twice).
 *
 * k-NN: the k nearest, the point itself among them, as PCL's and Open3D's
 * searches count them. Radius: every point with squared distance strictly
 * below (float)(r * r), as FLANN (PCL) and nanoflann (Open3D) test it, so a
 * point exactly at distance r is not a neighbor. k-NN lists are sorted by
 * (squared distance, index); radius lists too (FEAT_SORTED), or in the
 * order the k-d tree's traversal meets the points (FEAT_TREE_ORDER: the
 * same on every run, and no sort, which at a hundred neighbors costs more
 * than the search; for FPFH, whose sums need no order). Float squared
 * distances as the k-d tree computes them. Memory: the lists themselves, n * (k or the mean count) *
 * 8 bytes, plus 24 bytes per point. */
#ifndef PTREG_FEAT_NEIGHBORHOOD_H
#define PTREG_FEAT_NEIGHBORHOOD_H

#include "core/options_table.h"
#include "ptreg/features.h"
#include "ptreg/nn.h"

typedef enum feat_order { FEAT_SORTED = 0, FEAT_TREE_ORDER } feat_order;

typedef struct feat_list {
    const uint32_t *index;
    const float *dist2;
    size_t count;
} feat_list;

typedef struct feat_table {
    size_t n;
    feat_list *list;  /* per point, by its index in the cloud */
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

ptreg_status feat_check_neighborhood(const ptreg_neighborhood *nb, ptreg_error *err);

/* Every point's neighborhood within the cloud the tree was built on (xyz,
 * the same n points). Queries run in the tree's order, each k-NN search
 * bounded from the start by its predecessor's neighbors; the lists equal
 * those of independent searches (reference != 0: feat_neighbors for each
 * point in index order), for any thread count. */
ptreg_status feat_table_build(const ptreg_kdtree *tree, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                              int reference, feat_order order, feat_table *table, ptreg_error *err);
void feat_table_free(feat_table *table);

/* The plain reference: one independent k-d tree search per point, the
 * same rules. Tests compare the table with it. */
ptreg_status feat_neighbors(const ptreg_kdtree *tree, const ptreg_neighborhood *nb, feat_order order, const float q[3],
                            ptreg_neighbors *out, ptreg_error *err);

/* ptreg_normals on a tree the caller built on xyz (the same n points), for
 * callers that hold one already (ICP's target index); opt as checked by
 * ptreg_normals. */
ptreg_status feat_normals_on_tree(const ptreg_kdtree *tree, const float *xyz, size_t n,
                                  const ptreg_normals_options *opt, float *normals, float *curvature, size_t *missing,
                                  ptreg_error *err);

#endif
