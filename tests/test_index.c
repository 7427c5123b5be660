/* The model index file (.pti): save and load give back the same index and
 * the same answers; a truncated, extended, corrupted, foreign or
 * version-mismatched file is PTREG_ERR_FORMAT naming the file; and
 * mutations that keep the checksum valid (so the deep checks run) never
 * crash: they load and answer, or are refused. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "nn_ref.h"
#include "pti_bytes.h"
#include "ptreg/nn.h"
#include "hooks.h"
#include "core/numeric.h"

static ptreg_status load(const unsigned char *buf, size_t size, ptreg_model_index **idx, ptreg_error *err)
{
    return ptreg_model_index_load_memory(buf, size, "model.pti", idx, err);
}

/* A refused load: PTREG_ERR_FORMAT, no index, the name and `what` in the
 * message. */
static void check_refused(const unsigned char *buf, size_t size, const char *what, const char *case_name)
{
    ptreg_model_index *idx = (ptreg_model_index *)1;
    ptreg_error err;
    ptreg_status st = load(buf, size, &idx, &err);
    CHECK_MSG(st == PTREG_ERR_FORMAT && idx == NULL, "%s: status %d", case_name, (int)st);
    if (st == PTREG_ERR_FORMAT) {
        CHECK_MSG(strstr(err.message, "model.pti") != NULL, "%s: '%s' does not name the file", case_name, err.message);
        CHECK_MSG(!what || strstr(err.message, what) != NULL, "%s: '%s' lacks '%s'", case_name, err.message, what);
    }
    if (st == PTREG_OK)
        ptreg_model_index_destroy(idx);
}

static float *make_model(size_t m)
{
    float *t = make_cloud(CLOUD_CLUSTERED, m, 3);
    for (size_t i = 0; i < 40; i++) /* exact duplicates for the graph to merge */
        memcpy(t + 3 * (m - 1 - i), t + 3 * (i * 7), 3 * sizeof(float));
    return t;
}

static void same_answers(const ptreg_model_index *a, const ptreg_model_index *b, const char *what)
{
    size_t nq = 2000;
    float *q = make_queries(CLOUD_CLUSTERED, nq, 8);
    uint32_t *ia = malloc(nq * 4), *ib = malloc(nq * 4);
    float *da = malloc(nq * 4), *db = malloc(nq * 4);
    ptreg_model_index_info info;
    ptreg_model_index_get_info(a, &info);
    /* every method, brute force to the walks, on both: the k-d tree's answers */
    uint32_t *ref = malloc(nq * 4);
    float *ref_d = malloc(nq * 4);
    CHECK(ptreg_model_index_nearest(a, q, nq, PTREG_NN_KDTREE, NULL, ref, ref_d, NULL, NULL) == PTREG_OK);
    int last = info.has_delaunay ? PTREG_NN_DELAUNAY_PNNOPT : PTREG_NN_KDTREE;
    for (int s = PTREG_NN_BRUTE; s <= last; s++) {
        ptreg_walk_stats sa, sb;
        CHECK(ptreg_model_index_nearest(a, q, nq, (ptreg_nn_method)s, NULL, ia, da, &sa, NULL) == PTREG_OK);
        CHECK(ptreg_model_index_nearest(b, q, nq, (ptreg_nn_method)s, NULL, ib, db, &sb, NULL) == PTREG_OK);
        CHECK_MSG(memcmp(ia, ib, nq * 4) == 0 && memcmp(da, db, nq * 4) == 0 && memcmp(&sa, &sb, sizeof sa) == 0,
                  "%s: %s answers differently after loading", what, ptreg_nn_method_name((ptreg_nn_method)s));
        CHECK_MSG(memcmp(da, ref_d, nq * 4) == 0, "%s: %s's distances are not the k-d tree's", what,
                  ptreg_nn_method_name((ptreg_nn_method)s));
    }
    free(q), free(ia), free(ib), free(da), free(db), free(ref), free(ref_d);
}

