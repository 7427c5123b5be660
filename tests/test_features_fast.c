/* The fast paths of the point features against their references: the
 * neighborhood table (bounded k-NN in the tree's order) against one
 * independent search per point, the per-ISA pair-bin kernels against the
 * scalar pair feature, whole descriptors fast against reference on every
 * ISA; and the neighborhood rules PCL and Open3D share (strict radius, a
 * point alone gets zeros) on the hand-checked example of
 * tests/data/features/README.md. */
#include "check.h"
#include "core/cpu.h"
#include "feat/neighborhood.h"
#include "feat/pfh_kernels.h"
#include "ptreg/ptreg.h"

#include <stdint.h>
#include "core/numeric.h"

/* Points on a coarse integer grid with repeats, so distances tie and
 * points coincide: the (distance, index) order is what decides. */
static float *tie_cloud(size_t n, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    float *xyz = malloc(3 * n * sizeof *xyz);
    for (size_t i = 0; i < 3 * n; i++)
        xyz[i] = (float)(ptreg_rng_next(&rng) % 9) * 0.25f;
    return xyz;
}

static float *random_cloud(size_t n, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    float *xyz = malloc(3 * n * sizeof *xyz);
    for (size_t i = 0; i < 3 * n; i++)
        xyz[i] = (float)(ptreg_rng_uniform(&rng) * 10 - 5);
    return xyz;
}

static int same_lists(const feat_table *a, const feat_table *b)
{
    for (size_t i = 0; i < a->n; i++) {
        const nn_list *x = &a->list[i], *y = &b->list[i];
        if (x->count != y->count || memcmp(x->index, y->index, x->count * sizeof *x->index) ||
            memcmp(x->dist2, y->dist2, x->count * sizeof *x->dist2))
            return 0;
    }
    return 1;
}

/* List i of a, sorted by (squared distance, index), equals list i of b. */
static int same_sets(const feat_table *a, const feat_table *b)
{
    for (size_t i = 0; i < a->n; i++) {
        const nn_list *x = &a->list[i], *y = &b->list[i];
        if (x->count != y->count)
            return 0;
        for (size_t j = 0; j < x->count; j++) {
            size_t at = 0; /* where x's entry j sits in y, which is sorted */
            while (at < y->count && y->index[at] != x->index[j])
                at++;
            if (at == y->count || y->dist2[at] != x->dist2[j])
                return 0;
        }
    }
    return 1;
}

static void check_table_order(const float *xyz, size_t n, ptreg_neighborhood nb, nn_order order, const char *what)
{
    ptreg_kdtree *tree;
    CHECK(ptreg_kdtree_create(xyz, n, NULL, &tree, NULL) == PTREG_OK);
    feat_table fast, ref, sorted;
    CHECK(feat_table_build(tree, xyz, n, &nb, 0, order, &fast, NULL) == PTREG_OK);
    CHECK(feat_table_build(tree, xyz, n, &nb, 1, order, &ref, NULL) == PTREG_OK);
    CHECK(feat_table_build(tree, xyz, n, &nb, 1, NN_SORTED, &sorted, NULL) == PTREG_OK);
    CHECK_MSG(same_lists(&fast, &ref), "%s k %zu radius %g order %d: table differs from the reference", what, nb.k,
              nb.radius, (int)order);
    CHECK_MSG(same_sets(&fast, &sorted), "%s k %zu radius %g order %d: not the sorted lists' points", what, nb.k,
              nb.radius, (int)order);
    size_t expect = nb.k ? (nb.k < n ? nb.k : n) : 0;
    for (size_t i = 0; nb.k && !(nb.radius > 0) && i < n; i++)
        if (fast.list[i].count != expect) {
            CHECK_MSG(0, "%s: point %zu has %zu neighbors, not %zu", what, i, fast.list[i].count, expect);
            break;
        }
    ptreg_set_num_threads(1);
    feat_table one;
    CHECK(feat_table_build(tree, xyz, n, &nb, 0, order, &one, NULL) == PTREG_OK);
    CHECK_MSG(same_lists(&fast, &one), "%s: 1 and 2 threads differ", what);
    ptreg_set_num_threads(2);
    feat_table_free(&one);
    feat_table_free(&fast);
    feat_table_free(&ref);
    feat_table_free(&sorted);
    ptreg_kdtree_destroy(tree);
}

static void check_table(const float *xyz, size_t n, ptreg_neighborhood nb, const char *what)
{
    check_table_order(xyz, n, nb, NN_SORTED, what);
    check_table_order(xyz, n, nb, NN_TREE_ORDER, what);
}

