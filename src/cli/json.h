/* The commands' JSON: cJSON under an allocation check, matrices in the
 * world's frame, printing (or --html's sink), and the fields several
 * commands share (distances, device work, a model index). */
#ifndef PTREG_CLI_JSON_H
#define PTREG_CLI_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "ptreg/nn.h"

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
