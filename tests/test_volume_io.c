/* Volume I/O: raw volumes (types, byte order, sizes from the name), NRRD
 * (raw, gzip and ascii data, attached and detached, spacing and origin),
 * NIfTI-1 (plain, gzip, big-endian, scaling), the NRRD and keypoint
 * writers, and every bad-input rule: sizes the file cannot back, unknown
 * types, truncated and corrupt data, each with a message naming the file
 * and the place and nothing left allocated. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "ptreg/ptreg.h"

#include <stdint.h>
#include <unistd.h>
#include <zlib.h>
#include "hooks.h"

static char dir[256];

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

static void write_file(const char *name, const void *data, size_t n)
{
    char p[512];
    path_of(p, sizeof p, name);
    FILE *f = fopen(p, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

/* gzip of data (zlib with a gzip header). */
static size_t gzip(const void *data, size_t n, unsigned char *out, size_t cap)
{
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_FINISH);
    size_t len = cap - z.avail_out;
    deflateEnd(&z);
    return len;
}

/* A 5 x 4 x 3 volume of i16 values i * 7 - 100, as bytes in either order. */
enum { NX = 5, NY = 4, NZ = 3, N = NX * NY * NZ };
static void i16_bytes(unsigned char *b, int big)
{
    for (int i = 0; i < N; i++) {
        uint16_t v = (uint16_t)(int16_t)(i * 7 - 100);
        b[2 * i + (big ? 1 : 0)] = (unsigned char)(v & 0xff);
        b[2 * i + (big ? 0 : 1)] = (unsigned char)(v >> 8);
    }
}

static int is_expected_i16(const ptreg_volume *v)
{
    if (v->nx != NX || v->ny != NY || v->nz != NZ || v->type != PTREG_VOXEL_I16)
        return 0;
    for (int i = 0; i < N; i++)
        if (((const int16_t *)v->data)[i] != i * 7 - 100)
            return 0;
    return 1;
}

static ptreg_status read_named(const char *name, const ptreg_raw_options *raw, ptreg_volume *v, ptreg_error *err)
{
    char p[512];
    path_of(p, sizeof p, name);
    return ptreg_volume_read(p, PTREG_VOLUME_AUTO, raw, v, err);
}

/* A failure: the status, a message naming the file and containing `what`,
 * and an empty volume. */
static void expect_error(const char *name, const ptreg_raw_options *raw, ptreg_status want, const char *what)
{
    ptreg_volume v;
    ptreg_error err;
    ptreg_status s = read_named(name, raw, &v, &err);
    CHECK_MSG(s == want, "%s: status %d, want %d (%s)", name, (int)s, (int)want, s ? err.message : "ok");
    if (s) {
        CHECK_MSG(strstr(err.message, name) != NULL, "%s: message does not name the file: %s", name, err.message);
        CHECK_MSG(strstr(err.message, what) != NULL, "%s: message lacks '%s': %s", name, what, err.message);
    }
    CHECK(v.data == NULL && v.nx == 0);
    if (!s)
        ptreg_volume_free(&v);
}

