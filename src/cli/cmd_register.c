/* ptreg register: SOURCE onto TARGET without an initial guess (global.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "cli/report.h"
#include "ptreg/device.h"
#include "ptreg/features.h"
#include "ptreg/global.h"

#define COLOR_MATCHES 0x2ca02cu /* green: the matches kept, from SOURCE's start to TARGET */

static const cli_option register_options[] = {
    CLI_REGISTRATION_OUTPUTS,
    {"no-refine", 0, NULL, "stop after RANSAC (fitness and rmse are then RANSAC's transform's)"},
    {"seed", 0, "S", "RANSAC's samples (default 1)"},
    {"one-way", 0, NULL, "keep every source point's nearest descriptor, not only mutual ones"},
    {"truth", 0, "FILE", "known answer: report the rotation and translation error"},
    CLI_OPT_THREADS,
    CLI_OPT_REPEAT,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
    CLI_OPT_HTML,
};

const cli_command cli_cmd_register = CLI_COMMAND_LIBRARY(
    "register", "SOURCE TARGET [options]",
    "Register SOURCE onto TARGET without an initial guess: downsample, features, RANSAC, ICP.",
    "The pipeline of Open3D's global-registration tutorial, with its scales: both clouds'\n"
    "voxel-grid centroids (cube V); their normals from hybrid neighborhoods (radius 2V, at\n"
    "most 30 points; turned to agree with a file's own normals, else to face the origin);\n"
    "FPFH from hybrid neighborhoods (5V, 100; Open3D's convention); each source point's\n"
    "nearest target descriptor, kept when mutual (and, with --ratio R, when nearer than R\n"
    "times the second nearest: Lowe's test); RANSAC over those matches (three at a\n"
    "time, Horn's transform, Open3D's edge-length (0.9) and distance checkers, scored by the\n"
    "matches it brings within 1.5V, until 100000 hypotheses or 0.999 confidence; or, with\n"
    "--global fgr, Fast Global Registration: Open3D's tuple test on the matches, then 64\n"
    "Gauss-Newton steps of the Geman-McClure cost with graduated non-convexity); then ICP\n"
    "by --method on all points from RANSAC's transform (pairs within 0.4V, 30 iterations).\n"
    "Every stage's time is reported; the same result for any thread count and every run.\n"
    "On a GPU (--device; double precision) the matches are found there (the CPU's),\n"
    "RANSAC's hypotheses are scored there in batches (drawn, checked and fitted here; the\n"
    "same winner as the CPU's) and the refinement runs there; downsampling, normals, FPFH\n"
    "and FGR stay on the CPU for now.\n"
    "The stages stand alone too: ptreg convert --voxel, ptreg normals, ptreg fpfh, ptreg icp.",
    register_options, 2, 2, "register");

static int read_register_options(const cli_args *a, ptreg_register_options *o)
{
    o->no_refine = cli_has(a, "no-refine");
    o->mutual = !cli_has(a, "one-way");
    int seed = 1;
    int rc = cli_read_library(a, o);
    rc = rc ? rc : cli_int(a, "seed", 0, 2147483647, &seed);
    o->ransac.seed = (uint64_t)seed;
    rc = rc ? rc : cli_device(a, &o->device);
    if (!rc) { /* RANSAC's scoring decides: the refinement runs on every device */
        ptreg_ransac_options ransac = o->ransac;
        ptreg_device on;
        ptreg_error err;
        ransac.device = o->device;
        rc = cli_device_usable(a, ptreg_ransac_resolve_device(&ransac, &on, &err), &err);
    }
    return rc ? rc : cli_apply_threads(a);
}

static void print_human(const cli_args *a, const ptreg_register_result *r, const cli_result *res)
{
    char device[32];
    printf("ptreg register: %s onto %s, %d threads, on %s\n", a->positional[0], a->positional[1],
           ptreg_get_num_threads(), ptreg_device_format(&r->device, device, sizeof device));
    printf("  voxel %g: %zu and %zu points, %zu feature matches\n", r->voxel, r->source_down, r->target_down,
           r->matches);
    if (r->fgr.tuples)
        printf("  fgr: %zu tuples passed the tuple test\n", r->fgr.tuples);
    else
        printf("  ransac: %d hypotheses (%d passed the checkers), %zu inliers\n", r->ransac.hypotheses,
               r->ransac.checked, r->ransac.inliers);
    printf("  fitness %.4f, rmse %.6g\n", r->fitness, r->rmse);
    printf("  time %.1f ms: downsample %.1f, normals %.1f, features %.1f, match %.1f, global %.1f, refine %.1f\n",
           r->total_ms, r->downsample_ms, r->normals_ms, r->features_ms, r->match_ms, r->global_ms, r->refine_ms);
    cli_result_print_pose(res);
}

static int print_json(const ptreg_register_result *r, const cli_result *res)
{
    cJSON *o = cli_result_json(res);
    cli_json_result(o, ptreg_result_table_find("register"), r);
    return cli_result_json_print(o, res);
}

/* The feature matches the result keeps: those whose source point it brings
 * within RANSAC's inlier distance of their target point (the inliers of the
 * final transform), found again from the clouds prepared as the pipeline
 * prepares them. Lines from SOURCE where it began to TARGET. */
