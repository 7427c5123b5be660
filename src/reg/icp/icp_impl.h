/* What ICP's engines (icp_cpu.c, icp_device.c) share: the checks, the
 * choice of method, the source's order, the loop (icp_loop.c), and the
 * engines' own interface. */
#ifndef PTREG_REG_ICP_IMPL_H
#define PTREG_REG_ICP_IMPL_H

#include "device/backend.h"
#include "device/engine.h"
#include "ptreg/icp.h"
#include "core/numeric.h"

ptreg_status icp_check_inputs(const float *source, size_t n, const float *target, size_t m,
                              const ptreg_icp_options *opt, ptreg_error *err);
/* The method that runs: the one asked for, unless it needs a Delaunay
 * graph the model has not got (then the k-d tree, and r->nn_note says why).
 * auto: the index's measured method (ptreg_model_index_tune) when
 * use_measured, the index has one and opt->no_tune is off (r->nn_measured
 * set), else the rule. */
ptreg_nn_method icp_choose_nn(const ptreg_icp_options *opt, size_t n, const ptreg_model_index *idx, int use_measured,
                              ptreg_icp_result *r);
/* Bounding-box centre and squared diagonal of the target. */
void icp_target_extent(const float *t, size_t m, double centre[3], double *diag2);
/* The convergence tolerance: opt->tol, or the default for a target of
 * squared diagonal diag2. */
double icp_tolerance(const ptreg_icp_options *opt, double diag2);
/* The result's per-iteration arrays (mse; walk statistics when walks). */
ptreg_status icp_result_alloc(ptreg_icp_result *r, int max_iter, int walks, ptreg_error *err);

/* The Gauss-Newton normal equations of a set of pairs about a centre c,
 * in the step x = (omega, t) that moves a point p to c + R(omega)(p - c) + t:
 * H (the upper triangle of sum w J^T J, row by row), g = sum w J^T r and
 * the cost they minimise, sum w r^T r (GICP: r^T W r). */
typedef struct icp_normal_eq {
    double H[21], g[6], cost;
} icp_normal_eq;

/* A block of pairs: moved source points p, matched target points q, but
 * for POINT the target's normals nq, for GICP and SYMMETRIC the moved
 * source's normals np; pairs with use[i] only. */
typedef struct icp_gn_pairs {
    const float *p, *q, *nq, *np;
    const unsigned char *use;
    size_t n;
} icp_gn_pairs;

/* The block's sums about centre c, in pair order in double: the normal
 * equations (kernel weights in them; a pair whose normals are not finite
 * left out), the pairs' summed squared distances (unweighted: the RMSE
 * Open3D reports for every method) and how many pairs were used. */
void icp_gn_block(const ptreg_icp_options *opt, const double c[3], const icp_gn_pairs *pairs, icp_normal_eq *eq,
                  double *sum_r2, size_t *used);
void icp_normal_eq_merge(icp_normal_eq *a, const icp_normal_eq *b);
/* The step solving (H + lambda D) x = -g (Cholesky, double; D: H's
 * diagonal, floored at 1e-6 of its largest entry, so damping also holds
 * the directions no pair constrains; lambda 0: Gauss-Newton) as a
 * transform dT (x as SYMMETRIC's half-rotation tangent when symmetric); 0
 * when the system is not positive definite (the pairs do not fix the
 * motion). */
int icp_gn_step(const icp_normal_eq *eq, const double c[3], int symmetric, double lambda, double dT[16]);

/* What one pass of correspondences gives the iterations. */
typedef struct icp_pass {
    ptreg_moments moments; /* Horn's steps: the pairs' moments */
    icp_normal_eq eq;      /* Gauss-Newton steps: the normal equations */
    double sum_r2;         /* the pairs' summed squared distances */
    size_t used;           /* pairs kept */
} icp_pass;

/* One pass of correspondences under T: the pairs kept after the filters
 * (iteration decides whether the sigma filter applies), what the step
 * needs of them, and (walk not NULL) the walks' statistics. */
typedef ptreg_status (*icp_correspond_fn)(void *ctx, const double T[16], int iteration, icp_pass *pass,
                                          ptreg_walk_stats *walk, ptreg_error *err);
/* The iterations from opt->init: correspondences, then Horn's or a
 * Gauss-Newton step, until the MSE settles (tol), Open3D's relative
 * change or PCL's step size says so, max_iter, too few pairs or a
 * degenerate set. Fills r's transformation, mse, rmse, fitness, pairs,
 * iterations and stop. */
ptreg_status icp_iterate(icp_correspond_fn correspond, void *ctx, size_t n, const ptreg_icp_options *opt, double tol,
                         ptreg_icp_result *r, ptreg_error *err);

/* GICP and SYMMETRIC: the source's normals, turned each iteration, are
 * part of each pair's residual. */
