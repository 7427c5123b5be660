/* Global registration without an initial guess: feature correspondences
 * (FPFH, mutual nearest in feature space), RANSAC over them with Open3D's
 * correspondence checkers, and the whole pipeline (downsampling, normals,
 * features, RANSAC, local refinement) as ptreg_register. docs/ALGORITHMS.md,
 * "Global registration". */
#ifndef PTREG_GLOBAL_H
#define PTREG_GLOBAL_H

#include <stdint.h>

#include "core.h"
#include "icp.h"
#include "options.h"
#include "results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Correspondences: source point source[i] matched to target point target[i]. */
typedef struct ptreg_matches {
    size_t count;
    uint32_t *source, *target;
} ptreg_matches;

PTREG_API void ptreg_matches_free(ptreg_matches *m);

/* Each source descriptor's nearest target descriptor (Euclidean, dim floats
 * per row; ties to the lower index), and with mutual only the pairs each
 * of which is the other's nearest (Open3D's mutual filter, both ways).
 * Rows with a NaN (a point without a descriptor) match nothing. Exact: a
 * brute-force scan, rows split over threads; the same pairs for any thread
 * count. */
PTREG_API ptreg_status ptreg_match_features(const float *source, size_t ns, const float *target, size_t nt, int dim,
                                            int mutual, ptreg_matches *out, ptreg_error *err);

typedef struct ptreg_ransac_options {
    double max_dist;       /* a correspondence is an inlier within this distance after the transform
                               (Open3D's max_correspondence_distance); > 0 */
    double edge_length;    /* Open3D's edge-length checker: the sample's edges agree to this ratio (0.9;
                               0: off) */
    double check_distance; /* Open3D's distance checker: every sampled pair within this (default:
                               max_dist; < 0: off) */
    double normal_angle;   /* Open3D's normal checker, radians (0: off; needs both clouds' normals) */
    int max_iter;          /* hypotheses at most (default 100000) */
    double confidence;     /* stop once this sure to have drawn an all-inlier sample (default 0.999) */
    uint64_t seed;         /* of the samples (default 1): the same result for every run */
    ptreg_device device;   /* where the hypotheses are scored (default auto): a GPU with double precision
                               counts each batch's inliers, the samples drawn, checked and fitted on the host;
                               the CPU's counts, so the same winner and transform */
} ptreg_ransac_options;

PTREG_API void ptreg_ransac_options_default(ptreg_ransac_options *opt);
/* The table of its numbers, ptreg_option_table_find("ransac") (options.h;
 * max_dist 0 is "not set": ptreg_ransac needs one). */
/* Where ptreg_ransac scores the options' hypotheses (ptreg_device_resolve;
 * auto takes the CPU where the GPU's engine cannot). */
PTREG_API ptreg_status ptreg_ransac_resolve_device(const ptreg_ransac_options *opt, ptreg_device *on, ptreg_error *err);

typedef struct ptreg_ransac_result {
    double transformation[16]; /* takes the source onto the target */
    size_t inliers;            /* correspondences within max_dist under it */
    int hypotheses;            /* samples drawn */
    int checked;               /* of them, passed the checkers and were scored */
    double time_ms;
} ptreg_ransac_result;

/* RANSAC over the correspondences: three distinct ones drawn at a time,
 * Horn's transform of them, Open3D's checkers, then scored by how many
 * correspondences it brings within max_dist; the most (ties: the first
 * drawn) wins, refit by Horn on its inliers. Stops after max_iter
 * hypotheses or once confidence says enough were drawn for the best
 * inlier ratio (Open3D's rule). Normals (n x 3, may be NULL) only for the
 * normal checker. Fewer than 3 correspondences is PTREG_ERR_ARG. */
PTREG_API ptreg_status ptreg_ransac(const float *source, const float *source_normals, size_t ns, const float *target,
                                    const float *target_normals, size_t nt, const ptreg_matches *matches,
                                    const ptreg_ransac_options *opt, ptreg_ransac_result *result, ptreg_error *err);

