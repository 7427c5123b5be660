/* ptreg batch, in parts: the command (cmd_batch.c), its per-atom and
 * per-pair outputs (batch_output.c) and its runs under MPI (mpi.c). */
#ifndef PTREG_CLI_BATCH_H
#define PTREG_CLI_BATCH_H

#include <stdio.h>

#include "cli/args.h"
#include "cli/mpi.h"
#include "ptreg/apt.h"
#include "ptreg/batch.h"
#include "ptreg/motif.h"
#include "ptreg/orientation.h"

/* The atoms of an input: a reconstruction keeps every ion (rows of the
 * output are the file's records); a cloud has its non-finite points
 * dropped by the reader. */
typedef struct batch_atoms {
    const char *path;
    size_t n;
    float *xyz;
    float *mq;         /* NULL for clouds */
    uint8_t *selected; /* NULL: every atom (or, in slabs, not held) */
    int by_ion;        /* --ranges chose the atoms: selected_count counts them */
    size_t selected_count;
} batch_atoms;

typedef enum batch_engine { ENGINE_LANES = 0, ENGINE_PLAIN, ENGINE_LOOP } batch_engine;

/* What the command line asked for. */
typedef struct batch_request {
    const cli_args *a;
    const char *input, *output;
    batch_engine engine;
    ptreg_batch_options batch;
    ptreg_lattice lattice;
    double lattice_constant;
    size_t motif_points;
    ptreg_orientation_options orient;
    const char *grains_out; /* --grains-out DIR, or NULL */
    double max_memory_mib;  /* --max-memory */
    int json;
} batch_request;

/* Where the registrations ran: auto and PTREG_DEVICE resolved as the
 * library resolves them. */
const char *batch_resolved_device(const batch_request *r, char *buf, size_t size);
/* --pairs: the whole run (batch_pairs.c). */
int batch_run_pairs(const batch_request *r, const cli_comm *comm);

/* ---- per-atom output files ---- */

/* Whether the path ends in "." ext (ext in lower case; any case matches). */
int batch_has_extension(const char *path, const char *ext);

typedef enum batch_format { BATCH_NPY = 0, BATCH_PLY, BATCH_PLY_ASCII, BATCH_CSV } batch_format;

/* The format of -o from its extension; prints a usage error naming what
 * the command writes when it is none of them. */
int batch_output_format(const char *path, int ascii, batch_format *format);
/* The bytes of one row of a binary format (0 for text formats). */
size_t batch_row_bytes(batch_format format);
/* The header of an output of n rows; returns its length (buf: 1 KiB). */
size_t batch_header(batch_format format, size_t n, const ptreg_orientations *o, char *buf);
/* Row `row` of the output: atom xyz's result, at index i of o. */
void batch_encode_row(batch_format format, const float xyz[3], const ptreg_orientations *o, size_t i,
                      unsigned char *dst);
void batch_print_row(FILE *f, batch_format format, const float xyz[3], const ptreg_orientations *o, size_t i);
/* Writes every atom's row (one process), atomically. */
int batch_write_orientations(const char *path, batch_format format, const batch_atoms *atoms,
                             const ptreg_orientations *o);
/* The assignment as an n x k int32 .npy, -1 where a neighbor has none. */
void batch_assignment_row(const ptreg_orientations *o, size_t i, int32_t *row);
/* The same row as the .npy's bytes (little-endian int32), for rows
 * written in place. */
void batch_encode_assignment_row(const ptreg_orientations *o, size_t i, unsigned char *dst);
int batch_write_assignment(const char *path, const ptreg_orientations *o);
/* With --html: the atoms in their orientation colours, with the colour key
 * (cli_report); nothing without it. */
int batch_report_orientations(const batch_atoms *atoms, const ptreg_orientations *o);

/* ---- grains (batch_grains.c) ---- */

/* The grain map's figures for the JSON (computed: 0 when no map was made). */
typedef struct batch_grain_summary {
    int computed;
    size_t grains, grained, boundaries;
    double threshold_deg, time_ms;
    double chi2; /* against Mackenzie (cubic motifs); NaN otherwise */
    size_t dof;
} batch_grain_summary;

/* The orientations' grain map (made with --grains-out or --html): its
 * files written into the directory, its layer and figures added to the
 * page; nothing without one. */
int batch_grains(const batch_request *r, const batch_atoms *atoms, const ptreg_orientations *o,
                 batch_grain_summary *summary);

/* ---- summaries ---- */

