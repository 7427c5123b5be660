/* PLY reader (Greg Turk's polygon file format): ascii, binary little- and
 * big-endian. Only the vertex element is kept (x y z; nx ny nz and red
 * green blue when all three are there; intensity); elements before it are skipped record by record and
 * elements after it are never looked at. */
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>

enum {
    ROLE_NONE = -1,
    ROLE_X,
    ROLE_Y,
    ROLE_Z,
    ROLE_NX,
    ROLE_NY,
    ROLE_NZ,
    ROLE_RED,
    ROLE_GREEN,
    ROLE_BLUE,
    ROLE_INTENSITY,
    ROLE_COUNT
};
enum { PLY_ASCII, PLY_LE, PLY_BE };

typedef struct ply_prop {
    io_type type;       /* the value, or the items of a list */
    io_type count_type; /* lists only */
    int is_list;
    int role;
    io_token name;
} ply_prop;

typedef struct ply_elem {
    io_token name;
    uint64_t count;
    size_t first, nprops; /* a range of ply_header.props */
    size_t line;          /* where it is declared, for messages */
} ply_elem;

typedef struct ply_header {
    int format; /* -1 until the format line */
    ply_elem *elems;
    size_t nelems, elems_cap;
    ply_prop *props;
    size_t nprops, props_cap;
    size_t vertex; /* index of the vertex element, SIZE_MAX when none */
    size_t data_offset, data_line, end_line;
    io_type role_type[ROLE_COUNT]; /* of each vertex property with a role */
} ply_header;

static const struct {
    const char *name;
    io_type type;
} ply_types[] = {
    {"char", IO_I8},   {"int8", IO_I8},     {"uchar", IO_U8},   {"uint8", IO_U8},
    {"short", IO_I16}, {"int16", IO_I16},   {"ushort", IO_U16}, {"uint16", IO_U16},
    {"int", IO_I32},   {"int32", IO_I32},   {"uint", IO_U32},   {"uint32", IO_U32},
    {"float", IO_F32}, {"float32", IO_F32}, {"double", IO_F64}, {"float64", IO_F64},
};

static const char *const role_names[ROLE_COUNT] = {"x",  "y",   "z",     "nx",   "ny",
                                                   "nz", "red", "green", "blue", "intensity"};

static int ply_type(io_token tok, io_type *type)
{
    for (size_t i = 0; i < sizeof ply_types / sizeof ply_types[0]; i++)
        if (io_token_is(tok, ply_types[i].name)) {
            *type = ply_types[i].type;
            return 1;
        }
    return 0;
}

static void header_free(ply_header *h)
{
    free(h->elems);
    free(h->props);
}

/* Grows a header array; the header text bounds its size. */
static int grow(void **arr, size_t *cap, size_t n, size_t item)
{
    if (n < *cap)
        return 1;
    size_t ncap = *cap ? 2 * *cap : 8;
    void *p = realloc(*arr, ncap * item);
    if (!p)
        return 0;
    *arr = p;
    *cap = ncap;
    return 1;
}

static ptreg_status parse_format(const io_in *in, io_text *t, ply_header *h)
{
    io_token kind, version;
    char q[IO_QUOTE_MAX];
    if (h->format >= 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a second format line");
    if (!io_text_token(t, &kind) || !io_text_token(t, &version))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the format line needs a kind and a version");
    if (io_token_is(kind, "ascii"))
        h->format = PLY_ASCII;
    else if (io_token_is(kind, "binary_little_endian"))
        h->format = PLY_LE;
    else if (io_token_is(kind, "binary_big_endian"))
        h->format = PLY_BE;
    else
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "unknown format '%s'", io_quote(kind, q));
    if (!io_token_is(version, "1.0") && !io_token_is(version, "1"))
        return io_fail_line(in, PTREG_ERR_UNSUPPORTED, t->line, "PLY version '%s' (only 1.0)", io_quote(version, q));
    return io_text_no_more(in, t, "the format line");
}

static ptreg_status parse_element(const io_in *in, io_text *t, ply_header *h)
{
    io_token name, count;
    char q[IO_QUOTE_MAX];
    if (!io_text_token(t, &name) || !io_text_token(t, &count))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "an element line needs a name and a count");
    uint64_t n;
    if (!io_parse_u64(count, &n))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "element count '%s' is not a non-negative integer",
                            io_quote(count, q));
    if (io_token_is(name, "vertex")) {
        if (h->vertex != SIZE_MAX)
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a second vertex element");
        h->vertex = h->nelems;
    }
    if (!grow((void **)&h->elems, &h->elems_cap, h->nelems, sizeof *h->elems))
        return io_fail_line(in, PTREG_ERR_NOMEM, t->line, "out of memory for the header");
    ply_elem *e = &h->elems[h->nelems++];
    e->name = name;
    e->count = n;
    e->first = h->nprops;
    e->nprops = 0;
    e->line = t->line;
    return io_text_no_more(in, t, "the element line");
}

