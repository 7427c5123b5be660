/* 3-D Harris: the fast path against the literal loop, corners of boxes,
 * edges and flat regions, invariance under a 90-degree rotation (the tooth
 * CT volume), determinism across threads and ISAs, keypoint selection and
 * bad arguments. */
#include "check.h"
#include "core/cpu.h"
#include "ptreg/ptreg.h"

#include <stdint.h>
#include "core/numeric.h"
#include "hooks.h"
#include "feat/harris3d_impl.h"

static const ptreg_voxel_type all_types[] = {PTREG_VOXEL_U8,  PTREG_VOXEL_I8,  PTREG_VOXEL_U16, PTREG_VOXEL_I16,
                                             PTREG_VOXEL_U32, PTREG_VOXEL_I32, PTREG_VOXEL_F32, PTREG_VOXEL_F64};

static void set_voxel(ptreg_volume *v, size_t i, double value)
{
    switch (v->type) {
    case PTREG_VOXEL_U8: ((uint8_t *)v->data)[i] = (uint8_t)value; break;
    case PTREG_VOXEL_I8: ((int8_t *)v->data)[i] = (int8_t)value; break;
    case PTREG_VOXEL_U16: ((uint16_t *)v->data)[i] = (uint16_t)value; break;
    case PTREG_VOXEL_I16: ((int16_t *)v->data)[i] = (int16_t)value; break;
    case PTREG_VOXEL_U32: ((uint32_t *)v->data)[i] = (uint32_t)value; break;
    case PTREG_VOXEL_I32: ((int32_t *)v->data)[i] = (int32_t)value; break;
    case PTREG_VOXEL_F32: ((float *)v->data)[i] = (float)value; break;
    case PTREG_VOXEL_F64: ((double *)v->data)[i] = value; break;
    }
}

/* Random voxels over each type's range (a smaller one for the wide types,
 * whose float32 products would lose the differences the test looks at). */
static void random_volume(ptreg_volume *v, size_t nx, size_t ny, size_t nz, ptreg_voxel_type type, uint64_t seed)
{
    static const double lo[] = {0, -128, 0, -32768, 0, -40000, -1000, -1000};
    static const double hi[] = {255, 127, 65535, 32767, 40000, 40000, 1000, 1000};
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    ptreg_volume_alloc(v, nx, ny, nz, type, NULL);
    for (size_t i = 0; i < nx * ny * nz; i++) {
        double u = lo[type] + ptreg_rng_uniform(&rng) * (hi[type] - lo[type]);
        set_voxel(v, i, type >= PTREG_VOXEL_F32 ? u : floor(u));
    }
}

/* trace(M) of one voxel, clamped reads: the scale the score's terms have. */
static double trace_at(const ptreg_volume *v, long x, long y, long z, int r, double sigma)
{
    double w[64], sum = 0, tr = 0;
    for (int t = -r; t <= r; t++)
        sum += w[t + r] = exp(-(double)(t * t) / (2 * sigma * sigma));
#define V(a, b, c)                                                                             \
    ptreg_volume_voxel(v, (size_t)((a) < 0              ? 0                                    \
                                   : (a) >= (long)v->nx ? (long)v->nx - 1                      \
                                                        : (a)) +                               \
                              v->nx * ((size_t)((b) < 0              ? 0                       \
                                                : (b) >= (long)v->ny ? (long)v->ny - 1         \
                                                                     : (b)) +                  \
                                       v->ny * (size_t)((c) < 0              ? 0               \
                                                        : (c) >= (long)v->nz ? (long)v->nz - 1 \
                                                                             : (c))))
    for (long dz = -r; dz <= r; dz++)
        for (long dy = -r; dy <= r; dy++)
            for (long dx = -r; dx <= r; dx++) {
                long px = x + dx, py = y + dy, pz = z + dz;
                double gx = V(px + 1, py, pz) - V(px - 1, py, pz);
                double gy = V(px, py + 1, pz) - V(px, py - 1, pz);
                double gz = V(px, py, pz + 1) - V(px, py, pz - 1);
                tr += w[dx + r] * w[dy + r] * w[dz + r] / (sum * sum * sum) * (gx * gx + gy * gy + gz * gz);
            }
#undef V
    return tr;
}

static float *scores_of(const ptreg_volume *v, const ptreg_harris3d_options *o)
{
    float *s = malloc(ptreg_volume_count(v) * sizeof *s);
    ptreg_error err;
    ptreg_status st = ptreg_harris3d_scores(v, o, s, &err);
    CHECK_MSG(st == PTREG_OK, "%s", err.message);
    return s;
}

