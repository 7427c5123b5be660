/* Mesh vertices as a cloud: Wavefront OBJ (`v` lines; `vn` lines as normals
 * only when there is one per vertex, which is then its own), STL (ASCII and
 * binary: the triangles' distinct vertices, in the order they first
 * appear; facet normals are a face's, not a point's, and are not kept) and
 * ASCII OFF (the vertex list; COFF's colours kept). Faces are never needed
 * and not read. No count a file states is trusted beyond what its bytes can
 * hold. docs/FORMATS.md, "Meshes". */
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- OBJ ---- */

typedef struct obj_counts {
    size_t v, vn;
    int colors; /* every v line has r g b after x y z (a common extension, values 0 to 1) */
} obj_counts;

/* The numbers after a keyword, up to max; a token that is not one fails. */
static ptreg_status obj_numbers(const io_in *in, io_text *t, const char *key, double *v, size_t max, size_t *n)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    for (*n = 0; io_text_token(t, &tok); (*n)++) {
        if (*n >= max)
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' line with more than %zu numbers", key, max);
        if (!(*n < 3 && !strcmp(key, "v") ? io_parse_coord(in, (int)*n, tok, &v[*n]) : io_parse_double(tok, &v[*n])))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a number ('%s' line)", io_quote(tok, q),
                                key);
    }
    return PTREG_OK;
}

/* First pass: how many v and vn lines, and whether every v has colours. */
static void obj_count(const io_in *in, obj_counts *c)
{
    io_text t;
    io_token key, tok;
    io_text_init(&t, in->data, in->size);
    t.comments = 1;
    c->v = c->vn = 0;
    c->colors = 1;
    for (; io_text_skip_empty_lines(&t); io_text_next_line(&t)) {
        io_text_token(&t, &key);
        if (io_token_is(key, "vn"))
            c->vn++;
        if (!io_token_is(key, "v"))
            continue;
        c->v++;
        size_t n = 0;
        while (io_text_token(&t, &tok))
            n++;
        c->colors &= n == 6;
    }
}

static ptreg_status obj_normals(const io_in *in, size_t count, float *normals)
{
    io_text t;
    io_token key;
    io_text_init(&t, in->data, in->size);
    t.comments = 1;
    for (size_t i = 0; io_text_skip_empty_lines(&t); io_text_next_line(&t)) {
        io_text_token(&t, &key);
        if (!io_token_is(key, "vn"))
            continue;
        double v[3];
        size_t n;
        ptreg_status s = obj_numbers(in, &t, "vn", v, 3, &n);
        if (s == PTREG_OK && n != 3)
            s = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "a 'vn' line needs 3 numbers, not %zu", n);
        if (s != PTREG_OK)
            return s;
        for (int k = 0; k < 3 && i < count; k++)
            normals[3 * i + k] = io_to_float(v[k]);
        i++;
    }
    return PTREG_OK;
}

/* A colour component of an OBJ vertex: a fraction 0 to 1. */
static ptreg_status obj_color(const io_in *in, size_t line, double v, uint8_t *out)
{
    if (!(v >= 0.0 && v <= 1.0))
        return io_fail_line(in, PTREG_ERR_FORMAT, line, "vertex colour %g is not 0 to 1", v);
    *out = io_color_u8(v, IO_F64);
    return PTREG_OK;
}

