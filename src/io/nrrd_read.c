/* NRRD reader (format versions NRRD0001-NRRD0005): the header's fields
 * type, dimension, sizes, spacings, space directions, space origin,
 * endian, encoding (raw, gzip, ascii), data file, byte skip and line skip.
 * Key/value pairs, comments and fields that do not change the voxels
 * (kinds, centers, units, labels ...) are skipped. Data may follow the
 * header (attached) or live in a detached file named by "data file". */
#define _POSIX_C_SOURCE 200809L

#include "io/io_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/numeric.h"

#define NRRD_MAX_DIM 16
#define NRRD_LINE_MAX 4096

typedef enum nrrd_encoding { ENC_NONE, ENC_RAW, ENC_GZIP, ENC_ASCII } nrrd_encoding;

typedef struct nrrd_header {
    int dimension;
    size_t sizes[NRRD_MAX_DIM];
    int size_count;
    double spacings[NRRD_MAX_DIM];
    int spacing_count;
    double dir_norms[NRRD_MAX_DIM]; /* |space direction| per axis, NAN for "none" */
    int dir_count;
    double origin[3];
    int has_origin;
    ptreg_voxel_type type;
    int has_type;
    int endian; /* -1: not given, 0 little, 1 big */
    nrrd_encoding encoding;
    char data_file[NRRD_LINE_MAX];
    long long byte_skip;
    size_t line_skip;
    size_t data_offset; /* attached data: first byte after the blank line */
    size_t data_line;   /* the header line that names the data (for messages) */
} nrrd_header;

/* One header line as a NUL-terminated string. */
typedef struct nrrd_line {
    char text[NRRD_LINE_MAX];
    size_t number;
} nrrd_line;

static ptreg_status bad(const io_in *in, const nrrd_line *l, const char *what, const char *value)
{
    char quoted[IO_QUOTE_MAX];
    io_token tok = {value, strlen(value)};
    return io_fail_line(in, PTREG_ERR_FORMAT, l->number, "%s: '%s'", what, io_quote(tok, quoted));
}

static char *skip_blanks(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

static ptreg_status parse_sizes(const io_in *in, const nrrd_line *l, char *v, nrrd_header *h)
{
    h->size_count = 0;
    for (char *p = skip_blanks(v); *p; p = skip_blanks(p)) {
        char *end;
        errno = 0;
        if (*p < '0' || *p > '9' || h->size_count == NRRD_MAX_DIM)
            return bad(in, l, "sizes must be up to 16 positive integers", v);
        unsigned long long n = strtoull(p, &end, 10);
        if (errno || n == 0 || (*end && *end != ' ' && *end != '\t'))
            return bad(in, l, "sizes must be up to 16 positive integers", v);
        h->sizes[h->size_count++] = (size_t)n;
        p = end;
    }
    return PTREG_OK;
}

static ptreg_status parse_spacings(const io_in *in, const nrrd_line *l, char *v, nrrd_header *h)
{
    h->spacing_count = 0;
    for (char *p = skip_blanks(v); *p; p = skip_blanks(p)) {
        char *end;
        double d = strtod(p, &end);
        if (end == p || (*end && *end != ' ' && *end != '\t') || h->spacing_count == NRRD_MAX_DIM)
            return bad(in, l, "spacings must be numbers (or nan)", v);
        h->spacings[h->spacing_count++] = d;
        p = end;
    }
    return PTREG_OK;
}

/* "(a,b,c)" with optional blanks; returns the character after ')' or NULL. */
static char *parse_vector(char *p, double out[3])
{
    if (*p++ != '(')
        return NULL;
    for (int i = 0; i < 3; i++) {
        char *end;
        out[i] = strtod(skip_blanks(p), &end);
        if (end == p || !isfinite(out[i]))
            return NULL;
        p = skip_blanks(end);
        if (*p++ != (i < 2 ? ',' : ')'))
            return NULL;
    }
    return p;
}

static ptreg_status parse_directions(const io_in *in, const nrrd_line *l, char *v, nrrd_header *h)
{
    h->dir_count = 0;
    for (char *p = skip_blanks(v); *p; p = skip_blanks(p)) {
        if (h->dir_count == NRRD_MAX_DIM)
            return bad(in, l, "too many space directions", v);
        if (!strncmp(p, "none", 4)) {
            h->dir_norms[h->dir_count++] = NAN;
            p += 4;
            continue;
        }
        double d[3];
        char *end = parse_vector(p, d);
        if (!end)
            return bad(in, l, "space directions must be (x,y,z) vectors or none", v);
        h->dir_norms[h->dir_count++] = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        p = end;
    }
    return PTREG_OK;
}

static ptreg_status parse_integer(const io_in *in, const nrrd_line *l, const char *v, long long lo, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end == v || *skip_blanks(end) || errno || n < lo)
        return bad(in, l, lo < 0 ? "expected an integer >= -1" : "expected an integer >= 0", v);
    *out = n;
    return PTREG_OK;
}

