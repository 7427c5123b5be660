/* What ptreg lddmm and ptreg warp share (cli/lddmm_device.c). */
#ifndef PTREG_CLI_LDDMM_DEVICE_H
#define PTREG_CLI_LDDMM_DEVICE_H

#include <cjson/cJSON.h>
#include "cli/args.h"
#include "ptreg/lddmm.h"

/* --device, which must run the options (EXIT_USAGE after printing why not). */
int cli_lddmm_read_device(const cli_args *args, ptreg_lddmm_options *options);
/* Where the options run (their device, resolved as the library does). */
ptreg_device cli_lddmm_device_of(const ptreg_lddmm_options *options);
/* On a GPU: the kernels' knobs from `ptreg tune --kernel lddmm --device`
 * for n landmarks (unless --no-tune), set on options: what ran, for the
 * JSON (cJSON_Delete); NULL on the CPU. */
cJSON *cli_lddmm_tuned_gpu(const cli_args *args, ptreg_lddmm_options *options, size_t n);

#endif
