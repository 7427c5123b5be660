/* Delaunay-graph walks (the model index's exact nearest-neighbor search)
 * against a plain reference loop: every start (fixed, k-d descent, seeds
 * good, arbitrary and absent), every ISA path, thread counts, on random,
 * clustered, duplicated, lattice and cospherical clouds, queries far
 * outside the hull, the degenerate models that get no graph, the real
 * scans, and the answers ICP's next pass keeps without a walk (queries that
 * moved less than their margin inside the answer's Voronoi cell). */
#include "check.h"
#include "core/cpu.h"
#include "nn/nn_kernels.h"
#include "nn/index_impl.h"
#include "nn_ref.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"
#include "core/numeric.h"

static size_t count_distinct(const float *t, size_t m)
{
    size_t distinct = 0;
    for (size_t i = 0; i < m; i++) {
        size_t j = 0;
        while (j < i && memcmp(t + 3 * j, t + 3 * i, 3 * sizeof(float)) != 0)
            j++;
        distinct += j == i;
    }
    return distinct;
}

typedef struct reference {
    uint32_t *index;
    float *dist2;
} reference;

static reference make_reference(const float *t, size_t m, const float *q, size_t nq)
{
    reference r = {malloc(nq * sizeof *r.index), malloc(nq * sizeof *r.dist2)};
    for (size_t i = 0; i < nq; i++)
        ref_nearest(t, m, q + 3 * i, &r.index[i], &r.dist2[i]);
    return r;
}

static void free_reference(reference *r) { free(r->index), free(r->dist2); }

static size_t count_wrong(const reference *r, const uint32_t *index, const float *dist2, size_t nq)
{
    size_t bad = 0;
    for (size_t i = 0; i < nq; i++)
        bad += index[i] != r->index[i] || memcmp(&dist2[i], &r->dist2[i], sizeof(float)) != 0;
    return bad;
}

/* The tallies agree with themselves: every query counted once, the
 * histogram's total and the steps it implies within the recorded sum. */
static int stats_consistent(const ptreg_walk_stats *s, size_t nq)
{
    uint64_t total = 0, least_steps = 0, top = 0;
    for (int b = 0; b < PTREG_WALK_HISTOGRAM; b++) {
        total += s->histogram[b];
        least_steps += (uint64_t)b * s->histogram[b];
        top = s->histogram[b] ? (uint64_t)b : top;
    }
    return s->queries == nq && total == nq && s->steps >= least_steps && s->max_steps >= top && s->fallbacks <= nq &&
           (top < PTREG_WALK_HISTOGRAM - 1 ? s->steps == least_steps : 1);
}

static const char *search_name(ptreg_nn_method s) { return ptreg_nn_method_name(s); }

/* Every search of an index with a graph, on every ISA, equals the
 * reference; a walk seeded by the answers takes no step. */
