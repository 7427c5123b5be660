/* What LDDMM's CPU path (lddmm.c) and device path (lddmm_device.c) share:
 * the engine a call chooses once, and the device path's session (the
 * whole time loop of a shooting and of its adjoint on a GPU, the
 * trajectory kept there; only the momenta, the objective and the gradient
 * cross per evaluation). Private to the library and its tests. */
#ifndef PTREG_REG_LDDMM_IMPL_H
#define PTREG_REG_LDDMM_IMPL_H

#include "device/backend.h"
#include "device/engine.h"
#include "ptreg/lddmm.h"

/* An engine of LDDMM (the CPU's, lddmm.c; a GPU device's,
 * lddmm_device.c), chosen once per call: its session for n landmarks with
 * the options' flow from the template q0 (*run), and what the calls ask of
 * a session: an evaluation of the objective at p0 against a target (the
 * same target for the session; grad may be NULL), a shooting from (q0, p0),
 * the state at time point t of the last shooting (q, p: n x 3 each, either
 * may be NULL), m points x carried along the flow of (q0, p0) into out
 * (may alias x; m > 0), the pair terms evaluated so far, its end. The
 * checks, the starting momenta and L-BFGS stay with the caller (lddmm.c). */
typedef struct lddmm_engine {
    engine base; /* the backends and whether it runs the options (device/engine.h) */
    ptreg_status (*open)(const ptreg_device *on, const double *q0, size_t n, const ptreg_lddmm_options *opt, void **run,
                         ptreg_error *err);
    ptreg_status (*evaluate)(void *run, const double *target, const double *p0, double *f, double *grad,
                             double *hamiltonian, ptreg_error *err);
    ptreg_status (*shoot)(void *run, const double *p0, ptreg_error *err);
    ptreg_status (*state)(void *run, int t, double *q, double *p, ptreg_error *err);
    ptreg_status (*warp)(void *run, const double *p0, const double *x, size_t m, double *out, ptreg_error *err);
    double (*pair_terms)(const void *run);
    void (*close)(void *run);
} lddmm_engine;

/* The device engine: the states and sums in double on the device, so a
 * device without double precision does not run it. */
extern const lddmm_engine lddmm_device_engine;
#define LDDMM_NEEDS_FP64 "lddmm's states and sums need it"

/* The engine a call chose and the device it runs on, once per call: the
 * options checked for n landmarks, then the choice (device/engine.h).
 * lddmm_shoot_on and lddmm_warp_on are ptreg_lddmm_shoot and
 * ptreg_lddmm_warp on a choice made (NULL: they make their own), for a
 * call that opens several sessions (lddmm_paths.c's). */
typedef struct lddmm_choice {
    const lddmm_engine *engine;
    ptreg_device on;
} lddmm_choice;
ptreg_status lddmm_choice_make(const ptreg_lddmm_options *opt, size_t n, lddmm_choice *choice, ptreg_error *err);
ptreg_status lddmm_shoot_on(const lddmm_choice *choice, const double *q0, const double *p0, size_t n,
                            const ptreg_lddmm_options *opt, double *q1, double *p1, double *trajectory_q,
                            ptreg_error *err);
ptreg_status lddmm_warp_on(const lddmm_choice *choice, const double *q0, const double *p0, size_t n,
                           const ptreg_lddmm_options *opt, const double *x, size_t m, double *out, ptreg_error *err);

/* The program: pair/lddmm.cl's sums, reg/lddmm/lddmm.cl's updates. */
extern const kernel_program lddmm_kernels;
/* Its -D options for a device, precision (fp32 or fp64 pair terms) and
 * the pair kernels' knobs (NULL: the defaults). */
ptreg_status lddmm_device_defines(const dev_handle *dev, ptreg_precision precision, const ptreg_pair_gpu *gpu,
                                  char *defines, size_t size, ptreg_error *err);

typedef struct lddmm_device_run lddmm_device_run;

/* A session for n landmarks with the options' flow (sigma, time points,
 * integrator, precision) on a resolved GPU device, the template q0 (n x 3)
 * uploaded; splits > 0 forces the pair sums' column splits (the tests). */
ptreg_status lddmm_device_open(const ptreg_device *device, const double *q0, size_t n, const ptreg_lddmm_options *opt,
                               unsigned splits, lddmm_device_run **out, ptreg_error *err);
void lddmm_device_close(lddmm_device_run *d);
/* Pair terms evaluated so far (as the CPU path counts them). */
double lddmm_device_pair_terms(const lddmm_device_run *d);

/* Shoots (q0, p0); the state at time point t then reads back into q and p
 * (n x 3 each, either may be NULL). */
ptreg_status lddmm_device_shoot(lddmm_device_run *d, const double *p0, ptreg_error *err);
ptreg_status lddmm_device_state(lddmm_device_run *d, int t, double *q, double *p, ptreg_error *err);

/* The objective at p0 against target (uploaded on the first call; the
 * same target for the session), H, and (grad not NULL) the gradient. */
ptreg_status lddmm_device_evaluate(lddmm_device_run *d, const double *target, const double *p0, double *f, double *grad,
                                   double *hamiltonian, ptreg_error *err);

/* m points x carried along the flow of (q0, p0) into out (may alias x). */
ptreg_status lddmm_device_warp(lddmm_device_run *d, const double *p0, const double *x, size_t m, double *out,
                               ptreg_error *err);


/* Declared in the public headers before 1.x; the library's own (not exported). */
/* The objective f(p0) = gamma H(q0, p0) + lambda/2 sum |q_i(1) - target_i|^2
 * and, when grad is not NULL, its gradient with respect to p0 (the exact
 * discrete adjoint of the integrator). H is returned in *hamiltonian (may
 * be NULL). */
ptreg_status ptreg_lddmm_objective(const double *q0, const double *target, size_t n, const double *p0,
                                   const ptreg_lddmm_options *opt, double *f, double *grad, double *hamiltonian,
                                   ptreg_error *err);

#endif
