/* The CLI's JSON under memory pressure (declared in cli/common.h): cJSON's
 * allocator, and adding items without losing them. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli/common.h"

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