static inline int icp_uses_source_normals(const ptreg_icp_options *opt)
{
    return (ptreg_icp_method_normals(opt->method) & PTREG_ICP_NORMALS_SOURCE) != 0;
}

/* A cloud's normals for PLANE, GICP and SYMMETRIC: the caller's (given),
 * or estimated from opt's normal_k (and normal_radius) neighbours into
 * *owned (malloc'ed; r->build_ms counts them), on tree when one was built
 * on xyz already (else NULL). Both engines' one way to them. */
ptreg_status icp_cloud_normals(const float *xyz, size_t n, const ptreg_kdtree *tree, const float *given,
                               const ptreg_icp_options *opt, const float **normals, float **owned, ptreg_icp_result *r,
                               ptreg_error *err);

/* What both entry points of an engine do first: an empty result, the
 * options (the defaults for NULL, in *defaults), the inputs checked. */
ptreg_status icp_begin(const float *source, size_t n, const float *target, size_t m, const ptreg_icp_options **opt,
                       ptreg_icp_options *defaults, ptreg_icp_result *r, ptreg_error *err);

/* The source in the Morton order both engines walk it in: its rows,
 * order[i] the caller's index of position i, and with_normals (GICP and
 * SYMMETRIC) its normals (the caller's or estimated: r->build_ms counts
 * them) in that order (else NULL). Each engine's one way to them. */
typedef struct icp_sorted_source {
    float *xyz;
    uint32_t *order;
    float *normals;
} icp_sorted_source;
ptreg_status icp_sort_source(const float *source, size_t n, const ptreg_icp_options *opt, int with_normals,
                             icp_sorted_source *out, ptreg_icp_result *r, ptreg_error *err);
void icp_sorted_source_free(icp_sorted_source *s);

/* ---- the engines: where the passes of correspondences are made (the
 * CPU's, icp_cpu.c; a GPU device's, icp_device.c). The entry points
 * (icp.c) choose one, once; the model keeps it; icp_run owns each
 * registration on it. ---- */
typedef struct icp_engine icp_engine;

/* The resident model (ptreg_icp_model): the engine chosen when it was
 * made, the target, and what the engine keeps on its device. A one-off
 * registration is a model used once. */
struct ptreg_icp_model {
    const icp_engine *engine;
    ptreg_device device;
    const ptreg_model_index *index;
    double ref[3], diag2; /* the target's bounding-box centre and squared diagonal */
    const float *normals; /* ptreg_icp_model_set_normals' */
    void *resident;       /* the engine's (open/close); NULL: it keeps nothing */
};

/* One registration as icp_run gives it to the engine. */
typedef struct icp_setup {
    ptreg_icp_model *model;
    const float *source; /* the caller's order */
    size_t n;
    const ptreg_icp_options *opt; /* target_normals: the caller's, else the model's */
    ptreg_nn_method nn;           /* the method chosen (r->nn) */
    float max_d2;                 /* pairs farther apart are not used */
    int gauss_newton;             /* steps by Gauss-Newton (else Horn's) */
} icp_setup;

struct icp_engine {
    engine base;     /* the backends and whether it runs the options (device/engine.h) */
    int measured_nn; /* auto may take the index's measured method (it was timed here) */
    /* What stays on the device between registrations, in m->resident
     * (NULL functions: nothing stays): opened when the model is made. */
    ptreg_status (*open)(ptreg_icp_model *m, ptreg_error *err);
    void (*close)(void *resident);
    void (*info)(const void *resident, ptreg_icp_model_info *info);
    ptreg_status (*set_normals)(ptreg_icp_model *m, ptreg_error *err); /* m->normals given */
    /* One registration's set-up (r's arrays allocated): *ctx, which
     * end() is given whenever begin set it, failed or not. */
    ptreg_status (*begin)(const icp_setup *s, void **ctx, ptreg_icp_result *r, ptreg_error *err);
    icp_correspond_fn correspond;
    void (*end)(void *ctx);
};

extern const icp_engine icp_cpu_engine, icp_device_engine;

/* One registration on a model (the inputs checked, r empty but its
 * device): the method chosen, the engine's set-up, the iterations on its
 * passes, its end. t0: when the caller's clouds were in memory (time_ms
 * counts from it). */
ptreg_status icp_run(ptreg_icp_model *m, const float *source, size_t n, const ptreg_icp_options *opt, double t0,
                     ptreg_icp_result *r, ptreg_error *err);

/* The program of ICP's steps (icp.cl); built with nn_device_layout's
 * options. */
extern const kernel_program icp_kernels;

/* The names of ICP's methods and robust kernels (its options table). */
extern const ptreg_option_name icp_method_names[];
extern const ptreg_option_name icp_kernel_names[];

#endif
