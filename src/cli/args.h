/* Command-line parsing shared by the commands: a table of options per
 * command drives parsing, value checks and the --help text. */
#ifndef PTREG_CLI_ARGS_H
#define PTREG_CLI_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/options.h"

/* Exit codes of every command (docs/ptreg.1, EXIT STATUS). */
enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_BAD_INPUT = 3, EXIT_RUNTIME = 4 };

typedef struct cli_option {
    const char *name;   /* long name without the dashes */
    char short_name;    /* 0 when none */
    const char *value;  /* the value's placeholder, NULL for a flag */
    const char *help;   /* NULL: only the short name of the library's option `name` (CLI_SHORT) */
    const char *writes; /* an output: the extensions it writes (below; checked in cli/outputs.c); NULL else */
} cli_option;

/* cli_option.writes: the endings the option writes, blank-separated, case
 * ignored ("nii.gz" may have a dot), or CLI_WRITES_FOLDER for a folder the
 * command fills (made when missing: its parent must exist). */
#define CLI_WRITES_CLOUD "ply pcd xyz txt csv pts las pos bin"
#define CLI_WRITES_TRANSFORM "txt json"
#define CLI_WRITES_SVG "svg"
#define CLI_WRITES_HTML "html"
#define CLI_WRITES_FOLDER "/"
/* Before the endings: the option writes line by line, so a FIFO or a
 * device (/dev/null) is a target too, whatever its name ("| txt tum"). */
#define CLI_WRITES_LIVE "| "

/* -c for the library's option --name (cli_command.library). */
#define CLI_SHORT(name, c)  \
    {                       \
        name, c, NULL, NULL \
    }

typedef struct cli_command {
    const char *name;
    const char *synopsis;    /* "SOURCE TARGET [options]" */
    const char *summary;     /* one line */
    const char *description; /* a paragraph for --help, may be NULL */
    const cli_option *options;
    size_t option_count;
    int min_positional, max_positional;
    /* The library's options the command takes, after its own: parsed,
     * described in --help and checked from the library's table, named as
     * ptreg_option_table_find names it (NULL: none). */
    const char *library;
} cli_command;

/* A command's entry: the option count from its table's size. */
#define CLI_COMMAND(name, synopsis, summary, description, options, min_positional, max_positional)         \
    {                                                                                                      \
        name, synopsis, summary, description, options, sizeof options / sizeof options[0], min_positional, \
            max_positional, NULL                                                                           \
    }
/* The same with the library's options table (options.h) after its own. */
#define CLI_COMMAND_LIBRARY(name, synopsis, summary, description, options, min_positional, max_positional, library) \
    {                                                                                                               \
        name, synopsis, summary, description, options, sizeof options / sizeof options[0], min_positional,          \
            max_positional, library                                                                                 \
    }

#define CLI_MAX_OPTIONS 48
/* Many scans or frames are a command's positional arguments. */
#define CLI_MAX_POSITIONAL 4096

typedef struct cli_args {
    const cli_command *cmd;
    const char *value[CLI_MAX_OPTIONS]; /* NULL when absent; "" for a present flag */
    const char *positional[CLI_MAX_POSITIONAL];
    int positional_count;
} cli_args;

/* Parses argv (after the command name). Returns -1 after printing --help,
 * EXIT_USAGE after printing a usage error, EXIT_OK otherwise. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *args);
void cli_print_help(const cli_command *cmd);
/* The library's options of the command as roff list items (.TP), for
 * docs/ptreg.1 (`ptreg help --man COMMAND`; nothing when it has none). */
void cli_print_man_options(const cli_command *cmd);
/* The fields of the command's --json that the library's result tables
 * declare (ptreg/results.h), as roff list items, for docs/ptreg.1 (`ptreg
 * help --man-json COMMAND`; nothing when it has none). */
void cli_print_man_json(const cli_command *cmd);
/* s as roff text: '-' as \-, a backslash doubled. */
void cli_put_roff(const char *s);

/* Sets the library's options given (cli_command.library) on its options
 * struct, then checks them as the library does (its ranges and the rules
 * that tie options together, ptreg_options_check_as); EXIT_USAGE after
 * printing what is wrong. */
int cli_read_library(const cli_args *args, void *options);
/* 1 when one of the library's speed knobs (PTREG_OPTION_KNOB) was given. */
int cli_library_knob_given(const cli_args *args);

int cli_has(const cli_args *args, const char *name);
/* cli_has for an option the command may not take (shared code): 0 then. */
int cli_given(const cli_args *args, const char *name);
const char *cli_string(const cli_args *args, const char *name, const char *fallback);
/* Typed values: keep *out when the option is absent; print an error naming
 * the option and return EXIT_USAGE when the value is malformed or outside
 * [lo, hi]. */
int cli_double(const cli_args *args, const char *name, double lo, double hi, double *out);
int cli_int(const cli_args *args, const char *name, long lo, long hi, int *out);
int cli_size(const cli_args *args, const char *name, size_t lo, size_t hi, size_t *out);
int cli_u64(const cli_args *args, const char *name, uint64_t *out);
/* "x,y,z" */
int cli_vec3(const cli_args *args, const char *name, double out[3]);

/* Prints "ptreg CMD: message" to stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