static void test_raw(void)
{
    unsigned char le[2 * N], be[2 * N];
    i16_bytes(le, 0);
    i16_bytes(be, 1);
    write_file("vol.raw", le, sizeof le);
    write_file("vol_be.raw", be, sizeof be);
    write_file("named_5x4x3_int16.raw", le, sizeof le);
    ptreg_raw_options raw;
    ptreg_raw_options_default(&raw);
    raw.dims[0] = NX, raw.dims[1] = NY, raw.dims[2] = NZ;
    raw.type = PTREG_VOXEL_I16;
    raw.type_set = 1;
    raw.spacing[2] = 2.5;
    ptreg_volume v;
    CHECK(read_named("vol.raw", &raw, &v, NULL) == PTREG_OK && is_expected_i16(&v) && v.spacing[2] == 2.5);
    ptreg_volume_free(&v);
    raw.big_endian = 1;
    CHECK(read_named("vol_be.raw", &raw, &v, NULL) == PTREG_OK && is_expected_i16(&v));
    ptreg_volume_free(&v);
    CHECK(read_named("named_5x4x3_int16.raw", NULL, &v, NULL) == PTREG_OK && is_expected_i16(&v));
    ptreg_volume_free(&v);
    /* every type, one voxel each way */
    for (int t = PTREG_VOXEL_U8; t <= PTREG_VOXEL_F64; t++) {
        unsigned char b[8 * 6] = {0};
        size_t size = ptreg_voxel_size((ptreg_voxel_type)t);
        b[size * 5] = 1; /* voxel 5 is 1 in the low byte (little-endian) or a tiny float */
        write_file("t.raw", b, size * 6);
        ptreg_raw_options o;
        ptreg_raw_options_default(&o);
        o.dims[0] = 3, o.dims[1] = 2, o.dims[2] = 1;
        o.type = (ptreg_voxel_type)t;
        o.type_set = 1;
        CHECK(read_named("t.raw", &o, &v, NULL) == PTREG_OK && v.type == (ptreg_voxel_type)t);
        CHECK(t >= PTREG_VOXEL_F32 || ptreg_volume_voxel(&v, 5) == 1.0f);
        ptreg_volume_free(&v);
    }
    raw.big_endian = 0;
    raw.dims[2] = 4; /* 80 voxels need 160 bytes, the file has 120 */
    expect_error("vol.raw", &raw, PTREG_ERR_FORMAT, "need 160");
    raw.dims[2] = 2; /* smaller than the file: wrong sizes too */
    expect_error("vol.raw", &raw, PTREG_ERR_FORMAT, "the file has 120 bytes");
    raw.dims[0] = (size_t)1 << 40, raw.dims[1] = (size_t)1 << 40;
    expect_error("vol.raw", &raw, PTREG_ERR_FORMAT, "overflow");
    expect_error("vol.raw", NULL, PTREG_ERR_ARG, "--dims");
}

static size_t nrrd_header(char *h, size_t cap, const char *type, const char *encoding, const char *extra)
{
    return (size_t)snprintf(h, cap,
                            "NRRD0004\n# a comment\ntype: %s\ndimension: 3\nsizes: 5 4 3\n"
                            "endian: little\nencoding: %s\nkey:=value\n%s\n",
                            type, encoding, extra);
}

static void write_nrrd(const char *name, const char *type, const char *encoding, const char *extra, const void *data,
                       size_t n)
{
    unsigned char buf[4096];
    size_t h = nrrd_header((char *)buf, sizeof buf, type, encoding, extra);
    memcpy(buf + h, data, n);
    write_file(name, buf, h + n);
}

