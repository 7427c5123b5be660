/* Clouds far from zero (issue 30): the origin a reader chooses (double PLY
 * and PCD, text; not float32 files), world coordinates kept to the
 * millimetre through write and read, transforms between the world and a
 * cloud's frame, re-expressing a cloud, reading in pieces and with a crop
 * box, and voxel downsampling in pieces giving the whole-cloud bits. */
#define _DEFAULT_SOURCE

#include "check.h"
#include "ptreg/ptreg.h"

#include <stdint.h>
#include <unistd.h>
#include "core/numeric.h"

static char tmp_dir[256];

/* A UTM-placed patch of ground: eastings near 500,000 m, northings near
 * 4,500,000 m, heights of a few hundred metres, to the millimetre. */
static double *utm_points(size_t n, uint64_t seed)
{
    double *w = malloc(3 * n * sizeof *w);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        w[3 * i] = 500000.123 + floor(ptreg_rng_uniform(&rng) * 300000.0) / 1000.0;
        w[3 * i + 1] = 4500000.456 + floor(ptreg_rng_uniform(&rng) * 300000.0) / 1000.0;
        w[3 * i + 2] = 250.0 + floor(ptreg_rng_uniform(&rng) * 20000.0) / 1000.0;
    }
    return w;
}

static void write_double_ply(const char *path, const double *w, size_t n)
{
    FILE *f = fopen(path, "wb");
    fprintf(f, "ply\nformat binary_little_endian 1.0\nelement vertex %zu\n", n);
    fputs("property double x\nproperty double y\nproperty double z\nend_header\n", f);
    fwrite(w, sizeof *w, 3 * n, f); /* the hosts CI runs on are little-endian */
    fclose(f);
}

static void write_text(const char *path, const double *w, size_t n)
{
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.3f %.3f %.3f\n", w[3 * i], w[3 * i + 1], w[3 * i + 2]);
    fclose(f);
}

/* The largest distance, per coordinate, of the cloud's world points from w. */
static double world_error(const ptreg_cloud *c, const double *w)
{
    double worst = 0.0;
    for (size_t i = 0; i < 3 * c->n; i++)
        worst = check_worse(worst, fabs(c->origin[i % 3] + c->xyz[i] - w[i]));
    return worst;
}

static void path_of(char *path, size_t size, const char *name) { snprintf(path, size, "%s/%s", tmp_dir, name); }

/* Double PLY and text get an origin and keep every point within half a
 * float step of 20 km (1 mm); written back (PLY, PCD, XYZ) and read again,
 * the same floats and origin. */
static void test_read_write_utm(void)
{
    const size_t n = 5000;
    double *w = utm_points(n, 1);
    const char *inputs[] = {"utm.ply", "utm.xyz"};
    char path[512], out[512];
    path_of(path, sizeof path, inputs[0]);
    write_double_ply(path, w, n);
    path_of(path, sizeof path, inputs[1]);
    write_text(path, w, n);
    for (int f = 0; f < 2; f++) {
        ptreg_cloud c;
        path_of(path, sizeof path, inputs[f]);
        REQUIRE(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, NULL) == PTREG_OK);
        CHECK(c.origin[0] == 500000.0 + floor(w[0] - 500000.0 + 0.5) && c.origin[1] != 0.0);
        CHECK(c.origin[2] == 0.0); /* 250 m keeps its millimetres in float32 */
        CHECK_MSG(world_error(&c, w) < 1e-4, "%s: %g m", inputs[f], world_error(&c, w));
        const char *outs[] = {"back.ply", "back.pcd", "back.xyz"};
        for (int o = 0; o < 3; o++) {
            path_of(out, sizeof out, outs[o]);
            REQUIRE(ptreg_cloud_write(out, &c, NULL, NULL) == PTREG_OK);
            ptreg_cloud b;
            REQUIRE(ptreg_cloud_read(out, PTREG_FORMAT_AUTO, &b, NULL) == PTREG_OK);
            CHECK_MSG(b.n == c.n && !memcmp(b.origin, c.origin, sizeof b.origin) && !memcmp(b.xyz, c.xyz, 12 * c.n),
                      "%s -> %s: not the same floats and origin", inputs[f], outs[o]);
            ptreg_cloud_free(&b);
        }
        ptreg_cloud_free(&c);
    }
    free(w);
}

