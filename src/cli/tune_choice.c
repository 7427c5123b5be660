/* The CLI's side of a tuned kernel (tune_choice.h). */
#include "cli/tune_choice.h"

#include <string.h>

#include "cli/json.h"


struct cJSON *cli_tune_adopt(const cli_args *a, ptreg_status status, const ptreg_tune_choice *choice)
{
    if (status == PTREG_ERR_NOMEM)
        cli_set_out_of_memory();
    if (choice->threads > 0 && !cli_has(a, "threads"))
        ptreg_set_num_threads(choice->threads);
    return cli_tune_json(&choice->space, choice->source, choice->size_class, choice->point);
}

struct cJSON *cli_tune_json(const ptreg_tune_space *space, const char *source, const char *cls, const double *point)
{
    cJSON *v = cJSON_CreateObject();
    cli_json_string(v, "source", source);
    if (!strcmp(source, "tuned"))
        cli_json_string(v, "size_class", cls);
    for (int p = 0; p < space->param_count; p++)
        cli_json_number(v, space->params[p].name, point[p]);
    return v;
}
