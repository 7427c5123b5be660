/* ptreg icp: rigid ICP of SOURCE onto TARGET, point-to-point or
 * point-to-plane, with robust kernels. */
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
#include "ptreg/device.h"
#include "ptreg/icp.h"
#include "ptreg/nn.h"

static const cli_option icp_options[] = {
    CLI_REGISTRATION_OUTPUTS,
    {"target-index", 0, "FILE", "register onto the model of this index (from 'ptreg index') instead of TARGET"},
    {"no-tune", 0, NULL, "--nn auto ignores the index's measured method ('ptreg index --tune'): the rule"},
    CLI_OPT_PLOT("the MSE"),
    CLI_OPT_HTML,
    CLI_OPT_QUIET,
    {"voxel", 0, "V",
     "register voxel-grid centroids (Open3D's VoxelDownSample) of SOURCE and TARGET instead "
     "of all points (with --target-index: of SOURCE); -o still moves all of SOURCE"},
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
    return EXIT_OK;
}

/* The timings of --repeat runs; the reported time_ms is their median. */
/* What one `ptreg icp` registers: the source, and the target as a cloud or
 * as a model index (loaded from --target-index, or built here for a
 * Delaunay method so that its build stays out of time_ms). */
typedef struct icp_job {
    const char *source_path, *target_path;
    ptreg_cloud source, target; /* what is registered: with --voxel, the centroids */
    ptreg_cloud source_full;    /* with --voxel: SOURCE as read (for -o) */
    size_t source_points;       /* in the file */
    double voxel, downsample_ms;
    ptreg_model_index *index;
    int index_loaded;     /* from a file (else built here, or none) */
    double index_load_ms; /* reading and checking the file */
    size_t target_points;
    ptreg_device device;    /* resolved */
    ptreg_icp_model *model; /* on a GPU: the model resident there */
    int asked_auto;         /* --nn auto: the JSON says how it chose */
} icp_job;

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
    if ((rc = downsample(job, job->target_path, &job->target, NULL)))
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

/* Mean steps per walk of one correspondence pass. */
static double mean_steps(const ptreg_walk_stats *w) { return w->queries ? (double)w->steps / (double)w->queries : 0.0; }

static void print_walks(const ptreg_icp_result *r)
{
    if (!r->walk)
        return;
    uint64_t max = 0, fallbacks = 0, queries = 0, steps = 0, kept = 0;
    for (int k = 0; k <= r->iterations; k++) {
        max = r->walk[k].max_steps > max ? r->walk[k].max_steps : max;
        fallbacks += r->walk[k].fallbacks, queries += r->walk[k].queries, steps += r->walk[k].steps;
        kept += r->walk[k].kept;
    }
    printf("  walks: %.2f steps on the first pass, %.2f mean over all, longest %llu; %llu finished by the k-d tree,\n"
           "    %.1f%% of the queries kept their last answer without a walk (moved less than their margin)\n",
           mean_steps(&r->walk[0]), queries ? (double)steps / (double)queries : 0.0, (unsigned long long)max,
           (unsigned long long)fallbacks, queries ? 100.0 * (double)kept / (double)queries : 0.0);
}

/* Where it ran: "cpu", or "cuda:0 (NVIDIA H100 ...)". */
static const char *device_label(const icp_job *job, char *buf, size_t size)
{
    char name[32];
    ptreg_device_format(&job->device, name, sizeof name);
    if (job->device.backend == PTREG_BACKEND_CPU)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "%s (%.100s)", name, ptreg_device_name(&job->device));
    return buf;
}

static void print_device(const icp_job *job)
{
    char label[160];
    if (!job->model) {
        printf("ptreg icp: on the CPU, %d threads\n", ptreg_get_num_threads());
        return;
    }
    ptreg_icp_model_info info;
    ptreg_icp_model_get_info(job->model, &info);
    printf("ptreg icp: on %s; the model uploaded once in %.2f ms (kernels compiled first in %.2f ms), "
           "%.1f MiB on the device; not in the time\n",
           device_label(job, label, sizeof label), info.upload_ms, info.compile_ms,
           (double)info.device_bytes / (1024.0 * 1024.0));
}

/* Where a cloud's normals came from (NULL when the method needs none). */
static const char *normals_source(const ptreg_icp_options *opt, int target)
{
    if (!(ptreg_icp_method_normals(opt->method) & (target ? PTREG_ICP_NORMALS_TARGET : PTREG_ICP_NORMALS_SOURCE)))
        return NULL;
    return (target ? opt->target_normals : opt->source_normals) ? "file" : "estimated";
}

