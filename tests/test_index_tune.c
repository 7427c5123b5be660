/* The measured nearest-neighbor method of a model index
 * (ptreg_model_index_tune, `ptreg index --tune`): every method it times
 * gives the k-d tree's bits and the choice is one of them; the choice
 * round-trips through the .pti file; a version-1 file (before the choice
 * was stored) still loads, with none; a damaged choice is refused naming
 * the file; ICP's auto runs the stored method, with the same bits as asking
 * for it, and --no-tune (opt.no_tune) keeps the rule. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nn/index_impl.h"
#include "nn_ref.h"
#include "pti_bytes.h"
#include "ptreg/icp.h"
#include "ptreg/nn.h"
#include "hooks.h"

/* A quick measurement: small sample, few iterations and runs. */
static ptreg_status quick_tune(ptreg_model_index *idx, ptreg_nn_tune_report *rep, ptreg_error *err)
{
    ptreg_nn_tune_options o;
    ptreg_nn_tune_options_default(&o);
    o.sample = 1500, o.iterations = 6, o.repeat = 2, o.prune = 0.0;
    return ptreg_model_index_tune(idx, NULL, 0, &o, rep, err);
}

static void test_tune_and_round_trip(ptreg_model_index *idx, const char *dir)
{
    ptreg_nn_tune_report rep;
    ptreg_error err;
    CHECK_MSG(quick_tune(idx, &rep, &err) == PTREG_OK, "%s", err.message);
    /* with a graph: the tree, brute force (small) and the four walks, all the tree's bits */
    for (int m = PTREG_NN_BRUTE; m <= PTREG_NN_DELAUNAY_PNNOPT; m++)
        CHECK_MSG(rep.median_ms[m] >= 0.0 && rep.runs[m] == 2 && !rep.differs[m], "%s",
                  ptreg_nn_method_name((ptreg_nn_method)m));
    CHECK(rep.choice != PTREG_NN_AUTO && rep.queries == 1500 && rep.iterations == 6);
    for (int m = 1; m <= PTREG_NN_DELAUNAY_PNNOPT; m++)
        CHECK(rep.median_ms[rep.choice] <= rep.median_ms[m]);
    ptreg_index_nn_tuning t, back;
    ptreg_model_index_get_nn_tuning(idx, &t);
    CHECK(t.method == (int)rep.choice && t.repeat == 2 && t.queries == 1500 && t.threads >= 1);
    CHECK(!memcmp(t.median_ms, rep.median_ms, sizeof t.median_ms));
    char path[512];
    snprintf(path, sizeof path, "%s/tuned.pti", dir);
    CHECK(ptreg_model_index_save(idx, path, &err) == PTREG_OK);
    ptreg_model_index *loaded = NULL;
    CHECK_MSG(ptreg_model_index_load(path, &loaded, &err) == PTREG_OK, "%s", err.message);
    if (loaded) {
        ptreg_model_index_get_nn_tuning(loaded, &back);
        CHECK(!memcmp(&t, &back, sizeof t));
        ptreg_model_index_destroy(loaded);
    }
}

/* Version 1 (no TUNE section) loads with no choice: auto follows the rule. */
static void test_old_version(const ptreg_model_index *idx, const char *dir)
{
    char path[512];
    ptreg_error err;
    snprintf(path, sizeof path, "%s/v1.pti", dir);
    CHECK(pti_save_version(idx, path, 1, &err) == PTREG_OK);
    size_t size = 0;
    unsigned char *buf = read_whole(path, &size);
    uint32_t version = 0;
    if (buf)
        memcpy(&version, buf + 8, sizeof version);
    CHECK(buf && version == 1 && section_offset(buf, TAG_TUNE) == 0);
    free(buf);
    ptreg_model_index *old = NULL;
    CHECK_MSG(ptreg_model_index_load(path, &old, &err) == PTREG_OK, "%s", err.message);
    if (!old)
        return;
    ptreg_index_nn_tuning t;
    ptreg_model_index_get_nn_tuning(old, &t);
    CHECK(t.method == 0);
    for (int m = 0; m < PTREG_INDEX_NN_SLOTS; m++)
        CHECK(t.median_ms[m] < 0.0);
    ptreg_model_index_destroy(old);
}

/* A TUNE section with `method` (or, method < 0, a NaN time) and a valid
 * checksum: refused, the file named. */
static void check_bad_choice(const unsigned char *good, size_t size, int method, const char *what)
{
    unsigned char *buf = malloc(size);
    memcpy(buf, good, size);
    size_t at = section_offset(buf, TAG_TUNE);
    CHECK(at > 0 && at + 88 <= size);
    if (method >= 0) {
        uint32_t m = (uint32_t)method;
        memcpy(buf + at, &m, sizeof m);
    } else {
        double nan = NAN;
        memcpy(buf + at + 24 + 8 * 2, &nan, sizeof nan);
    }
    fix_checksum(buf, size);
    ptreg_model_index *idx = (ptreg_model_index *)1;
    ptreg_error err;
    ptreg_status st = ptreg_model_index_load_memory(buf, size, "model.pti", &idx, &err);
    CHECK_MSG(st == PTREG_ERR_FORMAT && idx == NULL, "%s: status %d", what, (int)st);
    if (st == PTREG_ERR_FORMAT)
        CHECK_MSG(strstr(err.message, "model.pti") && strstr(err.message, what), "%s", err.message);
    free(buf);
}