static void check_round_trip(const char *what, const float *t, size_t m, const ptreg_index_options *opt,
                             const char *dir)
{
    char path[512], path2[512];
    snprintf(path, sizeof path, "%s/a.pti", dir);
    snprintf(path2, sizeof path2, "%s/b.pti", dir);
    ptreg_model_index *built, *loaded;
    ptreg_error err;
    CHECK(ptreg_model_index_create(t, m, opt, &built, &err) == PTREG_OK);
    CHECK_MSG(ptreg_model_index_save(built, path, &err) == PTREG_OK, "%s: %s", what, err.message);
    ptreg_status st = ptreg_model_index_load(path, &loaded, &err);
    CHECK_MSG(st == PTREG_OK, "%s: %s", what, err.message);
    if (st) {
        ptreg_model_index_destroy(built);
        return;
    }
    ptreg_model_index_info a, b;
    ptreg_model_index_get_info(built, &a);
    ptreg_model_index_get_info(loaded, &b);
    CHECK_MSG(memcmp(&a, &b, sizeof a) == 0, "%s: the loaded index describes itself differently", what);
    size_t n;
    const float *p = ptreg_model_index_points(loaded, &n);
    CHECK(n == m && memcmp(p, t, 3 * m * sizeof(float)) == 0);
    same_answers(built, loaded, what);
    /* saving what was loaded writes the same bytes */
    CHECK(ptreg_model_index_save(loaded, path2, &err) == PTREG_OK);
    size_t s1 = 0, s2 = 0;
    unsigned char *f1 = read_whole(path, &s1), *f2 = read_whole(path2, &s2);
    CHECK_MSG(f1 && f2 && s1 == s2 && memcmp(f1, f2, s1) == 0, "%s: re-saved file differs", what);
    free(f1), free(f2);
    ptreg_model_index_destroy(built);
    ptreg_model_index_destroy(loaded);
}

static void test_round_trips(const char *dir)
{
    size_t m = 3000;
    float *t = make_model(m);
    ptreg_index_options opt;
    ptreg_index_options_default(&opt);
    check_round_trip("with graph", t, m, &opt, dir);
    opt.delaunay = 0;
    check_round_trip("tree only", t, m, &opt, dir);
    ptreg_index_options_default(&opt);
    opt.leaf_size = 8;
    check_round_trip("leaf 8", t, m, &opt, dir);
    float *plane = make_cloud(CLOUD_PLANE, 500, 4);
    check_round_trip("coplanar", plane, 500, NULL, dir);
    float one[3] = {1, 2, 3};
    check_round_trip("one point", one, 1, NULL, dir);
    free(t), free(plane);
}

static unsigned char *saved_index(const char *dir, size_t *size)
{
    size_t m = 3000;
    float *t = make_model(m);
    char path[512];
    snprintf(path, sizeof path, "%s/c.pti", dir);
    ptreg_model_index *idx;
    CHECK(ptreg_model_index_create(t, m, NULL, &idx, NULL) == PTREG_OK);
    CHECK(ptreg_model_index_save(idx, path, NULL) == PTREG_OK);
    ptreg_model_index_destroy(idx);
    free(t);
    return read_whole(path, size);
}

static void test_damaged_files(const unsigned char *good, size_t size)
{
    unsigned char *buf = malloc(size + 64);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 99);
    /* truncated anywhere */
    size_t cuts[] = {0, 1, 8, 63, 64, 65, 100, size / 2, size - 64, size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        check_refused(good, cuts[i], cuts[i] < 64 ? "truncated" : NULL, "truncated");
    for (int i = 0; i < 50; i++)
        check_refused(good, (size_t)(ptreg_rng_uniform(&rng) * (double)size), NULL, "truncated at random");
    /* extended */
    memcpy(buf, good, size);
    buf[size] = 0;
    check_refused(buf, size + 1, "the file has", "extended");
    /* one byte flipped after the header: the checksum */
    for (int i = 0; i < 200; i++) {
        memcpy(buf, good, size);
        size_t at = HEADER_BYTES + (size_t)(ptreg_rng_uniform(&rng) * (double)(size - HEADER_BYTES));
        buf[at] ^= (unsigned char)(1u << (i % 8));
        check_refused(buf, size, "checksum", "flipped byte");
    }
    /* foreign, the other byte order, another version */
    memcpy(buf, good, size);
    memcpy(buf, "PLY\nform", 8);
    check_refused(buf, size, "magic", "foreign");
    memcpy(buf, good, size);
    uint32_t swapped = 0x04030201u;
    memcpy(buf + 12, &swapped, 4);
    check_refused(buf, size, "byte order", "endianness");
    memcpy(buf, good, size);
    uint32_t version = 9;
    memcpy(buf + 8, &version, 4);
    check_refused(buf, size, "index version 9", "version");
    free(buf);
}

