/* What the commands share: loading and writing clouds with the CLI's error
 * conventions, exit codes from library statuses, JSON helpers. */
#ifndef PTREG_CLI_COMMON_H
#define PTREG_CLI_COMMON_H

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/outputs.h"
#include "ptreg/batch.h"
#include "ptreg/core.h"
#include "ptreg/device.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"
#include "ptreg/results.h"
#include "ptreg/tune.h"

/* Library status -> exit code: bad input is 3, the caller's mistakes 2,
 * the rest (memory, write failures, algorithm failures) 4. */
int cli_exit_code(ptreg_status status, int reading);

/* Reads a cloud; on failure prints the library's message and returns 3.
 * Dropped non-finite points are reported on stderr unless quiet. */
int cli_load_cloud(const char *cmd, const char *path, ptreg_cloud *cloud, int quiet);
/* The same with read options (NULL: the defaults). */
int cli_load_cloud_with(const char *cmd, const char *path, const ptreg_read_options *ro, ptreg_cloud *cloud,
                        int quiet);
/* cli_load_cloud for a cloud a command takes shape from (registration,
 * normals, descriptors): fewer than 3 points, or all of them one point,
 * is bad input (3) rather than a result without meaning. */
int cli_load_shape(const char *cmd, const char *path, ptreg_cloud *cloud, int quiet);
int cli_write_cloud(const char *cmd, const char *path, const ptreg_cloud *cloud, int ascii);
/* A command's clouds share one frame: the first cloud read sets its origin
 * (far from zero for georeferenced data), each later one is re-expressed
 * relative to it (3 when it cannot be). cli_load_cloud does this; a
 * command reading clouds itself calls it. Transforms read from files are
 * world transforms: commands turn them local after reading their clouds;
 * cli_write_transform, cli_result_json and cli_result_print_pose turn a
 * local result back into the world's. */
int cli_join_frame(const char *cmd, const char *path, ptreg_cloud *cloud);
/* A model index's points are float32 world coordinates: the frame must be
 * at zero (set so when no cloud was read yet); 3 with a message naming
 * `what` when the clouds read before it are far from zero. */
int cli_frame_at_zero(const char *cmd, const char *what);
void cli_transform_to_local(const double world[16], double local[16]);
void cli_transform_to_world(const double local[16], double world[16]);
/* A world coordinate or translation as text: %.9g in a frame at zero, the
 * shortest text that reads back to the same double when the frame is far
 * (9 digits of 4,500,000.123 m would be a metre). */
void cli_format_coordinate(char buf[32], double v);
int cli_read_transform(const char *cmd, const char *path, double T[16]);
/* Writes a local transform (of the command's frame) as the world's. */
int cli_write_transform(const char *cmd, const char *path, const double T[16]);
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
/* Whether the command was asked to keep stderr to errors (--quiet, --json). */
int cli_quiet(const cli_args *args);

/* Routes cJSON's allocations through a check (main calls it first). */
void cli_json_init(void);
/* Whether cJSON, or a step that carries on without what it could not
 * allocate (the tuner's cache), ever failed to allocate: a document built
 * since may lack items, and a run that ends well still exits 4 (main). */
int cli_out_of_memory(void);
void cli_set_out_of_memory(void);
/* cJSON_AddItemToObject / ToArray that free the item when it cannot be added. */
void cli_json_put(cJSON *object, const char *name, cJSON *item);
void cli_json_push(cJSON *array, cJSON *item);
/* The keys a command adds that are no result struct's field (the run's
 * inputs, its options, derived rates): cJSON_Add*ToObject's, kept in json.c. */
cJSON *cli_json_number(cJSON *o, const char *name, double value);
cJSON *cli_json_string(cJSON *o, const char *name, const char *value);
cJSON *cli_json_bool(cJSON *o, const char *name, int value);
cJSON *cli_json_null(cJSON *o, const char *name);
cJSON *cli_json_true(cJSON *o, const char *name);
cJSON *cli_json_false(cJSON *o, const char *name);
cJSON *cli_json_object(cJSON *o, const char *name);
cJSON *cli_json_array(cJSON *o, const char *name);
/* Adds every field of the result struct s that table names (ptreg/results.h),
 * under the table's keys, except those o holds already: a command writes a
 * field its own way first (the world transform, the median time over
 * --repeat) and the table adds the rest. */
void cli_json_result(cJSON *o, const ptreg_result_table *table, const void *s);
cJSON *cli_json_matrix(const double T[16]);
/* The same for a local transform of the command's frame, as the world's. */
cJSON *cli_json_world_matrix(const double local[16]);
/* Prints the object to stdout and frees it; returns EXIT_RUNTIME when
 * printing fails. With a sink set, the text goes to it instead (its
 * return: the exit code). */
int cli_json_print(cJSON *obj);
typedef int (*cli_json_sink)(const char *text);
/* --html's report takes the JSON (cli/report.c); NULL: stdout again. */
void cli_json_set_sink(cli_json_sink sink);

