/* Nearest neighbors: brute force and the k-d tree (1-NN with and without
 * hints, k-NN, radius) against a plain reference loop, on every ISA path,
 * on random, clustered, duplicated and lattice (all-ties) clouds and on the
 * real scans. */
#include "check.h"
#include "nn_ref.h"
#include "core/cpu.h"
#include "nn/nn_kernels.h"
#include "nn/kdtree_impl.h"
#include "nn/nn_device.h"
#include "nn/hoods.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"
#include "hooks.h"
#include "core/numeric.h"

/* The tree's search bounded by a squared distance (ICP's max_dist): the
 * unbounded answer where it lies within the bound, no answer (and
 * INFINITY) where it does not. */
static void check_bounded(const char *what, const ptreg_kdtree *tree, const float *q, size_t nq, const uint32_t *ri,
                          const float *rd)
{
    const float limit = rd[nq / 2];
    uint32_t *slot = malloc(nq * sizeof *slot);
    float *d = malloc(nq * sizeof *d);
    nn_cpu_kernels()->kd_nearest_range(tree, q, nq, limit, NULL, slot, d);
    size_t bad = 0;
    for (size_t i = 0; i < nq; i++)
        bad += rd[i] <= limit ? slot[i] == PTREG_NO_NEIGHBOR || tree->index[slot[i]] != ri[i] || d[i] != rd[i]
                              : slot[i] != PTREG_NO_NEIGHBOR || d[i] != INFINITY;
    CHECK_MSG(bad == 0, "%s: the k-d tree bounded by %g differs on %zu of %zu", what, (double)limit, bad, nq);
    free(slot), free(d);
}

static void check_nearest(const char *what, const float *t, size_t m, const float *q, size_t nq)
{
    uint32_t *ri = malloc(nq * sizeof *ri), *bi = malloc(nq * sizeof *bi);
    uint32_t *ki = malloc(nq * sizeof *ki), *hint = malloc(nq * sizeof *hint);
    float *rd = malloc(nq * sizeof *rd), *bd = malloc(nq * sizeof *bd), *kd = malloc(nq * sizeof *kd);
    for (size_t i = 0; i < nq; i++)
        ref_nearest(t, m, q + 3 * i, &ri[i], &rd[i]);
    ptreg_kdtree *tree = NULL;
    ptreg_kdtree_options opt;
    ptreg_kdtree_options_default(&opt);
    int leaf_sizes[] = {4, 16, 64};
    int best_isa = cpu_best_isa();
    for (int isa = 0; isa <= best_isa; isa++) {
        cpu_set_isa(isa);
        CHECK(ptreg_brute_nearest(t, m, q, nq, bi, bd, NULL) == PTREG_OK);
        size_t bad = 0;
        for (size_t i = 0; i < nq; i++)
            bad += bi[i] != ri[i] || memcmp(&bd[i], &rd[i], sizeof(float)) != 0;
        CHECK_MSG(bad == 0, "%s: brute force (%s) differs on %zu of %zu queries", what, isa_level_name((isa_level)isa),
                  bad, nq);
        for (int ls = 0; ls < 3; ls++) {
            opt.leaf_size = leaf_sizes[ls];
            CHECK(ptreg_kdtree_create(t, m, &opt, &tree, NULL) == PTREG_OK);
            /* no hints, good hints, arbitrary hints: the answer never changes */
            for (int h = 0; h < 3; h++) {
                for (size_t i = 0; i < nq; i++)
                    hint[i] = h == 1 ? ri[i] : (uint32_t)((i * 7919u) % m);
                ptreg_kdtree_nearest(tree, q, nq, h ? hint : NULL, ki, kd);
                bad = 0;
                for (size_t i = 0; i < nq; i++)
                    bad += ki[i] != ri[i] || memcmp(&kd[i], &rd[i], sizeof(float)) != 0;
                CHECK_MSG(bad == 0, "%s: k-d tree (%s, leaf %d, hints %d) differs on %zu of %zu", what,
                          isa_level_name((isa_level)isa), opt.leaf_size, h, bad, nq);
            }
            check_bounded(what, tree, q, nq, ri, rd);
            ptreg_kdtree_destroy(tree);
        }
    }
    cpu_set_isa(-1);
    free(ri), free(bi), free(ki), free(hint), free(rd), free(bd), free(kd);
}

