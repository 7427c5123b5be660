/* LAS: files built here byte by byte from the ASPRS LAS 1.4 R15
 * specification (every point data record format 0 to 10, versions 1.0 to
 * 1.4, extra bytes, VLRs, LAZ marks, broken headers), the writer's round
 * trips of georeferenced clouds, reads with classes, a crop box and
 * attributes, reads in pieces, and the option parsers.
 *
 *     test_las --seeds DIR    writes the fuzzer's seed corpus (tests/fuzz/seeds/las) */
#define _XOPEN_SOURCE 700

#include "check.h"
#include "ptreg/io.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hooks.h"

#define SEED_DIR PTREG_TEST_SOURCE_DIR "/fuzz/seeds/las"

static char tmp_dir[256];

/* ---- building LAS files ----------------------------------------------------- */

/* The bytes each point data record format takes (LAS 1.4 R15, tables 7-17). */
static const size_t format_bytes[11] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};

typedef struct las_spec {
    int major, minor;
    unsigned format_byte; /* as written: LAZ bits included */
    size_t record_length; /* 0: the format's own */
    size_t n;             /* records written */
    int counts_given;     /* 0: legacy = n (0 for formats 6-10 in 1.4) and, in 1.4, the 64-bit count n */
    uint64_t legacy, count64;
    double scale[3], offset[3];
    const char *vlr_user; /* one VLR of this user id before the points; NULL: none */
    size_t vlr_length;    /* bytes after its 54-byte header */
    size_t header_size;   /* 0: the version's */
    size_t gap;           /* bytes between the VLRs and the points */
    size_t data_offset;   /* 0: where the points are written; else the value written */
} las_spec;

static las_spec spec_default(int minor, unsigned format, size_t n)
{
    las_spec s = {1, minor, format, 0, n, 0, 0, 0, {0.01, 0.01, 0.001}, {500000, 4500000, 0}, NULL, 0, 0, 0, 0};
    return s;
}

static void put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_f64(unsigned char *p, double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    put(p, b, 8);
}

/* What record i holds: integers and attributes any format can carry. */
static int32_t point_int(size_t i, int k)
{
    const int64_t v[3] = {(int64_t)i * 1237 - 5000, 77 - (int64_t)i * 311, (int64_t)i * 13 + 12345};
    return (int32_t)v[k];
}

static uint16_t point_intensity(size_t i) { return (uint16_t)(1000 + 7 * i); }

/* Formats 0-5 hold classes 0-31, 6-10 any byte. */
static uint8_t point_class(size_t i, unsigned format) { return (uint8_t)(format < 6 ? i % 32 : (i * 37) % 256); }

static size_t header_size_of(const las_spec *s)
{
    return s->header_size ? s->header_size : s->minor == 4 ? 375 : s->minor == 3 ? 235 : 227;
}

static unsigned format_of(const las_spec *s) { return s->format_byte & 0x3F; }

static size_t record_length_of(const las_spec *s)
{
    return s->record_length ? s->record_length : format_of(s) < 11 ? format_bytes[format_of(s)] : 20;
}

static void put_counts(unsigned char *h, const las_spec *s)
{
    const int wide_format = s->minor == 4 && format_of(s) >= 6;
    uint64_t legacy = s->counts_given ? s->legacy : wide_format ? 0 : s->n;
    put(h + 107, legacy, 4);
    put(h + 111, legacy, 4); /* all first returns */
    if (s->minor == 4) {
        put(h + 247, s->counts_given ? s->count64 : s->n, 8);
        put(h + 255, s->counts_given ? s->count64 : s->n, 8);
    }
}

static void put_header(unsigned char *h, const las_spec *s, size_t data_offset)
{
    memcpy(h, "LASF", 4);
    h[24] = (unsigned char)s->major;
    h[25] = (unsigned char)s->minor;
    memcpy(h + 26, "TEST SYSTEM", 11);
    memcpy(h + 58, "test_las", 8);
    put(h + 94, header_size_of(s), 2);
    put(h + 96, s->data_offset ? s->data_offset : data_offset, 4);
    put(h + 100, s->vlr_user ? 1 : 0, 4);
    h[104] = (unsigned char)s->format_byte;
    put(h + 105, record_length_of(s), 2);
    put_counts(h, s);
    for (int k = 0; k < 3; k++) {
        put_f64(h + 131 + 8 * k, s->scale[k]);
        put_f64(h + 155 + 8 * k, s->offset[k]);
        put_f64(h + 179 + 16 * k, 1e9); /* bounds: not checked by the reader */
        put_f64(h + 187 + 16 * k, -1e9);
    }
}

