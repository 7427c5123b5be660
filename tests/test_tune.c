#define _POSIX_C_SOURCE 200809L /* setenv */
/* The autotuner (tune.h): enumeration against a brute-force filter, the
 * search methods on a known cost surface, a failed check never winning,
 * and the pair engine's space and candidates. */
#include "check.h"
#include "ptreg/ptreg.h"
#include "tune/tune_kernels.h"

/* Every point of the full product, in the enumeration's order, filtered. */
static size_t brute_valid(const ptreg_tune_space *s, const ptreg_tune_machine *m, double *out)
{
    double values[PTREG_TUNE_MAX_PARAMS][PTREG_TUNE_MAX_VALUES];
    int counts[PTREG_TUNE_MAX_PARAMS], at[PTREG_TUNE_MAX_PARAMS] = {0};
    size_t total = 1, found = 0;
    for (int p = 0; p < s->param_count; p++) {
        counts[p] = ptreg_tune_param_values(&s->params[p], values[p]);
        total *= (size_t)counts[p];
    }
    for (size_t i = 0; i < total; i++) {
        double point[PTREG_TUNE_MAX_PARAMS];
        for (int p = 0; p < s->param_count; p++)
            point[p] = values[p][at[p]];
        if (ptreg_tune_valid(s, m, point)) {
            memcpy(out + found * (size_t)s->param_count, point, (size_t)s->param_count * sizeof *point);
            found++;
        }
        for (int p = s->param_count - 1; p >= 0 && ++at[p] == counts[p]; p--)
            at[p] = 0; /* the last parameter fastest, as the enumeration */
    }
    return found;
}

static void check_space(const ptreg_tune_space *s, const ptreg_tune_machine *m, const char *what)
{
    ptreg_tune_enum_stats st;
    size_t valid = ptreg_tune_enumerate(s, m, NULL, 0, &st);
    double *a = malloc((valid + 1) * (size_t)s->param_count * sizeof *a);
    double *b = malloc((size_t)st.full * (size_t)s->param_count * sizeof *b);
    CHECK(ptreg_tune_enumerate(s, m, a, valid, NULL) == valid);
    size_t brute = brute_valid(s, m, b);
    CHECK_MSG(brute == valid && !memcmp(a, b, valid * (size_t)s->param_count * sizeof *a),
              "%s: enumeration %zu points, the brute-force filter %zu", what, valid, brute);
    CHECK_MSG(st.valid == (double)valid && st.full >= st.valid, "%s: stats %g of %g", what, st.valid, st.full);
    printf("%s: %g points, %g valid, %g nodes visited\n", what, st.full, st.valid, st.visited);
    free(a), free(b);
}

/* A space whose constraints prune at every level. */
static void test_enumeration(void)
{
    ptreg_tune_machine m;
    ptreg_tune_machine_cpu(&m);
    m.l1_bytes = 4096, m.l2_bytes = 65536, m.cores = 3;
    ptreg_tune_space s = {
        .kernel = "test",
        .param_count = 4,
        .params = {{"a", PTREG_TUNE_LIST, 5, {1, 2, 4, 8, 16}, 0, 0, 0, 4},
                   {"b", PTREG_TUNE_RANGE, 0, {0}, 2, 12, 2, 4},
                   {"c", PTREG_TUNE_BINARY, 0, {0}, 0, 0, 0, 0},
                   {"d", PTREG_TUNE_CONTINUOUS, 5, {0}, 0.5, 2.5, 0, 1.0}},
        .constraint_count = 4,
        .constraints = {{"a <= cores", PTREG_TUNE_LE, 0, -1, 1.0, PTREG_TUNE_CORES, 0},
                        {"b multiple of a", PTREG_TUNE_MULTIPLE, 1, 0, 1.0, PTREG_TUNE_CONST, 0},
                        {"a * b * 512 <= L1", PTREG_TUNE_LE, 0, 1, 512.0, PTREG_TUNE_L1_BYTES, 0},
                        {"d * c <= 1", PTREG_TUNE_LE, 3, 2, 1.0, PTREG_TUNE_CONST, 1.0}},
    };
    check_space(&s, &m, "test space");
    ptreg_tune_enum_stats st;
    ptreg_tune_enumerate(&s, &m, NULL, 0, &st);
    /* a in {1, 2}: 2 of 5 first-level values survive; the nodes visited
     * are far fewer than a full walk's (5 + 30 + 60 + 300) */
    CHECK_MSG(st.visited < 150, "pruning: %g nodes visited", st.visited);
    ptreg_tune_space pair;
    ptreg_tune_space_pair(&pair);
    check_space(&pair, &m, "pair space (small caches)");
    ptreg_tune_machine_cpu(&m);
    check_space(&pair, &m, "pair space (this machine)");
}