/* Open3D's hybrid search: each list is the k-NN list cut where the strict
 * radius test fails, and is the radius list when that holds at most k. */
static void check_hybrid(const float *xyz, size_t n, size_t k, double radius, const char *what)
{
    ptreg_kdtree *tree;
    CHECK(ptreg_kdtree_create(xyz, n, NULL, &tree, NULL) == PTREG_OK);
    feat_table hybrid, knn, ball;
    const ptreg_neighborhood both = {k, radius}, nearest = {k, 0}, within = {0, radius};
    CHECK(feat_table_build(tree, xyz, n, &both, 0, NN_SORTED, &hybrid, NULL) == PTREG_OK);
    CHECK(feat_table_build(tree, xyz, n, &nearest, 0, NN_SORTED, &knn, NULL) == PTREG_OK);
    CHECK(feat_table_build(tree, xyz, n, &within, 0, NN_SORTED, &ball, NULL) == PTREG_OK);
    const float r2 = (float)(radius * radius);
    size_t bad = 0, cut = 0, whole = 0;
    for (size_t i = 0; i < n; i++) {
        const nn_list *h = &hybrid.list[i], *a = &knn.list[i], *b = &ball.list[i];
        size_t expect = 0;
        while (expect < a->count && a->dist2[expect] < r2)
            expect++;
        int ok = h->count == expect && !memcmp(h->index, a->index, expect * sizeof *h->index);
        if (b->count <= k)
            ok = ok && h->count == b->count && !memcmp(h->index, b->index, b->count * sizeof *h->index);
        bad += !ok;
        cut += h->count < a->count;
        whole += h->count == k;
    }
    CHECK_MSG(bad == 0, "%s hybrid k %zu radius %g: %zu lists are not Open3D's", what, k, radius, bad);
    CHECK_MSG(cut > 0 && whole > 0, "%s hybrid k %zu radius %g: the case cuts %zu lists, fills %zu", what, k, radius,
              cut, whole);
    feat_table_free(&hybrid);
    feat_table_free(&knn);
    feat_table_free(&ball);
    ptreg_kdtree_destroy(tree);
}

static void test_table(void)
{
    ptreg_set_num_threads(2);
    const size_t ks[] = {1, 2, 7, 30, 96, 97, 150};
    for (int shape = 0; shape < 2; shape++) {
        size_t n = shape ? 3000 : 1500;
        float *xyz = shape ? random_cloud(n, 11) : tie_cloud(n, 12);
        const char *what = shape ? "random" : "ties";
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
            check_table(xyz, n, (ptreg_neighborhood){ks[i], 0}, what);
        check_table(xyz, n, (ptreg_neighborhood){0, 0.5}, what); /* on the grid: many at exactly 0.5 */
        check_table(xyz, n, (ptreg_neighborhood){0, 1.3}, what);
        check_table(xyz, n, (ptreg_neighborhood){30, 0.5}, what);
        check_table(xyz, n, (ptreg_neighborhood){97, 1.3}, what);
        check_hybrid(xyz, n, shape ? 20 : 30, shape ? 1.3 : 0.4, what);
        free(xyz);
    }
    float *few = random_cloud(5, 3); /* k beyond n: every point */
    check_table(few, 5, (ptreg_neighborhood){30, 0}, "five points");
    free(few);
    ptreg_set_num_threads(0);
}

/* Strict radius, as FLANN and nanoflann test it: at exactly r, out. */
static void test_strict_radius(void)
{
    const float xyz[] = {0, 0, 0, 0.5f, 0, 0, 0, 0.25f, 0, 0.49999997f, 0, 0};
    ptreg_kdtree *tree;
    CHECK(ptreg_kdtree_create(xyz, 4, NULL, &tree, NULL) == PTREG_OK);
    ptreg_neighbors nb = {0};
    ptreg_neighborhood r = {0, 0.5};
    CHECK(nn_neighbors(tree, &r, NN_SORTED, xyz, &nb, NULL) == PTREG_OK);
    CHECK_MSG(nb.count == 3 && nb.index[0] == 0 && nb.index[1] == 2 && nb.index[2] == 3,
              "radius 0.5 from the origin: %zu neighbors (want 0, 2, 3; the point at 0.5 is out)", nb.count);
    ptreg_neighbors_free(&nb);
    ptreg_kdtree_destroy(tree);
}