typedef struct pair {
    float d;
    uint32_t i;
} pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (ref_better(x->d, x->i, y->d, y->i))
        return -1;
    return ref_better(y->d, y->i, x->d, x->i);
}

static void check_knn_radius(const char *what, const float *t, size_t m, const float *q, size_t nq)
{
    ptreg_kdtree *tree = NULL;
    CHECK(ptreg_kdtree_create(t, m, NULL, &tree, NULL) == PTREG_OK);
    pair *all = malloc(m * sizeof *all);
    size_t ks[] = {1, 5, 17, m, m + 3};
    uint32_t *ki = malloc((m + 3) * sizeof *ki);
    float *kd = malloc((m + 3) * sizeof *kd);
    ptreg_neighbors nb = {0};
    size_t bad_knn = 0, bad_radius = 0;
    for (size_t i = 0; i < nq; i++) {
        const float *qi = q + 3 * i;
        for (size_t j = 0; j < m; j++)
            all[j] = (pair){ref_dist2(qi, t + 3 * j), (uint32_t)j};
        qsort(all, m, sizeof *all, pair_cmp);
        for (size_t s = 0; s < sizeof ks / sizeof ks[0]; s++) {
            size_t k = ks[s], want = k < m ? k : m;
            size_t got = ptreg_kdtree_knn(tree, qi, k, ki, kd);
            int ok = got == want;
            for (size_t j = 0; ok && j < got; j++)
                ok = ki[j] == all[j].i && kd[j] == all[j].d;
            bad_knn += !ok;
        }
        float radius = (float)(0.05 + 0.3 * (double)(i % 4));
        CHECK(ptreg_kdtree_radius(tree, qi, radius, &nb, NULL) == PTREG_OK);
        size_t want = 0;
        while (want < m && all[want].d <= radius * radius)
            want++;
        int ok = nb.count == want;
        for (size_t j = 0; ok && j < want; j++)
            ok = nb.index[j] == all[j].i && nb.dist2[j] == all[j].d;
        bad_radius += !ok;
    }
    CHECK_MSG(bad_knn == 0, "%s: k-NN differs on %zu queries", what, bad_knn);
    CHECK_MSG(bad_radius == 0, "%s: radius search differs on %zu queries", what, bad_radius);
    ptreg_neighbors_free(&nb);
    ptreg_kdtree_destroy(tree);
    free(all), free(ki), free(kd);
}

static void test_synthetic(void)
{
    size_t sizes[] = {1, 2, 7, 100, 1000, 20011};
    for (int kind = 0; kind < CLOUD_KINDS; kind++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t m = sizes[s], nq = 1500;
            float *t = make_cloud((cloud_kind)kind, m, 11 + s);
            float *q = make_queries((cloud_kind)kind, nq, 97 + s);
            /* runs of equal queries and of equal targets (a scanner's
             * invalid returns): a query equal to its predecessor takes its
             * answer */
            for (size_t i = 100; i < 400; i++)
                memcpy(q + 3 * i, q + 300, 3 * sizeof(float));
            for (size_t j = m / 2; j < m && j < m / 2 + 200; j++)
                memcpy(t + 3 * j, t + 3 * (m / 2), 3 * sizeof(float));
            char what[64];
            snprintf(what, sizeof what, "%s m=%zu", cloud_kind_names[kind], m);
            check_nearest(what, t, m, q, nq);
            if (m <= 1000)
                check_knn_radius(what, t, m, q, 200);
            free(t);
            free(q);
        }
}

