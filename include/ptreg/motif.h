/* ptreg motifs: the reference local structures of crystal lattices, their
 * symmetry, and orientations up to that symmetry (misorientation and the
 * inverse-pole-figure colours of orientation maps). */
#ifndef PTREG_MOTIF_H
#define PTREG_MOTIF_H

#include <stddef.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

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

/* The shortest distance between two of the motif's k points: the scale of
 * "matched" (within half of it) and of the residual histogram. */
PTREG_API double ptreg_motif_shortest_distance(const float *motif, size_t k);

#define PTREG_MAX_SYMMETRY 48

/* The proper rotations that map the motif onto itself, each point to
 * within tol x its shortest distance between two points: the identity
 * first, as unit quaternions (w x y z, w >= 0). Returns how many (24 for a
 * cube's shells, 6 for hcp's 12 neighbors, 1 for an irregular motif). */
PTREG_API size_t ptreg_motif_symmetry(const float *motif, size_t k, double tol, double q[PTREG_MAX_SYMMETRY][4]);

/* The representative of rotation q (taking a neighborhood onto the
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

#ifdef __cplusplus
}
#endif

#endif