static void test_nrrd(void)
{
    unsigned char le[2 * N], gz[1024];
    i16_bytes(le, 0);
    ptreg_volume v;
    ptreg_error err;
    write_nrrd("a.nrrd", "short", "raw", "spacings: 0.5 0.25 2\n", le, sizeof le);
    CHECK(read_named("a.nrrd", NULL, &v, &err) == PTREG_OK && is_expected_i16(&v) && v.spacing[0] == 0.5 &&
          v.spacing[2] == 2);
    ptreg_volume_free(&v);
    size_t g = gzip(le, sizeof le, gz, sizeof gz);
    write_nrrd("g.nrrd", "int16", "gzip",
               "space dimension: 3\nspace directions: (0,3,0) (0,0,2) (1,0,0)\n"
               "space origin: (10,-5,2.5)\n",
               gz, g);
    CHECK_MSG(read_named("g.nrrd", NULL, &v, &err) == PTREG_OK, "%s", err.message);
    CHECK(is_expected_i16(&v) && v.spacing[0] == 3 && v.spacing[1] == 2 && v.origin[0] == 10 && v.origin[1] == -5);
    ptreg_volume_free(&v);
    char text[1024];
    size_t t = 0;
    for (int i = 0; i < N; i++)
        t += (size_t)snprintf(text + t, sizeof text - t, "%d%s", i * 7 - 100, i % 5 == 4 ? "\n" : " ");
    write_nrrd("t.nrrd", "signed short", "ascii", "", text, t);
    CHECK_MSG(read_named("t.nrrd", NULL, &v, &err) == PTREG_OK && is_expected_i16(&v), "%s", err.message);
    ptreg_volume_free(&v);
    /* detached: header and data file side by side, with byte and line skips */
    unsigned char det[2 * N + 9];
    memcpy(det, "skip\nxxx\n", 9);
    memcpy(det + 9, le, sizeof le);
    write_file("d.raw", det, sizeof det);
    const char *hdr = "NRRD0005\ntype: short\ndimension: 3\nsizes: 5 4 3\nendian: little\nencoding: raw\n"
                      "line skip: 1\nbyte skip: 4\ndata file: d.raw\n";
    write_file("d.nhdr", hdr, strlen(hdr));
    CHECK_MSG(read_named("d.nhdr", NULL, &v, &err) == PTREG_OK && is_expected_i16(&v), "%s", err.message);
    ptreg_volume_free(&v);
    /* byte skip -1: the data are the file's last bytes */
    write_nrrd("m.nrrd", "short", "raw", "byte skip: -1\n", det, sizeof det);
    CHECK(read_named("m.nrrd", NULL, &v, &err) == PTREG_OK && is_expected_i16(&v));
    ptreg_volume_free(&v);
    /* 2-D data: one plane; 4-D with a first axis of 1 */
    const char *two = "NRRD0004\ntype: uchar\ndimension: 2\nsizes: 3 2\nencoding: raw\n\nABCDEF";
    write_file("two.nrrd", two, strlen(two));
    CHECK(read_named("two.nrrd", NULL, &v, &err) == PTREG_OK && v.nx == 3 && v.ny == 2 && v.nz == 1 &&
          ((uint8_t *)v.data)[5] == 'F');
    ptreg_volume_free(&v);
    const char *four = "NRRD0004\ntype: uchar\ndimension: 4\nsizes: 1 3 2 1\nencoding: raw\n\nABCDEF";
    write_file("four.nrrd", four, strlen(four));
    CHECK(read_named("four.nrrd", NULL, &v, &err) == PTREG_OK && v.nx == 3 && v.ny == 2 && v.nz == 1);
    ptreg_volume_free(&v);

    /* bad input */
    write_nrrd("b1.nrrd", "short", "raw", "", le, sizeof le - 1);
    expect_error("b1.nrrd", NULL, PTREG_ERR_FORMAT, "the sizes need 120");
    write_nrrd("b2.nrrd", "quaternion", "raw", "", le, sizeof le);
    expect_error("b2.nrrd", NULL, PTREG_ERR_FORMAT, "line 3: unsupported type");
    write_nrrd("b3.nrrd", "short", "gzip", "", gz, g - 6);
    expect_error("b3.nrrd", NULL, PTREG_ERR_FORMAT, "gzip");
    unsigned char bad[1024];
    memcpy(bad, gz, g);
    for (size_t i = 12; i < g - 8; i++)
        bad[i] ^= 0x5a;
    write_nrrd("b4.nrrd", "short", "gzip", "", bad, g);
    expect_error("b4.nrrd", NULL, PTREG_ERR_FORMAT, "gzip");
    const char *big = "NRRD0004\ntype: float\ndimension: 3\nsizes: 100000 100000 100000\nendian: little\n"
                      "encoding: gzip\n\nxxxx";
    write_file("b5.nrrd", big, strlen(big));
    expect_error("b5.nrrd", NULL, PTREG_ERR_FORMAT, "can hold");
    const char *huge = "NRRD0004\ntype: float\ndimension: 3\nsizes: 4294967296 4294967296 4294967296\n"
                       "endian: little\nencoding: raw\n\nxxxx";
    write_file("b6.nrrd", huge, strlen(huge));
    expect_error("b6.nrrd", NULL, PTREG_ERR_FORMAT, "overflow");
    write_nrrd("b7.nrrd", "short", "raw", "endian: middle\n", le, sizeof le);
    expect_error("b7.nrrd", NULL, PTREG_ERR_FORMAT, "endian");
    const char *noend = "NRRD0004\ntype: short\ndimension: 3\nsizes: 5 4 3\nencoding: raw\n\n";
    write_file("b8.nrrd", noend, strlen(noend));
    expect_error("b8.nrrd", NULL, PTREG_ERR_FORMAT, "lacks endian");
    write_nrrd("b9.nrrd", "short", "raw", "sizes: 5 4\n", le, sizeof le);
    expect_error("b9.nrrd", NULL, PTREG_ERR_FORMAT, "dimension is 3 but 2 sizes");
    write_file("b10.nrrd", "NRRD0009\n\n", 10);
    expect_error("b10.nrrd", NULL, PTREG_ERR_FORMAT, "line 1: not a NRRD");
    write_nrrd("b11.nrrd", "short", "bzip2", "", le, sizeof le);
    expect_error("b11.nrrd", NULL, PTREG_ERR_FORMAT, "encoding");
    const char *missing = "NRRD0004\ntype: uchar\ndimension: 1\nsizes: 4\nencoding: raw\ndata file: nowhere.raw\n";
    write_file("b12.nhdr", missing, strlen(missing));
    expect_error("b12.nhdr", NULL, PTREG_ERR_FORMAT, "nowhere.raw");
    char few[200];
    memset(few, ' ', sizeof few);
    memcpy(few, "1 2 3", 5);
    write_nrrd("b13.nrrd", "short", "ascii", "", few, sizeof few);
    expect_error("b13.nrrd", NULL, PTREG_ERR_FORMAT, "has 3 numbers, the sizes need 60");
    memcpy(text, "300 ", 4); /* was "-100" */
    write_nrrd("b14.nrrd", "uchar", "ascii", "", text, t);
    expect_error("b14.nrrd", NULL, PTREG_ERR_FORMAT, "'300' is not a u8 value");
    write_nrrd("b14b.nrrd", "short", "ascii", "", few, 0);
    expect_error("b14b.nrrd", NULL, PTREG_ERR_FORMAT, "cannot hold 60 numbers");
    write_nrrd("b15.nrrd", "short", "raw", "sizes: 5 0 3\n", le, sizeof le);
    expect_error("b15.nrrd", NULL, PTREG_ERR_FORMAT, "sizes must be");
    /* from memory, a detached header cannot be read */
    CHECK(ptreg_volume_read_memory(hdr, strlen(hdr), PTREG_VOLUME_NRRD, "mem", NULL, &v, &err) ==
              PTREG_ERR_UNSUPPORTED &&
          v.data == NULL);
}

