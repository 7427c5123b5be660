/* LDDMM results: the template landmarks with their initial momenta and the
 * flow's parameters, as VTK legacy POLYDATA (point data InitialMomentum,
 * field data sigma, time_points, integrator) or CSV (x,y,z,px,py,pz with a
 * `# ptreg lddmm` parameter line). Both are read back by `ptreg warp`. */
#include "ptreg/io.h"
#include "ptreg/lddmm_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/testing.h"

static const char *integrator_name(ptreg_lddmm_integrator i) { return i == PTREG_LDDMM_RK2 ? "rk2" : "euler"; }

static void write_vtk(FILE *f, const ptreg_lddmm_model *m)
{
    const double *q0 = m->q0, *p0 = m->p0;
    const size_t n = m->n;
    fprintf(f,
            "# vtk DataFile Version 3.0\nptreg lddmm: template landmarks and initial momenta\nASCII\n"
            "DATASET POLYDATA\nFIELD FieldData 3\nsigma 1 1 double\n%.17g\ntime_points 1 1 int\n%d\n"
            "integrator 1 1 int\n%d\nPOINTS %zu double\n",
            m->sigma, m->time_points, m->integrator == PTREG_LDDMM_RK2 ? 1 : 0, n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.17g %.17g %.17g\n", q0[3 * i], q0[3 * i + 1], q0[3 * i + 2]);
    fprintf(f, "POINT_DATA %zu\nVECTORS InitialMomentum double\n", n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.17g %.17g %.17g\n", p0[3 * i], p0[3 * i + 1], p0[3 * i + 2]);
}

static void write_csv(FILE *f, const ptreg_lddmm_model *m)
{
    const double *q0 = m->q0, *p0 = m->p0;
    fprintf(f, "# ptreg lddmm sigma %.17g time_points %d integrator %s\nx,y,z,px,py,pz\n", m->sigma, m->time_points,
            integrator_name(m->integrator));
    for (size_t i = 0; i < m->n; i++)
        fprintf(f, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n", q0[3 * i], q0[3 * i + 1], q0[3 * i + 2], p0[3 * i],
                p0[3 * i + 1], p0[3 * i + 2]);
}

ptreg_status ptreg_lddmm_model_write(const char *path, const ptreg_lddmm_model *model, ptreg_error *err)
{
    if (!path || !model || !model->q0 || !model->p0 || !model->n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm result write: nothing to write");
    int vtk = io_has_extension(path, "vtk");
    if (!vtk && !io_has_extension(path, "csv") && !io_has_extension(path, "txt"))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: an lddmm result is written as .vtk, .csv or .txt", path);
    ptreg_atomic_file af;
    ptreg_status s = ptreg_atomic_open(path, &af, err);
    if (s)
        return s;
    (vtk ? write_vtk : write_csv)(af.fp, model);
    return ptreg_atomic_commit(&af, err);
}

/* ---- reading ---------------------------------------------------------------- */

static ptreg_status number(const io_in *in, io_text *t, double *v)
{
    io_token tok = {"", 0};
    char q[IO_QUOTE_MAX];
    if (!io_text_next_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends early");
    if (!io_parse_double(tok, v) || !isfinite(*v))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a finite number", io_quote(tok, q));
    return PTREG_OK;
}

static ptreg_status expect_word(const io_in *in, io_text *t, const char *word)
{
    io_token tok = {"", 0};
    char q[IO_QUOTE_MAX];
    if (!io_text_next_token(t, &tok) || !io_token_is_nocase(tok, word))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "expected %s, found '%s'", word,
                            io_text_eof(t) ? "the end" : io_quote(tok, q));
    return PTREG_OK;
}

/* A count the rest of the file can hold: each of its `per` numbers takes at
 * least two bytes. */
static ptreg_status count_value(const io_in *in, io_text *t, size_t per, size_t *n)
{
    double v;
    ptreg_status s = number(in, t, &v);
    if (s)
        return s;
    if (v < 1 || v != floor(v) || v > (double)(io_text_left(t) / (2 * per) + 1))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "count %g is not one the file can hold", v);
    *n = (size_t)v;
    return PTREG_OK;
}

static ptreg_status read_numbers(const io_in *in, io_text *t, double *out, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        ptreg_status s = number(in, t, &out[i]);
        if (s)
            return s;
    }
    return PTREG_OK;
}

/* FIELD name k, then k arrays "name components tuples type" with their
 * values: sigma, time_points and integrator are kept, others skipped. */
static ptreg_status read_field_data(const io_in *in, io_text *t, ptreg_lddmm_model *m, int *seen)
{
    io_token name = {"", 0}, type = {"", 0};
    size_t arrays = 0;
    if (!io_text_next_token(t, &name))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "FIELD lacks a name");
    ptreg_status s = count_value(in, t, 4, &arrays);
    for (size_t a = 0; !s && a < arrays; a++) {
        size_t comps = 0, tuples = 0;
        double v = 0;
        if (!io_text_next_token(t, &name))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "FIELD array %zu lacks a name", a + 1);
        if ((s = count_value(in, t, 1, &comps)) || (s = count_value(in, t, comps, &tuples)))
            return s;
        if (!io_text_next_token(t, &type))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "FIELD array %zu lacks a type", a + 1);
        for (size_t j = 0; !s && j < comps * tuples; j++)
            s = number(in, t, &v);
        if (io_token_is(name, "sigma"))
            m->sigma = v, *seen |= 1;
        else if (io_token_is(name, "time_points"))
            m->time_points = v >= 2 && v <= 100000 ? (int)v : 0, *seen |= 2;
        else if (io_token_is(name, "integrator"))
            m->integrator = v == 1 ? PTREG_LDDMM_RK2 : PTREG_LDDMM_EULER, *seen |= 4;
    }
    return s;
}