/* A float32 file is what it is: no origin, its floats as they were. */
static void test_float_file_keeps_zero_origin(void)
{
    const size_t n = 100;
    double *w = utm_points(n, 2);
    ptreg_cloud c;
    REQUIRE(ptreg_cloud_alloc(&c, n, 0, NULL) == PTREG_OK);
    for (size_t i = 0; i < 3 * n; i++)
        c.xyz[i] = (float)w[i];
    char path[512];
    path_of(path, sizeof path, "float.ply");
    REQUIRE(ptreg_cloud_write(path, &c, NULL, NULL) == PTREG_OK);
    ptreg_cloud b;
    REQUIRE(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &b, NULL) == PTREG_OK);
    CHECK(b.origin[0] == 0.0 && b.origin[1] == 0.0 && b.origin[2] == 0.0);
    CHECK(b.n == n && !memcmp(b.xyz, c.xyz, 12 * n));
    /* and asked for none, a double file gets none either */
    path_of(path, sizeof path, "utm_noorigin.ply");
    write_double_ply(path, w, n);
    ptreg_read_options ro;
    ptreg_read_options_default(&ro);
    ro.origin_auto = 0;
    ptreg_cloud d;
    REQUIRE(ptreg_cloud_read_with(path, &ro, &d, NULL) == PTREG_OK);
    CHECK(d.origin[0] == 0.0 && d.origin[1] == 0.0 && d.xyz[0] == (float)w[0]);
    ptreg_cloud_free(&b), ptreg_cloud_free(&c), ptreg_cloud_free(&d);
    free(w);
}

/* A world transform taken into a cloud's frame and back; at origin 0 the
 * same bits; moving points in the local frame = moving them in the world. */
static void test_transform_frames(void)
{
    double T[16], L[16], W[16];
    const double axis[3] = {0.3, -0.2, 0.9}, t[3] = {12.5, -3.25, 0.75}, o[3] = {500100.0, 4500200.0, 0.0};
    ptreg_transform_from_axis_angle(axis, 7.0, t, T);
    ptreg_transform_to_local(T, o, L);
    ptreg_transform_to_world(L, o, W);
    for (int i = 0; i < 16; i++)
        CHECK_NEAR(W[i], T[i], 1e-9 * (i % 4 == 3 ? 1e6 : 1.0));
    const double zero[3] = {0, 0, 0};
    T[3] = -0.0;
    ptreg_transform_to_local(T, zero, L);
    CHECK(!memcmp(L, T, sizeof L));
    const double p_local[3] = {12.0, -40.0, 3.0};
    double pw[3], qw[3], ql[3];
    for (int r = 0; r < 3; r++) {
        pw[r] = o[r] + p_local[r];
        ptreg_transform_to_local(T, o, L);
    }
    for (int r = 0; r < 3; r++) {
        qw[r] = T[4 * r + 3], ql[r] = L[4 * r + 3];
        for (int c = 0; c < 3; c++)
            qw[r] += T[4 * r + c] * pw[c], ql[r] += L[4 * r + c] * p_local[c];
        CHECK_NEAR(qw[r], o[r] + ql[r], 1e-6);
    }
}

