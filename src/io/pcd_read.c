/* PCD reader (PCL's point cloud data format, header versions 0.5 to 0.7):
 * DATA ascii, binary and binary_compressed (LZF, fields stored one after
 * the other). Keeps x y z, normal_x normal_y normal_z when all three are
 * there, the colour of PCL's packed `rgb` or `rgba` field (4 bytes: 0xAARRGGBB,
 * as a float's bits or an integer) and `intensity`; every other field,
 * whatever its SIZE, TYPE and COUNT, is skipped. */
#include "io/io_internal.h"

#include <errno.h>
#include <lzf.h>
#include <stdlib.h>
#include <string.h>

enum { ROLE_X, ROLE_Y, ROLE_Z, ROLE_NX, ROLE_NY, ROLE_NZ, ROLE_RGB, ROLE_INTENSITY, ROLE_COUNT };
enum { PCD_ASCII, PCD_BINARY, PCD_COMPRESSED };

/* More fields than any real PCD has (PCL's widest descriptors have a few
 * hundred entries in one field): a bound on the header's allocation. */
#define PCD_MAX_FIELDS 65536
/* The same for the values of one field; it also keeps COUNT in a size_t. */
#define PCD_MAX_COUNT (1u << 30)

/* An LZF back reference emits at most 264 bytes for 3 input bytes, so a
 * block cannot decompress to more than ~88 times its size. */
#define LZF_MAX_RATIO 89

static const char *const role_names[ROLE_COUNT] = {"x",        "y",        "z",   "normal_x",
                                                   "normal_y", "normal_z", "rgb", "intensity"};

typedef struct pcd_field {
    io_token name;
    uint64_t size, count;
    char kind; /* 'I', 'U' or 'F' */
    io_type type;
    size_t offset; /* in a point record */
} pcd_field;

typedef struct pcd_header {
    pcd_field *fields;
    size_t nfields;
    /* where each keyword was, 0 while it has not been seen */
    size_t fields_line, size_line, type_line, count_line, width_line, height_line, points_line;
    uint64_t width, height, points;
    int data_kind;
    size_t data_offset, data_line;
    size_t role[ROLE_COUNT]; /* field index, SIZE_MAX when absent */
    size_t point_size;       /* bytes of one binary record */
    size_t values;           /* values on one ascii line */
    int normals;
} pcd_header;

static ptreg_status parse_version(const io_in *in, io_text *t)
{
    static const char *const known[] = {"0.5", ".5", "0.6", ".6", "0.7", ".7"};
    io_token v;
    char q[IO_QUOTE_MAX];
    if (!io_text_token(t, &v))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "VERSION needs a value");
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (io_token_is(v, known[i]))
            return io_text_no_more(in, t, "the version");
    return io_fail_line(in, PTREG_ERR_UNSUPPORTED, t->line, "PCD version '%s' (0.5 to 0.7 are read)", io_quote(v, q));
}

static ptreg_status parse_fields(const io_in *in, io_text *t, pcd_header *h)
{
    io_token tok;
    if (h->fields)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a second FIELDS line");
    io_text probe = *t;
    size_t n = 0;
    while (n <= PCD_MAX_FIELDS && io_text_token(&probe, &tok))
        n++;
    if (n == 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "FIELDS names no field");
    if (n > PCD_MAX_FIELDS)
        return io_fail_line(in, PTREG_ERR_UNSUPPORTED, t->line, "more than %d fields", PCD_MAX_FIELDS);
    h->fields = calloc(n, sizeof *h->fields);
    if (!h->fields)
        return io_fail_line(in, PTREG_ERR_NOMEM, t->line, "out of memory for %zu fields", n);
    for (size_t i = 0; i < n; i++) {
        io_text_token(t, &h->fields[i].name);
        h->fields[i].count = 1; /* COUNT is optional */
    }
    h->nfields = n;
    h->fields_line = t->line;
    return PTREG_OK;
}

