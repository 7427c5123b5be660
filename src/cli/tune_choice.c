/* The CLI's side of a tuned kernel (tune_choice.h). */
#include "cli/tune_choice.h"

#include <string.h>

#include "cli/json.h"


struct cJSON *cli_tune_adopt(const cli_args *a, const ptreg_tune_choice *choice)
{
    if (choice->threads > 0 && !cli_has(a, "threads"))
        ptreg_set_num_threads(choice->threads);
    return cli_tune_json(&choice->space, choice->source, choice->size_class, choice->point);
}

struct cJSON *cli_tune_json(const ptreg_tune_space *space, const char *source, const char *cls, const double *point)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "source", source);
    if (!strcmp(source, "tuned"))
        cJSON_AddStringToObject(v, "size_class", cls);
    for (int p = 0; p < space->param_count; p++)
        cJSON_AddNumberToObject(v, space->params[p].name, point[p]);
    return v;
}