/* Lies a valid checksum does not catch: each is found by the deep checks. */
static void test_consistent_lies(const unsigned char *good, size_t size)
{
    unsigned char *buf = malloc(size);
    struct {
        uint32_t tag;
        size_t at; /* byte offset inside the section */
        uint32_t value;
        const char *what;
    } lies[] = {
        {TAG_META, 0, 0x7fffffffu, "inconsistent counts"},           /* points */
        {TAG_PARENT, 8, 0x7fffffffu, "references are inconsistent"}, /* a parent outside the tree */
        {TAG_SLOT, 4, 0, "references are inconsistent"},             /* two points in one slot */
        {TAG_CHUNKS, 0, 0x3f800001u, "points differ"},               /* a point moved by one ulp */
        {TAG_DT_NBR, 12, 0x7fffffffu, "Delaunay graph's references"},
        {TAG_DT_OFFSET, 4, 0xffffffu, "Delaunay graph's references"},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        memcpy(buf, good, size);
        size_t at = section_offset(buf, lies[i].tag) + lies[i].at;
        CHECK(at > HEADER_BYTES && at + 4 <= size);
        memcpy(buf + at, &lies[i].value, 4);
        fix_checksum(buf, size);
        check_refused(buf, size, lies[i].what, lies[i].what);
    }
    free(buf);
}

/* An edge to a point without a row (a merged duplicate's or an empty
 * lane's) would send a walk off the rows: refused. Found by the fuzzer. */
static void test_edge_to_empty_row(const unsigned char *good, size_t size)
{
    unsigned char *buf = malloc(size);
    memcpy(buf, good, size);
    size_t offsets = section_offset(buf, TAG_DT_OFFSET), nbr = section_offset(buf, TAG_DT_NBR);
    uint32_t empty = UINT32_MAX;
    for (uint32_t s = 0; offsets + 4 * (size_t)s + 8 <= nbr && empty == UINT32_MAX; s++) {
        uint32_t a, b;
        memcpy(&a, buf + offsets + 4 * (size_t)s, 4);
        memcpy(&b, buf + offsets + 4 * (size_t)s + 4, 4);
        empty = a == b ? s : UINT32_MAX;
    }
    CHECK(empty != UINT32_MAX);
    memcpy(buf + nbr, &empty, 4);
    fix_checksum(buf, size);
    check_refused(buf, size, "Delaunay graph's references", "edge to an empty row");
    free(buf);
}

/* A damaged file is refused with a message, or loads into an index whose
 * every search answers with a model point. Returns whether it loaded. */
static int refused_or_harmless(const unsigned char *buf, size_t size, const char *what)
{
    size_t nq = 200;
    float *q = make_queries(CLOUD_CLUSTERED, nq, 12);
    uint32_t *nearest = malloc(nq * 4);
    float *d2 = malloc(nq * 4);
    ptreg_model_index *idx;
    ptreg_error err;
    ptreg_status st = load(buf, size, &idx, &err);
    CHECK_MSG(st == PTREG_OK || (st == PTREG_ERR_FORMAT && strstr(err.message, "model.pti")), "%s: status %d", what,
              (int)st);
    if (st == PTREG_OK) {
        size_t n;
        ptreg_model_index_points(idx, &n);
        for (int s = PTREG_NN_KDTREE; s <= PTREG_NN_DELAUNAY_PNN; s++)
            if (ptreg_model_index_nearest(idx, q, nq, (ptreg_nn_method)s, NULL, nearest, d2, NULL, NULL) == PTREG_OK)
                for (size_t j = 0; j < nq; j++)
                    CHECK_MSG(nearest[j] < n, "%s: search %d answered %u", what, s, nearest[j]);
        ptreg_model_index_destroy(idx);
    }
    free(q), free(nearest), free(d2);
    return st == PTREG_OK;
}

