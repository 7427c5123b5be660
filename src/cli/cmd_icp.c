/* ptreg icp: rigid point-to-point ICP of SOURCE onto TARGET. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common.h"

static const cli_option icp_options[] = {
    {"output", 'o', "FILE", "write SOURCE moved onto TARGET (format from the extension)"},
    {"transform-out", 't', "FILE", "write the 4x4 result (text, row-major)"},
    {"max-iter", 0, "N", "most transform updates (default 30)"},
    {"tol", 0, "T", "stop when the MSE drops by less than T; 0 runs all iterations "
                    "(default 1e-10 x target bounding-box diagonal^2)"},
    {"max-dist", 0, "D", "leave out pairs farther apart than D (default: no limit)"},
    {"nn", 0, "METHOD", "nearest neighbours: auto, brute or kdtree (default auto)"},
    {"filter-sigma", 0, "S", "leave out pairs whose error is over mean + S std (default off)"},
    {"filter-start", 0, "K", "first iteration (0-based) of the sigma filter (default 0)"},
    {"trim", 0, "F", "keep the closest fraction F of the pairs, (0, 1] (default 1)"},
    {"init", 0, "FILE", "initial 4x4 transform of SOURCE (default identity)"},
    {"truth", 0, "FILE", "known answer: report the rotation and translation error"},
    {"threads", 0, "N", "threads (default: all cores, or env PTREG_NUM_THREADS)"},
    {"repeat", 0, "N", "run the registration N times in one process and report the median time (default 1)"},
    {"device", 0, "DEV", "auto, cpu or cuda (default auto)"},
    {"ascii", 0, NULL, "write --output as text (PLY/PCD)"},
    {"json", 0, NULL, "print the result as one JSON object on stdout"},
};

const cli_command cli_cmd_icp = {
    "icp",
    "SOURCE TARGET [options]",
    "Register SOURCE onto TARGET by point-to-point ICP (Besl & McKay, Horn's quaternion solution).",
    "Each iteration pairs every SOURCE point with its exact nearest TARGET point, leaves\n"
    "out pairs by --max-dist, then the sigma filter, then --trim, and moves SOURCE by the\n"
    "rigid transform that best aligns the pairs. The result takes SOURCE onto TARGET.\n"
    "Clouds: PLY, PCD, XYZ/CSV/TXT, VTK. time_ms counts from both clouds in memory to\n"
    "the result, the search structure's build included.",
    icp_options,
    sizeof icp_options / sizeof icp_options[0],
    2,
    2,
};

static int read_icp_options(const cli_args *a, ptreg_icp_options *o)
{
    int rc = 0;
    rc = rc ? rc : cli_int(a, "max-iter", 0, 1000000, &o->max_iter);
    rc = rc ? rc : cli_double(a, "tol", 0.0, 1e300, &o->tol);
    rc = rc ? rc : cli_double(a, "max-dist", 0.0, 1e300, &o->max_dist);
    rc = rc ? rc : cli_double(a, "filter-sigma", 0.0, 1e6, &o->filter_sigma);
    rc = rc ? rc : cli_int(a, "filter-start", 0, 1000000, &o->filter_start);
    rc = rc ? rc : cli_double(a, "trim", 1e-9, 1.0, &o->trim);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_parse_device(a, &o->device);
    if (rc)
        return rc;
    if (cli_has(a, "max-dist") && !(o->max_dist > 0.0)) {
        cli_error("icp", "--max-dist must be > 0");
        return EXIT_USAGE;
    }
    const char *nn = cli_string(a, "nn", "auto");
    if (ptreg_nn_method_parse(nn, &o->nn)) {
        cli_error("icp", "--nn: '%s' is not auto, brute or kdtree", nn);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* The timings of --repeat runs; the reported time_ms is their median. */