static void check_walks(const char *what, const ptreg_model_index *idx, const reference *ref, const float *q, size_t nq,
                        size_t m)
{
    uint32_t *got = malloc(nq * sizeof *got), *seed = malloc(nq * sizeof *seed);
    float *d2 = malloc(nq * sizeof *d2);
    ptreg_walk_stats stats;
    int best_isa = cpu_best_isa();
    for (int isa = 0; isa <= best_isa; isa++) {
        cpu_set_isa(isa);
        const char *isa_name = isa_level_name((isa_level)isa);
        for (int s = PTREG_NN_KDTREE; s <= PTREG_NN_DELAUNAY_PNN; s++)
            for (int seeds = 0; seeds < (s == PTREG_NN_DELAUNAY_PNN ? 4 : 1); seeds++) {
                /* seeds: none, the answers, arbitrary points, "no neighbor" */
                for (size_t i = 0; i < nq; i++)
                    seed[i] = seeds == 1 ? ref->index[i] : seeds == 2 ? (uint32_t)((i * 7919u) % m) : PTREG_NO_NEIGHBOR;
                ptreg_status st = ptreg_model_index_nearest(idx, q, nq, (ptreg_nn_method)s, seeds ? seed : NULL, got,
                                                            d2, &stats, NULL);
                CHECK_MSG(st == PTREG_OK, "%s: %s failed", what, search_name(s));
                size_t bad = count_wrong(ref, got, d2, nq);
                CHECK_MSG(bad == 0, "%s: %s (%s, seeds %d) differs on %zu of %zu queries", what, search_name(s),
                          isa_name, seeds, bad, nq);
                if (s != PTREG_NN_KDTREE)
                    CHECK_MSG(stats_consistent(&stats, nq), "%s: %s (%s) statistics inconsistent", what, search_name(s),
                              isa_name);
                if (s == PTREG_NN_DELAUNAY_PNN && seeds == 1)
                    CHECK_MSG(stats.steps == 0, "%s: walks from the answers took %llu steps", what,
                              (unsigned long long)stats.steps);
            }
    }
    cpu_set_isa(-1);
    free(got), free(seed), free(d2);
}

/* A model without a graph: the reason is given, walks are refused and the
 * k-d tree still answers exactly. */
static void check_no_graph(const char *what, const ptreg_model_index *idx, const reference *ref, const float *q,
                           size_t nq)
{
    ptreg_model_index_info info;
    ptreg_model_index_get_info(idx, &info);
    CHECK_MSG(!info.has_delaunay && info.delaunay_note[0], "%s: expected no graph and a reason", what);
    uint32_t *got = malloc(nq * sizeof *got);
    float *d2 = malloc(nq * sizeof *d2);
    ptreg_error err;
    CHECK(ptreg_model_index_nearest(idx, q, nq, PTREG_NN_DELAUNAY_KDANN, NULL, got, d2, NULL, &err) ==
          PTREG_ERR_UNSUPPORTED);
    CHECK(strstr(err.message, "no Delaunay graph") != NULL);
    CHECK(ptreg_model_index_nearest(idx, q, nq, PTREG_NN_KDTREE, NULL, got, d2, NULL, &err) == PTREG_OK);
    CHECK_MSG(count_wrong(ref, got, d2, nq) == 0, "%s: k-d tree of a graphless index differs", what);
    free(got), free(d2);
}

static void test_synthetic(void)
{
    size_t sizes[] = {1, 4, 5, 6, 60, 1000, 6007};
    for (int kind = 0; kind < CLOUD_KINDS; kind++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t m = sizes[s], nq = 1200;
            float *t = make_cloud((cloud_kind)kind, m, 21 + s);
            float *q = make_queries((cloud_kind)kind, nq, 107 + s);
            char what[64];
            snprintf(what, sizeof what, "%s m=%zu", cloud_kind_names[kind], m);
            reference ref = make_reference(t, m, q, nq);
            ptreg_model_index *idx = NULL;
            ptreg_error err;
            ptreg_status st = ptreg_model_index_create(t, m, NULL, &idx, &err);
            CHECK_MSG(st == PTREG_OK, "%s: %s", what, err.message);
            if (st) {
                free_reference(&ref), free(t), free(q);
                continue;
            }
            ptreg_model_index_info info;
            ptreg_model_index_get_info(idx, &info);
            size_t distinct = count_distinct(t, m);
            /* the lattice fills a 17 x 17 layer before it leaves the plane */
            int flat = kind == CLOUD_PLANE || kind == CLOUD_LINE || (kind == CLOUD_LATTICE && m <= 17 * 17);
            CHECK_MSG(info.has_delaunay == (distinct >= 5 && !flat), "%s: graph %d (%s)", what, info.has_delaunay,
                      info.delaunay_note);
            CHECK(info.points == m);
            if (info.has_delaunay) {
                CHECK_MSG(info.duplicates == m - distinct, "%s: %zu duplicates merged, %zu expected", what,
                          info.duplicates, m - distinct);
                check_walks(what, idx, &ref, q, nq, m);
            } else {
                check_no_graph(what, idx, &ref, q, nq);
                if (distinct < 5)
                    CHECK_MSG(strstr(info.delaunay_note, "needs 5") != NULL, "%s: note '%s'", what, info.delaunay_note);
                if (m > distinct && distinct < 5)
                    CHECK(strstr(info.delaunay_note, "duplicates merged") != NULL);
            }
            ptreg_model_index_destroy(idx);
            free_reference(&ref), free(t), free(q);
        }
}

