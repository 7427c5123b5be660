/* Point features: normals by PCA of a neighborhood, and the point feature
 * histograms PFH (125 bins) and FPFH (33 bins) with PCL's pair feature.
 * Formulas and conventions: docs/ALGORITHMS.md, "Normals, PFH and FPFH". */
#ifndef PTREG_FEATURES_H
#define PTREG_FEATURES_H

#include "core.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ptreg_option_table; /* options.h: the options tables below */

/* A neighborhood: the k nearest points (the point itself included, as
 * PCL's k-NN search has it), every point strictly within radius, or both
 * (Open3D's KDTreeSearchParamHybrid(radius, max_nn = k): the k nearest,
 * those strictly within radius). */
typedef struct ptreg_neighborhood {
    size_t k;      /* > 0: at most the k nearest; 0: radius only */
    double radius; /* > 0: strictly within radius; 0 with k > 0: k-NN only */
} ptreg_neighborhood;

/* Which way a normal points (PCA gives an axis, not a side). */
typedef enum ptreg_normal_orientation {
    PTREG_ORIENT_VIEWPOINT = 0, /* toward the viewpoint (default; a scan's sensor) */
    PTREG_ORIENT_DIRECTION,     /* along a direction: n . d >= 0 */
    PTREG_ORIENT_NONE,          /* as the eigen-solver gives it (deterministic, not meaningful) */
    PTREG_ORIENT_TANGENT_PLANE  /* consistent over the surface (Hoppe et al. 1992; Open3D's
                                 * OrientNormalsConsistentTangentPlane): flips propagated along a
                                 * minimum spanning tree of the orient_k-nearest graph weighted by
                                 * 1 - |n_i . n_j|, from each component's highest point, whose
                                 * normal faces +z */
} ptreg_normal_orientation;

typedef struct ptreg_normals_options {
    ptreg_neighborhood neighbors; /* default k = 30 */
    ptreg_normal_orientation orientation;
    double viewpoint[3]; /* VIEWPOINT: normals point toward it (default the origin) */
    double direction[3]; /* DIRECTION (default +z) */
    int orient_k;        /* TANGENT_PLANE: graph neighbors (default 10; at most the
                                     neighborhood's own size) */
    ptreg_device device; /* the CPU, or a GPU (cuda:N, opencl:N): the CPU's normals; not
                                     tangent-plane (auto: a GPU where ptreg_device_resolve finds one) */
} ptreg_normals_options;

PTREG_API void ptreg_normals_options_default(ptreg_normals_options *opt);
/* The table of its options, ptreg_option_table_find("normals") (options.h): k, radius, orientation, orient_k. */
/* Where ptreg_normals runs: the CPU, or the GPU named (tangent-plane
 * orientation there is PTREG_ERR_UNSUPPORTED; auto then takes the CPU). */
PTREG_API ptreg_status ptreg_normals_resolve_device(const ptreg_normals_options *opt, ptreg_device *on,
                                                    ptreg_error *err);

/* normals (3n floats) and curvature (n floats, may be NULL) of every point:
 * the eigenvector of the smallest eigenvalue of the neighborhood's
 * covariance (double), curvature l0 / (l0 + l1 + l2), oriented by
 * opt->orientation. Points with fewer than 3 neighbors, or whose neighbors all
 * coincide, get NaN and are counted
 * in *missing (may be NULL). The same bits for any thread count. */
PTREG_API ptreg_status ptreg_normals(const float *xyz, size_t n, const ptreg_normals_options *opt, float *normals,
                                     float *curvature, size_t *missing, ptreg_error *err);


typedef enum ptreg_fpfh_convention {
    PTREG_FPFH_PCL = 0, /* FPFH(p) = normalised sum of neighbors' SPFH / d^2: blocks sum to 100 */
    PTREG_FPFH_OPEN3D   /* the same plus p's own SPFH: blocks sum to about 200 */
} ptreg_fpfh_convention;

