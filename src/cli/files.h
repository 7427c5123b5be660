/* Clouds, transforms and model indexes read and written with the CLI's
 * error conventions, in the command's frame (a first cloud far from zero
 * sets the origin), and exit codes from library statuses. */
#ifndef PTREG_CLI_FILES_H
#define PTREG_CLI_FILES_H

#include "cli/args.h"
#include "ptreg/core.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"

/* Library status -> exit code: bad input is 3, the caller's mistakes 2,
 * the rest (memory, write failures, algorithm failures) 4. */
int cli_exit_code(ptreg_status status, int reading);

/* Reads a cloud; on failure prints the library's message and returns 3.
 * Dropped non-finite points are reported on stderr unless quiet. */
int cli_load_cloud(const char *cmd, const char *path, ptreg_cloud *cloud, int quiet);
/* The same with read options (NULL: the defaults). */
int cli_load_cloud_with(const char *cmd, const char *path, const ptreg_read_options *ro, ptreg_cloud *cloud, int quiet);
/* cli_load_cloud for a cloud a command takes shape from (registration,
 * normals, descriptors): fewer than 3 points, or all of them one point,
 * is bad input (3) rather than a result without meaning. */
int cli_load_shape(const char *cmd, const char *path, ptreg_cloud *cloud, int quiet);
/* SOURCE and TARGET, the first two arguments, by cli_load_shape (shape
 * set) or cli_load_cloud, quiet as cli_quiet; on failure neither stays. */
int cli_load_pair(const char *cmd, const cli_args *a, int shape, ptreg_cloud *s, ptreg_cloud *t);
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
 * or v itself is (9 digits of 4,500,000.123 m would be a metre). */
void cli_format_coordinate(char buf[32], double v);
int cli_read_transform(const char *cmd, const char *path, double T[16]);
/* The transform file of option `name` into T when it is given (T kept
 * when not): cli_read_transform's return. */
int cli_transform_option(const cli_args *a, const char *name, double T[16]);
/* Writes a local transform (of the command's frame) as the world's. */
int cli_write_transform(const char *cmd, const char *path, const double T[16]);
/* Whether the command was asked to keep stderr to errors (--quiet, --json). */
int cli_quiet(const cli_args *args);

/* Model index files (.pti): recognised by extension; loading prints the
 * library's message and returns 3 for a bad file. */
int cli_is_index_path(const char *path);
int cli_load_index(const char *cmd, const char *path, ptreg_model_index **index);
void cli_print_index(const char *indent, const ptreg_model_index *index);
int cli_describe_index(const char *path, int json);

#endif
