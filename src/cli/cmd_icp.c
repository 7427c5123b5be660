/* ptreg icp: rigid ICP of SOURCE onto TARGET, point-to-point or
 * point-to-plane, with robust kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/icp_report.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "cli/registration.h"
#include "cli/report.h"
#include "ptreg/device.h"
#include "ptreg/icp.h"
#include "ptreg/nn.h"

static const cli_option icp_options[] = {
    CLI_REGISTRATION_OUTPUTS,
    {"target-index", 0, "FILE", "register onto the model of this index (from 'ptreg index') instead of TARGET"},
    {"no-tune", 0, NULL, "--nn auto ignores the index's measured method ('ptreg index --tune'): the rule"},
    {"scale", 0, NULL,
     "fit a uniform scale too (similarity ICP: Umeyama's closed form each step; --method point without a "
     "kernel or --lm; CPU only); the 4x4 then holds s R"},
    CLI_OPT_PLOT("the MSE"),
    CLI_OPT_HTML,
    CLI_OPT_QUIET,
    {"voxel", 0, "V",
     "register voxel-grid centroids (Open3D's VoxelDownSample) of SOURCE and TARGET instead "
     "of all points (with --target-index: of SOURCE); -o still moves all of SOURCE"},
    {"visible-only", 0, NULL,
     "register onto the TARGET points whose normal (TARGET's own, pointing outward) faces the sensor "
     "at --init: what a one-sided scan can see"},
    {"sensor-origin", 0, "X,Y,Z", "--visible-only: the sensor's position in SOURCE's coordinates (default 0,0,0)"},
    CLI_REGISTRATION_COMMON,
};

const cli_command cli_cmd_icp = CLI_COMMAND_LIBRARY(
    "icp", "SOURCE TARGET [options]\n       ptreg icp SOURCE --target-index MODEL.pti [options]",
    "Register SOURCE onto TARGET by rigid ICP: point-to-point, point-to-plane, symmetric or GICP.",
    "Each iteration pairs every SOURCE point with its exact nearest TARGET point, leaves\n"
    "out pairs by --max-dist, then the sigma filter, then --trim, and moves SOURCE by the\n"
    "rigid transform that best aligns the pairs. The result takes SOURCE onto TARGET.\n"
    "Clouds: PLY, PCD, XYZ/CSV/TXT, VTK.\n\n"
    "--method point (default) minimises the pairs' squared distances (Besl & McKay) by Horn's\n"
    "closed form; --method plane their squared distances along the TARGET point's normal\n"
    "(Chen & Medioni; the right choice for scans of surfaces); --method gicp their\n"
    "Mahalanobis distances under both points' covariances, plane-regularised from the\n"
    "normals (Generalized-ICP: Segal, Haehnel & Thrun; Open3D's covariances); --method\n"
    "symmetric their distances along both points' normals summed (Rusinkiewicz 2019). These\n"
    "take one linearised 6 x 6 Gauss-Newton step in double per iteration; rmse and fitness are of\n"
    "the pairs' distances for every method, as Open3D's. Normals: a file's own (PLY nx ny nz,\n"
    "PCD normal_x ...), else (or with --target-index for TARGET, or with --normal-k)\n"
    "estimated from K neighbors; a point whose neighbors all coincide has none and its\n"
    "pair does not pull. --kernel reweights each pair by its residual every iteration\n"
    "(IRLS) with Open3D's weights: huber k/max(|r|,k), cauchy 1/(1+(r/k)^2), tukey\n"
    "(1-(r/k)^2)^2 within k, gm k/(k+r^2)^2. --max-dist also bounds the nearest-neighbor\n"
    "search, so points far from TARGET cost little. Gauss-Newton runs on the CPU (auto\n"
    "picks it; a GPU named is refused).\n\n"
    "Every --nn method is exact and gives the same result bits. The delaunay-* methods\n"
    "walk the model's Delaunay graph from a start point: zero (the point nearest the\n"
    "centroid), kdann (the k-d tree's leaf, no backtracking), pnn (each point's last\n"
    "neighbor), pnnopt (kdann first, pnn after). auto: the method measured fastest on\n"
    "the model by 'ptreg index --tune' when the --target-index has one (on the CPU; not\n"
    "with --no-tune), else delaunay-pnnopt with an index that has a graph, else the k-d\n"
    "tree (brute force for tiny inputs); the JSON's nn_auto says which (measured, rule).\n\n"
    "Timing: time_ms counts from both clouds in memory to the result, the k-d tree's build\n"
    "included. The Delaunay graph takes seconds to build and is meant to be built once:\n"
    "with --target-index (or a delaunay-* method and TARGET, when ptreg builds the index\n"
    "first) the index build or load is reported apart and is not in time_ms.\n\n"
    "On a GPU (--device cuda[:N] or opencl[:N]; auto takes one when there is one) every step\n"
    "of an iteration of every method and kernel runs on the device: the model (the index: built here when TARGET is a\n"
    "cloud) is uploaded once, its kernels compiled first (cached on disk for CUDA), and\n"
    "each of the --repeat registrations uploads only SOURCE: time_ms is then per frame with\n"
    "the model resident; model_upload_ms and kernel_compile_ms are reported apart. The\n"
    "pairs are the CPU's and the transform within 1e-5 of it (the sums run in another fixed\n"
    "order); every run on one device gives the same bits.",
    icp_options, 1, 2, "icp");

/* The library's options (ptreg_option_table_find("icp"), its rules included), the
 * threads and the device. */
