/* VTK legacy reader: ASCII files with DATASET POLYDATA. Only the POINTS
 * section is read; FIELD data before it is skipped and everything after it
 * (VERTICES, LINES, POLYGONS, POINT_DATA, METADATA ...) is never looked at.
 * Keywords are matched without regard to case, as VTK's own reader does. */
#include "io/io_internal.h"

#include <string.h>

static const char *const vtk_types[] = {
    "bit",           "unsigned_char", "char",  "unsigned_short", "short",        "unsigned_int",  "int",
    "unsigned_long", "long",          "float", "double",         "vtktypeint64", "vtktypeuint64", "vtkidtype",
};

static ptreg_status check_magic(const io_in *in, io_text *t)
{
    static const char *const words[] = {"#", "vtk", "DataFile", "Version"};
    io_token tok;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!io_text_token(t, &tok) || !io_token_is_nocase(tok, words[i]))
            return io_fail_line(in, PTREG_ERR_FORMAT, 1, "not a VTK legacy file (no '# vtk DataFile Version' line)");
    io_text_next_line(t);
    io_text_next_line(t); /* the title: free text */
    return PTREG_OK;
}

static ptreg_status check_encoding(const io_in *in, io_text *t)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    if (!io_text_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "expected ASCII or BINARY");
    if (io_token_is_nocase(tok, "BINARY"))
        return io_fail_line(in, PTREG_ERR_UNSUPPORTED, t->line, "BINARY VTK files are not read");
    if (!io_token_is_nocase(tok, "ASCII"))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' where ASCII or BINARY belongs", io_quote(tok, q));
    io_text_next_line(t);
    return PTREG_OK;
}

static ptreg_status check_dataset(const io_in *in, io_text *t)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    if (!io_text_skip_empty_lines(t))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends before DATASET");
    io_text_token(t, &tok);
    if (!io_token_is_nocase(tok, "DATASET"))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' where DATASET belongs", io_quote(tok, q));
    if (!io_text_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "DATASET needs a type");
    if (!io_token_is_nocase(tok, "POLYDATA"))
        return io_fail_line(in, PTREG_ERR_UNSUPPORTED, t->line, "DATASET %s (only POLYDATA is read)", io_quote(tok, q));
    io_text_next_line(t);
    return PTREG_OK;
}

static ptreg_status read_count(const io_in *in, io_text *t, const char *what, uint64_t *n)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    if (!io_text_next_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends inside %s", what);
    if (!io_parse_u64(tok, n))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s: '%s' is not a non-negative integer", what,
                            io_quote(tok, q));
    return PTREG_OK;
}

/* FIELD name n, then n arrays "name components tuples type" and their
 * values. The input bounds the loops: every value is a token. */
static ptreg_status skip_field(const io_in *in, io_text *t)
{
    io_token tok;
    uint64_t arrays, comps, tuples;
    ptreg_status s;
    if (!io_text_next_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends inside FIELD");
    if ((s = read_count(in, t, "FIELD", &arrays)) != PTREG_OK)
        return s;
    for (uint64_t a = 0; a < arrays; a++) {
        if (!io_text_next_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends inside FIELD");
        if ((s = read_count(in, t, "a FIELD array", &comps)) != PTREG_OK ||
            (s = read_count(in, t, "a FIELD array", &tuples)) != PTREG_OK)
            return s;
        if (!io_text_next_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends inside FIELD");
        uint64_t values = tuples && comps > UINT64_MAX / tuples ? UINT64_MAX : comps * tuples;
        for (uint64_t v = 0; v < values; v++)
            if (!io_text_next_token(t, &tok))
                return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file ends inside a FIELD array");
    }
    return PTREG_OK;
}

/* Finds POINTS after DATASET; returns its count and whether it is float. */
static ptreg_status find_points(const io_in *in, io_text *t, uint64_t *n, int *is_float)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    ptreg_status s;
    for (;;) {
        if (!io_text_skip_empty_lines(t))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the file has no POINTS");
        io_text_token(t, &tok);
        if (io_token_is_nocase(tok, "POINTS"))
            break;
        if (!io_token_is_nocase(tok, "FIELD"))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' where POINTS belongs", io_quote(tok, q));
        if ((s = skip_field(in, t)) != PTREG_OK)
            return s;
        io_text_next_line(t);
    }
    size_t line = t->line;
    if ((s = read_count(in, t, "POINTS", n)) != PTREG_OK)
        return s;
    if (!io_text_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, line, "POINTS needs a data type");
    for (size_t i = 0; i < sizeof vtk_types / sizeof vtk_types[0]; i++)
        if (io_token_is_nocase(tok, vtk_types[i])) {
            *is_float = io_token_is_nocase(tok, "float");
            io_text_next_line(t);
            return PTREG_OK;
        }
    return io_fail_line(in, PTREG_ERR_FORMAT, line, "unknown POINTS data type '%s'", io_quote(tok, q));
}

static ptreg_status points_short(const io_in *in, size_t line, uint64_t n, size_t got)
{
    return io_fail_line(in, PTREG_ERR_FORMAT, line, "POINTS %llu but the file ends after %zu points",
                        (unsigned long long)n, got);
}

static ptreg_status read_points(const io_in *in, io_text *t, uint64_t n, int is_float, ptreg_cloud *cloud)
{
    char q[IO_QUOTE_MAX];
    io_token tok;
    /* A coordinate takes at least a character and a separator. */
    size_t cap = (io_text_left(t) + 1) / 6;
    if (n < cap)
        cap = (size_t)n;
    ptreg_status s = io_cloud_reserve(in, cloud, cap, 0);
    if (s != PTREG_OK)
        return s;
    in->cloud->wide = !is_float;
    for (uint64_t i = 0; i < n; i++) {
        io_point p = {{0, 0, 0}, {0, 0, 0}, 0, 0, {0, 0, 0}};
        for (int c = 0; c < 3; c++) {
            if (!io_text_next_token(t, &tok))
                return points_short(in, t->line, n, (size_t)i);
            if (!io_parse_typed(tok, is_float ? IO_F32 : IO_F64, &p.xyz[c]))
                return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a number (POINTS %llu, %zu read)",
                                    io_quote(tok, q), (unsigned long long)n, (size_t)i);
        }
        if (i == cap) /* only a bug in the bound above gets here */
            return points_short(in, t->line, n, (size_t)i);
        if ((s = io_cloud_store(in, cloud, &p)) != PTREG_OK)
            return s;
    }
    return io_cloud_finish(in, cloud, cap, 1, t->line);
}

ptreg_status io_read_vtk(const io_in *in, ptreg_cloud *cloud)
{
    io_text t;
    uint64_t n = 0;
    int is_float = 0;
    io_text_init(&t, in->data, in->size);
    ptreg_status s = check_magic(in, &t);
    if (s == PTREG_OK)
        s = check_encoding(in, &t);
    if (s == PTREG_OK)
        s = check_dataset(in, &t);
    if (s == PTREG_OK)
        s = find_points(in, &t, &n, &is_float);
    return s == PTREG_OK ? read_points(in, &t, n, is_float, cloud) : s;
}
