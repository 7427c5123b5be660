/* ptreg EM-ICP: multi-scale soft-assignment registration (Granger & Pennec,
 * ECCV 2002), as the GPU EM-ICP study of Tamaki et al. (2010) runs it:
 * one E-step and one weighted Horn solution per sigma, sigma^2 annealed
 * geometrically. The E-step is the pair engine's Gaussian sums (pair.h):
 * no n x m matrix is ever stored. */
#ifndef PTREG_EMICP_H
#define PTREG_EMICP_H

#include "core.h"
#include "device.h"
#include "icp.h"
#include "pair.h"
#include "results.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The scale-free defaults, relative to r^2, r the target's RMS radius about
 * its centroid: the Tamaki preset's values for the study's bunny (r = 0.056). */
#define PTREG_EMICP_SIGMA2_INIT_REL 3.0
#define PTREG_EMICP_SIGMA2_FINAL_REL 3e-3

typedef struct ptreg_emicp_options {
    double sigma2_init;      /* first sigma^2; <= 0: PTREG_EMICP_SIGMA2_INIT_REL r^2 (default) */
    double sigma2_final;     /* stop once sigma^2 <= this; <= 0: PTREG_EMICP_SIGMA2_FINAL_REL r^2 */
    double sigma_factor;     /* sigma^2 <- sigma^2 * factor each iteration, in (0, 1) (default 0.9) */
    double d02;              /* outlier distance^2 d0^2 >= 0; < 0: equal to the first sigma^2 (default) */
    int max_iter;            /* most iterations (default 1000) */
    double tol;              /* stop when rotation change (rad) + |translation change| / r < tol;
                            0: never (default 1e-7). Stopping early ends the annealing early. */
    double init[16];         /* initial transform of the source (identity) */
    ptreg_pair_options pair; /* the engine's tiling and precision (fp32 by default); on a GPU
                                device only the precision applies */
    ptreg_device device;     /* auto (the first GPU, else the CPU), cpu, cuda:N or opencl:N */
    ptreg_progress progress; /* after each iteration: the pose change (what tol is compared with) */
} ptreg_emicp_options;

/* Scale-free defaults. */
PTREG_API void ptreg_emicp_options_default(ptreg_emicp_options *opt);
/* The study's absolute values: sigma^2 0.01 -> 1e-5, factor 0.9, d0^2 0.01. */
PTREG_API void ptreg_emicp_options_tamaki(ptreg_emicp_options *opt);
/* The table of its options, ptreg_option_table_find("emicp") (options.h): the schedule (sigma2_init, sigma2_final,
 * sigma_factor, d02, max_iter, tol) and the pair engine's (precision, col_tile, ...). */
/* Where ptreg_emicp runs the options: their device (ptreg_device_resolve);
 * on a GPU the E-steps, Horn's solution on the host from the moments (one
 * small copy per iteration). A GPU that cannot run them (fp64 sums without
 * double precision, work-groups beyond its own): auto means the CPU, a GPU
 * named is PTREG_ERR_UNSUPPORTED saying why. */
PTREG_API ptreg_status ptreg_emicp_resolve_device(const ptreg_emicp_options *opt, ptreg_device *on, ptreg_error *err);

typedef struct ptreg_emicp_result {
    double transformation[16]; /* takes the source onto the target */
    /* Nearest-neighbor evaluation of the result (k-d tree, not in time_ms):
     * source points whose nearest target point is within 3 sigma_final. */
    double rmse, fitness;
    size_t pairs;
    int iterations; /* E-steps (and transform updates) made */
    int converged;  /* stopped by tol */
    ptreg_stop_reason stop_reason;
    double sigma2_init, sigma2_final, d02; /* as used; sigma2_final: of the last E-step */
    double radius;                         /* r, the scale of the defaults and of tol */
    double time_ms;                        /* clouds in memory to result */
    double pair_ms;                        /* the part spent in the pair engine */
    double pair_terms;                     /* n * m * iterations */
    double gpts;                           /* pair_terms / time / 1e9 */
    ptreg_precision precision;
    ptreg_device device; /* where the E-steps ran */
    const char *isa;     /* the engine's instruction set, or the device's name */
} ptreg_emicp_result;

/* Registers source (n points) onto target (m points). */
PTREG_API ptreg_status ptreg_emicp(const float *source, size_t n, const float *target, size_t m,
                                   const ptreg_emicp_options *opt, ptreg_emicp_result *result, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
