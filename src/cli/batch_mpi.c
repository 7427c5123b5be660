/* ptreg batch on several processes (mpirun): every rank reads the input,
 * the atoms are divided into slabs along the longest axis, each rank
 * registers the atoms of its slab with a halo of neighbors around it, and
 * the ranks write one output in atom order with MPI-IO. An atom's answer
 * depends only on its neighborhood and the motif, so the output has the
 * same bits as one process once every neighborhood is the same: a rank
 * checks that each atom's farthest neighbor is nearer than its halo's
 * edge, and all ranks widen the halo and start again when one is not. The
 * motif estimate's sums are integers, added up over the ranks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch_cli.h"
#include "ptreg/io.h"

#ifdef PTREG_HAVE_MPI
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
#endif

void batch_mpi_split(const batch_comm *c, size_t n, size_t *first, size_t *count)
{
    const size_t r = (size_t)c->rank, R = (size_t)c->size, base = n / R, extra = n % R;
    *first = r * base + (r < extra ? r : extra);
    *count = base + (r < extra);
}

#ifndef PTREG_HAVE_MPI

int batch_comm_open(batch_comm *c)
{
    c->rank = 0, c->size = 1, c->joined = 0;
    return EXIT_OK;
}

int batch_comm_close(batch_comm *c, int rc)
{
    (void)c;
    return rc;
}

int batch_mpi_agree(const batch_comm *c, int rc)
{
    (void)c;
    return rc;
}

/* Never called: a build without MPI runs one process. */
int batch_mpi_atoms(const batch_comm *c, const char *output, batch_format format, const char *assignment,
                    const batch_atoms *atoms, const ptreg_orientation_options *opt, ptreg_orientations *o,
                    batch_atom_stats *stats)
{
    (void)c, (void)output, (void)format, (void)assignment, (void)atoms, (void)opt, (void)o, (void)stats;
    return EXIT_RUNTIME;
}

int batch_mpi_pairs(const batch_comm *c, const char *output, size_t first, size_t count, const double *rows,
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
static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int batch_comm_open(batch_comm *c)
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

int batch_comm_close(batch_comm *c, int rc)
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

int batch_mpi_agree(const batch_comm *c, int rc) { return c->size == 1 ? rc : worst_of_all(rc); }

/* ---- slabs ---- */

#define SLAB_BINS 65536

static int finite3(const float *p) { return isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]); }

/* The slabs: along the longest axis of the taken atoms, boundaries at bin
 * edges of a fine histogram so that the ranks get about as many atoms each
 * (every rank computes the same from the same input). */
typedef struct slabs {
    int axis;
    double lo, hi;     /* the taken atoms' extent along the axis */
    double *bound;     /* size + 1: slab r is [bound[r], bound[r + 1]) */
    size_t taken;
    double volume;     /* of the taken atoms' bounding box */
} slabs;

static int taken_atom(const batch_atoms *a, size_t i)
{
    return (!a->selected || a->selected[i]) && finite3(a->xyz + 3 * i);
}

static int make_slabs(const batch_comm *c, const batch_atoms *a, slabs *s)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    s->taken = 0;
    for (size_t i = 0; i < a->n; i++)
        if (taken_atom(a, i)) {
            s->taken++;
            for (int k = 0; k < 3; k++)
                lo[k] = fmin(lo[k], a->xyz[3 * i + k]), hi[k] = fmax(hi[k], a->xyz[3 * i + k]);
        }
    s->axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[s->axis] - lo[s->axis])
            s->axis = k;
    s->lo = lo[s->axis], s->hi = hi[s->axis];
    s->volume = 1.0;
    for (int k = 0; k < 3; k++)
        s->volume *= fmax(hi[k] - lo[k], 1e-9);
    s->bound = malloc((size_t)(c->size + 1) * sizeof *s->bound);
    uint64_t *hist = calloc(SLAB_BINS, sizeof *hist);
    if (!s->bound || !hist) {
        free(hist);
        cli_error("batch", "out of memory");
        return EXIT_RUNTIME;
    }
    const double width = s->hi > s->lo ? (s->hi - s->lo) / SLAB_BINS : 1.0;
    for (size_t i = 0; i < a->n; i++)
        if (taken_atom(a, i)) {
            const double b = (a->xyz[3 * i + s->axis] - s->lo) / width;
            hist[b < SLAB_BINS - 1 ? (size_t)b : SLAB_BINS - 1]++;
        }
    s->bound[0] = -INFINITY, s->bound[c->size] = INFINITY;
    uint64_t below = 0;
    int r = 1;
    for (size_t b = 0; b < SLAB_BINS && r < c->size; b++) {
        below += hist[b];
        while (r < c->size && below * (uint64_t)c->size >= (uint64_t)r * s->taken)
            s->bound[r++] = s->lo + (double)(b + 1) * width;
    }
    while (r < c->size)
        s->bound[r++] = INFINITY;
    free(hist);
    return EXIT_OK;
}