static void test_damaged_choice(const char *dir, const float *model, size_t m)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tuned.pti", dir);
    size_t size = 0;
    unsigned char *good = read_whole(path, &size);
    CHECK(good != NULL);
    if (!good)
        return;
    check_bad_choice(good, size, 99, "TUNE section");
    check_bad_choice(good, size, -1, "not a duration");
    free(good);
    /* a walk stored in an index without a graph */
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    io.delaunay = 0;
    ptreg_model_index *tree_only;
    CHECK(ptreg_model_index_create(model, m, &io, &tree_only, NULL) == PTREG_OK);
    ptreg_index_nn_tuning t;
    index_nn_tuning_clear(&t);
    t.method = PTREG_NN_DELAUNAY_PNN, t.threads = 1, t.repeat = 1, t.queries = 10, t.median_ms[t.method] = 1.0;
    ptreg_error err;
    CHECK(ptreg_model_index_set_nn_tuning(tree_only, &t, &err) == PTREG_ERR_ARG);
    t.method = PTREG_NN_KDTREE, t.median_ms[PTREG_NN_KDTREE] = 1.0;
    CHECK(ptreg_model_index_set_nn_tuning(tree_only, &t, &err) == PTREG_OK);
    snprintf(path, sizeof path, "%s/tree.pti", dir);
    CHECK(ptreg_model_index_save(tree_only, path, &err) == PTREG_OK);
    ptreg_model_index_destroy(tree_only);
    good = read_whole(path, &size);
    if (good)
        check_bad_choice(good, size, PTREG_NN_DELAUNAY_PNN, "Delaunay graph the index has not got");
    free(good);
}

static int same_icp(const ptreg_icp_result *a, const ptreg_icp_result *b)
{
    return a->iterations == b->iterations && a->pairs == b->pairs &&
           !memcmp(a->transformation, b->transformation, sizeof a->transformation) &&
           !memcmp(a->mse, b->mse, ((size_t)a->iterations + 1) * sizeof *a->mse);
}

/* auto with a stored choice runs it, bit for bit as asking for it; no_tune
 * and a device-less rule give the rule's pnnopt. */
static void test_auto_uses_choice(ptreg_model_index *idx)
{
    size_t n = 2000;
    float *src = make_queries(CLOUD_CLUSTERED, n, 21);
    double axis[3] = {1, 2, 3}, shift[3] = {0.01, -0.02, 0.0}, T[16];
    ptreg_transform_from_axis_angle(axis, 3.0, shift, T);
    ptreg_transform_points(T, src, src, n);
    ptreg_nn_method stored[] = {PTREG_NN_DELAUNAY_PNN, PTREG_NN_KDTREE, PTREG_NN_BRUTE};
    for (size_t k = 0; k < sizeof stored / sizeof stored[0]; k++) {
        ptreg_index_nn_tuning t;
        index_nn_tuning_clear(&t);
        t.method = (int)stored[k], t.threads = 1, t.repeat = 1, t.queries = n, t.median_ms[t.method] = 1.0;
        CHECK(ptreg_model_index_set_nn_tuning(idx, &t, NULL) == PTREG_OK);
        ptreg_icp_options opt;
        ptreg_icp_options_default(&opt);
        opt.device = (ptreg_device){PTREG_BACKEND_CPU, 0};
        opt.max_iter = 12, opt.tol = 0.0;
        ptreg_icp_result a, e, r;
        CHECK(ptreg_icp_indexed(src, n, idx, &opt, &a, NULL) == PTREG_OK);
        CHECK_MSG(a.nn == stored[k] && a.nn_measured == 1, "auto ran %s", ptreg_nn_method_name(a.nn));
        opt.nn = stored[k];
        CHECK(ptreg_icp_indexed(src, n, idx, &opt, &e, NULL) == PTREG_OK);
        CHECK(e.nn == stored[k] && e.nn_measured == 0);
        CHECK_MSG(same_icp(&a, &e), "auto vs %s", ptreg_nn_method_name(stored[k]));
        opt.nn = PTREG_NN_AUTO, opt.no_tune = 1;
        CHECK(ptreg_icp_indexed(src, n, idx, &opt, &r, NULL) == PTREG_OK);
        CHECK(r.nn == PTREG_NN_DELAUNAY_PNNOPT && r.nn_measured == 0);
        CHECK(same_icp(&a, &r)); /* every method is exact */
        ptreg_icp_result_free(&a), ptreg_icp_result_free(&e), ptreg_icp_result_free(&r);
    }
    free(src);
}

int main(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/ptreg-test-tune-%ld", (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        perror(dir);
        return 1;
    }
    size_t m = 3000;
    float *model = make_cloud(CLOUD_CLUSTERED, m, 3);
    ptreg_model_index *idx = NULL;
    CHECK(ptreg_model_index_create(model, m, NULL, &idx, NULL) == PTREG_OK);
    if (idx) {
        test_tune_and_round_trip(idx, dir);
        test_old_version(idx, dir);
        test_damaged_choice(dir, model, m);
        test_auto_uses_choice(idx);
        ptreg_model_index_destroy(idx);
    }
    /* the leaf size: one of the candidates, each measured */
    int leaf = 0, sizes[PTREG_LEAF_CANDIDATES];
    double ms[PTREG_LEAF_CANDIDATES];
    ptreg_nn_tune_options o;
    ptreg_nn_tune_options_default(&o);
    o.sample = 500, o.repeat = 1, o.iterations = 5;
    CHECK(ptreg_model_index_tune_leaf(model, m, &o, &leaf, sizes, ms, NULL) == PTREG_OK);
    int listed = 0;
    for (int c = 0; c < PTREG_LEAF_CANDIDATES; c++) {
        listed |= sizes[c] == leaf;
        CHECK_MSG(ms[c] > 0, "leaf %d not measured", sizes[c]);
    }
    CHECK_MSG(listed, "leaf size %d is not a candidate", leaf);
    free(model);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_exit();
}