/* One SIZE, TYPE or COUNT entry. */
static ptreg_status parse_entry(const io_in *in, const io_text *t, char key, io_token tok, pcd_field *f)
{
    char q[IO_QUOTE_MAX];
    uint64_t v;
    if (key == 'T') {
        if (tok.len == 1 && (tok.s[0] == 'I' || tok.s[0] == 'U' || tok.s[0] == 'F')) {
            f->kind = tok.s[0];
            return PTREG_OK;
        }
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "TYPE '%s' is not I, U or F", io_quote(tok, q));
    }
    if (!io_parse_u64(tok, &v))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s '%s' is not a non-negative integer",
                            key == 'S' ? "SIZE" : "COUNT", io_quote(tok, q));
    if (key == 'S' && v != 1 && v != 2 && v != 4 && v != 8)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "SIZE %llu is not 1, 2, 4 or 8", (unsigned long long)v);
    if (key == 'C' && v == 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "COUNT 0");
    if (key == 'C' && v > PCD_MAX_COUNT)
        return io_fail_line(in, PTREG_ERR_UNSUPPORTED, t->line, "COUNT %llu (at most %u are read)",
                            (unsigned long long)v, PCD_MAX_COUNT);
    if (key == 'S')
        f->size = v;
    else
        f->count = v;
    return PTREG_OK;
}

/* SIZE, TYPE and COUNT: one entry per field, no more, no fewer. */
static ptreg_status parse_per_field(const io_in *in, io_text *t, pcd_header *h, const char *key, size_t *line)
{
    io_token tok;
    if (!h->fields)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s before FIELDS", key);
    if (*line)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a second %s line", key);
    *line = t->line;
    size_t i = 0;
    for (; io_text_token(t, &tok); i++) {
        if (i >= h->nfields)
            continue; /* counted for the message below */
        ptreg_status s = parse_entry(in, t, key[0], tok, &h->fields[i]);
        if (s != PTREG_OK)
            return s;
    }
    if (i != h->nfields)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s has %zu entries, FIELDS has %zu", key, i, h->nfields);
    return PTREG_OK;
}

static ptreg_status parse_number(const io_in *in, io_text *t, const char *key, uint64_t *v, size_t *line)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    if (*line)
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "a second %s line", key);
    *line = t->line;
    if (!io_text_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s needs a value", key);
    if (!io_parse_u64(tok, v))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "%s '%s' is not a non-negative integer", key,
                            io_quote(tok, q));
    return io_text_no_more(in, t, key);
}

static ptreg_status parse_data(const io_in *in, io_text *t, pcd_header *h)
{
    io_token tok;
    char q[IO_QUOTE_MAX];
    if (!io_text_token(t, &tok))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "DATA needs a kind");
    if (io_token_is(tok, "ascii"))
        h->data_kind = PCD_ASCII;
    else if (io_token_is(tok, "binary"))
        h->data_kind = PCD_BINARY;
    else if (io_token_is(tok, "binary_compressed"))
        h->data_kind = PCD_COMPRESSED;
    else
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line,
                            "unknown DATA kind '%s' (ascii, binary or binary_compressed)", io_quote(tok, q));
    return io_text_no_more(in, t, "the DATA kind");
}

static ptreg_status parse_header_line(const io_in *in, io_text *t, io_token key, pcd_header *h, int *done)
{
    char q[IO_QUOTE_MAX];
    if (io_token_is(key, "VERSION"))
        return parse_version(in, t);
    if (io_token_is(key, "FIELDS") || io_token_is(key, "COLUMNS"))
        return parse_fields(in, t, h);
    if (io_token_is(key, "SIZE"))
        return parse_per_field(in, t, h, "SIZE", &h->size_line);
    if (io_token_is(key, "TYPE"))
        return parse_per_field(in, t, h, "TYPE", &h->type_line);
    if (io_token_is(key, "COUNT"))
        return parse_per_field(in, t, h, "COUNT", &h->count_line);
    if (io_token_is(key, "WIDTH"))
        return parse_number(in, t, "WIDTH", &h->width, &h->width_line);
    if (io_token_is(key, "HEIGHT"))
        return parse_number(in, t, "HEIGHT", &h->height, &h->height_line);
    if (io_token_is(key, "POINTS"))
        return parse_number(in, t, "POINTS", &h->points, &h->points_line);
    if (io_token_is(key, "VIEWPOINT"))
        return PTREG_OK; /* a pose ptreg does not apply */
    if (io_token_is(key, "DATA")) {
        *done = 1;
        return parse_data(in, t, h);
    }
    return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "unknown header keyword '%s'", io_quote(key, q));
}