ptreg_status io_read_obj(const io_in *in, ptreg_cloud *cloud)
{
    obj_counts c;
    obj_count(in, &c);
    in->cloud->wide = 1;
    const int with_normals = c.vn > 0 && c.vn == c.v;
    float *normals = with_normals ? malloc(3 * c.v * sizeof *normals) : NULL;
    if (with_normals && !normals)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %zu normals", in->name, c.v);
    ptreg_status s = with_normals ? obj_normals(in, c.v, normals) : PTREG_OK;
    if (s == PTREG_OK)
        s = io_cloud_reserve(in, cloud, c.v, with_normals);
    if (s == PTREG_OK && c.v && c.colors)
        s = io_cloud_add_colors(in, cloud);
    io_text t;
    io_token key;
    io_text_init(&t, in->data, in->size);
    t.comments = 1;
    for (size_t i = 0; s == PTREG_OK && io_text_skip_empty_lines(&t); io_text_next_line(&t)) {
        io_text_token(&t, &key);
        if (!io_token_is(key, "v"))
            continue;
        double v[7];
        size_t n;
        io_point p;
        memset(&p, 0, sizeof p);
        s = obj_numbers(in, &t, "v", v, 7, &n);
        if (s == PTREG_OK && n != 3 && n != 4 && n != 6 && n != 7)
            s = io_fail_line(in, PTREG_ERR_FORMAT, t.line,
                             "a 'v' line has x y z, and w or r g b: 3, 4, 6 or 7 numbers, not %zu", n);
        for (int k = 0; s == PTREG_OK && k < 3; k++) {
            p.xyz[k] = v[k];
            if (with_normals)
                p.normal[k] = normals[3 * i + k];
            if (cloud->rgb)
                s = obj_color(in, t.line, v[3 + k], &p.rgb[k]);
        }
        if (s == PTREG_OK)
            s = io_cloud_store(in, cloud, &p);
        i++;
    }
    free(normals);
    return s == PTREG_OK ? io_cloud_finish(in, cloud, c.v, 1, t.line) : s;
}

/* ---- STL ---- */

#define STL_HEADER 80
#define STL_TRIANGLE 50 /* normal, three vertices (float32 each), attribute count (2 bytes) */

/* A vertex and where it first came, for the distinct ones in order. */
typedef struct stl_vertex {
    float xyz[3];
    size_t order;
} stl_vertex;

static int vertex_cmp(const void *a, const void *b)
{
    const stl_vertex *p = a, *q = b;
    int c = memcmp(p->xyz, q->xyz, sizeof p->xyz);
    return c ? c : (p->order > q->order) - (p->order < q->order);
}

static int order_cmp(const void *a, const void *b)
{
    const stl_vertex *p = a, *q = b;
    return (p->order > q->order) - (p->order < q->order);
}

/* Keeps each distinct vertex (by its bits: -0 and 0 differ, as a file's
 * do) once, at its first place, and stores them. */
static ptreg_status stl_store(const io_in *in, ptreg_cloud *cloud, stl_vertex *v, size_t n, size_t at, int is_line)
{
    qsort(v, n, sizeof *v, vertex_cmp);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || memcmp(v[i].xyz, v[kept - 1].xyz, sizeof v[i].xyz))
            v[kept++] = v[i];
    qsort(v, kept, sizeof *v, order_cmp);
    ptreg_status s = io_cloud_reserve(in, cloud, kept, 0);
    for (size_t i = 0; s == PTREG_OK && i < kept; i++) {
        io_point p;
        memset(&p, 0, sizeof p);
        for (int k = 0; k < 3; k++)
            p.xyz[k] = v[i].xyz[k];
        s = io_cloud_store(in, cloud, &p);
    }
    return s == PTREG_OK ? io_cloud_finish(in, cloud, kept, is_line, at) : s;
}

static ptreg_status stl_binary(const io_in *in, ptreg_cloud *cloud)
{
    if (in->size < STL_HEADER + 4)
        return io_fail_byte(in, PTREG_ERR_FORMAT, in->size,
                            "the file ends inside the binary STL header (84 bytes): not STL");
    const uint64_t count = (uint64_t)io_load(in->data + STL_HEADER, IO_U32, 0);
    const size_t fit = (in->size - STL_HEADER - 4) / STL_TRIANGLE;
    if (count > fit)
        return io_fail_byte(in, PTREG_ERR_FORMAT, STL_HEADER,
                            "triangle count %llu but the file holds %zu triangles (%zu bytes)",
                            (unsigned long long)count, fit, in->size);
    if (count == 0)
        return io_fail_byte(in, PTREG_ERR_FORMAT, STL_HEADER, "no usable point: the file has no triangle");
    stl_vertex *v = malloc(3 * (size_t)count * sizeof *v);
    if (!v)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory for %llu triangles", in->name,
                               (unsigned long long)count);
    for (size_t t = 0; t < count; t++)
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++) {
                const unsigned char *p = in->data + STL_HEADER + 4 + t * STL_TRIANGLE + 12 + 12 * c + 4 * k;
                v[3 * t + c].xyz[k] = io_load_float(p, IO_F32, 0);
                v[3 * t + c].order = 3 * t + c;
            }
    ptreg_status s = stl_store(in, cloud, v, 3 * count, STL_HEADER + 4 + count * STL_TRIANGLE, 0);
    free(v);
    return s;
}