static void test_set_origin(void)
{
    ptreg_cloud c;
    REQUIRE(ptreg_cloud_alloc(&c, 2, 0, NULL) == PTREG_OK);
    const float v[6] = {1.5f, -2.0f, 3.0f, 100.0f, 200.0f, -300.0f};
    memcpy(c.xyz, v, sizeof v);
    c.origin[0] = 500000.0, c.origin[1] = 4500000.0;
    const double to[3] = {500010.0, 4499990.0, 5.0};
    CHECK(ptreg_cloud_set_origin(&c, to, NULL) == PTREG_OK);
    CHECK(c.xyz[0] == -8.5f && c.xyz[1] == 8.0f && c.xyz[2] == -2.0f && c.origin[2] == 5.0);
    const double huge[3] = {-1e300, 0, 0};
    ptreg_error err;
    CHECK(ptreg_cloud_set_origin(&c, huge, &err) == PTREG_ERR_ARG && strstr(err.message, "beyond float range"));
    CHECK(c.xyz[0] == -8.5f && c.origin[0] == 500010.0); /* nothing changed */
    ptreg_cloud_free(&c);
}

typedef struct pieces {
    ptreg_cloud all;
    size_t calls, max_piece;
} pieces;

static ptreg_status collect(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    (void)err;
    pieces *p = ctx;
    memcpy(p->all.xyz + 3 * p->all.n, piece->xyz, 12 * piece->n);
    memcpy(p->all.origin, piece->origin, sizeof p->all.origin);
    p->all.n += piece->n;
    p->calls++;
    p->max_piece = piece->n > p->max_piece ? piece->n : p->max_piece;
    return PTREG_OK;
}

static ptreg_status refuse(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    (void)ctx, (void)piece;
    return ptreg_error_set(err, PTREG_ERR_RUNTIME, "stop here");
}

/* Pieces of 777 points make the whole cloud, with one origin; a function's
 * failure ends the read with its status. */
static void test_pieces(void)
{
    const size_t n = 5000;
    double *w = utm_points(n, 3);
    char path[512];
    path_of(path, sizeof path, "pieces.ply");
    write_double_ply(path, w, n);
    ptreg_cloud whole;
    REQUIRE(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &whole, NULL) == PTREG_OK);
    pieces p = {{0}, 0, 0};
    REQUIRE(ptreg_cloud_alloc(&p.all, n, 0, NULL) == PTREG_OK);
    p.all.n = 0;
    CHECK(ptreg_cloud_read_pieces(path, NULL, 777, collect, &p, NULL) == PTREG_OK);
    CHECK(p.calls == (n + 776) / 777 && p.max_piece == 777);
    CHECK(p.all.n == n && !memcmp(p.all.xyz, whole.xyz, 12 * n) && !memcmp(p.all.origin, whole.origin, 24));
    /* a reader that had its points whole (.pos) hands them on in pieces too */
    char pos[512];
    path_of(pos, sizeof pos, "pieces.pos");
    REQUIRE(ptreg_apt_write_pos(pos, whole.xyz, NULL, n, NULL) == PTREG_OK);
    p.all.n = 0, p.calls = 0;
    CHECK(ptreg_cloud_read_pieces(pos, NULL, 777, collect, &p, NULL) == PTREG_OK);
    CHECK(p.calls == (n + 776) / 777 && p.all.n == n && !memcmp(p.all.xyz, whole.xyz, 12 * n));
    ptreg_error err;
    CHECK(ptreg_cloud_read_pieces(path, NULL, 777, refuse, NULL, &err) == PTREG_ERR_RUNTIME);
    CHECK(ptreg_cloud_read_pieces(path, NULL, 0, collect, &p, &err) == PTREG_ERR_ARG);
    ptreg_cloud_free(&p.all), ptreg_cloud_free(&whole);
    free(w);
}

/* The crop box is in world coordinates, bounds included; an empty result
 * says why; classes on a format without them is the caller's mistake. */