static void put_vlr(unsigned char *v, const las_spec *s)
{
    memcpy(v + 2, s->vlr_user, strlen(s->vlr_user));
    put(v + 18, 22204, 2);
    put(v + 20, s->vlr_length, 2);
    memset(v + 54, 0x5A, s->vlr_length);
}

/* Record i: every byte the reader must skip is 0xA5 (GPS time, colours,
 * wave packets, extra bytes); formats 0-5 set flag bits above the class. */
static void put_record(unsigned char *r, size_t len, unsigned format, size_t i)
{
    memset(r, 0xA5, len);
    for (int k = 0; k < 3; k++)
        put(r + 4 * k, (uint32_t)point_int(i, k), 4);
    put(r + 12, point_intensity(i), 2);
    if (format < 6)
        r[15] = (unsigned char)(point_class(i, format) | (i % 3 == 0 ? 0xE0 : 0x20));
    else
        r[16] = point_class(i, format);
}

/* A LAS file as s describes it, s->n records long; *size its bytes. */
static unsigned char *build(const las_spec *s, size_t *size)
{
    const size_t hs = header_size_of(s), vlr = s->vlr_user ? 54 + s->vlr_length : 0;
    const size_t at = hs + vlr + s->gap, rec = record_length_of(s);
    *size = at + s->n * rec;
    unsigned char *d = calloc(1, *size);
    put_header(d, s, at);
    if (s->vlr_user)
        put_vlr(d + hs, s);
    for (size_t i = 0; i < s->n; i++)
        put_record(d + at + i * rec, rec, format_of(s), i);
    return d;
}

static int write_bytes(const char *path, const unsigned char *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(d, 1, n, f) == n;
    if (f)
        ok &= fclose(f) == 0;
    return ok;
}

static void tmp_path(char *path, size_t cap, const char *name) { snprintf(path, cap, "%s/%s", tmp_dir, name); }

static ptreg_status read_spec(const las_spec *s, const ptreg_read_options *opt, ptreg_cloud *c, ptreg_error *err)
{
    size_t size;
    unsigned char *d = build(s, &size);
    ptreg_status st = ptreg_cloud_read_memory_with(d, size, opt, "built.las", c, err);
    free(d);
    return st;
}

static double world(const ptreg_cloud *c, size_t i, int k) { return c->origin[k] + (double)c->xyz[3 * i + k]; }

static double expected_world(const las_spec *s, size_t i, int k)
{
    return point_int(i, k) * s->scale[k] + s->offset[k];
}

static int cloud_is_empty(const ptreg_cloud *c)
{
    return c->n == 0 && !c->xyz && !c->normals && !c->intensity && !c->classification;
}

/* ---- every point data record format, every version ------------------------ */

/* Each point within float32's rounding of its world coordinate relative to
 * the chosen origin (well below a millimetre here). */
static void check_points(const las_spec *s, const ptreg_cloud *c, const char *what)
{
    int bad = 0;
    for (size_t i = 0; i < c->n && i < s->n; i++)
        for (int k = 0; k < 3; k++)
            bad += !(fabs(world(c, i, k) - expected_world(s, i, k)) <= 1e-4);
    CHECK_MSG(bad == 0, "%s: %d coordinates off", what, bad);
}

static void check_attributes(const las_spec *s, const ptreg_cloud *c, const char *what)
{
    int bad = 0;
    for (size_t i = 0; c->intensity && c->classification && i < c->n; i++)
        bad += c->intensity[i] != point_intensity(i) || c->classification[i] != point_class(i, format_of(s));
    CHECK_MSG(c->intensity && c->classification && bad == 0, "%s: %d attributes off", what, bad);
}

static void read_and_check(const las_spec *s, const char *what)
{
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    opt.format = PTREG_FORMAT_LAS;
    opt.attributes = 1;
    ptreg_cloud c;
    ptreg_error err;
    ptreg_status st = read_spec(s, &opt, &c, &err);
    CHECK_MSG(st == PTREG_OK && c.n == s->n, "%s: status %d, %zu points: %s", what, st, c.n, err.message);
    check_points(s, &c, what);
    check_attributes(s, &c, what);
    /* the first point chose the origin: whole units, near it */
    CHECK_MSG(c.origin[0] == 500000 - 50 && c.origin[1] == 4500000 + 1 && c.origin[2] == 0, "%s: origin %f %f %f", what,
              c.origin[0], c.origin[1], c.origin[2]);
    ptreg_cloud_free(&c);
}

