/* Batched registration: every pair's answer is ptreg_emicp's on the same
 * schedule, bit for bit, on every ISA and for any thread count, padded or
 * not; the plain path agrees within rounding, with and without
 * translation; bad pairs are refused by name. */
#include <stdlib.h>

#include "check.h"
#include "core/cpu.h"
#include "ptreg/batch.h"
#include "ptreg/emicp.h"
#include "ptreg/motif.h"
#include "core/numeric.h"

/* n pairs: an fcc first shell (12 points, a = 0.405) as every target, and
 * as sources its points turned by random rotations (up to 40 degrees),
 * shifted (with translation), noisy, and some points dropped or doubled so
 * that sizes differ when `ragged`. */
typedef struct pairs_data {
    ptreg_pair_set set;
    float *source, *target;
    size_t *offsets, *target_offsets;
} pairs_data;

static void free_pairs(pairs_data *d)
{
    free(d->source);
    free(d->target);
    free(d->offsets);
    free(d->target_offsets);
}

static void random_rotation(ptreg_rng *rng, double max_deg, double R[9])
{
    double axis[3] = {ptreg_rng_normal(rng), ptreg_rng_normal(rng), ptreg_rng_normal(rng)}, t[3] = {0, 0, 0}, T[16];
    ptreg_transform_from_axis_angle(axis, max_deg * (2.0 * ptreg_rng_uniform(rng) - 1.0), t, T);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            R[3 * r + c] = T[4 * r + c];
}

static void make_pairs(size_t n, int ragged, int shared, int translation, uint64_t seed, pairs_data *d)
{
    float motif[3 * 12];
    CHECK(ptreg_motif_lattice(PTREG_LATTICE_FCC, 0.405, 12, motif, NULL) == PTREG_OK);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    d->offsets = malloc((n + 1) * sizeof *d->offsets);
    d->target_offsets = shared ? NULL : malloc((n + 1) * sizeof *d->target_offsets);
    d->source = malloc(n * 14 * 3 * sizeof(float));
    d->target = malloc((shared ? 1 : n) * 12 * 3 * sizeof(float));
    d->offsets[0] = 0;
    if (!shared)
        d->target_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = ragged ? 10 + (size_t)(ptreg_rng_next(&rng) % 5) : 12; /* 10 .. 14 */
        double R[9];
        random_rotation(&rng, 40.0, R);
        float *s = d->source + 3 * d->offsets[i];
        for (size_t j = 0; j < k; j++) {
            const float *m = motif + 3 * (j % 12);
            for (int r = 0; r < 3; r++)
                s[3 * j + (size_t)r] = (float)(R[3 * r] * m[0] + R[3 * r + 1] * m[1] + R[3 * r + 2] * m[2] +
                                               0.01 * ptreg_rng_normal(&rng) + (translation ? 0.05 * r : 0.0));
        }
        d->offsets[i + 1] = d->offsets[i] + k;
        if (!shared) {
            size_t m_pts = ragged ? 8 + i % 5 : 12;
            memcpy(d->target + 3 * d->target_offsets[i], motif, 3 * m_pts * sizeof(float));
            d->target_offsets[i + 1] = d->target_offsets[i] + m_pts;
        }
    }
    if (shared)
        memcpy(d->target, motif, sizeof motif);
    d->set = (ptreg_pair_set){n, d->source, d->offsets, d->target, d->target_offsets, 12};
}

/* Pair i through ptreg_emicp with the batch's schedule. */
static void emicp_pair(const pairs_data *d, size_t i, double T[16])
{
    const ptreg_pair_set *p = &d->set;
    const size_t s0 = p->source_offset[i], ns = p->source_offset[i + 1] - s0;
    const size_t t0 = p->target_offset ? p->target_offset[i] : 0;
    const size_t nt = p->target_offset ? p->target_offset[i + 1] - t0 : p->target_points;
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    ptreg_emicp_result r;
    CHECK(ptreg_emicp(p->source + 3 * s0, ns, p->target + 3 * t0, nt, &o, &r, NULL) == PTREG_OK);
    memcpy(T, r.transformation, sizeof r.transformation);
}

