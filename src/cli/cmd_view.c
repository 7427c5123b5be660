/* ptreg view: any clouds on one HTML page (report.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/report.h"

static const cli_option view_options[] = {
    {"output", 'o', "FILE.html", "the page to write (required)", CLI_WRITES_HTML},
    {"transform", 0, "FILE", "move the first cloud by this 4x4 transform (a registration's -t output)"},
    {"distance", 0, NULL, "colour the first cloud by its distance to the second's nearest point, with a colour bar"},
    {"html-max-points", 0, "N", "show at most N points in all, every cloud evenly thinned (default 2000000)"},
};

const cli_command cli_cmd_view = CLI_COMMAND(
    "view", "FILE... -o VIEW.html [options]",
    "Draw clouds on one self-contained HTML page: a 3-D view to orbit, zoom and toggle, offline.",
    "Each FILE (PLY, PCD, XYZ/CSV/TXT, VTK, LAS) is a layer in a colour of its own, in\n"
    "the frame of the first file read (far coordinates, such as UTM, are shown relative to\n"
    "its origin). The page needs no network: the viewer (three.js) is inside it. Beyond\n"
    "--html-max-points every cloud is thinned evenly by the same fraction, and the page says\n"
    "how many points it shows. The format of the page: docs/REPORT.md.\n\n"
    "Example: a registration's result over its target:\n"
    "  ptreg icp scan.ply model.ply -t result.txt\n"
    "  ptreg view scan.ply model.ply --transform result.txt --distance -o view.html",
    view_options, 1, CLI_MAX_POSITIONAL);

/* The first cloud, moved by --transform, and coloured by its distances to
 * the second with --distance. */
static int add_first(const cli_args *a, const ptreg_cloud *first, const ptreg_cloud *second, const char *name)
{
    double T[16];
    ptreg_transform_identity(T);
    int rc = cli_transform_option(a, "transform", T);
    if (rc)
        return rc;
    cli_transform_to_local(T, T);
    if (cli_has(a, "distance")) {
        cli_distances d;
        rc = cli_report_registration(first->xyz, first->n, second->xyz, second->n, NULL, T, &d);
        cli_distances_free(&d);
        return rc;
    }
    float *moved = cli_moved(first->xyz, first->n, T);
    ptreg_error err;
    ptreg_status st = moved ? ptreg_report_add_cloud(cli_report(), name, moved, first->n, cli_report_palette(0), &err)
                            : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    free(moved);
    return cli_report_check(st, &err);
}

static int add_clouds(const cli_args *a, ptreg_cloud *clouds)
{
    const int n = a->positional_count;
    int rc = EXIT_OK;
    for (int i = 0; !rc && i < n; i++)
        rc = cli_load_cloud("view", a->positional[i], &clouds[i], 0);
    rc = rc ? rc : add_first(a, &clouds[0], n > 1 ? &clouds[1] : NULL, a->positional[0]);
    for (int i = cli_has(a, "distance") ? 2 : 1; !rc && i < n; i++) {
        ptreg_error err;
        rc = cli_report_check(ptreg_report_add_cloud(cli_report(), a->positional[i], clouds[i].xyz, clouds[i].n,
                                                     cli_report_palette((size_t)i), &err),
                              &err);
    }
    return rc;
}

int cli_run_view(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_view, argc, argv, &a, &rc) ||
        (rc = cli_require(&a, "output", "the page to write: -o VIEW.html")))
        return rc;
    if (cli_has(&a, "distance") && a.positional_count < 2) {
        cli_error("view", "--distance colours the first cloud by its distance to the second: give two clouds");
        return EXIT_USAGE;
    }
    if ((rc = cli_report_open(&a, "view", cli_string(&a, "output", NULL), "html-max-points")))
        return rc;
    ptreg_cloud *clouds = calloc((size_t)a.positional_count, sizeof *clouds);
    if (!clouds) {
        cli_error("view", "out of memory");
        return EXIT_RUNTIME;
    }
    for (int i = 0; i < a.positional_count; i++)
        ptreg_cloud_init(&clouds[i]);
    rc = add_clouds(&a, clouds);
    for (int i = 0; i < a.positional_count; i++)
        ptreg_cloud_free(&clouds[i]);
    free(clouds);
    if (!rc)
        printf("ptreg view: %s\n", cli_string(&a, "output", NULL));
    return rc;
}