/* The versions in which each format first appeared, and 1.4 for all. */
static void test_point_formats(void)
{
    const int first_minor[11] = {0, 0, 2, 2, 3, 3, 4, 4, 4, 4, 4};
    for (unsigned f = 0; f < 11; f++) {
        const int minors[2] = {first_minor[f], 4};
        for (int m = 0; m < (first_minor[f] == 4 ? 1 : 2); m++) {
            const int minor = minors[m];
            char what[64];
            snprintf(what, sizeof what, "LAS 1.%d format %u", minor, f);
            las_spec s = spec_default(minor, f, 40);
            read_and_check(&s, what);
            /* extra bytes after the format's own: skipped */
            s.record_length = format_bytes[f] + 7;
            snprintf(what, sizeof what, "LAS 1.%d format %u + 7 extra bytes", minor, f);
            read_and_check(&s, what);
        }
    }
}

static void test_versions(void)
{
    for (int minor = 0; minor <= 4; minor++) {
        char what[64];
        snprintf(what, sizeof what, "LAS 1.%d format 1", minor);
        las_spec s = spec_default(minor, 1, 25);
        read_and_check(&s, what);
    }
    /* 1.4: the 64-bit count decides when it is set, whatever the legacy one says */
    las_spec s = spec_default(4, 6, 30);
    s.counts_given = 1;
    s.legacy = 0;
    s.count64 = 30;
    read_and_check(&s, "1.4, legacy count 0");
    s.legacy = 29;
    read_and_check(&s, "1.4, legacy count 29, 64-bit 30");
    s.format_byte = 1;
    s.legacy = 30;
    s.count64 = 0;
    read_and_check(&s, "1.4 format 1, only the legacy count");
    /* VLRs before the points, and a gap: the offset to point data decides */
    s = spec_default(2, 3, 12);
    s.vlr_user = "LASF_Projection";
    s.vlr_length = 100;
    s.gap = 9;
    read_and_check(&s, "1.2 with a VLR and a gap");
    s = spec_default(4, 7, 12);
    s.header_size = 400; /* a longer header block than 1.4's */
    read_and_check(&s, "1.4 with a 400-byte header");
}

/* ---- errors ----------------------------------------------------------------- */

/* A failed read: the status, "built.las: byte B: " and what follows, an
 * empty cloud. */
static void expect_failure(const las_spec *s, ptreg_status want, const char *place, const char *part)
{
    ptreg_cloud c;
    ptreg_error err;
    char head[64];
    snprintf(head, sizeof head, "built.las: %s: ", place);
    ptreg_status st = read_spec(s, NULL, &c, &err);
    CHECK_MSG(st == want, "status %d want %d: %s", st, want, err.message);
    CHECK_MSG(strncmp(err.message, head, strlen(head)) == 0, "'%s' does not start '%s'", err.message, head);
    CHECK_MSG(strstr(err.message, part) != NULL, "'%s' lacks '%s'", err.message, part);
    CHECK(cloud_is_empty(&c));
    ptreg_cloud_free(&c);
}

static void expect_bytes_failure(const unsigned char *d, size_t size, const char *want)
{
    ptreg_cloud c;
    ptreg_error err;
    ptreg_status st = ptreg_cloud_read_memory(d, size, PTREG_FORMAT_LAS, "built.las", &c, &err);
    CHECK_MSG(st == PTREG_ERR_FORMAT && strcmp(err.message, want) == 0, "status %d: '%s', want '%s'", st, err.message,
              want);
    CHECK(cloud_is_empty(&c));
}

static void test_truncated(void)
{
    las_spec s = spec_default(2, 0, 5);
    size_t size;
    unsigned char *d = build(&s, &size);
    expect_bytes_failure(d, 100, "built.las: byte 100: the file ends inside the public header block (227 bytes)");
    expect_bytes_failure(d, 3, "built.las: byte 0: not a LAS file: it does not start with \"LASF\"");
    /* the last record cut: 4 whole ones */
    expect_bytes_failure(d, size - 1, "built.las: byte 307: point count 5 but the file holds 4 records");
    put(d + 107, 4000000000u, 4);
    expect_bytes_failure(d, size, "built.las: byte 327: point count 4000000000 but the file holds 5 records");
    put(d + 94, 400, 2);
    expect_bytes_failure(d, size, "built.las: byte 94: header size 400 but the file has only 327 bytes");
    free(d);
    s = spec_default(4, 6, 3);
    s.counts_given = 1;
    s.count64 = UINT64_MAX;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 465", "point count 18446744073709551615 but the file holds 3 records");
}

