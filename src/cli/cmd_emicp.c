/* ptreg emicp: EM-ICP (soft assignment, annealed sigma) of SOURCE onto TARGET. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "cli/registration.h"
#include "cli/report.h"
#include "cli/tune_choice.h"
#include "ptreg/batch.h"
#include "ptreg/device.h"
#include "ptreg/emicp.h"
#include "ptreg/tune.h"

static const cli_option emicp_options[] = {
    CLI_REGISTRATION_OUTPUTS,
    {"preset", 0, "NAME",
     "scale-free (default: sigma^2 relative to the target's RMS radius r) or tamaki "
     "(the study's absolute values: sigma^2 0.01 -> 1e-5, factor 0.9, d0^2 0.01)"},
    CLI_OPT_PLOT("the pose change (radians + translation / r)"),
    CLI_OPT_HTML,
    CLI_OPT_QUIET,
    {"no-tune", 0, NULL, "ignore `ptreg tune`'s winner for this machine (used when no engine option is given)"},
    CLI_REGISTRATION_COMMON,
};

const cli_command cli_cmd_emicp = CLI_COMMAND_LIBRARY(
    "emicp", "SOURCE TARGET [options]",
    "Register SOURCE onto TARGET by EM-ICP (soft assignment over all point pairs, annealed sigma).",
    "Each iteration weighs every (SOURCE, TARGET) pair by exp(-d^2 / sigma^2), normalises\n"
    "each source point's weights with an outlier term exp(-d0^2 / sigma^2), moves SOURCE by\n"
    "the weighted Horn solution onto the weighted target means, then shrinks sigma^2 by\n"
    "--sigma-factor, until sigma^2 reaches --sigma2-final (Granger & Pennec; the GPU study\n"
    "of Tamaki et al.). Every iteration costs n x m pair terms, computed on the fly in\n"
    "O(n + m) memory; gpts in the output is n*m*iterations / time / 1e9.\n"
    "Clouds: PLY, PCD, XYZ/CSV/TXT, VTK.\n\n"
    "Scales: by default sigma^2 starts at 3 r^2 and ends at 3e-3 r^2, r the target's RMS\n"
    "radius about its centroid, so millimetres and metres behave alike; --preset tamaki\n"
    "uses the study's absolute values (meant for its bunny, r = 0.056).\n\n"
    "Rows whose weights sum (with the outlier term) below 1e-6 get uniform weights, as in\n"
    "the study: they pull toward the target's centroid with weight 1.\n\n"
    "Timing: time_ms counts from both clouds in memory to the result. rmse and fitness\n"
    "are measured afterwards by exact nearest neighbors, over the source points within\n"
    "3 sigma of the target (sigma of the last iteration).\n\n"
    "On a GPU (--device cuda[:N] or opencl[:N]; auto takes one when there is one) the target\n"
    "stays on the device and every E-step runs there: rows in threads, columns through\n"
    "local memory in tiles, float32 tile sums added into float64 (fp32, fp16 storage) or\n"
    "double throughout (fp64, devices with double precision); only the 16 moments of\n"
    "Horn's problem come back per iteration. --tile, --row-block, --row-vectors and --loop\n"
    "are the CPU engine's; PTREG_PAIR_EXP=engine|native picks the device's exp (native on\n"
    "CUDA by default). Every run on one device gives the same bits.",
    emicp_options, 2, 2, "emicp");

/* The preset first, then the options given over it. */
static int read_schedule(const cli_args *a, ptreg_emicp_options *o)
{
    const char *preset = cli_string(a, "preset", "scale-free");
    if (!strcmp(preset, "tamaki")) {
        ptreg_emicp_options_tamaki(o);
    } else if (strcmp(preset, "scale-free")) {
        cli_error("emicp", "--preset: '%s' is not scale-free or tamaki", preset);
        return EXIT_USAGE;
    }
    return cli_read_library(a, o);
}

static int read_options(const cli_args *a, ptreg_emicp_options *o, double truth[16])
{
    int rc = read_schedule(a, o);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_device(a, &o->device);
    ptreg_device on;
    ptreg_error err;
    rc = rc ? rc : cli_device_usable(a, ptreg_emicp_resolve_device(o, &on, &err), &err);
    rc = rc ? rc : cli_transform_option(a, "init", o->init);
    return rc ? rc : cli_transform_option(a, "truth", truth);
}