typedef struct run_times {
    double *ms;
    int count;
} run_times;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_ms(const run_times *rt)
{
    double *sorted = malloc((size_t)rt->count * sizeof *sorted);
    if (!sorted)
        return rt->ms[rt->count - 1];
    memcpy(sorted, rt->ms, (size_t)rt->count * sizeof *sorted);
    qsort(sorted, (size_t)rt->count, sizeof *sorted, cmp_double);
    double m = rt->count % 2 ? sorted[rt->count / 2] : 0.5 * (sorted[rt->count / 2 - 1] + sorted[rt->count / 2]);
    free(sorted);
    return m;
}

static void print_human(const char **paths, const ptreg_cloud *src, const ptreg_cloud *tgt,
                        const ptreg_icp_result *r, const double *truth)
{
    printf("ptreg icp: %s (%zu points) onto %s (%zu points), nn %s, %d threads\n", paths[0], src->n,
           paths[1], tgt->n, ptreg_nn_method_name(r->nn), ptreg_get_num_threads());
    printf("  iterations %d, stopped: %s\n", r->iterations, ptreg_stop_reason_name(r->stop_reason));
    printf("  rmse %.6g, fitness %.4f (%zu pairs)\n", r->rmse, r->fitness, r->pairs);
    printf("  time %.2f ms (search build %.2f ms)\n", r->time_ms, r->build_ms);
    printf("  transformation (SOURCE -> TARGET):\n");
    cli_print_matrix("    ", r->transformation);
    if (truth) {
        double angle, trans;
        ptreg_transform_difference(truth, r->transformation, &angle, &trans);
        printf("  pose error vs truth: rotation %.6f deg, translation %.6g\n", angle, trans);
    }
}

static int print_json(const char **paths, const ptreg_cloud *src, const ptreg_cloud *tgt,
                      const ptreg_icp_result *r, const double *truth, const run_times *rt)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "command", "icp");
    cJSON_AddStringToObject(o, "source", paths[0]);
    cJSON_AddStringToObject(o, "target", paths[1]);
    cJSON_AddNumberToObject(o, "source_points", (double)src->n);
    cJSON_AddNumberToObject(o, "target_points", (double)tgt->n);
    cJSON_AddNumberToObject(o, "dropped_nonfinite", (double)(src->dropped_nonfinite + tgt->dropped_nonfinite));
    cJSON_AddItemToObject(o, "transformation", cli_json_matrix(r->transformation));
    cJSON_AddNumberToObject(o, "rmse", r->rmse);
    cJSON_AddNumberToObject(o, "fitness", r->fitness);
    cJSON_AddNumberToObject(o, "pairs", (double)r->pairs);
    cJSON_AddNumberToObject(o, "iterations", r->iterations);
    cJSON_AddBoolToObject(o, "converged", r->converged);
    cJSON_AddStringToObject(o, "stop_reason", ptreg_stop_reason_name(r->stop_reason));
    cJSON_AddNumberToObject(o, "time_ms", r->time_ms);
    cJSON_AddNumberToObject(o, "build_ms", r->build_ms);
    if (rt->count > 1)
        cJSON_AddItemToObject(o, "times_ms", cJSON_CreateDoubleArray(rt->ms, rt->count));
    cJSON_AddStringToObject(o, "nn", ptreg_nn_method_name(r->nn));
    cJSON_AddNumberToObject(o, "threads", ptreg_get_num_threads());
    cJSON_AddItemToObject(o, "mse", cJSON_CreateDoubleArray(r->mse, r->iterations + 1));
    if (truth) {
        double angle, trans;
        ptreg_transform_difference(truth, r->transformation, &angle, &trans);
        cJSON_AddNumberToObject(o, "rotation_error_deg", angle);
        cJSON_AddNumberToObject(o, "translation_error", trans);
    }
    cJSON_AddStringToObject(o, "version", ptreg_version());
    return cli_json_print(o);
}

/* Writes the moved source and the transform; nothing is written unless
 * the registration succeeded. */