static void test_bad_headers(void)
{
    las_spec s = spec_default(2, 1, 4);
    s.scale[1] = 0;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 139", "y scale factor 0 must be finite and nonzero");
    s.scale[1] = NAN;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 139", "y scale factor nan must be finite and nonzero");
    s.scale[1] = 0.01;
    s.offset[2] = INFINITY;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 171", "z offset inf must be finite");
    s = spec_default(2, 1, 4);
    s.data_offset = 100000;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 96", "offset to point data 100000 is beyond the end of the file");
    s.data_offset = 200;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 96", "offset to point data 200 is inside the 227-byte header");
    s = spec_default(2, 1, 4);
    s.header_size = 226;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 94", "header size 226 is less than the 227 bytes");
    s = spec_default(4, 6, 4);
    s.header_size = 227;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 94", "header size 227 is less than the 375 bytes of a LAS 1.4");
    s = spec_default(2, 1, 4);
    s.record_length = 27;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 105", "point data record length 27 is less than the 28 bytes");
    s = spec_default(4, 11, 4);
    expect_failure(&s, PTREG_ERR_UNSUPPORTED, "byte 104", "point data record format 11 is not read (0 to 10 are)");
    s = spec_default(5, 1, 4);
    expect_failure(&s, PTREG_ERR_UNSUPPORTED, "byte 24", "LAS version 1.5 is not read (1.0 to 1.4 are)");
    s = spec_default(2, 1, 4);
    s.major = 2;
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 24", "LAS version 2.2 is not read");
    s = spec_default(2, 1, 0);
    expect_failure(&s, PTREG_ERR_FORMAT, "byte 227", "no usable point: the file has none");
}

#define LAZ_MESSAGE \
    "LAZ (compressed LAS) is not read: decompress it first, e.g. with laszip or PDAL (`pdal translate in.laz out.las`)"

static void test_laz(void)
{
    las_spec s = spec_default(2, 3 | 0x80, 4);
    expect_failure(&s, PTREG_ERR_UNSUPPORTED, "byte 104", LAZ_MESSAGE);
    s.format_byte = 6 | 0xC0;
    s.minor = 4;
    expect_failure(&s, PTREG_ERR_UNSUPPORTED, "byte 104", LAZ_MESSAGE);
    s.format_byte = 1 | 0x40;
    expect_failure(&s, PTREG_ERR_UNSUPPORTED, "byte 104", LAZ_MESSAGE);
    /* the format byte cleared, LASzip's VLR still there */
    s = spec_default(2, 3, 4);
    s.vlr_user = "laszip encoded";
    s.vlr_length = 40;
    expect_failure(&s, PTREG_ERR_UNSUPPORTED, "byte 227", LAZ_MESSAGE);

    /* a .laz path is LAS by its extension and refused by its content */
    char path[512];
    tmp_path(path, sizeof path, "points.laz");
    s = spec_default(2, 1 | 0x80, 4);
    size_t size;
    unsigned char *d = build(&s, &size);
    CHECK(write_bytes(path, d, size));
    ptreg_cloud c;
    ptreg_error err;
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err) == PTREG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "points.laz: byte 104: LAZ (compressed LAS)") != NULL, "%s", err.message);
    CHECK(cloud_is_empty(&c));
    free(d);
    unlink(path);
}

/* ---- options: classes, crop, attributes --------------------------------------- */

static void test_classes_and_crop(void)
{
    las_spec s = spec_default(2, 1, 200);
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    opt.classes = 1;
    CHECK(ptreg_classes_parse("2,6", opt.keep_class) == 0);
    ptreg_cloud c;
    ptreg_error err;
    CHECK(read_spec(&s, &opt, &c, &err) == PTREG_OK);
    size_t want = 0;
    for (size_t i = 0; i < s.n; i++)
        want += point_class(i, 1) == 2 || point_class(i, 1) == 6;
    CHECK_MSG(c.n == want && !c.intensity, "classes 2,6: %zu points, want %zu", c.n, want);
    for (size_t i = 0, j = 0; i < s.n && j < c.n; i++)
        if (point_class(i, 1) == 2 || point_class(i, 1) == 6)
            CHECK_NEAR(world(&c, j++, 0), expected_world(&s, i, 0), 1e-4);
    ptreg_cloud_free(&c);

    /* a crop box in world coordinates, bounds included, with the classes */
    opt.crop = 1;
    for (int k = 0; k < 3; k++) {
        /* nan-ok: the test's own crop box, from its own points */
        opt.crop_min[k] = fmin(expected_world(&s, 30, k), expected_world(&s, 150, k));
        opt.crop_max[k] = fmax(expected_world(&s, 30, k), expected_world(&s, 150, k)); /* nan-ok */
    }
    CHECK(read_spec(&s, &opt, &c, &err) == PTREG_OK);
    want = 0;
    for (size_t i = 30; i <= 150; i++)
        want += point_class(i, 1) == 2 || point_class(i, 1) == 6;
    CHECK_MSG(c.n == want, "crop and classes: %zu points, want %zu", c.n, want);
    ptreg_cloud_free(&c);
    opt.classes = 0;
    CHECK_MSG(read_spec(&s, &opt, &c, &err) == PTREG_OK && c.n == 121, "crop: %zu points", c.n);
    ptreg_cloud_free(&c);

    /* nothing left: an error that says why */
    opt.classes = 1;
    CHECK(ptreg_classes_parse("200-255", opt.keep_class) == 0);
    CHECK(read_spec(&s, &opt, &c, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "none passed the crop box or the classes") != NULL, "%s", err.message);
    CHECK(cloud_is_empty(&c));
}

