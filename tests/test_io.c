/* Point-cloud I/O: round trips of every writer, the good fixtures of
 * tests/data/io/good, the bad-input corpus of tests/data/io/bad (listed with
 * the expected status and message in tests/data/io/bad.txt), inputs too big
 * to commit, a deterministic mutation run over the good fixtures, transform
 * files and atomic writes. The real data sets are read by test_io_data.c. */
#define _XOPEN_SOURCE 700

#include "check.h"
#include "io/io_internal.h"
#include "ptreg/io.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "hooks.h"
#include "core/numeric.h"

/* Under AddressSanitizer any allocation past 1 GiB aborts the test: a
 * reader that trusts a count like 4000000000 is caught even on a machine
 * whose overcommit would let the allocation through. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "max_allocation_size_mb=1024:allocator_may_return_null=0"; }
#endif

#define DATA_DIR PTREG_TEST_SOURCE_DIR "/data/io"

static char tmp_dir[256];

/* ---- helpers ------------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *size)
{
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *size = n;
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Files in tmp_dir whose name starts with prefix. */
static int count_files(const char *prefix)
{
    DIR *d = opendir(tmp_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static int has_place(const char *msg)
{
    for (const char *p = msg; (p = strstr(p, " ")) != NULL; p++) {
        if ((strncmp(p + 1, "line ", 5) == 0 || strncmp(p + 1, "byte ", 5) == 0) && p[6] >= '0' && p[6] <= '9')
            return 1;
    }
    return 0;
}

static int cloud_is_empty(const ptreg_cloud *c)
{
    return c->n == 0 && !c->xyz && !c->normals && c->dropped_nonfinite == 0;
}

/* The contract of every failed read: a status, a message with the name and
 * a place, and nothing left in the cloud. */
static void check_failure(ptreg_status s, const ptreg_error *err, const ptreg_cloud *c, const char *name)
{
    CHECK_MSG(s != PTREG_OK, "%s read", name);
    CHECK_MSG(strstr(err->message, name) != NULL, "%s: message '%s'", name, err->message);
    CHECK_MSG(has_place(err->message), "%s: no place in '%s'", name, err->message);
    CHECK_MSG(cloud_is_empty(c), "%s: cloud not empty", name);
}

static ptreg_status read_mem(const char *text, ptreg_format format, ptreg_cloud *c, ptreg_error *err)
{
    return ptreg_cloud_read_memory(text, strlen(text), format, "mem", c, err);
}

static void random_cloud(ptreg_cloud *c, size_t n, int normals, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    CHECK(ptreg_cloud_alloc(c, n, normals, NULL) == PTREG_OK);
    /* Random bit patterns: denormals, -0, the extremes and everything in
     * between must survive %.9g text. */
    for (size_t i = 0; i < 3 * n * (normals ? 2 : 1); i++) {
        float v;
        do {
            uint32_t bits = (uint32_t)ptreg_rng_next(&rng);
            memcpy(&v, &bits, sizeof v);
        } while (!isfinite(v));
        (i < 3 * n ? c->xyz : c->normals)[i % (3 * n)] = v;
    }
    /* The first point decides a text cloud's origin: a far one would give
     * the cloud an origin, and the tiny and huge values after it are no
     * place on Earth (tests of the origin: test_origin.c). */
    for (int k = 0; k < 3; k++)
        c->xyz[k] = fmodf(c->xyz[k], 1000.0f);
}

/* ---- numbers ------------------------------------------------------------- */

/* The scanner's fast path must agree with strtof bit for bit: random
 * decimals of every shape, from a few digits to more than float holds. */
static void test_number_scanner(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 99);
    int mismatches = 0;
    for (int i = 0; i < 200000; i++) {
        char s[64];
        size_t n = 0;
        uint64_t r = ptreg_rng_next(&rng);
        if (r & 1)
            s[n++] = r & 2 ? '-' : '+';
        int whole = (int)(r >> 2) % 9, frac = (int)(r >> 6) % 14;
        for (int k = 0; k < whole; k++)
            s[n++] = (char)('0' + ptreg_rng_next(&rng) % 10);
        if (r & 1024 || whole == 0)
            s[n++] = '.';
        for (int k = 0; k < frac; k++)
            s[n++] = (char)('0' + ptreg_rng_next(&rng) % 10);
        for (int k = (r >> 20) % 4 ? 0 : (int)(r >> 23) % 16; k > 0; k--)
            s[n++] = '0';
        if ((r >> 11) % 8 == 0)
            n += (size_t)snprintf(s + n, sizeof s - n, "e%d", (int)((r >> 14) % 90) - 45);
        s[n] = '\0';
        char *end;
        float want = strtof(s, &end), got = 0;
        io_token tok = {s, n};
        int ok = io_parse_float(tok, &got);
        if (ok != (end == s + n && n > 0) || (ok && memcmp(&got, &want, sizeof got) != 0)) {
            if (mismatches++ < 5)
                fprintf(stderr, "'%s': strtof %.9g, io_parse_float %d %.9g\n", s, want, ok, got);
        }
    }
    CHECK(mismatches == 0);
}

/* ---- round trips --------------------------------------------------------- */

static void round_trip(ptreg_format format, int ascii, int normals, int write_normals)
{
    char path[512];
    const char *ext = format == PTREG_FORMAT_PLY ? "ply" : format == PTREG_FORMAT_PCD ? "pcd" : "xyz";
    snprintf(path, sizeof path, "%s/rt.%s", tmp_dir, ext);
    ptreg_cloud c, back;
    random_cloud(&c, 1000, normals, 7 + (uint64_t)format * 4 + (uint64_t)ascii * 2 + (uint64_t)normals);
    ptreg_write_options opt;
    ptreg_write_options_default(&opt);
    opt.ascii = ascii;
    opt.with_normals = write_normals;
    ptreg_error err;
    CHECK(ptreg_cloud_write(path, &c, &opt, &err) == PTREG_OK);
    CHECK_MSG(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &back, &err) == PTREG_OK, "%s: %s", path, err.message);
    CHECK(back.n == c.n);
    CHECK_MSG(back.n == c.n && memcmp(back.xyz, c.xyz, 12 * c.n) == 0, "%s ascii %d xyz differ", ext, ascii);
    int expect_normals = normals && write_normals;
    CHECK((back.normals != NULL) == expect_normals);
    if (expect_normals && back.normals && back.n == c.n)
        CHECK_MSG(memcmp(back.normals, c.normals, 12 * c.n) == 0, "%s ascii %d normals differ", ext, ascii);
    CHECK(count_files(".ptreg-tmp-") == 0);
    ptreg_cloud_free(&c);
    ptreg_cloud_free(&back);
    unlink(path);
}

static void test_round_trips(void)
{
    const ptreg_format formats[] = {PTREG_FORMAT_PLY, PTREG_FORMAT_PCD, PTREG_FORMAT_XYZ};
    for (int f = 0; f < 3; f++)
        for (int ascii = 0; ascii < (formats[f] == PTREG_FORMAT_XYZ ? 1 : 2); ascii++)
            for (int normals = 0; normals < 2; normals++) {
                round_trip(formats[f], ascii, normals, 1);
                if (normals)
                    round_trip(formats[f], ascii, normals, 0);
            }

    /* An explicit format overrides the extension; an unknown one is refused,
     * never written in a format the name does not say (issue 47). */
    char path[512];
    snprintf(path, sizeof path, "%s/cloud.dat", tmp_dir);
    ptreg_cloud c, back;
    ptreg_error err;
    random_cloud(&c, 10, 0, 3);
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "cloud.dat") && strstr(err.message, ".ply"), "%s", err.message);
    CHECK(access(path, F_OK) != 0);
    ptreg_write_options opt;
    ptreg_write_options_default(&opt);
    opt.format = PTREG_FORMAT_PCD;
    CHECK(ptreg_cloud_write(path, &c, &opt, &err) == PTREG_OK);
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_PCD, &back, &err) == PTREG_OK && back.n == 10);
    ptreg_cloud_free(&back);
    opt.format = PTREG_FORMAT_VTK;
    CHECK(ptreg_cloud_write(path, &c, &opt, &err) == PTREG_ERR_UNSUPPORTED);
    unlink(path);

    /* An empty cloud writes a valid file that reads back as "no point". */
    ptreg_cloud empty;
    ptreg_cloud_init(&empty);
    snprintf(path, sizeof path, "%s/empty.ply", tmp_dir);
    CHECK(ptreg_cloud_write(path, &empty, NULL, &err) == PTREG_OK);
    CHECK(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &back, &err) == PTREG_ERR_FORMAT);
    CHECK(strstr(err.message, "no usable point") != NULL);
    unlink(path);
    ptreg_cloud_free(&c);
}

