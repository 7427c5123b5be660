/* What ptreg icp reports: the human lines and the JSON, each with where
 * it ran, the index and the resident model's costs apart from time_ms. */
#include "cli/icp_report.h"

#include <stdio.h>

#include "cli/files.h"
#include "ptreg/device.h"

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

void cli_icp_print_human(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r,
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

int cli_icp_print_json(const icp_job *job, const ptreg_icp_options *opt, const ptreg_icp_result *r,
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