/* Fast Global Registration (Q.-Y. Zhou, J. Park, V. Koltun, ECCV 2016), as
 * Open3D's: the matches' tuple test (three drawn at a time, every edge
 * agreeing to tuple_scale both ways; kept triples' matches used, up to
 * max_tuples triples from 100 draws per match), both clouds centred and
 * scaled into the unit ball, then Gauss-Newton steps of the Geman-McClure
 * cost with a line process, mu from 1 divided by division_factor every 4
 * iterations while above max_dist (graduated non-convexity). */
typedef struct ptreg_fgr_options {
    double division_factor; /* 1.4 */
    double max_dist;        /* mu's floor, in the unit ball's units (0.025) */
    int iterations;         /* 64 */
    double tuple_scale;     /* 0.95 */
    int max_tuples;         /* 1000 */
    uint64_t seed;          /* the tuple test's draws (1) */
} ptreg_fgr_options;

/* The table of its numbers, ptreg_option_table_find("fgr") (options.h). */

typedef struct ptreg_fgr_result {
    double transformation[16]; /* takes the source onto the target */
    size_t tuples;             /* triples that passed the tuple test */
    double time_ms;
} ptreg_fgr_result;


/* ---- the whole pipeline ---- */

typedef enum ptreg_global_method { PTREG_GLOBAL_RANSAC = 0, PTREG_GLOBAL_FGR } ptreg_global_method;

typedef struct ptreg_register_options {
    double voxel;                /* downsampling cube (default 0: the target's bounding-box diagonal / 80) */
    int mutual;                  /* feature matches both ways (default 1) */
    double ratio;                /* Lowe's ratio test: a match kept only when its descriptor distance is below
                                    ratio times the second nearest's (default 0: off) */
    ptreg_global_method global;  /* RANSAC (default) or FGR */
    ptreg_ransac_options ransac; /* max_dist 0: 1.5 voxels (Open3D's tutorial) */
    ptreg_fgr_options fgr;
    ptreg_icp_method refine; /* local refinement on all points: PLANE (default), GICP, ... */
    int no_refine;           /* stop after RANSAC */
    double refine_dist;      /* its max_dist (default 0: 0.4 voxels, Open3D's tutorial) */
    int refine_iter;         /* its iterations (default 30) */
    ptreg_device device;     /* where the feature matches, RANSAC's scoring and the refinement run
                                (default auto; the CPU's answers); the downsampling, normals, FPFH and
                                FGR run on the CPU for now */
} ptreg_register_options;

PTREG_API void ptreg_register_options_default(ptreg_register_options *opt);
/* The table of its options, ptreg_option_table_find("register") (options.h): voxel, method (--global), refine
 * (--method), refine_dist, refine_iter and RANSAC's and FGR's numbers. */

typedef struct ptreg_register_result {
    double transformation[16];
    double voxel;                    /* the one used */
    size_t source_down, target_down; /* points after downsampling */
    size_t matches;                  /* feature correspondences */
    ptreg_ransac_result ransac;      /* with RANSAC */
    ptreg_fgr_result fgr;            /* with FGR */
    double fitness, rmse;            /* of the final transform on all points, within the refinement's distance */
    ptreg_device device;             /* where the matches were found (and RANSAC's hypotheses scored) */
    /* stage times, ms */
    double downsample_ms, normals_ms, features_ms, match_ms, global_ms, refine_ms, total_ms;
} ptreg_register_result;

/* Registers source onto target without an initial guess: voxel-grid
 * centroids, normals from their hybrid (2 voxels, 30) neighborhoods,
 * FPFH from hybrid (5 voxels, 100) ones (Open3D's convention), matches,
 * RANSAC, then ICP by opt->refine on all points from RANSAC's transform.
 * Normals of the full clouds for the refinement: given (may be NULL: then
 * estimated from 10 neighbors). On the CPU; the same result for any
 * thread count. */
PTREG_API ptreg_status ptreg_register(const float *source, const float *source_normals, size_t ns, const float *target,
                                      const float *target_normals, size_t nt, const ptreg_register_options *opt,
                                      ptreg_register_result *result, ptreg_error *err);

