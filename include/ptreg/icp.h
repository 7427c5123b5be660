/* ptreg rigid ICP: Besl & McKay point-to-point with Horn's quaternion
 * solution, or point-to-plane by Gauss-Newton, with robust kernels (IRLS),
 * exact nearest neighbors, the sigma filter of the aerial refuelling study
 * and trimming. */
#ifndef PTREG_ICP_H
#define PTREG_ICP_H

#include "core.h"
#include "device.h"
#include "nn.h"
#include "options.h"
#include "results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What each pair's residual is. */
typedef enum ptreg_icp_method {
    PTREG_ICP_POINT = 0, /* T p - q (Besl & McKay); without a robust kernel Horn's closed form
                          * solves each step, with one Gauss-Newton as for the others */
    PTREG_ICP_PLANE,     /* (T p - q) . n_q (Chen & Medioni), linearised: a 6 x 6 Gauss-Newton
                          * step in double per iteration; needs the target's normals */
    PTREG_ICP_GICP,      /* (T p - q)^T (C_q + R C_p R^T)^-1 (T p - q) (Segal, Haehnel, Thrun):
                          * each point's covariance plane-regularised from its normal,
                          * C = I - (1 - eps) n n^T; needs both clouds' normals */
    PTREG_ICP_SYMMETRIC  /* (T p - q) . (R n_p + n_q) (Rusinkiewicz's symmetric objective), each
                          * step rotating half before and half after its translation; needs both
                          * clouds' normals */
} ptreg_icp_method;

PTREG_API const char *ptreg_icp_method_name(ptreg_icp_method method);
/* "point", "plane", "gicp" or "symmetric"; -1 for another name. */
PTREG_API int ptreg_icp_method_parse(const char *name, ptreg_icp_method *method);

/* Robust kernels by iteratively reweighted least squares: each pair's
 * weight in an iteration is w(r) of its residual r (the distance for
 * POINT, the signed distance along the normal for PLANE and SYMMETRIC, the
 * Mahalanobis distance for GICP) and the scale k, as Open3D's
 * RobustKernel.Weight: Huber k / max(|r|, k); Cauchy 1 / (1 + (r/k)^2);
 * Tukey (1 - (r/k)^2)^2 within k, else 0; Geman-McClure k / (k + r^2)^2. */
typedef enum ptreg_robust_kernel {
    PTREG_KERNEL_NONE = 0,
    PTREG_KERNEL_HUBER,
    PTREG_KERNEL_CAUCHY,
    PTREG_KERNEL_TUKEY,
    PTREG_KERNEL_GM
} ptreg_robust_kernel;

/* "none", "huber", "cauchy", "tukey" or "gm". */
PTREG_API const char *ptreg_robust_kernel_name(ptreg_robust_kernel kernel);

typedef struct ptreg_icp_options {
    int max_iter;        /* transform updates, default 200 (the stop is usually tol's) */
    double tol;          /* stop when MSE changes by less (Besl); 0: never; < 0: auto
                             = 1e-10 * (target bounding-box diagonal)^2 (default) */
    double max_dist;     /* pairs farther apart are not used; <= 0: no limit */
    double filter_sigma; /* leave out pairs with error > mean + s * std; <= 0: off */
    int filter_start;    /* first iteration (0-based) the sigma filter applies */
    double trim;         /* keep this fraction of the closest pairs, (0, 1]; 1: off */
    double init[16];     /* initial transform of the source (identity) */
    ptreg_nn_method nn;
    int no_tune;         /* auto ignores an index's measured method: the rule decides */
    ptreg_device device; /* every method, kernel, filter and optimiser runs on a GPU too */
    ptreg_icp_method method;
    ptreg_robust_kernel kernel;
    double kernel_scale; /* the kernel's k, > 0 (in the clouds' units); default 0: not set, required with a kernel */
    const float *target_normals;   /* PLANE, GICP, SYMMETRIC: the target's normals (m x 3, either sign; a pair whose
                                    normal is not finite counts in fitness and rmse but not in the step);
                                    NULL: estimated from normal_k neighbors */
    const float *source_normals;   /* GICP, SYMMETRIC: the source's normals (n x 3), the same way */
    int normal_k;                  /* default 10 (PCL's point-to-plane test) */
    double normal_radius;          /* > 0: only those of the normal_k within it (Open3D's hybrid search; default 0) */
    double gicp_epsilon;           /* GICP: a covariance's variance along its normal, the others 1 (default 1e-3,
                             Segal's and Open3D's) */
    double relative_fitness;       /* Open3D's stop: fitness and RMSE each changed by less than these between */
    double relative_rmse;          /* two passes (both > 0 to apply; default 0: off) */
    double transformation_epsilon; /* PCL's stop: the last step's squared translation <= eps and its
                                      rotation's cosine >= 1 - eps (default 0: off) */
    ptreg_progress progress;       /* after each correspondence pass: its MSE */
    int scale;                     /* point, Horn's steps only: fit a uniform scale too (similarity ICP,
                                    * Umeyama's closed form); CPU only (default 0) */
    double lm_lambda;              /* > 0: Levenberg-Marquardt steps from this damping (small_gicp's default is 1e-3;
                         a step that raises the mean cost is taken back and retried with 10x the damping,
                         an accepted one lowers it 10x); 0 (default): Gauss-Newton, as Open3D */
} ptreg_icp_options;