/* SIZE and TYPE together name a scalar type; half floats are real but not
 * read. */
static ptreg_status field_type(const io_in *in, const pcd_header *h, pcd_field *f)
{
    static const io_type ints[2][4] = {{IO_I8, IO_I16, IO_I32, IO_I64}, {IO_U8, IO_U16, IO_U32, IO_U64}};
    char q[IO_QUOTE_MAX];
    int log2 = f->size == 1 ? 0 : f->size == 2 ? 1 : f->size == 4 ? 2 : 3;
    if (f->kind != 'F') {
        f->type = ints[f->kind == 'U'][log2];
        return PTREG_OK;
    }
    if (f->size == 4 || f->size == 8) {
        f->type = f->size == 4 ? IO_F32 : IO_F64;
        return PTREG_OK;
    }
    return io_fail_line(in, f->size == 2 ? PTREG_ERR_UNSUPPORTED : PTREG_ERR_FORMAT, h->type_line,
                        "field '%s' is TYPE F with SIZE %llu (%s)", io_quote(f->name, q), (unsigned long long)f->size,
                        f->size == 2 ? "half floats are not read" : "no such float");
}

/* Record layout, the sizes that follow from it, and the fields ptreg keeps. */
static ptreg_status check_fields(const io_in *in, pcd_header *h)
{
    char q[IO_QUOTE_MAX];
    for (size_t i = 0; i < h->nfields; i++) {
        pcd_field *f = &h->fields[i];
        size_t bytes;
        ptreg_status s = field_type(in, h, f);
        if (s != PTREG_OK)
            return s;
        f->offset = h->point_size;
        if (!io_mul_size((size_t)f->count, (size_t)f->size, &bytes) || bytes > SIZE_MAX - h->point_size ||
            f->count > SIZE_MAX - h->values)
            return io_fail_line(in, PTREG_ERR_FORMAT, h->count_line ? h->count_line : h->size_line,
                                "field '%s': the point size overflows", io_quote(f->name, q));
        h->point_size += bytes;
        h->values += (size_t)f->count;
        for (int r = 0; r < ROLE_COUNT; r++) {
            if (!io_token_is(f->name, role_names[r]) && !(r == ROLE_RGB && io_token_is(f->name, "rgba")))
                continue;
            /* a colour or intensity of another shape is some other data: skipped */
            if (r >= ROLE_RGB && (f->count != 1 || (r == ROLE_RGB && f->size != 4)))
                continue;
            if (h->role[r] != SIZE_MAX)
                return io_fail_line(in, PTREG_ERR_FORMAT, h->fields_line, "field '%s' appears twice", role_names[r]);
            if (f->count != 1)
                return io_fail_line(in, PTREG_ERR_FORMAT, h->count_line, "field '%s' has COUNT %llu (must be 1)",
                                    role_names[r], (unsigned long long)f->count);
            if (r == ROLE_RGB) /* the bits, whether TYPE F or U */
                f->type = IO_U32;
            h->role[r] = i;
        }
    }
    for (int r = ROLE_X; r <= ROLE_Z; r++)
        if (h->role[r] == SIZE_MAX)
            return io_fail_line(in, PTREG_ERR_FORMAT, h->fields_line, "FIELDS has no '%s'", role_names[r]);
    h->normals = h->role[ROLE_NX] != SIZE_MAX && h->role[ROLE_NY] != SIZE_MAX && h->role[ROLE_NZ] != SIZE_MAX;
    return PTREG_OK;
}

static ptreg_status check_counts(const io_in *in, pcd_header *h)
{
    if (!h->width_line)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->data_line - 1, "the header has no WIDTH");
    if (!h->height_line)
        h->height = 1;
    if (h->height && h->width > UINT64_MAX / h->height)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->width_line, "WIDTH x HEIGHT overflows");
    uint64_t wh = h->width * h->height;
    if (h->points_line && h->points != wh)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->points_line, "POINTS %llu but WIDTH x HEIGHT = %llu x %llu = %llu",
                            (unsigned long long)h->points, (unsigned long long)h->width, (unsigned long long)h->height,
                            (unsigned long long)wh);
    h->points = wh;
    return PTREG_OK;
}

