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


#ifdef __cplusplus
}
#endif

#endif