/* Unit normals in random directions, some made to tie or degenerate. */
static void random_unit(ptreg_rng *rng, float n[3])
{
    double v[3], len;
    do {
        for (int a = 0; a < 3; a++)
            v[a] = ptreg_rng_uniform(rng) * 2 - 1;
        len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    } while (len < 0.1 || len > 1);
    for (int a = 0; a < 3; a++)
        n[a] = (float)(v[a] / len);
}

/* Pairs of every kind the kernels must get right: generic ones, ties of
 * |n.d| (normals perpendicular to d, on a plane), degenerate ones (the
 * same point; a normal along d), theta at the range's ends (+-pi), and
 * theta right on a bin edge (w.n_t / u.n_t set to the edge's tangent). */
static void make_pairs(size_t m, float *x, float *y, float *z, float *nx, float *ny, float *nz, uint64_t seed)
{
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t j = 0; j < m; j++) {
        float p[3], n[3];
        for (int a = 0; a < 3; a++)
            p[a] = (float)(ptreg_rng_uniform(&rng) * 2 - 1);
        random_unit(&rng, n);
        switch (j % 8) {
        case 1: /* on the plane z = 0 with a +z normal, like the fixed point */
            p[2] = 0, n[0] = n[1] = 0, n[2] = 1;
            break;
        case 2: /* the fixed point itself */ p[0] = p[1] = p[2] = 0; break;
        case 3: /* a normal along the line to the fixed point */
            for (int a = 0; a < 3; a++)
                n[a] = p[a] / sqrtf(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
            break;
        case 4: /* opposite normal in the plane: theta near +-pi */ p[2] = 0, n[0] = n[1] = 0, n[2] = -1; break;
        case 5: /* a grid point: ties and exact values */
            for (int a = 0; a < 3; a++)
                p[a] = (float)((long)(p[a] * 4)) * 0.25f;
            break;
        default: break;
        }
        x[j] = p[0], y[j] = p[1], z[j] = p[2], nx[j] = n[0], ny[j] = n[1], nz[j] = n[2];
    }
}

static void test_kernel_bins(void)
{
    const size_t m = 4000;
    float *soa = malloc(6 * m * sizeof *soa);
    int32_t *bins = malloc(3 * m * sizeof *bins);
    float *x = soa, *y = soa + m, *z = soa + 2 * m, *nx = soa + 3 * m, *ny = soa + 4 * m, *nz = soa + 5 * m;
    make_pairs(m, x, y, z, nx, ny, nz, 21);
    const float p[3] = {0, 0, 0}, n[3] = {0, 0, 1};
    typedef void (*kernel_fn)(const feat_pair_batch *);
    kernel_fn kernels[3] = {feat_pair_bins_generic, NULL, NULL};
#if defined(__x86_64__)
    kernels[1] = feat_pair_bins_avx2;
    kernels[2] = feat_pair_bins_avx512;
#endif
    size_t checked = 0;
    for (int isa = 0; isa <= (int)cpu_best_isa(); isa++)
        for (int first = 0; first < 2; first++)
            for (int split = 5; split <= 11; split += 6) {
                feat_pair_batch b = {p, n, first, x, y, z, nx, ny, nz, m, split, bins, bins + m, bins + 2 * m};
                kernels[isa](&b);
                size_t wrong = 0;
                for (size_t j = 0; j < m; j++) {
                    float o[3] = {x[j], y[j], z[j]}, on[3] = {nx[j], ny[j], nz[j]};
                    int32_t e[3];
                    if (first)
                        feat_pair_bins_exact(p, n, o, on, split, e);
                    else
                        feat_pair_bins_exact(o, on, p, n, split, e);
                    wrong += e[0] != bins[j] || e[1] != bins[m + j] || e[2] != bins[2 * m + j];
                    checked++;
                }
                CHECK_MSG(wrong == 0, "ISA %s, fixed %s, %d bins: %zu of %zu pairs binned differently",
                          isa_level_name((isa_level)isa), first ? "first" : "second", split, wrong, m);
            }
    CHECK(checked >= 4 * m);
    /* theta on a bin edge: w.n_t / u.n_t at the edge's angle, so that the
     * polynomial's error would decide the bin if the margin did not */
    size_t edge_pairs = 0;
    for (int e = 1; e < 11; e++) {
        double angle = -3.14159265358979323846 + 2 * 3.14159265358979323846 * e / 11;
        /* source (0,0,0), n = +z; target (0,1,0), normal (0, sin, cos): both
         * normals are perpendicular to d (a tie: no swap), u = z, v = d x u
         * = x, w = u x v = y, so theta = atan2(sin, cos) = angle */
        float tn[3] = {0.0f, (float)sin(angle), (float)cos(angle)};
        float o[3] = {0, 1, 0};
        feat_pair_batch b = {p, n, 1, o, o + 1, o + 2, tn, tn + 1, tn + 2, 1, 11, bins, bins + 1, bins + 2};
        for (int isa = 0; isa <= (int)cpu_best_isa(); isa++) {
            kernels[isa](&b);
            int32_t ex[3];
            feat_pair_bins_exact(p, n, o, tn, 11, ex);
            CHECK_MSG(ex[0] == bins[0] && ex[1] == bins[1] && ex[2] == bins[2],
                      "edge %d, ISA %s: (%d %d %d) vs (%d %d %d)", e, isa_level_name((isa_level)isa), bins[0], bins[1],
                      bins[2], ex[0], ex[1], ex[2]);
            edge_pairs++;
        }
    }
    CHECK(edge_pairs >= 10);
    free(soa);
    free(bins);
}