/* ---- colour and intensity ------------------------------------------------ */

/* A fixture's colours (and, with attributes, intensities) as expected. */
static void check_fixture_colors(const char *file, int attributes, const uint8_t *rgb, const uint16_t *intensity,
                                 size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/good/%s", DATA_DIR, file);
    ptreg_read_options ro;
    ptreg_read_options_default(&ro);
    ro.attributes = attributes;
    ptreg_cloud c;
    ptreg_error err;
    CHECK_MSG(ptreg_cloud_read_with(path, &ro, &c, &err) == PTREG_OK, "%s: %s", file, err.message);
    CHECK_MSG(c.n == n && c.rgb && memcmp(c.rgb, rgb, 3 * n) == 0, "%s: colours", file);
    if (intensity && attributes)
        CHECK_MSG(c.intensity && c.n == n && memcmp(c.intensity, intensity, n * sizeof *intensity) == 0,
                  "%s: intensity", file);
    else
        CHECK_MSG(!c.intensity, "%s: intensity without attributes", file);
    ptreg_cloud_free(&c);
    ro.skip_colors = 1;
    CHECK_MSG(ptreg_cloud_read_with(path, &ro, &c, &err) == PTREG_OK && !c.rgb, "%s: skip_colors", file);
    ptreg_cloud_free(&c);
}

/* Colours and intensity through every writer and back, bit for bit. */
static void color_round_trip(const char *ext, int ascii)
{
    char path[512];
    snprintf(path, sizeof path, "%s/colors.%s", tmp_dir, ext);
    ptreg_cloud c, back;
    ptreg_error err;
    random_cloud(&c, 700, 0, 99);
    for (size_t i = 0; i < 3 * c.n; i++) /* within LAS's reach; the colours are what is checked */
        c.xyz[i] = (float)((i * 7919) % 100000) * 0.001f - 50.0f;
    c.rgb = malloc(3 * c.n);
    c.intensity = malloc(c.n * sizeof *c.intensity);
    for (size_t i = 0; i < 3 * c.n; i++)
        c.rgb[i] = (uint8_t)(i * 37 + i / 7);
    for (size_t i = 0; i < c.n; i++)
        c.intensity[i] = (uint16_t)(i * 97);
    ptreg_write_options wo;
    ptreg_write_options_default(&wo);
    wo.ascii = ascii;
    ptreg_read_options ro;
    ptreg_read_options_default(&ro);
    ro.attributes = 1;
    CHECK_MSG(ptreg_cloud_write(path, &c, &wo, &err) == PTREG_OK, "%s: %s", path, err.message);
    CHECK_MSG(ptreg_cloud_read_with(path, &ro, &back, &err) == PTREG_OK, "%s: %s", path, err.message);
    CHECK_MSG(back.n == c.n && back.rgb && memcmp(back.rgb, c.rgb, 3 * c.n) == 0, "%s ascii %d: colours", ext, ascii);
    CHECK_MSG(back.n == c.n && back.intensity && memcmp(back.intensity, c.intensity, 2 * c.n) == 0,
              "%s ascii %d: intensity", ext, ascii);
    ptreg_cloud_free(&back);
    ptreg_cloud_free(&c);
    remove(path);
}

static void test_colors(void)
{
    const uint8_t pcd[] = {128, 128, 224, 255, 0, 10}, csv[] = {255, 0, 10, 1, 2, 3},
                  off[] = {255, 0, 10, 1, 2, 3, 0, 255, 0};
    const uint16_t intensity[] = {7, 9};
    check_fixture_colors("rgb.pcd", 0, pcd, intensity, 2);
    check_fixture_colors("rgb.pcd", 1, pcd, intensity, 2);
    check_fixture_colors("colors.csv", 1, csv, intensity, 2);
    check_fixture_colors("mesh.off", 1, off, NULL, 3);
    static const char *const exts[] = {"ply", "pcd", "xyz", "las"};
    for (int e = 0; e < 4; e++)
        for (int ascii = 0; ascii < (e < 2 ? 2 : 1); ascii++)
            color_round_trip(exts[e], ascii);
    /* a voxel's colour is its points' mean, rounded */
    const float xyz[] = {0.1f, 0.1f, 0.1f, 0.2f, 0.2f, 0.2f, 0.3f, 0.3f, 0.3f, 5, 5, 5};
    uint8_t rgb[] = {0, 10, 255, 1, 11, 255, 3, 11, 254, 9, 8, 7};
    ptreg_cloud in = {4, (float *)xyz, NULL, NULL, 0, {0, 0, 0}, NULL, NULL, rgb}, out;
    ptreg_error err;
    CHECK(ptreg_voxel_downsample(&in, 1.0, &out, &err) == PTREG_OK);
    const uint8_t want[] = {1, 11, 255, 9, 8, 7};
    CHECK_MSG(out.n == 2 && out.rgb && memcmp(out.rgb, want, 6) == 0, "voxel colours");
    ptreg_cloud_free(&out);
    /* normals into LAS: refused, nothing written */
    char path[512];
    snprintf(path, sizeof path, "%s/n.las", tmp_dir);
    ptreg_cloud c;
    random_cloud(&c, 10, 1, 5);
    for (size_t i = 0; i < 3 * c.n; i++)
        c.xyz[i] = (float)i;
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_ERR_ARG && strstr(err.message, "cannot hold normals"));
    CHECK(access(path, F_OK) != 0);
    ptreg_write_options wo;
    ptreg_write_options_default(&wo);
    wo.with_normals = 0;
    CHECK(ptreg_cloud_write(path, &c, &wo, &err) == PTREG_OK);
    remove(path);
    ptreg_cloud_free(&c);
}

/* ---- good fixtures ------------------------------------------------------- */

typedef struct good_case {
    const char *file;
    size_t n, dropped;
    int normals;
    float first[6], last[6];
} good_case;