static ptreg_status parse_encoding(const io_in *in, const nrrd_line *l, const char *v, nrrd_header *h)
{
    if (!strcasecmp(v, "raw"))
        h->encoding = ENC_RAW;
    else if (!strcasecmp(v, "gzip") || !strcasecmp(v, "gz"))
        h->encoding = ENC_GZIP;
    else if (!strcasecmp(v, "ascii") || !strcasecmp(v, "text") || !strcasecmp(v, "txt"))
        h->encoding = ENC_ASCII;
    else
        return bad(in, l, "unsupported encoding (raw, gzip and ascii are read)", v);
    return PTREG_OK;
}

static ptreg_status parse_field(const io_in *in, const nrrd_line *l, const char *field, char *v, nrrd_header *h)
{
    long long n;
    ptreg_status s = PTREG_OK;
    if (!strcasecmp(field, "type")) {
        if (ptreg_voxel_type_parse(v, &h->type) != 0)
            return bad(in, l, "unsupported type (8-, 16-, 32-bit integers, float, double)", v);
        h->has_type = 1;
    } else if (!strcasecmp(field, "dimension")) {
        if ((s = parse_integer(in, l, v, 1, &n)) == PTREG_OK && n > NRRD_MAX_DIM)
            return bad(in, l, "dimension must be 1 to 16", v);
        h->dimension = (int)n;
    } else if (!strcasecmp(field, "sizes")) {
        s = parse_sizes(in, l, v, h);
    } else if (!strcasecmp(field, "spacings")) {
        s = parse_spacings(in, l, v, h);
    } else if (!strcasecmp(field, "space directions")) {
        s = parse_directions(in, l, v, h);
    } else if (!strcasecmp(field, "space origin")) {
        char *end = parse_vector(skip_blanks(v), h->origin);
        if (!end || *skip_blanks(end))
            return bad(in, l, "space origin must be (x,y,z)", v);
        h->has_origin = 1;
    } else if (!strcasecmp(field, "endian")) {
        if (strcasecmp(v, "little") && strcasecmp(v, "big"))
            return bad(in, l, "endian must be little or big", v);
        h->endian = !strcasecmp(v, "big");
    } else if (!strcasecmp(field, "encoding")) {
        s = parse_encoding(in, l, v, h);
    } else if (!strcasecmp(field, "data file") || !strcasecmp(field, "datafile")) {
        if (!*v || strchr(v, '%') || !strncmp(v, "LIST", 4))
            return bad(in, l, "only a single data file is supported", v);
        strcpy(h->data_file, v);
        h->data_line = l->number;
    } else if (!strcasecmp(field, "byte skip")) {
        s = parse_integer(in, l, v, -1, &h->byte_skip);
    } else if (!strcasecmp(field, "line skip")) {
        if ((s = parse_integer(in, l, v, 0, &n)) == PTREG_OK)
            h->line_skip = (size_t)n;
    }
    return s;
}

/* Copies the next line (without its \r\n) into l; 0 at the end of input. */
static int next_line(const io_in *in, size_t *pos, nrrd_line *l, int *too_long)
{
    if (*pos >= in->size)
        return 0;
    const unsigned char *start = in->data + *pos;
    const unsigned char *nl = memchr(start, '\n', in->size - *pos);
    size_t len = nl ? (size_t)(nl - start) : in->size - *pos;
    *pos += len + (nl ? 1 : 0);
    if (len && start[len - 1] == '\r')
        len--;
    *too_long = len >= NRRD_LINE_MAX;
    if (*too_long)
        len = NRRD_LINE_MAX - 1;
    memcpy(l->text, start, len);
    l->text[len] = 0;
    l->number++;
    return 1;
}