/* Fast path vs the literal loop: within 1e-5 of trace(M)^3 everywhere. */
static void test_fast_matches_reference(void)
{
    static const size_t sizes[][3] = {{13, 11, 9}, {17, 7, 5}, {5, 19, 12}, {3, 3, 3}, {1, 9, 7}, {33, 4, 11}};
    static const int windows[] = {3, 5, 7, 9};
    int case_id = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t ti = 0; ti < sizeof all_types / sizeof all_types[0]; ti++) {
            ptreg_volume v;
            random_volume(&v, sizes[si][0], sizes[si][1], sizes[si][2], all_types[ti], 100 + si * 10 + ti);
            int window = windows[case_id % 4];
            for (int border = 0; border < 2; border++) {
                ptreg_harris3d_options o;
                ptreg_harris3d_options_default(&o);
                o.window = window;
                o.border = border ? PTREG_HARRIS_BORDER_CLAMP : PTREG_HARRIS_BORDER_SKIP;
                o.sigma = case_id % 3 == 2 ? 1.7 : 0;
                float *fast = scores_of(&v, &o);
                o.reference = 1;
                float *ref = scores_of(&v, &o);
                double worst = 0;
                size_t n = ptreg_volume_count(&v), bad = 0;
                for (size_t i = 0; i < n; i++) {
                    double tr = trace_at(&v, (long)(i % v.nx), (long)(i / v.nx % v.ny), (long)(i / (v.nx * v.ny)),
                                         (window - 1) / 2, ptreg_harris3d_sigma(&o));
                    double e = fabs((double)fast[i] - ref[i]) / fmax(tr * tr * tr, 1e-30); /* nan-ok: a scale */
                    if (ref[i] == 0 && fast[i] == 0)
                        e = 0;
                    worst = check_worse(worst, e);
                    bad += !(e <= 1e-5);
                }
                CHECK_MSG(bad == 0, "%zux%zux%zu %s window %d border %d: %zu voxels off, worst %.3g", v.nx, v.ny, v.nz,
                          ptreg_voxel_type_name(v.type), window, border, bad, worst);
                free(fast);
                free(ref);
            }
            ptreg_volume_free(&v);
            case_id++;
        }
}

/* Boxes on a dark background: one keypoint per box corner and no other.
 * The edge between voxels a-1 and a lies at a - 0.5; Harris's maximum
 * sits about 1.5 voxels inside the box along each axis (at the corner
 * itself every gradient points the same diagonal way, the tensor is
 * nearly rank 1), so a keypoint belongs to a corner within 2.7 voxels. */
static void test_box_corners(void)
{
    static const size_t box[][6] = {{8, 20, 6, 18, 5, 15}, {30, 45, 26, 40, 22, 34}, {10, 22, 30, 44, 24, 36}};
    const int nbox = 3;
    ptreg_volume v;
    ptreg_volume_alloc(&v, 56, 50, 42, PTREG_VOXEL_U8, NULL);
    memset(v.data, 10, ptreg_volume_count(&v));
    for (int b = 0; b < nbox; b++)
        for (size_t z = box[b][4]; z <= box[b][5]; z++)
            for (size_t y = box[b][2]; y <= box[b][3]; y++)
                for (size_t x = box[b][0]; x <= box[b][1]; x++)
                    ((uint8_t *)v.data)[x + v.nx * (y + v.ny * z)] = (uint8_t)(100 + 20 * b);
    for (int window = 3; window <= 5; window += 2) {
        ptreg_harris3d_options o;
        ptreg_harris3d_options_default(&o);
        o.window = window;
        o.threshold = 0.02;
        ptreg_harris3d_result r;
        ptreg_error err;
        CHECK(ptreg_harris3d(&v, &o, &r, &err) == PTREG_OK);
        CHECK_MSG(r.keypoint_count == 8 * (size_t)nbox, "window %d: %zu keypoints", window, r.keypoint_count);
        int found[3][8] = {{0}};
        for (size_t i = 0; i < r.keypoint_count; i++) {
            const ptreg_keypoint *k = &r.keypoints[i];
            int matched = 0;
            for (int b = 0; b < nbox && !matched; b++)
                for (int c = 0; c < 8 && !matched; c++) {
                    double cx = c & 1 ? box[b][1] + 0.5 : box[b][0] - 0.5;
                    double cy = c & 2 ? box[b][3] + 0.5 : box[b][2] - 0.5;
                    double cz = c & 4 ? box[b][5] + 0.5 : box[b][4] - 0.5;
                    double d = sqrt((k->x - cx) * (k->x - cx) + (k->y - cy) * (k->y - cy) + (k->z - cz) * (k->z - cz));
                    if (d <= 2.7) {
                        found[b][c]++;
                        matched = 1;
                    }
                }
            CHECK_MSG(matched, "window %d: keypoint (%u, %u, %u) is not at a corner", window, k->x, k->y, k->z);
        }
        for (int b = 0; b < nbox; b++)
            for (int c = 0; c < 8; c++)
                CHECK_MSG(found[b][c] == 1, "window %d: box %d corner %d found %d times", window, b, c, found[b][c]);
        ptreg_harris3d_result_free(&r);
    }
    ptreg_volume_free(&v);
}

