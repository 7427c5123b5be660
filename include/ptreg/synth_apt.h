/* ptreg built-in atom-probe data: a synthetic polycrystal whose grain
 * orientations are known, for the tests and the benchmarks of
 * orientation mapping (orientation.h). */
#ifndef PTREG_SYNTH_APT_H
#define PTREG_SYNTH_APT_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "motif.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- atom probe: a polycrystal with known grain orientations ---- */

/* A synthetic atom-probe reconstruction (nm): the box [0, X) x [0, Y) x
 * [0, Z) cut into grains, the Voronoi cells of uniform random seed points;
 * grain g is the lattice rotated by a uniform random rotation R_g (on
 * SO(3), Shoemake's method) with a lattice point at its seed, and every
 * lattice site of grain g in the box and in g's cell (the nearest seed; ties
 * to the lower index) is an atom, so no site is made twice. Each atom is
 * detected with probability efficiency, independently, and moved by
 * Gaussian noise: sigma noise along x and y, noise_depth along z (APT's
 * depth resolution is the better one). Noise is added after the cut, so
 * atoms can lie a few sigma outside the box. */
typedef struct ptreg_apt_synth_options {
    ptreg_lattice lattice; /* default fcc */
    double a;              /* lattice constant, nm (default 0.405: aluminium); hcp: the
                              nearest-neighbor distance, c/a ideal (motif.h) */
    double box[3];         /* extents x, y, z, nm (default 12, 12, 12) */
    size_t grains;         /* 1 .. PTREG_APT_SYNTH_MAX_GRAINS (default 8) */
    double efficiency;     /* detection efficiency, (0, 1] (default 0.5) */
    double noise;          /* Gaussian sigma along x and y, nm, >= 0 (default 0.05) */
    double noise_depth;    /* along z, nm; < 0: noise / 2 (default -1) */
    double solute;         /* fraction of the detected atoms that are solute, [0, 1] (default 0) */
    double mq;             /* mass-to-charge of the lattice atoms, Da (default 27: Al+) */
    double mq_solute;      /* of the solute atoms (default 24: Mg+) */
    uint64_t seed;         /* the same seed, the same bits (default 1) */
} ptreg_apt_synth_options;

#define PTREG_APT_SYNTH_MAX_GRAINS 10000
/* The expected atom count (efficiency x lattice sites in the box) may not
 * exceed this, nor the lattice sites PTREG_APT_SYNTH_MAX_SITES. */
#define PTREG_APT_SYNTH_MAX_ATOMS 2147483648.0
#define PTREG_APT_SYNTH_MAX_SITES 8589934592.0

PTREG_API void ptreg_apt_synth_options_default(ptreg_apt_synth_options *opt);

/* The atoms in the order made: the box in slabs of bins (z slowest, then y,
 * x), within a bin grain by grain. The caller owns it; free with
 * ptreg_apt_synth_free. */
typedef struct ptreg_apt_synth {
    size_t n;        /* atoms detected */
    float *xyz;      /* 3n, nm, interleaved */
    float *mq;       /* n: opt->mq, or opt->mq_solute for solute atoms */
    uint32_t *grain; /* n: the atom's grain */
    size_t grains;
    /* Per grain, 4 each: the truth, the rotation taking the grain's atoms
     * (relative to one of its atoms, in the sample frame) onto the
     * crystal's axes, the frame of ptreg_motif_lattice: a site is
     * seed + R_g s with s a lattice vector, and the truth is R_g^T's unit
     * quaternion, w x y z with w >= 0. The orientation ptreg_batch's
     * ptreg_orientations_compute should find (before the fundamental-zone
     * reduction). hcp: the atoms of the basis's second site see the motif
     * turned 180 degrees about c, as in any hcp crystal. */
    double *orientation;
    double *seed;        /* 3 per grain: the Voronoi seed, a lattice point of the grain */
    size_t *grain_atoms; /* per grain: atoms detected */
    size_t sites;        /* lattice sites in the box (the atoms before detection) */
    size_t solutes;      /* solute atoms */
} ptreg_apt_synth;

PTREG_API void ptreg_apt_synth_free(ptreg_apt_synth *s);

/* Makes the polycrystal. Options outside their ranges, or a box that
 * would hold more atoms than the limits above, are PTREG_ERR_ARG with the
 * numbers. Memory O(atoms + grains); time O(sites + bins x grains). On
 * failure *out is left empty. */
PTREG_API ptreg_status ptreg_apt_synth_polycrystal(const ptreg_apt_synth_options *opt, ptreg_apt_synth *out,
                                                   ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