static int read_icp_options(const cli_args *a, ptreg_icp_options *o)
{
    int rc = cli_read_library(a, o);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_device(a, &o->device);
    if (rc)
        return rc;
    o->no_tune = cli_has(a, "no-tune");
    o->scale = cli_has(a, "scale");
    ptreg_error err;
    if (o->scale && ptreg_options_check(ptreg_option_table_find("icp"), o, &err)) {
        cli_error("icp", "--scale: %s", err.message);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* --voxel: the cloud replaced by its voxel-grid centroids (the original
 * kept in *full when full is not NULL). */
static int downsample(icp_job *job, const char *path, ptreg_cloud *cloud, ptreg_cloud *full)
{
    if (!(job->voxel > 0.0))
        return EXIT_OK;
    ptreg_cloud down;
    ptreg_error err;
    double t0 = ptreg_time_ms();
    if (ptreg_voxel_downsample(cloud, job->voxel, &down, &err)) {
        cli_error("icp", "--voxel: %s", err.message);
        return EXIT_USAGE;
    }
    job->downsample_ms += ptreg_time_ms() - t0;
    if (down.n < 3) {
        cli_error("icp", "--voxel: %g leaves %zu point%s of the %zu of %s: at least 3 are needed", job->voxel, down.n,
                  down.n == 1 ? "" : "s", cloud->n, path);
        ptreg_cloud_free(&down);
        return EXIT_USAGE;
    }
    down.dropped_nonfinite = cloud->dropped_nonfinite;
    if (full)
        *full = *cloud;
    else
        ptreg_cloud_free(cloud);
    *cloud = down;
    return EXIT_OK;
}

/* --visible-only: TARGET cut to the points that face the sensor at --init
 * (n . (o - q) > 0, the tracker's rule: src/reg/track/track_visible.c),
 * o the sensor's position taken into TARGET's frame by --init. */
static int keep_visible(const cli_args *a, const ptreg_icp_options *opt, icp_job *job)
{
    double s[3] = {0, 0, 0}, o[3];
    ptreg_cloud *t = &job->target;
    int rc = cli_vec3(a, "sensor-origin", s);
    if (rc || !cli_has(a, "visible-only")) {
        if (!rc && cli_has(a, "sensor-origin")) {
            cli_error("icp", "--sensor-origin places the sensor for --visible-only: give both");
            rc = EXIT_USAGE;
        }
        return rc;
    }
    if (!t->normals) {
        cli_error("icp", "--visible-only needs TARGET's own normals, pointing outward: %s has none", job->target_path);
        return EXIT_USAGE;
    }
    /* opt->init is the world's; TARGET's points are about its origin */
    for (int k = 0; k < 3; k++)
        o[k] = opt->init[4 * k] * s[0] + opt->init[4 * k + 1] * s[1] + opt->init[4 * k + 2] * s[2] +
               opt->init[4 * k + 3] - t->origin[k];
    size_t kept = 0;
    for (size_t j = 0; j < t->n; j++) {
        const float *q = t->xyz + 3 * j, *n = t->normals + 3 * j;
        if ((double)n[0] * (o[0] - q[0]) + (double)n[1] * (o[1] - q[1]) + (double)n[2] * (o[2] - q[2]) > 0.0) {
            memmove(t->xyz + 3 * kept, q, 3 * sizeof *q);
            memmove(t->normals + 3 * kept, n, 3 * sizeof *n);
            kept++;
        }
    }
    if (kept < 3) {
        cli_error("icp", "--visible-only: %zu of %s's points face the sensor at --init", kept, job->target_path);
        return EXIT_USAGE;
    }
    /* what else the points carried no longer lines up with them */
    free(t->curvature), free(t->intensity), free(t->classification), free(t->rgb);
    t->curvature = NULL, t->intensity = NULL, t->classification = NULL, t->rgb = NULL;
    t->n = kept;
    return EXIT_OK;
}

static int load_job(const cli_args *a, const ptreg_icp_options *opt, const ptreg_device *device, icp_job *job)
{
    ptreg_nn_method nn = opt->nn;
    memset(job, 0, sizeof *job);
    job->device = *device;
    job->asked_auto = nn == PTREG_NN_AUTO;
    ptreg_cloud_init(&job->source);
    ptreg_cloud_init(&job->target);
    ptreg_cloud_init(&job->source_full);
    int rc = cli_double(a, "voxel", 1e-30, 1e30, &job->voxel);
    if (rc)
        return rc;
    const char *index_path = cli_string(a, "target-index", NULL);
    if ((index_path != NULL) == (a->positional_count == 2)) {
        cli_error("icp", index_path ? "give TARGET or --target-index, not both"
                                    : "missing arguments: give TARGET, or the model's index by --target-index FILE");
        return EXIT_USAGE;
    }
    job->source_path = a->positional[0];
    job->target_path = index_path ? index_path : a->positional[1];
    if ((rc = cli_load_shape("icp", job->source_path, &job->source, 0)))
        return rc;
    job->source_points = job->source.n;
    if ((rc = downsample(job, job->source_path, &job->source, &job->source_full)))
        return rc;
    if (index_path && cli_has(a, "visible-only")) {
        cli_error("icp", "--visible-only needs TARGET's normals: give TARGET as a cloud with normals, not an index");
        return EXIT_USAGE;
    }
    if (index_path) {
        double t0 = ptreg_time_ms();
        if ((rc = cli_load_index("icp", index_path, &job->index)))
            return rc;
        job->index_load_ms = ptreg_time_ms() - t0;
        job->index_loaded = 1;
        const float *model = ptreg_model_index_points(job->index, &job->target_points);
        ptreg_error err;
        if (ptreg_check_shape(index_path, model, job->target_points, &err)) {
            cli_error("icp", "%s", err.message);
            return EXIT_BAD_INPUT;
        }
        return EXIT_OK;
    }
    if ((rc = cli_load_shape("icp", job->target_path, &job->target, 0)))
        return rc;
    job->target_points = job->target.n;
    if ((rc = downsample(job, job->target_path, &job->target, NULL)) || (rc = keep_visible(a, opt, job)))
        return rc;
    /* a GPU needs the index to upload; the CPU builds its tree inside the timing */
    if (ptreg_nn_method_is_delaunay(nn) || job->device.backend != PTREG_BACKEND_CPU) {
        ptreg_index_options io;
        ptreg_index_options_default(&io);
        io.delaunay = ptreg_nn_method_is_delaunay(nn);
        ptreg_error err;
        ptreg_status st = ptreg_model_index_create(job->target.xyz, job->target.n, &io, &job->index, &err);
        if (st) {
            cli_error("icp", "%s", err.message);
            return cli_exit_code(st, 0);
        }
    }
    return EXIT_OK;
}

/* On a GPU: the model uploaded once, for every --repeat run. */
static int prepare_model(icp_job *job)
{
    if (job->device.backend == PTREG_BACKEND_CPU)
        return EXIT_OK;
    ptreg_error err;
    ptreg_status st = ptreg_icp_model_create(job->index, &job->device, &job->model, &err);
    if (st) {
        cli_error("icp", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

static void free_job(icp_job *job)
{
    ptreg_icp_model_destroy(job->model);
    ptreg_model_index_destroy(job->index);
    ptreg_cloud_free(&job->source);
    ptreg_cloud_free(&job->target);
    ptreg_cloud_free(&job->source_full);
}

static ptreg_status register_once(const icp_job *job, const ptreg_icp_options *opt, ptreg_icp_result *r,
                                  ptreg_error *err)
{
    const ptreg_cloud *s = &job->source;
    if (job->model)
        return ptreg_icp_model_run(job->model, s->xyz, s->n, opt, r, err);
    if (job->index)
        return ptreg_icp_indexed(s->xyz, s->n, job->index, opt, r, err);
    return ptreg_icp(s->xyz, s->n, job->target.xyz, job->target.n, opt, r, err);
}

/* --html: the clouds registered (the centroids with --voxel), the target
 * from the index when there is one. */
static int report_icp(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r, cli_distances *dist)
{
    size_t m = job->target.n;
    const float *target = job->target.xyz;
    if (!target)
        target = ptreg_model_index_points(job->index, &m);
    return cli_report_registration(job->source.xyz, job->source.n, target, m, opt->init, r->transformation, dist);
}

/* A run that ran out of iterations is a result, not an error (exit 0), but
 * the pose may be far from the optimum (point-to-point creeps along smooth
 * surfaces): said on stderr, unless asked for quiet or JSON, or --tol 0
 * asked for every iteration (--max-iter 0: none). */
static void note_not_converged(const cli_args *a, const ptreg_icp_options *opt, const ptreg_icp_result *r)
{
    if (r->stop_reason != PTREG_STOP_MAX_ITERATIONS || opt->max_iter == 0 || opt->tol == 0.0 || cli_has(a, "json") ||
        cli_has(a, "quiet"))
        return;
    fprintf(stderr,
            "ptreg icp: not converged after %d iterations: try --method plane or more iterations "
            "(--max-iter)\n",
            r->iterations);
}

/* One registration of --repeat (cli_repeat); r holds the last run's
 * result when have is set. */
typedef struct icp_run {
    const icp_job *job;
    const ptreg_icp_options *opt;
    ptreg_icp_result r;
    int have;
} icp_run;

static ptreg_status icp_once(void *ctx, double *time_ms, const void **bits, size_t *size, ptreg_error *err)
{
    icp_run *run = ctx;
    if (run->have)
        ptreg_icp_result_free(&run->r);
    ptreg_status st = register_once(run->job, run->opt, &run->r, err);
    run->have = !st;
    *time_ms = run->r.time_ms;
    *bits = run->r.transformation;
    *size = sizeof run->r.transformation;
    return st;
}

/* --normal-k without a radius takes that many points of each cloud whose
 * normals it estimates: more than a cloud has is a usage error. */
static int check_normal_k(const cli_args *a, const ptreg_icp_options *opt, const icp_job *job)
{
    if (opt->method == PTREG_ICP_POINT || !cli_has(a, "normal-k") || cli_has(a, "normal-radius"))
        return EXIT_OK;
    const size_t k = (size_t)opt->normal_k, target = job->index_loaded ? job->target_points : job->target.n;
    const int both = (ptreg_icp_method_normals(opt->method) & PTREG_ICP_NORMALS_SOURCE) != 0;
    const char *path = k > target ? job->target_path : both && k > job->source.n ? job->source_path : NULL;
    if (!path)
        return EXIT_OK;
    cli_error("icp", "--normal-k: %zu is more than the %zu points of %s", k,
              path == job->target_path ? target : job->source.n, path);
    return EXIT_USAGE;
}

int cli_run_icp(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_icp, argc, argv, &a, &rc))
        return rc;
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    int repeat = 1;
    double truth[16];
    if ((rc = read_icp_options(&a, &opt)) || (rc = cli_int(&a, "repeat", 1, 1000, &repeat)) ||
        (rc = cli_transform_option(&a, "init", opt.init)) || (rc = cli_transform_option(&a, "truth", truth)) ||
        (rc = cli_report_begin(&a, "icp")))
        return rc;
    icp_job job;
    ptreg_device device;
    ptreg_error err;
    if ((rc = cli_device_usable(&a, ptreg_icp_resolve_device(&opt, &device, &err), &err)))
        return rc;
    if ((rc = load_job(&a, &opt, &device, &job)) || (rc = prepare_model(&job))) {
        free_job(&job);
        return rc;
    }
    if ((rc = check_normal_k(&a, &opt, &job))) {
        free_job(&job);
        return rc;
    }
    cli_transform_to_local(opt.init, opt.init);
    if (cli_has(&a, "truth"))
        cli_transform_to_local(truth, truth);
    /* the files' own normals where the method reads them, unless asked to estimate them */
    const unsigned reads = ptreg_icp_method_normals(opt.method);
    if (!cli_has(&a, "normal-k") && !cli_has(&a, "normal-radius")) {
        opt.target_normals = reads & PTREG_ICP_NORMALS_TARGET ? job.target.normals : NULL;
        opt.source_normals = reads & PTREG_ICP_NORMALS_SOURCE ? job.source.normals : NULL;
    }
    cli_progress progress;
    cli_progress_begin(&progress, &a, "icp", "iteration", "MSE");
    opt.progress = cli_progress_hook(&progress);
    double *times = calloc((size_t)repeat, sizeof(double));
    icp_run run;
    run.job = &job, run.opt = &opt, run.have = 0;
    ptreg_status st = times ? cli_repeat(repeat, icp_once, &run, times, &run.r.time_ms, &err)
                            : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    const int plot_rc = cli_progress_end(&progress, &a, !st);
    if (st) {
        cli_error("icp", "%s", err.message);
        rc = cli_exit_code(st, 0);
    } else {
        const ptreg_icp_result *r = &run.r;
        rc = plot_rc ? plot_rc
                     : cli_write_registration("icp", &a, job.source_full.xyz ? &job.source_full : &job.source,
                                              r->transformation);
        cli_distances dist = {0};
        if (!rc)
            rc = report_icp(&job, &opt, r, &dist);
        const cli_result res = CLI_ITERATIVE_RESULT("icp", job.source_path, job.target_path, r, times, repeat,
                                                    cli_has(&a, "truth") ? truth : NULL, &dist);
        if (!rc && (cli_has(&a, "json") || cli_report()))
            rc = cli_icp_print_json(&job, &opt, r, &res);
        if (!rc && !cli_has(&a, "json"))
            cli_icp_print_human(&job, &opt, r, &res);
        if (!rc)
            note_not_converged(&a, &opt, r);
        cli_distances_free(&dist);
    }
    if (run.have)
        ptreg_icp_result_free(&run.r);
    free(times);
    free_job(&job);
    return rc;
}
