/* ptreg evaluate: a given pose's fitness, inlier RMSE and pairs, as
 * Open3D's evaluate_registration; global.h does the work. */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "ptreg/global.h"
#include "ptreg/io.h"

static const cli_option evaluate_options[] = {
    {"transform", 0, "FILE", "the pose of SOURCE to judge, a 4x4 transform (default identity)"},
    {"max-dist", 0, "D",
     "a source point is paired with its nearest target point at distance < D (Open3D's "
     "max_correspondence_distance; required)"},
    {"correspondences", 0, "FILE", "write the pairs, \"SOURCE TARGET\" point indices a line, in source order", "txt"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_evaluate = CLI_COMMAND(
    "evaluate", "SOURCE TARGET --max-dist D [--transform T.txt] [options]",
    "Judge a pose: fitness, inlier RMSE and correspondences, as Open3D's evaluate_registration.",
    "Each SOURCE point, moved by the transform, is paired with its nearest TARGET point when\n"
    "that lies at distance < D. fitness = pairs / SOURCE's points; inlier_rmse = the root of\n"
    "the pairs' mean squared distance (0 without pairs): Open3D's definitions, in double.\n"
    "The same numbers for any thread count.\n\n"
    "Example:\n"
    "  ptreg evaluate scan.ply model.ply --transform T.txt --max-dist 0.02 --json\n",
    evaluate_options, 2, 2);

static int print_evaluation(const cli_args *a, double max_dist, size_t ns, const ptreg_evaluation *e)
{
    if (!cli_has(a, "json")) {
        printf("ptreg evaluate: %s onto %s, pairs within %g\n", a->positional[0], a->positional[1], max_dist);
        printf("  fitness %.6f (%zu of %zu points), inlier rmse %.9g\n", e->fitness, e->inliers, ns, e->inlier_rmse);
        return EXIT_OK;
    }
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "command", "evaluate");
    cli_json_string(o, "source", a->positional[0]);
    cli_json_string(o, "target", a->positional[1]);
    cli_json_number(o, "max_dist", max_dist);
    cli_json_number(o, "source_points", (double)ns);
    cli_json_result(o, ptreg_result_table_find("evaluation"), e);
    cli_json_number(o, "threads", ptreg_get_num_threads());
    return cli_json_print(o);
}

int cli_run_evaluate(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_evaluate, argc, argv, &a, &rc) ||
        (rc = cli_require(&a, "max-dist", "the pairing distance: --max-dist D")))
        return rc;
    double max_dist = 0.0, T[16];
    ptreg_transform_identity(T);
    if ((rc = cli_double(&a, "max-dist", 1e-300, 1e300, &max_dist)) || (rc = cli_apply_threads(&a)) ||
        (rc = cli_device_cpu_only(&a, "evaluate")) || (rc = cli_transform_option(&a, "transform", T)))
        return rc;
    ptreg_cloud s, t;
    if ((rc = cli_load_pair("evaluate", &a, 0, &s, &t)))
        return rc;
    cli_transform_to_local(T, T);
    ptreg_evaluation e;
    ptreg_matches m = {0};
    ptreg_error err;
    const int want_pairs = cli_has(&a, "correspondences");
    ptreg_status st = ptreg_evaluate_registration(s.xyz, s.n, t.xyz, t.n, T, max_dist, &e, want_pairs ? &m : NULL,
                                                  &err);
    if (!st && want_pairs)
        st = ptreg_correspondences_write(cli_string(&a, "correspondences", NULL), m.source, m.target, m.count, &err);
    if (st) {
        cli_error("evaluate", "%s", err.message);
        rc = st == PTREG_ERR_ARG ? EXIT_USAGE : cli_exit_code(st, 0);
    }
    rc = rc ? rc : print_evaluation(&a, max_dist, s.n, &e);
    ptreg_matches_free(&m);
    ptreg_cloud_free(&s);
    ptreg_cloud_free(&t);
    return rc;
}

/* ---- correspond ---- */
