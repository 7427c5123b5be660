/* Results declared once (ptreg/results.h): each table's rows fit their
 * struct and name one field each, and the rows the front ends rely on
 * are there (the CLI's keys; python/tests/test_result_keys.py compares
 * the two front ends' keys). */
#include <string.h>

#include "check.h"
#include "ptreg/batch.h"
#include "ptreg/device.h"
#include "ptreg/emicp.h"
#include "ptreg/global.h"
#include "ptreg/harris3d.h"
#include "ptreg/icp.h"
#include "ptreg/lddmm.h"
#include "ptreg/multiway.h"
#include "ptreg/track.h"
#include "ptreg/results.h"
#include "core/results_table.h"
#include "hooks.h"

typedef const ptreg_result_table *(*table_fn)(void);
static const table_fn tables[] = {ptreg_icp_result_table,       ptreg_walk_stats_table,    ptreg_emicp_result_table,
                                  ptreg_register_result_table,  ptreg_lddmm_result_table,  ptreg_harris3d_result_table,
                                  ptreg_multiway_result_table,  ptreg_multiway_edge_table, ptreg_device_info_table,
                                  ptreg_model_index_info_table, ptreg_track_frame_table,   ptreg_track_summary_table,
                                  ptreg_batch_stats_table};
#define TABLES (sizeof tables / sizeof tables[0])

/* The bytes a row reads at its offset. */
static size_t row_size(const ptreg_result_field *f)
{
    switch (f->type) {
    case PTREG_RESULT_INT:
    case PTREG_RESULT_BOOL:
    case PTREG_RESULT_ENUM: return sizeof(int);
    case PTREG_RESULT_DOUBLE: return sizeof(double);
    case PTREG_RESULT_FLOAT: return sizeof(float);
    case PTREG_RESULT_SIZE: return sizeof(size_t);
    case PTREG_RESULT_U64: return sizeof(uint64_t);
    case PTREG_RESULT_U32: return sizeof(uint32_t);
    case PTREG_RESULT_TEXT: return 1;
    case PTREG_RESULT_STRING:
    case PTREG_RESULT_SERIES:
    case PTREG_RESULT_RECORDS:
    case PTREG_RESULT_OBJECT: return sizeof(void *);
    case PTREG_RESULT_DEVICE: return sizeof(ptreg_device);
    case PTREG_RESULT_DOUBLES:
    case PTREG_RESULT_TRANSFORM: return f->count * sizeof(double);
    case PTREG_RESULT_U64S: return f->count * sizeof(uint64_t);
    case PTREG_RESULT_DERIVED: return 0;
    }
    return (size_t)-1;
}

static void test_rows(void)
{
    for (size_t k = 0; k < TABLES; k++) {
        const ptreg_result_table *t = tables[k]();
        CHECK(t && t->owner && t->count > 0 && t->size > 0);
        for (size_t i = 0; i < t->count; i++) {
            const ptreg_result_field *f = &t->fields[i];
            CHECK_MSG(f->name && f->name[0] && f->help && f->help[0] && f->unit, "%s: row %zu", t->owner, i);
            CHECK_MSG(f->offset + row_size(f) <= t->size, "%s: %s past the struct", t->owner, f->name);
            CHECK_MSG(ptreg_result_find(t, f->name) == f, "%s: %s twice", t->owner, f->name);
            CHECK_MSG(f->type != PTREG_RESULT_ENUM || f->enum_name, "%s: %s", t->owner, f->name);
            CHECK_MSG((f->type != PTREG_RESULT_SERIES && f->type != PTREG_RESULT_RECORDS) || f->length_of, "%s: %s",
                      t->owner, f->name);
            CHECK_MSG((f->type != PTREG_RESULT_RECORDS && f->type != PTREG_RESULT_OBJECT) || f->table, "%s: %s",
                      t->owner, f->name);
            CHECK_MSG(f->type != PTREG_RESULT_DERIVED || f->value_of, "%s: %s", t->owner, f->name);
            CHECK_MSG((f->type != PTREG_RESULT_DOUBLES && f->type != PTREG_RESULT_U64S) || f->count, "%s: %s", t->owner,
                      f->name);
            CHECK_MSG(f->type != PTREG_RESULT_TRANSFORM || f->count == 16, "%s: %s", t->owner, f->name);
        }
        CHECK(!ptreg_result_find(t, "no_such_field") && !ptreg_result_find(t, NULL) && !ptreg_result_find(NULL, "x"));
    }
}

static size_t offset_of(const ptreg_result_table *t, const char *name)
{
    const ptreg_result_field *f = ptreg_result_find(t, name);
    return f ? f->offset : (size_t)-1;
}

/* The fields Python lacked before the tables (issue 49), and the CLI's keys
 * where they differ from the struct's names. */