static ptreg_status parse_type(const io_in *in, const io_text *t, io_token tok, io_type *type)
{
    char q[IO_QUOTE_MAX];
    if (!ply_type(tok, type))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "unknown property type '%s'", io_quote(tok, q));
    return PTREG_OK;
}

/* Gives the vertex properties that ptreg keeps their role. */
static ptreg_status assign_role(const io_in *in, const io_text *t, ply_header *h, ply_prop *p)
{
    char q[IO_QUOTE_MAX];
    p->role = ROLE_NONE;
    if (h->vertex != h->nelems - 1)
        return PTREG_OK;
    for (int r = 0; r < ROLE_COUNT; r++) {
        if (!io_token_is(p->name, role_names[r]) || (p->is_list && r >= ROLE_RED))
            continue; /* a list named like a colour is some other data: skipped */
        if (p->is_list)
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "vertex property '%s' is a list", io_quote(p->name, q));
        const ply_elem *e = &h->elems[h->vertex];
        for (size_t i = e->first; i < e->first + e->nprops; i++)
            if (h->props[i].role == r)
                return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "vertex property '%s' appears twice", role_names[r]);
        p->role = r;
        h->role_type[r] = p->type;
    }
    return PTREG_OK;
}

static ptreg_status parse_property(const io_in *in, io_text *t, ply_header *h)
{
    io_token tok, name;
    ply_prop p = {0};
    ptreg_status s;
    char q[IO_QUOTE_MAX];
    if (h->nelems == 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a property before any element");
    if (!io_text_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a property line needs a type and a name");
    if (io_token_is(tok, "list")) {
        p.is_list = 1;
        if (!io_text_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a list property needs a count type");
        if ((s = parse_type(in, t, tok, &p.count_type)) != PTREG_OK)
            return s;
        if (!io_type_is_integer(p.count_type))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "list count type '%s' is not an integer type",
                                io_quote(tok, q));
        if (!io_text_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a list property needs an item type");
    }
    if ((s = parse_type(in, t, tok, &p.type)) != PTREG_OK)
        return s;
    if (!io_text_token(t, &name))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a property needs a name");
    p.name = name;
    if ((s = assign_role(in, t, h, &p)) != PTREG_OK)
        return s;
    if (!grow((void **)&h->props, &h->props_cap, h->nprops, sizeof *h->props))
        return io_fail_line(in, PTREG_ERR_NOMEM, t->line, "out of memory for the header");
    h->props[h->nprops++] = p;
    h->elems[h->nelems - 1].nprops++;
    return io_text_no_more(in, t, "the property name");
}

/* A number where a keyword belongs is most likely data after a header that
 * lost its end_header. */
static int looks_numeric(io_token tok)
{
    char c = tok.s[0];
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

/* One header line after the keyword; sets *done at end_header. */
static ptreg_status parse_header_line(const io_in *in, io_text *t, io_token key, ply_header *h, int *done)
{
    char q[IO_QUOTE_MAX];
    if (io_token_is(key, "comment") || io_token_is(key, "obj_info"))
        return PTREG_OK;
    if (io_token_is(key, "format"))
        return parse_format(in, t, h);
    if (io_token_is(key, "element"))
        return parse_element(in, t, h);
    if (io_token_is(key, "property"))
        return parse_property(in, t, h);
    if (io_token_is(key, "end_header")) {
        *done = 1;
        return io_text_no_more(in, t, "end_header");
    }
    return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "unknown header keyword '%s'%s", io_quote(key, q),
                        looks_numeric(key) ? " (is end_header missing?)" : "");
}

static ptreg_status check_header(const io_in *in, const ply_header *h)
{
    if (h->format < 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->end_line, "the header has no format line");
    if (h->vertex == SIZE_MAX)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->end_line, "the header has no vertex element");
    const ply_elem *v = &h->elems[h->vertex];
    for (int r = ROLE_X; r <= ROLE_Z; r++) {
        int found = 0;
        for (size_t i = v->first; i < v->first + v->nprops; i++)
            found |= h->props[i].role == r;
        if (!found)
            return io_fail_line(in, PTREG_ERR_FORMAT, v->line, "element vertex has no property '%s'", role_names[r]);
    }
    return PTREG_OK;
}

static ptreg_status parse_header(const io_in *in, ply_header *h)
{
    io_text t;
    io_token key;
    io_text_init(&t, in->data, in->size);
    if (!io_text_token(&t, &key) || !io_token_is(key, "ply") || !io_text_eol(&t))
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "not a PLY file (the first line is not 'ply')");
    io_text_next_line(&t);
    for (int done = 0; !done;) {
        if (io_text_eof(&t))
            return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "the header has no end_header line");
        if (io_text_token(&t, &key)) {
            ptreg_status s = parse_header_line(in, &t, key, h, &done);
            if (s != PTREG_OK)
                return s;
        }
        h->end_line = t.line;
        io_text_next_line(&t);
    }
    h->data_offset = (size_t)(t.p - (const char *)in->data);
    h->data_line = t.line;
    return check_header(in, h);
}

