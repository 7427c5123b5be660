/* The CLI's MPI glue (cli/mpi.h): the ranks and their collectives, for
 * batch and multiway. ptreg batch on several processes (mpirun): every
 * rank reads the input, the library shares the atoms among the ranks
 * (orientations_distributed, on this file's MPI collectives), and the
 * ranks write one output in atom order with MPI-IO; the pairs are split
 * into contiguous ranges. The output has the same bits as one process. */
#include <stdlib.h>
#include <string.h>

#include "cli/batch_cli.h"
#include "cli/files.h"
#include "ptreg/batch.h"
#include "ptreg/io.h"

#ifdef PTREG_HAVE_MPI
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
#endif

void cli_comm_split(const cli_comm *c, size_t n, size_t *first, size_t *count)
{
    const size_t r = (size_t)c->rank, R = (size_t)c->size, base = n / R, extra = n % R;
    *first = r * base + (r < extra ? r : extra);
    *count = base + (r < extra);
}

#ifndef PTREG_HAVE_MPI

int cli_comm_open(cli_comm *c)
{
    c->rank = 0, c->size = 1, c->joined = 0;
    return EXIT_OK;
}

int cli_comm_close(cli_comm *c, int rc)
{
    (void)c;
    return rc;
}

int cli_comm_agree(const cli_comm *c, int rc)
{
    (void)c;
    return rc;
}

ptreg_ranks cli_comm_ranks(const cli_comm *c)
{
    (void)c;
    return (ptreg_ranks){.rank = 0, .size = 1};
}

/* Never called: a build without MPI runs one process. */
int batch_mpi_atoms(const cli_comm *c, const char *output, batch_format format, const char *assignment,
                    const batch_atoms *atoms, const ptreg_orientation_options *opt, ptreg_orientations *o,
                    batch_atom_stats *stats)
{
    (void)c, (void)output, (void)format, (void)assignment, (void)atoms, (void)opt, (void)o, (void)stats;
    return EXIT_RUNTIME;
}

int batch_mpi_pairs(const cli_comm *c, const char *output, size_t first, size_t count, const double *rows,
                    ptreg_batch_stats *stats, uint64_t *stops, double *iterations_sum, double *iterations_max,
                    double *rms_sum)
{
    (void)c, (void)output, (void)first, (void)count, (void)rows, (void)stats, (void)stops;
    (void)iterations_sum, (void)iterations_max, (void)rms_sum;
    return EXIT_RUNTIME;
}

#else

/* Started by mpirun (Open MPI, or a PMI launcher)? A plain run never
 * initialises MPI: singleton start-up is slow and needs the runtime. */
static int launched(void) { return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK"); }

int cli_comm_open(cli_comm *c)
{
    c->rank = 0, c->size = 1, c->joined = 0;
    if (!launched())
        return EXIT_OK;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        cli_error("batch", "MPI_Init failed");
        return EXIT_RUNTIME;
    }
    c->joined = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    return EXIT_OK;
}

int cli_comm_close(cli_comm *c, int rc)
{
    if (c->joined)
        MPI_Finalize();
    c->joined = 0;
    return rc;
}