/* A flat volume, a step across a slanted plane and a bar that spans the
 * volume (edges along z): no voxel scores above 0. */
static void test_edges_and_flat_score_at_most_zero(void)
{
    ptreg_volume v;
    ptreg_volume_alloc(&v, 31, 29, 27, PTREG_VOXEL_F32, NULL);
    float *d = v.data;
    for (int shape = 0; shape < 3; shape++) {
        for (size_t z = 0; z < v.nz; z++)
            for (size_t y = 0; y < v.ny; y++)
                for (size_t x = 0; x < v.nx; x++) {
                    float value = 7.0f;
                    if (shape == 1)
                        value = x + 2.0 * y + 3.0 * z > 80 ? 200.0f : 7.0f;
                    if (shape == 2)
                        value = x >= 10 && x <= 20 && y >= 9 && y <= 18 ? 150.0f : 7.0f;
                    d[x + v.nx * (y + v.ny * z)] = value;
                }
        for (int ref = 0; ref < 2; ref++)
            for (int border = 0; border < 2; border++) {
                if (shape == 1 && border)
                    continue; /* a clamped slanted plane bends at the volume's faces: real corners */
                ptreg_harris3d_options o;
                ptreg_harris3d_options_default(&o);
                o.reference = ref;
                o.border = border ? PTREG_HARRIS_BORDER_CLAMP : PTREG_HARRIS_BORDER_SKIP;
                float *s = scores_of(&v, &o);
                float top = -INFINITY, bottom = INFINITY;
                for (size_t i = 0; i < ptreg_volume_count(&v); i++) {
                    top = check_worse(top, s[i]);
                    bottom = check_least(bottom, s[i]);
                }
                CHECK_MSG(top <= 0, "shape %d ref %d border %d: max score %g", shape, ref, border, top);
                if (shape > 0)
                    CHECK(bottom < 0); /* the edges are there and score below 0 */
                free(s);
            }
    }
    ptreg_volume_free(&v);
}

static int same_bits(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof *a); }

/* The same bits for 1 and 2 threads, for every ISA and for every tiling
 * (tiles of 1, 5 and 16 rows: halos, a partial last tile, one tile per
 * thread). */
static void test_deterministic(void)
{
    ptreg_volume v;
    random_volume(&v, 67, 45, 23, PTREG_VOXEL_U8, 7);
    for (int window = 3; window <= 7; window += 2) {
        ptreg_harris3d_options o;
        ptreg_harris3d_options_default(&o);
        o.window = window;
        o.border = window == 5 ? PTREG_HARRIS_BORDER_CLAMP : PTREG_HARRIS_BORDER_SKIP;
        size_t n = ptreg_volume_count(&v);
        ptreg_set_num_threads(1);
        float *one = scores_of(&v, &o);
        ptreg_set_num_threads(2);
        float *two = scores_of(&v, &o);
        CHECK_MSG(same_bits(one, two, n), "window %d: 1 vs 2 threads differ", window);
        static const size_t tilings[] = {1, 5, 16};
        for (size_t i = 0; i < sizeof tilings / sizeof tilings[0]; i++) {
            o.tile_rows = tilings[i];
            float *s = scores_of(&v, &o);
            CHECK_MSG(same_bits(one, s, n), "window %d: tiles of %zu rows differ", window, tilings[i]);
            free(s);
        }
        o.tile_rows = 0;
        for (int isa = 0; isa <= (int)cpu_best_isa(); isa++) {
            cpu_set_isa(isa);
            float *s = scores_of(&v, &o);
            CHECK_MSG(same_bits(one, s, n), "window %d: ISA %s differs", window, isa_level_name((isa_level)isa));
            free(s);
        }
        cpu_set_isa(-1);
        ptreg_keypoint *k1, *k2;
        size_t n1, n2;
        ptreg_set_num_threads(1);
        CHECK(ptreg_harris3d_keypoints(one, v.nx, v.ny, v.nz, &o, &k1, &n1, NULL, NULL, NULL) == PTREG_OK);
        ptreg_set_num_threads(2);
        CHECK(ptreg_harris3d_keypoints(one, v.nx, v.ny, v.nz, &o, &k2, &n2, NULL, NULL, NULL) == PTREG_OK);
        CHECK(n1 == n2 && n1 > 0 && !memcmp(k1, k2, n1 * sizeof *k1));
        free(k1);
        free(k2);
        free(one);
        free(two);
    }
    ptreg_set_num_threads(0);
    ptreg_volume_free(&v);
}