/* Reads header lines up to the blank line (or the end of a detached
 * header); data_offset is where attached data starts. */
static ptreg_status parse_header(const io_in *in, nrrd_header *h)
{
    nrrd_line l = {{0}, 0};
    size_t pos = 0;
    int too_long;
    memset(h, 0, sizeof *h);
    h->endian = -1;
    if (!next_line(in, &pos, &l, &too_long) || strncmp(l.text, "NRRD000", 7) || l.text[7] < '1' || l.text[7] > '5' ||
        l.text[8])
        return io_fail_line(in, PTREG_ERR_FORMAT, 1, "not a NRRD file (no NRRD0001-NRRD0005 magic)");
    while (next_line(in, &pos, &l, &too_long)) {
        if (!l.text[0]) {
            h->data_offset = pos;
            h->data_line = h->data_file[0] ? h->data_line : l.number + 1;
            return PTREG_OK;
        }
        if (l.text[0] == '#' || strstr(l.text, ":="))
            continue; /* comments and key/value pairs */
        char *colon = strstr(l.text, ": ");
        if (too_long)
            return io_fail_line(in, PTREG_ERR_FORMAT, l.number, "header line longer than %d bytes", NRRD_LINE_MAX - 1);
        if (!colon)
            return bad(in, &l, "expected 'field: value'", l.text);
        *colon = 0;
        ptreg_status s = parse_field(in, &l, l.text, skip_blanks(colon + 2), h);
        if (s)
            return s;
    }
    if (!h->data_file[0])
        return io_fail_line(in, PTREG_ERR_FORMAT, l.number + 1,
                            "the header has no blank line before the data and no data file");
    h->data_offset = in->size;
    return PTREG_OK;
}

/* The volume's three axes from up to 4 NRRD axes: a leading axis of size
 * 1 (a scalar "kind") is dropped, and 1- or 2-D data get sizes of 1. */
static ptreg_status volume_axes(const io_in *in, const nrrd_header *h, size_t dims[3], double spacing[3])
{
    if (!h->has_type || !h->dimension || !h->size_count || h->encoding == ENC_NONE)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->data_line, "the header lacks %s",
                            !h->has_type     ? "type"
                            : !h->dimension  ? "dimension"
                            : !h->size_count ? "sizes"
                                             : "encoding");
    if (h->size_count != h->dimension || (h->spacing_count && h->spacing_count != h->dimension) ||
        (h->dir_count && h->dir_count != h->dimension))
        return io_fail_line(in, PTREG_ERR_FORMAT, h->data_line,
                            "dimension is %d but %d sizes, %d spacings, %d space directions are given", h->dimension,
                            h->size_count, h->spacing_count, h->dir_count);
    int first = h->dimension == 4 && h->sizes[0] == 1 ? 1 : 0;
    if (h->dimension - first > 3)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->data_line,
                            "a %d-dimensional array is not a volume (at most 3 axes, or 4 with a first of size 1)",
                            h->dimension);
    for (int a = 0; a < 3; a++) {
        int axis = first + a;
        int given = axis < h->dimension;
        dims[a] = given ? h->sizes[axis] : 1;
        double sp = 1.0;
        if (given && h->dir_count && isfinite(h->dir_norms[axis]) && h->dir_norms[axis] > 0)
            sp = h->dir_norms[axis];
        else if (given && h->spacing_count && isfinite(h->spacings[axis]) && h->spacings[axis] > 0)
            sp = h->spacings[axis];
        spacing[a] = sp;
    }
    if (ptreg_voxel_size(h->type) > 1 && h->encoding != ENC_ASCII && h->endian < 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->data_line, "the header lacks endian, which %s data needs",
                            ptreg_voxel_type_name(h->type));
    return PTREG_OK;
}

/* Skips `lines` newline-terminated lines from *pos. */
static ptreg_status skip_lines(const io_in *in, size_t lines, size_t *pos)
{
    for (size_t i = 0; i < lines; i++) {
        const unsigned char *nl = memchr(in->data + *pos, '\n', in->size - *pos);
        if (!nl)
            return io_fail_byte(in, PTREG_ERR_FORMAT, in->size, "line skip %zu: the data has only %zu lines", lines, i);
        *pos = (size_t)(nl - in->data) + 1;
    }
    return PTREG_OK;
}