/* A known cost surface: time = |a - 8| + |b - 6| / 4 + 1, with the point
 * (8, 6) failing its check, so (8, 4) or (8, 8) must win. */
typedef struct fake {
    int calls;
} fake;

static ptreg_status fake_measure(void *ctx, const double *p, int reps, double *seconds, double *error, ptreg_error *err)
{
    (void)reps, (void)err;
    ((fake *)ctx)->calls++;
    *seconds = fabs(p[0] - 8) + fabs(p[1] - 6) / 4 + 1;
    *error = p[0] == 8 && p[1] == 6 ? 1.0 : 0.0;
    return PTREG_OK;
}

static void test_search(void)
{
    ptreg_tune_machine m;
    ptreg_tune_machine_cpu(&m);
    ptreg_tune_space s = {
        .kernel = "fake",
        .param_count = 2,
        .params = {{"a", PTREG_TUNE_RANGE, 0, {0}, 1, 16, 1, 1}, {"b", PTREG_TUNE_RANGE, 0, {0}, 2, 12, 2, 2}},
        .constraint_count = 0};
    ptreg_tune_options o;
    ptreg_tune_options_default(&o);
    o.method = PTREG_TUNE_EXHAUSTIVE;
    o.reps = 1;
    o.confirm = 0;
    fake f = {0};
    ptreg_tune_result r;
    CHECK(ptreg_tune_search(&s, &m, fake_measure, &f, &o, &r, NULL) == PTREG_OK);
    CHECK(r.count == 96 && f.calls == 96 && r.best < r.count && r.fallback < r.count);
    const double *w = r.candidates[r.best].point;
    CHECK_MSG(w[0] == 8 && (w[1] == 4 || w[1] == 8) && r.candidates[r.best].passed,
              "exhaustive picked (%g, %g): the failed (8, 6) must not win", w[0], w[1]);
    ptreg_tune_result_free(&r);
    o.method = PTREG_TUNE_HALVING;
    o.sample_fraction = 0.25;
    o.reps = 4;
    f.calls = 0;
    CHECK(ptreg_tune_search(&s, &m, fake_measure, &f, &o, &r, NULL) == PTREG_OK);
    CHECK_MSG(r.count == 24 && r.fallback < r.count, "halving sampled %zu of 96 (the default among them: %d)", r.count,
              r.fallback < r.count);
    CHECK(r.best < r.count && r.candidates[r.best].passed && r.candidates[r.best].reps == 4);
    /* the winner is the sample's best */
    for (size_t i = 0; i < r.count; i++)
        if (r.candidates[i].passed)
            CHECK(fake_measure(&f, r.candidates[i].point, 1, &(double){0}, &(double){0}, NULL) == PTREG_OK &&
                  fabs(r.candidates[i].point[0] - 8) + fabs(r.candidates[i].point[1] - 6) / 4 + 1 >=
                      r.candidates[r.best].seconds);
    ptreg_tune_result_free(&r);
    /* coordinate descent from (1, 2): along a to 8, along b to 4 or 8, in
     * at most a quarter of the space */
    o.method = PTREG_TUNE_COORDINATE;
    f.calls = 0;
    CHECK(ptreg_tune_search(&s, &m, fake_measure, &f, &o, &r, NULL) == PTREG_OK);
    w = r.candidates[r.best].point;
    CHECK_MSG(r.count <= 24 && w[0] == 8 && (w[1] == 4 || w[1] == 8) && r.fallback == 0,
              "coordinate descent: %zu measured, picked (%g, %g)", r.count, w[0], w[1]);
    ptreg_tune_result_free(&r);
    /* the confirmation: the default (1, 2) kept unless the winner beats it
     * by min_gain; here the winner (time 1.5) is 6x the default (9): it stays */
    o.method = PTREG_TUNE_EXHAUSTIVE;
    o.confirm = 3;
    f.calls = 0;
    CHECK(ptreg_tune_search(&s, &m, fake_measure, &f, &o, &r, NULL) == PTREG_OK);
    CHECK(f.calls == 96 + 6 && !r.default_kept && fabs(r.gain - 6.0) < 1e-9 && r.best != r.fallback);
    ptreg_tune_result_free(&r);
    o.min_gain = 100.0; /* more than any candidate gains: the default is kept */
    CHECK(ptreg_tune_search(&s, &m, fake_measure, &f, &o, &r, NULL) == PTREG_OK);
    CHECK(r.default_kept && r.best == r.fallback);
    ptreg_tune_result_free(&r);
    /* a budget spent at once: the default, last in the enumeration here,
     * is still measured (first), so a winner has something to beat */
    s.params[0].fallback = 16;
    o.budget_s = 1e-9;
    o.min_gain = 1.0;
    f.calls = 0;
    CHECK(ptreg_tune_search(&s, &m, fake_measure, &f, &o, &r, NULL) == PTREG_OK);
    CHECK_MSG(r.fallback < r.count && r.candidates[r.fallback].passed && r.candidates[r.fallback].point[0] == 16,
              "a budget run out: the default measured %d", r.fallback < r.count && r.candidates[r.fallback].passed);
    ptreg_tune_result_free(&r);
}