static void test_attributes(void)
{
    las_spec s = spec_default(4, 8, 50);
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    ptreg_cloud c;
    ptreg_error err;
    CHECK(read_spec(&s, &opt, &c, &err) == PTREG_OK && c.n == 50);
    CHECK(!c.intensity && !c.classification);
    ptreg_cloud_free(&c);
    /* kept with the classes they were filtered by */
    opt.attributes = 1;
    opt.classes = 1;
    CHECK(ptreg_classes_parse("0-127", opt.keep_class) == 0);
    CHECK(read_spec(&s, &opt, &c, &err) == PTREG_OK);
    int bad = 0;
    for (size_t i = 0, j = 0; i < s.n; i++)
        if (point_class(i, 8) < 128) {
            bad += j >= c.n || c.classification[j] != point_class(i, 8) || c.intensity[j] != point_intensity(i);
            j++;
        }
    CHECK_MSG(bad == 0 && c.n > 0 && c.n < 50, "%d attributes off, %zu points", bad, c.n);
    ptreg_cloud_free(&c);
    /* origin_auto 0: the origin stays 0 */
    ptreg_read_options_default(&opt);
    opt.origin_auto = 0;
    CHECK(read_spec(&s, &opt, &c, &err) == PTREG_OK && c.origin[0] == 0 && c.origin[1] == 0);
    ptreg_cloud_free(&c);
}

/* ---- the writer ---------------------------------------------------------------- */

/* A cloud at UTM-like places: world x = 500000.123 + ..., kept relative to
 * the origin (500000, 4500000, 100). */
static void utm_cloud(ptreg_cloud *c, size_t n, int attributes)
{
    const double origin[3] = {500000, 4500000, 100};
    CHECK(ptreg_cloud_alloc(c, n, 0, NULL) == PTREG_OK);
    memcpy(c->origin, origin, sizeof origin);
    for (size_t i = 0; i < n; i++) {
        const double w[3] = {500000.123 + 0.37 * (double)i, 4500000.456 - 0.219 * (double)i,
                             123.789 + 0.001 * (double)(i % 1000)};
        for (int k = 0; k < 3; k++)
            c->xyz[3 * i + k] = (float)(w[k] - origin[k]);
    }
    if (attributes) {
        c->intensity = malloc(n * sizeof *c->intensity);
        c->classification = malloc(n);
        for (size_t i = 0; i < n; i++) {
            c->intensity[i] = (uint16_t)(i * 31);
            c->classification[i] = (uint8_t)(i % 32);
        }
    }
}

static void check_round_trip(const ptreg_cloud *c, const char *name, int attributes)
{
    char path[512];
    tmp_path(path, sizeof path, name);
    ptreg_error err;
    CHECK_MSG(ptreg_cloud_write(path, c, NULL, &err) == PTREG_OK, "%s: %s", name, err.message);
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    opt.attributes = 1;
    ptreg_cloud back;
    CHECK_MSG(ptreg_cloud_read_with(path, &opt, &back, &err) == PTREG_OK && back.n == c->n, "%s: %s", name,
              err.message);
    /* 0.5 mm of rounding to the file's millimetres, and float32's own
     * rounding of the point read back (half a step of its value) */
    int moved = 0;
    for (size_t i = 0; i < back.n && back.n == c->n; i++)
        for (int k = 0; k < 3; k++)
            moved += !(fabs(world(&back, i, k) - world(c, i, k)) <= 0.0005 + fabs(back.xyz[3 * i + k]) * 0x1p-24);
    CHECK_MSG(moved == 0, "%s: %d coordinates moved more than 0.5 mm", name, moved);
    /* the first point chose the origin: whole units where float32 would lose millimetres */
    for (int k = 0; k < 3 && back.n; k++) {
        const double w = world(c, 0, k);
        CHECK(back.origin[k] == (fabs(w) >= PTREG_ORIGIN_THRESHOLD ? nearbyint(w) : 0.0));
    }
    int bad = 0;
    for (size_t i = 0; back.intensity && i < back.n && back.n == c->n; i++)
        bad += back.intensity[i] != (attributes ? c->intensity[i] : 0) ||
               back.classification[i] != (attributes ? c->classification[i] : 1);
    CHECK_MSG(back.intensity && bad == 0, "%s: %d attributes off", name, bad);
    ptreg_cloud_free(&back);
    unlink(path);
}