static ptreg_status read_points(const io_in *in, io_text *t, ptreg_lddmm_model *m)
{
    io_token type = {"", 0};
    if (m->q0)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a second POINTS section");
    ptreg_status s = count_value(in, t, 6, &m->n);
    if (!s && !io_text_next_token(t, &type))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "POINTS lacks a type");
    if (!s && (!(m->q0 = malloc(3 * m->n * sizeof *m->q0)) || !(m->p0 = malloc(3 * m->n * sizeof *m->p0))))
        return io_fail_line(in, PTREG_ERR_NOMEM, t->line, "out of memory for %zu landmarks", m->n);
    return s ? s : read_numbers(in, t, m->q0, 3 * m->n);
}

static ptreg_status read_point_data(const io_in *in, io_text *t, ptreg_lddmm_model *m, int *seen)
{
    size_t count = 0;
    io_token tok = {"", 0}, name = {"", 0};
    char q[IO_QUOTE_MAX];
    ptreg_status s = count_value(in, t, 3, &count);
    if (s)
        return s;
    if (!m->q0 || count != m->n)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "POINT_DATA %zu does not follow POINTS %zu", count, m->n);
    if ((s = expect_word(in, t, "VECTORS")))
        return s;
    if (!io_text_next_token(t, &name) || !io_token_is(name, "InitialMomentum"))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "VECTORS '%s': expected InitialMomentum", io_quote(name, q));
    if (!io_text_next_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "VECTORS lacks a type");
    *seen |= 8;
    return read_numbers(in, t, m->p0, 3 * m->n);
}

static ptreg_status read_vtk(const io_in *in, io_text *t, ptreg_lddmm_model *m)
{
    io_token tok = {"", 0};
    char q[IO_QUOTE_MAX];
    int seen = 0;
    io_text_next_line(t);
    io_text_next_line(t); /* the magic line and the title */
    ptreg_status s = expect_word(in, t, "ASCII");
    s = s ? s : expect_word(in, t, "DATASET");
    s = s ? s : expect_word(in, t, "POLYDATA");
    while (!s && io_text_next_token(t, &tok)) {
        if (io_token_is_nocase(tok, "FIELD"))
            s = read_field_data(in, t, m, &seen);
        else if (io_token_is_nocase(tok, "POINTS"))
            s = read_points(in, t, m);
        else if (io_token_is_nocase(tok, "POINT_DATA"))
            s = read_point_data(in, t, m, &seen);
        else
            s = io_fail_line(in, PTREG_ERR_FORMAT, t->line, "unexpected '%s'", io_quote(tok, q));
    }
    if (!s && seen != 15)
        s = io_fail_line(in, PTREG_ERR_FORMAT, t->line, "not an lddmm result: no %s",
                         !(seen & 8) ? "InitialMomentum vectors" : "sigma, time_points or integrator field");
    return s;
}

/* "# ptreg lddmm sigma S time_points T integrator I", the column names,
 * then x,y,z,px,py,pz rows. */
