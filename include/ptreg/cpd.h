/* ptreg Coherent Point Drift (Myronenko & Song, IEEE TPAMI 32(12), 2010):
 * the source's points are the centroids of a Gaussian mixture, with a
 * uniform term for outliers, fitted to the target by EM; the centroids move
 * rigidly, by a similarity, by an affine map, or by a smooth displacement
 * field (deformable). Every sum over (source, target) pairs is the pair
 * engine's Gauss transform (O(n + m) memory, never the n x m posterior),
 * and the deformable M-step solves its linear system by conjugate
 * gradients whose products with the Gaussian kernel matrix are Gauss
 * transforms too. Formulas: docs/ALGORITHMS.md, "Coherent Point Drift". */
#ifndef PTREG_CPD_H
#define PTREG_CPD_H

#include "core.h"
#include "device.h"
#include "options.h"
#include "pair.h"
#include "results.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PTREG_CPD_MAX_LOW_RANK 512

typedef enum ptreg_cpd_transform {
    PTREG_CPD_RIGID = 0,  /* rotation and translation */
    PTREG_CPD_SIMILARITY, /* and a uniform scale */
    PTREG_CPD_AFFINE,     /* any 3 x 3 matrix and a translation */
    PTREG_CPD_DEFORMABLE  /* y + v(y), v = G(., Y) W a Gaussian radial basis field */
} ptreg_cpd_transform;

typedef struct ptreg_cpd_options {
    ptreg_cpd_transform transform; /* default rigid */
    double w;                      /* the outliers' share of the mixture, in [0, 1) (default 0) */
    double beta;                   /* deformable: the field's Gaussian width, > 0 (default 2) */
    double lambda;                 /* deformable: the field's smoothness weight, > 0 (default 2) */
    int max_iter;                  /* most EM iterations (default 100) */
    double tol;                    /* stop when the objective changes by less than tol (relative);
                                    * 0: every iteration runs (default 1e-5) */
    double sigma2;                 /* the first sigma^2; <= 0: from the data, sum |x - y|^2 / (3 M N)
                                    * (default) */
    int low_rank;                  /* deformable: K > 0 replaces G by its top K eigenpairs (the paper's
                                    * fast variant, found by Lanczos; at most 512); 0: G itself (default) */
    int precondition_rank;         /* deformable, G itself: the conjugate gradients' preconditioner is the
                                    * system with G's top K eigenpairs; 0: G's diagonal (default 50) */
    int cg_iter;                   /* deformable: conjugate-gradient steps per M-step (default 500) */
    double cg_tol;                 /* deformable: relative residual they stop at; 0: 1e-10 in fp64, 1e-6
                                    * in fp32 (default) */
    ptreg_precision precision;     /* fp32 (default: float32 pairs, float64 sums) or fp64 (the reference) */
    ptreg_device device;           /* auto or cpu (no device path yet: a GPU named is refused) */
    ptreg_progress progress;       /* after each iteration: the objective */
} ptreg_cpd_options;

PTREG_API void ptreg_cpd_options_default(ptreg_cpd_options *opt);
/* Its table, ptreg_option_table_find("cpd") (options.h): transform, w,
 * beta, lambda, max_iter, tol, sigma2, cg_iter, cg_tol, precision. */

typedef struct ptreg_cpd_result {
    ptreg_cpd_transform transform;
    double transformation[16]; /* rigid, similarity, affine: x = T y, row-major (similarity: s R in the
                                * 3 x 3); deformable: the identity */
    double scale;              /* similarity's s; 1 otherwise */
    size_t m;                  /* source points */
    float *moved;              /* the source moved onto the target, m x 3 (the caller's frame) */
    /* deformable: the field v(x) = sum_j exp(-|x - c_j|^2 / (2 beta^2)) w_j (ptreg_cpd_warp) */
    double *centres;      /* c_j: the source points, m x 3 */
    double *coefficients; /* w_j, m x 3 */
    double beta;
    double sigma2_init, sigma2; /* the first and the last sigma^2 */
    double objective;           /* the negative log-likelihood's bound at the end (up to a constant) */
    double np;                  /* the posterior's sum: source points matched, in expectation */
    int iterations;             /* EM iterations made */
    int converged;              /* stopped by tol */
    ptreg_stop_reason stop_reason;
    int cg_iterations; /* deformable: conjugate-gradient steps over all M-steps */
    double time_ms;    /* clouds in memory to result */
    double pair_ms;    /* the part spent in Gauss transforms */
    double pair_terms; /* (source x target) or (source x source) pairs evaluated */
    double gpts;       /* pair_terms / time / 1e9 */
    double culled;     /* the share of pair tiles skipped as all below float32's range */
    ptreg_precision precision;
    ptreg_device device; /* where it ran */
    const char *isa;     /* the engine's instruction set */
} ptreg_cpd_result;

/* Registers source (m points, the mixture's centroids) onto target (n
 * points). The result owns its arrays: ptreg_cpd_result_free. */
PTREG_API ptreg_status ptreg_cpd(const float *source, size_t m, const float *target, size_t n,
                                 const ptreg_cpd_options *opt, ptreg_cpd_result *result, ptreg_error *err);
PTREG_API void ptreg_cpd_result_free(ptreg_cpd_result *result);
/* Moves k other points as the result moves the source: through its
 * transformation, or (deformable) by x + v(x). out may alias points. */
PTREG_API ptreg_status ptreg_cpd_warp(const ptreg_cpd_result *result, const float *points, size_t k, float *out,
                                      ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