/* Four distinct points, each three times: no graph, the merge reported. */
static void test_few_distinct(void)
{
    float t[36];
    for (int i = 0; i < 12; i++)
        for (int d = 0; d < 3; d++)
            t[3 * i + d] = (float)((i % 4) == d);
    ptreg_model_index *idx;
    CHECK(ptreg_model_index_create(t, 12, NULL, &idx, NULL) == PTREG_OK);
    ptreg_model_index_info info;
    ptreg_model_index_get_info(idx, &info);
    CHECK(!info.has_delaunay);
    CHECK_MSG(strstr(info.delaunay_note, "4 distinct points (8 exact duplicates merged)") != NULL, "note: %s",
              info.delaunay_note);
    ptreg_model_index_destroy(idx);
}

/* A walk from the fixed start to queries a thousand model sizes away, and
 * the same answers for 1 and 2 threads, statistics included. */
static void test_far_queries_and_threads(void)
{
    size_t m = 20000, nq = 6000;
    float *t = make_cloud(CLOUD_UNIFORM, m, 5), *q = make_queries(CLOUD_UNIFORM, nq, 6);
    for (size_t i = 0; i < nq; i += 3)
        for (int d = 0; d < 3; d++)
            q[3 * i + d] *= 1000.0f;
    reference ref = make_reference(t, m, q, nq);
    ptreg_model_index *idx;
    CHECK(ptreg_model_index_create(t, m, NULL, &idx, NULL) == PTREG_OK);
    uint32_t *i1 = malloc(nq * 4), *i2 = malloc(nq * 4);
    float *d1 = malloc(nq * 4), *d2 = malloc(nq * 4);
    ptreg_walk_stats s1, s2;
    ptreg_set_num_threads(1);
    CHECK(ptreg_model_index_nearest(idx, q, nq, PTREG_NN_DELAUNAY_ZERO, NULL, i1, d1, &s1, NULL) == PTREG_OK);
    ptreg_set_num_threads(2);
    CHECK(ptreg_model_index_nearest(idx, q, nq, PTREG_NN_DELAUNAY_ZERO, NULL, i2, d2, &s2, NULL) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(count_wrong(&ref, i1, d1, nq) == 0);
    CHECK(memcmp(i1, i2, nq * 4) == 0 && memcmp(d1, d2, nq * 4) == 0);
    CHECK(memcmp(&s1, &s2, sizeof s1) == 0);
    CHECK(s1.steps > 0 && s1.max_steps > 1);
    ptreg_model_index_destroy(idx);
    free_reference(&ref);
    free(t), free(q), free(i1), free(i2), free(d1), free(d2);
}

/* Queries that move a little between calls, as ICP's do, seeded by their
 * last answers with the walks' memory: every round exact, on every ISA,
 * with moves from far below to far above the Voronoi margins (so some
 * answers are kept without a walk and some are not). */
static void check_memory_rounds(const char *what, const float *t, size_t m, float *q, size_t nq, uint64_t seed)
{
    ptreg_model_index *idx;
    if (ptreg_model_index_create(t, m, NULL, &idx, NULL) != PTREG_OK || !idx->graph) {
        CHECK_MSG(0, "%s: no graph", what);
        ptreg_model_index_destroy(idx);
        return;
    }
    const ptreg_kdtree *tree = idx->tree;
    uint32_t *slot = malloc(nq * sizeof *slot), *got = malloc(nq * sizeof *got);
    float *d2 = malloc(nq * sizeof *d2), *moved = malloc(3 * nq * sizeof *moved);
    dt_memory *mem = malloc(nq * sizeof *mem);
    ptreg_rng rng;
    int best_isa = cpu_best_isa();
    for (int isa = 0; isa <= best_isa; isa++) {
        cpu_set_isa(isa);
        ptreg_rng_seed(&rng, seed);
        memcpy(moved, q, 3 * nq * sizeof *moved);
        uint64_t kept = 0, walked = 0;
        for (int round = 0; round < 8; round++) {
            if (round) /* moves of 1e-6 .. 1e-1 */
                for (size_t i = 0; i < 3 * nq; i++)
                    moved[i] += (float)(pow(10.0, -6.0 + 5.0 * (double)((i / 3 + (size_t)round) % 6) / 5.0) *
                                        ptreg_rng_normal(&rng));
            ptreg_walk_stats stats = {0};
            nn_cpu_kernels()->dt_nearest_range(tree, idx->graph, moved, nq, round ? PTREG_WALK_SEED : PTREG_WALK_KDANN,
                                               slot, d2, mem, &stats);
            reference ref = make_reference(t, m, moved, nq);
            for (size_t i = 0; i < nq; i++)
                got[i] = tree->index[slot[i]];
            size_t bad = count_wrong(&ref, got, d2, nq);
            CHECK_MSG(bad == 0, "%s: round %d (%s) differs on %zu of %zu queries", what, round,
                      isa_level_name((isa_level)isa), bad, nq);
            free_reference(&ref);
            kept += stats.kept, walked += stats.queries - stats.kept;
        }
        CHECK_MSG(kept > nq && walked > nq, "%s: %llu kept, %llu walked: the test misses a path", what,
                  (unsigned long long)kept, (unsigned long long)walked);
    }
    cpu_set_isa(-1);
    ptreg_model_index_destroy(idx);
    free(slot), free(got), free(d2), free(moved), free(mem);
}

static void test_memory(void)
{
    size_t m = 8000, nq = 3000;
    float *t = make_cloud(CLOUD_CLUSTERED, m, 31), *q = make_cloud(CLOUD_CLUSTERED, nq, 32);
    check_memory_rounds("clustered", t, m, q, nq, 1);
    free(t), free(q);
    m = 17 * 17 * 17; /* a lattice: queries near many ties */
    t = make_cloud(CLOUD_LATTICE, m, 0), q = make_queries(CLOUD_LATTICE, nq, 33);
    check_memory_rounds("lattice", t, m, q, nq, 2);
    free(t), free(q);
}

/* bun045's points against bun000's graph (40k points of a real scan, with
 * its near-degenerate cells). */
static void test_real_scans(void)
{
    ptreg_cloud target, query;
    if (!read_bunny_pair(&target, &query))
        return;
    size_t nq = 6000;
    reference ref = make_reference(target.xyz, target.n, query.xyz, nq);
    ptreg_model_index *idx;
    CHECK(ptreg_model_index_create(target.xyz, target.n, NULL, &idx, NULL) == PTREG_OK);
    ptreg_model_index_info info;
    ptreg_model_index_get_info(idx, &info);
    CHECK_MSG(info.has_delaunay, "bun000 has no graph: %s", info.delaunay_note);
    if (info.has_delaunay)
        check_walks("bun045 -> bun000", idx, &ref, query.xyz, nq, target.n);
    ptreg_model_index_destroy(idx);
    free_reference(&ref);
    ptreg_cloud_free(&target);
    ptreg_cloud_free(&query);
}

int main(void)
{
    test_synthetic();
    test_few_distinct();
    test_far_queries_and_threads();
    test_memory();
    test_real_scans();
    return check_exit();
}
