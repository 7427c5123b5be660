/* The CLI's JSON (declared in cli/json.h): cJSON's allocator under memory
 * pressure, adding items without losing them, result structs through their
 * tables, matrices in the world's frame, printing (or --html's sink); and
 * the device work a command's call asked for, which every device command
 * reports. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/device.h"

/* cJSON drops an item it cannot allocate without a word (cJSON_Add*
 * return values go unread): its allocations come through here, and one
 * failure makes every later JSON document of the process a failure, and
 * the run's exit 4 (main). */
static int out_of_memory;

static void *json_malloc(size_t size)
{
    void *p = malloc(size);
    if (!p)
        out_of_memory = 1;
    return p;
}

void cli_json_init(void) { cJSON_InitHooks(&(cJSON_Hooks){json_malloc, free}); }

int cli_out_of_memory(void) { return out_of_memory; }

void cli_set_out_of_memory(void) { out_of_memory = 1; }

/* cJSON leaves an item it could not add (its key's copy failed, or the
 * parent is NULL because creating it failed) to the caller. */
void cli_json_put(cJSON *object, const char *name, cJSON *item)
{
    if (!cJSON_AddItemToObject(object, name, item))
        cJSON_Delete(item);
}

void cli_json_push(cJSON *array, cJSON *item)
{
    if (!cJSON_AddItemToArray(array, item))
        cJSON_Delete(item);
}

/* ---- the keys a command adds that are no result struct's field ---- */

/* Every other file adds through these, so a command's JSON is written in
 * this file: its struct by cli_json_result, the rest by name here. */
cJSON *cli_json_number(cJSON *o, const char *name, double value) { return cJSON_AddNumberToObject(o, name, value); }
cJSON *cli_json_string(cJSON *o, const char *name, const char *value)
{
    return cJSON_AddStringToObject(o, name, value);
}
cJSON *cli_json_bool(cJSON *o, const char *name, int value) { return cJSON_AddBoolToObject(o, name, value); }
cJSON *cli_json_null(cJSON *o, const char *name) { return cJSON_AddNullToObject(o, name); }
cJSON *cli_json_true(cJSON *o, const char *name) { return cJSON_AddTrueToObject(o, name); }
cJSON *cli_json_false(cJSON *o, const char *name) { return cJSON_AddFalseToObject(o, name); }
cJSON *cli_json_object(cJSON *o, const char *name) { return cJSON_AddObjectToObject(o, name); }
cJSON *cli_json_array(cJSON *o, const char *name) { return cJSON_AddArrayToObject(o, name); }

/* ---- a result struct through its table (ptreg/results.h) ---- */

static const void *field_at(const void *s, const ptreg_result_field *f) { return (const char *)s + f->offset; }

static cJSON *json_u64s(const uint64_t *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; a && k < n; k++)
        cli_json_push(a, cJSON_CreateNumber((double)v[k]));
    return a;
}

/* The field's JSON value, or NULL when the table leaves it out (a NULL
 * RECORDS pointer). */
static cJSON *json_field(const ptreg_result_field *f, const void *s)
{
    const void *p = field_at(s, f);
    switch (f->type) {
    case PTREG_RESULT_INT: return cJSON_CreateNumber(*(const int *)p);
    case PTREG_RESULT_DOUBLE: return cJSON_CreateNumber(*(const double *)p);
    case PTREG_RESULT_FLOAT: return cJSON_CreateNumber(*(const float *)p);
    case PTREG_RESULT_SIZE: return cJSON_CreateNumber((double)*(const size_t *)p);
    case PTREG_RESULT_U64: return cJSON_CreateNumber((double)*(const uint64_t *)p);
    case PTREG_RESULT_U32: return cJSON_CreateNumber(*(const uint32_t *)p);
    case PTREG_RESULT_BOOL: return cJSON_CreateBool(*(const int *)p);
    case PTREG_RESULT_ENUM: return cJSON_CreateString(f->enum_name(*(const int *)p));
    case PTREG_RESULT_TEXT: return cJSON_CreateString((const char *)p);
    case PTREG_RESULT_STRING: {
        const char *text = *(const char *const *)p;
        return cJSON_CreateString(text ? text : "");
    }
    case PTREG_RESULT_DEVICE: {
        char name[32];
        return cJSON_CreateString(ptreg_device_format((const ptreg_device *)p, name, sizeof name));
    }
    case PTREG_RESULT_DOUBLES: return cJSON_CreateDoubleArray((const double *)p, (int)f->count);
    case PTREG_RESULT_TRANSFORM: return cli_json_world_matrix((const double *)p);
    case PTREG_RESULT_U64S: return json_u64s((const uint64_t *)p, f->count);
    case PTREG_RESULT_SERIES: return cJSON_CreateDoubleArray(*(const double *const *)p, (int)f->length_of(s));
    case PTREG_RESULT_RECORDS: {
        const char *records = *(const char *const *)p;
        if (!records)
            return NULL;
        cJSON *a = cJSON_CreateArray();
        for (size_t k = 0, n = f->length_of(s); a && k < n; k++) {
            cJSON *r = cJSON_CreateObject();
            cli_json_result(r, f->table, records + k * f->table->size);
            cli_json_push(a, r);
        }
        return a;
    }
    case PTREG_RESULT_DERIVED: return cJSON_CreateNumber(f->value_of(s));
    case PTREG_RESULT_OBJECT: {
        const void *object = *(const void *const *)p;
        cJSON *r = object ? cJSON_CreateObject() : NULL;
        if (r)
            cli_json_result(r, f->table, object);
        return r;
    }
    }
    return NULL;
}