#define BATCH_HIST_BINS 20

/* What the summary reports, summed over processes (integers, so any
 * split adds up to the same). Residuals in bins of the motif's shortest
 * distance / BATCH_HIST_BINS, the last bin open-ended. */
typedef struct batch_tally {
    uint64_t flags[PTREG_ORIENT_NOT_FINITE + 1];
    uint64_t hist[BATCH_HIST_BINS + 1];
    int64_t residual_sum, matched_sum; /* fixed point, 2^-32 */
    uint64_t registered;
    double pair_terms;
} batch_tally;

void batch_tally_rows(const ptreg_orientations *o, const uint8_t *rows, batch_tally *t);

/* An atoms run's figures: times are the slowest rank's. */
typedef struct batch_atom_stats {
    batch_tally tally;
    double neighbor_ms, register_ms, grain_ms;
    double halo;     /* under MPI: the halo's final width (nm) */
    int halo_rounds; /* and how many tries it took */
} batch_atom_stats;

/* ---- atoms (batch_atoms.c) ---- */

/* The timings and counts of an atoms run, summed over ranks where they
 * are counts, the slowest rank's where they are times. */
typedef struct atoms_report {
    const batch_request *r;
    const batch_atoms *atoms;
    const ptreg_orientations *o; /* any rank's: motif, symmetry, stats' isa */
    batch_atom_stats s;
    double read_ms, total_ms;
    int ranks;
    size_t slabs; /* read in slabs (batch_stream.c): how many; else 0 */
    batch_grain_summary grains;
} atoms_report;

int batch_load_atoms(const char *path, batch_atoms *atoms);
void batch_atoms_free(batch_atoms *atoms);
/* --ranges / --ion: the atoms whose mass-to-charge falls in a range of the
 * ions asked for. */
int batch_select_ions(const cli_args *a, batch_atoms *atoms);
/* --ranges read and --ion's names checked against it (input: the
 * reconstruction, which must have mass-to-charge); *ranges is the caller's
 * on success. */
int batch_read_ranges(const cli_args *a, const char *input, ptreg_ranges *ranges);
/* selected[i] for n ions by --ion; returns how many are. */
size_t batch_select_piece(const cli_args *a, const ptreg_ranges *ranges, const float *mq, size_t n, uint8_t *selected);
/* --motif-file's points, or --motif's lattice's first shells. */
int batch_make_motif(const batch_request *r, ptreg_cloud *motif);
int batch_print_atoms_json(const atoms_report *rep);
void batch_print_atoms_human(const atoms_report *rep);

/* ---- atoms in slabs (batch_stream.c) ---- */
/* A .pos/.epos's records from its size (0 for other inputs or no file). */
size_t batch_reconstruction_ions(const char *path);
/* The taken atoms per slab when a reconstruction of this many atoms needs
 * more than --max-memory; 0 when it is read whole. */
size_t batch_slab_atoms(const batch_request *r, size_t atoms);
/* Every atom of the reconstruction, one slab after another, the rows
 * written in place; *summary gets the motif and the counts the report
 * names, rep the figures summed over the slabs. atoms: n set, no arrays. */
int batch_stream_atoms(const batch_request *r, batch_format format, size_t slab_atoms,
                       const ptreg_orientation_options *opt, batch_atoms *atoms, atoms_report *rep,
                       ptreg_orientations *summary);

/* ---- pairs ---- */

/* Writes rows of 9 (qw qx qy qz tx ty tz rms iterations) as .npy (float64)
 * or .csv, atomically. */
int batch_write_pair_rows(const char *path, const double *rows, size_t n);

/* ---- batch on several processes (mpi.c) ---- */

/* Orientations of every atom on size > 1 ranks (orientations_
 * distributed), the outputs written in atom order with MPI-IO. *o gets
 * this rank's share (its motif and symmetry are everyone's) and the
 * figures, summed over the ranks. */
int batch_mpi_atoms(const cli_comm *c, const char *output, batch_format format, const char *assignment,
                    const batch_atoms *atoms, const ptreg_orientation_options *opt, ptreg_orientations *o,
                    batch_atom_stats *stats);
/* Writes this rank's rows [first, first + count) of the pairs output
 * (.npy only) and sums the report's counts over the ranks. */
int batch_mpi_pairs(const cli_comm *c, const char *output, size_t first, size_t count, const double *rows,
                    ptreg_batch_stats *stats, uint64_t *stops, double *iterations_sum, double *iterations_max,
                    double *rms_sum);

#endif
