/* ptreg atom-probe tomography (APT) data: reconstructions (.pos, .epos) and
 * range files (.rrng, .rng) that name the ion species by mass-to-charge.
 * docs/FORMATS.md has the layouts. Both readers count records from what
 * the file holds and name the file and the place on bad input. */
#ifndef PTREG_APT_H
#define PTREG_APT_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reconstruction, one entry per detected ion, in the file's order.
 * Unlike a cloud, atoms with non-finite coordinates are kept (batch
 * results are one row per atom of the file). */
typedef struct ptreg_apt {
    size_t n;
    float *xyz; /* nm, interleaved */
    float *mq;  /* mass-to-charge-state ratio (Da) */
    /* .epos only (NULL for .pos): */
    float *tof;            /* time of flight (ns) */
    float *vdc, *vpulse;   /* standing and pulse voltages (V) */
    float *detector;       /* detector hit x, y (mm), interleaved */
    uint32_t *pulse_delta; /* pulses since the last detected ion */
    uint32_t *ions_per_pulse;
} ptreg_apt;

typedef enum ptreg_apt_format {
    PTREG_APT_AUTO = 0, /* by extension: .pos or .epos */
    PTREG_APT_POS,      /* 16-byte big-endian records: x y z m/q (float32) */
    PTREG_APT_EPOS      /* 44-byte big-endian records: 9 float32, 2 uint32 */
} ptreg_apt_format;

PTREG_API void ptreg_apt_free(ptreg_apt *apt);
/* The format of a path's extension, or PTREG_APT_AUTO when it is neither. */
PTREG_API ptreg_apt_format ptreg_apt_format_from_path(const char *path);

/* Reads a reconstruction. A file that is empty or not a whole number of
 * records is PTREG_ERR_FORMAT naming the byte where the last record breaks
 * off. On failure *apt is left empty. */
PTREG_API ptreg_status ptreg_apt_read(const char *path, ptreg_apt_format format, ptreg_apt *apt, ptreg_error *err);
/* Reads a reconstruction in pieces of at most `piece` ions, handing each
 * to fn with the index of its first ion, in the file's order (fn may read
 * the piece but not keep it): memory stays bounded by one piece whatever
 * the file's size (the file's pages are let go as the reading passes
 * them). skip (NULL: none) has an entry per piece, ceil(records / piece):
 * pieces with a nonzero one are neither decoded nor handed on. The file
 * is checked as ptreg_apt_read checks it before any piece is handed on;
 * fn's status, when not PTREG_OK, ends the read. */
typedef ptreg_status (*ptreg_apt_piece_fn)(void *ctx, const ptreg_apt *piece, size_t first, ptreg_error *err);
PTREG_API ptreg_status ptreg_apt_read_pieces(const char *path, ptreg_apt_format format, size_t piece,
                                             const uint8_t *skip, ptreg_apt_piece_fn fn, void *ctx, ptreg_error *err);
/* Writes a .pos file (atomically). mq may be NULL (written as 0). */
PTREG_API ptreg_status ptreg_apt_write_pos(const char *path, const float *xyz, const float *mq, size_t n,
                                           ptreg_error *err);

/* ---- ranges ---- */

#define PTREG_ION_NAME_MAX 32

/* A mass-to-charge interval [lo, hi] and the ion it names: the range's
 * Name: in a .rrng file, else its composition written out (Al, AlO, Al2O3:
 * elements in the file's order, counts above 1 after them). Ranges of a
 * file never overlap (they may share an end). */
typedef struct ptreg_range {
    double lo, hi;
    char ion[PTREG_ION_NAME_MAX];
    size_t line; /* the file's line that gives it */
} ptreg_range;

typedef struct ptreg_ranges {
    size_t n;
    ptreg_range *range;
} ptreg_ranges;

/* Reads a range file: IVAS's .rrng ([Ions] and [Ranges] sections) or the
 * older .rng (counts, ion names, a dashed header, then ". lo hi counts..."
 * rows), told apart by content. */
PTREG_API ptreg_status ptreg_ranges_read(const char *path, ptreg_ranges *ranges, ptreg_error *err);
PTREG_API void ptreg_ranges_free(ptreg_ranges *ranges);
/* The index of the first range holding mq, or -1. */
PTREG_API long ptreg_ranges_find(const ptreg_ranges *ranges, double mq);
/* Whether some range names this ion (exact, case-sensitive). */
PTREG_API int ptreg_ranges_has_ion(const ptreg_ranges *ranges, const char *ion);

#ifdef __cplusplus
}
#endif

#endif