/* Keypoint rules on hand-made score volumes. */
static void test_keypoint_rules(void)
{
    enum { N = 12 };
    float s[N * N * N];
    memset(s, 0, sizeof s);
#define AT(x, y, z) s[(x) + N * ((y) + N * (z))]
    AT(5, 5, 5) = AT(6, 5, 5) = 4.0f; /* a plateau of two: its first voxel is kept */
    AT(2, 2, 2) = 3.0f;
    AT(2, 2, 3) = 2.5f; /* a neighbor of a better one */
    AT(9, 9, 9) = 1.0f;
    AT(9, 3, 9) = 0.02f;  /* below 1% of the best */
    AT(1, 10, 1) = -5.0f; /* negative: never a keypoint */
#undef AT
    ptreg_harris3d_options o;
    ptreg_harris3d_options_default(&o);
    ptreg_keypoint *k;
    size_t n, maxima;
    double thr;
    CHECK(ptreg_harris3d_keypoints(s, N, N, N, &o, &k, &n, &thr, &maxima, NULL) == PTREG_OK);
    CHECK_NEAR(thr, 0.04, 1e-7);
    CHECK(n == 3 && maxima == 3);
    CHECK(n == 3 && k[0].x == 5 && k[0].score == 4.0f && k[1].x == 2 && k[1].z == 2 && k[2].x == 9);
    free(k);
    o.threshold = 0.01;
    o.threshold_mode = PTREG_HARRIS_ABSOLUTE;
    CHECK(ptreg_harris3d_keypoints(s, N, N, N, &o, &k, &n, NULL, NULL, NULL) == PTREG_OK);
    CHECK(n == 4);
    free(k);
    o.top = 2;
    CHECK(ptreg_harris3d_keypoints(s, N, N, N, &o, &k, &n, NULL, NULL, NULL) == PTREG_OK);
    CHECK(n == 2 && k[0].score == 4.0f && k[1].score == 3.0f);
    free(k);
    o.top = 0;
    o.min_distance = 6.5; /* (2,2,2) is 5.2 from (5,5,5), (9,3,9) 6 from (9,9,9), (9,9,9) 6.9 from (5,5,5) */
    CHECK(ptreg_harris3d_keypoints(s, N, N, N, &o, &k, &n, NULL, NULL, NULL) == PTREG_OK);
    CHECK_MSG(n == 2 && k[0].x == 5 && k[1].x == 9 && k[1].y == 9, "n = %zu", n);
    free(k);
    o.threshold = 10;
    CHECK(ptreg_harris3d_keypoints(s, N, N, N, &o, &k, &n, NULL, NULL, NULL) == PTREG_OK);
    CHECK(n == 0 && k == NULL);
}

static void test_bad_arguments(void)
{
    ptreg_volume v;
    random_volume(&v, 8, 8, 8, PTREG_VOXEL_F32, 3);
    float s[512];
    ptreg_harris3d_options o;
    ptreg_error err;
    int windows[] = {1, 4, 33, 0, -3};
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++) {
        ptreg_harris3d_options_default(&o);
        o.window = windows[i];
        CHECK(ptreg_harris3d_scores(&v, &o, s, &err) == PTREG_ERR_ARG && strstr(err.message, "window"));
    }
    ptreg_harris3d_options_default(&o);
    o.sigma = -1;
    CHECK(ptreg_harris3d_scores(&v, &o, s, &err) == PTREG_ERR_ARG);
    ptreg_harris3d_options_default(&o);
    ((float *)v.data)[3 + 8 * (2 + 8 * 1)] = NAN;
    CHECK(ptreg_harris3d_scores(&v, &o, s, &err) == PTREG_ERR_FORMAT && strstr(err.message, "(3, 2, 1)"));
    CHECK(ptreg_harris3d_scores(NULL, &o, s, &err) == PTREG_ERR_ARG);
    ptreg_harris3d_result r;
    CHECK(ptreg_harris3d(&v, &o, &r, &err) == PTREG_ERR_FORMAT && r.scores == NULL && r.keypoints == NULL);
    ptreg_volume_free(&v);
}