/* Inputs the fuzzer (tests/fuzz/fuzz_index.c) found, repaired the way it
 * repairs them: refused or harmless, never a crash (under ASan). */
static void test_fuzz_findings(void)
{
    static const char *const findings[] = {"fuzz-empty-row-neighbor.pti", "fuzz-missing-chunk-box.pti"};
    for (size_t i = 0; i < sizeof findings / sizeof findings[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/data/index/%s", PTREG_TEST_SOURCE_DIR, findings[i]);
        size_t size = 0;
        unsigned char *buf = read_whole(path, &size);
        CHECK_MSG(buf && size >= HEADER_BYTES, "%s missing", path);
        if (!buf || size < HEADER_BYTES) {
            free(buf);
            continue;
        }
        uint64_t file_size = size;
        memcpy(buf + 16, &file_size, sizeof file_size);
        fix_checksum(buf, size);
        refused_or_harmless(buf, size, findings[i]);
        free(buf);
    }
}

/* Random mutations with the checksum made valid again: each load is
 * refused with a message, or gives an index that answers queries (under
 * ASan in CI's sanitizer build this checks every access). */
static void test_mutations(const unsigned char *good, size_t size)
{
    unsigned char *buf = malloc(size);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 7);
    size_t loaded = 0, meta_end = section_offset(good, TAG_POINTS);
    for (int i = 0; i < 600; i++) {
        memcpy(buf, good, size);
        /* most mutations hit the table and the counts, where lies do most harm */
        size_t span = i % 2 ? meta_end : size;
        for (int k = 0; k < 1 + i % 4; k++) {
            size_t at = HEADER_BYTES + (size_t)(ptreg_rng_uniform(&rng) * (double)(span - HEADER_BYTES));
            buf[at] = (unsigned char)(ptreg_rng_uniform(&rng) * 256);
        }
        fix_checksum(buf, size);
        char what[32];
        snprintf(what, sizeof what, "mutation %d", i);
        loaded += (size_t)refused_or_harmless(buf, size, what);
    }
    printf("mutations: %zu of 600 loaded (harmless changes), the rest refused\n", loaded);
    free(buf);
}

static void test_files(const char *dir)
{
    ptreg_model_index *idx = (ptreg_model_index *)1;
    ptreg_error err;
    char path[512];
    snprintf(path, sizeof path, "%s/missing.pti", dir);
    CHECK(ptreg_model_index_load(path, &idx, &err) == PTREG_ERR_IO && idx == NULL);
    CHECK(strstr(err.message, "missing.pti") != NULL);
    snprintf(path, sizeof path, "%s/no/such/dir/x.pti", dir);
    float p[15] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
    CHECK(ptreg_model_index_create(p, 5, NULL, &idx, NULL) == PTREG_OK);
    CHECK(ptreg_model_index_save(idx, path, &err) == PTREG_ERR_IO);
    ptreg_model_index_destroy(idx);
}

int main(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/ptreg-test-index-%ld", (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        perror(dir);
        return 1;
    }
    test_round_trips(dir);
    size_t size = 0;
    unsigned char *good = saved_index(dir, &size);
    CHECK(good && size > 4096);
    if (good) {
        test_damaged_files(good, size);
        test_consistent_lies(good, size);
        test_edge_to_empty_row(good, size);
        test_mutations(good, size);
    }
    test_files(dir);
    test_fuzz_findings();
    free(good);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_exit();
}