/* A NIfTI-1 header (348 bytes + 4 of extension flag) for the i16 volume. */
static void nifti_header(unsigned char *h, int big, float slope, float inter)
{
    memset(h, 0, 352);
#define PUT(off, val, bytes)                                                          \
    do {                                                                              \
        uint64_t v_ = (uint64_t)(val);                                                \
        for (int b_ = 0; b_ < (bytes); b_++)                                          \
            h[(off) + (big ? (bytes)-1 - b_ : b_)] = (unsigned char)(v_ >> (8 * b_)); \
    } while (0)
#define PUTF(off, f)         \
    do {                     \
        float f_ = (f);      \
        uint32_t u_;         \
        memcpy(&u_, &f_, 4); \
        PUT(off, u_, 4);     \
    } while (0)
    PUT(0, 348, 4);
    PUT(40, 3, 2);
    PUT(42, NX, 2);
    PUT(44, NY, 2);
    PUT(46, NZ, 2);
    for (int a = 4; a <= 7; a++)
        PUT(40 + 2 * a, 1, 2);
    PUT(70, 4, 2);  /* int16 */
    PUT(72, 16, 2); /* bitpix */
    PUTF(80, 0.8f);
    PUTF(84, 0.8f);
    PUTF(88, 1.5f);
    PUTF(108, 352.0f);
    PUTF(112, slope);
    PUTF(116, inter);
    PUT(254, 1, 2); /* sform_code */
    PUTF(292, -12.0f);
    PUTF(308, 4.0f);
    PUTF(324, 7.0f);
    memcpy(h + 344, "n+1", 4);
#undef PUT
#undef PUTF
}

