/* The check that every output a command was given can be written (what
 * each option writes: cli_option.writes, cli/args.h), before it does any
 * work (a bad path or format is exit 2 at once, not after a long
 * computation). */
#ifndef PTREG_CLI_OUTPUTS_H
#define PTREG_CLI_OUTPUTS_H

#include "cli/args.h"

/* A command's first step: parses argv, then checks its outputs
 * (cli_check_outputs); 1 to go on, or 0 with *exit_code the command
 * returns at once (0 after --help, 2 after a usage error). */
int cli_begin(const cli_command *cmd, int argc, char **argv, cli_args *args, int *exit_code);
/* An option the command cannot run without: EXIT_USAGE, after "give
 * WHAT", when it is absent; else EXIT_OK. */
int cli_require(const cli_args *args, const char *name, const char *what);
/* For each output option given: its extension is one the option writes,
 * and its folder exists and is writable (a symlink judged by the file it
 * names). Prints what is wrong, listing the formats the option writes,
 * and returns EXIT_USAGE; else EXIT_OK. */
int cli_check_outputs(const cli_args *args);
/* Removes an output a failed run wrote in place (not through the atomic
 * file): the file a symlink names, so the link stays and no partial file
 * is left behind it. */
void cli_remove_output(const char *path);
/* Whether path ends in "." + one of the endings of `writes` (case ignored). */
int cli_writes_extension(const char *writes, const char *path);

#endif
