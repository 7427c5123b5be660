/* --device and --threads, and the device work a command's call did
 * (reported in its JSON: cli/json.h, cli_json_device_work). */
#ifndef PTREG_CLI_DEVICE_ARG_H
#define PTREG_CLI_DEVICE_ARG_H

#include "cli/args.h"
#include "ptreg/core.h"
#include "ptreg/device.h"

/* --threads N; 0 keeps the default. */
int cli_apply_threads(const cli_args *args);
/* --device into *device (what was asked for: auto unless given); a name
 * that does not parse is a usage error (exit 2), printed here. */
int cli_device(const cli_args *args, ptreg_device *device);
/* The library's answer to where the command's options run (an algorithm's
 * ptreg_X_resolve_device: its status and err): a device that cannot run
 * them is a usage error (exit 2), printed here; else EXIT_OK. */
int cli_device_usable(const cli_args *args, ptreg_status resolved, const ptreg_error *err);
/* --device of a command whose every step runs on the CPU (named in
 * `operation`): auto, cpu and PTREG_DEVICE pass; a GPU named is exit 2. */
int cli_device_cpu_only(const cli_args *args, const char *operation);
/* The device work of a command's call (ptreg_device_stats): counted from
 * start to stop (cli_repeat counts each run, so the last one's is kept)
 * and, per iteration, between the first and the last progress step of the
 * run (cli_device_step, from the progress hook of commands whose steps are
 * iterations). cli_json_device_work adds device_launches, device_bytes_to,
 * device_bytes_from, device_allocs, device_graphs and device_per_iteration (the mean over
 * the run's steps) to a command's JSON; cli_json_print calls it, and it
 * adds nothing when no call was counted. */
void cli_device_call_start(void);
void cli_device_call_stop(void);
void cli_device_step(int step);

#endif