/* ASCII STL: `vertex x y z` lines inside facets; the rest (solid, facet
 * normal, outer loop, endloop, endfacet, endsolid) is checked for its
 * keywords only. */
static ptreg_status stl_ascii(const io_in *in, ptreg_cloud *cloud)
{
    io_text t;
    io_token key, tok;
    char q[IO_QUOTE_MAX];
    io_text_init(&t, in->data, in->size);
    /* "vertex" and three numbers take at least 13 bytes. */
    const size_t cap = in->size / 13 + 1;
    stl_vertex *v = malloc(cap * sizeof *v);
    if (!v)
        return ptreg_error_set(in->err, PTREG_ERR_NOMEM, "%s: out of memory", in->name);
    size_t n = 0;
    ptreg_status s = PTREG_OK;
    for (; s == PTREG_OK && io_text_skip_empty_lines(&t); io_text_next_line(&t)) {
        io_text_token(&t, &key);
        if (!io_token_is(key, "vertex")) {
            static const char *const words[] = {"solid", "facet", "outer", "endloop", "endfacet", "endsolid"};
            int known = 0;
            for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
                known |= io_token_is(key, words[w]);
            if (!known)
                s = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "unknown ASCII STL keyword '%s'", io_quote(key, q));
            continue;
        }
        float f[3];
        for (int k = 0; k < 3 && s == PTREG_OK; k++)
            if (!io_text_token(&t, &tok) || !io_parse_float(tok, &f[k]))
                s = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "a vertex line needs 3 numbers");
        if (s == PTREG_OK)
            s = io_text_no_more(in, &t, "the vertex");
        if (s == PTREG_OK && n == cap) /* only a bug in the bound above gets here */
            s = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "more vertices than the file can hold");
        if (s == PTREG_OK) {
            memcpy(v[n].xyz, f, sizeof f);
            v[n].order = n;
            n++;
        }
    }
    if (s == PTREG_OK && n % 3)
        s = io_fail_line(in, PTREG_ERR_FORMAT, t.line, "%zu vertices: not whole triangles (the file is cut?)", n);
    if (s == PTREG_OK)
        s = n ? stl_store(in, cloud, v, n, t.line, 1)
              : io_fail_line(in, PTREG_ERR_FORMAT, t.line, "no usable point: the file has no vertex");
    free(v);
    return s;
}

/* A binary STL may open with "solid" as well: its size, 84 + 50 per
 * triangle as its count says, tells it apart. */
ptreg_status io_read_stl(const io_in *in, ptreg_cloud *cloud)
{
    const int solid = in->size >= 5 && memcmp(in->data, "solid", 5) == 0;
    if (solid && in->size >= STL_HEADER + 4) {
        const uint64_t count = (uint64_t)io_load(in->data + STL_HEADER, IO_U32, 0);
        if ((uint64_t)(in->size - STL_HEADER - 4) == count * STL_TRIANGLE)
            return stl_binary(in, cloud);
    }
    return solid ? stl_ascii(in, cloud) : stl_binary(in, cloud);
}

/* ---- OFF ---- */

static ptreg_status off_count(const io_in *in, io_text *t, io_token tok, uint64_t *out)
{
    char q[IO_QUOTE_MAX];
    if (!io_parse_u64(tok, out))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "count '%s' is not a non-negative integer",
                            io_quote(tok, q));
    return PTREG_OK;
}

/* "OFF" (or COFF, NOFF, CNOFF), then the vertex, face and edge counts
 * (on the same line or the next). */