static ptreg_status read_csv(const io_in *in, io_text *t, ptreg_lddmm_model *m)
{
    static const char *const words[] = {"#", "ptreg", "lddmm", "sigma"};
    io_token tok = {"", 0};
    double v;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!io_text_token(t, &tok) || !io_token_is(tok, words[i]))
            return io_fail_line(in, PTREG_ERR_FORMAT, 1, "not '# ptreg lddmm sigma S time_points T integrator I'");
    ptreg_status s = number(in, t, &m->sigma);
    s = s ? s : expect_word(in, t, "time_points");
    s = s ? s : number(in, t, &v);
    s = s ? s : expect_word(in, t, "integrator");
    if (s)
        return s;
    m->time_points = v >= 2 && v <= 100000 ? (int)v : 0;
    if (!io_text_token(t, &tok) || !(io_token_is(tok, "euler") || io_token_is(tok, "rk2")))
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "the integrator is not euler or rk2");
    m->integrator = io_token_is(tok, "rk2") ? PTREG_LDDMM_RK2 : PTREG_LDDMM_EULER;
    io_text_next_line(t);
    io_text_next_line(t); /* the column names */
    t->commas = 1;
    size_t rows = 0;
    for (const char *p = t->p; p < t->end; p++)
        rows += *p == '\n';
    rows += t->end > t->p && t->end[-1] != '\n';
    double *vals = rows ? malloc(6 * rows * sizeof *vals) : NULL;
    m->q0 = malloc((rows ? rows : 1) * 3 * sizeof *m->q0);
    m->p0 = malloc((rows ? rows : 1) * 3 * sizeof *m->p0);
    if (!rows)
        s = io_fail_line(in, PTREG_ERR_FORMAT, t->line, "no landmarks");
    else if (!vals || !m->q0 || !m->p0)
        s = io_fail_line(in, PTREG_ERR_NOMEM, t->line, "out of memory for %zu landmarks", rows);
    for (size_t i = 0; !s && i < rows; i++) {
        s = read_numbers(in, t, vals + 6 * i, 6);
        s = s ? s : io_text_no_more(in, t, "six values");
        io_text_next_line(t);
    }
    for (size_t i = 0; !s && i < rows; i++)
        for (int k = 0; k < 3; k++) {
            m->q0[3 * i + (size_t)k] = vals[6 * i + (size_t)k];
            m->p0[3 * i + (size_t)k] = vals[6 * i + 3 + (size_t)k];
        }
    m->n = rows;
    free(vals);
    return s;
}

ptreg_status ptreg_lddmm_model_read_memory(const void *data, size_t size, const char *name, ptreg_lddmm_model *m,
                                           ptreg_error *err)
{
    memset(m, 0, sizeof *m);
    io_in in = {data, size, name, err, NULL};
    io_text t;
    io_text_init(&t, data, size);
    ptreg_status s;
    if (size >= 5 && !memcmp(data, "# vtk", 5))
        s = read_vtk(&in, &t, m);
    else if (size >= 13 && !memcmp(data, "# ptreg lddmm", 13))
        s = read_csv(&in, &t, m);
    else
        s = io_fail_line(&in, PTREG_ERR_FORMAT, 1,
                         "not an lddmm result (VTK with InitialMomentum, or CSV from "
                         "ptreg lddmm)");
    if (!s && (!(m->sigma > 0) || m->time_points < 2))
        s = io_fail_line(&in, PTREG_ERR_FORMAT, 1, "sigma %g or time_points %d is not usable", m->sigma,
                         m->time_points);
    if (s)
        ptreg_lddmm_model_free(m);
    return s;
}

ptreg_status ptreg_lddmm_model_read(const char *path, ptreg_lddmm_model *m, ptreg_error *err)
{
    memset(m, 0, sizeof *m);
    unsigned char *data;
    size_t size;
    ptreg_status s = io_read_file(path, &data, &size, err);
    if (s)
        return s;
    s = ptreg_lddmm_model_read_memory(data, size, path, m, err);
    free(data);
    return s;
}

void ptreg_lddmm_model_free(ptreg_lddmm_model *m)
{
    free(m->q0);
    free(m->p0);
    memset(m, 0, sizeof *m);
}

/* ---- landmark tables ---------------------------------------------------------- */

#define TABLE_MAX_COLUMNS 3000

/* A header name without surrounding quotes. */
static io_token unquoted(io_token tok)
{
    if (tok.len >= 2 && tok.s[0] == '"' && tok.s[tok.len - 1] == '"')
        return (io_token){tok.s + 1, tok.len - 2};
    return tok;
}

