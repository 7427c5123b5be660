/* What the registration commands (icp, emicp, register) share: their
 * outputs' options and writing, --repeat's runs, and the result they all
 * report in both forms. */
#ifndef PTREG_CLI_REGISTRATION_H
#define PTREG_CLI_REGISTRATION_H

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "ptreg/core.h"

/* The options both registration commands take, in their option tables. */
#define CLI_REGISTRATION_OUTPUTS                                                                                  \
    {"output", 'o', "FILE", "write SOURCE moved onto TARGET (format from the extension)", CLI_WRITES_CLOUD},      \
    {                                                                                                             \
        "transform-out", 't', "FILE", "write the 4x4 result (.txt: text, row-major; .json)", CLI_WRITES_TRANSFORM \
    }
#define CLI_REGISTRATION_COMMON                                                                           \
    {"init", 0, "FILE", "initial 4x4 transform of SOURCE (default identity)"},                            \
        {"truth", 0, "FILE", "known answer: report the rotation and translation error"}, CLI_OPT_THREADS, \
        CLI_OPT_REPEAT, CLI_DEVICE_OPTION, CLI_OPT_ASCII, CLI_OPT_JSON

/* Writes --output (SOURCE moved by T) and --transform-out (T): what both
 * registration commands write, only after they succeeded. */
int cli_write_registration(const char *cmd, const cli_args *a, const ptreg_cloud *src, const double T[16]);
/* The median of n > 0 values (the reported time of --repeat runs). */
double cli_median(const double *v, int n);

/* One run of --repeat: it keeps its result in ctx (releasing the previous
 * run's), and gives its time and the bytes every run must repeat exactly
 * (ptreg is deterministic: a difference is a bug, reported as one). */
typedef ptreg_status (*cli_run_fn)(void *ctx, double *time_ms, const void **bits, size_t *size, ptreg_error *err);
/* Runs fn `repeat` (>= 1) times, each run's time into times[]; *median:
 * their median. */
ptreg_status cli_repeat(int repeat, cli_run_fn fn, void *ctx, double *times, double *median, ptreg_error *err);

/* What every registration command (icp, emicp, register) reports, in both
 * forms; the command adds its own fields around these. */
typedef struct cli_result {
    const char *command, *source, *target;
    const double *transformation;
    double rmse, fitness;
    double pairs;   /* < 0: not counted (register) */
    int iterations; /* < 0: not an iterative method (no iterations, converged, stop_reason) */
    int converged;
    ptreg_stop_reason stop_reason;
    double time_ms;      /* the median over the runs */
    const double *times; /* each run's, when runs > 1 */
    int runs;
    const double *truth;            /* --truth, or NULL */
    const cli_distances *distances; /* --html: SOURCE's after the run (cli/report.h), or NULL */
} cli_result;

/* The cli_result of an iterative method's result r, whose fields ICP's and
 * EM-ICP's results name alike (a macro: the two are different structs). */
#define CLI_ITERATIVE_RESULT(command, source, target, r, times, runs, truth, distances)                             \
    {                                                                                                               \
        command, source, target, (r)->transformation, (r)->rmse, (r)->fitness, (double)(r)->pairs, (r)->iterations, \
            (r)->converged, (r)->stop_reason, (r)->time_ms, times, runs, truth, distances                           \
    }

/* A JSON object holding the shared fields; the command adds its own and
 * prints it with cli_result_json_print. */
cJSON *cli_result_json(const cli_result *r);
/* Adds the pose error against --truth, the threads and the version, then
 * prints and frees the object (cli_json_print's return). */
int cli_result_json_print(cJSON *o, const cli_result *r);
/* The human lines of an iterative method's end: "iterations N, stopped: why". */
void cli_result_print_iterations(const cli_result *r);
/* The human lines that close every registration: the matrix and the error
 * against --truth. */
void cli_result_print_pose(const cli_result *r);

/* The 4x4 matrix in the human output, each row after indent. */
void cli_print_matrix(const char *indent, const double T[16]);

#endif