PTREG_API void ptreg_icp_options_default(ptreg_icp_options *opt);
/* The table of its options, ptreg_option_table_find("icp") (options.h): the
 * iterations' and filters' numbers, nn, method, kernel,
 * the normals' and GICP's parameters, the peers' stopping rules, lm. */
/* Whether the options take Gauss-Newton steps (every method and kernel
 * but POINT without a kernel or damping, which Horn's closed form
 * solves). */
PTREG_API int ptreg_icp_uses_gauss_newton(const ptreg_icp_options *opt);
/* Which clouds' normals the method reads (ptreg_icp_options'
 * target_normals and source_normals): PTREG_ICP_NORMALS_TARGET for PLANE,
 * GICP and SYMMETRIC, with PTREG_ICP_NORMALS_SOURCE for GICP and
 * SYMMETRIC; 0 for POINT. A front end hands a file's own normals to the
 * method through it. */
enum { PTREG_ICP_NORMALS_TARGET = 1, PTREG_ICP_NORMALS_SOURCE = 2 };
PTREG_API unsigned ptreg_icp_method_normals(ptreg_icp_method method);
/* Where ptreg_icp runs the options: their device (ptreg_device_resolve). */
PTREG_API ptreg_status ptreg_icp_resolve_device(const ptreg_icp_options *opt, ptreg_device *on, ptreg_error *err);

typedef struct ptreg_icp_result {
    double transformation[16]; /* takes the source onto the target */
    double rmse;               /* of the pairs' distances, at the final transform (every method, as
                                  Open3D's inlier_rmse) */
    double fitness;            /* pairs used / source points, at the final transform */
    size_t pairs;              /* pairs used at the final transform */
    int iterations;            /* transform updates made */
    int converged;             /* stopped by tol */
    ptreg_stop_reason stop_reason;
    double *mse;            /* MSE (rmse squared) before each update and at the end: iterations + 1 */
    double time_ms;         /* clouds in memory to result, search build included
                                  (not an index's, for ptreg_icp_indexed) */
    double build_ms;        /* search-structure build, part of time_ms */
    ptreg_nn_method nn;     /* the method that ran */
    char nn_note[256];      /* why it is not the one asked for ("" when it is) */
    int nn_measured;        /* auto ran the index's measured choice (not the rule) */
    ptreg_walk_stats *walk; /* Delaunay methods: per correspondence pass
                                  (iterations + 1), else NULL */
    ptreg_device device;    /* where it ran */
    double upload_ms;       /* a one-off GPU run: the model's upload, part of time_ms */
} ptreg_icp_result;

PTREG_API void ptreg_icp_result_free(ptreg_icp_result *result);

/* Registers source (n points) onto the model of a prebuilt index: the
 * index's build is not part of time_ms. */
PTREG_API ptreg_status ptreg_icp_indexed(const float *source, size_t n, const ptreg_model_index *target,
                                         const ptreg_icp_options *opt, ptreg_icp_result *result, ptreg_error *err);

/* Registers source (n points) onto target (m points). On a GPU (opt->device,
 * resolved by ptreg_device_resolve: auto is a GPU when there is one) the
 * target's structures are built and uploaded first, inside time_ms; the
 * result is within 1e-5 of the CPU's (the pairs are the same; the sums are
 * taken in another fixed order) and the same bits on every run of a device. */
PTREG_API ptreg_status ptreg_icp(const float *source, size_t n, const float *target, size_t m,
                                 const ptreg_icp_options *opt, ptreg_icp_result *result, ptreg_error *err);

/* ---- measuring the nearest-neighbor methods on a model ---- */

/* How ptreg_model_index_tune measures. Every method is timed as what it is
 * used for: a whole ICP run (tol 0: every iteration runs) of the queries
 * onto the model, on the CPU, so the seeded walks see the short moves of
 * consecutive passes they are made for. */