/* clang-format off */
static const good_case good_cases[] = {
    {"be_normals.ply", 3, 0, 1, {1.5f, -2.25f, 3, 0, 0, 1}, {-1e-3f, 4e5f, 7, 0, -1, 0}},
    {"all_types.ply", 3, 0, 0, {1, 2, 3}, {1e10f, -2.5f, 2147483647.0f}},
    {"lists_binary.ply", 3, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"faces_ascii.ply", 3, 0, 1, {1.5f, -2.25f, 3, 0, 0, 1}, {-1e-3f, 4e5f, 7, 0, -1, 0}},
    {"compressed.pcd", 3, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"organised.pcd", 3, 3, 0, {1, 2, 3}, {7, 8, 9}},
    {"reordered.pcd", 2, 0, 1, {1, 2.5f, 3.5f, 0.25f, 0.5f, 0.75f},
     {-4, -5, -6, -0.25f, -0.5f, -0.75f}},
    {"v5.pcd", 2, 1, 0, {1, 2, 3}, {4, 5, 6}},
    {"cube.xyz", 5, 0, 0, {0, 0, 0}, {1, 1, 1}},
    {"normals.xyz", 3, 0, 1, {1, 2, 3, 0, 0, 1}, {7, 8, 9, 1, 0, 0}},
    {"header.csv", 3, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"field.vtk", 4, 0, 0, {0, 0, 0}, {0, 0, 1.25f}},
    {"mesh.obj", 4, 0, 1, {1.5f, -2.25f, 3, 0, 0, 1}, {-1e-3f, 4e5f, 7, 0, -1, 0}},
    {"mesh.off", 3, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"ascii.stl", 4, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"binary.stl", 4, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"rgb.pcd", 2, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
    {"colors.csv", 2, 0, 0, {1.5f, -2.25f, 3}, {-1e-3f, 4e5f, 7}},
};
/* clang-format on */
#define N_GOOD (sizeof good_cases / sizeof good_cases[0])

static int same_point(const ptreg_cloud *c, size_t i, const float *want)
{
    int ok = memcmp(c->xyz + 3 * i, want, 3 * sizeof(float)) == 0;
    if (c->normals)
        ok &= memcmp(c->normals + 3 * i, want + 3, 3 * sizeof(float)) == 0;
    return ok;
}

static void test_good_fixtures(void)
{
    for (size_t k = 0; k < N_GOOD; k++) {
        const good_case *g = &good_cases[k];
        char path[512];
        snprintf(path, sizeof path, "%s/good/%s", DATA_DIR, g->file);
        ptreg_cloud c;
        ptreg_error err;
        ptreg_status s = ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err);
        CHECK_MSG(s == PTREG_OK, "%s: %s", g->file, err.message);
        CHECK_MSG(c.n == g->n, "%s: %zu points", g->file, c.n);
        CHECK_MSG(c.dropped_nonfinite == g->dropped, "%s: %zu dropped", g->file, c.dropped_nonfinite);
        CHECK_MSG((c.normals != NULL) == g->normals, "%s normals", g->file);
        if (c.n == g->n && c.n) {
            CHECK_MSG(same_point(&c, 0, g->first), "%s: first point", g->file);
            CHECK_MSG(same_point(&c, c.n - 1, g->last), "%s: last point", g->file);
        }
        ptreg_cloud_free(&c);

        /* The same bytes from memory, format sniffed from the content. */
        size_t size;
        unsigned char *data = slurp(path, &size);
        CHECK(data != NULL);
        s = ptreg_cloud_read_memory(data, size, PTREG_FORMAT_AUTO, g->file, &c, &err);
        CHECK_MSG(s == PTREG_OK && c.n == g->n, "%s sniffed: %s", g->file, err.message);
        ptreg_cloud_free(&c);
        free(data);
    }
}

/* ---- bad corpus ---------------------------------------------------------- */

static ptreg_status status_named(const char *name)
{
    if (strcmp(name, "FORMAT") == 0)
        return PTREG_ERR_FORMAT;
    if (strcmp(name, "UNSUPPORTED") == 0)
        return PTREG_ERR_UNSUPPORTED;
    if (strcmp(name, "IO") == 0)
        return PTREG_ERR_IO;
    return PTREG_OK;
}

static void check_bad_file(const char *file, ptreg_status want, const char *tail)
{
    char path[512], expect[1024];
    snprintf(path, sizeof path, "%s/bad/%s", DATA_DIR, file);
    snprintf(expect, sizeof expect, "%s: %s", path, tail);
    ptreg_cloud c;
    ptreg_error err;
    ptreg_status s = ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, &err);
    CHECK_MSG(s == want, "%s: status %d, want %d (%s)", file, s, want, err.message);
    CHECK_MSG(strcmp(err.message, expect) == 0, "%s:\n  got  '%s'\n  want '%s'", file, err.message, expect);
    check_failure(s, &err, &c, file);
}

/* Runs bad.txt and returns how many files it lists. */
static int run_bad_list(char names[][64], int max)
{
    FILE *f = fopen(DATA_DIR "/bad.txt", "r");
    CHECK(f != NULL);
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        char file[64], status[32];
        int used = 0;
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || sscanf(line, "%63s %31s %n", file, status, &used) != 2)
            continue;
        CHECK_MSG(status_named(status) != PTREG_OK, "bad.txt: status %s", status);
        check_bad_file(file, status_named(status), line + used);
        if (n < max)
            snprintf(names[n], 64, "%s", file);
        n++;
    }
    if (f)
        fclose(f);
    return n;
}

static void test_bad_corpus(void)
{
    static char listed[256][64];
    int n = run_bad_list(listed, 256);
    CHECK_MSG(n >= 40, "only %d bad inputs", n);
    DIR *d = opendir(DATA_DIR "/bad");
    CHECK(d != NULL);
    int files = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        files++;
        int found = 0;
        for (int i = 0; i < n && i < 256; i++)
            found |= strcmp(listed[i], e->d_name) == 0;
        CHECK_MSG(found, "bad/%s is not in bad.txt", e->d_name);
    }
    if (d)
        closedir(d);
    CHECK_MSG(files == n, "bad/ has %d files, bad.txt lists %d", files, n);
}

/* ---- inputs made at test time -------------------------------------------- */

/* A buffer of n copies of c between a prefix and a suffix. */
static char *padded(const char *prefix, char c, size_t n, const char *suffix)
{
    size_t a = strlen(prefix), b = strlen(suffix);
    char *s = malloc(a + n + b + 1);
    memcpy(s, prefix, a);
    memset(s + a, c, n);
    memcpy(s + a + n, suffix, b + 1);
    return s;
}

static void expect_mem(const char *text, ptreg_format format, ptreg_status want, const char *part)
{
    ptreg_cloud c;
    ptreg_error err;
    ptreg_status s = read_mem(text, format, &c, &err);
    CHECK_MSG(s == want, "status %d want %d: %s", s, want, err.message);
    if (want != PTREG_OK) {
        check_failure(s, &err, &c, "mem");
        CHECK_MSG(strstr(err.message, part) != NULL, "'%s' lacks '%s'", err.message, part);
    } else {
        CHECK(c.n > 0);
    }
    ptreg_cloud_free(&c);
}

static void test_long_lines(void)
{
    const size_t two_mb = 2u << 20;
    const char *ply_tail = "\nelement vertex 1\nproperty float x\nproperty float y\n"
                           "property float z\nend_header\n1 2 3\n";
    /* A 2 MB comment is fine, a 2 MB keyword is not. */
    char *s = padded("ply\nformat ascii 1.0\ncomment ", 'c', two_mb, ply_tail);
    expect_mem(s, PTREG_FORMAT_AUTO, PTREG_OK, "");
    free(s);
    s = padded("ply\nformat ascii 1.0\n", 'k', two_mb, ply_tail);
    expect_mem(s, PTREG_FORMAT_AUTO, PTREG_ERR_FORMAT, "line 3: unknown header keyword 'kkk");
    free(s);
    /* A million fields on one line. */
    size_t n = two_mb / 2;
    s = malloc(two_mb + 64);
    strcpy(s, "FIELDS");
    for (size_t i = 0; i < n; i++)
        memcpy(s + 6 + 2 * i, " a", 2);
    strcpy(s + 6 + 2 * n, "\nDATA ascii\n");
    expect_mem(s, PTREG_FORMAT_PCD, PTREG_ERR_UNSUPPORTED, "line 1: more than 65536 fields");
    free(s);
    s = padded("1 2 3\n4 5 ", '6', two_mb, "\n");
    expect_mem(s, PTREG_FORMAT_XYZ, PTREG_ERR_FORMAT, "line 2: '6666");
    free(s);
    s = padded("# vtk DataFile Version 3.0\n", 't', two_mb, "\nASCII\nDATASET POLYDATA\nPOINTS 1 float\n1 2 3\n");
    expect_mem(s, PTREG_FORMAT_AUTO, PTREG_OK, "");
    free(s);
    /* Many blank lines before the data: no recursion, no per-line cost. */
    s = padded("", '\n', two_mb, "1 2 3\n");
    expect_mem(s, PTREG_FORMAT_AUTO, PTREG_OK, "");
    free(s);
}