static void test_nifti(void)
{
    unsigned char file[352 + 2 * N], gz[2048];
    ptreg_volume v;
    ptreg_error err;
    for (int big = 0; big < 2; big++) {
        nifti_header(file, big, 0, 0);
        i16_bytes(file + 352, big);
        write_file("n.nii", file, sizeof file);
        CHECK_MSG(read_named("n.nii", NULL, &v, &err) == PTREG_OK, "%s", err.message);
        CHECK(is_expected_i16(&v) && fabs(v.spacing[2] - 1.5) < 1e-6 && v.origin[0] == -12 && v.origin[2] == 7);
        ptreg_volume_free(&v);
    }
    size_t g = gzip(file, sizeof file, gz, sizeof gz);
    write_file("n.nii.gz", gz, g);
    CHECK_MSG(read_named("n.nii.gz", NULL, &v, &err) == PTREG_OK && is_expected_i16(&v), "%s", err.message);
    ptreg_volume_free(&v);
    nifti_header(file, 0, 2.0f, 1.0f);
    i16_bytes(file + 352, 0);
    write_file("s.nii", file, sizeof file);
    CHECK(read_named("s.nii", NULL, &v, &err) == PTREG_OK && v.type == PTREG_VOXEL_F32 &&
          ((float *)v.data)[3] == 2.0f * (3 * 7 - 100) + 1.0f);
    ptreg_volume_free(&v);
    /* bad input */
    write_file("b1.nii", file, sizeof file - 2);
    expect_error("b1.nii", NULL, PTREG_ERR_FORMAT, "need 120");
    file[70] = 128; /* datatype 128: RGB */
    write_file("b2.nii", file, sizeof file);
    expect_error("b2.nii", NULL, PTREG_ERR_FORMAT, "byte 70: unsupported datatype");
    nifti_header(file, 0, 0, 0);
    file[40] = 4; /* dim[0] = 4 and dim[4] = 2: a time series */
    file[48] = 2;
    write_file("b3.nii", file, sizeof file);
    expect_error("b3.nii", NULL, PTREG_ERR_FORMAT, "time series");
    write_file("b4.nii", file, 200);
    expect_error("b4.nii", NULL, PTREG_ERR_FORMAT, "truncated NIfTI-1 header");
    write_file("b5.nii.gz", gz, g / 2);
    expect_error("b5.nii.gz", NULL, PTREG_ERR_FORMAT, "");
}

