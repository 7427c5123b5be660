/* Writing a result table (ptreg/results.h): a row per field, and the
 * function that hands the table out. */
#ifndef PTREG_CORE_RESULTS_TABLE_H
#define PTREG_CORE_RESULTS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/results.h"

/* A plain field `member` of struct `type`, under the key name. */
#define RESULT_AT(type, member, name, kind, unit, help)                                          \
    {                                                                                            \
        name, PTREG_RESULT_##kind, offsetof(type, member), 0, NULL, NULL, NULL, NULL, unit, help \
    }
/* The same, the key being the member's name. */
#define RESULT_FIELD(type, member, kind, unit, help) RESULT_AT(type, member, #member, kind, unit, help)
/* An int-sized enum, written as enum_name's name. */
#define RESULT_ENUM(type, member, name, enum_name, help)                                          \
    {                                                                                             \
        name, PTREG_RESULT_ENUM, offsetof(type, member), 0, enum_name, NULL, NULL, NULL, "", help \
    }
/* count doubles (or uint64_t: kind U64S) in the struct. */
#define RESULT_ARRAY(type, member, name, kind, count, unit, help)                                    \
    {                                                                                                \
        name, PTREG_RESULT_##kind, offsetof(type, member), count, NULL, NULL, NULL, NULL, unit, help \
    }
/* A pointer to length_of(result) doubles. */
#define RESULT_SERIES(type, member, name, length_of, unit, help)                                      \
    {                                                                                                 \
        name, PTREG_RESULT_SERIES, offsetof(type, member), 0, NULL, length_of, NULL, NULL, unit, help \
    }
/* A pointer to length_of(result) records of table (NULL: left out). */
#define RESULT_RECORDS(type, member, name, length_of, table, help)                                    \
    {                                                                                                 \
        name, PTREG_RESULT_RECORDS, offsetof(type, member), 0, NULL, length_of, table, NULL, "", help \
    }
/* A pointer to one struct of table, written as an object (NULL: left out). */
#define RESULT_OBJECT(type, member, name, table, help)                                          \
    {                                                                                           \
        name, PTREG_RESULT_OBJECT, offsetof(type, member), 0, NULL, NULL, table, NULL, "", help \
    }
/* A number derived from the struct by value_of. */
#define RESULT_DERIVED(name, value_of, unit, help)                               \
    {                                                                            \
        name, PTREG_RESULT_DERIVED, 0, 0, NULL, NULL, NULL, value_of, unit, help \
    }

/* const ptreg_result_table *fn(void): the table of rows (an array) for the
 * result struct `type`; fn##_data is the table itself (another table's
 * RECORDS row points at it). */
#define RESULT_TABLE(fn, owner, type, rows)                                                                \
    static const ptreg_result_table fn##_data = {owner, rows, sizeof rows / sizeof rows[0], sizeof(type)}; \
    const ptreg_result_table *fn(void) { return &fn##_data; }

/* A run's latency percentiles (ptreg_track_latency; track_summary.c's),
 * the OBJECT row of track's and odometry's summaries. */
extern const ptreg_result_table track_latency_table;

/* ptreg_stop_reason_name for an ENUM row. */
const char *result_stop_reason_name(int value);
/* The count of an `iterations + 1` series (ICP's mse and walk), for results
 * whose int iterations sits at offset. */
size_t result_iterations_plus_one(const void *result, size_t offset);

/* The library's result tables, one per result struct: hidden, so that the
 * modules share them while a caller outside the library finds a table by
 * name (ptreg_result_table_find, src/api/tables.c). */
const ptreg_result_table *ptreg_icp_result_table(void);
const ptreg_result_table *ptreg_walk_stats_table(void);
const ptreg_result_table *ptreg_emicp_result_table(void);
const ptreg_result_table *ptreg_register_result_table(void);
const ptreg_result_table *ptreg_evaluation_table(void);
const ptreg_result_table *ptreg_odometry_frame_table(void);
const ptreg_result_table *ptreg_odometry_summary_table(void);
const ptreg_result_table *ptreg_lddmm_result_table(void);
const ptreg_result_table *ptreg_cpd_result_table(void);
const ptreg_result_table *ptreg_harris3d_result_table(void);
const ptreg_result_table *ptreg_multiway_result_table(void);
const ptreg_result_table *ptreg_multiway_edge_table(void);
const ptreg_result_table *ptreg_device_info_table(void);
const ptreg_result_table *ptreg_model_index_info_table(void);
const ptreg_result_table *ptreg_track_frame_table(void);
const ptreg_result_table *ptreg_track_summary_table(void);
const ptreg_result_table *ptreg_eval_result_table(void);
const ptreg_result_table *ptreg_batch_stats_table(void);

#endif