/* Whether x, y or z has more than float32 in it (double or an integer
 * type): an origin can then keep it. */
static int wide_coordinates(const ply_header *h)
{
    const ply_elem *v = &h->elems[h->vertex];
    for (size_t i = v->first; i < v->first + v->nprops; i++)
        if (h->props[i].role >= ROLE_X && h->props[i].role <= ROLE_Z && h->props[i].type != IO_F32)
            return 1;
    return 0;
}

/* Whether the vertex element has every role from first to last. */
static int has_roles(const ply_header *h, int first, int last)
{
    int found = 0;
    const ply_elem *v = &h->elems[h->vertex];
    for (size_t i = v->first; i < v->first + v->nprops; i++)
        found += h->props[i].role >= first && h->props[i].role <= last;
    return found == last - first + 1;
}

static int has_normals(const ply_header *h) { return has_roles(h, ROLE_NX, ROLE_NZ); }

/* Room for the normals, colours and intensity the vertices carry. */
static ptreg_status reserve(const io_in *in, const ply_header *h, ptreg_cloud *cloud, size_t cap)
{
    ptreg_status s = io_cloud_reserve(in, cloud, cap, has_normals(h));
    if (s == PTREG_OK && has_roles(h, ROLE_RED, ROLE_BLUE))
        s = io_cloud_add_colors(in, cloud);
    if (s == PTREG_OK && has_roles(h, ROLE_INTENSITY, ROLE_INTENSITY))
        s = io_cloud_add_intensity(in, cloud);
    return s;
}

static ptreg_status store(const io_in *in, const ply_header *h, ptreg_cloud *cloud, const double vals[ROLE_COUNT])
{
    io_point p = {{vals[ROLE_X], vals[ROLE_Y], vals[ROLE_Z]},
                  {io_to_float(vals[ROLE_NX]), io_to_float(vals[ROLE_NY]), io_to_float(vals[ROLE_NZ])},
                  io_intensity_u16(vals[ROLE_INTENSITY]),
                  0,
                  {0, 0, 0}};
    for (int c = 0; c < 3; c++)
        p.rgb[c] = io_color_u8(vals[ROLE_RED + c], h->role_type[ROLE_RED + c]);
    return io_cloud_store(in, cloud, &p);
}

static ptreg_status vertex_short(const io_in *in, int is_line, size_t at, uint64_t count, size_t got)
{
    const char *fmt = "vertex count %llu but the file ends after %zu vertices";
    return is_line ? io_fail_line(in, PTREG_ERR_FORMAT, at, fmt, (unsigned long long)count, got)
                   : io_fail_byte(in, PTREG_ERR_FORMAT, at, fmt, (unsigned long long)count, got);
}

/* ---- ascii --------------------------------------------------------------- */

/* Ascii PLY has one record per line; an element without properties has
 * nothing to skip. */
static ptreg_status ascii_skip(const io_in *in, io_text *t, const ply_elem *e)
{
    char q[IO_QUOTE_MAX];
    if (e->nprops == 0)
        return PTREG_OK;
    for (uint64_t k = 0; k < e->count; k++) {
        if (!io_text_skip_empty_lines(t))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line,
                                "element '%s' count %llu but the file ends after %llu records", io_quote(e->name, q),
                                (unsigned long long)e->count, (unsigned long long)k);
        io_text_next_line(t);
    }
    return PTREG_OK;
}

