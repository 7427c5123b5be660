/* ptreg orientations: every atom's neighborhood registered to a motif by
 * batched EM-ICP (batch.h), as atom-probe crystallography needs them (Eq. 4
 * of the EM-ICP study of Tamaki et al.), optionally pooled into grains. */
#ifndef PTREG_ORIENTATION_H
#define PTREG_ORIENTATION_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "core.h"
#include "motif.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- grain maps (with ptreg_orientation_options.grain_map) ---- */

typedef struct ptreg_grain {
    size_t atoms;
    double q[4];        /* the mean orientation, as ptreg_orientations' q (fundamental zone), of its
                           atoms oriented within 15 degrees of their overall mean */
    double spread_deg;  /* RMS misorientation of those atoms to the mean */
    double centroid[3]; /* nm */
} ptreg_grain;

/* Two grains that touch: some atom of one has a neighbor in the other. */
typedef struct ptreg_grain_boundary {
    uint32_t a, b;             /* the grains, a < b */
    size_t links;              /* neighbor pairs across it: its area, in links */
    double misorientation_deg; /* between the grains' mean orientations */
} ptreg_grain_boundary;

/* The grains of an orientation map: atoms joined to each of their 12
 * nearest atoms with an orientation when the two are misoriented by less
 * than half the threshold (up to the motif's symmetry); grains below
 * min_atoms dissolved into the grain most of an atom's neighbors are in;
 * neighboring grains whose mean orientations are misoriented by less than
 * the threshold joined; atoms at boundaries given to the neighboring grain
 * under whose mean orientation they and their neighbors fit the motif best
 * (docs/ALGORITHMS.md, Grain maps). The same for any thread count. */
typedef struct ptreg_grain_map {
    int32_t *grain; /* n: each atom's grain, -1 where it has no orientation */
    size_t count;   /* grains, largest first (ties: the one holding the lower atom index) */
    ptreg_grain *grains;
    size_t boundary_count;
    ptreg_grain_boundary *boundaries; /* by (a, b) */
    size_t grained;                   /* atoms in a grain */
    double threshold_deg;
    /* The boundaries' misorientations, one count per boundary, in bins of
     * bin_deg from 0 (the last holds everything beyond); for cubic motifs
     * the counts Mackenzie's distribution of random orientations expects
     * (Biometrika 45, 1958) and chi2 = sum over the bins expecting >= 5 of
     * (count - expected)^2 / expected, on dof = those bins - 1. */
    size_t bins;
    double bin_deg;
    size_t *bin_count;
    double *bin_expected; /* NULL unless cubic */
    double chi2;
    size_t dof;
    /* SVG text: the histogram with Mackenzie's expectation, then the {100},
     * {110} and {111} pole figures (every atom's poles in the sample frame on
     * the upper hemisphere's equal-area projection seen down z, x right, and
     * the grains' means as rings); the pole figures NULL unless cubic. */
    char *figure[4];
    double time_ms;
} ptreg_grain_map;

/* ---- orientations of atomic neighborhoods ---- */

typedef enum ptreg_orientation_flag {
    PTREG_ORIENT_OK = 0,
    PTREG_ORIENT_POOR,         /* registered, but fewer than min_matched of its neighbors match */
    PTREG_ORIENT_NOT_SELECTED, /* not an ion of the species asked for */
    PTREG_ORIENT_TOO_FEW,      /* fewer than 3 neighbors (radius search) */
    PTREG_ORIENT_NOT_FINITE    /* the atom's coordinates are not finite */
} ptreg_orientation_flag;

PTREG_API const char *ptreg_orientation_flag_name(ptreg_orientation_flag flag);