static void check_written_header(const ptreg_cloud *c)
{
    char path[512];
    tmp_path(path, sizeof path, "header.las");
    ptreg_error err;
    CHECK(ptreg_cloud_write(path, c, NULL, &err) == PTREG_OK);
    ptreg_las_header h;
    CHECK_MSG(ptreg_las_header_read(path, &h, &err) == PTREG_OK, "%s", err.message);
    CHECK(h.version_major == 1 && h.version_minor == 2 && h.point_format == 0 && h.record_length == 20);
    CHECK(h.points == c->n && strncmp(h.software, "ptreg ", 6) == 0);
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < c->n; i++) {
            lo = check_least(lo, world(c, i, k));
            hi = check_worse(hi, world(c, i, k));
        }
        CHECK(h.scale[k] == 0.001 && h.offset[k] == c->origin[k]);
        CHECK_NEAR(h.min[k], lo, 0.0005);
        CHECK_NEAR(h.max[k], hi, 0.0005);
    }
    /* return 1 of 1 in each record; points by return n, 0, 0, 0, 0 */
    FILE *f = fopen(path, "rb");
    unsigned char b[247];
    CHECK(f && fread(b, 1, sizeof b, f) == sizeof b);
    CHECK(b[227 + 14] == 0x09 && b[111] == (c->n & 0xFF) && b[115] == 0 && b[127] == 0);
    if (f)
        fclose(f);
    unlink(path);
}

static void expect_write_failure(const ptreg_cloud *c, const char *part)
{
    char path[512];
    tmp_path(path, sizeof path, "bad.las");
    ptreg_error err;
    CHECK(ptreg_cloud_write(path, c, NULL, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, part) != NULL && strstr(err.message, "bad.las: ") != NULL, "'%s' lacks '%s'",
              err.message, part);
    CHECK_MSG(access(path, F_OK) != 0, "%s left behind", path);
    DIR *d = opendir(tmp_dir);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        left += e->d_name[0] != '.' || strncmp(e->d_name, ".ptreg-tmp-", 11) == 0;
    if (d)
        closedir(d);
    CHECK_MSG(left == 0, "%d files left in %s", left, tmp_dir);
}

static void test_writer_failures(void)
{
    ptreg_cloud c;
    CHECK(ptreg_cloud_alloc(&c, 3, 0, NULL) == PTREG_OK);
    const float xyz[9] = {0, 0, 0, 1, 2, 3, 3e6f, 0, 0}; /* 3,000 km: past 2^31 mm from 0 */
    memcpy(c.xyz, xyz, sizeof xyz);
    expect_write_failure(&c, "point 2: x = 3000000 does not fit LAS's 32-bit integers at scale 0.001 from offset 0");
    c.xyz[6] = NAN;
    expect_write_failure(&c, "point 2: x is not finite");
    c.xyz[6] = 5;
    c.classification = calloc(3, 1);
    c.intensity = calloc(3, sizeof *c.intensity);
    c.classification[1] = 40;
    expect_write_failure(&c, "point 1: class 40 does not fit LAS 1.2's classification (0 to 31)");
    ptreg_cloud_free(&c);
}

static void test_writer(void)
{
    ptreg_cloud c;
    utm_cloud(&c, 5000, 0);
    check_round_trip(&c, "utm.las", 0);
    check_written_header(&c);
    ptreg_cloud_free(&c);
    utm_cloud(&c, 2500, 1);
    check_round_trip(&c, "utm_attributes.las", 1);
    ptreg_cloud_free(&c);

    /* no origin: the offset is the floor of the minimum, negatives included */
    CHECK(ptreg_cloud_alloc(&c, 100, 0, NULL) == PTREG_OK);
    for (size_t i = 0; i < 300; i++)
        c.xyz[i] = (float)(-3.7 + 0.0713 * (double)i);
    check_round_trip(&c, "small.las", 0);
    char path[512];
    tmp_path(path, sizeof path, "small.las");
    ptreg_error err;
    ptreg_las_header h;
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_OK && ptreg_las_header_read(path, &h, &err) == PTREG_OK);
    CHECK(h.offset[0] == -4 && h.offset[1] == -4 && h.offset[2] == -4);
    unlink(path);
    ptreg_cloud_free(&c);

    /* an empty cloud: a valid file with no point */
    ptreg_cloud_init(&c);
    tmp_path(path, sizeof path, "empty.las");
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_OK);
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "byte 227: no usable point: the file has none") != NULL, "%s", err.message);
    unlink(path);
    test_writer_failures();
}