/* Keypoints of v and of rot (v turned 90 degrees about z) at a relative
 * threshold: the same voxels, moved. */
static void compare_rotated(const ptreg_volume *v, const ptreg_volume *rot, int window, double relative)
{
    ptreg_harris3d_options o;
    ptreg_harris3d_options_default(&o);
    o.window = window;
    o.threshold = relative;
    ptreg_harris3d_result a, b;
    ptreg_error err;
    CHECK(ptreg_harris3d(v, &o, &a, &err) == PTREG_OK);
    CHECK(ptreg_harris3d(rot, &o, &b, &err) == PTREG_OK);
    CHECK_MSG(a.keypoint_count > 50, "%zu keypoints", a.keypoint_count);
    size_t matched = 0, excused = 0;
    for (size_t i = 0; i < a.keypoint_count; i++) {
        const ptreg_keypoint *p = &a.keypoints[i];
        uint32_t rx = (uint32_t)(v->ny - 1 - p->y), ry = p->x;
        int found = 0;
        for (size_t j = 0; j < b.keypoint_count && !found; j++)
            found = b.keypoints[j].x == rx && b.keypoints[j].y == ry && b.keypoints[j].z == p->z;
        if (found) {
            matched++;
            continue;
        }
        float s_rot = b.scores[rx + rot->nx * (ry + rot->ny * p->z)];
        int near_threshold = fabs(p->score - a.threshold) <= 1e-5 * fabs(a.threshold);
        excused += near_threshold;
        CHECK_MSG(near_threshold, "window %d: keypoint (%u, %u, %u) score %.9g (rotated %.9g) lost by the rotation",
                  window, p->x, p->y, p->z, p->score, s_rot);
    }
    CHECK_MSG(a.keypoint_count == b.keypoint_count || excused, "%zu vs %zu keypoints", a.keypoint_count,
              b.keypoint_count);
    printf("tooth, window %d: %zu keypoints, %zu matched after rotation, %zu near the threshold\n", window,
           a.keypoint_count, matched, excused);
    ptreg_harris3d_result_free(&a);
    ptreg_harris3d_result_free(&b);
}

/* The tooth rotated by 90 degrees about z: voxel (x, y, z) moves to
 * (ny - 1 - y, x, z), and the keypoints move with it. Scores may differ
 * in the last bits (the passes meet the axes in another order), so a
 * keypoint may come or go only where its score is within 1e-5 of the
 * threshold or of a neighbor's. */
static void test_tooth_rotation(const char *data)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/volumes/tooth_103x94x161_uint8.raw", data);
    ptreg_volume v, rot;
    ptreg_error err;
    if (ptreg_volume_read(path, PTREG_VOLUME_AUTO, NULL, &v, &err) != PTREG_OK) {
        CHECK_MSG(0, "%s", err.message);
        return;
    }
    ptreg_volume_alloc(&rot, v.ny, v.nx, v.nz, PTREG_VOXEL_U8, NULL);
    const uint8_t *src = v.data;
    uint8_t *dst = rot.data;
    for (size_t z = 0; z < v.nz; z++)
        for (size_t y = 0; y < v.ny; y++)
            for (size_t x = 0; x < v.nx; x++)
                dst[(v.ny - 1 - y) + rot.nx * (x + rot.ny * z)] = src[x + v.nx * (y + v.ny * z)];
    for (int window = 3; window <= 5; window += 2)
        compare_rotated(&v, &rot, window, window == 3 ? 1e-4 : 1e-5);
    ptreg_volume_free(&v);
    ptreg_volume_free(&rot);
}

int main(void)
{
    test_fast_matches_reference();
    test_box_corners();
    test_edges_and_flat_score_at_most_zero();
    test_deterministic();
    test_keypoint_rules();
    test_bad_arguments();
    const char *data = check_data_dir();
    if (data)
        test_tooth_rotation(data);
    return check_exit();
}