typedef struct ptreg_orientation_options {
    size_t k;           /* neighbors (default 12) */
    double radius;      /* > 0: only neighbors within it (at most k); 0: the k nearest (default) */
    const float *motif; /* the reference: motif_points points about the origin */
    size_t motif_points;
    int estimate_motif;         /* rounds of motif estimation (generalised Procrustes; default 0) */
    double min_matched;         /* below this matched fraction an atom is flagged poor (default 0.5) */
    double symmetry_tol;        /* ptreg_motif_symmetry's tol (default 0.1) */
    int assignment;             /* 1: keep each neighbor's motif point */
    double start_spacing;       /* degrees: rotation-only registration starts from rotations that
                               cover the motif's orientations this closely, and keeps the best
                               (EM-ICP's basin is ~40 degrees wide); >= 180: from the identity
                               alone; 0 (default): 35, or 25 for grain pools */
    double grain_radius;        /* > 0 (nm): report each atom's grain orientation instead of its own
                               neighborhood's: registered pools of the neighborhoods within this
                               radius of seed atoms on a grid of this spacing, each atom taking
                               the nearby pool's orientation its neighborhood fits best (for
                               noisy data; default 0) */
    size_t pool_points;         /* the most points a pool takes (default 384); a pool's schedule ends
                               at sigma^2 = 0.01 r^2 unless batch.sigma2_final says */
    int grain_map;              /* 1: also the grain map (ptreg_orientations.grains; one process
                                  only: not with ptreg_orientations_distributed) */
    double grain_threshold_deg; /* the grain map's threshold (0: the default, 5 degrees) */
    size_t grain_min_atoms;     /* grains of fewer atoms are dissolved (0: the default, 100: at
                                   0.05 nm noise, clumps of pools misregistered alike reach 169) */
    ptreg_batch_options batch;  /* default: rotation only */
    /* Shared runs (set by ptreg_orientations_distributed), else left NULL: */
    const uint8_t *registered; /* only atoms with a nonzero entry are registered; the other taken
                                  atoms are neighbors only (a process's halo) */
    /* Adds the other processes' motif-estimation sums into these (3 per motif
     * point, fixed point 2^-32 nm; and how many rotated neighbors each point
     * got), so that every process gets the same motif. */
    ptreg_status (*combine_motif_sums)(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err);
    void *combine_ctx;
    /* After each stage: 1 the neighborhoods found (value: the atoms), then
     * each registration round (value: the neighborhoods registered), of
     * 1 + (1 + estimate_motif) stages. */
    ptreg_progress progress;
} ptreg_orientation_options;

PTREG_API void ptreg_orientation_options_default(ptreg_orientation_options *opt);

/* Per atom of the input, in its order. */
typedef struct ptreg_orientations {
    size_t n;
    float *q;             /* 4n: w x y z, the rotation taking the atom's neighborhood (relative
                           to the atom) onto the motif, reduced to the fundamental zone; NaN
                           where the atom was not registered */
    float *residual;      /* n: RMS distance from each rotated neighbor to its motif point */
    float *matched;       /* n: fraction of the neighbors within half the motif's shortest
                           distance of their motif point */
    uint8_t *flag;        /* n: ptreg_orientation_flag */
    float *reach;         /* n: how far from the atom anything can change its answer: its farthest
                           neighbor's distance, or with grain pooling the reach of the pools it
                           chose from (NaN where not registered) */
    uint16_t *assignment; /* k per atom (with opt->assignment): the motif point of each
                             neighbor, nearest first; 65535 where none */
    size_t k;
    float *motif; /* the motif used (estimated, when asked), 3 x motif_points */
    size_t motif_points;
    double symmetry[PTREG_MAX_SYMMETRY][4];
    size_t symmetry_count;
    size_t registered, flagged;
    size_t starts; /* starting rotations per neighborhood */
    size_t pools;  /* with grain pooling: the pools registered */
    ptreg_batch_stats stats;
    double neighbor_ms;      /* finding the neighborhoods */
    double grain_ms;         /* with grain pooling: pooling and choosing each atom's grain (not the pools'
                           registration, which stats times) */
    ptreg_grain_map *grains; /* with opt->grain_map, else NULL */
} ptreg_orientations;

/* Orientations of the atoms' neighborhoods. selected (NULL: all) picks
 * the atoms taken: only they are registered, and only they are each
 * other's neighbors. An atom's answer depends on its neighborhood and
 * the motif alone, never on which other atoms share the call. */
PTREG_API ptreg_status ptreg_orientations_compute(const float *xyz, size_t n, const uint8_t *selected,
                                                  const ptreg_orientation_options *opt, ptreg_orientations *out,
                                                  ptreg_error *err);
PTREG_API void ptreg_orientations_free(ptreg_orientations *o);

/* Atom i's colour in an orientation map: the inverse-pole-figure colour
 * of the sample's z axis (ptreg_ipf_color) for cubic motifs, otherwise the
 * absolute components of that axis in the crystal frame; grey where the
 * atom has no orientation. ptreg_orientation_color_key says which. */
