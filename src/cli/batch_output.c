/* ptreg batch's per-atom outputs: .npy (six float32 columns), PLY (the
 * atoms with their results and an orientation colour) and CSV; rows of
 * fixed size in the binary formats, so that MPI ranks can write theirs in
 * place. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/batch_cli.h"
#include "cli/files.h"
#include "cli/report.h"
#include "ptreg/io.h"

#define NPY_COLUMNS 6
/* x y z qw qx qy qz residual matched (float), flag red green blue (uchar) */
#define PLY_ROW (9 * 4 + 4)

int batch_has_extension(const char *path, const char *ext)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strlen(dot + 1) != strlen(ext))
        return 0;
    for (size_t i = 0; ext[i]; i++)
        if (tolower((unsigned char)dot[1 + i]) != ext[i])
            return 0;
    return 1;
}

int batch_output_format(const char *path, int ascii, batch_format *format)
{
    if (batch_has_extension(path, "npy"))
        *format = BATCH_NPY;
    else if (batch_has_extension(path, "ply"))
        *format = ascii ? BATCH_PLY_ASCII : BATCH_PLY;
    else if (batch_has_extension(path, "csv") || batch_has_extension(path, "txt"))
        *format = BATCH_CSV;
    else {
        cli_error("batch", "-o %s: orientations are written as .npy, .ply or .csv", path);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

size_t batch_row_bytes(batch_format format)
{
    return format == BATCH_NPY ? NPY_COLUMNS * 4 : format == BATCH_PLY ? PLY_ROW : 0;
}

size_t batch_header(batch_format format, size_t n, const ptreg_orientations *o, char *buf)
{
    if (format == BATCH_NPY)
        return ptreg_npy_header(PTREG_NPY_F32, n, NPY_COLUMNS, buf);
    if (format == BATCH_CSV)
        return (size_t)sprintf(buf, "x,y,z,qw,qx,qy,qz,residual,matched,flag\n");
    return (size_t)sprintf(buf,
                           "ply\nformat %s 1.0\ncomment ptreg batch: orientations (q takes the neighborhood onto "
                           "the motif), colour: %s\nelement vertex %zu\n"
                           "property float x\nproperty float y\nproperty float z\nproperty float qw\n"
                           "property float qx\nproperty float qy\nproperty float qz\nproperty float residual\n"
                           "property float matched\nproperty uchar flag\nproperty uchar red\n"
                           "property uchar green\nproperty uchar blue\nend_header\n",
                           format == BATCH_PLY ? "binary_little_endian" : "ascii", ptreg_orientation_color_key(o), n);
}

static void put_f32(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    for (int b = 0; b < 4; b++)
        p[b] = (unsigned char)(u >> (8 * b));
}

void batch_encode_row(batch_format format, const float xyz[3], const ptreg_orientations *o, size_t i,
                      unsigned char *dst)
{
    float v[9] = {xyz[0],          xyz[1],          xyz[2],         o->q[4 * i],  o->q[4 * i + 1],
                  o->q[4 * i + 2], o->q[4 * i + 3], o->residual[i], o->matched[i]};
    if (format == BATCH_NPY) {
        for (int c = 0; c < NPY_COLUMNS; c++)
            put_f32(dst + 4 * c, v[3 + c]);
        return;
    }
    for (int c = 0; c < 9; c++)
        put_f32(dst + 4 * c, v[c]);
    dst[36] = o->flag[i];
    ptreg_orientation_color(o, i, dst + 37);
}

static void print_float(FILE *f, float v, const char *sep)
{
    if (isfinite(v))
        fprintf(f, "%.9g%s", (double)v, sep);
    else
        fprintf(f, "nan%s", sep);
}

void batch_print_row(FILE *f, batch_format format, const float xyz[3], const ptreg_orientations *o, size_t i)
{
    const char *sep = format == BATCH_CSV ? "," : " ";
    const float v[9] = {xyz[0],          xyz[1],          xyz[2],         o->q[4 * i],  o->q[4 * i + 1],
                        o->q[4 * i + 2], o->q[4 * i + 3], o->residual[i], o->matched[i]};
    for (int c = 0; c < 9; c++)
        print_float(f, v[c], sep);
    if (format == BATCH_CSV) {
        fprintf(f, "%s\n", ptreg_orientation_flag_name((ptreg_orientation_flag)o->flag[i]));
        return;
    }
    unsigned char rgb[3];
    ptreg_orientation_color(o, i, rgb);
    fprintf(f, "%u %u %u %u\n", o->flag[i], rgb[0], rgb[1], rgb[2]);
}

int batch_write_orientations(const char *path, batch_format format, const batch_atoms *atoms,
                             const ptreg_orientations *o)
{
    ptreg_error err;
    ptreg_atomic_file af;
    if (ptreg_atomic_open(path, &af, &err)) {
        cli_error("batch", "%s", err.message);
        return EXIT_RUNTIME;
    }
    char header[1024];
    fwrite(header, 1, batch_header(format, atoms->n, o, header), af.fp);
    const size_t bytes = batch_row_bytes(format);
    for (size_t i = 0; i < atoms->n; i++) {
        unsigned char row[PLY_ROW];
        if (bytes) {
            batch_encode_row(format, atoms->xyz + 3 * i, o, i, row);
            fwrite(row, 1, bytes, af.fp);
        } else {
            batch_print_row(af.fp, format, atoms->xyz + 3 * i, o, i);
        }
    }
    if (ptreg_atomic_commit(&af, &err)) {
        cli_error("batch", "%s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

void batch_assignment_row(const ptreg_orientations *o, size_t i, int32_t *row)
{
    for (size_t j = 0; j < o->k; j++) {
        const uint16_t m = o->assignment[i * o->k + j];
        row[j] = m == 65535 ? -1 : (int32_t)m;
    }
}

void batch_encode_assignment_row(const ptreg_orientations *o, size_t i, unsigned char *dst)
{
    int32_t a[256];
    batch_assignment_row(o, i, a);
    for (size_t m = 0; m < o->k; m++)
        for (int b = 0; b < 4; b++)
            dst[4 * m + (size_t)b] = (unsigned char)((uint32_t)a[m] >> (8 * b));
}

int batch_write_assignment(const char *path, const ptreg_orientations *o)
{
    int32_t *rows = malloc((o->n * o->k + 1) * sizeof *rows);
    if (!rows) {
        cli_error("batch", "out of memory for the assignment of %zu atoms", o->n);
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < o->n; i++)
        batch_assignment_row(o, i, rows + i * o->k);
    ptreg_error err;
    ptreg_status st = ptreg_npy_write(path, PTREG_NPY_I32, rows, o->n, o->k, &err);
    free(rows);
    if (st)
        cli_error("batch", "%s", err.message);
    return st ? cli_exit_code(st, 0) : EXIT_OK;
}

/* The atoms with finite coordinates (a .pos may hold others: flag
 * not_finite), and their orientation colours; their count. */
static size_t finite_atoms(const batch_atoms *atoms, const ptreg_orientations *o, float *xyz, uint8_t *rgb)
{
    size_t m = 0;
    for (size_t i = 0; i < atoms->n; i++) {
        const float *p = atoms->xyz + 3 * i;
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
            continue;
        memcpy(xyz + 3 * m, p, 3 * sizeof *p);
        ptreg_orientation_color(o, i, rgb + 3 * m++);
    }
    return m;
}

int batch_report_orientations(const batch_atoms *atoms, const ptreg_orientations *o)
{
    ptreg_report *r = cli_report();
    if (!r)
        return EXIT_OK;
    const size_t n = atoms->n ? atoms->n : 1;
    float *xyz = malloc(n * 3 * sizeof *xyz);
    uint8_t *rgb = malloc(n * 3);
    ptreg_error err;
    ptreg_status st = xyz && rgb ? PTREG_OK
                                 : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for %zu atoms", atoms->n);
    /* the page draws the key the PLY's colours were made with: the
     * standard triangle for cubic motifs, the axis' components otherwise */
    const char *key = strcmp(ptreg_orientation_color_key(o), "inverse pole figure of z") ? "axis" : "ipf";
    const size_t m = st ? 0 : finite_atoms(atoms, o, xyz, rgb);
    st = st ? st : ptreg_report_add_cloud_rgb(r, "atoms", xyz, m, rgb, &err);
    st = st ? st : ptreg_report_set_key(r, key, &err);
    free(xyz);
    free(rgb);
    return cli_report_check(st, &err);
}

int batch_write_pair_rows(const char *path, const double *rows, size_t n)
{
    ptreg_error err;
    if (batch_has_extension(path, "npy")) {
        ptreg_status st = ptreg_npy_write(path, PTREG_NPY_F64, rows, n, 9, &err);
        if (st)
            cli_error("batch", "%s", err.message);
        return st ? cli_exit_code(st, 0) : EXIT_OK;
    }
    ptreg_atomic_file af;
    if (ptreg_atomic_open(path, &af, &err)) {
        cli_error("batch", "%s", err.message);
        return EXIT_RUNTIME;
    }
    fprintf(af.fp, "qw,qx,qy,qz,tx,ty,tz,rms,iterations\n");
    for (size_t i = 0; i < n; i++) {
        const double *v = rows + 9 * i;
        fprintf(af.fp, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.9g,%d\n", v[0], v[1], v[2], v[3], v[4], v[5], v[6],
                v[7], (int)v[8]);
    }
    if (ptreg_atomic_commit(&af, &err)) {
        cli_error("batch", "%s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* ---- summaries ---- */

void batch_tally_rows(const ptreg_orientations *o, const uint8_t *rows, batch_tally *t)
{
    const double bin = ptreg_motif_shortest_distance(o->motif, o->motif_points) / BATCH_HIST_BINS;
    for (size_t i = 0; i < o->n; i++) {
        if (rows && !rows[i])
            continue;
        t->flags[o->flag[i]]++;
        if (!isfinite(o->residual[i]))
            continue;
        const double b = o->residual[i] / bin;
        t->hist[b < BATCH_HIST_BINS ? (size_t)b : BATCH_HIST_BINS]++;
        t->residual_sum += llround(o->residual[i] * 4294967296.0);
        t->matched_sum += llround(o->matched[i] * 4294967296.0);
        t->registered++;
    }
}