static void print_human(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r,
                        const cli_result *res)
{
    print_device(job);
    printf("  %s (%zu points) onto %s (%zu points), nn %s\n", job->source_path, job->source_points, job->target_path,
           job->target_points, ptreg_nn_method_name(r->nn));
    if (job->voxel > 0.0)
        printf("  voxel %g: %zu and %zu centroids registered (%.2f ms)\n", job->voxel, job->source.n,
               job->target.xyz ? job->target.n : job->target_points, job->downsample_ms);
    printf("  method %s", ptreg_icp_method_name(opt->method));
    if (opt->kernel)
        printf(", %s kernel (scale %g)", ptreg_robust_kernel_name(opt->kernel), opt->kernel_scale);
    if (opt->lm_lambda > 0.0)
        printf(", Levenberg-Marquardt from damping %g", opt->lm_lambda);
    for (int target = 1; target >= 0; target--)
        if (normals_source(opt, target))
            printf(", %s normals %s", target ? "target" : "source", normals_source(opt, target));
    if (opt->method != PTREG_ICP_POINT && (!opt->target_normals || !opt->source_normals))
        printf(" (estimated from %d neighbors)", opt->normal_k);
    printf("\n");
    if (r->nn_note[0])
        printf("  note: %s\n", r->nn_note);
    if (r->nn_measured)
        printf("  nn auto: the method measured fastest on this model ('ptreg index --tune')\n");
    if (job->index) {
        printf("  index %s, not in the time:\n", job->index_loaded ? "loaded" : "built first");
        if (job->index_loaded)
            printf("    read and checked in %.2f ms\n", job->index_load_ms);
        cli_print_index("    ", job->index);
    }
    cli_result_print_iterations(res);
    printf("  rmse %.6g, fitness %.4f (%zu pairs)\n", r->rmse, r->fitness, r->pairs);
    printf("  time %.2f ms (search build %.2f ms)\n", r->time_ms, r->build_ms);
    print_walks(r);
    cli_result_print_pose(res);
}

/* The index's part of the JSON: where it came from and what it cost, apart
 * from time_ms. */
static void json_add_index(cJSON *o, const icp_job *job)
{
    if (!job->index) {
        cli_json_null(o, "index");
        return;
    }
    cJSON *ix = cli_json_index(job->index);
    cli_json_string(ix, "origin", job->index_loaded ? "file" : "built");
    if (job->index_loaded)
        cli_json_number(ix, "load_ms", job->index_load_ms);
    cli_json_put(o, "index", ix);
    ptreg_model_index_info info;
    ptreg_model_index_get_info(job->index, &info);
    cli_json_number(o, "index_build_ms", info.kdtree_ms + info.delaunay_ms);
}

/* The device and, on a GPU, what the resident model cost apart from time_ms. */
static void json_add_device(cJSON *o, const icp_job *job)
{
    char name[32], label[160];
    cli_json_string(o, "device", ptreg_device_format(&job->device, name, sizeof name));
    cli_json_string(o, "device_name", device_label(job, label, sizeof label));
    if (!job->model)
        return;
    ptreg_icp_model_info info;
    ptreg_icp_model_get_info(job->model, &info);
    cli_json_number(o, "model_upload_ms", info.upload_ms);
    cli_json_number(o, "kernel_compile_ms", info.compile_ms);
    cli_json_number(o, "device_bytes", (double)info.device_bytes);
}

static int print_json(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r,
                      const cli_result *res)
{
    cJSON *o = cli_result_json(res);
    cli_json_string(o, "method", ptreg_icp_method_name(opt->method));
    cli_json_string(o, "kernel", ptreg_robust_kernel_name(opt->kernel));
    if (opt->kernel)
        cli_json_number(o, "kernel_scale", opt->kernel_scale);
    cli_json_string(o, "optimizer", opt->lm_lambda > 0.0 ? "lm" : ptreg_icp_uses_gauss_newton(opt) ? "gn" : "horn");
    if (opt->lm_lambda > 0.0)
        cli_json_number(o, "lm_lambda", opt->lm_lambda);
    if (normals_source(opt, 1))
        cli_json_string(o, "target_normals", normals_source(opt, 1));
    if (normals_source(opt, 0))
        cli_json_string(o, "source_normals", normals_source(opt, 0));
    cli_json_number(o, "source_points", (double)job->source_points);
    if (job->voxel > 0.0) {
        cli_json_number(o, "voxel", job->voxel);
        cli_json_number(o, "source_points_used", (double)job->source.n);
        cli_json_number(o, "target_points_used", (double)(job->target.xyz ? job->target.n : job->target_points));
        cli_json_number(o, "downsample_ms", job->downsample_ms);
    }
    cli_json_number(o, "target_points", (double)job->target_points);
    cli_json_number(o, "dropped_nonfinite", (double)(job->source.dropped_nonfinite + job->target.dropped_nonfinite));
    if (job->asked_auto)
        cli_json_string(o, "nn_auto", r->nn_measured ? "measured" : "rule");
    else
        cli_json_null(o, "nn_auto");
    json_add_index(o, job);
    json_add_device(o, job);
    cli_json_result(o, ptreg_result_table_find("icp"), r);
    return cli_result_json_print(o, res);
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
        const cli_result res = {"icp",
                                job.source_path,
                                job.target_path,
                                r->transformation,
                                r->rmse,
                                r->fitness,
                                (double)r->pairs,
                                r->iterations,
                                r->converged,
                                r->stop_reason,
                                r->time_ms,
                                times,
                                repeat,
                                cli_has(&a, "truth") ? truth : NULL,
                                &dist};
        if (!rc && (cli_has(&a, "json") || cli_report()))
            rc = print_json(&job, &opt, r, &res);
        if (!rc && !cli_has(&a, "json"))
            print_human(&job, &opt, r, &res);
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