static void test_inline_cases(void)
{
    /* A CRLF ascii PLY and header. */
    expect_mem("ply\r\nformat ascii 1.0\r\nelement vertex 1\r\nproperty float x\r\n"
               "property float y\r\nproperty float z\r\nend_header\r\n1 2 3\r\n",
               PTREG_FORMAT_AUTO, PTREG_OK, "");
    /* Memory input that is not NUL-terminated, cut inside a number. */
    const char text[] = {'1', ' ', '2', ' ', '3', '\n', '4', ' ', '5', ' ', '6'};
    ptreg_cloud c;
    ptreg_error err;
    CHECK(ptreg_cloud_read_memory(text, sizeof text, PTREG_FORMAT_XYZ, "cut", &c, &err) == PTREG_OK);
    CHECK(c.n == 2 && c.xyz[5] == 6.0f);
    ptreg_cloud_free(&c);
    /* A trailing comma is tolerated, a doubled one is an empty field. */
    expect_mem("1,2,3,\n", PTREG_FORMAT_XYZ, PTREG_OK, "");
    expect_mem("1,2,,3\n", PTREG_FORMAT_XYZ, PTREG_ERR_FORMAT, "line 1: empty field");
    /* The sniffer picks the format from the first bytes. */
    expect_mem("VERSION .7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2 3\n", PTREG_FORMAT_AUTO,
               PTREG_OK, "");
    expect_mem("FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 1\nDATA ascii\n1 2\n", PTREG_FORMAT_AUTO, PTREG_ERR_FORMAT,
               "line 6: the line ends before field 'z'");
    /* Doubles that overflow float become infinite and are dropped. */
    expect_mem("ply\nformat ascii 1.0\nelement vertex 2\nproperty double x\nproperty double y\n"
               "property double z\nend_header\n1e300 0 0\n1 2 3\n",
               PTREG_FORMAT_PLY, PTREG_OK, "");
    /* Arguments. */
    CHECK(ptreg_cloud_read_memory(NULL, 5, PTREG_FORMAT_XYZ, "x", &c, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_cloud_read_memory("1 2 3", 5, (ptreg_format)42, "x", &c, &err) == PTREG_ERR_ARG);
    CHECK(cloud_is_empty(&c));
    CHECK(ptreg_cloud_read(NULL, PTREG_FORMAT_AUTO, &c, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_cloud_read("/nonexistent/x.ply", PTREG_FORMAT_AUTO, &c, &err) == PTREG_ERR_IO);
    CHECK(strstr(err.message, "/nonexistent/x.ply") && strstr(err.message, strerror(ENOENT)));
    CHECK(ptreg_cloud_read(tmp_dir, PTREG_FORMAT_XYZ, &c, &err) == PTREG_ERR_IO);
    CHECK(cloud_is_empty(&c));
}

static size_t lzf_literals(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 32) {
        size_t k = n - i < 32 ? n - i : 32;
        out[o++] = (unsigned char)(k - 1);
        memcpy(out + o, in + i, k);
        o += k;
    }
    return o;
}

/* An LZF encoder for fixtures (liblzf's own compressor reads its hash table
 * uninitialised, which valgrind reports): literal runs, and back references
 * to the longest match within the last 64 bytes. A reference is a control
 * byte (length - 2 in the top 3 bits, 7 meaning "one more length byte",
 * distance - 1 high bits in the low 5), the extra length byte, then the low
 * distance byte; it may overlap the bytes it produces. */
static size_t lzf_encode(const unsigned char *in, size_t n, unsigned char *out)
{
    size_t o = 0, lit = 0, i = 0;
    while (i < n) {
        size_t best = 0, dist = 0;
        for (size_t d = 1; d <= 64 && d <= i; d++) {
            size_t l = 0;
            while (l < 264 && i + l < n && in[i + l] == in[i + l - d])
                l++;
            if (l > best) {
                best = l;
                dist = d;
            }
        }
        if (best < 3) {
            i++;
            continue;
        }
        o += lzf_literals(in + lit, i - lit, out + o);
        size_t len = best - 2, off = dist - 1;
        out[o++] = (unsigned char)((len < 7 ? len : 7) << 5 | off >> 8);
        if (len >= 7)
            out[o++] = (unsigned char)(len - 7);
        out[o++] = (unsigned char)(off & 0xff);
        i += best;
        lit = i;
    }
    return o + lzf_literals(in + lit, n - lit, out + o);
}

/* An organised binary_compressed cloud with NaN points, a COUNT 3 field and
 * fields of every size. */
static void test_compressed_lzf(void)
{
    const uint16_t one = 1;
    unsigned char low;
    memcpy(&low, &one, 1);
    if (!low) { /* the arrays below are built in the host's byte order */
        printf("big-endian host: generated binary_compressed test skipped\n");
        return;
    }
    enum { W = 16, H = 8, N = W * H };
    /* Fields: x(F4) normal_x normal_y normal_z(F4) rgb(U1 x3) y(F8) z(I2)
     * intensity(U4): stored as per-field arrays. */
    static unsigned char raw[N * (4 + 12 + 3 + 8 + 2 + 4)];
    unsigned char *p = raw;
    size_t nan_points = 0;
    for (int i = 0; i < N; i++, p += 4) {
        float x = i % 5 == 0 ? NAN : (float)i * 0.5f;
        nan_points += i % 5 == 0;
        memcpy(p, &x, 4);
    }
    for (int i = 0; i < N; i++, p += 12) {
        float nrm[3] = {1, 0, (float)i};
        memcpy(p, nrm, 12);
    }
    for (int i = 0; i < N; i++, p += 3)
        memset(p, i, 3);
    for (int i = 0; i < N; i++, p += 8) {
        double y = -(double)i;
        memcpy(p, &y, 8);
    }
    for (int i = 0; i < N; i++, p += 2) {
        int16_t z = (int16_t)(i - 50);
        memcpy(p, &z, 2);
    }
    for (int i = 0; i < N; i++, p += 4)
        memcpy(p, &i, 4);
    static unsigned char file[sizeof raw * 2 + 1024];
    int hl = snprintf((char *)file, 1024,
                      "VERSION 0.7\nFIELDS x normal rgb y z intensity\nSIZE 4 4 1 8 2 4\n"
                      "TYPE F F U F I U\nCOUNT 1 3 3 1 1 1\nWIDTH %d\nHEIGHT %d\nPOINTS %d\n"
                      "DATA binary_compressed\n",
                      W, H, N);
    size_t csize = lzf_encode(raw, sizeof raw, file + hl + 8);
    CHECK(csize > 0 && csize < sizeof raw); /* back references were used */
    uint32_t sizes[2] = {(uint32_t)csize, (uint32_t)sizeof raw};
    memcpy(file + hl, sizes, 8);
    ptreg_cloud c;
    ptreg_error err;
    size_t total = (size_t)hl + 8 + csize;
    ptreg_status s = ptreg_cloud_read_memory(file, total, PTREG_FORMAT_AUTO, "lzf", &c, &err);
    CHECK_MSG(s == PTREG_OK, "%s", err.message);
    CHECK(c.n == N - nan_points && c.dropped_nonfinite == nan_points);
    CHECK(c.normals == NULL); /* a COUNT 3 "normal" field is not normals */
    if (c.n == N - nan_points) {
        CHECK(c.xyz[0] == 0.5f && c.xyz[1] == -1.0f && c.xyz[2] == -49.0f);
        size_t l = 3 * (c.n - 1);
        CHECK(c.xyz[l] == 63.5f && c.xyz[l + 1] == -127.0f && c.xyz[l + 2] == 77.0f);
    }
    ptreg_cloud_free(&c);
    /* Every truncation fails cleanly. */
    for (size_t cut = 0; cut < total; cut += 7) {
        s = ptreg_cloud_read_memory(file, cut, PTREG_FORMAT_AUTO, "lzf", &c, &err);
        if (s != PTREG_OK)
            check_failure(s, &err, &c, "lzf");
        ptreg_cloud_free(&c);
    }
}

/* ---- mutations ----------------------------------------------------------- */

static void check_any_result(ptreg_status s, const ptreg_error *err, ptreg_cloud *c, const char *name)
{
    if (s == PTREG_OK) {
        int finite = c->n > 0 && c->xyz != NULL;
        for (size_t i = 0; finite && i < 3 * c->n; i++)
            finite = isfinite(c->xyz[i]);
        CHECK_MSG(finite, "%s: an OK cloud with %zu points, not all finite", name, c->n);
    } else {
        check_failure(s, err, c, name);
    }
    ptreg_cloud_free(c);
}

/* Reads the first cut bytes from a buffer of exactly that size, so ASan
 * sees any read past the end. */
static void read_cut(const unsigned char *data, size_t cut, const char *name)
{
    ptreg_cloud c;
    ptreg_error err;
    unsigned char *b = malloc(cut ? cut : 1);
    memcpy(b, data, cut);
    ptreg_status s = ptreg_cloud_read_memory(b, cut, PTREG_FORMAT_AUTO, name, &c, &err);
    check_any_result(s, &err, &c, name);
    free(b);
}

/* Truncations (every one, or `cuts` seeded ones) and `rounds` seeded byte
 * flips, one to three at a time, through every parser. */
static void mutate_one(const unsigned char *data, size_t size, const char *name, ptreg_rng *rng, size_t cuts,
                       int rounds)
{
    static const ptreg_format formats[] = {PTREG_FORMAT_AUTO, PTREG_FORMAT_PLY, PTREG_FORMAT_PCD, PTREG_FORMAT_XYZ,
                                           PTREG_FORMAT_VTK,  PTREG_FORMAT_OBJ, PTREG_FORMAT_STL, PTREG_FORMAT_OFF};
    ptreg_cloud c;
    ptreg_error err;
    for (size_t k = 0; k <= (cuts ? cuts : size); k++)
        read_cut(data, cuts ? (size_t)(ptreg_rng_next(rng) % (size + 1)) : k, name);
    unsigned char *b = malloc(size);
    for (int round = 0; round < rounds; round++) {
        memcpy(b, data, size);
        int flips = 1 + (int)(ptreg_rng_next(rng) % 3);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(ptreg_rng_next(rng) % size);
            uint64_t r = ptreg_rng_next(rng);
            static const unsigned char specials[] = {0, '\n', ' ', '-', '9', 0xff, 0x80, '#'};
            b[at] = r & 1 ? (unsigned char)(r >> 8) : specials[(r >> 8) % sizeof specials];
        }
        ptreg_format f = formats[round % (sizeof formats / sizeof formats[0])];
        ptreg_status s = ptreg_cloud_read_memory(b, size, f, name, &c, &err);
        check_any_result(s, &err, &c, name);
    }
    free(b);
}

