/* ptreg batch: many small registrations in one call, and what atom-probe
 * crystallography builds on it (Eq. 4 of the EM-ICP study of Tamaki et al.:
 * min over R_i, P_i of sum_i |m - P_i d_i R_i|^2 for every atom's
 * neighbourhood d_i against the average local structure m).
 *
 * Every pair is registered by ptreg_emicp's soft-assign EM-ICP (no
 * correspondences: the permutation is the soft assignment), many pairs in
 * the lanes of the CPU's vectors; a pair's answer is ptreg_emicp's on the
 * same schedule, bit for bit on the same instruction set. On a GPU (CUDA
 * or OpenCL, with double precision) the whole schedule of every pair runs
 * in one launch, a work-group to a few pairs, and gives the CPU's answer
 * to rounding (docs/ALGORITHMS.md, "Batched EM-ICP on devices"). */
#ifndef PTREG_BATCH_H
#define PTREG_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- registering many pairs ---- */

typedef struct ptreg_batch_options {
    int translation;     /* 1: rotation and translation (as ptreg_emicp); 0: rotation only,
                            about the origin, where source and target are centred (default 1) */
    double sigma2_init;  /* <= 0: PTREG_EMICP_SIGMA2_INIT_REL r^2, r the target's RMS radius */
    double sigma2_final; /* <= 0: PTREG_EMICP_SIGMA2_FINAL_REL r^2 */
    double sigma_factor; /* in (0, 1) (default 0.9) */
    double d02;          /* < 0: the first sigma^2 (default) */
    int max_iter;        /* default 1000 */
    double tol;          /* ptreg_emicp's (default 1e-7; 0: run the whole schedule) */
    int reference;       /* 1: the plain path, one pair at a time (for checking; slow) */
    ptreg_device device; /* auto (default), cpu, cuda[:N], opencl[:N]: PTREG_BATCH_BACKENDS */
} ptreg_batch_options;

/* The backends batched registration runs on (ptreg_device_resolve's mask). */
#define PTREG_BATCH_BACKENDS                                                                            \
    (PTREG_BACKEND_BIT(PTREG_BACKEND_CPU) | PTREG_BACKEND_BIT(PTREG_BACKEND_CUDA) |                     \
     PTREG_BACKEND_BIT(PTREG_BACKEND_OPENCL))
/* The most source or target points a pair may have on a GPU (the kernel's
 * local arrays are sized for it). A set with a larger pair is
 * PTREG_ERR_ARG on a device asked for; auto then takes the CPU. */
#define PTREG_BATCH_DEVICE_MAX_POINTS 64

PTREG_API void ptreg_batch_options_default(ptreg_batch_options *opt);

/* The schedule a pair with this target runs: sigma^2 from and to, and d0^2
 * (the options', or ptreg_emicp's defaults from the target's RMS radius
 * about its centroid, *radius); PTREG_ERR_ARG when the target has no
 * extent and the options give none. */
PTREG_API ptreg_status ptreg_batch_schedule(const float *target, size_t m, const ptreg_batch_options *opt, double *sigma2_init,
                                  double *sigma2_final, double *d02, double *radius, ptreg_error *err);

/* Pairs of small clouds: pair i registers its source points
 * source[source_offset[i] .. source_offset[i + 1]) onto target points
 * target[target_offset[i] .. target_offset[i + 1]), or onto one target of
 * target_points points shared by all (target_offset NULL). Offsets count
 * points (3 floats each). */
typedef struct ptreg_pair_set {
    size_t count;
    const float *source;
    const size_t *source_offset; /* count + 1 */
    const float *target;
    const size_t *target_offset; /* count + 1, or NULL */
    size_t target_points;        /* the shared target's, when target_offset is NULL */
} ptreg_pair_set;

typedef struct ptreg_batch_stats {
    size_t pairs;
    double pair_terms;  /* source points x target points x iterations, summed over the pairs */
    double time_ms;
    double pairs_per_s, gpts; /* pairs / s; pair terms / s / 1e9 */
    const char *isa;          /* the CPU's instruction set, or the device's name */
    double kernel_ms;         /* on a device: the launches alone (its events; -1 when it gave no timing);
                                 time_ms adds packing and copies */
} ptreg_batch_stats;

