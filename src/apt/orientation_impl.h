/* The parts of the orientation module (orientation.h) that registration of many
 * neighborhoods onto one motif shares: starting rotations that cover the
 * motif's orientations (EM-ICP finds the equivalent of the truth only
 * within about 40 degrees of where it starts) and registration from each,
 * keeping the best. Private to src/reg. */
#ifndef PTREG_ORIENTATION_IMPL_H
#define PTREG_ORIENTATION_IMPL_H

#include "ptreg/orientation.h"
#include "ptreg/nn.h"

#define ORIENT_MAX_STARTS 64

/* Starting rotations, the identity first, such that every rotation lies
 * within spacing_deg (misorientation under sym) of one (at most
 * ORIENT_MAX_STARTS: then as evenly as that allows). Returns how many, or 0
 * when out of memory. */
size_t orient_starts(const double sym[][4], size_t nsym, double spacing_deg, double starts[][4]);

/* How well points p (n, rotated by R) sit on the motif: the mean over the
 * points of min(d^2, tau2), d the distance to the nearest motif point. */
double orient_fit(const double R[9], const float *p, size_t n, const float *motif, size_t mk, double tau2);
/* Each point's term of orient_fit: fit[j] = min(d_j^2, tau2). Summed in
 * order and divided by n, the same bits as orient_fit. */
void orient_point_fits(const double R[9], const float *p, size_t n, const float *motif, size_t mk, double tau2,
                       double *fit);

/* Registers every source of set (the motif its shared target) from each
 * start: first a coarse part of the schedule from every start, annealing
 * by coarse_factor a step (or the options' factor, where smaller), then,
 * from the start that fits best (orient_fit, ties to the first), the rest
 * of it by the options' factor. T[16 i] takes source i onto the motif.
 * With one start: the plain batch registration. Stats add up both
 * parts. */
ptreg_status orient_register(const ptreg_pair_set *set, const ptreg_batch_options *opt, double coarse_factor,
                             const double starts[][4], size_t nstarts, double tau2, double *T, ptreg_batch_stats *stats,
                             ptreg_error *err);

/* ---- grain orientations (orientation_grains.c) ---- */

/* The taken atoms and their neighborhoods (relative to each atom). */
typedef struct orient_grain_input {
    const float *xyz;
    size_t m;
    const size_t *offset; /* m + 1 */
    const float *nbr;
    const uint32_t *nbr_atom; /* per neighborhood point: the atom it is */
    const float *reach;       /* per atom: its farthest neighbor's distance */
    const ptreg_kdtree *tree;
    const uint8_t *wanted; /* per atom: it needs an orientation */
} orient_grain_input;

typedef struct orient_grain_options {
    double radius;      /* R: the cells' size and the pooling radius */
    size_t pool_points; /* the most points a pool takes */
    const float *motif;
    size_t motif_points;
    const ptreg_batch_options *batch;
    double coarse_factor; /* orient_register's */
    const double (*starts)[4];
    size_t nstarts;
    double tau2;
    const double (*sym)[4]; /* the motif's symmetry */
    size_t nsym;
} orient_grain_options;

/* Each wanted atom's grain orientation into T[16 t] (rotation only), and
 * the distance from it within which anything can change that answer into
 * reach[t]; *pools_used: the pools registered; *grain_ms: the time spent
 * outside their registration (which stats times). */
ptreg_status orient_grains(const orient_grain_input *in, const orient_grain_options *opt, double *T, float *reach,
                           size_t *pools_used, double *grain_ms, ptreg_batch_stats *stats, ptreg_error *err);

/* The quaternion product a b (w x y z): the rotation b, then a. */
void orient_quat_mul(const double a[4], const double b[4], double out[4]);

/* Declared in the public headers before 1.x; the library's own (not exported). */
/* The proper rotations that map the motif onto itself, each point to
 * within tol x its shortest distance between two points: the identity
 * first, as unit quaternions (w x y z, w >= 0). Returns how many (24 for a
 * cube's shells, 6 for hcp's 12 neighbors, 1 for an irregular motif). */
size_t ptreg_motif_symmetry(const float *motif, size_t k, double tol, double q[PTREG_MAX_SYMMETRY][4]);
/* The representative of rotation q (taking a neighborhood onto the
 * motif) among its equivalents g q, g in the motif's symmetry: the one of
 * smallest angle (largest w), ties to the first g; written with w >= 0. */
void ptreg_orientation_reduce(const double q[4], const double sym[][4], size_t count, double out[4]);
/* The smallest angle (degrees) between a and b up to the symmetry: the
 * misorientation. */
double ptreg_misorientation_deg(const double a[4], const double b[4], const double sym[][4], size_t count);
/* An inverse-pole-figure colour for cubic motifs: the sample's z axis in
 * the crystal frame (q applied to (0, 0, 1)) in the standard triangle
 * [001] red, [101] green, [111] blue. */
void ptreg_ipf_color(const double q[4], unsigned char rgb[3]);

#endif
