/* Results declared once. A result struct has a table that names each field
 * a caller reads back, its type, unit and help, beside the struct (as its
 * options have an options table, options.h). The command line's --json and
 * Python's result objects are loops over that table, so a field added to
 * a struct and its table reaches both under one name. */
#ifndef PTREG_RESULTS_H
#define PTREG_RESULTS_H

#include <stddef.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_result_type {
    PTREG_RESULT_INT,       /* an int */
    PTREG_RESULT_DOUBLE,    /* a double */
    PTREG_RESULT_FLOAT,     /* a float */
    PTREG_RESULT_SIZE,      /* a size_t */
    PTREG_RESULT_U64,       /* a uint64_t */
    PTREG_RESULT_U32,       /* a uint32_t */
    PTREG_RESULT_BOOL,      /* an int read as true or false */
    PTREG_RESULT_ENUM,      /* an int-sized enum, written as enum_name's name */
    PTREG_RESULT_TEXT,      /* a char array, nul-ended */
    PTREG_RESULT_STRING,    /* a const char * (NULL is written as "") */
    PTREG_RESULT_DEVICE,    /* a ptreg_device, as ptreg_device_format writes it */
    PTREG_RESULT_DOUBLES,   /* double[count] in the struct */
    PTREG_RESULT_TRANSFORM, /* double[16]: a 4 x 4 rigid transform, row-major, in the clouds' frame (the
                               command line writes it in the files' world frame, as its -t does) */
    PTREG_RESULT_U64S,      /* uint64_t[count] in the struct */
    PTREG_RESULT_SERIES,    /* a double * of length_of(struct) values */
    PTREG_RESULT_RECORDS,   /* a pointer to length_of(struct) structs of `table`; NULL: the field is
                             left out (a result that has no such records) */
    PTREG_RESULT_DERIVED,   /* a double derived from the struct by value_of (not stored) */
    PTREG_RESULT_OBJECT     /* a pointer to one struct of `table`, written as an object; NULL: left out */
} ptreg_result_type;

struct ptreg_result_table;

typedef struct ptreg_result_field {
    const char *name; /* the key: the command line's JSON and Python's result */
    ptreg_result_type type;
    size_t offset;                           /* of the field in the result struct (not DERIVED) */
    size_t count;                            /* DOUBLES, U64S: the values */
    const char *(*enum_name)(int value);     /* ENUM */
    size_t (*length_of)(const void *result); /* SERIES, RECORDS */
    const struct ptreg_result_table *table;  /* RECORDS: the records' table */
    double (*value_of)(const void *result);  /* DERIVED */
    const char *unit; /* "ms", "deg", a length in "the clouds' units"; "" for a count or a name */
    const char *help;
} ptreg_result_field;

typedef struct ptreg_result_table {
    const char *owner; /* "ICP" */
    const ptreg_result_field *fields;
    size_t count;
    size_t size; /* of the result struct */
} ptreg_result_table;

/* The table of `name`, one per result struct: "icp" (ptreg_icp_result),
 * "walk_stats" (ICP's Delaunay walk), "emicp", "register", "evaluation"
 * (ptreg_evaluate_registration's), "lddmm",
 * "harris3d", "multiway", "multiway_edge" (ptreg_multiway_edge),
 * "device_info" (ptreg_devices' list), "model_index_info",
 * "track_frame" (ptreg_track_frame), "track_summary" (ptreg_track_summary),
 * "trajectory_eval" (ptreg_eval_result),
 * "batch_stats" (ptreg_batch_stats); NULL for another name. */
PTREG_API const ptreg_result_table *ptreg_result_table_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