static ptreg_status off_header(const io_in *in, io_text *t, int *color, int *normal, uint64_t *vertices)
{
    io_token kind, tok;
    char q[IO_QUOTE_MAX];
    if (!io_text_skip_empty_lines(t) || !io_text_token(t, &kind))
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "not an OFF file: no 'OFF' line");
    static const char *const kinds[] = {"OFF", "COFF", "NOFF", "CNOFF"};
    int k = -1;
    for (int i = 0; i < 4; i++)
        if (io_token_is(kind, kinds[i]))
            k = i;
    if (k < 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "not an ASCII OFF file: the first word is '%s'%s",
                            io_quote(kind, q),
                            io_token_is(kind, "4OFF") || io_token_is(kind, "nOFF") ? " (only 3-D OFF is read)" : "");
    *color = k == 1 || k == 3;
    *normal = k == 2 || k == 3;
    if (!io_text_token(t, &tok)) {
        io_text_next_line(t);
        if (!io_text_skip_empty_lines(t) || !io_text_token(t, &tok))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the counts line is missing");
    }
    ptreg_status s = off_count(in, t, tok, vertices);
    for (int i = 0; s == PTREG_OK && i < 2; i++) /* faces, edges: read to check, not needed */
        if (io_text_token(t, &tok)) {
            uint64_t unused;
            s = off_count(in, t, tok, &unused);
        } else if (i == 0)
            s = io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the counts line needs vertices and faces");
    if (s == PTREG_OK)
        io_text_next_line(t);
    return s;
}

/* One vertex line: x y z, then (NOFF) a normal, then (COFF) a colour: 3 or
 * 4 numbers, integers 0 to 255 or fractions 0 to 1. */
static ptreg_status off_vertex(const io_in *in, io_text *t, int color, int normal, io_point *p)
{
    io_token tok;
    double v[10];
    size_t n = 0;
    char q[IO_QUOTE_MAX];
    for (; n < 10 && io_text_token(t, &tok); n++)
        if (!(n < 3 ? io_parse_coord(in, (int)n, tok, &v[n]) : io_parse_double(tok, &v[n])))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a number", io_quote(tok, q));
    const size_t least = 3 + (normal ? 3 : 0) + (color ? 3 : 0);
    if (n < least)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a vertex line needs %zu numbers, not %zu", least, n);
    memcpy(p->xyz, v, sizeof p->xyz);
    for (int k = 0; normal && k < 3; k++)
        p->normal[k] = io_to_float(v[3 + k]);
    const double *c = v + (normal ? 6 : 3);
    const int fractions = color && (c[0] != floor(c[0]) || c[1] != floor(c[1]) || c[2] != floor(c[2]));
    for (int k = 0; color && k < 3; k++) {
        if (!(c[k] >= 0.0 && c[k] <= (fractions ? 1.0 : 255.0)))
            return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "colour %g is neither 0 to 255 nor 0 to 1", c[k]);
        p->rgb[k] = io_color_u8(c[k], fractions ? IO_F64 : IO_U8);
    }
    return PTREG_OK;
}

ptreg_status io_read_off(const io_in *in, ptreg_cloud *cloud)
{
    io_text t;
    io_text_init(&t, in->data, in->size);
    t.comments = 1;
    int color = 0, normal = 0;
    uint64_t count = 0;
    ptreg_status s = off_header(in, &t, &color, &normal, &count);
    if (s != PTREG_OK)
        return s;
    in->cloud->wide = 1;
    /* Three numbers and their blanks take at least 6 bytes a vertex. */
    size_t cap = io_text_left(&t) / 6 + 1;
    if (count < cap)
        cap = (size_t)count;
    s = io_cloud_reserve(in, cloud, cap, normal);
    if (s == PTREG_OK && color)
        s = io_cloud_add_colors(in, cloud);
    for (uint64_t i = 0; s == PTREG_OK && i < count; i++) {
        if (!io_text_skip_empty_lines(&t) || i >= cap)
            return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "vertex count %llu but the file ends after %llu",
                                (unsigned long long)count, (unsigned long long)i);
        io_point p;
        memset(&p, 0, sizeof p);
        s = off_vertex(in, &t, color, normal, &p);
        if (s == PTREG_OK)
            s = io_cloud_store(in, cloud, &p);
        io_text_next_line(&t);
    }
    return s == PTREG_OK ? io_cloud_finish(in, cloud, cap, 1, t.line) : s;
}
