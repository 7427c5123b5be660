/* The commands (main.c's table) and the options many of them take,
 * defined once. Every command begins with cli_begin (cli/outputs.h). */
#ifndef PTREG_CLI_COMMANDS_H
#define PTREG_CLI_COMMANDS_H

#include "cli/args.h"
#include "cli/outputs.h"

extern const cli_command cli_cmd_icp, cli_cmd_emicp, cli_cmd_harris3d, cli_cmd_normals, cli_cmd_pfh, cli_cmd_fpfh,
    cli_cmd_lddmm, cli_cmd_warp, cli_cmd_index, cli_cmd_synth, cli_cmd_convert, cli_cmd_info, cli_cmd_devices,
    cli_cmd_batch, cli_cmd_tune, cli_cmd_register, cli_cmd_multiway, cli_cmd_track, cli_cmd_eval, cli_cmd_view,
    cli_cmd_cpd, cli_cmd_odometry, cli_cmd_localize;
/* What Open3D's and PCL's users reach for beside registration (issue 47). */
extern const cli_command cli_cmd_filter, cli_cmd_evaluate, cli_cmd_correspond;
/* Options many commands take, defined once. */
#define CLI_OPT_THREADS                                                             \
    {                                                                               \
        "threads", 0, "N", "threads (default: all cores, or env PTREG_NUM_THREADS)" \
    }
#define CLI_OPT_REPEAT                                                                  \
    {                                                                                   \
        "repeat", 0, "N",                                                               \
            "run N times in one process (each run must give the same bits) and report " \
            "the median time (default 1)"                                               \
    }
#define CLI_OPT_JSON                                                     \
    {                                                                    \
        "json", 0, NULL, "print the result as one JSON object on stdout" \
    }
#define CLI_OPT_ASCII                                           \
    {                                                           \
        "ascii", 0, NULL, "write text PLY/PCD (default binary)" \
    }
/* --quiet, on every command that computes. */
#define CLI_OPT_QUIET                                                                 \
    {                                                                                 \
        "quiet", 'q', NULL,                                                           \
            "no progress line and no notes on stderr (errors are still printed; the " \
            "progress line shows only on a terminal, never with --json)"              \
    }
/* --device, on every command that computes. */
#define CLI_DEVICE_OPTION                                                         \
    {                                                                             \
        "device", 0, "DEV",                                                       \
            "auto, cpu, cuda[:N] or opencl[:N] (default auto: env PTREG_DEVICE, " \
            "else a GPU where the command has a GPU path, else the CPU; see "     \
            "'ptreg devices')"                                                    \
    }

int cli_run_icp(int argc, char **argv);
int cli_run_emicp(int argc, char **argv);
int cli_run_cpd(int argc, char **argv);
int cli_run_harris3d(int argc, char **argv);
int cli_run_normals(int argc, char **argv);
int cli_run_pfh(int argc, char **argv);
int cli_run_fpfh(int argc, char **argv);
int cli_run_lddmm(int argc, char **argv);
int cli_run_warp(int argc, char **argv);
int cli_run_index(int argc, char **argv);
int cli_run_synth(int argc, char **argv);
/* ptreg synth --shape apt-polycrystal (cmd_synth_apt.c), on parsed options. */
int cli_synth_apt(const cli_args *args);
/* ptreg synth --lidar-sequence N (cmd_synth_lidar.c), on parsed options. */
int cli_synth_lidar(const cli_args *args);
int cli_run_convert(int argc, char **argv);
int cli_run_register(int argc, char **argv);
int cli_run_multiway(int argc, char **argv);
int cli_run_track(int argc, char **argv);
int cli_run_odometry(int argc, char **argv);
int cli_run_localize(int argc, char **argv);
int cli_run_eval(int argc, char **argv);
int cli_run_info(int argc, char **argv);
int cli_run_view(int argc, char **argv);
int cli_run_devices(int argc, char **argv);
int cli_run_tune(int argc, char **argv);
int cli_run_batch(int argc, char **argv);
int cli_run_filter(int argc, char **argv);
int cli_run_evaluate(int argc, char **argv);
int cli_run_correspond(int argc, char **argv);

#endif