static void test_threads_identical(void)
{
    size_t m = 30000, nq = 20000;
    float *t = make_cloud(CLOUD_UNIFORM, m, 5), *q = make_queries(CLOUD_UNIFORM, nq, 6);
    ptreg_kdtree *tree = NULL;
    CHECK(ptreg_kdtree_create(t, m, NULL, &tree, NULL) == PTREG_OK);
    uint32_t *i1 = malloc(nq * 4), *i2 = malloc(nq * 4);
    float *d1 = malloc(nq * 4), *d2 = malloc(nq * 4);
    ptreg_set_num_threads(1);
    ptreg_kdtree_nearest(tree, q, nq, NULL, i1, d1);
    ptreg_set_num_threads(2);
    ptreg_kdtree_nearest(tree, q, nq, NULL, i2, d2);
    CHECK(memcmp(i1, i2, nq * 4) == 0 && memcmp(d1, d2, nq * 4) == 0);
    ptreg_brute_nearest(t, m, q, 2000, i2, d2, NULL);
    CHECK(memcmp(i1, i2, 2000 * 4) == 0 && memcmp(d1, d2, 2000 * 4) == 0);
    ptreg_set_num_threads(0);
    ptreg_kdtree_destroy(tree);
    free(t), free(q), free(i1), free(i2), free(d1), free(d2);
}

static void test_bad_arguments(void)
{
    ptreg_kdtree *tree = (ptreg_kdtree *)1;
    ptreg_error err;
    float p[6] = {0, 0, 0, NAN, 0, 0};
    CHECK(ptreg_kdtree_create(p, 0, NULL, &tree, &err) == PTREG_ERR_ARG && tree == NULL);
    CHECK(ptreg_kdtree_create(p, 2, NULL, &tree, &err) == PTREG_ERR_ARG);
    CHECK(strstr(err.message, "point 1") != NULL);
    ptreg_kdtree_options opt = {3};
    CHECK(ptreg_kdtree_create(p, 1, &opt, &tree, &err) == PTREG_ERR_ARG);
    uint32_t i;
    float d;
    CHECK(ptreg_brute_nearest(p, 0, p, 1, &i, &d, &err) == PTREG_ERR_ARG);
}

/* Every point of bun045 against bun000: the real scans, exact on all paths. */
static void test_real_scans(void)
{
    ptreg_cloud target, query;
    if (!read_bunny_pair(&target, &query))
        return;
    check_nearest("bun045 -> bun000", target.xyz, target.n, query.xyz, 8000);
    check_knn_radius("bun045 -> bun000", target.xyz, 3000, query.xyz, 100);
    ptreg_cloud_free(&target);
    ptreg_cloud_free(&query);
}

/* Nodes of an n-node implicit tree under node at (at included). */
static size_t implicit_subtree_size(size_t at, size_t n)
{
    return at >= n ? 0 : 1 + implicit_subtree_size(2 * at + 1, n) + implicit_subtree_size(2 * at + 2, n);
}

/* Is every node of subtree `at` on the `want` side (-1: at or below, +1:
 * at or above) of v on axis? */
static int subtree_on_side(const lbkd_node *t, size_t count, size_t at, int axis, float v, int want)
{
    if (at >= count)
        return 1;
    const float c = (&t[at].x)[axis];
    if (want < 0 ? c > v : c < v)
        return 0;
    return subtree_on_side(t, count, 2 * at + 1, axis, v, want) && subtree_on_side(t, count, 2 * at + 2, axis, v, want);
}

/* The device's left-balanced tree (nn/lbkd.c): the left subtree's size as
 * the implicit layout has it, every
 * point once, each node between its subtrees on its axis (round-robin by
 * depth), the same nodes on a second build. */
