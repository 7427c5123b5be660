/* The man page's lists of the JSON fields a command's --json takes from the
 * library's result tables (ptreg/results.h): `ptreg help --man-json
 * COMMAND`, which scripts/man-options.sh writes into docs/ptreg.1 and
 * tests/cli/man.sh holds in sync, so a field added to a table reaches the
 * man page as it reaches the JSON, under the same name and help. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "ptreg/results.h"

/* Which result tables each command's JSON holds, and where: key NULL, the
 * object's own fields; else under that key (an object, or an array of
 * them), which `what` describes. The one place that ties a command to its
 * tables for the man page. */
static const struct {
    const char *command, *key, *table, *what;
} command_results[] = {
    {"icp", NULL, "icp", NULL},
    {"icp", "index", "model_index_info", "the target's model index (null without one)"},
    {"register", NULL, "register", NULL},
    {"evaluate", NULL, "evaluation", NULL},
    {"multiway", NULL, "multiway", NULL},
    {"track", "frames", "track_frame", "an object per frame"},
    {"track", "summary", "track_summary", "the run's"},
    {"odometry", "frames", "odometry_frame", "an object per frame"},
    {"odometry", "summary", "odometry_summary", "the run's"},
    {"localize", "frames", "odometry_frame", "an object per frame"},
    {"localize", "summary", "odometry_summary", "the run's"},
    {"eval", NULL, "trajectory_eval", NULL},
    {"emicp", NULL, "emicp", NULL},
    {"cpd", NULL, "cpd", NULL},
    {"harris3d", NULL, "harris3d", NULL},
    {"lddmm", NULL, "lddmm", NULL},
    {"index", NULL, "model_index_info", NULL},
    {"devices", "devices", "device_info", "an object per device"},
    {"batch", NULL, "batch_stats", NULL},
};

/* A table's name in the page's source, for tests/cli/man.sh (that every
 * table reaches the page). */
static void table_comment(const ptreg_result_table *t) { printf(".\\\" result table \"%s\"\n", t->owner); }

static void show_item(const char *name, const char *unit, const char *help)
{
    printf(".TP\n.B ");
    cli_put_roff(name);
    printf("\n%s", help[0] == '.' || help[0] == '\'' ? "\\&" : "");
    cli_put_roff(help);
    if (unit[0]) {
        printf("; in ");
        cli_put_roff(unit);
    }
    putchar('\n');
}

/* Each field of t as a list item; a nested table's (RECORDS, OBJECT) as a
 * list under its key. */
static void show_table(const ptreg_result_table *t)
{
    table_comment(t);
    for (size_t k = 0; k < t->count; k++) {
        const ptreg_result_field *f = &t->fields[k];
        show_item(f->name, f->unit, f->help);
        if (f->type == PTREG_RESULT_RECORDS || f->type == PTREG_RESULT_OBJECT) {
            printf(".RS\n");
            show_table(f->table);
            printf(".RE\n");
        }
    }
}

/* The list sits under the paragraph that names --json: indented as its
 * text. */
void cli_print_man_json(const cli_command *cmd)
{
    int listed = 0;
    for (size_t k = 0; k < sizeof command_results / sizeof command_results[0]; k++) {
        const ptreg_result_table *t = ptreg_result_table_find(command_results[k].table);
        if (strcmp(command_results[k].command, cmd->name) || !t)
            continue;
        if (!listed++)
            printf(".RS\n");
        if (command_results[k].key) {
            show_item(command_results[k].key, "", command_results[k].what);
            printf(".RS\n");
            show_table(t);
            printf(".RE\n");
        } else
            show_table(t);
    }
    if (listed)
        printf(".RE\n");
}
