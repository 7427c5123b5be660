/* ptreg nearest neighbors: brute force and a 3-D k-d tree, both exact.
 *
 * Every method computes the squared distance the same way in float,
 * d = (dx*dx + dy*dy) + dz*dz with d_ = q_ - p_ and no fused multiply-add,
 * and breaks ties by the lowest target index, so all methods return the
 * same bits. Indices are uint32_t: at most 2^32 - 1 target points. */
#ifndef PTREG_NN_H
#define PTREG_NN_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ptreg_option_table; /* options.h: the options tables below */

#define PTREG_NO_NEIGHBOR UINT32_MAX


typedef struct ptreg_kdtree ptreg_kdtree;

typedef struct ptreg_kdtree_options {
    int leaf_size; /* most points in a leaf, 4..256 (default 256) */
} ptreg_kdtree_options;

PTREG_API void ptreg_kdtree_options_default(ptreg_kdtree_options *opt);
/* Builds the tree over a copy of the points (one reordered array); the
 * caller's array is not kept. */
PTREG_API ptreg_status ptreg_kdtree_create(const float *xyz, size_t n, const ptreg_kdtree_options *opt,
                                           ptreg_kdtree **tree, ptreg_error *err);
PTREG_API void ptreg_kdtree_destroy(ptreg_kdtree *tree);

/* Exact 1-NN for nq queries, OpenMP over queries. hint (may be NULL) gives
 * a candidate per query, e.g. last iteration's neighbor, or
 * PTREG_NO_NEIGHBOR: its distance bounds the search from the start; the
 * answer does not depend on it. */
PTREG_API void ptreg_kdtree_nearest(const ptreg_kdtree *tree, const float *queries, size_t nq, const uint32_t *hint,
                                    uint32_t *index, float *dist2);

/* The k nearest points of q, sorted by (distance, index); returns how many
 * were found (min(k, n)). */
PTREG_API size_t ptreg_kdtree_knn(const ptreg_kdtree *tree, const float q[3], size_t k, uint32_t *index, float *dist2);

/* A growable list of neighbors the caller owns; reuse it across queries. */
typedef struct ptreg_neighbors {
    uint32_t *index;
    float *dist2;
    size_t count, capacity;
} ptreg_neighbors;

PTREG_API void ptreg_neighbors_free(ptreg_neighbors *nb);
/* All points with d <= radius^2, sorted by (distance, index); replaces
 * nb's contents. */
PTREG_API ptreg_status ptreg_kdtree_radius(const ptreg_kdtree *tree, const float q[3], float radius,
                                           ptreg_neighbors *nb, ptreg_error *err);

/* ---- outlier filters (Open3D's, with its conventions; core.h's
 * ptreg_cloud_select applies their masks) ---- */

/* Statistical outlier removal, as Open3D's RemoveStatisticalOutliers (and
 * PCL's StatisticalOutlierRemoval): each point's mean distance d_i to its k
 * nearest points, the point itself among them (k = 1 is the point alone);
 * m and s the mean and the sample standard deviation (n - 1) of the d_i;
 * keep[i] set when 0 < d_i < m + std_ratio * s. As Open3D, a d_i of 0 (k
 * points all at one place) is dropped and left out of the sums, yet counted
 * in n. Distances in double from the float points; the k nearest by the
 * k-d tree's float distance (nn.h's ties). k >= 1, std_ratio > 0, else
 * PTREG_ERR_ARG. The same mask for any thread count. mean_distance (n
 * values, may be NULL) receives the d_i. */
PTREG_API ptreg_status ptreg_statistical_outliers(const float *xyz, size_t n, size_t k, double std_ratio,
                                                  unsigned char *keep, double *mean_distance, ptreg_error *err);
/* Radius outlier removal, as Open3D's RemoveRadiusOutliers: keep[i] set
 * when at least min_neighbors other points lie at distance < radius (in
 * double; Open3D counts the point itself and asks for more than nb_points,
 * the same test). radius > 0, min_neighbors >= 1, else PTREG_ERR_ARG. */
PTREG_API ptreg_status ptreg_radius_outliers(const float *xyz, size_t n, double radius, size_t min_neighbors,
                                             unsigned char *keep, ptreg_error *err);

/* Statistics of one batch of Delaunay walks: steps per query (a step moves
 * to a closer neighbor), walks the certificate refused near a Voronoi
 * face, which the k-d tree finished, and (ICP's seeded passes) queries that
 * kept their last answer without a walk: they moved less than their
 * margin inside its Voronoi cell (counted as 0 steps). */
#define PTREG_WALK_HISTOGRAM 33 /* steps 0..31, and 32 or more */

typedef struct ptreg_walk_stats {
    uint64_t queries, steps, max_steps, fallbacks, kept;
    uint64_t histogram[PTREG_WALK_HISTOGRAM];
} ptreg_walk_stats;

/* ---- the model index: a model's search structures, built once ---- */

/* The k-d tree and the Delaunay graph of a model (the truth point set of a
 * registration, known before sensing starts), built once, saved to and
 * loaded from a .pti file (docs/FORMATS.md), and used by ptreg_icp_indexed
 * for every registration against that model. */
typedef struct ptreg_model_index ptreg_model_index;

/* Nearest-neighbor methods, all exact (the same answers, bit for bit):
 * ICP's choice and the model index's searches.
 * The Delaunay walks (the aerial-refuelling study's method) need the
 * model's Delaunay graph, built once in a model index; they differ in where
 * each walk starts. */