typedef struct ptreg_nn_tune_options {
    size_t sample;    /* model points the default queries are made of (default 40000; all when fewer) */
    double noise;     /* their Gaussian noise, std dev / bounding-box diagonal (default 0.002) */
    double angle_deg; /* then moved by this rotation about a random axis (default 5) */
    double shift;     /* and a translation of this fraction of the diagonal (default 0.01) */
    uint64_t seed;    /* of the sample, noise and motion (default 1) */
    int iterations;   /* ICP updates per run (default 30) */
    int warmup;       /* untimed runs per method first, at least 1 (default 1) */
    int repeat;       /* timed runs per method, interleaved; the median is kept (default 5) */
    double prune;     /* a method whose warm-up run took over prune x the fastest's is not
                          repeated: it cannot win (default 3; <= 0: repeat every method) */
    double brute_max; /* brute force is measured when model points x queries <= this (default 5e7) */
} ptreg_nn_tune_options;

PTREG_API void ptreg_nn_tune_options_default(ptreg_nn_tune_options *opt);

typedef struct ptreg_nn_tune_report {
    ptreg_nn_method choice;                 /* the fastest that gave the k-d tree's bits */
    double median_ms[PTREG_INDEX_NN_SLOTS]; /* per method: the median of its timed runs, or its
                                                warm-up time when pruned; < 0: not measured */
    int runs[PTREG_INDEX_NN_SLOTS];         /* timed runs; 0 with a time: pruned after warm-up */
    int differs[PTREG_INDEX_NN_SLOTS];      /* its ICP result was not the k-d tree's bits (a bug:
                                                it may not win) */
    size_t queries;
    int threads, iterations;
    double total_ms; /* the whole measurement */
} ptreg_nn_tune_report;

/* Times each nearest-neighbor method the index can run (the k-d tree;
 * brute force when small; each Delaunay start when it has a graph) by ICP
 * runs of queries (nq points; NULL: a noisy, moved sample of the model,
 * deterministic by opt->seed) onto the model, and stores the fastest in the
 * index (saved with it), so that ICP's auto runs it. Each method's result
 * must have the k-d tree's bits to win. On the CPU, with the current
 * thread count. */
PTREG_API ptreg_status ptreg_model_index_tune(ptreg_model_index *index, const float *queries, size_t nq,
                                              const ptreg_nn_tune_options *opt, ptreg_nn_tune_report *report,
                                              ptreg_error *err);

#define PTREG_LEAF_CANDIDATES 5
/* The k-d tree's leaf size for a model (exact either way: speed only): a
 * tree-only index of each of 16, 32, 64, 128 and 256 points per leaf,
 * timed as ptreg_model_index_tune times the k-d tree (the same queries for
 * all); the fastest goes into *leaf unless it beats the default (256) by
 * less than 2%, which is noise on a shared machine. sizes[] and median_ms[]
 * receive the candidates and their times (may be NULL). */
PTREG_API ptreg_status ptreg_model_index_tune_leaf(const float *xyz, size_t n, const ptreg_nn_tune_options *opt,
                                                   int *leaf, int sizes[PTREG_LEAF_CANDIDATES],
                                                   double median_ms[PTREG_LEAF_CANDIDATES], ptreg_error *err);

/* ---- a model resident where its registrations run ---- */

/* The real-time case: one model, a new sensed cloud every frame. On a GPU
 * the index's points, k-d tree and Delaunay graph (when it has one) are
 * uploaded once, with the kernels compiled then (and cached on disk for
 * CUDA); every registration after uploads only its source. On the CPU the
 * model is the index. The index must outlive the model. Threads may share
 * a model: on a GPU their registrations take turns on its workspace. */
typedef struct ptreg_icp_model ptreg_icp_model;

/* device is resolved as by ptreg_device_resolve (NULL: auto). */
PTREG_API ptreg_status ptreg_icp_model_create(const ptreg_model_index *index, const ptreg_device *device,
                                              ptreg_icp_model **model, ptreg_error *err);
PTREG_API void ptreg_icp_model_destroy(ptreg_icp_model *model);

typedef struct ptreg_icp_model_info {
    ptreg_device device; /* where the model lives */
    double compile_ms;   /* building the device's kernels (first use in the process) */
    double upload_ms;    /* copying the model to the device */
    size_t device_bytes; /* device memory the model holds, its registrations' buffers included */
} ptreg_icp_model_info;

PTREG_API void ptreg_icp_model_get_info(const ptreg_icp_model *model, ptreg_icp_model_info *info);

/* The target's normals (m x 3, the index's points' order) for the model's
 * PLANE, GICP and SYMMETRIC registrations whose opt->target_normals is NULL
 * or this same pointer: on a GPU uploaded here, once, not with every
 * registration. They must outlive the model and not change. */
PTREG_API ptreg_status ptreg_icp_model_set_normals(ptreg_icp_model *model, const float *normals, ptreg_error *err);

/* Registers source onto the model, on the model's device (opt->device is
 * not used). time_ms counts from the source in host memory, its upload
 * included, to the result. */
PTREG_API ptreg_status ptreg_icp_model_run(ptreg_icp_model *model, const float *source, size_t n,
                                           const ptreg_icp_options *opt, ptreg_icp_result *result, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