static void test_mutations(void)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 2024);
    double t0 = ptreg_time_ms();
    for (size_t k = 0; k < N_GOOD; k++) {
        char path[512];
        size_t size;
        snprintf(path, sizeof path, "%s/good/%s", DATA_DIR, good_cases[k].file);
        unsigned char *data = slurp(path, &size);
        CHECK(data != NULL && size > 0);
        if (data)
            mutate_one(data, size, good_cases[k].file, &rng, 0, 1000);
        free(data);
    }
    /* Real files too, when the shared data is there: fewer cuts, they are
     * larger. */
    static const char *const real[] = {"pcl/bun4.pcd", "landmarks/shooting_test_2d_target.vtk", "emicp/P101.txt"};
    const char *dir = check_data_dir();
    for (size_t k = 0; dir && k < sizeof real / sizeof real[0]; k++) {
        char path[4096];
        size_t size;
        snprintf(path, sizeof path, "%s/%s", dir, real[k]);
        unsigned char *data = slurp(path, &size);
        CHECK_MSG(data != NULL, "%s", path);
        if (data)
            mutate_one(data, size, real[k], &rng, 200, 200);
        free(data);
    }
    printf("mutation run: %.0f ms\n", ptreg_time_ms() - t0);
}

/* ---- transforms ---------------------------------------------------------- */

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_transforms(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/T.txt", tmp_dir);
    double T[16], back[16];
    const double axis[3] = {0.3, -1, 2}, t[3] = {1.0 / 3, -2e-7, 12345.678};
    ptreg_transform_from_axis_angle(axis, 37.25, t, T);
    ptreg_error err;
    CHECK(ptreg_transform_write(path, T, &err) == PTREG_OK);
    CHECK(ptreg_transform_read(path, back, &err) == PTREG_OK);
    CHECK(memcmp(T, back, sizeof T) == 0);

    write_text(path, "# pose\n1, 0, 0, 5 # x\n0 1 0 6\n\n0,0,1,7\n");
    CHECK(ptreg_transform_read(path, back, &err) == PTREG_OK);
    CHECK(back[3] == 5 && back[7] == 6 && back[11] == 7 && back[15] == 1 && back[12] == 0);

    /* .json: {"transformation": rows}, the same doubles back; the bare rows
     * read too; a JSON that is not 4 rows of 4 finite numbers is refused. */
    char json[512];
    snprintf(json, sizeof json, "%s/T.json", tmp_dir);
    CHECK(ptreg_transform_write(json, T, &err) == PTREG_OK);
    size_t size;
    unsigned char *data = slurp(json, &size);
    CHECK(data && size > 20 && !memcmp(data, "{\"transformation\": [[", 20));
    free(data);
    memset(back, 0, sizeof back);
    CHECK_MSG(ptreg_transform_read(json, back, &err) == PTREG_OK, "%s", err.message);
    CHECK(memcmp(T, back, sizeof T) == 0);
    write_text(json, " [[1, 0, 0, 5], [0, 1, 0, 6], [0, 0, 1, 7], [0, 0, 0, 1]]\n");
    CHECK(ptreg_transform_read(json, back, &err) == PTREG_OK && back[3] == 5 && back[11] == 7 && back[15] == 1);
    static const struct {
        const char *text, *part;
    } bad_json[] = {
        {"{\"transformation\": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]}", "4 rows of 4 numbers"},
        {"{\"transformation\": [[1, 0, 0, 0], [0, 1, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}", "row 2"},
        {"{\"transformation\": [[1, 0, 0, 0], [0, 1, 0, \"x\"], [0, 0, 1, 0], [0, 0, 0, 1]]}", "row 2, column 4"},
        {"{\"pose\": []}", "\"transformation\""},
        {"{\"transformation\": [[1, 0,\n", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        write_text(json, bad_json[i].text);
        memcpy(back, T, sizeof T);
        CHECK(ptreg_transform_read(json, back, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, bad_json[i].part) && strstr(err.message, json), "'%s'", err.message);
        CHECK(memcmp(back, T, sizeof T) == 0);
    }
    unlink(json);

    static const struct {
        const char *text, *part;
    } bad[] = {
        {"1 0 0 0\n0 1 0 0\n0 0 1\n", "line 4: 11 numbers"},
        {"1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1 9\n", "line 4: more than 16 numbers"},
        {"1 0 0 0\n0 one 0 0\n0 0 1 0\n", "line 2: 'one' is not a number"},
        {"1 0 0 nan\n0 1 0 0\n0 0 1 0\n", "line 1: 'nan' is not finite"},
        {"", "line 1: 0 numbers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i].text);
        memcpy(back, T, sizeof T);
        CHECK(ptreg_transform_read(path, back, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, bad[i].part) && strstr(err.message, path), "'%s'", err.message);
        CHECK(memcmp(back, T, sizeof T) == 0);
    }
    CHECK(ptreg_transform_read("/nonexistent/T.txt", back, &err) == PTREG_ERR_IO);
    T[5] = INFINITY;
    CHECK(ptreg_transform_write(path, T, &err) == PTREG_ERR_ARG);
    unlink(path);
}

/* Many poses (multiway's output and --truth) and index pairs (--pairs). */
static void test_poses_and_pairs(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/poses.txt", tmp_dir);
    double P[32];
    const double axis[3] = {1, 2, -0.5}, t[3] = {0.25, -3, 1e-9};
    ptreg_transform_identity(P);
    ptreg_transform_from_axis_angle(axis, -121.5, t, P + 16);
    const char *labels[2] = {"a.ply", NULL};
    ptreg_error err;
    CHECK(ptreg_poses_write(path, P, 2, labels, &err) == PTREG_OK);
    double *back = NULL;
    size_t n = 0;
    CHECK(ptreg_poses_read(path, &back, &n, &err) == PTREG_OK);
    CHECK(n == 2 && back && memcmp(back, P, sizeof P) == 0);
    free(back);
    static const struct {
        const char *text, *part;
    } bad[] = {
        {"1 0 0 0\n0 1 0 0\n0 0 1 0\n", "12 numbers"},
        {"1 0 0 0\n0 1 0 0\n0 0 2 0\n0 0 0 1\n", "pose 0 is not rigid"},
        {"1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1\n1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 1 1\n", "pose 1 is not rigid"},
        {"1 0 0 0\n0 1 x 0\n", "line 2: 'x' is not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i].text);
        back = NULL;
        CHECK(ptreg_poses_read(path, &back, &n, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, bad[i].part) && strstr(err.message, path), "'%s'", err.message);
        CHECK(back == NULL);
    }
    P[16] = NAN;
    CHECK(ptreg_poses_write(path, P, 2, NULL, &err) == PTREG_ERR_ARG);

    write_text(path, "# pairs\n0 1\n2,0 # a loop\n\n");
    size_t *ij = NULL;
    CHECK(ptreg_index_pairs_read(path, 3, &ij, &n, &err) == PTREG_OK);
    CHECK(n == 2 && ij && ij[0] == 0 && ij[1] == 1 && ij[2] == 2 && ij[3] == 0);
    free(ij);
    static const struct {
        const char *text, *part;
    } bad_pairs[] = {
        {"0 1\n1 3\n", "line 2: index 3: there are 3"},
        {"0 1 2\n", "line 1: more than two"},
        {"0\n", "line 1: one index"},
        {"1 1\n", "line 1: a pair of index 1 with itself"},
        {"0 -1\n", "line 1: '-1' is not an index"},
    };
    for (size_t i = 0; i < sizeof bad_pairs / sizeof bad_pairs[0]; i++) {
        write_text(path, bad_pairs[i].text);
        CHECK(ptreg_index_pairs_read(path, 3, &ij, &n, &err) == PTREG_ERR_FORMAT);
        CHECK_MSG(strstr(err.message, bad_pairs[i].part) && strstr(err.message, path), "'%s'", err.message);
    }
    unlink(path);
}

/* ---- atomic writes ------------------------------------------------------- */

static mode_t file_mode(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 0777 : 01000;
}

/* A new output gets 0666 less the umask; a symlink is written through: the
 * link stays, its target (relative to the link's folder, or dangling)
 * gets the file, and the temporary file is made beside the target. */
static void test_modes_and_links(const ptreg_cloud *c)
{
    char path[512], link[512], sub[512], target[512];
    ptreg_error err;
    snprintf(path, sizeof path, "%s/new.ply", tmp_dir);
    mode_t before = umask(077);
    CHECK(ptreg_cloud_write(path, c, NULL, &err) == PTREG_OK);
    umask(before);
    CHECK_MSG(file_mode(path) == 0600, "mode %o under umask 077", (unsigned)file_mode(path));
    unlink(path);
    before = umask(022);
    CHECK(ptreg_cloud_write(path, c, NULL, &err) == PTREG_OK);
    umask(before);
    CHECK_MSG(file_mode(path) == 0644, "mode %o under umask 022", (unsigned)file_mode(path));
    unlink(path);

    snprintf(sub, sizeof sub, "%s/sub", tmp_dir);
    CHECK(mkdir(sub, 0755) == 0);
    snprintf(target, sizeof target, "%s/sub/target.ply", tmp_dir);
    snprintf(link, sizeof link, "%s/link.ply", tmp_dir);
    CHECK(symlink("sub/target.ply", link) == 0); /* dangling, relative */
    CHECK(ptreg_cloud_write(link, c, NULL, &err) == PTREG_OK);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(target, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0);
    chmod(target, 0640);
    ptreg_atomic_file af;
    CHECK(ptreg_atomic_open(link, &af, &err) == PTREG_OK);
    CHECK_MSG(af.tmp_path && strncmp(af.tmp_path, sub, strlen(sub)) == 0, "temporary file %s", af.tmp_path);
    fputs("replaced\n", af.fp);
    CHECK(ptreg_atomic_commit(&af, &err) == PTREG_OK);
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(file_mode(target) == 0640);
    size_t size;
    unsigned char *data = slurp(link, &size);
    CHECK(data && size == 9 && memcmp(data, "replaced\n", 9) == 0);
    free(data);
    unlink(link);

    snprintf(path, sizeof path, "%s/loop.ply", tmp_dir); /* a link to itself */
    CHECK(symlink("loop.ply", path) == 0);
    CHECK(ptreg_cloud_write(path, c, NULL, &err) == PTREG_ERR_IO);
    CHECK_MSG(strstr(err.message, path) && strstr(err.message, strerror(ELOOP)), "%s", err.message);
    unlink(path);
    unlink(target);
    rmdir(sub);
    CHECK(count_files(".ptreg-tmp-") == 0);
}

static void test_write_failures(void)
{
    char path[512], missing[512];
    ptreg_cloud c;
    ptreg_error err;
    random_cloud(&c, 100000, 1, 11);

    snprintf(missing, sizeof missing, "%s/no/such/dir/out.ply", tmp_dir);
    CHECK(ptreg_cloud_write(missing, &c, NULL, &err) == PTREG_ERR_IO);
    CHECK(strstr(err.message, missing) != NULL);
    snprintf(missing, sizeof missing, "%s/no", tmp_dir);
    CHECK(!file_exists(missing));

    /* A write that fails half-way (the file size limit) leaves the old
     * target and no temporary file. */
    snprintf(path, sizeof path, "%s/keep.ply", tmp_dir);
    write_text(path, "old contents\n");
    struct rlimit old, low;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    low = old;
    low.rlim_cur = 4096;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &low) == 0);
    ptreg_status s = ptreg_cloud_write(path, &c, NULL, &err);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, prev);
    CHECK_MSG(s == PTREG_ERR_IO, "status %d: %s", s, err.message);
    CHECK_MSG(strstr(err.message, path) && strstr(err.message, strerror(EFBIG)), "%s", err.message);
    size_t size;
    unsigned char *data = slurp(path, &size);
    CHECK(data && size == 13 && memcmp(data, "old contents\n", 13) == 0);
    free(data);
    CHECK(count_files(".ptreg-tmp-") == 0);

    /* A target that is a folder (named PLY: a name without an extension is refused before). */
    ptreg_write_options as_ply;
    ptreg_write_options_default(&as_ply);
    as_ply.format = PTREG_FORMAT_PLY;
    CHECK(ptreg_cloud_write(tmp_dir, &c, &as_ply, &err) == PTREG_ERR_IO);
    CHECK(count_files(".ptreg-tmp-") == 0);

    /* A replaced file keeps its permissions. */
    chmod(path, 0640);
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_OK);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
    unlink(path);

    /* The helper itself: abort leaves nothing; commit after abort is an
     * argument error; abort after commit is harmless. */
    ptreg_atomic_file af;
    snprintf(path, sizeof path, "%s/report.json", tmp_dir);
    CHECK(ptreg_atomic_open(path, &af, &err) == PTREG_OK);
    fputs("{}\n", af.fp);
    ptreg_atomic_abort(&af);
    CHECK(!file_exists(path) && count_files(".ptreg-tmp-") == 0);
    CHECK(ptreg_atomic_commit(&af, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_atomic_open(path, &af, &err) == PTREG_OK);
    fputs("{}\n", af.fp);
    CHECK(ptreg_atomic_commit(&af, &err) == PTREG_OK);
    ptreg_atomic_abort(&af);
    CHECK(file_exists(path) && count_files(".ptreg-tmp-") == 0);
    unlink(path);

    test_modes_and_links(&c);

    ptreg_cloud bad = {.n = 5};
    CHECK(ptreg_cloud_write(path, &bad, NULL, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_cloud_write(NULL, &c, NULL, &err) == PTREG_ERR_ARG);
    ptreg_cloud_free(&c);
}

static void test_format_names(void)
{
    CHECK(ptreg_format_from_path("a/b.PLY") == PTREG_FORMAT_PLY);
    CHECK(ptreg_format_from_path("x.pcd") == PTREG_FORMAT_PCD);
    CHECK(ptreg_format_from_path("x.Csv") == PTREG_FORMAT_XYZ);
    CHECK(ptreg_format_from_path("x.pts") == PTREG_FORMAT_XYZ);
    CHECK(ptreg_format_from_path("x.txt") == PTREG_FORMAT_XYZ);
    CHECK(ptreg_format_from_path("x.vtk") == PTREG_FORMAT_VTK);
    CHECK(ptreg_format_from_path("dir.ply/x") == PTREG_FORMAT_AUTO);
    CHECK(ptreg_format_from_path("x.obj") == PTREG_FORMAT_OBJ && ptreg_format_from_path("x.STL") == PTREG_FORMAT_STL);
    CHECK(ptreg_format_from_path("x.off") == PTREG_FORMAT_OFF && ptreg_format_from_path("x.foo") == PTREG_FORMAT_AUTO);
    ptreg_format parsed = PTREG_FORMAT_AUTO;
    CHECK(ptreg_format_parse("csv", &parsed) == 0 && parsed == PTREG_FORMAT_XYZ);
    CHECK(ptreg_format_parse("nope", &parsed) == -1 && parsed == PTREG_FORMAT_XYZ);
    for (int f = PTREG_FORMAT_PLY; f <= PTREG_FORMAT_KITTI; f++)
        CHECK(ptreg_format_parse(ptreg_format_name((ptreg_format)f), &parsed) == 0 && parsed == (ptreg_format)f);
    CHECK(ptreg_format_from_path("000042.bin") == PTREG_FORMAT_KITTI);
}

/* KITTI velodyne .bin: float32 x y z reflectance records; the reflectance
 * comes back as intensity; a size that is not whole records names the
 * byte where the last one breaks off; a NaN row is dropped and counted. */
static void test_kitti_bin(void)
{
    const float rec[3][4] = {{1.5f, -2.25f, 0.125f, 0.5f}, {NAN, 0.0f, 0.0f, 0.0f}, {40.0f, 3.0f, -1.0f, 1.0f}};
    ptreg_read_options ro;
    ptreg_read_options_default(&ro);
    ro.format = PTREG_FORMAT_KITTI;
    ro.attributes = 1;
    ptreg_cloud c, back;
    ptreg_error err;
    CHECK(ptreg_cloud_read_memory_with(rec, sizeof rec, &ro, "f.bin", &c, &err) == PTREG_OK);
    CHECK(c.n == 2 && c.dropped_nonfinite == 1 && c.intensity);
    if (c.n == 2 && c.intensity) {
        CHECK(c.xyz[0] == 1.5f && c.xyz[1] == -2.25f && c.xyz[2] == 0.125f && c.xyz[3] == 40.0f);
        CHECK(c.intensity[0] == 32768 && c.intensity[1] == 65535);
    }
    char path[600];
    snprintf(path, sizeof path, "%s/scan.bin", tmp_dir);
    ptreg_write_options wo;
    ptreg_write_options_default(&wo);
    CHECK_MSG(ptreg_cloud_write(path, &c, &wo, &err) == PTREG_OK, "%s", err.message);
    ro.format = PTREG_FORMAT_AUTO;
    CHECK(ptreg_cloud_read_with(path, &ro, &back, &err) == PTREG_OK);
    CHECK(back.n == 2 && memcmp(back.xyz, c.xyz, 24) == 0 && back.intensity &&
          memcmp(back.intensity, c.intensity, 4) == 0);
    ptreg_cloud_free(&back);
    ptreg_cloud_free(&c);
    unlink(path);
    CHECK(ptreg_cloud_read_memory(rec, 40, PTREG_FORMAT_KITTI, "cut.bin", &c, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "cut.bin: byte 32") && strstr(err.message, "16-byte records"), "%s", err.message);
    CHECK(ptreg_cloud_read_memory(rec, 0, PTREG_FORMAT_KITTI, "empty.bin", &c, &err) == PTREG_ERR_FORMAT);
}

/* One frame of the stream (docs/FORMATS.md) appended at b: its header,
 * then n points of xyz; the bytes written. */
static size_t put_frame(unsigned char *b, uint64_t count, double t, const float *xyz, size_t n)
{
    memcpy(b, "PTF1", 4);
    for (int k = 0; k < 8; k++)
        b[4 + k] = (unsigned char)(count >> (8 * k));
    uint64_t tb;
    memcpy(&tb, &t, sizeof tb);
    for (int k = 0; k < 8; k++)
        b[12 + k] = (unsigned char)(tb >> (8 * k));
    for (size_t i = 0; i < 3 * n; i++) {
        uint32_t v;
        memcpy(&v, &xyz[i], sizeof v);
        for (int k = 0; k < 4; k++)
            b[20 + 4 * i + k] = (unsigned char)(v >> (8 * k));
    }
    return 20 + 12 * n;
}

/* Reads size bytes of b as a stream to its end or its first error; the
 * frames read, the last status and its message. */
static ptreg_status read_stream(const unsigned char *b, size_t size, size_t *frames, ptreg_error *err)
{
    FILE *f = fmemopen((void *)b, size ? size : 1, "rb");
    ptreg_frame_stream s = {f, 0, 0};
    if (size == 0)
        fgetc(f); /* fmemopen wants a byte: read it to stand at the end */
    ptreg_status st = PTREG_OK;
    for (int end = 0; !st && !end;) {
        ptreg_cloud c;
        double t;
        st = ptreg_frame_stream_next(&s, &c, &t, &end, err);
        CHECK(st || end || s.frames > 0);
        CHECK_MSG(!st || (c.n == 0 && c.xyz == NULL), "a failed frame holds points");
        ptreg_cloud_free(&c);
    }
    *frames = s.frames;
    fclose(f);
    return st;
}

/* The frame stream: frames and timestamps as written (non-finite points
 * dropped), its clean end; a cut, a foreign magic and a count past the
 * bytes reported with the frame and its byte. */
static void test_frame_stream(void)
{
    unsigned char b[256];
    const float xyz[6] = {1.0f, -2.5f, 3.0f, NAN, 0.0f, 1.0f};
    size_t n = put_frame(b, 2, 0.5, xyz, 2);
    n += put_frame(b + n, 0, 0.75, NULL, 0);
    FILE *f = fmemopen(b, n, "rb");
    ptreg_frame_stream s = {f, 0, 0};
    ptreg_cloud c;
    double t;
    int end;
    ptreg_error err;
    CHECK(ptreg_frame_stream_next(&s, &c, &t, &end, &err) == PTREG_OK && !end);
    CHECK(c.n == 1 && c.dropped_nonfinite == 1 && t == 0.5);
    CHECK(c.n == 1 && memcmp(c.xyz, xyz, 12) == 0);
    ptreg_cloud_free(&c);
    CHECK(ptreg_frame_stream_next(&s, &c, &t, &end, &err) == PTREG_OK && !end && c.n == 0 && t == 0.75);
    CHECK(ptreg_frame_stream_next(&s, &c, &t, &end, &err) == PTREG_OK && end);
    CHECK(s.frames == 2 && s.offset == n);
    fclose(f);

    size_t frames;
    CHECK(read_stream(b, n - 7, &frames, &err) == PTREG_ERR_FORMAT && frames == 1);
    CHECK_MSG(strstr(err.message, "frame 1 at byte 44: the header is truncated (13 of 20 bytes)"), "%s", err.message);
    CHECK(read_stream(b, 40, &frames, &err) == PTREG_ERR_FORMAT && frames == 0);
    CHECK_MSG(strstr(err.message, "frame 0 at byte 0: truncated: 1 of its 2 points before the end"), "%s", err.message);
    memcpy(b + 44, "PLY1", 4);
    CHECK(read_stream(b, n, &frames, &err) == PTREG_ERR_FORMAT && frames == 1);
    CHECK_MSG(strstr(err.message, "frame 1 at byte 44: no \"PTF1\" magic"), "%s", err.message);
    put_frame(b, (uint64_t)1 << 40, 1.0, NULL, 0);
    CHECK(read_stream(b, 24, &frames, &err) == PTREG_ERR_FORMAT && frames == 0);
    CHECK_MSG(strstr(err.message, "truncated: 0 of its 1099511627776 points"), "%s", err.message);
    put_frame(b, UINT64_MAX, 1.0, NULL, 0);
    CHECK(read_stream(b, 20, &frames, &err) == PTREG_ERR_FORMAT);
    CHECK_MSG(strstr(err.message, "points cannot be held"), "%s", err.message);
    CHECK(read_stream(b, 0, &frames, &err) == PTREG_OK && frames == 0);
}

/* Writes text to tmp_dir/name; the path in path (4096). */
static void put_text(const char *name, const char *text, char *path)
{
    snprintf(path, 4096, "%s/%s", tmp_dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* TUM and KITTI trajectories: poses with comments and blank lines between
 * them, the pose at a time to its microsecond, a KITTI file's times its
 * indices, and each bad file named with its line. */
static void test_trajectory(void)
{
    char path[4096];
    ptreg_trajectory tr;
    ptreg_error err;
    put_text("good.tum", "# t tx ty tz qx qy qz qw\n\n0.000000 1 2 3 0 0 0 1\n0.100000 4 5 6 0 0 1 0\n", path);
    CHECK(ptreg_trajectory_read(path, &tr, &err) == PTREG_OK && tr.n == 2);
    const double *T = ptreg_trajectory_at(&tr, 0.1000004);
    CHECK(T != NULL && T == tr.pose + 16);
    if (T) /* a half turn about z: R = diag(-1, -1, 1) */
        CHECK(T[0] == -1.0 && T[5] == -1.0 && T[10] == 1.0 && T[3] == 4.0 && T[7] == 5.0 && T[11] == 6.0);
    CHECK(ptreg_trajectory_at(&tr, 0.05) == NULL && ptreg_trajectory_at(&tr, 0.1000006) == NULL);
    CHECK(tr.format == PTREG_TRAJECTORY_TUM);
    ptreg_trajectory_free(&tr);
    /* KITTI: the devkit's printed digits (7) pass as rigid */
    put_text("good.tum",
             "1.000000e+00 0.000000e+00 0.000000e+00 0.000000e+00 0.000000e+00 1.000000e+00 0.000000e+00 "
             "0.000000e+00 0.000000e+00 0.000000e+00 1.000000e+00 0.000000e+00\n"
             "# a comment\n9.999978e-01 5.272628e-04 -2.066935e-03 -4.690294e-02 -5.296506e-04 9.999992e-01 "
             "-1.154865e-03 -2.839928e-02 2.066324e-03 1.155958e-03 9.999971e-01 8.586941e-01\n",
             path);
    CHECK(ptreg_trajectory_read(path, &tr, &err) == PTREG_OK && tr.n == 2 && tr.format == PTREG_TRAJECTORY_KITTI);
    if (tr.n == 2)
        CHECK(tr.t[0] == 0.0 && tr.t[1] == 1.0 && tr.pose[16 + 11] == 8.586941e-01 && tr.pose[16 + 15] == 1.0 &&
              tr.pose[16 + 12] == 0.0);
    ptreg_trajectory_free(&tr);
    static const struct {
        const char *text, *message;
        ptreg_status status;
    } bad[] = {
        {"0 0 0 0 0 0 0 1\n0.1 1 2 3 x 0 0 1\n", "bad.tum: line 2: not a TUM pose", PTREG_ERR_FORMAT},
        {"0 0 0 0 0 0 0 0\n", "bad.tum: line 1: not a TUM pose", PTREG_ERR_FORMAT},
        {"0 0 0 0 0 0 0 1 9\n", "bad.tum: line 1: not a pose: a TUM line holds 8", PTREG_ERR_FORMAT},
        {"1 0 0 0 0 0 0 1\n# c\n1 0 0 0 0 0 0 1\n", "bad.tum: line 3: the timestamp 1 does not come after",
         PTREG_ERR_FORMAT},
        {"0 0 0 0 0 0 0 1\n0.1 nan 0 0 0 0 0 1\n", "bad.tum: line 2: not a TUM pose", PTREG_ERR_FORMAT},
        {"1 0 0 0 0 1 0 0 0 0 1 0\n1 0 0 0 0 1 0 0 0 0 2 0\n", "bad.tum: line 2: not a KITTI pose", PTREG_ERR_FORMAT},
        {"1 0 0 0 0 1 0 0 0 0 1 0\n0 0 0 0 0 0 0 1\n", "bad.tum: line 2: not a KITTI pose", PTREG_ERR_FORMAT},
        {"1 0 0 0 0 1 0 0 0 0 1 inf\n", "bad.tum: line 1: not a pose: a TUM line holds 8", PTREG_ERR_FORMAT},
        {"# nothing\n\n", "bad.tum: no poses in it", PTREG_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        put_text("bad.tum", bad[i].text, path);
        CHECK(ptreg_trajectory_read(path, &tr, &err) == bad[i].status && tr.n == 0 && tr.t == NULL);
        CHECK_MSG(strstr(err.message, bad[i].message) != NULL, "case %zu: %s", i, err.message);
    }
    snprintf(path, sizeof path, "%s/none.tum", tmp_dir);
    CHECK(ptreg_trajectory_read(path, &tr, &err) == PTREG_ERR_IO);
    CHECK_MSG(strstr(err.message, "none.tum: cannot be read") != NULL, "%s", err.message);
    remove(path);
    snprintf(path, sizeof path, "%s/good.tum", tmp_dir);
    remove(path);
    snprintf(path, sizeof path, "%s/bad.tum", tmp_dir);
    remove(path);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ptreg_test_io_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_format_names();
    test_kitti_bin();
    test_number_scanner();
    test_round_trips();
    test_good_fixtures();
    test_bad_corpus();
    test_long_lines();
    test_inline_cases();
    test_compressed_lzf();
    test_mutations();
    test_transforms();
    test_poses_and_pairs();
    test_write_failures();
    test_colors();
    test_frame_stream();
    test_trajectory();
    rmdir(tmp_dir);
    return check_exit();
}