static ptreg_status decode_raw(const io_in *in, const nrrd_header *h, size_t pos, size_t bytes, unsigned char **out)
{
    size_t avail = in->size - pos;
    if (h->byte_skip == -1) {
        if (avail < bytes)
            return io_fail_byte(in, PTREG_ERR_FORMAT, in->size, "the data has %zu bytes, the sizes need %zu", avail,
                                bytes);
        pos = in->size - bytes; /* byte skip -1: the data is the file's last bytes */
    } else {
        if ((unsigned long long)h->byte_skip > avail)
            return io_fail_byte(in, PTREG_ERR_FORMAT, in->size, "byte skip %lld is past the end of the data",
                                h->byte_skip);
        pos += (size_t)h->byte_skip;
        avail = in->size - pos;
        if (avail != bytes)
            return io_fail_byte(in, PTREG_ERR_FORMAT, avail < bytes ? in->size : pos + bytes,
                                "the data has %zu bytes, the sizes need %zu", avail, bytes);
    }
    *out = (unsigned char *)in->data + pos;
    return PTREG_OK;
}

static ptreg_status decode_gzip(const io_in *in, const nrrd_header *h, size_t pos, size_t bytes, unsigned char **out)
{
    if (h->byte_skip < 0)
        return io_fail_line(in, PTREG_ERR_FORMAT, h->data_line, "byte skip -1 needs raw encoding");
    size_t skip = (size_t)h->byte_skip, want;
    if (!io_mul_size(1, bytes, &want) || want > SIZE_MAX - skip || want + skip > io_gunzip_bound(in->size - pos))
        return io_fail_byte(in, PTREG_ERR_FORMAT, pos,
                            "the sizes need %zu bytes, more than %zu bytes of gzip data can hold", bytes,
                            in->size - pos);
    want += skip;
    unsigned char *buf = malloc(want ? want : 1);
    if (!buf)
        return io_fail_byte(in, PTREG_ERR_NOMEM, pos, "out of memory for %zu bytes", want);
    size_t got;
    int more;
    ptreg_status s = io_gunzip(in, pos, in->data + pos, in->size - pos, buf, want, &got, &more);
    if (!s && (got < want || more))
        s = io_fail_byte(in, PTREG_ERR_FORMAT, in->size, "the gzip data holds %s bytes, the sizes need %zu",
                         more ? "more than that many" : "fewer", want);
    if (s) {
        free(buf);
        return s;
    }
    memmove(buf, buf + skip, bytes);
    *out = buf;
    return PTREG_OK;
}

static int integer_fits(double v, ptreg_voxel_type type)
{
    static const double lo[] = {0, -128, 0, -32768, 0, -2147483648.0};
    static const double hi[] = {255, 127, 65535, 32767, 4294967295.0, 2147483647.0};
    return v == floor(v) && v >= lo[type] && v <= hi[type];
}

static void store_value(unsigned char *p, double v, ptreg_voxel_type type)
{
    switch (type) {
    case PTREG_VOXEL_U8: *(uint8_t *)p = (uint8_t)v; break;
    case PTREG_VOXEL_I8: *(int8_t *)p = (int8_t)v; break;
    case PTREG_VOXEL_U16: {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
        break;
    }
    case PTREG_VOXEL_I16: {
        int16_t x = (int16_t)v;
        memcpy(p, &x, 2);
        break;
    }
    case PTREG_VOXEL_U32: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    case PTREG_VOXEL_I32: {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    case PTREG_VOXEL_F32: {
        float x = ptreg_double_to_float(v);
        memcpy(p, &x, 4);
        break;
    }
    case PTREG_VOXEL_F64: memcpy(p, &v, 8); break;
    }
}

/* Whitespace-separated numbers, stored in the host's byte order. */
static ptreg_status decode_ascii(const io_in *in, const nrrd_header *h, size_t pos, size_t count, unsigned char **out)
{
    size_t size = ptreg_voxel_size(h->type);
    if (count > (in->size - pos + 1) / 2) /* each number takes a digit and a separator */
        return io_fail_byte(in, PTREG_ERR_FORMAT, pos, "%zu bytes of text cannot hold %zu numbers", in->size - pos,
                            count);
    unsigned char *buf = malloc(count * size);
    if (!buf)
        return io_fail_byte(in, PTREG_ERR_NOMEM, pos, "out of memory for %zu voxels", count);
    io_text t;
    io_text_init(&t, in->data + pos, in->size - pos);
    t.commas = 1;
    t.line = h->data_line;
    io_token tok;
    char quoted[IO_QUOTE_MAX];
    for (size_t i = 0; i < count; i++) {
        double v;
        while (!io_text_token(&t, &tok))
            if (!io_text_skip_empty_lines(&t)) {
                free(buf);
                return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "the data has %zu numbers, the sizes need %zu", i,
                                    count);
            }
        int ok = io_parse_double(tok, &v) && (h->type >= PTREG_VOXEL_F32 || integer_fits(v, h->type));
        if (!ok) {
            free(buf);
            return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "'%s' is not a %s value", io_quote(tok, quoted),
                                ptreg_voxel_type_name(h->type));
        }
        store_value(buf + i * size, v, h->type);
    }
    while (io_text_skip_empty_lines(&t))
        if (io_text_token(&t, &tok)) {
            free(buf);
            return io_fail_line(in, PTREG_ERR_FORMAT, t.line, "more numbers than the sizes' %zu", count);
        }
    *out = buf;
    return PTREG_OK;
}