#define PTREG_PFH_BINS 125
#define PTREG_FPFH_BINS 33

/* The descriptor kernels' knobs on a GPU (`ptreg tune --kernel fpfh
 * --device` picks them): speed only, the same bits. */
typedef struct ptreg_features_gpu {
    int wg;        /* threads of each point's work-group: 64, 128 or 256 (0: 64) */
    int search_wg; /* the neighbor searches' work-group: 32, 64, 128 or 256 (0: 256) */
} ptreg_features_gpu;

typedef struct ptreg_features_options {
    ptreg_neighborhood neighbors; /* default k = 30 */
    ptreg_fpfh_convention convention;
    int reference;       /* 1: the plain path (one search and one scalar pair at a
                    * time), for checking; the same bits, slower; CPU only */
    ptreg_device device; /* ptreg_features_resolve_device (auto: a GPU, else the CPU); on a GPU
                          * the histograms are the CPU's within float
                          * rounding of the sums and, rarely, a pair at a
                          * bin edge; lists of at most 1024 points */
    ptreg_features_gpu gpu;
} ptreg_features_options;

PTREG_API void ptreg_features_options_default(ptreg_features_options *opt);
/* The table of its options, ptreg_option_table_find("features") (options.h): k, radius, convention (FPFH's) and
 * the GPU's work-groups. */
/* Where ptreg_pfh and ptreg_fpfh run the options (ptreg_device_resolve): a
 * GPU unless `reference` or work-groups beyond the device's (then auto
 * means the CPU, and a GPU named is PTREG_ERR_UNSUPPORTED saying why). */
PTREG_API ptreg_status ptreg_features_resolve_device(const ptreg_features_options *opt, ptreg_device *on,
                                                     ptreg_error *err);

/* Descriptors of every point (n x 125 or n x 33 floats, row-major).
 * Neighborhoods as PCL and Open3D search them: k-NN counts the point
 * itself; a radius keeps distances strictly below it. A point alone in its
 * neighborhood gets an all-zero row (as from PCL and Open3D). A point
 * whose normal, or a neighbor's normal, is not finite gets a NaN row (for
 * FPFH also when a neighbor's SPFH is NaN), counted in *missing (may be
 * NULL). Memory beyond the output: the neighbor lists (8 bytes per
 * neighbor) and, for FPFH, n x 33 floats of SPFH. The same bits for any
 * thread count, any ISA and the reference path. */
PTREG_API ptreg_status ptreg_pfh(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt,
                                 float *out, size_t *missing, ptreg_error *err);
PTREG_API ptreg_status ptreg_fpfh(const float *xyz, const float *normals, size_t n, const ptreg_features_options *opt,
                                  float *out, size_t *missing, ptreg_error *err);

/* A cloud kept for repeated descriptors where the options' device
 * resolves to. On a GPU its points, normals and k-d tree go up once, and
 * the neighbor lists and SPFH rows of the last neighborhood stay there: a
 * second call with the same neighborhood launches only the descriptor
 * kernels and copies back only the rows asked for. On the CPU it reads the
 * caller's arrays, which must outlive it. Threads may share a model: on a
 * GPU their calls take turns on it (the results do not depend on the order). */
typedef struct ptreg_features_model ptreg_features_model;
PTREG_API ptreg_status ptreg_features_model_create(const float *xyz, const float *normals, size_t n,
                                                   const ptreg_features_options *opt, ptreg_features_model **out,
                                                   ptreg_error *err);
PTREG_API ptreg_status ptreg_features_model_fpfh(ptreg_features_model *m, const ptreg_features_options *opt,
                                                 const uint32_t *which, size_t count, float *out, size_t *missing,
                                                 ptreg_error *err);
PTREG_API void ptreg_features_model_destroy(ptreg_features_model *m);

#ifdef __cplusplus
}
#endif

#endif
