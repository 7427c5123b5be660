/* ptreg batch's atoms in slabs (batch_cli.h): a reconstruction too large
 * for --max-memory is read in pieces and registered one slab after another
 * (ptreg_orientations_slabs), each slab's rows written in place in the
 * outputs, so that memory holds a slab, never the input or the outputs. */
#define _DEFAULT_SOURCE /* pwrite */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/batch_cli.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "ptreg/io.h"

/* What a run takes per atom held (measured: 0.91 KiB with --grain-radius
 * 1 on 10^6 atoms, bench/NOTES.md 147), and the share of a slab's room its
 * own atoms get (the rest: its halo's). */
#define BYTES_PER_ATOM 1024.0
#define SLAB_SHARE 0.75
/* Fewer taken atoms than this in a slab would be all halo. */
#define MIN_SLAB 16
/* Ions decoded at a time. */
#define PIECE_IONS ((size_t)1 << 20)

size_t batch_slab_atoms(const batch_request *r, size_t atoms)
{
    const char *path = r->input;
    if (ptreg_apt_format_from_path(path) == PTREG_APT_AUTO)
        return 0; /* clouds are read whole */
    const double room = r->max_memory_mib * 1048576.0 / BYTES_PER_ATOM;
    if ((double)atoms <= room)
        return 0;
    const double slab = room * SLAB_SHARE;
    return slab >= MIN_SLAB ? (size_t)slab : MIN_SLAB;
}

size_t batch_reconstruction_ions(const char *path)
{
    const ptreg_apt_format f = ptreg_apt_format_from_path(path);
    struct stat st;
    if (f == PTREG_APT_AUTO || stat(path, &st) || !S_ISREG(st.st_mode))
        return 0;
    return (size_t)st.st_size / (f == PTREG_APT_EPOS ? 44 : 16);
}

/* ---- the source: the file in pieces, with --ion's selection ---- */

/* Where a piece's atoms lie, from the first scan: a slab's scan skips the
 * pieces wholly outside its window (a file in evaporation order is nearly
 * sorted by depth, so each slab reads about its own part, not the file). */
typedef struct piece_extent {
    float lo[3], hi[3]; /* of its finite atoms */
    int nonfinite;      /* it holds an atom with a coordinate not finite */
} piece_extent;

typedef struct file_source {
    const batch_request *r;
    const ptreg_ranges *ranges; /* NULL: every ion */
    uint8_t *selected;          /* PIECE_IONS */
    size_t pieces;
    piece_extent *extent; /* per piece */
    uint8_t *skip;        /* per piece */
    int extents_known;    /* a whole scan has filled extent */
    size_t scans, selected_count;
    ptreg_atom_piece_fn fn;
    void *ctx;
} file_source;

static void note_extent(piece_extent *e, const float *xyz, size_t n)
{
    for (int k = 0; k < 3; k++)
        e->lo[k] = INFINITY, e->hi[k] = -INFINITY;
    e->nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        const float *p = xyz + 3 * i;
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2])) {
            e->nonfinite = 1;
            continue;
        }
        for (int k = 0; k < 3; k++)
            e->lo[k] = fminf(e->lo[k], p[k]), e->hi[k] = fmaxf(e->hi[k], p[k]);
    }
}

static ptreg_status hand_piece(void *ctx, const ptreg_apt *piece, size_t first, ptreg_error *err)
{
    file_source *f = ctx;
    if (!f->extents_known)
        note_extent(&f->extent[first / PIECE_IONS], piece->xyz, piece->n);
    const uint8_t *selected = NULL;
    if (f->ranges) {
        const size_t count = batch_select_piece(f->r->a, f->ranges, piece->mq, piece->n, f->selected);
        f->selected_count += f->scans == 0 ? count : 0;
        selected = f->selected;
    }
    return f->fn(f->ctx, first, piece->n, piece->xyz, selected, err);
}

/* The pieces a window needs none of; NULL when every piece is read. */
static const uint8_t *pieces_to_skip(file_source *f, const ptreg_atom_window *w)
{
    if (!w || !f->extents_known)
        return NULL;
    for (size_t p = 0; p < f->pieces; p++) {
        const piece_extent *e = &f->extent[p];
        const int inside = e->hi[w->axis] >= w->lo && e->lo[w->axis] < w->hi;
        f->skip[p] = !inside && !(w->nonfinite && e->nonfinite);
    }
    return f->skip;
}

static ptreg_status scan_file(void *src, const ptreg_atom_window *window, ptreg_atom_piece_fn fn, void *ctx,
                              ptreg_error *err)
{
    file_source *f = src;
    f->fn = fn, f->ctx = ctx;
    ptreg_status st = ptreg_apt_read_pieces(f->r->input, PTREG_APT_AUTO, PIECE_IONS, pieces_to_skip(f, window),
                                            hand_piece, f, err);
    f->extents_known |= !st;
    f->scans++;
    return st;
}