/* Registers every pair: transform[16 * i ...] (row-major 4x4, taking pair
 * i's source onto its target; in: ignored), and when not NULL iterations[i]
 * and stop[i] (ptreg_stop_reason). Pairs need at least one source and one
 * target point and finite coordinates (else PTREG_ERR_ARG naming the
 * pair). The same bits for any thread count, and on every run of a
 * device. stats->isa names the device on a GPU. */
PTREG_API ptreg_status ptreg_batch_register(const ptreg_pair_set *pairs, const ptreg_batch_options *opt, double *transform,
                                  int *iterations, int *stop, ptreg_batch_stats *stats, ptreg_error *err);

/* ---- motifs: the reference local structures ---- */

typedef enum ptreg_lattice {
    PTREG_LATTICE_FCC = 0,
    PTREG_LATTICE_BCC,
    PTREG_LATTICE_HCP, /* ideal c/a = sqrt(8/3) */
    PTREG_LATTICE_SC
} ptreg_lattice;

PTREG_API const char *ptreg_lattice_name(ptreg_lattice lattice);
PTREG_API int ptreg_lattice_parse(const char *name, ptreg_lattice *lattice); /* -1 when unknown */

/* The k lattice points nearest a lattice point (which is left out), lattice
 * constant a (nm), in the crystal's axes: whole shells nearest first (fcc:
 * 12, 18, 42 ...; bcc: 8, 14, 26; sc: 6, 18, 26; hcp: 12, 18). A k that
 * cuts a shell takes its points in a fixed order (by distance, then z, y,
 * x): such a motif loses the lattice's symmetry. xyz: 3k floats. */
PTREG_API ptreg_status ptreg_motif_lattice(ptreg_lattice lattice, double a, size_t k, float *xyz, ptreg_error *err);
/* The number of points in the first shells: the k values that close a shell
 * (up to max, written to shells[]; returns how many). */
PTREG_API size_t ptreg_lattice_shells(ptreg_lattice lattice, size_t *shells, size_t max);

/* The shortest distance between two of the motif's k points: the scale of
 * "matched" (within half of it) and of the residual histogram. */
PTREG_API double ptreg_motif_shortest_distance(const float *motif, size_t k);

#define PTREG_MAX_SYMMETRY 48

/* The proper rotations that map the motif onto itself, each point to
 * within tol x its shortest distance between two points: the identity
 * first, as unit quaternions (w x y z, w >= 0). Returns how many (24 for a
 * cube's shells, 6 for hcp's 12 neighbours, 1 for an irregular motif). */
PTREG_API size_t ptreg_motif_symmetry(const float *motif, size_t k, double tol, double q[PTREG_MAX_SYMMETRY][4]);

/* The representative of rotation q (taking a neighbourhood onto the
 * motif) among its equivalents g q, g in the motif's symmetry: the one of
 * smallest angle (largest w), ties to the first g; written with w >= 0. */
PTREG_API void ptreg_orientation_reduce(const double q[4], const double sym[][4], size_t count, double out[4]);
/* The smallest angle (degrees) between a and b up to the symmetry: the
 * misorientation. */
PTREG_API double ptreg_misorientation_deg(const double a[4], const double b[4], const double sym[][4], size_t count);
/* An inverse-pole-figure colour for cubic motifs: the sample's z axis in
 * the crystal frame (q applied to (0, 0, 1)) in the standard triangle
 * [001] red, [101] green, [111] blue. */
PTREG_API void ptreg_ipf_color(const double q[4], unsigned char rgb[3]);

/* ---- orientations of atomic neighbourhoods ---- */

typedef enum ptreg_orientation_flag {
    PTREG_ORIENT_OK = 0,
    PTREG_ORIENT_POOR,         /* registered, but fewer than min_matched of its neighbours match */
    PTREG_ORIENT_NOT_SELECTED, /* not an ion of the species asked for */
    PTREG_ORIENT_TOO_FEW,      /* fewer than 3 neighbours (radius search) */
    PTREG_ORIENT_NOT_FINITE    /* the atom's coordinates are not finite */
} ptreg_orientation_flag;

PTREG_API const char *ptreg_orientation_flag_name(ptreg_orientation_flag flag);