static void test_same_as_emicp(int ragged, int shared)
{
    pairs_data d;
    const size_t n = 37; /* blocks of 8 or 16 and a part-filled one */
    make_pairs(n, ragged, shared, 1, 11 + (uint64_t)ragged, &d);
    double *T = malloc(16 * n * sizeof *T), E[16];
    int *it = malloc(n * sizeof *it), *why = malloc(n * sizeof *why);
    ptreg_batch_options o; /* the CPU's lanes (auto would take a GPU) */
    ptreg_batch_options_default(&o);
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    for (int isa = 0; isa <= (int)cpu_best_isa(); isa++) {
        cpu_set_isa(isa);
        ptreg_batch_stats st;
        ptreg_error err;
        CHECK_MSG(ptreg_batch_register(&d.set, &o, T, it, why, &st, &err) == PTREG_OK, "%s", err.message);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) {
            emicp_pair(&d, i, E);
            differ += memcmp(E, T + 16 * i, sizeof E) != 0;
        }
        CHECK_MSG(differ == 0, "ISA %s, ragged %d, shared %d: %zu of %zu pairs differ from ptreg_emicp",
                  isa_level_name((isa_level)isa), ragged, shared, differ, n);
        CHECK(st.pairs == n && st.pair_terms > 0);
    }
    cpu_set_isa(-1);
    free(T), free(it), free(why);
    free_pairs(&d);
}

static double max_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = check_worse(m, fabs(a[i] - b[i]));
    return m;
}

static void test_plain_path(int translation)
{
    pairs_data d;
    const size_t n = 21;
    make_pairs(n, 1, 1, translation, 5, &d);
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    o.translation = translation;
    double *fast = malloc(16 * n * sizeof *fast), *plain = malloc(16 * n * sizeof *plain);
    CHECK(ptreg_batch_register(&d.set, &o, fast, NULL, NULL, NULL, NULL) == PTREG_OK);
    o.reference = 1;
    CHECK(ptreg_batch_register(&d.set, &o, plain, NULL, NULL, NULL, NULL) == PTREG_OK);
    double worst = max_diff(fast, plain, 16 * n);
    CHECK_MSG(worst < 1e-5, "translation %d: the plain path differs by %g", translation, worst);
    /* rotation only: no translation, a proper rotation */
    for (size_t i = 0; !translation && i < n; i++) {
        CHECK(fast[16 * i + 3] == 0.0 && fast[16 * i + 7] == 0.0 && fast[16 * i + 11] == 0.0);
        CHECK(ptreg_transform_is_rigid(fast + 16 * i, 1e-9));
    }
    free(fast), free(plain);
    free_pairs(&d);
}