static ptreg_status kept_matches(const ptreg_cloud *s, const ptreg_cloud *t, const ptreg_register_options *o,
                                 const ptreg_register_result *r, float **lines, size_t *count, ptreg_error *err)
{
    ptreg_register_cloud sp = {0}, tp = {0};
    ptreg_matches m = {0};
    *lines = NULL, *count = 0;
    ptreg_status st = ptreg_register_cloud_prepare(s->xyz, s->normals, s->n, r->voxel, &sp, err);
    st = st ? st : ptreg_register_cloud_prepare(t->xyz, t->normals, t->n, r->voxel, &tp, err);
    st = st ? st : ptreg_match_features(sp.fpfh, sp.down.n, tp.fpfh, tp.down.n, PTREG_FPFH_BINS, o->mutual, &m, err);
    if (!st && !(*lines = malloc((m.count ? m.count : 1) * 6 * sizeof **lines)))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    const double dist = o->ransac.max_dist > 0.0 ? o->ransac.max_dist : 1.5 * r->voxel;
    for (size_t i = 0; !st && i < m.count; i++) {
        const float *a = sp.down.xyz + 3 * (size_t)m.source[i], *b = tp.down.xyz + 3 * (size_t)m.target[i];
        float moved[3];
        ptreg_transform_points(r->transformation, a, moved, 1);
        const double dx = moved[0] - b[0], dy = moved[1] - b[1], dz = moved[2] - b[2];
        if (dx * dx + dy * dy + dz * dz > dist * dist)
            continue;
        memcpy(*lines + 6 * *count, a, 3 * sizeof *a);
        memcpy(*lines + 6 * *count + 3, b, 3 * sizeof *b);
        ++*count;
    }
    ptreg_matches_free(&m);
    ptreg_register_cloud_free(&sp);
    ptreg_register_cloud_free(&tp);
    return st;
}

/* --html: the registration's clouds and the matches kept. */
static int report_register(const ptreg_cloud *s, const ptreg_cloud *t, const ptreg_register_options *o,
                           const ptreg_register_result *r, cli_distances *dist)
{
    int rc = cli_report_registration(s->xyz, s->n, t->xyz, t->n, NULL, r->transformation, dist);
    if (rc || !cli_report())
        return rc;
    float *lines;
    size_t count;
    ptreg_error err;
    ptreg_status st = kept_matches(s, t, o, r, &lines, &count, &err);
    st = st ? st : ptreg_report_add_lines(cli_report(), "matches kept", lines, count, COLOR_MATCHES, &err);
    free(lines);
    return cli_report_check(st, &err);
}

/* One registration of --repeat (cli_repeat). */
typedef struct register_run {
    const ptreg_cloud *s, *t;
    const ptreg_register_options *o;
    ptreg_register_result r;
} register_run;

static ptreg_status register_once(void *ctx, double *time_ms, const void **bits, size_t *size, ptreg_error *err)
{
    register_run *run = ctx;
    const ptreg_cloud *s = run->s, *t = run->t;
    ptreg_status st = ptreg_register(s->xyz, s->normals, s->n, t->xyz, t->normals, t->n, run->o, &run->r, err);
    *time_ms = run->r.total_ms;
    *bits = run->r.transformation;
    *size = sizeof run->r.transformation;
    return st;
}

int cli_run_register(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_register, argc, argv, &a, &rc))
        return rc;
    ptreg_register_options o;
    ptreg_register_options_default(&o);
    double truth[16];
    int repeat = 1;
    if ((rc = read_register_options(&a, &o)) || (rc = cli_int(&a, "repeat", 1, 1000, &repeat)) ||
        (rc = cli_report_begin(&a, "register")) || (rc = cli_transform_option(&a, "truth", truth)))
        return rc;
    ptreg_cloud s, t;
    if ((rc = cli_load_pair("register", &a, 1, &s, &t)))
        return rc;
    if (cli_has(&a, "truth"))
        cli_transform_to_local(truth, truth);
    register_run run;
    run.s = &s, run.t = &t, run.o = &o;
    ptreg_error err;
    double times[1000];
    ptreg_status st = cli_repeat(repeat, register_once, &run, times, &run.r.total_ms, &err);
    if (st) {
        cli_error("register", "%s", err.message);
        rc = st == PTREG_ERR_ARG ? EXIT_USAGE : cli_exit_code(st, 0);
    } else {
        const ptreg_register_result *r = &run.r;
        rc = cli_write_registration("register", &a, &s, r->transformation);
        cli_distances dist = {0};
        if (!rc)
            rc = report_register(&s, &t, &o, r, &dist);
        const cli_result res = {"register",
                                a.positional[0],
                                a.positional[1],
                                r->transformation,
                                r->rmse,
                                r->fitness,
                                -1.0,
                                -1,
                                0,
                                PTREG_STOP_CONVERGED,
                                r->total_ms,
                                times,
                                repeat,
                                cli_has(&a, "truth") ? truth : NULL,
                                &dist};
        if (!rc && (cli_has(&a, "json") || cli_report()))
            rc = print_json(r, &res);
        if (!rc && !cli_has(&a, "json"))
            print_human(&a, r, &res);
        cli_distances_free(&dist);
    }
    ptreg_cloud_free(&s);
    ptreg_cloud_free(&t);
    return rc;
}
