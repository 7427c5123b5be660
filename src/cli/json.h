/* The commands' JSON: cJSON under an allocation check, matrices in the
 * world's frame, printing (or --html's sink), and the fields several
 * commands share (distances, device work, a model index). */
#ifndef PTREG_CLI_JSON_H
#define PTREG_CLI_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ptreg/nn.h"
#include "ptreg/results.h"

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

/* device_launches, device_bytes_to, ... of the counted call (cli/device_arg.h). */
void cli_json_device_work(cJSON *o);
/* A model index (.pti) as the JSON of info and the commands that read one. */
cJSON *cli_json_index(const ptreg_model_index *index);

#endif