typedef struct emicp_job {
    const char *source_path, *target_path;
    ptreg_cloud source, target;
    const ptreg_emicp_options *opt;
    const char *variant;   /* where the engine's knobs came from: options, tuned or default */
    char tuned_class[16];  /* the cache's size class used */
    cJSON *device_variant; /* on a GPU: the device kernels' knobs and where they came from */
} emicp_job;

/* The engine's knobs from `ptreg tune`'s cache (ptreg_tune_variant), for a
 * run given none on the command line nor --no-tune: on the CPU the pair
 * engine's winner for this machine's nearest size class, and its thread
 * count unless --threads; on a GPU the device kernels' winner. */
static void apply_tuned(const cli_args *a, emicp_job *job, ptreg_emicp_options *o)
{
    job->variant = cli_library_knob_given(a) ? "options" : "default";
    ptreg_device on;
    if (ptreg_emicp_resolve_device(o, &on, NULL))
        return;
    const int gpu = on.backend != PTREG_BACKEND_CPU; /* where the CPU knobs given mean nothing */
    const int use_cache = !cli_has(a, "no-tune") && (gpu || !strcmp(job->variant, "default"));
    ptreg_tune_choice choice;
    ptreg_error err;
    if (ptreg_tune_variant("emicp", o, job->source.n, job->target.n, use_cache, &choice, &err) == PTREG_ERR_NOMEM)
        cli_set_out_of_memory();
    if (gpu) {
        job->device_variant = cli_tune_json(&choice.space, choice.source, choice.size_class, choice.point);
        return;
    }
    if (strcmp(choice.source, "tuned"))
        return;
    if (!cli_has(a, "threads"))
        ptreg_set_num_threads(choice.threads);
    snprintf(job->tuned_class, sizeof job->tuned_class, "%s", choice.size_class);
    job->variant = "tuned";
}

static cJSON *json_variant(const emicp_job *job, const ptreg_emicp_options *o)
{
    cJSON *v = cJSON_CreateObject();
    cli_json_string(v, "source", job->variant);
    if (!strcmp(job->variant, "tuned"))
        cli_json_string(v, "size_class", job->tuned_class);
    cli_json_number(v, "col_tile", o->pair.col_tile);
    cli_json_number(v, "row_block", o->pair.row_block);
    cli_json_number(v, "row_vectors", o->pair.row_vectors);
    cli_json_string(v, "loop", o->pair.order == PTREG_PAIR_TILES_OUTSIDE ? "tiles-outside" : "tiles-inside");
    cli_json_number(v, "threads", ptreg_get_num_threads());
    return v;
}

static void print_human(const emicp_job *job, const ptreg_emicp_result *r, const cli_result *res)
{
    printf("ptreg emicp: %s (%zu points) onto %s (%zu points), %s on %s, %d threads\n", job->source_path, job->source.n,
           job->target_path, job->target.n, ptreg_precision_name(r->precision), r->isa, ptreg_get_num_threads());
    printf("  sigma^2 %.6g -> %.6g, d0^2 %.6g (r = %.6g)\n", r->sigma2_init, r->sigma2_final, r->d02, r->radius);
    cli_result_print_iterations(res);
    printf("  rmse %.6g, fitness %.4f (%zu pairs within 3 sigma)\n", r->rmse, r->fitness, r->pairs);
    printf("  time %.2f ms (pair engine %.2f ms), %.3f Gpts/s\n", r->time_ms, r->pair_ms, r->gpts);
    if (r->device.backend == PTREG_BACKEND_CPU)
        printf("  engine: %s%s%s: tile %d, row block %d, row vectors %d, %s\n", job->variant,
               strcmp(job->variant, "tuned") ? "" : " for ", strcmp(job->variant, "tuned") ? "" : job->tuned_class,
               job->opt->pair.col_tile, job->opt->pair.row_block, job->opt->pair.row_vectors,
               job->opt->pair.order == PTREG_PAIR_TILES_OUTSIDE ? "tiles outside" : "tiles inside");
    cli_result_print_pose(res);
}

