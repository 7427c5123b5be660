/* The CLI's side of a tuned kernel: the library chooses the variant from
 * the tuner's cache (ptreg_tune_choose, tune.h); the commands give --no-tune,
 * count a failure for want of memory as the run's, and report the choice
 * in their JSON. */
#ifndef PTREG_CLI_TUNE_CHOICE_H
#define PTREG_CLI_TUNE_CHOICE_H

#include "ptreg/tune.h"

/* For a command about to run a tunable kernel on `on` (the CPU or a
 * resolved GPU): that machine's winner for the space's kernel and the
 * problem's work, else the space's fallbacks, into point, unless no_tune.
 * Returns "tuned" (cls, the size class used, filled) or "default". */
const char *cli_tune_winner(int no_tune, const ptreg_tune_space *space, const ptreg_device *on, double work,
                            double *point, char *cls, size_t cls_size);
/* {"source": ..., "size_class": ..., NAME: VALUE ...} for a command's JSON. */
struct cJSON *cli_tune_json(const ptreg_tune_space *space, const char *source, const char *cls, const double *point);

#endif