typedef enum ptreg_nn_method {
    PTREG_NN_AUTO = 0, /* the index's measured choice (ptreg_model_index_tune) when it has
                                 one; else pnnopt with a graph, else the k-d tree (brute force if tiny) */
    PTREG_NN_BRUTE,
    PTREG_NN_KDTREE,
    PTREG_NN_DELAUNAY_ZERO,  /* from a fixed point: the one nearest the model's centroid */
    PTREG_NN_DELAUNAY_KDANN, /* from the best point of the leaf the tree's descent reaches */
    PTREG_NN_DELAUNAY_PNN,   /* from the last iteration's answer (the fixed point at first) */
    PTREG_NN_DELAUNAY_PNNOPT /* kdann in the first iteration, pnn after */
} ptreg_nn_method;

/* A name to a method: the option "nn" of ptreg_option_table_find("icp") (ptreg_option_parse). */
PTREG_API const char *ptreg_nn_method_name(ptreg_nn_method method);
/* Whether the method walks a Delaunay graph (needs a model index's graph). */
PTREG_API int ptreg_nn_method_is_delaunay(ptreg_nn_method method);

typedef struct ptreg_index_options {
    int delaunay;            /* build the Delaunay graph (default 1) */
    int leaf_size;           /* the k-d tree's (default: ptreg_kdtree_options_default) */
    ptreg_progress progress; /* after each stage: 1 the k-d tree, 2 the graph (value: its ms) */
} ptreg_index_options;

PTREG_API void ptreg_index_options_default(ptreg_index_options *opt);
/* The table of its options, ptreg_option_table_find("index") (options.h): leaf_size. */

/* Builds the index of n model points. A model Qhull cannot triangulate
 * (fewer than 5 distinct points, coplanar, collinear) still gets an index,
 * without a graph; info.delaunay_note says why. */
PTREG_API ptreg_status ptreg_model_index_create(const float *xyz, size_t n, const ptreg_index_options *opt,
                                                ptreg_model_index **index, ptreg_error *err);
PTREG_API void ptreg_model_index_destroy(ptreg_model_index *index);

typedef struct ptreg_model_index_info {
    size_t points;     /* the model's, duplicates included */
    size_t duplicates; /* exact duplicates merged in the graph */
    int has_delaunay;
    size_t delaunay_edges;         /* directed: each edge counted from both ends */
    char delaunay_note[256];       /* why there is no graph ("" when there is) */
    double kdtree_ms, delaunay_ms; /* build times (a loaded index: as its file records) */
} ptreg_model_index_info;

PTREG_API void ptreg_model_index_get_info(const ptreg_model_index *index, ptreg_model_index_info *info);
/* The nearest-neighbor method measured fastest on this model
 * (ptreg_model_index_tune in icp.h, `ptreg index --tune`), kept with the
 * index and saved in its file, so that ICP's auto runs it. Methods are
 * ptreg_nn_method values (icp.h: this layer only stores them). */
#define PTREG_INDEX_NN_SLOTS 8

typedef struct ptreg_index_nn_tuning {
    int method;                             /* the choice; 0 (auto): none measured, auto follows its rule */
    int threads;                            /* threads the times were taken with */
    int iterations;                         /* ICP updates per timed run */
    int repeat;                             /* timed runs per method (each time is their median) */
    size_t queries;                         /* sample queries per correspondence pass */
    double median_ms[PTREG_INDEX_NN_SLOTS]; /* per method value; < 0: not measured */
} ptreg_index_nn_tuning;

/* What the index holds: method 0 and no times when it was never tuned. */
PTREG_API void ptreg_model_index_get_nn_tuning(const ptreg_model_index *index, ptreg_index_nn_tuning *tuning);

/* The model's points, in their original order. */
PTREG_API const float *ptreg_model_index_points(const ptreg_model_index *index, size_t *n);

/* Exact 1-NN of nq queries among the index's model points: nearest[i] is a
 * model index (original order), dist2[i] its squared distance. method:
 * KDTREE (or AUTO; seed[i], if given, bounds each search first), BRUTE, or
 * a walk of the Delaunay graph from the model point nearest its centroid
 * (DELAUNAY_ZERO), the best point of the leaf the tree's descent reaches
 * (DELAUNAY_KDANN), or seed[i] (DELAUNAY_PNN; without a seed the fixed
 * start; DELAUNAY_PNNOPT: kdann without seeds, pnn with them). seed may be
 * NULL; stats (may be NULL) receives the walks' statistics. A walk on an
 * index without a graph is PTREG_ERR_UNSUPPORTED. OpenMP over queries. */
PTREG_API ptreg_status ptreg_model_index_nearest(const ptreg_model_index *index, const float *queries, size_t nq,
                                                 ptreg_nn_method method, const uint32_t *seed, uint32_t *nearest,
                                                 float *dist2, ptreg_walk_stats *stats, ptreg_error *err);

/* Writes the index atomically (temporary file + rename). */
PTREG_API ptreg_status ptreg_model_index_save(const ptreg_model_index *index, const char *path, ptreg_error *err);
/* Reads an index in one read. A truncated, corrupted (checksum), foreign
 * (magic, endianness) or version-mismatched file is PTREG_ERR_FORMAT with a
 * message naming the file and the problem. */
PTREG_API ptreg_status ptreg_model_index_load(const char *path, ptreg_model_index **index, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
