/* LDDMM landmark matching by geodesic shooting: template landmarks q0 and
 * initial momenta p0 flow by Hamilton's equations with a Gaussian kernel;
 * the momenta that carry q0 onto target landmarks are found by L-BFGS on
 * the exact discrete adjoint gradient. Formulas and conventions:
 * docs/ALGORITHMS.md, "LDDMM landmark shooting". Points are n x 3 doubles
 * (2-D landmarks: z = 0, which the flow keeps). */
#ifndef PTREG_LDDMM_H
#define PTREG_LDDMM_H

#include "core.h"
#include "options.h"
#include "results.h"
#include "device.h"
#include "pair.h"
#include "lddmm_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where L-BFGS starts when no initial momenta are given. */
typedef enum ptreg_lddmm_init {
    PTREG_LDDMM_INIT_SCALED = 0,   /* (target - q0) / sum_j K(q_i, q_j): the first velocity is about the
                                  * displacement even where landmarks are dense against sigma (default) */
    PTREG_LDDMM_INIT_DISPLACEMENT, /* target - q0 */
    PTREG_LDDMM_INIT_ZERO
} ptreg_lddmm_init;

typedef struct ptreg_lddmm_options {
    double sigma;    /* K(x, y) = exp(-|x - y|^2 / (2 sigma^2)); > 0 (default 1) */
    int time_points; /* T >= 2: T - 1 steps of 1 / (T - 1) over [0, 1] (default 20) */
    double lambda;   /* data term weight (default 1000) */
    double gamma;    /* energy term weight (default 1) */
    int max_iter;    /* L-BFGS iterations (default 400) */
    double gtol;     /* stop when |grad| < gtol * max(1, |p0|) (default 1e-6) */
    double ftol;     /* stop when the objective fell by less than ftol (relative) over 10
                        * iterations (default 1e-10) */
    ptreg_lddmm_integrator integrator;
    ptreg_precision precision; /* FP32 (default: float32 pairs, float64 sums) or FP64 */
    ptreg_lddmm_init init;     /* the start of ptreg_lddmm_register without p0_init */
    ptreg_device device;       /* auto (the first GPU, else the CPU), cpu, cuda:N or opencl:N: on a GPU
                                * the whole time loop and its adjoint run there (double precision
                                * needed); L-BFGS stays on the host */
    ptreg_progress progress;   /* after each L-BFGS iteration: the objective */
    ptreg_pair_gpu gpu;        /* there, the pair kernels' knobs (`ptreg tune --kernel lddmm --device`
                                * picks them); the column splits change the sums' last bits */
} ptreg_lddmm_options;

PTREG_API void ptreg_lddmm_options_default(ptreg_lddmm_options *opt);
/* The table of its options, ptreg_option_table_find("lddmm") (options.h): sigma, time_points, lambda, gamma, max_iter,
 * gtol, ftol, integrator, precision. */
/* Where the calls below run the options: their device (ptreg_device_resolve),
 * a GPU only where it has double precision and takes the options'
 * work-groups; else auto means the CPU, and a GPU named is
 * PTREG_ERR_UNSUPPORTED saying why. */
PTREG_API ptreg_status ptreg_lddmm_resolve_device(const ptreg_lddmm_options *opt, ptreg_device *on, ptreg_error *err);
/* Parameters of the macaque optic-nerve-head study: sigma 1.5, T 40, 400
 * iterations, lambda 500000, gamma 1. */
PTREG_API void ptreg_lddmm_options_mtl(ptreg_lddmm_options *opt);

/* Shoots (q0, p0) to t = 1: q1 and p1 (either may be NULL); trajectory, when
 * not NULL, receives q at every time point (T x n x 3). */
PTREG_API ptreg_status ptreg_lddmm_shoot(const double *q0, const double *p0, size_t n, const ptreg_lddmm_options *opt,
                                         double *q1, double *p1, double *trajectory, ptreg_error *err);


typedef struct ptreg_lddmm_result {
    size_t n;
    double *p0;         /* n x 3: the optimal initial momenta */
    double *q1;         /* n x 3: the template shot to t = 1 */
    double hamiltonian; /* H(q0, p0) */
    double objective;
    int iterations;                /* L-BFGS iterations */
    int evaluations;               /* objective + gradient evaluations */
    ptreg_stop_reason stop_reason; /* GRADIENT, OBJECTIVE_CHANGE, MAX_ITERATIONS (also when max_iter is 0)
                                      or NO_PROGRESS */
    const char *stop_detail;       /* liblbfgs's reason in words (static) */
    double avg_distance_before, max_distance_before; /* |q0 - target| */
    double avg_distance_after, max_distance_after;   /* |q1 - target| */
    double time_ms;
    double pair_terms; /* kernel pair terms evaluated (one per (i, j) per sum pass) */
} ptreg_lddmm_result;

/* Registers template onto target (n landmarks each, corresponding by
 * index), starting from p0_init (NULL: as opt->init says). */
PTREG_API ptreg_status ptreg_lddmm_register(const double *template_q, const double *target, size_t n,
                                            const double *p0_init, const ptreg_lddmm_options *opt,
                                            ptreg_lddmm_result *result, ptreg_error *err);
PTREG_API void ptreg_lddmm_result_free(ptreg_lddmm_result *result);

/* Carries m other points x along the flow of (q0, p0): dx/dt = sum_l K(x,
 * q_l(t)) p_l(t), with the same integrator and steps. out is m x 3 (may
 * alias x). */
PTREG_API ptreg_status ptreg_lddmm_warp(const double *q0, const double *p0, size_t n, const ptreg_lddmm_options *opt,
                                        const double *x, size_t m, double *out, ptreg_error *err);
/* The paths of m points x along the same flow: each point's position at
 * every one of the opt's time_points (>= 2), point major: paths is m x
 * time_points x 3, point i at time t at 3 (i time_points + t). Stepped as
 * time_points - 1 warps of one step each, so the paths end at
 * ptreg_lddmm_warp's points up to rounding (within 1e-5 on the tests'
 * flows). */
PTREG_API ptreg_status ptreg_lddmm_warp_paths(const double *q0, const double *p0, size_t n,
                                              const ptreg_lddmm_options *opt, const double *x, size_t m, double *paths,
                                              ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