static ptreg_status ascii_list(const io_in *in, io_text *t, const ply_prop *p, io_token tok)
{
    char q[IO_QUOTE_MAX], q2[IO_QUOTE_MAX];
    double c;
    if (!io_parse_double(tok, &c) || !(c >= 0) || c != floor(c))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "list '%s' count '%s' is not a non-negative integer",
                            io_quote(p->name, q), io_quote(tok, q2));
    /* The line bounds the loop, whatever the count says. */
    for (double k = 0; k < c; k++)
        if (!io_text_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line,
                                "list '%s' has %.0f entries but the line ends after %.0f", io_quote(p->name, q), c, k);
    return PTREG_OK;
}

static ptreg_status ascii_value(const io_in *in, const io_text *t, const ply_prop *p, io_token tok, double *out)
{
    char q[IO_QUOTE_MAX], q2[IO_QUOTE_MAX];
    if (!io_parse_typed(tok, p->type, out))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a number (property '%s')", io_quote(tok, q),
                            io_quote(p->name, q2));
    return PTREG_OK;
}

static ptreg_status ascii_vertex(const io_in *in, io_text *t, const ply_header *h, double vals[ROLE_COUNT])
{
    const ply_elem *v = &h->elems[h->vertex];
    char q[IO_QUOTE_MAX];
    io_token tok;
    ptreg_status s = PTREG_OK;
    for (size_t i = v->first; i < v->first + v->nprops && s == PTREG_OK; i++) {
        const ply_prop *p = &h->props[i];
        if (!io_text_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the line ends before property '%s'",
                                io_quote(p->name, q));
        if (p->is_list)
            s = ascii_list(in, t, p, tok);
        else if (p->role != ROLE_NONE)
            s = ascii_value(in, t, p, tok, &vals[p->role]);
    }
    if (s == PTREG_OK)
        s = io_text_no_more(in, t, "the last vertex property");
    return s;
}

static ptreg_status read_ascii(const io_in *in, const ply_header *h, ptreg_cloud *cloud)
{
    io_text t;
    io_text_init(&t, in->data + h->data_offset, in->size - h->data_offset);
    t.line = h->data_line;
    ptreg_status s;
    for (size_t e = 0; e < h->vertex; e++)
        if ((s = ascii_skip(in, &t, &h->elems[e])) != PTREG_OK)
            return s;
    const ply_elem *v = &h->elems[h->vertex];
    /* Each property of a vertex line takes at least a character and a
     * separator, so the bytes left bound how many vertices can follow. */
    size_t cap = (io_text_left(&t) + 1) / (2 * v->nprops);
    if (v->count < cap)
        cap = (size_t)v->count;
    if ((s = reserve(in, h, cloud, cap)) != PTREG_OK)
        return s;
    in->cloud->wide = wide_coordinates(h);
    double vals[ROLE_COUNT] = {0};
    for (uint64_t i = 0; i < v->count; i++) {
        if (!io_text_skip_empty_lines(&t))
            return vertex_short(in, 1, t.line, v->count, i);
        if ((s = ascii_vertex(in, &t, h, vals)) != PTREG_OK)
            return s;
        if (i == cap) /* only a bug in the bound above gets here */
            return vertex_short(in, 1, t.line, v->count, i);
        if ((s = store(in, h, cloud, vals)) != PTREG_OK)
            return s;
        io_text_next_line(&t);
    }
    return io_cloud_finish(in, cloud, cap, 1, t.line);
}

/* ---- binary -------------------------------------------------------------- */

typedef enum { REC_OK, REC_SHORT, REC_NEGATIVE_LIST, REC_LONG_LIST } rec_result;

/* The bytes a record takes at least: its scalars and list counts. */
static size_t min_record(const ply_header *h, const ply_elem *e)
{
    size_t n = 0;
    for (size_t i = e->first; i < e->first + e->nprops; i++) {
        const ply_prop *p = &h->props[i];
        n += io_type_size(p->is_list ? p->count_type : p->type);
    }
    return n;
}

static int has_list(const ply_header *h, const ply_elem *e)
{
    for (size_t i = e->first; i < e->first + e->nprops; i++)
        if (h->props[i].is_list)
            return 1;
    return 0;
}

/* Walks one record at *pos; vals (may be NULL) gets the vertex roles. On a
 * bad list, *bad is the list and *count its count. */