/* ---- the outputs, written in place ---- */

typedef struct placed_output {
    const char *path;
    ptreg_atomic_file af;
    int open;
    size_t header, row; /* bytes */
} placed_output;

static int open_placed(placed_output *p, const char *header, size_t header_bytes, size_t row)
{
    ptreg_error err;
    if (ptreg_atomic_open(p->path, &p->af, &err)) {
        cli_error("batch", "%s", err.message);
        return EXIT_RUNTIME;
    }
    p->open = 1, p->header = header_bytes, p->row = row;
    if (fwrite(header, 1, header_bytes, p->af.fp) != header_bytes || fflush(p->af.fp)) {
        cli_error("batch", "%s: cannot write", p->path);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* Rows rows[j] for atoms index[j] (increasing), a write per run of
 * consecutive atoms. */
static int write_placed(placed_output *p, const unsigned char *rows, const size_t *index, size_t count)
{
    const int fd = fileno(p->af.fp);
    for (size_t j = 0; j < count;) {
        size_t end = j + 1;
        while (end < count && index[end] == index[end - 1] + 1)
            end++;
        const size_t bytes = (end - j) * p->row;
        const off_t at = (off_t)(p->header + index[j] * p->row);
        for (size_t done = 0; done < bytes;) {
            const ssize_t w = pwrite(fd, rows + j * p->row + done, bytes - done, at + (off_t)done);
            if (w <= 0) {
                cli_error("batch", "%s: cannot write", p->path);
                return EXIT_RUNTIME;
            }
            done += (size_t)w;
        }
        j = end;
    }
    return EXIT_OK;
}

static int close_placed(placed_output *p, int rc)
{
    if (!p->open)
        return rc;
    p->open = 0;
    if (rc) {
        ptreg_atomic_abort(&p->af);
        return rc;
    }
    ptreg_error err;
    if (ptreg_atomic_commit(&p->af, &err)) {
        cli_error("batch", "%s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* ---- each slab's answers ---- */

typedef struct stream_run {
    const batch_request *r;
    batch_format format;
    size_t n;
    placed_output out, assignment;
    atoms_report *rep;
    ptreg_orientations *summary; /* the motif and the counts the report names */
    size_t *index;               /* a slab's owned atoms */
    unsigned char *rows;
    int opened, rc;
} stream_run;

/* The first slab opens the outputs: a PLY's header names the colour key,
 * which the motif's symmetry decides. */
static int open_outputs(stream_run *s, const ptreg_orientations *o)
{
    char header[1024];
    int rc = EXIT_OK;
    if (s->r->output) {
        s->out.path = s->r->output;
        rc = open_placed(&s->out, header, batch_header(s->format, s->n, o, header), batch_row_bytes(s->format));
    }
    const char *assignment = cli_string(s->r->a, "assignment", NULL);
    if (!rc && assignment) {
        s->assignment.path = assignment;
        rc = open_placed(&s->assignment, header, ptreg_npy_header(PTREG_NPY_I32, s->n, o->k, header), 4 * o->k);
    }
    return rc;
}

static int keep_summary(stream_run *s, const ptreg_orientations *o)
{
    ptreg_orientations *sum = s->summary;
    if (!sum->motif) {
        sum->motif = malloc(3 * o->motif_points * sizeof *sum->motif);
        if (!sum->motif) {
            cli_error("batch", "out of memory");
            return EXIT_RUNTIME;
        }
        memcpy(sum->motif, o->motif, 3 * o->motif_points * sizeof *sum->motif);
        sum->motif_points = o->motif_points, sum->k = o->k;
        memcpy(sum->symmetry, o->symmetry, sizeof sum->symmetry);
        sum->symmetry_count = o->symmetry_count, sum->starts = o->starts;
    }
    sum->pools += o->pools;
    sum->stats.isa = o->stats.isa;
    sum->stats.kernel_ms += o->stats.kernel_ms;
    return EXIT_OK;
}

static int write_slab_rows(stream_run *s, const ptreg_orientations *o, const ptreg_orientation_share *share,
                           const float *xyz)
{
    size_t owned = 0;
    for (size_t j = 0; j < share->m; j++)
        if (share->owned[j])
            s->index[owned++] = share->atom[j];
    int rc = EXIT_OK;
    if (s->out.open) {
        for (size_t j = 0, at = 0; j < share->m; j++)
            if (share->owned[j])
                batch_encode_row(s->format, xyz + 3 * j, o, j, s->rows + s->out.row * at++);
        rc = write_placed(&s->out, s->rows, s->index, owned);
    }
    if (!rc && s->assignment.open) {
        for (size_t j = 0, at = 0; j < share->m; j++)
            if (share->owned[j])
                batch_encode_assignment_row(o, j, s->rows + s->assignment.row * at++);
        rc = write_placed(&s->assignment, s->rows, s->index, owned);
    }
    return rc;
}

static ptreg_status take_slab(void *ctx, const ptreg_orientations *o, const ptreg_orientation_share *share,
                              const float *xyz, ptreg_error *err)
{
    stream_run *s = ctx;
    const size_t row = batch_row_bytes(s->format) > 4 * o->k ? batch_row_bytes(s->format) : 4 * o->k;
    size_t *index = realloc(s->index, (share->m + 1) * sizeof *index);
    s->index = index ? index : s->index;
    unsigned char *rows = realloc(s->rows, (share->m + 1) * row);
    s->rows = rows ? rows : s->rows;
    int rc = index && rows ? EXIT_OK : EXIT_RUNTIME;
    if (rc)
        cli_error("batch", "out of memory for a slab of %zu atoms", share->m);
    if (!rc && !s->opened)
        s->opened = 1, rc = open_outputs(s, o);
    rc = rc ? rc : keep_summary(s, o);
    rc = rc ? rc : write_slab_rows(s, o, share, xyz);
    batch_atom_stats *st = &s->rep->s;
    st->neighbor_ms += o->neighbor_ms, st->register_ms += o->stats.time_ms, st->grain_ms += o->grain_ms;
    batch_tally_rows(o, share->owned, &st->tally);
    st->tally.pair_terms += o->stats.pair_terms;
    st->halo = share->halo > st->halo ? share->halo : st->halo;
    st->halo_rounds = share->halo_rounds > st->halo_rounds ? share->halo_rounds : st->halo_rounds;
    s->rep->slabs++;
    s->rc = rc;
    return rc ? ptreg_error_set(err, PTREG_ERR_IO, "batch: a slab's outputs failed") : PTREG_OK;
}

/* ---- the run ---- */

static int refuse_for_slabs(const batch_request *r, batch_format format, size_t n)
{
    static const char *const whole[][2] = {
        {"html", "raise it, or draw a part of the reconstruction"},
        {"grains-out", "raise it, or map the grains of a part"},
        {"estimate-motif", "raise it, or estimate the motif on a part (--motif-out) and give it as --motif-file"}};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        if (cli_has(r->a, whole[i][0])) {
            cli_error("batch",
                      "--%s takes every atom at once, and %s's %zu atoms need more than --max-memory %g MiB: %s",
                      whole[i][0], r->input, n, r->max_memory_mib, whole[i][1]);
            return EXIT_USAGE;
        }
    if (r->output && (format == BATCH_CSV || format == BATCH_PLY_ASCII)) {
        cli_error("batch",
                  "-o %s: %s is registered in slabs (more than --max-memory): its rows are written in place, "
                  "as .npy or binary .ply",
                  r->output, r->input);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int batch_stream_atoms(const batch_request *r, batch_format format, size_t slab_atoms,
                       const ptreg_orientation_options *opt, batch_atoms *atoms, atoms_report *rep,
                       ptreg_orientations *summary)
{
    int rc = refuse_for_slabs(r, format, atoms->n);
    ptreg_ranges ranges;
    const int by_ion = cli_has(r->a, "ranges");
    rc = rc ? rc : by_ion ? batch_read_ranges(r->a, r->input, &ranges) : EXIT_OK;
    if (rc)
        return rc;
    const size_t pieces = (atoms->n + PIECE_IONS - 1) / PIECE_IONS;
    file_source f = {.r = r,
                     .ranges = by_ion ? &ranges : NULL,
                     .selected = by_ion ? malloc(PIECE_IONS) : NULL,
                     .pieces = pieces,
                     .extent = malloc((pieces + 1) * sizeof *f.extent),
                     .skip = malloc(pieces + 1)};
    stream_run s = {.r = r, .format = format, .n = atoms->n, .rep = rep, .summary = summary};
    const ptreg_atom_source src = {scan_file, &f};
    ptreg_error err;
    ptreg_status st = (by_ion && !f.selected) || !f.extent || !f.skip
                          ? ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory")
                          : PTREG_OK;
    cli_device_call_start();
    st = st ? st : ptreg_orientations_slabs(&src, slab_atoms, opt, take_slab, &s, &err);
    cli_device_call_stop();
    rc = s.rc;
    if (st && !rc) {
        cli_error("batch", "%s", err.message);
        rc = cli_exit_code(st, 1);
    }
    rc = close_placed(&s.out, rc);
    rc = close_placed(&s.assignment, rc);
    atoms->by_ion = by_ion, atoms->selected_count = f.selected_count;
    free(f.selected);
    free(f.extent);
    free(f.skip);
    free(s.index);
    free(s.rows);
    if (by_ion)
        ptreg_ranges_free(&ranges);
    return rc;
}