typedef struct ptreg_orientation_options {
    size_t k;               /* neighbours (default 12) */
    double radius;          /* > 0: only neighbours within it (at most k); 0: the k nearest (default) */
    const float *motif;     /* the reference: motif_points points about the origin */
    size_t motif_points;
    int estimate_motif;     /* rounds of motif estimation (generalised Procrustes; default 0) */
    double min_matched;     /* below this matched fraction an atom is flagged poor (default 0.5) */
    double symmetry_tol;    /* ptreg_motif_symmetry's tol (default 0.1) */
    int assignment;         /* 1: keep each neighbour's motif point */
    double start_spacing;   /* degrees: rotation-only registration starts from rotations that
                               cover the motif's orientations this closely, and keeps the best
                               (EM-ICP's basin is ~40 degrees wide); >= 180: from the identity
                               alone; 0 (default): 35, or 25 for grain pools */
    double grain_radius;    /* > 0 (nm): report each atom's grain orientation instead of its own
                               neighbourhood's: registered pools of the neighbourhoods within this
                               radius of seed atoms on a grid of this spacing, each atom taking
                               the nearby pool's orientation its neighbourhood fits best (for
                               noisy data; default 0) */
    size_t pool_points;     /* the most points a pool takes (default 384); a pool's schedule ends
                               at sigma^2 = 0.01 r^2 unless batch.sigma2_final says */
    ptreg_batch_options batch; /* default: rotation only */
    /* Distributed runs (ptreg batch under MPI), else left NULL: */
    const uint8_t *registered; /* only atoms with a nonzero entry are registered; the other taken
                                  atoms are neighbours only (a process's halo) */
    /* Adds the other processes' motif-estimation sums into these (3 per motif
     * point, fixed point 2^-32 nm; and how many rotated neighbours each point
     * got), so that every process gets the same motif. */
    ptreg_status (*combine_motif_sums)(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err);
    void *combine_ctx;
    /* After each stage: 1 the neighbourhoods found (value: the atoms), then
     * each registration round (value: the neighbourhoods registered), of
     * 1 + (1 + estimate_motif) stages. */
    ptreg_progress progress;
} ptreg_orientation_options;

PTREG_API void ptreg_orientation_options_default(ptreg_orientation_options *opt);

/* Per atom of the input, in its order. */
typedef struct ptreg_orientations {
    size_t n;
    float *q;           /* 4n: w x y z, the rotation taking the atom's neighbourhood (relative
                           to the atom) onto the motif, reduced to the fundamental zone; NaN
                           where the atom was not registered */
    float *residual;    /* n: RMS distance from each rotated neighbour to its motif point */
    float *matched;     /* n: fraction of the neighbours within half the motif's shortest
                           distance of their motif point */
    uint8_t *flag;      /* n: ptreg_orientation_flag */
    float *reach;       /* n: how far from the atom anything can change its answer: its farthest
                           neighbour's distance, or with grain pooling the reach of the pools it
                           chose from (NaN where not registered) */
    uint16_t *assignment; /* k per atom (with opt->assignment): the motif point of each
                             neighbour, nearest first; 65535 where none */
    size_t k;
    float *motif;       /* the motif used (estimated, when asked), 3 x motif_points */
    size_t motif_points;
    double symmetry[PTREG_MAX_SYMMETRY][4];
    size_t symmetry_count;
    size_t registered, flagged;
    size_t starts;       /* starting rotations per neighbourhood */
    size_t pools;        /* with grain pooling: the pools registered */
    ptreg_batch_stats stats;
    double neighbour_ms; /* finding the neighbourhoods */
} ptreg_orientations;

/* Orientations of the atoms' neighbourhoods. selected (NULL: all) picks
 * the atoms taken: only they are registered, and only they are each
 * other's neighbours. An atom's answer depends on its neighbourhood and
 * the motif alone, never on which other atoms share the call. */
PTREG_API ptreg_status ptreg_orientations_compute(const float *xyz, size_t n, const uint8_t *selected,
                                        const ptreg_orientation_options *opt, ptreg_orientations *out,
                                        ptreg_error *err);
PTREG_API void ptreg_orientations_free(ptreg_orientations *o);

#ifdef __cplusplus
}
#endif

#endif