static rec_result bin_record(const io_in *in, const ply_header *h, const ply_elem *e, size_t *pos, double *vals,
                             const ply_prop **bad, double *count)
{
    const int big = h->format == PLY_BE;
    size_t at = *pos;
    for (size_t i = e->first; i < e->first + e->nprops; i++) {
        const ply_prop *p = &h->props[i];
        size_t left = in->size - at;
        size_t sz = io_type_size(p->is_list ? p->count_type : p->type);
        if (left < sz)
            return REC_SHORT;
        if (!p->is_list) {
            if (vals && p->role != ROLE_NONE)
                vals[p->role] = io_load(in->data + at, p->type, big);
            at += sz;
            continue;
        }
        double c = io_load(in->data + at, p->count_type, big);
        at += sz;
        if (!(c >= 0) || c > (double)((left - sz) / io_type_size(p->type))) {
            *bad = p;
            *count = c;
            return c >= 0 ? REC_LONG_LIST : REC_NEGATIVE_LIST;
        }
        at += (size_t)c * io_type_size(p->type);
    }
    *pos = at;
    return REC_OK;
}

static ptreg_status bad_record(const io_in *in, rec_result r, size_t at, const ply_elem *e, uint64_t k,
                               const ply_prop *bad, double count)
{
    char q[IO_QUOTE_MAX], q2[IO_QUOTE_MAX];
    if (r == REC_NEGATIVE_LIST || r == REC_LONG_LIST)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at, "list '%s' of %s %llu has count %.0f%s", io_quote(bad->name, q),
                            io_quote(e->name, q2), (unsigned long long)k, count,
                            r == REC_LONG_LIST ? ", more than the rest of the file holds" : "");
    return io_fail_byte(in, PTREG_ERR_FORMAT, at, "element '%s' count %llu but the file ends after %llu records",
                        io_quote(e->name, q), (unsigned long long)e->count, (unsigned long long)k);
}

static ptreg_status binary_skip(const io_in *in, const ply_header *h, const ply_elem *e, size_t *pos)
{
    size_t rec = min_record(h, e), bytes;
    if (rec == 0)
        return PTREG_OK;
    if (!has_list(h, e)) {
        /* Fixed-size records: one jump, checked before it is taken. */
        size_t left = in->size - *pos, fit = left / rec;
        if (e->count > fit || !io_mul_size((size_t)e->count, rec, &bytes))
            return bad_record(in, REC_SHORT, *pos + fit * rec, e, fit, NULL, 0);
        *pos += bytes;
        return PTREG_OK;
    }
    for (uint64_t k = 0; k < e->count; k++) {
        const ply_prop *bad = NULL;
        double c = 0;
        size_t at = *pos;
        rec_result r = bin_record(in, h, e, pos, NULL, &bad, &c);
        if (r != REC_OK)
            return bad_record(in, r, at, e, k, bad, c);
    }
    return PTREG_OK;
}

static ptreg_status read_binary(const io_in *in, const ply_header *h, ptreg_cloud *cloud)
{
    size_t pos = h->data_offset;
    ptreg_status s;
    for (size_t e = 0; e < h->vertex; e++)
        if ((s = binary_skip(in, h, &h->elems[e], &pos)) != PTREG_OK)
            return s;
    const ply_elem *v = &h->elems[h->vertex];
    /* x y z are scalars, so a vertex takes at least one byte: the bytes
     * left cap what the count may claim. */
    size_t cap = (in->size - pos) / min_record(h, v);
    if (v->count < cap)
        cap = (size_t)v->count;
    if ((s = reserve(in, h, cloud, cap)) != PTREG_OK)
        return s;
    in->cloud->wide = wide_coordinates(h);
    double vals[ROLE_COUNT] = {0};
    for (uint64_t i = 0; i < v->count; i++) {
        const ply_prop *bad = NULL;
        double c = 0;
        size_t at = pos;
        rec_result r = i == cap ? REC_SHORT : bin_record(in, h, v, &pos, vals, &bad, &c);
        if (r == REC_SHORT)
            return vertex_short(in, 0, at, v->count, i);
        if (r != REC_OK)
            return bad_record(in, r, at, v, i, bad, c);
        io_cloud_at(in, pos);
        if ((s = store(in, h, cloud, vals)) != PTREG_OK)
            return s;
    }
    return io_cloud_finish(in, cloud, cap, 0, pos);
}

ptreg_status io_read_ply(const io_in *in, ptreg_cloud *cloud)
{
    ply_header h = {.format = -1, .vertex = SIZE_MAX};
    ptreg_status s = parse_header(in, &h);
    if (s == PTREG_OK)
        s = h.format == PLY_ASCII ? read_ascii(in, &h, cloud) : read_binary(in, &h, cloud);
    header_free(&h);
    return s;
}