static int write_outputs(const cli_args *a, const ptreg_cloud *src, const ptreg_icp_result *r)
{
    int rc = EXIT_OK;
    if (cli_has(a, "output")) {
        ptreg_cloud moved;
        ptreg_error err;
        if (ptreg_cloud_alloc(&moved, src->n, src->normals != NULL, &err)) {
            cli_error("icp", "%s", err.message);
            return EXIT_RUNTIME;
        }
        ptreg_transform_points(r->transformation, src->xyz, moved.xyz, src->n);
        if (src->normals)
            ptreg_transform_vectors(r->transformation, src->normals, moved.normals, src->n);
        rc = cli_write_cloud("icp", cli_string(a, "output", NULL), &moved, cli_has(a, "ascii"));
        ptreg_cloud_free(&moved);
    }
    if (!rc && cli_has(a, "transform-out"))
        rc = cli_write_transform("icp", cli_string(a, "transform-out", NULL), r->transformation);
    return rc;
}

/* Runs the registration `repeat` times, keeping the last result; every run
 * must give the same bits (ptreg is deterministic), which is checked. */
static ptreg_status run_repeated(const ptreg_cloud *src, const ptreg_cloud *tgt, const ptreg_icp_options *opt,
                                 int repeat, ptreg_icp_result *r, run_times *rt, ptreg_error *err)
{
    for (int i = 0; i < repeat; i++) {
        ptreg_icp_result cur;
        ptreg_status st = ptreg_icp(src->xyz, src->n, tgt->xyz, tgt->n, opt, &cur, err);
        if (st) {
            if (i)
                ptreg_icp_result_free(r);
            return st;
        }
        rt->ms[rt->count++] = cur.time_ms;
        int same = !i || memcmp(cur.transformation, r->transformation, sizeof cur.transformation) == 0;
        if (i)
            ptreg_icp_result_free(r);
        *r = cur;
        if (!same) {
            ptreg_icp_result_free(r);
            return ptreg_error_set(err, PTREG_ERR_RUNTIME, "run %d of %d gave a different result", i + 1, repeat);
        }
    }
    return PTREG_OK;
}

int cli_run_icp(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse(&cli_cmd_icp, argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    int repeat = 1;
    if ((rc = read_icp_options(&a, &opt)) || (rc = cli_int(&a, "repeat", 1, 1000, &repeat)))
        return rc;
    double truth[16];
    if (cli_has(&a, "init") && (rc = cli_read_transform("icp", cli_string(&a, "init", NULL), opt.init)))
        return rc;
    if (cli_has(&a, "truth") && (rc = cli_read_transform("icp", cli_string(&a, "truth", NULL), truth)))
        return rc;
    ptreg_cloud src, tgt;
    ptreg_cloud_init(&src);
    ptreg_cloud_init(&tgt);
    int json = cli_has(&a, "json");
    if ((rc = cli_load_cloud("icp", a.positional[0], &src, 0)) ||
        (rc = cli_load_cloud("icp", a.positional[1], &tgt, 0))) {
        ptreg_cloud_free(&src);
        return rc;
    }
    ptreg_icp_result r;
    ptreg_error err;
    run_times rt = {calloc((size_t)repeat, sizeof(double)), 0};
    ptreg_status st = rt.ms ? run_repeated(&src, &tgt, &opt, repeat, &r, &rt, &err)
                            : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    if (st) {
        cli_error("icp", "%s", err.message);
        rc = cli_exit_code(st, 0);
    } else {
        r.time_ms = median_ms(&rt);
        rc = write_outputs(&a, &src, &r);
        const double *t = cli_has(&a, "truth") ? truth : NULL;
        if (!rc && json)
            rc = print_json(a.positional, &src, &tgt, &r, t, &rt);
        else if (!rc)
            print_human(a.positional, &src, &tgt, &r, t);
        ptreg_icp_result_free(&r);
    }
    free(rt.ms);
    ptreg_cloud_free(&src);
    ptreg_cloud_free(&tgt);
    return rc;
}