static ptreg_status check_header(const io_in *in, pcd_header *h)
{
    size_t at = h->data_line - 1;
    if (!h->fields)
        return io_fail_line(in, PTREG_ERR_FORMAT, at, "the header has no FIELDS");
    if (!h->size_line)
        return io_fail_line(in, PTREG_ERR_FORMAT, at, "the header has no SIZE");
    if (!h->type_line)
        return io_fail_line(in, PTREG_ERR_FORMAT, at, "the header has no TYPE");
    ptreg_status s = check_fields(in, h);
    return s != PTREG_OK ? s : check_counts(in, h);
}

static ptreg_status parse_header(const io_in *in, pcd_header *h)
{
    io_text t;
    io_token key;
    io_text_init(&t, in->data, in->size);
    t.comments = 1;
    for (int done = 0; !done;) {
        if (!io_text_skip_empty_lines(&t))
            return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "the header has no DATA line");
        io_text_token(&t, &key);
        ptreg_status s = parse_header_line(in, &t, key, h, &done);
        if (s != PTREG_OK)
            return s;
        io_text_next_line(&t);
    }
    h->data_offset = (size_t)(t.p - (const char *)in->data);
    h->data_line = t.line;
    return check_header(in, h);
}

/* Room for the normals, colours and intensity the fields carry. */
static ptreg_status reserve(const io_in *in, const pcd_header *h, ptreg_cloud *cloud, size_t cap)
{
    ptreg_status s = io_cloud_reserve(in, cloud, cap, h->normals);
    if (s == PTREG_OK && h->role[ROLE_RGB] != SIZE_MAX)
        s = io_cloud_add_colors(in, cloud);
    if (s == PTREG_OK && h->role[ROLE_INTENSITY] != SIZE_MAX)
        s = io_cloud_add_intensity(in, cloud);
    return s;
}

static ptreg_status store(const io_in *in, ptreg_cloud *cloud, const double vals[ROLE_COUNT])
{
    const uint32_t packed = (uint32_t)vals[ROLE_RGB];
    io_point p = {{vals[0], vals[1], vals[2]},
                  {io_to_float(vals[3]), io_to_float(vals[4]), io_to_float(vals[5])},
                  io_intensity_u16(vals[ROLE_INTENSITY]),
                  0,
                  {(uint8_t)(packed >> 16), (uint8_t)(packed >> 8), (uint8_t)packed}};
    return io_cloud_store(in, cloud, &p);
}

static ptreg_status points_short(const io_in *in, int is_line, size_t at, const pcd_header *h, size_t got)
{
    const char *fmt = "POINTS %llu but the data ends after %zu points";
    unsigned long long n = (unsigned long long)h->points;
    return is_line ? io_fail_line(in, PTREG_ERR_FORMAT, at, fmt, n, got)
                   : io_fail_byte(in, PTREG_ERR_FORMAT, at, fmt, n, got);
}

/* ---- ascii --------------------------------------------------------------- */

/* PCL writes a packed colour in ascii as the integer of its bits (a float
 * would print opaque colours as NaN); older files print the float itself. */
static int ascii_packed(io_token tok, double *out)
{
    uint64_t u;
    float v;
    uint32_t bits;
    if (io_parse_u64(tok, &u)) {
        *out = (double)u;
        return u <= UINT32_MAX;
    }
    if (!io_parse_float(tok, &v))
        return 0;
    memcpy(&bits, &v, sizeof bits);
    *out = (double)bits;
    return 1;
}

static ptreg_status ascii_value(const io_in *in, const io_text *t, const pcd_field *f, io_token tok, int role,
                                double *out)
{
    char q[IO_QUOTE_MAX], q2[IO_QUOTE_MAX];
    if (!(role == ROLE_RGB ? ascii_packed(tok, out) : io_parse_typed(tok, f->type, out)))
        return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "'%s' is not a number (field '%s')", io_quote(tok, q),
                            io_quote(f->name, q2));
    return PTREG_OK;
}