static void test_threads(void)
{
    pairs_data d;
    const size_t n = 100;
    make_pairs(n, 0, 1, 0, 9, &d);
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    o.translation = 0;
    double *a = malloc(16 * n * sizeof *a), *b = malloc(16 * n * sizeof *b);
    ptreg_set_num_threads(1);
    CHECK(ptreg_batch_register(&d.set, &o, a, NULL, NULL, NULL, NULL) == PTREG_OK);
    ptreg_set_num_threads(3);
    CHECK(ptreg_batch_register(&d.set, &o, b, NULL, NULL, NULL, NULL) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(memcmp(a, b, 16 * n * sizeof *a) == 0);
    free(a), free(b);
    free_pairs(&d);
}

static void test_bad_pairs(void)
{
    float src[6] = {0, 0, 0, 1, 0, 0}, tgt[6] = {0, 0, 0, 0, 1, 0}, same[6] = {1, 1, 1, 1, 1, 1};
    size_t off_empty[3] = {0, 2, 2}, off[2] = {0, 2};
    double T[32];
    ptreg_error err;
    ptreg_pair_set p = {2, src, off_empty, tgt, NULL, 2};
    CHECK(ptreg_batch_register(&p, NULL, T, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "pair 1"), "%s", err.message);
    src[4] = NAN;
    p = (ptreg_pair_set){1, src, off, tgt, NULL, 2};
    CHECK(ptreg_batch_register(&p, NULL, T, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "pair 0") && strstr(err.message, "finite"), "%s", err.message);
    src[4] = 0;
    p = (ptreg_pair_set){1, src, off, same, NULL, 2};
    CHECK(ptreg_batch_register(&p, NULL, T, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "no extent"), "%s", err.message);
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = (ptreg_device){PTREG_BACKEND_CUDA, 999}; /* no such device, or no CUDA backend */
    p = (ptreg_pair_set){1, src, off, tgt, NULL, 2};
    CHECK(ptreg_batch_register(&p, &o, T, NULL, NULL, NULL, &err) == PTREG_ERR_ARG);
    /* no pairs: nothing to do */
    p.count = 0;
    CHECK(ptreg_batch_register(&p, NULL, T, NULL, NULL, NULL, &err) == PTREG_OK);
}

/* ptreg_batch_rms: each pair's RMS to the nearest target points, brute
 * force: 0 where a pair lands on its target, a known shift's length where
 * every nearest point is the moved one's own, and the same bits on 1 and 4
 * threads; a pair set with no transforms is refused. */
static void test_rms(void)
{
    float target[3 * 4] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    const size_t offsets[3] = {0, 4, 8};
    float source[3 * 8];
    for (int k = 0; k < 24; k++)
        source[k] = target[k % 12];
    const ptreg_pair_set set = {2, source, offsets, target, NULL, 4};
    double T[32], rms[2];
    ptreg_transform_identity(T);
    ptreg_transform_identity(T + 16);
    T[16 + 3] = 0.125; /* pair 1 moved by 1/8 along x: each point's nearest is its own */
    CHECK(ptreg_batch_rms(&set, T, rms, NULL) == PTREG_OK);
    CHECK_MSG(rms[0] == 0.0 && rms[1] == 0.125, "rms %g %g", rms[0], rms[1]);

    pairs_data d;
    make_pairs(300, 1, 0, 1, 11, &d);
    double *M = malloc(16 * 300 * sizeof *M), *one = malloc(300 * sizeof *one), *four = malloc(300 * sizeof *four);
    for (size_t i = 0; i < 300; i++)
        ptreg_transform_identity(M + 16 * i), M[16 * i + 3] = 0.01 * (double)i;
    ptreg_set_num_threads(1);
    CHECK(ptreg_batch_rms(&d.set, M, one, NULL) == PTREG_OK);
    ptreg_set_num_threads(4);
    CHECK(ptreg_batch_rms(&d.set, M, four, NULL) == PTREG_OK);
    ptreg_set_num_threads(0);
    CHECK(memcmp(one, four, 300 * sizeof *one) == 0);
    double least = INFINITY;
    for (size_t i = 0; i < 300; i++)
        least = check_least(least, one[i]);
    CHECK_MSG(least > 0.0, "a pair's rms is %g", least);
    ptreg_error err;
    CHECK(ptreg_batch_rms(&d.set, NULL, one, &err) == PTREG_ERR_ARG);
    free(M), free(one), free(four);
    free_pairs(&d);
}

/* The loop option: one ptreg_emicp call per pair, on the CPU even when a
 * GPU is named (the baseline the command line's --engine loop times). */
static void test_loop(void)
{
    pairs_data d;
    const size_t n = 9;
    make_pairs(n, 1, 0, 1, 5, &d);
    double *T = malloc(16 * n * sizeof *T), E[16];
    int *it = malloc(n * sizeof *it), *why = malloc(n * sizeof *why);
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.loop = 1;
    o.device = (ptreg_device){PTREG_BACKEND_CUDA, 7}; /* not looked at */
    ptreg_batch_stats st;
    ptreg_error err;
    CHECK_MSG(ptreg_batch_register(&d.set, &o, T, it, why, &st, &err) == PTREG_OK, "%s", err.message);
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        emicp_pair(&d, i, E);
        differ += memcmp(E, T + 16 * i, sizeof E) != 0;
    }
    CHECK_MSG(differ == 0, "loop: %zu of %zu pairs differ from ptreg_emicp", differ, n);
    CHECK(st.pairs == n && st.pair_terms > 0 && st.isa && it[0] > 0);
    free(T), free(it), free(why);
    free_pairs(&d);
}