/* The first halo: a few times the radius of a ball holding k atoms at the
 * mean density of the taken atoms' box (or the search radius). */
static double first_halo(const slabs *s, const ptreg_orientation_options *o)
{
    const double density = s->taken ? (double)s->taken / s->volume : 1.0;
    const double knn = 2.0 * cbrt(3.0 * (double)(o->k + 1) / (4.0 * 3.14159265358979323846 * density));
    const double neighbors = o->radius > 0 ? o->radius : knn;
    /* grain pooling: the candidate cells' corners, their pools' radius, and
     * the neighborhoods of the atoms in those pools and around the atom */
    return o->grain_radius > 0 ? (2.0 * sqrt(3.0) + 1.0) * o->grain_radius + 2.0 * neighbors : neighbors;
}

/* This rank's atoms: its slab's and the halo's (taken ones only, plus,
 * on rank 0, every atom not taken, which it flags), in atom order. */
typedef struct local_set {
    size_t m;
    size_t *atom;      /* the atom of each local index */
    float *xyz;
    uint8_t *selected, *owned;
    double low, high;  /* the region the local set covers along the axis */
} local_set;

static void local_free(local_set *l)
{
    free(l->atom);
    free(l->xyz);
    free(l->selected);
    free(l->owned);
    memset(l, 0, sizeof *l);
}

static int owner(const batch_atoms *a, const slabs *s, int ranks, size_t i)
{
    if (!taken_atom(a, i))
        return 0;
    const double x = a->xyz[3 * i + s->axis];
    int r = 0;
    while (r + 1 < ranks && x >= s->bound[r + 1])
        r++;
    return r;
}

static int build_local(const batch_comm *c, const batch_atoms *a, const slabs *s, double halo, local_set *l)
{
    memset(l, 0, sizeof *l);
    l->low = s->bound[c->rank] - halo, l->high = s->bound[c->rank + 1] + halo;
    size_t cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        l->m = 0;
        for (size_t i = 0; i < a->n; i++) {
            const int own = owner(a, s, c->size, i) == c->rank;
            const double x = a->xyz[3 * i + s->axis];
            if (!own && !(taken_atom(a, i) && x >= l->low && x < l->high))
                continue;
            if (pass) {
                l->atom[l->m] = i;
                memcpy(l->xyz + 3 * l->m, a->xyz + 3 * i, 3 * sizeof(float));
                l->selected[l->m] = !a->selected || a->selected[i];
                l->owned[l->m] = (uint8_t)own;
            }
            l->m++;
        }
        if (pass)
            break;
        cap = l->m + 1;
        l->atom = malloc(cap * sizeof *l->atom);
        l->xyz = malloc(3 * cap * sizeof *l->xyz);
        l->selected = malloc(cap);
        l->owned = malloc(cap);
        if (!l->atom || !l->xyz || !l->selected || !l->owned) {
            cli_error("batch", "out of memory for %zu atoms", l->m);
            return EXIT_RUNTIME;
        }
    }
    return EXIT_OK;
}

/* Whether every owned atom's answer is certainly a single process's: all
 * it depends on (its reach: its farthest neighbor, or with grain pooling
 * the pools it chose from) nearer than the local region's edge, and the
 * region holding more than k taken atoms (or being everything). */
static int neighborhoods_exact(const local_set *l, const slabs *s, const ptreg_orientations *o, size_t k,
                                double radius, double grain_radius)
{
    if (radius > 0 && grain_radius == 0)
        return 1; /* halo = radius: every atom nearer than it is here */
    size_t taken = 0;
    for (size_t j = 0; j < l->m; j++)
        taken += l->selected[j] && finite3(l->xyz + 3 * j);
    const int everything = l->low <= s->lo && l->high > s->hi;
    if (taken <= k && !everything)
        return 0;
    for (size_t j = 0; j < l->m; j++) {
        if (!l->owned[j] || !isfinite(o->reach[j]))
            continue;
        const double x = l->xyz[3 * j + s->axis];
        const double gap = fmin(l->low <= s->lo ? INFINITY : x - l->low, l->high > s->hi ? INFINITY : l->high - x);
        if (!((double)o->reach[j] < gap))
            return 0;
    }
    return 1;
}