static int worst_of_all(int rc)
{
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int cli_comm_agree(const cli_comm *c, int rc) { return c->size == 1 ? rc : worst_of_all(rc); }

/* The collectives the library's shared run asks for, over every rank. */
static int max_of_all(int value, void *ctx)
{
    (void)ctx;
    return worst_of_all(value);
}

static ptreg_status sum_motif(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err)
{
    (void)ctx;
    if (MPI_Allreduce(MPI_IN_PLACE, sum, (int)(3 * points), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, count, (int)points, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "MPI: adding up the motif estimate failed");
    return PTREG_OK;
}

static ptreg_status sum_doubles(double *values, size_t count, void *ctx, ptreg_error *err)
{
    (void)ctx;
    for (size_t done = 0; done < count;) {
        const int part = count - done > (size_t)1 << 30 ? 1 << 30 : (int)(count - done);
        if (MPI_Allreduce(MPI_IN_PLACE, values + done, part, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
            return ptreg_error_set(err, PTREG_ERR_RUNTIME, "MPI: adding up the ranks' values failed");
        done += (size_t)part;
    }
    return PTREG_OK;
}

ptreg_ranks cli_comm_ranks(const cli_comm *c)
{
    return (ptreg_ranks){.rank = c->rank, .size = c->size, .max_of_all = max_of_all, .sum_doubles = sum_doubles};
}

/* ---- output with MPI-IO ---- */

/* A temporary file beside the target, named by rank 0; renamed over the
 * target once every rank has written its rows. */
static int shared_tmp_name(const char *path, char *tmp, size_t cap)
{
    long pid = (long)getpid();
    MPI_Bcast(&pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return snprintf(tmp, cap, "%s.ptreg-tmp-%ld", path, pid) < (int)cap;
}

/* Writes `header` (rank 0) and this rank's rows: rows[j] of row_bytes
 * goes to row index[j] (increasing), all collective. */
static int write_rows(const char *path, const char *header, size_t header_bytes, const unsigned char *rows,
                      const size_t *index, size_t count, size_t row_bytes)
{
    char tmp[4096];
    if (!shared_tmp_name(path, tmp, sizeof tmp)) {
        cli_error("batch", "%s: path too long", path);
        return EXIT_USAGE;
    }
    MPI_File fh;
    int ok = MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS;
    ok = worst_of_all(!ok) == 0;
    if (!ok) {
        cli_error("batch", "%s: cannot create the output (MPI-IO)", tmp);
        return EXIT_RUNTIME;
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bad = MPI_File_set_size(fh, (MPI_Offset)0) != MPI_SUCCESS;
    if (rank == 0)
        bad |= MPI_File_write_at(fh, 0, header, (int)header_bytes, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
    /* runs of consecutive rows, one block each */
    int runs = 0;
    for (size_t j = 0; j < count; j++)
        runs += j == 0 || index[j] != index[j - 1] + 1;
    int *lengths = malloc(((size_t)runs + 1) * sizeof *lengths);
    MPI_Aint *offsets = malloc(((size_t)runs + 1) * sizeof *offsets);
    bad |= !lengths || !offsets || count * row_bytes > (size_t)2147483647;
    if (!bad) {
        int r = -1;
        for (size_t j = 0; j < count; j++) {
            if (j == 0 || index[j] != index[j - 1] + 1) {
                offsets[++r] = (MPI_Aint)(index[j] * row_bytes);
                lengths[r] = 0;
            }
            lengths[r] += (int)row_bytes;
        }
    }
    MPI_Datatype view;
    bad = worst_of_all(bad);
    if (!bad) {
        MPI_Type_create_hindexed(runs, lengths, offsets, MPI_BYTE, &view);
        MPI_Type_commit(&view);
        bad |= MPI_File_set_view(fh, (MPI_Offset)header_bytes, MPI_BYTE, view, "native", MPI_INFO_NULL) != MPI_SUCCESS;
        bad |= MPI_File_write_all(fh, rows, (int)(count * row_bytes), MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS;
        MPI_Type_free(&view);
    }
    free(lengths);
    free(offsets);
    bad |= MPI_File_close(&fh) != MPI_SUCCESS;
    bad = worst_of_all(bad);
    if (rank == 0) {
        if (bad || rename(tmp, path)) {
            remove(tmp);
            cli_error("batch", "%s: writing the output with MPI-IO failed", path);
            bad = 1;
        }
    }
    return worst_of_all(bad ? EXIT_RUNTIME : EXIT_OK);
}

static int write_atom_outputs(const char *output, batch_format format, const char *assignment, const batch_atoms *atoms,
                              const ptreg_orientation_share *share, const ptreg_orientations *o)
{
    size_t owned = 0;
    for (size_t j = 0; j < share->m; j++)
        owned += share->owned[j];
    size_t *index = malloc((owned + 1) * sizeof *index);
    const size_t row = batch_row_bytes(format), arow = 4 * o->k;
    unsigned char *rows = malloc((owned + 1) * (row > arow ? row : arow));
    int rc = worst_of_all(index && rows ? EXIT_OK : EXIT_RUNTIME);
    char header[1024];
    if (!rc && output) {
        size_t at = 0;
        for (size_t j = 0; j < share->m; j++)
            if (share->owned[j]) {
                index[at] = share->atom[j];
                batch_encode_row(format, atoms->xyz + 3 * share->atom[j], o, j, rows + row * at++);
            }
        rc = write_rows(output, header, batch_header(format, atoms->n, o, header), rows, index, owned, row);
    }
    if (!rc && assignment) {
        size_t at = 0;
        for (size_t j = 0; j < share->m; j++)
            if (share->owned[j])
                batch_encode_assignment_row(o, j, rows + arow * at++);
        rc = write_rows(assignment, header, ptreg_npy_header(PTREG_NPY_I32, atoms->n, o->k, header), rows, index, owned,
                        arow);
    }
    free(index);
    free(rows);
    return rc;
}

/* ---- the runs ---- */

static void reduce_tally(batch_tally *t)
{
    MPI_Allreduce(MPI_IN_PLACE, t->flags, PTREG_ORIENT_NOT_FINITE + 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, t->hist, BATCH_HIST_BINS + 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t->residual_sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t->matched_sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t->registered, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t->pair_terms, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

static double slowest(double ms)
{
    MPI_Allreduce(MPI_IN_PLACE, &ms, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return ms;
}

int batch_mpi_atoms(const cli_comm *c, const char *output, batch_format format, const char *assignment,
                    const batch_atoms *atoms, const ptreg_orientation_options *opt, ptreg_orientations *o,
                    batch_atom_stats *stats)
{
    if (output && (format == BATCH_CSV || format == BATCH_PLY_ASCII)) {
        if (c->rank == 0)
            cli_error("batch", "-o %s: under MPI, outputs are .npy or binary .ply (rows of one size)", output);
        return EXIT_USAGE;
    }
    const ptreg_ranks ranks = {.rank = c->rank, .size = c->size, .max_of_all = max_of_all, .sum_motif = sum_motif};
    ptreg_orientation_share share;
    ptreg_error err;
    ptreg_status st = ptreg_orientations_distributed(&ranks, atoms->xyz, atoms->n, atoms->selected, opt, o, &share,
                                                     &err);
    if (st)
        cli_error("batch", "rank %d: %s", c->rank, err.message);
    int rc = st ? cli_exit_code(st, 0) : EXIT_OK;
    if (!rc) {
        stats->halo = share.halo, stats->halo_rounds = share.halo_rounds;
        batch_tally_rows(o, share.owned, &stats->tally);
        stats->tally.pair_terms = o->stats.pair_terms;
        reduce_tally(&stats->tally);
        stats->neighbor_ms = slowest(o->neighbor_ms);
        stats->register_ms = slowest(o->stats.time_ms);
        stats->grain_ms = slowest(o->grain_ms);
        rc = write_atom_outputs(output, format, assignment, atoms, &share, o);
    }
    ptreg_orientation_share_free(&share);
    return rc;
}

int batch_mpi_pairs(const cli_comm *c, const char *output, size_t first, size_t count, const double *rows,
                    ptreg_batch_stats *stats, uint64_t *stops, double *iterations_sum, double *iterations_max,
                    double *rms_sum)
{
    if (output && !batch_has_extension(output, "npy")) {
        if (c->rank == 0)
            cli_error("batch", "-o %s: under MPI, pair results are written as .npy", output);
        return EXIT_USAGE;
    }
    MPI_Allreduce(MPI_IN_PLACE, stops, PTREG_STOP_SIGMA_FINAL + 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, iterations_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, iterations_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, rms_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &stats->pair_terms, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    stats->time_ms = slowest(stats->time_ms);
    if (!output)
        return EXIT_OK;
    unsigned long long total = first + count;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    size_t *index = malloc((count + 1) * sizeof *index);
    unsigned char *bytes = malloc(72 * count + 1);
    int rc = cli_comm_agree(c, index && bytes ? EXIT_OK : EXIT_RUNTIME);
    if (!rc) {
        for (size_t j = 0; j < count; j++) {
            index[j] = first + j;
            for (int k = 0; k < 9; k++) {
                uint64_t u;
                memcpy(&u, rows + 9 * j + k, 8);
                for (int b = 0; b < 8; b++)
                    bytes[72 * j + 8 * (size_t)k + (size_t)b] = (unsigned char)(u >> (8 * b));
            }
        }
        char header[PTREG_NPY_HEADER_MAX];
        rc = write_rows(output, header, ptreg_npy_header(PTREG_NPY_F64, (size_t)total, 9, header), bytes, index, count,
                        72);
    }
    free(index);
    free(bytes);
    return rc;
}

#endif
