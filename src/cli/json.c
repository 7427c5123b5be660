/* The CLI's JSON under memory pressure (declared in cli/json.h): cJSON's
 * allocator, and adding items without losing them; and the device work a
 * command's call asked for, which every device command reports. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli/device_arg.h"
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

void cli_json_init(void)
{
    cJSON_InitHooks(&(cJSON_Hooks){json_malloc, free});
}

int cli_out_of_memory(void)
{
    return out_of_memory;
}

void cli_set_out_of_memory(void)
{
    out_of_memory = 1;
}

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