static ptreg_status combine_sums(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err)
{
    (void)ctx;
    if (MPI_Allreduce(MPI_IN_PLACE, sum, (int)(3 * points), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(MPI_IN_PLACE, count, (int)points, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "MPI: adding up the motif estimate failed");
    return PTREG_OK;
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
    int ok = MPI_File_open(MPI_COMM_WORLD, tmp, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) ==
             MPI_SUCCESS;
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
        bad |= MPI_File_set_view(fh, (MPI_Offset)header_bytes, MPI_BYTE, view, "native", MPI_INFO_NULL) !=
               MPI_SUCCESS;
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

static int write_atom_outputs(const char *output, batch_format format, const char *assignment,
                              const batch_atoms *atoms, const local_set *l, const ptreg_orientations *o)
{
    size_t owned = 0;
    for (size_t j = 0; j < l->m; j++)
        owned += l->owned[j];
    size_t *index = malloc((owned + 1) * sizeof *index);
    const size_t row = batch_row_bytes(format), arow = 4 * o->k;
    unsigned char *rows = malloc((owned + 1) * (row > arow ? row : arow));
    int rc = worst_of_all(index && rows ? EXIT_OK : EXIT_RUNTIME);
    char header[1024];
    if (!rc && output) {
        size_t at = 0;
        for (size_t j = 0; j < l->m; j++)
            if (l->owned[j]) {
                index[at] = l->atom[j];
                batch_encode_row(format, atoms->xyz + 3 * l->atom[j], o, j, rows + row * at++);
            }
        rc = write_rows(output, header, batch_header(format, atoms->n, o, header), rows, index, owned, row);
    }
    if (!rc && assignment) {
        size_t at = 0;
        for (size_t j = 0; j < l->m; j++)
            if (l->owned[j]) {
                int32_t a[256];
                batch_assignment_row(o, j, a);
                for (size_t m = 0; m < o->k; m++)
                    for (int b = 0; b < 4; b++)
                        rows[arow * at + 4 * m + (size_t)b] = (unsigned char)((uint32_t)a[m] >> (8 * b));
                at++;
            }
        rc = write_rows(assignment, header, ptreg_npy_header(PTREG_NPY_I32, atoms->n, o->k, header), rows, index,
                        owned, arow);
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

/* Orientations of the local set, widening the halo until every owned
 * neighborhood is exact on every rank. */
static int compute_local(const batch_comm *c, const batch_atoms *atoms, const slabs *s,
                         const ptreg_orientation_options *opt_in, local_set *l, ptreg_orientations *o,
                         batch_atom_stats *stats)
{
    stats->halo = first_halo(s, opt_in);
    for (stats->halo_rounds = 1;; stats->halo_rounds++) {
        const double halo = stats->halo;
        int rc = batch_mpi_agree(c, build_local(c, atoms, s, halo, l));
        if (rc)
            return rc;
        ptreg_orientation_options opt = *opt_in;
        opt.registered = l->owned;
        opt.combine_motif_sums = combine_sums;
        ptreg_error err;
        ptreg_status st = ptreg_orientations_compute(l->xyz, l->m, l->selected, &opt, o, &err);
        if (st)
            cli_error("batch", "rank %d: %s", c->rank, err.message);
        rc = batch_mpi_agree(c, st ? cli_exit_code(st, 0) : EXIT_OK);
        if (rc)
            return rc;
        const int exact = !batch_mpi_agree(c, !neighborhoods_exact(l, s, o, opt.k, opt.radius, opt.grain_radius));
        if (exact)
            return EXIT_OK;
        ptreg_orientations_free(o);
        local_free(l);
        stats->halo = 2.0 * halo;
    }
}

int batch_mpi_atoms(const batch_comm *c, const char *output, batch_format format, const char *assignment,
                    const batch_atoms *atoms, const ptreg_orientation_options *opt, ptreg_orientations *o,
                    batch_atom_stats *stats)
{
    if (output && (format == BATCH_CSV || format == BATCH_PLY_ASCII)) {
        if (c->rank == 0)
            cli_error("batch", "-o %s: under MPI, outputs are .npy or binary .ply (rows of one size)", output);
        return EXIT_USAGE;
    }
    slabs s = {0};
    local_set l;
    memset(&l, 0, sizeof l);
    int rc = batch_mpi_agree(c, make_slabs(c, atoms, &s));
    rc = rc ? rc : compute_local(c, atoms, &s, opt, &l, o, stats);
    if (!rc) {
        batch_tally_rows(o, l.owned, &stats->tally);
        stats->tally.pair_terms = o->stats.pair_terms;
        reduce_tally(&stats->tally);
        stats->neighbor_ms = slowest(o->neighbor_ms);
        stats->register_ms = slowest(o->stats.time_ms);
        rc = write_atom_outputs(output, format, assignment, atoms, &l, o);
    }
    local_free(&l);
    free(s.bound);
    return rc;
}

int batch_mpi_pairs(const batch_comm *c, const char *output, size_t first, size_t count, const double *rows,
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
    int rc = batch_mpi_agree(c, index && bytes ? EXIT_OK : EXIT_RUNTIME);
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
        rc = write_rows(output, header, ptreg_npy_header(PTREG_NPY_F64, (size_t)total, 9, header), bytes, index,
                        count, 72);
    }
    free(index);
    free(bytes);
    return rc;
}

#endif