/* The pair engine's candidates: every one checked against the reference;
 * col_tile alone moves the sums (where float sums enter double). */
static void test_pair(void)
{
    ptreg_tune_pair_job *job;
    CHECK(ptreg_tune_pair_job_create(600, PTREG_PRECISION_FP32, &job, NULL) == PTREG_OK);
    double secs, error;
    /* threads, col_tile, row_block, row_vectors, tiles_outside */
    const double same_tile[5] = {1, 1024, 128, 4, 1}, other_tile[5] = {2, 64, 512, 1, 0};
    CHECK(ptreg_tune_pair_measure(job, same_tile, 1, &secs, &error, NULL) == PTREG_OK);
    CHECK_MSG(error == 0.0, "the default's column tile: the same bits (error %g)", error);
    CHECK(ptreg_tune_pair_measure(job, other_tile, 1, &secs, &error, NULL) == PTREG_OK);
    CHECK_MSG(error > 0.0 && error < 1e-6, "another column tile: within rounding (error %g)", error);
    ptreg_tune_space s;
    ptreg_tune_space_pair(&s);
    ptreg_tune_machine m;
    ptreg_tune_machine_cpu(&m);
    ptreg_tune_options o;
    ptreg_tune_options_default(&o);
    o.method = PTREG_TUNE_HALVING;
    o.sample_fraction = 0.05;
    o.reps = 1;
    ptreg_tune_result r;
    CHECK(ptreg_tune_search(&s, &m, ptreg_tune_pair_measure, job, &o, &r, NULL) == PTREG_OK);
    CHECK(r.best < r.count);
    for (size_t i = 0; i < r.count; i++)
        CHECK_MSG(r.candidates[i].passed, "candidate %zu failed its check (error %g)", i, r.candidates[i].error);
    ptreg_tune_result_free(&r);
    ptreg_tune_pair_job_destroy(job);
    CHECK(ptreg_tune_pair_job_create(3, PTREG_PRECISION_FP32, &job, NULL) == PTREG_ERR_ARG);
}

/* Harris's tiling and FPFH's threads never change their output: every
 * candidate's error is 0. */
