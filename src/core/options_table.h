/* Writing an options table (ptreg/options.h): a row per field, and the
 * function that hands the table out. */
#ifndef PTREG_CORE_OPTIONS_TABLE_H
#define PTREG_CORE_OPTIONS_TABLE_H

#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "ptreg/options.h"

/* A number at `offset` in the struct: kind INT or DOUBLE, within [lo, hi]
 * as flags (options.h) say; cli the command line's spelling where it is
 * not the name's (else NULL). */
#define OPTION_NUMBER_AT(offset, name, cli, kind, lo, hi, flags, placeholder, help)    \
    {                                                                                  \
        name, cli, PTREG_OPTION_##kind, offset, lo, hi, flags, NULL, placeholder, help \
    }
#define OPTION_NUMBER(type, member, name, cli, kind, lo, hi, flags, placeholder, help) \
    OPTION_NUMBER_AT(offsetof(type, member), name, cli, kind, lo, hi, flags, placeholder, help)
/* A number named as its field (`member`, a plain one). */
#define OPTION_FIELD(type, member, cli, kind, lo, hi, flags, placeholder, help) \
    OPTION_NUMBER(type, member, #member, cli, kind, lo, hi, flags, placeholder, help)
/* An enum field, set by one of names' names. */
#define OPTION_ENUM_AT(offset, name, cli, names, flags, help)                  \
    {                                                                          \
        name, cli, PTREG_OPTION_ENUM, offset, 0, 0, flags, names, "NAME", help \
    }
#define OPTION_ENUM(type, member, name, cli, names, flags, help) \
    OPTION_ENUM_AT(offsetof(type, member), name, cli, names, flags, help)
/* An enum is set through an int. */
#define OPTION_ENUM_IS_INT(type, member) \
    _Static_assert(sizeof(((type *)0)->member) == sizeof(int), #type "." #member " is not int-sized")

/* const ptreg_option_table *fn(void): the table of rows (an array) for
 * the options struct `type`, whose defaults default_fn(type *) sets. */
#define OPTION_TABLE(fn, owner, type, default_fn, rows) OPTION_TABLE_CHECKED(fn, owner, type, default_fn, rows, NULL)
/* The same with the rules that tie its fields together (ptreg_option_table.check). */
#define OPTION_TABLE_CHECKED(fn, owner, type, default_fn, rows, check)                                      \
    static void fn##_defaults(void *options) { default_fn((type *)options); }                               \
    const ptreg_option_table *fn(void)                                                                      \
    {                                                                                                       \
        static const ptreg_option_table table = {owner,        rows,          sizeof rows / sizeof rows[0], \
                                                 sizeof(type), fn##_defaults, check};                       \
        return &table;                                                                                      \
    }

/* For a rule's message: the option `name` of the table as `spelling` says
 * ("kernel_scale", "--kernel-scale"), into buf. */
const char *option_spelled(const ptreg_option_table *table, const char *name, ptreg_option_spelling spelling, char *buf,
                           size_t size);

/* The name of value among names ({NULL, 0}-ended), or NULL; the value of
 * name into *value ('-' and '_' alike): 0, or -1 when names lack it. What an enum's
 * ptreg_X_name and ptreg_X_parse are made of. */
const char *option_name_of(const ptreg_option_name *names, int value);
int option_value_of(const ptreg_option_name *names, const char *name, int *value);

/* An enum's public pair from its names: const char *name_fn(type) (fallback
 * for a value without a name) and int parse_fn(const char *, type *) (0, or
 * -1 for an unknown name, *value untouched). */
#define OPTION_ENUM_FUNCTIONS(type, names, fallback, name_fn, parse_fn) \
    const char *name_fn(type value)                                     \
    {                                                                   \
        const char *name = option_name_of(names, (int)value);           \
        return name ? name : fallback;                                  \
    }                                                                   \
    int parse_fn(const char *name, type *value)                         \
    {                                                                   \
        int v;                                                          \
        if (option_value_of(names, name, &v))                           \
            return -1;                                                  \
        *value = (type)v;                                               \
        return 0;                                                       \
    }

/* The library's options tables, one per options struct: hidden, so that the
 * modules share them while a caller outside the library finds a table by
 * name (ptreg_option_table_find, src/api/tables.c). */
const ptreg_option_table *ptreg_icp_option_table(void);
const ptreg_option_table *ptreg_emicp_option_table(void);
const ptreg_option_table *ptreg_register_option_table(void);
const ptreg_option_table *ptreg_ransac_option_table(void);
const ptreg_option_table *ptreg_fgr_option_table(void);
const ptreg_option_table *ptreg_lddmm_option_table(void);
const ptreg_option_table *ptreg_cpd_option_table(void);
const ptreg_option_table *ptreg_odometry_option_table(void);
const ptreg_option_table *ptreg_localize_option_table(void);
const ptreg_option_table *ptreg_harris3d_option_table(void);
const ptreg_option_table *ptreg_features_option_table(void);
const ptreg_option_table *ptreg_normals_option_table(void);
const ptreg_option_table *ptreg_index_option_table(void);
const ptreg_option_table *ptreg_batch_option_table(void);
const ptreg_option_table *ptreg_multiway_option_table(void);
const ptreg_option_table *ptreg_pose_graph_option_table(void);
const ptreg_option_table *ptreg_track_option_table(void);
const ptreg_option_table *ptreg_eval_option_table(void);
const ptreg_option_table *ptreg_tune_option_table(void);

#endif