static int print_json(const emicp_job *job, const ptreg_emicp_result *r, const cli_result *res)
{
    cJSON *o = cli_result_json(res);
    cli_json_number(o, "source_points", (double)job->source.n);
    cli_json_number(o, "target_points", (double)job->target.n);
    cli_json_number(o, "dropped_nonfinite", (double)(job->source.dropped_nonfinite + job->target.dropped_nonfinite));
    if (r->device.backend == PTREG_BACKEND_CPU)
        cli_json_put(o, "variant", json_variant(job, job->opt));
    else if (job->device_variant)
        cli_json_put(o, "variant", cJSON_Duplicate(job->device_variant, 1));
    cli_json_result(o, ptreg_result_table_find("emicp"), r);
    return cli_result_json_print(o, res);
}

/* One registration of --repeat (cli_repeat). */
typedef struct emicp_run {
    const emicp_job *job;
    ptreg_emicp_result r;
} emicp_run;

static ptreg_status emicp_once(void *ctx, double *time_ms, const void **bits, size_t *size, ptreg_error *err)
{
    emicp_run *run = ctx;
    const emicp_job *job = run->job;
    ptreg_status st = ptreg_emicp(job->source.xyz, job->source.n, job->target.xyz, job->target.n, job->opt, &run->r,
                                  err);
    *time_ms = run->r.time_ms;
    *bits = run->r.transformation;
    *size = sizeof run->r.transformation;
    return st;
}

int cli_run_emicp(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_emicp, argc, argv, &a, &rc))
        return rc;
    ptreg_emicp_options opt;
    ptreg_emicp_options_default(&opt);
    int repeat = 1;
    double truth[16];
    if ((rc = read_options(&a, &opt, truth)) || (rc = cli_int(&a, "repeat", 1, 1000, &repeat)) ||
        (rc = cli_report_begin(&a, "emicp")))
        return rc;
    emicp_job job = {a.positional[0], a.positional[1], {0}, {0}, &opt, "default", "", NULL};
    ptreg_cloud_init(&job.source);
    ptreg_cloud_init(&job.target);
    double *times = calloc((size_t)repeat, sizeof(double));
    if (!times) {
        cli_error("emicp", "out of memory");
        return EXIT_RUNTIME;
    }
    if (!(rc = cli_load_shape("emicp", job.source_path, &job.source, 0)))
        rc = cli_load_shape("emicp", job.target_path, &job.target, 0);
    if (!rc) {
        apply_tuned(&a, &job, &opt);
        cli_transform_to_local(opt.init, opt.init);
        if (cli_has(&a, "truth"))
            cli_transform_to_local(truth, truth);
    }
    cli_progress progress;
    cli_progress_begin(&progress, &a, "emicp", "iteration", "pose change");
    opt.progress = cli_progress_hook(&progress);
    emicp_run run;
    run.job = &job;
    ptreg_error err;
    ptreg_status st = rc ? PTREG_OK : cli_repeat(repeat, emicp_once, &run, times, &run.r.time_ms, &err);
    const int plot_rc = cli_progress_end(&progress, &a, !st && !rc);
    if (st) {
        cli_error("emicp", "%s", err.message);
        rc = cli_exit_code(st, 0);
    } else if (!rc) {
        const ptreg_emicp_result *r = &run.r;
        rc = plot_rc ? plot_rc : cli_write_registration("emicp", &a, &job.source, r->transformation);
        cli_distances dist = {0};
        if (!rc)
            rc = cli_report_registration(job.source.xyz, job.source.n, job.target.xyz, job.target.n, opt.init,
                                         r->transformation, &dist);
        const cli_result res = CLI_ITERATIVE_RESULT("emicp", job.source_path, job.target_path, r, times, repeat,
                                                    cli_has(&a, "truth") ? truth : NULL, &dist);
        if (!rc && (cli_has(&a, "json") || cli_report()))
            rc = print_json(&job, r, &res);
        if (!rc && !cli_has(&a, "json"))
            print_human(&job, r, &res);
        cli_distances_free(&dist);
    }
    free(times);
    cJSON_Delete(job.device_variant);
    ptreg_cloud_free(&job.source);
    ptreg_cloud_free(&job.target);
    return rc;
}