/* Whether columns c, c+1, c+2 are STEMx, STEMy, STEMz (either case). */
static int xyz_triple(const io_token *names, size_t c)
{
    const char axes[3] = {'x', 'y', 'z'};
    size_t stem = names[c].len;
    if (stem < 1)
        return 0;
    for (int k = 0; k < 3; k++) {
        io_token t = names[c + (size_t)k];
        if (t.len != stem || (t.s[stem - 1] | 0x20) != axes[k] || memcmp(t.s, names[c].s, stem - 1))
            return 0;
    }
    return 1;
}

/* The header: column names; *first[j] = the first column of landmark j. */
static ptreg_status table_header(const io_in *in, io_text *t, io_token *names, size_t *columns, size_t *first,
                                 size_t *n)
{
    io_token tok;
    *columns = *n = 0;
    while (io_text_token(t, &tok)) {
        if (*columns == TABLE_MAX_COLUMNS)
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "more than %d columns", TABLE_MAX_COLUMNS);
        names[(*columns)++] = unquoted(tok);
    }
    for (size_t c = 0; c + 2 < *columns; c++)
        if (xyz_triple(names, c)) {
            first[(*n)++] = c;
            c += 2;
        }
    if (!*n)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line,
                            "no landmark columns (names ending in x, y, z, "
                            "like Sx Sy Sz)");
    io_text_next_line(t);
    return PTREG_OK;
}

ptreg_status ptreg_landmark_table_read_memory(const void *data, size_t size, const char *path, size_t row, double **xyz,
                                              size_t *n, ptreg_error *err)
{
    *xyz = NULL;
    *n = 0;
    size_t columns, count = 0;
    ptreg_status s = PTREG_OK;
    io_in in = {data, size, path, err, NULL};
    io_text t;
    io_text_init(&t, data, size);
    t.commas = 1;
    io_token *names = malloc(TABLE_MAX_COLUMNS * sizeof *names);
    size_t *first = malloc(TABLE_MAX_COLUMNS * sizeof *first);
    double *values = malloc(TABLE_MAX_COLUMNS * sizeof *values);
    if (!names || !first || !values)
        s = ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", path);
    if (!s && !io_text_skip_empty_lines(&t))
        s = io_fail_line(&in, PTREG_ERR_FORMAT, 1, "an empty file");
    if (!s)
        s = table_header(&in, &t, names, &columns, first, &count);
    for (size_t r = 1; !s && r < row; r++) { /* rows before the one asked for */
        if (!io_text_skip_empty_lines(&t))
            break;
        io_text_next_line(&t);
    }
    if (!s && (row < 1 || !io_text_skip_empty_lines(&t)))
        s = io_fail_line(&in, PTREG_ERR_FORMAT, t.line, "no data row %zu", row);
    size_t got = 0;
    io_token tok;
    char q[IO_QUOTE_MAX];
    while (!s && io_text_token(&t, &tok)) {
        if (got == columns) {
            s = io_fail_line(&in, PTREG_ERR_FORMAT, t.line, "more values than the %zu columns", columns);
            break;
        }
        values[got] = NAN;
        io_parse_double(tok, &values[got]);
        got++;
    }
    if (!s && got != columns)
        s = io_fail_line(&in, PTREG_ERR_FORMAT, t.line, "%zu values for %zu columns", got, columns);
    if (!s && !(*xyz = malloc(3 * count * sizeof **xyz)))
        s = ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", path);
    for (size_t j = 0; !s && j < count; j++)
        for (int k = 0; k < 3; k++) {
            double v = values[first[j] + (size_t)k];
            if (!isfinite(v)) {
                io_token name = names[first[j] + (size_t)k];
                s = io_fail_line(&in, PTREG_ERR_FORMAT, t.line, "column %s is not a finite number", io_quote(name, q));
            }
            (*xyz)[3 * j + (size_t)k] = v;
        }
    if (s) {
        free(*xyz);
        *xyz = NULL;
    } else {
        *n = count;
    }
    free(names);
    free(first);
    free(values);
    return s;
}

ptreg_status ptreg_landmark_table_read(const char *path, size_t row, double **xyz, size_t *n, ptreg_error *err)
{
    unsigned char *data;
    size_t size;
    *xyz = NULL;
    *n = 0;
    ptreg_status s = io_read_file(path, &data, &size, err);
    if (s)
        return s;
    s = ptreg_landmark_table_read_memory(data, size, path, row, xyz, n, err);
    free(data);
    return s;
}
