/* Options declared once. An algorithm's options struct has a table that
 * names each field a caller may set, its type, range and help; its default
 * is the struct's *_options_default. The command line's parsing and
 * --help, Python's keywords and the library's own range checks all read
 * that table, so an option is described in one place. */
#ifndef PTREG_OPTIONS_H
#define PTREG_OPTIONS_H

#include <stddef.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_option_type {
    PTREG_OPTION_INT,    /* an int field */
    PTREG_OPTION_DOUBLE, /* a double field */
    PTREG_OPTION_ENUM,   /* an enum field (int-sized), set by one of its names */
    PTREG_OPTION_SIZE    /* a size_t field */
} ptreg_option_type;

/* ptreg_option.flags */
enum {
    PTREG_OPTION_OPEN_LO = 1,   /* the range excludes lo */
    PTREG_OPTION_OPEN_HI = 2,   /* the range excludes hi */
    PTREG_OPTION_POW2 = 4,      /* a power of two within the range */
    PTREG_OPTION_KNOB = 8,      /* changes speed only: a tuned variant sets it unless the caller did */
    PTREG_OPTION_AUTO = 16,     /* a finite value at or below lo means "not set" (derived, or off: the
                                 help says): the library accepts it, a caller sets only values in range */
    PTREG_OPTION_LO_UNSET = 32, /* the same for lo alone (outside an open range) */
    PTREG_OPTION_ODD = 64       /* an odd integer within the range */
};

typedef struct ptreg_option_name {
    const char *name;
    int value;
} ptreg_option_name;

typedef struct ptreg_option {
    const char *name;     /* Python's keyword; on the command line --name with '-' for '_' */
    const char *cli_name; /* the command line's spelling where it differs, else NULL */
    ptreg_option_type type;
    size_t offset; /* of the field in the options struct */
    double lo, hi; /* numbers: the range (-DBL_MAX, DBL_MAX, INT_MAX, SIZE_MAX: no bound) */
    unsigned flags;
    const ptreg_option_name *names; /* ENUM: its values, ended by {NULL, 0} */
    const char *placeholder;        /* the value in --help: "N", "F" */
    const char *help;
} ptreg_option;

/* How a rule's message names the options: by the table's names (C's and
 * Python's spelling, "kernel_scale") or the command line's ("--kernel-scale"). */
typedef enum ptreg_option_spelling { PTREG_OPTION_SPELL_NAME = 0, PTREG_OPTION_SPELL_CLI } ptreg_option_spelling;

typedef struct ptreg_option_table {
    const char *owner; /* names the options in messages: "EM-ICP" */
    const ptreg_option *options;
    size_t count;
    size_t size;                     /* of the options struct */
    void (*defaults)(void *options); /* its *_options_default */
    /* The rules that tie fields together, run after each field's range
     * (NULL: none): PTREG_ERR_ARG naming the options as `spelling` says,
     * without the owner (ptreg_options_check adds it). Every front end
     * reaches them through ptreg_options_check, so none states a rule. */
    ptreg_status (*check)(const void *options, ptreg_option_spelling spelling, ptreg_error *err);
} ptreg_option_table;

/* The options table of `name`, one per options struct: "icp", "emicp",
 * "register", "ransac", "fgr", "lddmm", "harris3d", "features", "normals",
 * "index", "batch", "multiway", "pose_graph", "track", "eval", "tune" (the struct
 * ptreg_NAME_options); NULL for another name. One lookup, as the tuner's
 * ptreg_tune_kernel_find, rather than a function per module. */
PTREG_API const ptreg_option_table *ptreg_option_table_find(const char *name);

/* The option called `name` (its first len characters; '-' and '_' alike):
 * the one of that command-line spelling, else of that name (two rows may
 * cross: register's "method" is the command line's --global); NULL when none. */
PTREG_API const ptreg_option *ptreg_option_find(const ptreg_option_table *table, const char *name, size_t len);
/* Its command-line spelling, into buf. */
PTREG_API const char *ptreg_option_cli_name(const ptreg_option *o, char *buf, size_t size);
/* Sets the field from text (a command line's value): a number in range, or
 * one of an enum's names (a command line leaves an option out to leave it
 * "not set"). PTREG_ERR_ARG says what is wrong with the value, naming
 * neither the option nor its owner (the caller does). */
PTREG_API ptreg_status ptreg_option_parse(const ptreg_option *o, void *options, const char *text, ptreg_error *err);
/* Sets a number field (not an ENUM) from a number: in range, or a value
 * AUTO or LO_UNSET takes as "not set" (what the table's check accepts). */
PTREG_API ptreg_status ptreg_option_set(const ptreg_option *o, void *options, double value, ptreg_error *err);
/* Every field of the table within its range (or below it, for an AUTO
 * one), then the table's rules (check): PTREG_ERR_ARG naming the owner,
 * the option and its value otherwise. */
PTREG_API ptreg_status ptreg_options_check(const ptreg_option_table *table, const void *options, ptreg_error *err);
/* The same, then the table's rules (check); their message names the
 * options as `spelling` says, and the owner only for the table's names
 * (a command line's message names its command instead). */
PTREG_API ptreg_status ptreg_options_check_as(const ptreg_option_table *table, const void *options,
                                              ptreg_option_spelling spelling, ptreg_error *err);
/* The field's value as text ("0.9", "fp32"), and the range as text
 * ("in (0, 1)", ">= 0", "a power of two in [1, 4]", "fp32|fp64|fp16").
 * ptreg_option_explicit: 1 when the value is in range (not AUTO's "not
 * set"). */
PTREG_API void ptreg_option_format(const ptreg_option *o, const void *options, char *buf, size_t size);
PTREG_API void ptreg_option_range(const ptreg_option *o, char *buf, size_t size);
PTREG_API int ptreg_option_explicit(const ptreg_option *o, const void *options);

#ifdef __cplusplus
}
#endif

#endif
