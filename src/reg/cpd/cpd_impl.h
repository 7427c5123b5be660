/* What CPD's driver (cpd.c), its deformable M-step (cpd_deformable.c,
 * cpd_lowrank.c) and its sums (cpd_sums.c) share: the run's state in the
 * working frame (both clouds in Morton order, shifted by the target's
 * centroid) and the Gauss transform as they call it. Private to the
 * library. */
#ifndef PTREG_REG_CPD_IMPL_H
#define PTREG_REG_CPD_IMPL_H

#include <stddef.h>

#include "pair/pair_engine.h"
#include "ptreg/cpd.h"

typedef struct cpd_run {
    const ptreg_cpd_options *opt;
    ptreg_pair_options pair;  /* the engine's precision and tiling: the E-step's, Lanczos' */
    ptreg_pair_options field; /* the field's products G v: always float64 (its coefficients cancel) */
    size_t m, n;              /* source (the centroids) and target points */
    double *y, *x;            /* m x 3, n x 3, working frame */
    double *ty;               /* the centroids moved, m x 3 */
    /* the E-step's sums: P1 = P 1 (m), Pt1 = P^T 1 (n), PX = P X (m x 3),
     * Np, and about each centroid D_m = sum_n P_mn (ty_m - x_n) (m x 3),
     * E2_m = sum_n P_mn |ty_m - x_n|^2 (m) */
    double *p1, *pt1, *px, np, *d, *e2;
    double sigma2, sigma2_init;
    /* deformable: the field's coefficients W (m x 3) and G W (m x 3) */
    double *w, *gw;
    int cg_iterations;
    struct cpd_eigen_pairs {
        int k;
        double *q, *s;
    } eig; /* G's top eigenpairs (low_rank or precondition_rank), made once */
    int eig_done;
    double pair_ms, pair_terms;
    ptreg_pair_cull cull;
} cpd_run;

/* The transform's name ("rigid", ...; "unknown"): the result table's. */
const char *cpd_transform_name(int value);

/* The Gauss transform out = G(rows, cols; scale) weights with `pair`'s
 * precision (the run's pair or field), timed and counted. */
ptreg_status cpd_gauss(cpd_run *r, const ptreg_pair_options *pair, const double *rows, size_t nr, const double *cols,
                       size_t nc, const double *weights, int channels, double scale, double *out, ptreg_error *err);

/* G's top k eigenpairs: Q (m x k, row-major: point i's k values at
 * q + i k) and S (k, largest first). */
typedef struct cpd_eigen_pairs cpd_eigen;
void cpd_eigen_free(cpd_eigen *e);
/* By Lanczos on the source's G (`steps` products, at most m), fewer than
 * k when G's Krylov space closes sooner. */
ptreg_status cpd_eigen_top(cpd_run *r, int k, int steps, cpd_eigen *out, ptreg_error *err);
/* The Woodbury solve of (Q S Q^T + E^-1) x = r for a diagonal E >= 0:
 * x = E r - E Q (S^-1 + Q^T E Q)^-1 Q^T E r. prepare factors the k x k core
 * (k * k doubles) for one E; apply solves for r's three columns (m x 3)
 * with 3 k doubles of scratch. */
ptreg_status cpd_woodbury_prepare(const cpd_eigen *g, const double *e, size_t m, double *core, ptreg_error *err);
void cpd_woodbury_apply(const cpd_eigen *g, const double *e, size_t m, const double *core, const double *rhs,
                        double *out, double *scratch);

/* The deformable M-step: W from (G + lambda sigma^2 diag(P1)^-1) W =
 * diag(P1)^-1 PX - Y by preconditioned conjugate gradients (rows with
 * P1 = 0 keep w = 0), then TY = Y + G W. */
ptreg_status cpd_deformable_step(cpd_run *r, ptreg_error *err);

#endif