/* Role of field i, or -1. */
static int role_of(const pcd_header *h, size_t i)
{
    for (int r = 0; r < ROLE_COUNT; r++)
        if (h->role[r] == i)
            return r;
    return -1;
}

static ptreg_status ascii_point(const io_in *in, io_text *t, const pcd_header *h, double vals[ROLE_COUNT])
{
    char q[IO_QUOTE_MAX];
    io_token tok;
    for (size_t i = 0; i < h->nfields; i++) {
        const pcd_field *f = &h->fields[i];
        int r = role_of(h, i);
        for (uint64_t c = 0; c < f->count; c++) {
            if (!io_text_token(t, &tok))
                return io_fail_line(in, PTREG_ERR_FORMAT, t->line, "the line ends before field '%s'",
                                    io_quote(f->name, q));
            if (r >= 0) {
                ptreg_status s = ascii_value(in, t, f, tok, r, &vals[r]);
                if (s != PTREG_OK)
                    return s;
            }
        }
    }
    return io_text_no_more(in, t, "the last field");
}

static ptreg_status read_ascii(const io_in *in, const pcd_header *h, ptreg_cloud *cloud)
{
    io_text t;
    io_text_init(&t, in->data + h->data_offset, in->size - h->data_offset);
    t.line = h->data_line;
    /* A value takes at least a character and a separator: the bytes left
     * bound the points that can follow. */
    size_t cap = (io_text_left(&t) + 1) / (2 * h->values);
    if (h->points < cap)
        cap = (size_t)h->points;
    ptreg_status s = reserve(in, h, cloud, cap);
    if (s != PTREG_OK)
        return s;
    double vals[ROLE_COUNT] = {0};
    for (uint64_t i = 0; i < h->points; i++) {
        if (!io_text_skip_empty_lines(&t))
            return points_short(in, 1, t.line, h, i);
        if ((s = ascii_point(in, &t, h, vals)) != PTREG_OK)
            return s;
        if (i == cap) /* only a bug in the bound above gets here */
            return points_short(in, 1, t.line, h, i);
        if ((s = store(in, cloud, vals)) != PTREG_OK)
            return s;
        io_text_next_line(&t);
    }
    return io_cloud_finish(in, cloud, cap, 1, t.line);
}

/* ---- binary -------------------------------------------------------------- */

/* Reads the kept fields of every point. Field f of point i sits at
 * base + f.offset * field_scale + i * stride(f): the records of DATA binary
 * (field_scale 1, stride point_size), or the per-field arrays of
 * binary_compressed (field_scale points, stride the field's size). */
static ptreg_status gather(const io_in *in, const pcd_header *h, const unsigned char *base, size_t n,
                           size_t field_scale, int soa, ptreg_cloud *cloud)
{
    double vals[ROLE_COUNT] = {0};
    ptreg_status s = PTREG_OK;
    for (size_t i = 0; i < n && s == PTREG_OK; i++) {
        for (int r = 0; r < ROLE_COUNT; r++) {
            if (h->role[r] == SIZE_MAX || (r >= ROLE_NX && r <= ROLE_NZ && !h->normals))
                continue;
            const pcd_field *f = &h->fields[h->role[r]];
            size_t stride = soa ? (size_t)f->size : h->point_size;
            vals[r] = io_load(base + f->offset * field_scale + i * stride, f->type, 0);
        }
        if (!soa) /* the records are the file's own bytes */
            io_cloud_at(in, (size_t)(base - in->data) + (i + 1) * h->point_size);
        s = store(in, cloud, vals);
    }
    return s;
}

static ptreg_status read_binary(const io_in *in, const pcd_header *h, ptreg_cloud *cloud)
{
    size_t left = in->size - h->data_offset;
    size_t fit = left / h->point_size;
    if (h->points > fit)
        return points_short(in, 0, h->data_offset + fit * h->point_size, h, fit);
    size_t n = (size_t)h->points;
    ptreg_status s = reserve(in, h, cloud, n);
    if (s != PTREG_OK)
        return s;
    if ((s = gather(in, h, in->data + h->data_offset, n, 1, 0, cloud)) != PTREG_OK)
        return s;
    return io_cloud_finish(in, cloud, n, 0, h->data_offset + n * h->point_size);
}