static void test_writers(void)
{
    ptreg_volume v;
    ptreg_volume_alloc(&v, 7, 5, 3, PTREG_VOXEL_F32, NULL);
    for (size_t i = 0; i < ptreg_volume_count(&v); i++)
        ((float *)v.data)[i] = (float)i * 0.25f - 3.0f;
    v.spacing[1] = 0.5;
    char p[512];
    path_of(p, sizeof p, "w.nrrd");
    ptreg_error err;
    CHECK(ptreg_volume_write(p, &v, &err) == PTREG_OK);
    ptreg_volume back;
    CHECK(ptreg_volume_read(p, PTREG_VOLUME_AUTO, NULL, &back, &err) == PTREG_OK);
    CHECK(back.type == PTREG_VOXEL_F32 && back.nx == 7 && back.spacing[1] == 0.5 &&
          !memcmp(back.data, v.data, ptreg_volume_count(&v) * 4));
    ptreg_volume_free(&back);
    v.origin[0] = 100;
    CHECK(ptreg_volume_write(p, &v, &err) == PTREG_OK);
    CHECK(ptreg_volume_read(p, PTREG_VOLUME_AUTO, NULL, &back, &err) == PTREG_OK && back.origin[0] == 100 &&
          back.spacing[1] == 0.5);
    ptreg_volume_free(&back);

    /* NIfTI-1: every voxel type reads back with its sizes, spacing, origin
     * and bits; sizes past int16 are refused, nothing written. */
    for (int t = PTREG_VOXEL_U8; t <= PTREG_VOXEL_F64; t++) {
        ptreg_volume w;
        CHECK(ptreg_volume_alloc(&w, 6, 4, 3, (ptreg_voxel_type)t, NULL) == PTREG_OK);
        unsigned char *bytes = w.data;
        for (size_t i = 0; i < ptreg_volume_count(&w) * ptreg_voxel_size(w.type); i++)
            bytes[i] = (unsigned char)(37 * i + 11);
        if (t == PTREG_VOXEL_F32 || t == PTREG_VOXEL_F64) /* finite values: no NaN bit patterns */
            for (size_t i = 0; i < ptreg_volume_count(&w); i++)
                t == PTREG_VOXEL_F32 ? (void)(((float *)w.data)[i] = (float)i - 7.5f)
                                     : (void)(((double *)w.data)[i] = (double)i * 1e-3);
        w.spacing[0] = 0.5, w.spacing[2] = 2;
        w.origin[0] = -10, w.origin[1] = 4.25;
        path_of(p, sizeof p, "w.nii");
        CHECK(ptreg_volume_write(p, &w, &err) == PTREG_OK);
        CHECK_MSG(ptreg_volume_read(p, PTREG_VOLUME_AUTO, NULL, &back, &err) == PTREG_OK, "%s", err.message);
        CHECK_MSG(back.type == w.type && back.nx == 6 && back.ny == 4 && back.nz == 3 && back.spacing[0] == 0.5 &&
                      back.spacing[1] == 1 && back.spacing[2] == 2 && back.origin[0] == -10 && back.origin[1] == 4.25 &&
                      back.origin[2] == 0 &&
                      !memcmp(back.data, w.data, ptreg_volume_count(&w) * ptreg_voxel_size(w.type)),
                  "type %d", t);
        ptreg_volume_free(&back);
        ptreg_volume_free(&w);
    }
    ptreg_volume wide = v;
    wide.nx = 40000;
    path_of(p, sizeof p, "wide.nii");
    CHECK(ptreg_volume_write(p, &wide, &err) == PTREG_ERR_ARG && strstr(err.message, "32767") && access(p, F_OK) != 0);
    /* the extension picks the format, any case; one the writers do not make is refused, nothing written */
    path_of(p, sizeof p, "upper.NII");
    CHECK(ptreg_volume_write(p, &v, &err) == PTREG_OK);
    CHECK(ptreg_volume_read(p, PTREG_VOLUME_AUTO, NULL, &back, &err) == PTREG_OK && back.nx == 7);
    ptreg_volume_free(&back);
    const char *refused[] = {"w.nii.gz", "w.nhdr", "w.raw", "w.vol"};
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        path_of(p, sizeof p, refused[k]);
        CHECK_MSG(ptreg_volume_write(p, &v, &err) == PTREG_ERR_ARG && strstr(err.message, ".nrrd or .nii") &&
                      access(p, F_OK) != 0,
                  "%s", refused[k]);
    }
    CHECK(ptreg_volume_write(NULL, &v, &err) == PTREG_ERR_ARG);

    ptreg_keypoint kp[2] = {{1, 2, 3, 5.5f}, {6, 4, 2, 1.25f}};
    path_of(p, sizeof p, "k.ply");
    CHECK(ptreg_keypoints_write(p, kp, 2, &v, &err) == PTREG_OK);
    ptreg_cloud c;
    CHECK(ptreg_cloud_read(p, PTREG_FORMAT_AUTO, &c, &err) == PTREG_OK && c.n == 2);
    CHECK(c.n == 2 && c.xyz[0] == 101.0f && c.xyz[1] == 1.0f && c.xyz[2] == 3.0f && c.xyz[3] == 106.0f);
    ptreg_cloud_free(&c);
    path_of(p, sizeof p, "k.csv");
    CHECK(ptreg_keypoints_write(p, kp, 2, NULL, &err) == PTREG_OK);
    FILE *f = fopen(p, "r");
    char line[256] = "", second[256] = "";
    CHECK(f && fgets(line, sizeof line, f) && fgets(second, sizeof second, f));
    if (f)
        fclose(f);
    CHECK(!strcmp(line, "x,y,z,score,i,j,k\n") && !strcmp(second, "1,2,3,5.5,1,2,3\n"));
    path_of(p, sizeof p, "k.xyz");
    CHECK(ptreg_keypoints_write(p, kp, 2, NULL, &err) == PTREG_ERR_ARG && access(p, F_OK) != 0);
    path_of(p, sizeof p, "no/such/dir/k.csv");
    CHECK(ptreg_keypoints_write(p, kp, 2, NULL, &err) == PTREG_ERR_IO);
    ptreg_volume_free(&v);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/ptreg-volume-io-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_raw();
    test_nrrd();
    test_nifti();
    test_writers();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_exit();
}
