/* The CLI's side of a tuned kernel: the library chooses the variant from
 * the tuner's cache (ptreg_tune_variant, tune.h);
 * the commands give --no-tune, apply a CPU winner's thread count unless
 * --threads, count a failure for want of memory as the run's, and report
 * the choice in their JSON. */
#ifndef PTREG_CLI_TUNE_CHOICE_H
#define PTREG_CLI_TUNE_CHOICE_H

#include "cli/args.h"
#include "ptreg/tune.h"

/* The library's choice (ptreg_tune_X's status and choice): a CPU winner's
 * thread count, unless --threads was given; a failure for want of memory
 * counted as the run's (cli_set_out_of_memory); the choice as cli_tune_json. */
struct cJSON *cli_tune_adopt(const cli_args *a, ptreg_status status, const ptreg_tune_choice *choice);
/* {"source": ..., "size_class": ..., NAME: VALUE ...} for a command's JSON. */
struct cJSON *cli_tune_json(const ptreg_tune_space *space, const char *source, const char *cls, const double *point);

#endif