static void test_features(void)
{
    for (int harris = 1; harris >= 0; harris--) {
        ptreg_tune_feature_job *job;
        CHECK(ptreg_tune_feature_job_create(harris, harris ? 24 : 400, &job, NULL) == PTREG_OK);
        ptreg_tune_space s;
        (harris ? ptreg_tune_space_harris : ptreg_tune_space_fpfh)(&s);
        ptreg_tune_machine m;
        ptreg_tune_machine_cpu(&m);
        check_space(&s, &m, harris ? "harris space" : "fpfh space");
        ptreg_tune_options o;
        ptreg_tune_options_default(&o);
        o.method = PTREG_TUNE_EXHAUSTIVE;
        o.reps = 1;
        o.tolerance = 0.0;
        ptreg_tune_result r;
        CHECK(ptreg_tune_search(&s, &m, ptreg_tune_feature_measure, job, &o, &r, NULL) == PTREG_OK);
        for (size_t i = 0; i < r.count; i++)
            CHECK_MSG(r.candidates[i].passed && r.candidates[i].error == 0.0, "%s candidate %zu: error %g", s.kernel, i,
                      r.candidates[i].error);
        ptreg_tune_result_free(&r);
        ptreg_tune_feature_job_destroy(job);
    }
}

/* A device space on the device: it enumerates within the device's limits,
 * the built-in default (its fallbacks resolved there) is a candidate, and
 * every candidate, measured once, passes its check within tolerance.
 * Returns the largest error. */
static double check_device_space(ptreg_tune_space *s, const ptreg_device_info *gpu, const ptreg_tune_machine *m,
                                 ptreg_tune_measure_fn measure, void *job, double tolerance)
{
    char what[64];
    snprintf(what, sizeof what, "%s space", s->kernel);
    check_space(s, m, what);
    CHECK(ptreg_tune_space_on_device(s, &gpu->device, NULL) == PTREG_OK);
    ptreg_tune_options o;
    ptreg_tune_options_default(&o);
    o.method = PTREG_TUNE_EXHAUSTIVE;
    o.reps = 1;
    o.confirm = 0;
    o.tolerance = tolerance;
    ptreg_tune_result r;
    ptreg_error err;
    CHECK_MSG(ptreg_tune_search(s, m, measure, job, &o, &r, &err) == PTREG_OK, "%s: %s", s->kernel, err.message);
    CHECK_MSG(r.count == (size_t)r.stats.valid && r.fallback < r.count,
              "%s: %zu of %g candidates measured, the default among them: %d", s->kernel, r.count, r.stats.valid,
              r.fallback < r.count);
    double worst = 0;
    for (size_t i = 0; i < r.count; i++) {
        const ptreg_tune_candidate *c = &r.candidates[i];
        CHECK_MSG(c->passed, "%s candidate %zu (%s %g ...): error %g", s->kernel, i, s->params[0].name, c->point[0],
                  c->error);
        worst = c->error > worst ? c->error : worst;
    }
    printf("%s on %s: %zu candidates, errors at most %.2g\n", s->kernel, m->name, r.count, worst);
    ptreg_tune_result_free(&r);
    return worst;
}

/* The device spaces on the first OpenCL or CUDA device (in CI: POCL). */
static void test_device_spaces(void)
{
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    const ptreg_device_info *gpu = NULL;
    for (size_t i = 0; i < count && !gpu; i++)
        if (list[i].device.backend != PTREG_BACKEND_CPU)
            gpu = &list[i];
    if (!gpu) {
        printf("no CUDA or OpenCL device: the device spaces are not run\n");
        return;
    }
    ptreg_tune_machine m;
    CHECK(ptreg_tune_machine_device(&gpu->device, &m, NULL) == PTREG_OK);
    ptreg_tune_space s;
    ptreg_error err;
    /* the E-step's sums: within 1e-5 of the CPU engine's */
    ptreg_tune_pair_device_job *pair;
    CHECK(ptreg_tune_pair_device_job_create(&gpu->device, 300, PTREG_PRECISION_FP32, &pair, NULL) == PTREG_OK);
    ptreg_tune_space_pair_device(&s);
    check_device_space(&s, gpu, &m, ptreg_tune_pair_device_measure, pair, 1e-5);
    ptreg_tune_pair_device_job_destroy(pair);
    /* Harris's four methods: the CPU's scores, every one */
    ptreg_tune_feature_job *feat;
    CHECK(ptreg_tune_feature_job_create(1, 24, &feat, NULL) == PTREG_OK);
    CHECK(ptreg_tune_feature_job_on(feat, &gpu->device, NULL) == PTREG_OK);
    ptreg_tune_space_harris_device(&s);
    check_device_space(&s, gpu, &m, ptreg_tune_feature_measure, feat, 0.0);
    ptreg_tune_feature_job_destroy(feat);
    /* FPFH's work-groups: the device default's bits, every one */
    CHECK(ptreg_tune_feature_job_create(0, 600, &feat, NULL) == PTREG_OK);
    CHECK_MSG(ptreg_tune_feature_job_on(feat, &gpu->device, &err) == PTREG_OK, "%s", err.message);
    ptreg_tune_space_fpfh_device(&s);
    check_device_space(&s, gpu, &m, ptreg_tune_feature_measure, feat, 0.0);
    ptreg_tune_feature_job_destroy(feat);
    /* LDDMM's knobs: gradients within 1e-5 of the CPU's */
    if (!gpu->fp64) {
        printf("%s has no fp64: lddmm's device space is not run\n", m.name);
        return;
    }
    ptreg_tune_lddmm_device_job *lddmm;
    CHECK_MSG(ptreg_tune_lddmm_device_job_create(&gpu->device, 150, PTREG_PRECISION_FP32, &lddmm, &err) == PTREG_OK,
              "%s", err.message);
    ptreg_tune_space_lddmm_device(&s);
    check_device_space(&s, gpu, &m, ptreg_tune_lddmm_device_measure, lddmm, 1e-5);
    ptreg_tune_lddmm_device_job_destroy(lddmm);
}

