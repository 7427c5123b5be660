/* The CLI's side of a tuned kernel (tune_choice.h). */
#include "cli/tune_choice.h"

#include <stdio.h>
#include <string.h>

#include "cli/common.h"

const char *cli_tune_winner(int no_tune, const ptreg_tune_space *space, const ptreg_device *on, double work,
                            double *point, char *cls, size_t cls_size)
{
    ptreg_tune_choice choice;
    ptreg_error err;
    if (no_tune) {
        for (int p = 0; p < space->param_count; p++)
            point[p] = space->params[p].fallback;
        return "default";
    }
    if (ptreg_tune_choose(space, on, work, &choice, &err) == PTREG_ERR_NOMEM)
        cli_set_out_of_memory();
    memcpy(point, choice.point, (size_t)space->param_count * sizeof *point);
    snprintf(cls, cls_size, "%s", choice.size_class);
    return choice.source;
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