static void test_left_balanced(void)
{
    for (size_t n = 1; n < 300; n++)
        CHECK_MSG(lbkd_left_size(n) == implicit_subtree_size(1, n), "%zu nodes: %zu left of the root, not %zu", n,
                  lbkd_left_size(n), implicit_subtree_size(1, n));
    for (int dup = 0; dup < 2; dup++) {
        const size_t n = 3001;
        float *xyz = malloc(3 * n * sizeof *xyz);
        ptreg_rng rng;
        ptreg_rng_seed(&rng, 71 + (uint64_t)dup);
        for (size_t i = 0; i < 3 * n; i++)
            xyz[i] = dup ? (float)(int)(4 * ptreg_rng_uniform(&rng)) : (float)ptreg_rng_uniform(&rng);
        ptreg_kdtree *tree = NULL;
        ptreg_error err;
        REQUIRE(ptreg_kdtree_create(xyz, n, NULL, &tree, &err) == PTREG_OK);
        lbkd_node *a = NULL, *b = NULL;
        size_t count = 0, again = 0;
        REQUIRE(lbkd_build(tree, &a, &count, &err) == PTREG_OK && lbkd_build(tree, &b, &again, &err) == PTREG_OK);
        CHECK(count == n && again == n && !memcmp(a, b, n * sizeof *a));
        uint8_t *seen = calloc(tree->chunk_count * PTREG_KD_LANES, 1);
        size_t bad = 0, twice = 0;
        for (size_t i = 0; i < count; i++) {
            const uint32_t slot = a[i].word & LBKD_SLOT_MASK, axis = a[i].word >> LBKD_AXIS_SHIFT;
            size_t depth = 0;
            for (size_t j = i + 1; j > 1; j /= 2)
                depth++;
            twice += seen[slot]++ != 0;
            float p[3];
            kdtree_slot_point(tree, slot, p);
            const float v = (&a[i].x)[axis];
            bad += axis != depth % 3 || memcmp(p, &a[i].x, sizeof p) ||
                   !subtree_on_side(a, count, 2 * i + 1, (int)axis, v, -1) ||
                   !subtree_on_side(a, count, 2 * i + 2, (int)axis, v, +1);
        }
        CHECK_MSG(bad == 0 && twice == 0, "%s points: %zu nodes out of order, %zu points twice",
                  dup ? "repeated" : "random", bad, twice);
        free(seen);
        free(a);
        free(b);
        ptreg_kdtree_destroy(tree);
        free(xyz);
    }
}

/* ---- the neighbourhood engine's group k-NN (nn/hoods.c) ---- */

/* kd_group_knn against kd_knn_within for one query: the same list, bit for
 * bit. */
static int group_agrees(const ptreg_kdtree *t, const kd_group *g, const float q[3], size_t k, float guess, float limit)
{
    uint32_t gi[256], ri[256];
    float gd[256], rd[256];
    const size_t a = kd_group_knn(t, g, q, k, guess, limit, gi, gd), b = kd_knn_within(t, q, k, limit, ri, rd);
    return a == b && !memcmp(gi, ri, a * sizeof *gi) && !memcmp(gd, rd, a * sizeof *gd);
}

/* Every stride-th chunk of the tree as a group, gathered within 4x its points' k-th
 * distances: each point searched with its guess exact, loose, short of the
 * k-th (the single search takes over) and with a limit (the hybrid cap)
 * that holds fewer than k points. Returns the disagreements. */
static size_t check_groups(const ptreg_kdtree *t, const float *xyz, size_t k, size_t stride)
{
    size_t bad = 0;
    uint32_t idx[256];
    float d2[256], kth[PTREG_KD_LANES];
    kd_group *g = malloc(sizeof *g);
    for (size_t c = 0; c < t->chunk_count; c += stride) {
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, reach = 0;
        size_t n = 0;
        uint32_t point[PTREG_KD_LANES];
        for (unsigned l = 0; l < PTREG_KD_LANES; l++) {
            const uint32_t i = t->index[c * PTREG_KD_LANES + l];
            if (i == PTREG_NO_NEIGHBOR)
                continue;
            const float *q = xyz + 3 * (size_t)i;
            const size_t found = kd_knn_within(t, q, k, INFINITY, idx, d2);
            kth[n] = d2[found - 1];
            const float wide = 4 * kth[n] + 1e-3f;
            reach = wide > reach ? wide : reach;
            for (int a = 0; a < 3; a++) {
                lo[a] = q[a] < lo[a] ? q[a] : lo[a];
                hi[a] = q[a] > hi[a] ? q[a] : hi[a];
            }
            point[n++] = i;
        }
        if (!n || !kd_group_gather(t, lo, hi, reach, g))
            continue;
        for (size_t j = 0; j < n; j++) {
            const float *q = xyz + 3 * (size_t)point[j], exact = kth[j];
            bad += !group_agrees(t, g, q, k, exact, INFINITY);
            const float loose = 2 * exact + 1e-4f;
            bad += !group_agrees(t, g, q, k, loose < reach ? loose : reach, INFINITY);
            bad += !group_agrees(t, g, q, k, 0.5f * exact, INFINITY);
            bad += !group_agrees(t, g, q, k, 0.7f * exact, 0.7f * exact);
        }
    }
    free(g);
    return bad;
}