/* The pipeline's view of one cloud, made once and used for every pair it
 * is part of (multiway registration, a tracker's model): the voxel-grid
 * centroids with their normals (as ptreg_register makes them) and their
 * FPFH (down.n x PTREG_FPFH_BINS). */
typedef struct ptreg_register_cloud {
    ptreg_cloud down;
    float *fpfh;
    double voxel;
    double downsample_ms, normals_ms, features_ms;
} ptreg_register_cloud;

/* voxel > 0. normals (n x 3, may be NULL) turn the estimated ones. */
PTREG_API ptreg_status ptreg_register_cloud_prepare(const float *xyz, const float *normals, size_t n, double voxel,
                                                    ptreg_register_cloud *out, ptreg_error *err);
PTREG_API void ptreg_register_cloud_free(ptreg_register_cloud *c);

/* ptreg_register from prepared clouds (made with opt->voxel, or with the
 * voxel the option would choose): matches, global registration and the
 * refinement on all points; the same result as ptreg_register. */
PTREG_API ptreg_status ptreg_register_prepared(const float *source, const float *source_normals, size_t ns,
                                               const ptreg_register_cloud *sp, const float *target,
                                               const float *target_normals, size_t nt, const ptreg_register_cloud *tp,
                                               const ptreg_register_options *opt, ptreg_register_result *result,
                                               ptreg_error *err);

/* ---- a given pose, given correspondences ---- */

/* Open3D's evaluate_registration: each source point moved by T (in double)
 * is paired with its nearest target point when that lies at distance <
 * max_dist (> 0; infinity: every point). */
typedef struct ptreg_evaluation {
    size_t inliers;     /* source points paired */
    double fitness;     /* inliers / source points (0 without source points) */
    double inlier_rmse; /* sqrt of the mean squared distance of the pairs (0 without pairs) */
} ptreg_evaluation;

/* Distances in double from the float points (the nearest by the k-d
 * tree's float distance, nn.h), summed in source order: the same result
 * for any thread count. correspondences (may be NULL) receives the pairs in
 * source order (ptreg_matches_free; Open3D's order is its threads').
 * T must be finite, max_dist > 0 and target non-empty, else PTREG_ERR_ARG. */
PTREG_API ptreg_status ptreg_evaluate_registration(const float *source, size_t ns, const float *target, size_t nt,
                                                   const double T[16], double max_dist, ptreg_evaluation *result,
                                                   ptreg_matches *correspondences, ptreg_error *err);

/* The rigid transform of given correspondences (source[m.source[k]] onto
 * target[m.target[k]]): Horn's closed form minimising sum w_k |R p + t -
 * q|^2 (Umeyama's without scale; weights NULL: all 1, else finite and >= 0
 * with a positive sum). With ransac (may be NULL: every pair) RANSAC over
 * them first (ptreg_ransac with those options: its checkers as set;
 * Open3D's registration_ransac_based_on_correspondence without checkers is
 * edge_length 0 and check_distance < 0), then the weighted fit on its
 * inliers. result: the transform; inliers, hypotheses and checked are
 * RANSAC's (without it: every pair, 0, 0). Fewer than 3 pairs, or an index
 * out of range, is PTREG_ERR_ARG; pairs that do not fix a rotation
 * (collinear points) are PTREG_ERR_RUNTIME. */
PTREG_API ptreg_status ptreg_register_correspondences(const float *source, size_t ns, const float *target, size_t nt,
                                                      const ptreg_matches *matches, const double *weights,
                                                      const ptreg_ransac_options *ransac, ptreg_ransac_result *result,
                                                      ptreg_error *err);
/* How well T fits given correspondences: the RMS distance from each
 * source[m.source[k]] moved by T (in double) to its target[m.target[k]],
 * over the pairs within `within` of theirs (> 0; 0: every pair), and in
 * *used their count (0 gives 0). Indices must be in range (as
 * ptreg_register_correspondences checked them). */
PTREG_API double ptreg_correspondences_rmse(const float *source, const float *target, const ptreg_matches *m,
                                            const double T[16], double within, size_t *used);

#ifdef __cplusplus
}
#endif

#endif