static void test_crop(void)
{
    const size_t n = 4000;
    double *w = utm_points(n, 4);
    char path[512];
    path_of(path, sizeof path, "crop.ply");
    write_double_ply(path, w, n);
    ptreg_read_options ro;
    ptreg_read_options_default(&ro);
    ro.crop = 1;
    const double lo[3] = {500050.0, 4500100.0, 0.0}, hi[3] = {500150.0, 4500200.0, 1000.0};
    memcpy(ro.crop_min, lo, sizeof lo), memcpy(ro.crop_max, hi, sizeof hi);
    size_t inside = 0;
    for (size_t i = 0; i < n; i++) {
        int in = 1;
        for (int k = 0; k < 3; k++)
            in &= w[3 * i + k] >= lo[k] && w[3 * i + k] <= hi[k];
        inside += (size_t)in;
    }
    ptreg_cloud c;
    REQUIRE(ptreg_cloud_read_with(path, &ro, &c, NULL) == PTREG_OK);
    CHECK_MSG(c.n == inside && inside > 100, "%zu of %zu inside", c.n, inside);
    for (size_t i = 0; i < c.n; i++)
        for (int k = 0; k < 3; k++)
            CHECK(c.origin[k] + c.xyz[3 * i + k] >= lo[k] - 1e-3 && c.origin[k] + c.xyz[3 * i + k] <= hi[k] + 1e-3);
    ptreg_cloud_free(&c);
    ro.crop_min[0] = ro.crop_max[0] = 1.0;
    ptreg_error err;
    CHECK(ptreg_cloud_read_with(path, &ro, &c, &err) == PTREG_ERR_FORMAT && strstr(err.message, "crop box"));
    ro.crop = 0, ro.classes = 1;
    CHECK(ptreg_cloud_read_with(path, &ro, &c, &err) == PTREG_ERR_ARG && strstr(err.message, "LAS"));
    free(w);
}

/* Downsampling in pieces gives the whole-cloud function's cloud, bit for
 * bit, with and without normals, and keeps the origin. */
static void test_voxel_in_pieces(void)
{
    const size_t n = 30000;
    double *w = utm_points(n, 5);
    char path[512];
    path_of(path, sizeof path, "voxel.ply");
    write_double_ply(path, w, n);
    ptreg_cloud c, a, b;
    REQUIRE(ptreg_cloud_read(path, PTREG_FORMAT_AUTO, &c, NULL) == PTREG_OK);
    REQUIRE(ptreg_voxel_downsample(&c, 7.5, &a, NULL) == PTREG_OK);
    REQUIRE(ptreg_voxel_downsample_file(path, NULL, 7.5, &b, NULL) == PTREG_OK);
    CHECK(a.n > 100 && a.n < n);
    CHECK(a.n == b.n && !memcmp(a.xyz, b.xyz, 12 * a.n) && !memcmp(b.origin, c.origin, sizeof b.origin));
    ptreg_cloud_free(&a), ptreg_cloud_free(&b);
    /* with normals: a PLY of float x y z nx ny nz */
    REQUIRE(ptreg_cloud_alloc(&a, 2000, 1, NULL) == PTREG_OK);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 9);
    for (size_t i = 0; i < 3 * a.n; i++)
        a.xyz[i] = (float)ptreg_rng_uniform(&rng), a.normals[i] = (float)ptreg_rng_uniform(&rng) - 0.5f;
    path_of(path, sizeof path, "voxel_n.ply");
    REQUIRE(ptreg_cloud_write(path, &a, NULL, NULL) == PTREG_OK);
    ptreg_cloud x, y;
    REQUIRE(ptreg_voxel_downsample(&a, 0.1, &x, NULL) == PTREG_OK);
    REQUIRE(ptreg_voxel_downsample_file(path, NULL, 0.1, &y, NULL) == PTREG_OK);
    CHECK(x.n == y.n && y.normals && !memcmp(x.xyz, y.xyz, 12 * x.n) && !memcmp(x.normals, y.normals, 12 * x.n));
    ptreg_cloud_free(&y);
    ptreg_error err;
    CHECK(ptreg_voxel_downsample_file(path, NULL, 0.0, &y, &err) == PTREG_ERR_ARG && y.n == 0 && !y.xyz);
    ptreg_cloud_free(&x), ptreg_cloud_free(&a), ptreg_cloud_free(&c);
    free(w);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ptreg_test_origin_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_read_write_utm();
    test_float_file_keeps_zero_origin();
    test_transform_frames();
    test_set_origin();
    test_pieces();
    test_crop();
    test_voxel_in_pieces();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return check_exit();
}