static void test_group_knn(void)
{
    const size_t ks[] = {1, 7, 30, 100, 129};
    for (int isa = 0; isa <= (int)cpu_best_isa(); isa++) {
        cpu_set_isa(isa);
        for (int kind = 0; kind < CLOUD_KINDS; kind++) {
            float *xyz = make_cloud((cloud_kind)kind, 2000, 40 + (uint64_t)kind);
            ptreg_kdtree *t;
            CHECK(ptreg_kdtree_create(xyz, 2000, NULL, &t, NULL) == PTREG_OK);
            for (size_t m = 0; m < sizeof ks / sizeof ks[0]; m++) {
                const size_t bad = check_groups(t, xyz, ks[m], 3);
                CHECK_MSG(bad == 0, "%s, %s cloud, k %zu: %zu group searches differ from single ones",
                          isa_level_name((isa_level)isa), cloud_kind_names[kind], ks[m], bad);
            }
            ptreg_kdtree_destroy(t);
            free(xyz);
        }
    }
    cpu_set_isa(-1);
    /* 20,000 points on 64 places: more than a buffer's keys at distance 0
     * (the single search takes over), and a reach over every chunk: more
     * than a group gathers */
    float *dup = make_cloud(CLOUD_DUPLICATES, 20000, 9);
    ptreg_kdtree *t;
    CHECK(ptreg_kdtree_create(dup, 20000, NULL, &t, NULL) == PTREG_OK);
    CHECK_MSG(check_groups(t, dup, 7, 50) == 0, "duplicates: group searches differ from single ones");
    kd_group *g = malloc(sizeof *g);
    const float lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    CHECK_MSG(!kd_group_gather(t, lo, hi, 1e30f, g), "a gather of every chunk of 20,000 points did not refuse");
    free(g);
    ptreg_kdtree_destroy(t);
    free(dup);
}

/* A k so large that a block's lists would pass 2^20 entries: the engine's
 * blocks shrink, and their lists are still the independent searches'. */
static void test_hoods_large_k(void)
{
    const size_t n = 5000, k = 4097;
    float *xyz = make_cloud(CLOUD_CLUSTERED, n, 77);
    ptreg_kdtree *t;
    CHECK(ptreg_kdtree_create(xyz, n, NULL, &t, NULL) == PTREG_OK);
    const nn_hoods h = {t, xyz, n, {k, 0.0}, NN_SORTED, 0};
    const size_t slots = t->chunk_count * PTREG_KD_LANES;
    CHECK_MSG(nn_hoods_blocks(&h) > (slots + NN_HOOD_BLOCK - 1) / NN_HOOD_BLOCK,
              "k %zu: %zu blocks, not fewer positions a block", k, nn_hoods_blocks(&h));
    nn_block *b = calloc(1, sizeof *b);
    ptreg_neighbors ref = {0};
    size_t bad = 0, seen = 0;
    for (size_t blk = 0; blk < 3; blk++) {
        CHECK(nn_hoods_block(&h, blk, b));
        for (size_t j = 0; j < b->count; j++, seen++) {
            CHECK(nn_neighbors(t, &h.nb, NN_SORTED, xyz + 3 * (size_t)b->point[j], &ref, NULL) == PTREG_OK);
            bad += ref.count != b->list[j].count || memcmp(ref.index, b->list[j].index, ref.count * 4) ||
                   memcmp(ref.dist2, b->list[j].dist2, ref.count * 4);
        }
    }
    CHECK_MSG(bad == 0 && seen > 0 && seen < 3 * NN_HOOD_BLOCK, "k %zu: %zu of %zu lists differ", k, bad, seen);
    ptreg_neighbors_free(&ref);
    nn_block_free(b);
    free(b);
    ptreg_kdtree_destroy(t);
    free(xyz);
}

int main(void)
{
    test_left_balanced();
    test_synthetic();
    test_threads_identical();
    test_bad_arguments();
    test_real_scans();
    test_group_knn();
    test_hoods_large_k();
    return check_exit();
}