/* The data of a header that has been parsed: decoded into the volume. */
static ptreg_status read_data(const io_in *data_in, const nrrd_header *h, size_t pos, const size_t dims[3],
                              ptreg_volume *vol)
{
    size_t bytes;
    ptreg_status s = io_volume_bytes(data_in, dims, h->type, &bytes);
    if (!s)
        s = skip_lines(data_in, h->line_skip, &pos);
    if (s)
        return s;
    unsigned char *voxels = NULL;
    int big_endian = h->endian == 1;
    if (h->encoding == ENC_RAW)
        s = decode_raw(data_in, h, pos, bytes, &voxels);
    else if (h->encoding == ENC_GZIP)
        s = decode_gzip(data_in, h, pos, bytes, &voxels);
    else {
        s = decode_ascii(data_in, h, pos, bytes / ptreg_voxel_size(h->type), &voxels);
        big_endian = io_host_big_endian(); /* ascii values were stored in the host's order */
    }
    if (!s)
        s = io_volume_from_bytes(data_in, voxels, dims, h->type, big_endian, vol);
    if (voxels && h->encoding != ENC_RAW)
        free(voxels);
    return s;
}

static ptreg_status read_detached(const io_in *in, const char *dir, const nrrd_header *h, const size_t dims[3],
                                  ptreg_volume *vol)
{
    if (!dir)
        return io_fail_line(in, PTREG_ERR_UNSUPPORTED, h->data_line,
                            "detached data file '%s' cannot be read from memory", h->data_file);
    const char *name = h->data_file;
    size_t n = (name[0] == '/' ? 0 : strlen(dir)) + strlen(name) + 1;
    char *path = malloc(n);
    if (!path)
        return io_fail_line(in, PTREG_ERR_NOMEM, h->data_line, "out of memory");
    snprintf(path, n, "%s%s", name[0] == '/' ? "" : dir, name);
    unsigned char *data;
    size_t size;
    ptreg_status s = io_read_file(path, &data, &size, in->err);
    if (s) {
        /* Name the header too: the data file's name came from it. */
        char msg[PTREG_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", in->err ? in->err->message : "");
        io_fail_line(in, PTREG_ERR_FORMAT, h->data_line, "data file: %s", msg);
        free(path);
        return PTREG_ERR_FORMAT;
    }
    io_in data_in = {data, size, path, in->err, NULL};
    s = read_data(&data_in, h, 0, dims, vol);
    free(data);
    free(path);
    return s;
}

ptreg_status io_read_nrrd(const io_in *in, const char *dir, ptreg_volume *vol)
{
    nrrd_header h;
    size_t dims[3];
    double spacing[3];
    ptreg_status s = parse_header(in, &h);
    if (!s)
        s = volume_axes(in, &h, dims, spacing);
    if (s)
        return s;
    if (h.data_file[0])
        s = read_detached(in, dir, &h, dims, vol);
    else
        s = read_data(in, &h, h.data_offset, dims, vol);
    if (s)
        return s;
    memcpy(vol->spacing, spacing, sizeof spacing);
    if (h.has_origin)
        memcpy(vol->origin, h.origin, sizeof h.origin);
    return PTREG_OK;
}