/* ---- pieces --------------------------------------------------------------------- */

typedef struct collected {
    double *w;
    uint8_t *cls;
    size_t n, cap, pieces;
    double origin[3];
} collected;

static ptreg_status collect(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    (void)err;
    collected *col = ctx;
    if (col->pieces++ == 0)
        memcpy(col->origin, piece->origin, sizeof col->origin);
    for (size_t i = 0; i < piece->n && col->n < col->cap; i++, col->n++) {
        for (int k = 0; k < 3; k++)
            col->w[3 * col->n + k] = world(piece, i, k);
        col->cls[col->n] = piece->classification ? piece->classification[i] : 255;
    }
    return PTREG_OK;
}

static void compare_pieces(const char *path, const ptreg_read_options *opt, size_t piece)
{
    ptreg_cloud whole;
    ptreg_error err;
    CHECK(ptreg_cloud_read_with(path, opt, &whole, &err) == PTREG_OK);
    collected col = {calloc(3 * whole.n, sizeof(double)), calloc(whole.n, 1), 0, whole.n, 0, {0}};
    CHECK_MSG(ptreg_cloud_read_pieces(path, opt, piece, collect, &col, &err) == PTREG_OK, "%s", err.message);
    CHECK_MSG(col.n == whole.n && col.pieces == (whole.n + piece - 1) / piece, "%zu points in %zu pieces", col.n,
              col.pieces);
    CHECK(memcmp(col.origin, whole.origin, sizeof col.origin) == 0);
    int bad = 0;
    for (size_t i = 0; i < col.n && col.n == whole.n; i++) {
        for (int k = 0; k < 3; k++)
            bad += col.w[3 * i + k] != world(&whole, i, k);
        bad += col.cls[i] != (whole.classification ? whole.classification[i] : 255);
    }
    CHECK_MSG(bad == 0, "pieces of %zu: %d values differ", piece, bad);
    free(col.w);
    free(col.cls);
    ptreg_cloud_free(&whole);
}

static void test_pieces(void)
{
    /* past 65536 points: the memory map's pages are let go during the read */
    las_spec s = spec_default(4, 6, 70000);
    size_t size;
    unsigned char *d = build(&s, &size);
    char path[512];
    tmp_path(path, sizeof path, "pieces.las");
    CHECK(write_bytes(path, d, size));
    free(d);
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    compare_pieces(path, &opt, 777);
    compare_pieces(path, &opt, 70000);
    opt.attributes = 1;
    opt.classes = 1;
    CHECK(ptreg_classes_parse("2,6,100-200", opt.keep_class) == 0);
    compare_pieces(path, &opt, 500);
    unlink(path);
}

/* ---- option parsers --------------------------------------------------------------- */

static int kept(const unsigned char keep[256], const char *want)
{
    unsigned char w[256] = {0};
    CHECK(ptreg_classes_parse(want, w) == 0);
    return memcmp(keep, w, 256) == 0;
}

static void test_parsers(void)
{
    unsigned char keep[256];
    memset(keep, 7, sizeof keep);
    CHECK(ptreg_classes_parse("2,6", keep) == 0);
    int set = 0;
    for (int c = 0; c < 256; c++)
        set += keep[c];
    CHECK(set == 2 && keep[2] == 1 && keep[6] == 1);
    CHECK(ptreg_classes_parse("1-5", keep) == 0 && keep[0] == 0 && keep[1] && keep[5] && !keep[6]);
    CHECK(ptreg_classes_parse(" 0 - 255 ", keep) == 0 && keep[0] && keep[255]);
    CHECK(ptreg_classes_parse("9,2-3, 7", keep) == 0 && kept(keep, "2,3,7,9"));
    CHECK(ptreg_classes_parse("4-4", keep) == 0 && kept(keep, "4"));
    const char *bad[] = {"", ",", "2,", ",2", "256", "5-3", "1-", "-1", "a", "2;6", "1--3", "2 6", "1e1", NULL};
    for (int i = 0; i < 14; i++) {
        unsigned char before[256];
        memcpy(before, keep, 256);
        CHECK_MSG(ptreg_classes_parse(bad[i], keep) == -1 && memcmp(before, keep, 256) == 0, "'%s'",
                  bad[i] ? bad[i] : "NULL");
    }

    double lo[3], hi[3];
    CHECK(ptreg_crop_parse("500000,4500000,-10,500100.5,4500100,1e3", lo, hi) == 0);
    CHECK(lo[0] == 500000 && lo[1] == 4500000 && lo[2] == -10 && hi[0] == 500100.5 && hi[2] == 1000);
    CHECK(ptreg_crop_parse(" 1 , 2 ,3,1,2,3 ", lo, hi) == 0 && lo[0] == 1 && hi[2] == 3);
    const char *bad_crop[] = {"1,2,3,4,5",           "1,2,3,4,5,6,7",
                              "2,0,0,1,1,1",         "nan,0,0,1,1,1",
                              "0,0,0,inf,1,1",       "0,0,0,1,1,1x",
                              "0,,0,1,1,1",          "",
                              "1e999,0,0,2e999,1,1", NULL};
    for (int i = 0; i < 10; i++) {
        lo[0] = 42;
        CHECK_MSG(ptreg_crop_parse(bad_crop[i], lo, hi) == -1 && lo[0] == 42, "'%s'",
                  bad_crop[i] ? bad_crop[i] : "NULL");
    }
}