static void test_keys(void)
{
    const ptreg_result_table *icp = ptreg_icp_result_table();
    CHECK(ptreg_result_find(icp, "nn_measured") && ptreg_result_find(icp, "upload_ms"));
    const ptreg_result_field *walk = ptreg_result_find(icp, "walk");
    CHECK(walk && walk->type == PTREG_RESULT_RECORDS && walk->table == ptreg_walk_stats_table());
    CHECK(ptreg_result_find(ptreg_register_result_table(), "source_points_down"));
    CHECK(offset_of(ptreg_register_result_table(), "time_ms") == offsetof(ptreg_register_result, total_ms));
    CHECK(offset_of(ptreg_lddmm_result_table(), "H") == offsetof(ptreg_lddmm_result, hamiltonian));
    /* harris3d's "keypoints" is the CLI's count and Python's array: each front end's own */
    CHECK(!ptreg_result_find(ptreg_harris3d_result_table(), "keypoints"));
    /* batch's time is the CLI's register_ms (Python keeps time_ms beside it) */
    CHECK(offset_of(ptreg_batch_stats_table(), "register_ms") == offsetof(ptreg_batch_stats, time_ms));
    CHECK(!ptreg_result_find(ptreg_batch_stats_table(), "time_ms"));
}

/* The series and records are iterations + 1 long (the passes), and a
 * derived value reads its struct. */
static void test_lengths(void)
{
    ptreg_icp_result r;
    memset(&r, 0, sizeof r);
    r.iterations = 4;
    const ptreg_result_field *mse = ptreg_result_find(ptreg_icp_result_table(), "mse");
    REQUIRE(mse && mse->length_of);
    CHECK(mse->length_of(&r) == 5);
    ptreg_walk_stats w = {.queries = 4, .steps = 10};
    const ptreg_result_field *mean = ptreg_result_find(ptreg_walk_stats_table(), "mean_steps");
    REQUIRE(mean && mean->value_of);
    CHECK_NEAR(mean->value_of(&w), 2.5, 0);
    ptreg_multiway_edge edges[3] = {{.kept = 1}, {.kept = 0}, {.kept = 1}};
    ptreg_multiway_result m;
    memset(&m, 0, sizeof m);
    m.edges = edges;
    m.edge_count = 3;
    const ptreg_result_field *list = ptreg_result_find(ptreg_multiway_result_table(), "edges");
    const ptreg_result_field *kept = ptreg_result_find(ptreg_multiway_result_table(), "edges_kept");
    REQUIRE(list && list->length_of && kept && kept->value_of);
    CHECK(list->length_of(&m) == 3);
    CHECK_NEAR(kept->value_of(&m), 2, 0);
}

/* The public lookup (ptreg_result_table_find): each table under one
 * name, nothing for another name. */
static void test_table_find(void)
{
    static const char *const names[] = {"icp",         "walk_stats",       "emicp",       "register",
                                        "lddmm",       "harris3d",         "multiway",    "multiway_edge",
                                        "device_info", "model_index_info", "track_frame", "track_summary",
                                        "batch_stats"};
    const size_t count = sizeof names / sizeof names[0];
    for (size_t k = 0; k < TABLES; k++) {
        size_t found = 0;
        for (size_t i = 0; i < count; i++)
            found += ptreg_result_table_find(names[i]) == tables[k]();
        CHECK_MSG(found == 1, "%s: found under %zu names", tables[k]()->owner, found);
    }
    CHECK(ptreg_result_table_find("icp") == ptreg_icp_result_table());
    CHECK(ptreg_result_table_find("model_index_info") == ptreg_model_index_info_table());
    CHECK(!ptreg_result_table_find("index") && !ptreg_result_table_find("") && !ptreg_result_table_find(NULL));
    CHECK(count == TABLES); /* a new table is listed here and in src/api/tables.c */
}

/* A run's summary: nearest-rank percentiles, the errors' medians and the
 * first frame of the largest rotation error; the error object only when a
 * frame had a true pose. */
static void test_track_summary(void)
{
    ptreg_track_summary s;
    memset(&s, 0, sizeof s);
    ptreg_error err;
    for (int i = 0; i < 10; i++) {
        ptreg_track_record r;
        memset(&r, 0, sizeof r);
        r.frame.latency_ms = 10.0 - i; /* 10 .. 1 */
        r.frame.state = i == 3 ? PTREG_TRACK_LOST : PTREG_TRACK_TRACKED;
        r.has_error = i != 0;
        r.rotation_error_deg = i == 4 || i == 7 ? 5.0 : 1.0, r.translation_error = i;
        CHECK(ptreg_track_summary_add(&s, &r, i < 2, &err) == PTREG_OK);
    }
    CHECK(!s.error && !s.latency_ms);
    CHECK(ptreg_track_summary_add(&s, NULL, 0, &err) == PTREG_OK);
    CHECK(s.frames == 10 && s.tracked == 9 && s.lost == 1 && s.records && s.records[1].frame.latency_ms == 9.0);
    CHECK(s.latency_ms && s.latency.p50 == 5.0 && s.latency.p95 == 10.0 && s.latency.max == 10.0);
    CHECK_NEAR(s.latency.mean, 5.5, 1e-12);
    CHECK(s.error && s.errors.frames == 9 && s.errors.rotation_deg_max == 5.0 && s.errors.rotation_deg_max_frame == 4);
    CHECK(s.errors.rotation_deg_median == 1.0 && s.errors.translation_median == 5.0 && s.errors.translation_max == 9.0);
    ptreg_track_summary_free(&s);
    CHECK(ptreg_result_find(ptreg_track_summary_table(), "error")->type == PTREG_RESULT_OBJECT);
}

int main(void)
{
    test_table_find();
    test_track_summary();
    test_rows();
    test_keys();
    test_lengths();
    return check_exit();
}