/* Each point's distance to TARGET's nearest point: what a registration's
 * page colours SOURCE by (cli/report.h), and the JSON's distance_to_target. */
typedef struct cli_distances {
    float *values;
    size_t n;
    double min, median, mean, max;
} cli_distances;

/* Adds distance_to_target (min, median, mean, max) when d holds distances. */
void cli_json_distances(cJSON *o, const cli_distances *d);

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
void cli_json_device_work(cJSON *o);

void cli_print_matrix(const char *indent, const double T[16]);

/* Model index files (.pti): recognised by extension; loading prints the
 * library's message and returns 3 for a bad file. */
int cli_is_index_path(const char *path);
int cli_load_index(const char *cmd, const char *path, ptreg_model_index **index);
cJSON *cli_json_index(const ptreg_model_index *index);
void cli_print_index(const char *indent, const ptreg_model_index *index);
int cli_describe_index(const char *path, int json);

extern const cli_command cli_cmd_icp, cli_cmd_emicp, cli_cmd_harris3d, cli_cmd_normals, cli_cmd_pfh, cli_cmd_fpfh,
    cli_cmd_lddmm, cli_cmd_warp, cli_cmd_index, cli_cmd_synth, cli_cmd_convert, cli_cmd_info, cli_cmd_devices,
    cli_cmd_batch, cli_cmd_tune, cli_cmd_register, cli_cmd_multiway, cli_cmd_track, cli_cmd_view;
/* cmd_tools.c: what Open3D's and PCL's users reach for (issue 47). */
extern const cli_command cli_cmd_filter, cli_cmd_evaluate, cli_cmd_correspond;
/* Options many commands take, defined once. */
#define CLI_OPT_THREADS {"threads", 0, "N", "threads (default: all cores, or env PTREG_NUM_THREADS)"}
#define CLI_OPT_REPEAT                                                                              \
    {"repeat", 0, "N", "run N times in one process (each run must give the same bits) and report "  \
                       "the median time (default 1)"}
#define CLI_OPT_JSON {"json", 0, NULL, "print the result as one JSON object on stdout"}
#define CLI_OPT_ASCII {"ascii", 0, NULL, "write text PLY/PCD (default binary)"}
/* --quiet, on every command that computes. */
#define CLI_OPT_QUIET                                                                                   \
    {"quiet", 'q', NULL, "no progress line and no notes on stderr (errors are still printed; the "     \
                         "progress line shows only on a terminal, never with --json)"}
/* --device, on every command that computes. */
#define CLI_DEVICE_OPTION                                                                      \
    {"device", 0, "DEV", "auto, cpu, cuda[:N] or opencl[:N] (default auto: env PTREG_DEVICE, "  \
                         "else a GPU where the command has a GPU path, else the CPU; see "     \
                         "'ptreg devices')"}
/* The options both registration commands take, in their option tables. */
#define CLI_REGISTRATION_OUTPUTS                                                               \
    {"output", 'o', "FILE", "write SOURCE moved onto TARGET (format from the extension)",      \
     CLI_WRITES_CLOUD},                                                                        \
    {"transform-out", 't', "FILE", "write the 4x4 result (.txt: text, row-major; .json)",       \
     CLI_WRITES_TRANSFORM}
#define CLI_REGISTRATION_COMMON                                                                \
    {"init", 0, "FILE", "initial 4x4 transform of SOURCE (default identity)"},                 \
    {"truth", 0, "FILE", "known answer: report the rotation and translation error"},           \
    CLI_OPT_THREADS,                                                                           \
    CLI_OPT_REPEAT,                                                                            \
    CLI_DEVICE_OPTION,                                                                         \
    CLI_OPT_ASCII,                                                                             \
    CLI_OPT_JSON

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
    double pairs;          /* < 0: not counted (register) */
    int iterations;        /* < 0: not an iterative method (no iterations, converged, stop_reason) */
    int converged;
    ptreg_stop_reason stop_reason;
    double time_ms;        /* the median over the runs */
    const double *times;   /* each run's, when runs > 1 */
    int runs;
    const double *truth;   /* --truth, or NULL */
    const cli_distances *distances; /* --html: SOURCE's after the run (cli/report.h), or NULL */
} cli_result;

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

int cli_run_icp(int argc, char **argv);
int cli_run_emicp(int argc, char **argv);
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
int cli_run_convert(int argc, char **argv);
int cli_run_register(int argc, char **argv);
int cli_run_multiway(int argc, char **argv);
int cli_run_track(int argc, char **argv);
int cli_run_info(int argc, char **argv);
int cli_run_view(int argc, char **argv);
int cli_run_devices(int argc, char **argv);
int cli_run_tune(int argc, char **argv);
int cli_run_batch(int argc, char **argv);
int cli_run_filter(int argc, char **argv);
int cli_run_evaluate(int argc, char **argv);
int cli_run_correspond(int argc, char **argv);

#endif