static uint32_t load_u32le(const unsigned char *p) { return (uint32_t)io_load(p, IO_U32, 0); }

/* Checks the block header of binary_compressed against the file and the
 * point layout before anything is allocated from it. */
static ptreg_status check_block(const io_in *in, const pcd_header *h, uint32_t *csize, uint32_t *usize)
{
    size_t at = h->data_offset, left = in->size - at, need;
    if (left < 8)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at, "the file ends inside the compressed block header (8 bytes)");
    *csize = load_u32le(in->data + at);
    *usize = load_u32le(in->data + at + 4);
    if (*csize > left - 8)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at,
                            "LZF block of %u bytes but only %zu bytes follow the block header", (unsigned)*csize,
                            left - 8);
    if (!io_mul_size((size_t)h->points, h->point_size, &need) || need != *usize)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at + 4,
                            "uncompressed size %u, but POINTS %llu x point size %zu bytes = %llu", (unsigned)*usize,
                            (unsigned long long)h->points, h->point_size,
                            (unsigned long long)h->points * h->point_size);
    if ((uint64_t)*usize > (uint64_t)*csize * LZF_MAX_RATIO + 64)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at + 4, "uncompressed size %u cannot come from %u bytes of LZF data",
                            (unsigned)*usize, (unsigned)*csize);
    return PTREG_OK;
}

static ptreg_status decompress(const io_in *in, const unsigned char *src, uint32_t csize, unsigned char *dst,
                               uint32_t usize, size_t at)
{
    errno = 0;
    unsigned got = lzf_decompress(src, csize, dst, usize);
    if (got == usize)
        return PTREG_OK;
    if (got == 0 && errno == E2BIG)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at, "LZF data decompresses to more than the %u bytes the header says",
                            (unsigned)usize);
    if (got == 0)
        return io_fail_byte(in, PTREG_ERR_FORMAT, at, "corrupt LZF data");
    return io_fail_byte(in, PTREG_ERR_FORMAT, at, "LZF data decompresses to %u bytes, header says %u", got,
                        (unsigned)usize);
}

static ptreg_status read_compressed(const io_in *in, const pcd_header *h, ptreg_cloud *cloud)
{
    uint32_t csize = 0, usize = 0;
    ptreg_status s = check_block(in, h, &csize, &usize);
    if (s != PTREG_OK)
        return s;
    size_t at = h->data_offset + 8, n = (size_t)h->points;
    if (n == 0)
        return io_cloud_finish(in, cloud, 0, 0, at);
    unsigned char *raw = malloc(usize);
    if (!raw)
        return io_fail_byte(in, PTREG_ERR_NOMEM, at, "out of memory for %u bytes", (unsigned)usize);
    s = decompress(in, in->data + at, csize, raw, usize, at);
    if (s == PTREG_OK)
        s = reserve(in, h, cloud, n);
    if (s == PTREG_OK)
        s = gather(in, h, raw, n, n, 1, cloud);
    if (s == PTREG_OK)
        s = io_cloud_finish(in, cloud, n, 0, at + csize);
    free(raw);
    return s;
}

ptreg_status io_read_pcd(const io_in *in, ptreg_cloud *cloud)
{
    pcd_header h;
    memset(&h, 0, sizeof h);
    for (int r = 0; r < ROLE_COUNT; r++)
        h.role[r] = SIZE_MAX;
    ptreg_status s = parse_header(in, &h);
    if (s == PTREG_OK) {
        for (int r = 0; r < 3; r++) /* double (or integer) x y z: an origin keeps what they hold */
            in->cloud->wide |= h.fields[h.role[r]].type != IO_F32;
        if (h.data_kind == PCD_ASCII)
            s = read_ascii(in, &h, cloud);
        else if (h.data_kind == PCD_BINARY)
            s = read_binary(in, &h, cloud);
        else
            s = read_compressed(in, &h, cloud);
    }
    free(h.fields);
    return s;
}