/* The engine a call chooses, seen from outside where an OpenCL device is
 * (POCL in the tests; skipped where none): pairs within its cap run there
 * (the device's name as isa, launches counted), pairs over it are the
 * named device's error, no pairs run on the CPU's engine without a launch,
 * and the reference loop is the CPU's alone. */
static void test_engine_choice(void)
{
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = (ptreg_device){PTREG_BACKEND_OPENCL, 0};
    ptreg_device on;
    if (ptreg_batch_resolve_device(&o, &on, NULL) != PTREG_OK)
        return;
    pairs_data d;
    const size_t n = 5;
    make_pairs(n, 0, 0, 1, 21, &d);
    double T[16 * 5];
    ptreg_batch_stats st = {0};
    ptreg_error err;
    ptreg_device_stats before, used;
    ptreg_device_stats_get(&before);
    CHECK_MSG(ptreg_batch_register(&d.set, &o, T, NULL, NULL, &st, &err) == PTREG_OK, "%s", err.message);
    ptreg_device_stats_since(&before, &used);
    CHECK_MSG(st.isa && !strcmp(st.isa, ptreg_device_name(&on)), "isa %s", st.isa ? st.isa : "(none)");
    CHECK(used.launches >= 1);
    /* no pairs: the CPU's engine, nothing launched */
    ptreg_pair_set none = d.set;
    none.count = 0;
    ptreg_device_stats_get(&before);
    CHECK_MSG(ptreg_batch_register(&none, &o, T, NULL, NULL, &st, &err) == PTREG_OK, "%s", err.message);
    ptreg_device_stats_since(&before, &used);
    CHECK_MSG(st.isa && strcmp(st.isa, ptreg_device_name(&on)), "isa %s", st.isa ? st.isa : "(none)");
    CHECK(used.launches == 0);
    /* a pair over the cap on a device asked for by name */
    enum { BIG = PTREG_BATCH_DEVICE_MAX_POINTS + 1 };
    float big[3 * BIG];
    for (size_t i = 0; i < 3 * BIG; i++)
        big[i] = (float)((i * 7919) % 101) * 0.01f;
    size_t off[2] = {0, BIG};
    const ptreg_pair_set over = {1, big, off, big, NULL, BIG};
    CHECK(ptreg_batch_register(&over, &o, T, NULL, NULL, &st, &err) == PTREG_ERR_ARG);
    CHECK_MSG(strstr(err.message, "pair 0") && strstr(err.message, "takes at most 64 per pair"), "%s", err.message);
    o.reference = 1;
    CHECK(ptreg_batch_register(&d.set, &o, T, NULL, NULL, &st, &err) == PTREG_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.message, "reference loop"), "%s", err.message);
    free_pairs(&d);
}

int main(void)
{
    test_loop();
    test_same_as_emicp(0, 1);
    test_same_as_emicp(1, 1);
    test_same_as_emicp(1, 0);
    test_plain_path(1);
    test_plain_path(0);
    test_threads();
    test_bad_pairs();
    test_rms();
    test_engine_choice();
    return check_exit();
}