/* A smooth blob with normals, a few of them NaN. */
static void blob_with_normals(size_t n, float **xyz, float **nrm)
{
    ptreg_cloud c;
    CHECK(ptreg_synth_model(PTREG_SHAPE_BLOB, n, 9, &c, NULL) == PTREG_OK);
    *xyz = c.xyz;
    *nrm = malloc(3 * n * sizeof(float));
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    o.neighbors.k = 15;
    CHECK(ptreg_normals(*xyz, n, &o, *nrm, NULL, NULL, NULL) == PTREG_OK);
    free(c.normals);
}

static void test_fast_equals_reference(void)
{
    const size_t n = 2500;
    float *xyz, *nrm;
    blob_with_normals(n, &xyz, &nrm);
    nrm[3 * 77] = NAN; /* one unknown normal: NaN rows around it */
    float *ref = malloc(n * PTREG_PFH_BINS * sizeof *ref), *fast = malloc(n * PTREG_PFH_BINS * sizeof *fast);
    const ptreg_neighborhood hoods[] = {{30, 0}, {11, 0}, {0, 0.12}};
    for (int kind = 0; kind < 3; kind++)
        for (size_t h = 0; h < sizeof hoods / sizeof hoods[0]; h++) {
            ptreg_features_options o;
            ptreg_features_options_default(&o);
            o.neighbors = hoods[h];
            o.convention = kind == 2 ? PTREG_FPFH_OPEN3D : PTREG_FPFH_PCL;
            int bins = kind ? PTREG_FPFH_BINS : PTREG_PFH_BINS;
            ptreg_status (*fn)(const float *, const float *, size_t, const ptreg_features_options *, float *, size_t *,
                               ptreg_error *) = kind ? ptreg_fpfh : ptreg_pfh;
            size_t miss_ref = 0, miss_fast = 0;
            o.reference = 1;
            CHECK(fn(xyz, nrm, n, &o, ref, &miss_ref, NULL) == PTREG_OK);
            CHECK_MSG(miss_ref > 0 && miss_ref < 200, "%zu NaN rows around one NaN normal", miss_ref);
            o.reference = 0;
            for (int isa = 0; isa <= (int)cpu_best_isa(); isa++) {
                cpu_set_isa(isa);
                CHECK(fn(xyz, nrm, n, &o, fast, &miss_fast, NULL) == PTREG_OK);
                CHECK(miss_fast == miss_ref);
                /* memcmp: NaN rows are the same NaN bits */
                CHECK_MSG(!memcmp(ref, fast, n * (size_t)bins * sizeof *ref),
                          "%s k %zu r %g, ISA %s: fast path differs from the reference",
                          kind == 0   ? "pfh"
                          : kind == 1 ? "fpfh"
                                      : "fpfh open3d",
                          hoods[h].k, hoods[h].radius, isa_level_name((isa_level)isa));
            }
            cpu_set_isa(-1);
        }
    free(ref);
    free(fast);
    free(xyz);
    free(nrm);
}

/* tests/data/features/README.md, "Worked example": PCL's and Open3D's
 * outputs for four points with radius 0.5. */