void cli_json_result(cJSON *o, const ptreg_result_table *table, const void *s)
{
    if (!o)
        return;
    for (size_t k = 0; k < table->count; k++) {
        const ptreg_result_field *f = &table->fields[k];
        if (cJSON_GetObjectItemCaseSensitive(o, f->name))
            continue;
        cJSON *v = json_field(f, s);
        if (v)
            cli_json_put(o, f->name, v);
    }
}

/* ---- device work ---- */

/* The command's counted call (the last run of --repeat) and its iteration
 * window: the counts at the first and the last progress step of the run. */
static struct {
    int counted;
    ptreg_device_stats before, call;
    int first_step, last_step;
    ptreg_device_stats at_first, at_last;
} device_work;

void cli_device_call_start(void)
{
    ptreg_device_stats_get(&device_work.before);
    device_work.first_step = device_work.last_step = -1;
}

void cli_device_call_stop(void)
{
    ptreg_device_stats_since(&device_work.before, &device_work.call);
    device_work.counted = 1;
}

void cli_device_step(int step)
{
    if (device_work.first_step < 0) { /* the counted run's first step (cli_device_call_start resets it) */
        device_work.first_step = step;
        ptreg_device_stats_get(&device_work.at_first);
    }
    device_work.last_step = step;
    ptreg_device_stats_get(&device_work.at_last);
}

static cJSON *per_iteration(void)
{
    const double steps = device_work.last_step - device_work.first_step;
    const ptreg_device_stats *a = &device_work.at_first, *b = &device_work.at_last;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "launches", (double)(b->launches - a->launches) / steps);
    cJSON_AddNumberToObject(o, "bytes_to", (double)(b->bytes_to - a->bytes_to) / steps);
    cJSON_AddNumberToObject(o, "bytes_from", (double)(b->bytes_from - a->bytes_from) / steps);
    cJSON_AddNumberToObject(o, "allocs", (double)(b->allocs - a->allocs) / steps);
    cJSON_AddNumberToObject(o, "graphs", (double)(b->graphs - a->graphs) / steps);
    return o;
}

void cli_json_device_work(cJSON *o)
{
    if (!device_work.counted)
        return;
    const ptreg_device_stats *c = &device_work.call;
    cJSON_AddNumberToObject(o, "device_launches", (double)c->launches);
    cJSON_AddNumberToObject(o, "device_bytes_to", (double)c->bytes_to);
    cJSON_AddNumberToObject(o, "device_bytes_from", (double)c->bytes_from);
    cJSON_AddNumberToObject(o, "device_allocs", (double)c->allocs);
    cJSON_AddNumberToObject(o, "device_graphs", (double)c->graphs);
    if (device_work.last_step > device_work.first_step)
        cli_json_put(o, "device_per_iteration", per_iteration());
}

cJSON *cli_json_matrix(const double T[16])
{
    cJSON *rows = cJSON_CreateArray();
    for (int r = 0; r < 4; r++)
        cli_json_push(rows, cJSON_CreateDoubleArray(T + 4 * r, 4));
    return rows;
}

cJSON *cli_json_world_matrix(const double local[16])
{
    double world[16];
    cli_transform_to_world(local, world);
    return cli_json_matrix(world);
}

static cli_json_sink json_sink;

void cli_json_set_sink(cli_json_sink sink) { json_sink = sink; }

void cli_json_distances(cJSON *o, const cli_distances *d)
{
    if (!d || !d->values)
        return;
    cJSON *j = cJSON_CreateObject();
    cli_json_number(j, "min", d->min);
    cli_json_number(j, "median", d->median);
    cli_json_number(j, "mean", d->mean);
    cli_json_number(j, "max", d->max);
    cli_json_put(o, "distance_to_target", j);
}

int cli_json_print(cJSON *obj)
{
    cli_json_device_work(obj);
    char *text = cJSON_Print(obj);
    cJSON_Delete(obj);
    if (!text || cli_out_of_memory()) {
        free(text);
        fprintf(stderr, "ptreg: out of memory for the JSON result\n");
        return EXIT_RUNTIME;
    }
    if (json_sink) {
        int rc = json_sink(text);
        free(text);
        return rc;
    }
    int ok = puts(text) >= 0 && fflush(stdout) == 0;
    free(text);
    if (!ok)
        fprintf(stderr, "ptreg: cannot write the JSON result to stdout: %s\n", strerror(errno));
    return ok ? EXIT_OK : EXIT_RUNTIME;
}
