/* ptreg correspond: the rigid pose of given correspondences (weighted
 * Horn), optionally after RANSAC over them; global.h does the work. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "ptreg/global.h"
#include "ptreg/io.h"

static const cli_option correspond_options[] = {
    CLI_REGISTRATION_OUTPUTS,
    {"pairs", 0, "FILE", "the correspondences: \"SOURCE TARGET [WEIGHT]\" point indices a line (required)"},
    {"ransac-dist", 0, "D",
     "RANSAC over the pairs first: a pair is an inlier within D (default: no RANSAC, "
     "every pair)"},
    {"ransac-iter", 0, "N", "RANSAC's most hypotheses (default 100000)"},
    {"confidence", 0, "C", "RANSAC stops once this sure of an all-inlier sample (default 0.999)"},
    {"seed", 0, "S", "RANSAC's samples (default 1)"},
    {"truth", 0, "FILE", "known answer: report the rotation and translation error"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_correspond = CLI_COMMAND(
    "correspond", "SOURCE TARGET --pairs FILE [options]",
    "The rigid pose of given correspondences: weighted Horn (Umeyama), optionally after RANSAC.",
    "Horn's closed form minimises sum w |R p + t - q|^2 over the pairs (weight 1 without a\n"
    "third column; Open3D's TransformationEstimationPointToPoint without weights). With\n"
    "--ransac-dist, RANSAC over the pairs first (three at a time, scored by the pairs\n"
    "brought within D, no checkers: Open3D's registration_ransac_based_on_correspondence),\n"
    "then the weighted fit on its inliers. rmse is over the pairs used, fitness their share\n"
    "of all pairs. The same result for any thread count and every run.\n\n"
    "Example:\n"
    "  ptreg correspond scan.ply model.ply --pairs pairs.txt --ransac-dist 0.05 -t T.txt\n",
    correspond_options, 2, 2);

typedef struct correspond_input {
    ptreg_matches m;
    double *weights;
} correspond_input;

static int read_ransac(const cli_args *a, ptreg_ransac_options *ro)
{
    ptreg_ransac_options_default(ro);
    ro->edge_length = 0.0, ro->check_distance = -1.0;
    int rc = cli_double(a, "ransac-dist", 1e-300, 1e300, &ro->max_dist);
    rc = rc ? rc : cli_int(a, "ransac-iter", 1, 100000000, &ro->max_iter);
    rc = rc ? rc : cli_double(a, "confidence", 1e-12, 1.0 - 1e-16, &ro->confidence);
    rc = rc ? rc : cli_u64(a, "seed", &ro->seed);
    if (!rc && !cli_has(a, "ransac-dist"))
        for (const char *const *o = (const char *const[]){"ransac-iter", "confidence", "seed", NULL}; *o; o++)
            if (cli_has(a, *o)) {
                cli_error("correspond", "--%s is RANSAC's: give --ransac-dist too", *o);
                return EXIT_USAGE;
            }
    return rc;
}

static int correspond_report(const cli_args *a, const ptreg_cloud *s, const ptreg_cloud *t, const correspond_input *in,
                             const ptreg_ransac_options *ro, const ptreg_ransac_result *r, const double *truth)
{
    size_t used;
    const double within = cli_has(a, "ransac-dist") ? ro->max_dist : 0.0;
    /* the pairs the fit used: RANSAC's inliers, or every pair */
    const double rmse = ptreg_correspondences_rmse(s->xyz, t->xyz, &in->m, r->transformation, within, &used);
    const cli_result res = {"correspond",
                            a->positional[0],
                            a->positional[1],
                            r->transformation,
                            rmse,
                            (double)used / (double)in->m.count,
                            (double)used,
                            -1,
                            0,
                            PTREG_STOP_CONVERGED,
                            r->time_ms,
                            NULL,
                            1,
                            truth,
                            NULL};
    if (cli_has(a, "json")) {
        cJSON *o = cli_result_json(&res);
        cli_json_number(o, "correspondences", (double)in->m.count);
        cli_json_bool(o, "weighted", in->weights != NULL);
        cli_json_bool(o, "ransac", within > 0.0);
        cli_json_number(o, "ransac_hypotheses", r->hypotheses);
        cli_json_number(o, "ransac_inliers", (double)r->inliers);
        return cli_result_json_print(o, &res);
    }
    printf("ptreg correspond: %s onto %s, %zu pairs%s\n", a->positional[0], a->positional[1], in->m.count,
           in->weights ? " (weighted)" : "");
    if (within > 0.0)
        printf("  ransac: %d hypotheses, %zu inliers within %g\n", r->hypotheses, r->inliers, within);
    printf("  %zu pairs used, rmse %.6g, time %.1f ms\n", used, rmse, r->time_ms);
    cli_result_print_pose(&res);
    return EXIT_OK;
}

static int load_pairs(const cli_args *a, const ptreg_cloud *s, const ptreg_cloud *t, correspond_input *in)
{
    ptreg_error err;
    ptreg_status st = ptreg_correspondences_read(cli_string(a, "pairs", NULL), s->n, t->n, &in->m.source, &in->m.target,
                                                 &in->weights, &in->m.count, &err);
    if (st)
        cli_error("correspond", "%s", err.message);
    return st ? cli_exit_code(st, 1) : EXIT_OK;
}

int cli_run_correspond(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_correspond, argc, argv, &a, &rc) ||
        (rc = cli_require(&a, "pairs", "the correspondences: --pairs FILE")))
        return rc;
    ptreg_ransac_options ro;
    double truth[16];
    if ((rc = read_ransac(&a, &ro)) || (rc = cli_apply_threads(&a)) || (rc = cli_device_cpu_only(&a, "correspond")) ||
        (rc = cli_transform_option(&a, "truth", truth)))
        return rc;
    ptreg_cloud s, t;
    if ((rc = cli_load_pair("correspond", &a, 0, &s, &t)))
        return rc;
    if (cli_has(&a, "truth"))
        cli_transform_to_local(truth, truth);
    correspond_input in = {{0}, NULL};
    rc = load_pairs(&a, &s, &t, &in);
    ptreg_ransac_result r;
    ptreg_error err;
    ptreg_status st = rc ? PTREG_OK
                         : ptreg_register_correspondences(s.xyz, s.n, t.xyz, t.n, &in.m, in.weights,
                                                          cli_has(&a, "ransac-dist") ? &ro : NULL, &r, &err);
    if (st) {
        cli_error("correspond", "%s", err.message);
        /* too few pairs, or all weights 0: the file's fault */
        rc = st == PTREG_ERR_ARG ? EXIT_BAD_INPUT : cli_exit_code(st, 0);
    }
    rc = rc ? rc : cli_write_registration("correspond", &a, &s, r.transformation);
    rc = rc ? rc : correspond_report(&a, &s, &t, &in, &ro, &r, cli_has(&a, "truth") ? truth : NULL);
    ptreg_matches_free(&in.m);
    free(in.weights);
    ptreg_cloud_free(&s);
    ptreg_cloud_free(&t);
    return rc;
}