static void test_worked_example(void)
{
    const float xyz[] = {0, 0, 0, 0.5f, 0, 0, 0, 0.25f, 0, 3, 3, 3};
    const float nrm[] = {0, 0, 1, 0, 0, 1, 0.64f, 0.48f, 0.6f, 0, 0, 1};
    float pfh[4 * PTREG_PFH_BINS], fpfh[4 * PTREG_FPFH_BINS], o3d[4 * PTREG_FPFH_BINS];
    for (int reference = 0; reference < 2; reference++) {
        ptreg_features_options o;
        ptreg_features_options_default(&o);
        o.neighbors = (ptreg_neighborhood){0, 0.5};
        o.reference = reference;
        size_t missing = 9;
        CHECK(ptreg_pfh(xyz, nrm, 4, &o, pfh, &missing, NULL) == PTREG_OK && missing == 0);
        CHECK(ptreg_fpfh(xyz, nrm, 4, &o, fpfh, &missing, NULL) == PTREG_OK && missing == 0);
        o.convention = PTREG_FPFH_OPEN3D;
        CHECK(ptreg_fpfh(xyz, nrm, 4, &o, o3d, NULL, NULL) == PTREG_OK);
        int ok = 1;
        for (int i = 0; i < 4; i++) {
            int paired = i == 0 || i == 2; /* p1 and p3 are alone */
            for (int b = 0; b < PTREG_PFH_BINS; b++)
                ok &= pfh[i * PTREG_PFH_BINS + b] == (paired && b == 47 ? 100.0f : 0.0f);
            for (int b = 0; b < PTREG_FPFH_BINS; b++) {
                int hot = paired && (b == 6 || b == 20 || b == 24);
                ok &= fpfh[i * PTREG_FPFH_BINS + b] == (hot ? 100.0f : 0.0f);
                ok &= o3d[i * PTREG_FPFH_BINS + b] == (hot ? 200.0f : 0.0f);
            }
        }
        CHECK_MSG(ok, "worked example (%s): not PCL's and Open3D's bins", reference ? "reference" : "fast");
    }
}

/* Normals by tiles (nn/tiles.c) against one tree's, bit for bit: tiles of
 * a few hundred points, k-NN, hybrid and radius neighbourhoods, ties and
 * coincident points, and two clusters far apart with a sparse bridge
 * (tiles whose first halo falls short). */
static float *clusters_cloud(size_t n, uint64_t seed)
{
    float *xyz = random_cloud(n, seed);
    for (size_t i = 0; i < n; i++) {
        const float shift = i % 3 == 0 ? 100.0f : 0.0f;
        xyz[3 * i] = i % 97 == 0 ? (float)(i % 100) : xyz[3 * i] * 0.1f + shift;
    }
    return xyz;
}

static void check_tiled(const float *xyz, size_t n, ptreg_neighborhood nb, size_t tile, const char *what)
{
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    o.neighbors = nb;
    float *whole = malloc(3 * n * sizeof *whole), *tiled = malloc(3 * n * sizeof *tiled);
    float *cw = malloc(n * sizeof *cw), *ct = malloc(n * sizeof *ct);
    size_t mw = 0, mt = 0;
    CHECK(ptreg_normals(xyz, n, &o, whole, cw, &mw, NULL) == PTREG_OK);
    CHECK(feat_normals_tiled(xyz, n, &o, tile, tiled, ct, &mt, NULL) == PTREG_OK);
    CHECK_MSG(!memcmp(whole, tiled, 3 * n * sizeof *whole) && !memcmp(cw, ct, n * sizeof *cw) && mw == mt,
              "%s k %zu radius %g, tiles of %zu: normals differ from one tree's (missing %zu, %zu)", what, nb.k,
              nb.radius, tile, mw, mt);
    free(whole), free(tiled), free(cw), free(ct);
}

static void test_tiled_normals(void)
{
    ptreg_set_num_threads(2);
    const size_t n = 4000;
    float *clouds[3] = {random_cloud(n, 21), tie_cloud(n, 22), clusters_cloud(n, 23)};
    const char *names[3] = {"random", "ties", "clusters"};
    for (int c = 0; c < 3; c++) {
        check_tiled(clouds[c], n, (ptreg_neighborhood){30, 0}, 257, names[c]);
        check_tiled(clouds[c], n, (ptreg_neighborhood){10, 0}, 1000, names[c]);
        check_tiled(clouds[c], n, (ptreg_neighborhood){30, 0.6}, 300, names[c]);
        check_tiled(clouds[c], n, (ptreg_neighborhood){0, 0.8}, 500, names[c]);
        check_tiled(clouds[c], n, (ptreg_neighborhood){2, 0}, 257, names[c]); /* too few: NaN */
        free(clouds[c]);
    }
    ptreg_set_num_threads(0);
}

int main(void)
{
    test_table();
    test_strict_radius();
    test_kernel_bins();
    test_fast_equals_reference();
    test_worked_example();
    test_tiled_normals();
    return check_exit();
}
