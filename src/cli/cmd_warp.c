/* ptreg warp: carry other points (a mesh's vertices, a cloud) along an
 * lddmm result's flow. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/lddmm_device.h"
#include "cli/report.h"
#include "ptreg/lddmm.h"

static const cli_option warp_options[] = {
    {"output", 'o', "FILE", "the moved points (a cloud: .ply, .pcd, .xyz/.csv; normals are not carried)",
     CLI_WRITES_CLOUD},
    {"precision", 0, "P", "fp32 (default) or fp64"},
    CLI_OPT_ASCII,
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    {"no-tune", 0, NULL, "on a GPU: ignore `ptreg tune --kernel lddmm --device`'s winner"},
    CLI_OPT_HTML,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_warp = CLI_COMMAND(
    "warp", "RESULT POINTS -o OUT [options]",
    "Carry points (a mesh's vertices, a cloud) along the flow of an lddmm RESULT.",
    "Each point x moves by dx/dt = sum_l K(x, q_l(t)) p_l(t) with the landmarks' trajectory,\n"
    "the result's sigma, time points and integrator. On a GPU (--device) the landmarks'\n"
    "trajectory and the points' steps run on the device.\n\n"
    "--html FILE: the result's landmarks, the points before and after, the paths of up to\n"
    "2000 of them (evenly chosen; fewer over more than 200 time points) along the flow, and\n"
    "the JSON's numbers.",
    warp_options, 2, 2);

/* warp's --precision: the lddmm table's. */
static int read_warp_precision(const cli_args *a, ptreg_lddmm_options *o)
{
    static const char name[] = "precision";
    const char *v = cli_string(a, name, NULL);
    const ptreg_option *row = ptreg_option_find(ptreg_option_table_find("lddmm"), name, sizeof name - 1);
    ptreg_error err;
    if (!v || !ptreg_option_parse(row, o, v, &err))
        return EXIT_OK;
    cli_error("warp", "--precision: %s", err.message);
    return EXIT_USAGE;
}

/* With --html: the landmarks, the points before and after, and the paths
 * of some of them (ptreg_report_add_warp). */
static int report_warp(const ptreg_lddmm_model *model, const ptreg_lddmm_options *o, const ptreg_cloud *before,
                       const double *after)
{
    ptreg_report *r = cli_report();
    ptreg_error err;
    return r ? cli_report_check(ptreg_report_add_warp(r, model, o, before, after, &err), &err) : EXIT_OK;
}

int cli_run_warp(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_warp, argc, argv, &a, &rc) || (rc = cli_require(&a, "output", "the output file: -o OUT")))
        return rc;
    ptreg_lddmm_options o;
    ptreg_lddmm_options_default(&o);
    if ((rc = read_warp_precision(&a, &o)) || (rc = cli_apply_threads(&a)) || (rc = cli_lddmm_read_device(&a, &o)) ||
        (rc = cli_report_begin(&a, "warp")))
        return rc;
    ptreg_lddmm_model model;
    ptreg_error err;
    ptreg_status st = ptreg_lddmm_model_read(a.positional[0], &model, &err);
    if (st) {
        cli_error("warp", "%s", err.message);
        return cli_exit_code(st, 1);
    }
    o.sigma = model.sigma;
    o.time_points = model.time_points;
    o.integrator = model.integrator;
    cJSON *variant = cli_lddmm_tuned_gpu(&a, &o, model.n);
    ptreg_cloud c;
    if ((rc = cli_load_cloud("warp", a.positional[1], &c, cli_quiet(&a)))) {
        cJSON_Delete(variant);
        ptreg_lddmm_model_free(&model);
        return rc;
    }
    double *x = malloc(3 * c.n * sizeof *x);
    double t0 = ptreg_time_ms();
    st = x ? PTREG_OK : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; x && i < 3 * c.n; i++)
        x[i] = c.xyz[i];
    cli_device_call_start();
    if (!st)
        st = ptreg_lddmm_warp(model.q0, model.p0, model.n, &o, x, c.n, x, &err);
    cli_device_call_stop();
    double ms = ptreg_time_ms() - t0;
    if (st) {
        cli_error("warp", "%s", err.message);
        rc = cli_exit_code(st, 0);
    } else {
        rc = report_warp(&model, &o, &c, x); /* before c's points become the moved ones */
        for (size_t i = 0; i < 3 * c.n; i++)
            c.xyz[i] = (float)x[i];
        free(c.normals);
        c.normals = NULL;
        rc = rc ? rc : cli_write_cloud("warp", cli_string(&a, "output", NULL), &c, cli_has(&a, "ascii"));
    }
    const ptreg_device on = cli_lddmm_device_of(&o);
    char device[32];
    ptreg_device_format(&on, device, sizeof device);
    if (!rc && (cli_has(&a, "json") || cli_report())) { /* with --html the page holds the JSON */
        cJSON *j = cJSON_CreateObject();
        cli_json_string(j, "command", "warp");
        cli_json_number(j, "points", (double)c.n);
        cli_json_number(j, "landmarks", (double)model.n);
        cli_json_number(j, "time_ms", ms);
        cli_json_string(j, "device", device);
        if (variant)
            cli_json_put(j, "variant", cJSON_Duplicate(variant, 1));
        rc = cli_json_print(j);
    }
    if (!rc && !cli_has(&a, "json")) {
        printf("ptreg warp: %zu points along %zu landmarks' flow (sigma %g, %d time points), %.1f ms on %s\n", c.n,
               model.n, model.sigma, model.time_points, ms, device);
    }
    cJSON_Delete(variant);
    free(x);
    ptreg_cloud_free(&c);
    ptreg_lddmm_model_free(&model);
    return rc;
}