/* One entry for a run's variant (ptreg_tune_variant), by the options
 * table's name: without the cache the defaults, options untouched, the
 * kernel's space named; with the cache off, the same; another name ARG. */
static void test_variant(void)
{
    setenv("PTREG_TUNE_CACHE", "off", 1);
    ptreg_emicp_options e, e0;
    ptreg_harris3d_options h, h0;
    ptreg_features_options f, f0;
    ptreg_lddmm_options l, l0;
    ptreg_emicp_options_default(&e);
    ptreg_harris3d_options_default(&h);
    ptreg_features_options_default(&f);
    ptreg_lddmm_options_default(&l);
    REQUIRE(!ptreg_device_parse("cpu", &e.device) && !ptreg_device_parse("cpu", &h.device) &&
            !ptreg_device_parse("cpu", &f.device) && !ptreg_device_parse("cpu", &l.device));
    e0 = e, h0 = h, f0 = f, l0 = l;
    struct {
        const char *name;
        void *options;
        const void *before;
        size_t size;
        const char *kernel;
    } runs[] = {{"emicp", &e, &e0, sizeof e, "pair"},
                {"harris3d", &h, &h0, sizeof h, "harris"},
                {"features", &f, &f0, sizeof f, "fpfh"},
                {"lddmm", &l, &l0, sizeof l, "lddmm"}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++)
        for (int use_cache = 0; use_cache <= 1; use_cache++) {
            ptreg_tune_choice c;
            ptreg_error err;
            CHECK_MSG(ptreg_tune_variant(runs[k].name, runs[k].options, 1000, 1000, use_cache, &c, &err) == PTREG_OK,
                      "%s: %s", runs[k].name, err.message);
            CHECK_MSG(!strcmp(c.source, "default") && c.space.kernel &&
                          !strncmp(c.space.kernel, runs[k].kernel, strlen(runs[k].kernel)) &&
                          !memcmp(runs[k].options, runs[k].before, runs[k].size),
                      "%s: %s %s", runs[k].name, c.source, c.space.kernel ? c.space.kernel : "(none)");
        }
    ptreg_tune_choice c;
    ptreg_error err;
    CHECK(ptreg_tune_variant("icp", &e, 10, 10, 1, &c, &err) == PTREG_ERR_ARG && strstr(err.message, "icp") &&
          !strcmp(c.source, "default") && !memcmp(&e, &e0, sizeof e));
    CHECK(ptreg_tune_variant(NULL, &e, 10, 10, 1, &c, &err) == PTREG_ERR_ARG);
    CHECK(ptreg_tune_variant("emicp", NULL, 10, 10, 1, &c, &err) == PTREG_ERR_ARG);
}

int main(void)
{
    test_enumeration();
    test_search();
    test_pair();
    test_features();
    test_device_spaces();
    test_variant();
    return check_exit();
}