PTREG_API void ptreg_orientation_color(const ptreg_orientations *o, size_t i, unsigned char rgb[3]);
static inline const char *ptreg_orientation_color_key(const ptreg_orientations *o)
{
    return o->symmetry_count == 24 ? "inverse pole figure of z" : "|z in the crystal frame|";
}

/* ---- shared among processes (MPI ranks) ---- */

/* What one rank (or one slab of ptreg_orientations_slabs) holds of a
 * shared run: the atoms of its slab and of a halo around it, in atom order,
 * and which of them it answers for (every atom has one slab that does: the
 * slab its position falls in, the first for atoms not finite). */
typedef struct ptreg_orientation_share {
    size_t m;
    size_t *atom;    /* m: each held atom's index in the input */
    uint8_t *owned;  /* m: 1 where this rank answers for the atom */
    double halo;     /* the halo's final width */
    int halo_rounds; /* how many widths were tried */
} ptreg_orientation_share;

/* ptreg_orientations_compute shared among ranks, each given the whole
 * input: the taken atoms are divided into slabs along their longest axis,
 * each rank registers its slab's atoms with a halo of neighbors, and the
 * halo widens until every atom's neighborhood is the one a single process
 * finds. *out holds the answers of the share's m atoms (index j is atom
 * share->atom[j]); where share->owned[j], they are a single process's bits.
 * A collective: every rank calls it, and every rank returns the worst
 * status (a rank that did not fail itself says that another did). */
PTREG_API ptreg_status ptreg_orientations_distributed(const ptreg_ranks *ranks, const float *xyz, size_t n,
                                                      const uint8_t *selected, const ptreg_orientation_options *opt,
                                                      ptreg_orientations *out, ptreg_orientation_share *share,
                                                      ptreg_error *err);
PTREG_API void ptreg_orientation_share_free(ptreg_orientation_share *share);

/* ---- in slabs, one after another (inputs larger than memory) ---- */

/* The atoms of a run read in order, a piece at a time: scan calls fn for
 * every piece (first: the index of its first atom; selected NULL when every
 * atom of the piece is taken) and stops at fn's first failure. Every scan
 * of a source must give the same atoms. window, when not NULL, says which
 * atoms the scan needs: those whose coordinate along axis is in [lo, hi),
 * and those with a coordinate not finite when nonfinite is set; the source
 * may leave out pieces holding none of them (so that a slab's scan of a
 * file in depth order reads its part), and must hand on the rest whole. */
typedef struct ptreg_atom_window {
    int axis;
    double lo, hi;
    int nonfinite;
} ptreg_atom_window;
typedef ptreg_status (*ptreg_atom_piece_fn)(void *ctx, size_t first, size_t count, const float *xyz,
                                            const uint8_t *selected, ptreg_error *err);
typedef struct ptreg_atom_source {
    ptreg_status (*scan)(void *src, const ptreg_atom_window *window, ptreg_atom_piece_fn fn, void *ctx,
                         ptreg_error *err);
    void *src;
} ptreg_atom_source;

/* Each slab's answers: o over the share's m atoms (index j is atom
 * share->atom[j], at xyz + 3 j); where share->owned[j] they are the bits
 * ptreg_orientations_compute gives for the whole input. o and share are
 * the caller's only during the call. */
typedef ptreg_status (*ptreg_orientation_slab_fn)(void *ctx, const ptreg_orientations *o,
                                                  const ptreg_orientation_share *share, const float *xyz,
                                                  ptreg_error *err);

/* ptreg_orientations_compute in slabs of about slab_atoms taken atoms along
 * the taken atoms' longest axis, one after another, so that memory holds
 * one slab with its halo, not the input: the source is scanned twice for
 * the slabs' bounds, then once per slab and halo width (a halo widens until
 * every owned atom's answer is certain, as ptreg_orientations_distributed's
 * do). fn gets each slab's answers in slab order; every atom is owned by
 * exactly one slab. Not with a grain map, and with estimate_motif only when
 * everything is one slab (the estimate needs every atom: estimate the
 * motif on a part and pass it as opt->motif); opt->progress is not
 * called. */
PTREG_API ptreg_status ptreg_orientations_slabs(const ptreg_atom_source *atoms, size_t slab_atoms,
                                                const ptreg_orientation_options *opt, ptreg_orientation_slab_fn fn,
                                                void *ctx, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