/* ---- the header alone, sniffing, the seed corpus ------------------------------------ */

static void test_header_and_sniffing(void)
{
    las_spec s = spec_default(3, 5, 7);
    size_t size;
    unsigned char *d = build(&s, &size);
    ptreg_las_header h;
    ptreg_error err;
    CHECK(ptreg_las_header_read_memory(d, size, "m", &h, &err) == PTREG_OK);
    CHECK(h.version_minor == 3 && h.point_format == 5 && h.record_length == 63 && h.points == 7);
    CHECK(strcmp(h.system, "TEST SYSTEM") == 0 && strcmp(h.software, "test_las") == 0);
    CHECK(h.scale[2] == 0.001 && h.offset[1] == 4500000 && h.min[0] == -1e9 && h.max[2] == 1e9);
    CHECK(ptreg_las_header_read_memory(d, 10, "m", &h, &err) == PTREG_ERR_FORMAT && h.points == 0);
    /* "LASF" picks the reader from memory */
    ptreg_cloud c;
    CHECK(ptreg_cloud_read_memory(d, size, PTREG_FORMAT_AUTO, "m", &c, &err) == PTREG_OK && c.n == 7);
    ptreg_cloud_free(&c);
    /* LAS has classes; another format does not */
    ptreg_read_options opt;
    ptreg_read_options_default(&opt);
    opt.classes = 1;
    CHECK(ptreg_cloud_read_memory_with("1 2 3\n", 6, &opt, "m", &c, &err) == PTREG_ERR_ARG);
    free(d);
}

/* The seeds: one file per format (1.4 for 6-10), extra bytes, a VLR, a
 * LAZ mark. */
static int write_seeds(const char *dir)
{
    int ok = 1;
    for (unsigned f = 0; f < 13; f++) {
        const unsigned format = f < 11 ? f : 3;
        las_spec s = spec_default(format < 2 ? 0 : format < 4 ? 2 : format < 6 ? 3 : 4, format, 3);
        if (f == 11) {
            s.record_length = 31;
            s.vlr_user = "LASF_Projection";
            s.vlr_length = 8;
        }
        if (f == 12)
            s.format_byte = 0x83;
        size_t size;
        unsigned char *d = build(&s, &size);
        char path[512];
        snprintf(path, sizeof path, "%s/seed%02u.las", dir, f);
        ok &= write_bytes(path, d, size);
        free(d);
    }
    return ok ? 0 : 1;
}

/* The committed seeds are what this file builds. */
static void test_seeds_current(void)
{
    char dir[300];
    tmp_path(dir, sizeof dir, "seeds");
    CHECK(mkdir(dir, 0755) == 0 && write_seeds(dir) == 0);
    for (unsigned f = 0; f < 13; f++) {
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/seed%02u.las", dir, f);
        snprintf(b, sizeof b, "%s/seed%02u.las", SEED_DIR, f);
        FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
        unsigned char x[1024], y[1024];
        size_t na = fa ? fread(x, 1, sizeof x, fa) : 0, nb = fb ? fread(y, 1, sizeof y, fb) : 1;
        CHECK_MSG(na == nb && memcmp(x, y, na) == 0, "%s differs from what test_las builds (--seeds)", b);
        if (fa)
            fclose(fa);
        if (fb)
            fclose(fb);
        unlink(a);
    }
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--seeds") == 0)
        return write_seeds(argv[2]);
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ptreg_test_las_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_point_formats();
    test_versions();
    test_truncated();
    test_bad_headers();
    test_laz();
    test_classes_and_crop();
    test_attributes();
    test_writer();
    test_pieces();
    test_parsers();
    test_header_and_sniffing();
    test_seeds_current();
    rmdir(tmp_dir);
    return check_exit();
}
