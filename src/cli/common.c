#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "ptreg/device.h"
#include "ptreg/io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_exit_code(ptreg_status status, int reading)
{
    switch (status) {
    case PTREG_OK: return EXIT_OK;
    case PTREG_ERR_FORMAT: return EXIT_BAD_INPUT;
    case PTREG_ERR_UNSUPPORTED:
    case PTREG_ERR_IO: return reading ? EXIT_BAD_INPUT : EXIT_RUNTIME;
    case PTREG_ERR_ARG: return reading ? EXIT_BAD_INPUT : EXIT_USAGE;
    case PTREG_ERR_NOMEM:
    case PTREG_ERR_RUNTIME: break;
    }
    return EXIT_RUNTIME;
}

/* One command's frame: every cloud it reads is expressed relative to the
 * first one's origin (ptreg_cloud.origin), so that the algorithms see
 * small numbers in one frame, and what it prints or writes is turned back
 * into world coordinates. */
static double frame_origin[3];
static int frame_set;

int cli_join_frame(const char *cmd, const char *path, ptreg_cloud *cloud)
{
    if (!frame_set) {
        memcpy(frame_origin, cloud->origin, sizeof frame_origin);
        frame_set = 1;
        return EXIT_OK;
    }
    ptreg_error err;
    if (ptreg_cloud_set_origin(cloud, frame_origin, &err) == PTREG_OK)
        return EXIT_OK;
    cli_error(cmd, "%s: %s", path, err.message);
    ptreg_cloud_free(cloud);
    return EXIT_BAD_INPUT;
}

int cli_frame_at_zero(const char *cmd, const char *what)
{
    if (frame_set && (frame_origin[0] != 0.0 || frame_origin[1] != 0.0 || frame_origin[2] != 0.0)) {
        cli_error(cmd, "%s keeps no origin (its points are float32 world coordinates), but the clouds are far from "
                  "zero (origin %.17g %.17g %.17g): give the model's cloud instead",
                  what, frame_origin[0], frame_origin[1], frame_origin[2]);
        return EXIT_BAD_INPUT;
    }
    frame_set = 1;
    return EXIT_OK;
}

void cli_transform_to_local(const double world[16], double local[16])
{
    ptreg_transform_to_local(world, frame_origin, local);
}

void cli_transform_to_world(const double local[16], double world[16])
{
    ptreg_transform_to_world(local, frame_origin, world);
}

void cli_format_coordinate(char buf[32], double v)
{
    const int world = frame_origin[0] != 0.0 || frame_origin[1] != 0.0 || frame_origin[2] != 0.0;
    char text[32]; /* not buf itself: gcc's -fsanitize builds see a NULL buf in the loop's snprintf */
    int digits = 9;
    for (; world && digits < 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v)
            break;
    }
    snprintf(text, sizeof text, "%.*g", digits, v);
    memcpy(buf, text, sizeof text);
}

int cli_load_cloud(const char *cmd, const char *path, ptreg_cloud *cloud, int quiet)
{
    return cli_load_cloud_with(cmd, path, NULL, cloud, quiet);
}

int cli_load_cloud_with(const char *cmd, const char *path, const ptreg_read_options *ro, ptreg_cloud *cloud,
                        int quiet)
{
    ptreg_error err;
    ptreg_status st = ptreg_cloud_read_with(path, ro, cloud, &err);
    if (st) {
        cli_error(cmd, "%s", err.message);
        return cli_exit_code(st, 1);
    }
    int rc = cli_join_frame(cmd, path, cloud);
    if (rc)
        return rc;
    if (cloud->dropped_nonfinite && !quiet)
        fprintf(stderr, "ptreg %s: warning: %s: dropped %zu points with non-finite coordinates\n", cmd, path,
                cloud->dropped_nonfinite);
    return EXIT_OK;
}

int cli_load_shape(const char *cmd, const char *path, ptreg_cloud *cloud, int quiet)
{
    int rc = cli_load_cloud(cmd, path, cloud, quiet);
    if (rc)
        return rc;
    ptreg_error err;
    if (!ptreg_check_shape(path, cloud->xyz, cloud->n, &err))
        return EXIT_OK;
    cli_error(cmd, "%s", err.message);
    ptreg_cloud_free(cloud);
    return EXIT_BAD_INPUT;
}

int cli_load_pair(const char *cmd, const cli_args *a, int shape, ptreg_cloud *s, ptreg_cloud *t)
{
    int (*load)(const char *, const char *, ptreg_cloud *, int) = shape ? cli_load_shape : cli_load_cloud;
    int rc = load(cmd, a->positional[0], s, cli_quiet(a));
    if (!rc && (rc = load(cmd, a->positional[1], t, cli_quiet(a))))
        ptreg_cloud_free(s);
    return rc;
}

int cli_write_cloud(const char *cmd, const char *path, const ptreg_cloud *cloud, int ascii)
{
    ptreg_write_options opt;
    ptreg_write_options_default(&opt);
    opt.ascii = ascii;
    ptreg_error err;
    ptreg_status st = ptreg_cloud_write(path, cloud, &opt, &err);
    if (st) {
        cli_error(cmd, "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

int cli_transform_option(const cli_args *a, const char *name, double T[16])
{
    return cli_has(a, name) ? cli_read_transform(a->cmd->name, cli_string(a, name, NULL), T) : EXIT_OK;
}

int cli_read_transform(const char *cmd, const char *path, double T[16])
{
    ptreg_error err;
    ptreg_status st = ptreg_transform_read(path, T, &err);
    if (st) {
        cli_error(cmd, "%s", err.message);
        return cli_exit_code(st, 1);
    }
    const double off = ptreg_transform_make_rigid(T);
    if (!(off <= PTREG_NEARLY_RIGID_TOL)) {
        cli_error(cmd, "%s: the matrix is not a rigid transform (its rotation is %.3g from orthonormal with "
                       "determinant 1; at most %g is repaired)",
                  path, off, PTREG_NEARLY_RIGID_TOL);
        return EXIT_BAD_INPUT;
    }
    if (off > PTREG_RIGID_TOL)
        fprintf(stderr, "ptreg %s: warning: %s: the rotation is %.3g from orthonormal; its nearest rotation is used\n",
                cmd, path, off);
    return EXIT_OK;
}

int cli_write_transform(const char *cmd, const char *path, const double T[16])
{
    ptreg_error err;
    double world[16];
    cli_transform_to_world(T, world);
    ptreg_status st = ptreg_transform_write(path, world, &err);
    if (st) {
        cli_error(cmd, "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

int cli_apply_threads(const cli_args *args)
{
    int threads = 0;
    int rc = cli_int(args, "threads", 0, 4096, &threads);
    if (!rc && threads > 0)
        ptreg_set_num_threads(threads);
    return rc;
}

int cli_device(const cli_args *args, ptreg_device *device)
{
    const char *v = cli_string(args, "device", "auto");
    if (ptreg_device_parse(v, device)) {
        cli_error(args->cmd->name, "--device: '%s' is not auto, cpu, cuda[:N] or opencl[:N] (see 'ptreg devices')", v);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cli_device_usable(const cli_args *args, ptreg_status resolved, const ptreg_error *err)
{
    if (!resolved)
        return EXIT_OK;
    cli_error(args->cmd->name, "%s (see 'ptreg devices')", err->message);
    return EXIT_USAGE;
}

int cli_device_cpu_only(const cli_args *args, const char *operation)
{
    ptreg_device asked, on;
    ptreg_error err;
    int rc = cli_device(args, &asked);
    return rc ? rc : cli_device_usable(args, ptreg_device_resolve(&asked, 0, operation, &on, &err), &err);
}

int cli_quiet(const cli_args *args) { return cli_given(args, "quiet") || cli_given(args, "json"); }

cJSON *cli_json_matrix(const double T[16])
{
    cJSON *rows = cJSON_CreateArray();
    for (int r = 0; r < 4; r++)
        cli_json_push(rows, cJSON_CreateDoubleArray(T + 4 * r, 4));
    return rows;
}

cJSON *cli_json_world_matrix(const double local[16])
{
    double world[16];
    cli_transform_to_world(local, world);
    return cli_json_matrix(world);
}

static cli_json_sink json_sink;

void cli_json_set_sink(cli_json_sink sink) { json_sink = sink; }

void cli_json_distances(cJSON *o, const cli_distances *d)
{
    if (!d || !d->values)
        return;
    cJSON *j = cJSON_CreateObject();
    cli_json_number(j, "min", d->min);
    cli_json_number(j, "median", d->median);
    cli_json_number(j, "mean", d->mean);
    cli_json_number(j, "max", d->max);
    cli_json_put(o, "distance_to_target", j);
}

int cli_json_print(cJSON *obj)
{
    cli_json_device_work(obj);
    char *text = cJSON_Print(obj);
    cJSON_Delete(obj);
    if (!text || cli_out_of_memory()) {
        free(text);
        fprintf(stderr, "ptreg: out of memory for the JSON result\n");
        return EXIT_RUNTIME;
    }
    if (json_sink) {
        int rc = json_sink(text);
        free(text);
        return rc;
    }
    int ok = puts(text) >= 0 && fflush(stdout) == 0;
    free(text);
    if (!ok)
        fprintf(stderr, "ptreg: cannot write the JSON result to stdout: %s\n", strerror(errno));
    return ok ? EXIT_OK : EXIT_RUNTIME;
}

void cli_print_matrix(const char *indent, const double T[16])
{
    for (int r = 0; r < 4; r++)
        printf("%s%12.8f %12.8f %12.8f %12.8f\n", indent, T[4 * r], T[4 * r + 1], T[4 * r + 2], T[4 * r + 3]);
}

/* The times stay in run order (--json lists them): the median of a copy,
 * on the stack so that it cannot fail, as --repeat is at most 1000. */
#define MEDIAN_TIMES_MAX 1000

double cli_median(const double *v, int n)
{
    double copy[MEDIAN_TIMES_MAX];
    if (n < 1 || n > MEDIAN_TIMES_MAX)
        return NAN;
    memcpy(copy, v, (size_t)n * sizeof *copy);
    return ptreg_median(copy, (size_t)n);
}

ptreg_status cli_repeat(int repeat, cli_run_fn fn, void *ctx, double *times, double *median, ptreg_error *err)
{
    void *first = NULL;
    size_t first_size = 0;
    ptreg_status st = PTREG_OK;
    for (int i = 0; i < repeat && !st; i++) {
        const void *bits;
        size_t size;
        cli_device_call_start();
        st = fn(ctx, &times[i], &bits, &size, err);
        cli_device_call_stop();
        if (st)
            break;
        if (i == 0 && repeat > 1) {
            if (!(first = malloc(size ? size : 1)))
                st = ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
            else
                memcpy(first, bits, size), first_size = size;
        } else if (i > 0 && (size != first_size || memcmp(bits, first, size))) {
            st = ptreg_error_set(err, PTREG_ERR_RUNTIME, "run %d of %d gave a different result", i + 1, repeat);
        }
    }
    free(first);
    if (!st)
        *median = cli_median(times, repeat);
    return st;
}

cJSON *cli_result_json(const cli_result *r)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "command", r->command);
    cli_json_string(o, "source", r->source);
    cli_json_string(o, "target", r->target);
    cli_json_put(o, "transformation", cli_json_world_matrix(r->transformation));
    cli_json_number(o, "rmse", r->rmse);
    cli_json_number(o, "fitness", r->fitness);
    if (r->pairs >= 0)
        cli_json_number(o, "pairs", r->pairs);
    if (r->iterations >= 0) {
        cli_json_number(o, "iterations", r->iterations);
        cli_json_bool(o, "converged", r->converged);
        cli_json_string(o, "stop_reason", ptreg_stop_reason_name(r->stop_reason));
    }
    cli_json_number(o, "time_ms", r->time_ms);
    if (r->runs > 1)
        cli_json_put(o, "times_ms", cJSON_CreateDoubleArray(r->times, r->runs));
    cli_json_distances(o, r->distances);
    return o;
}

int cli_result_json_print(cJSON *o, const cli_result *r)
{
    cli_json_number(o, "threads", ptreg_get_num_threads());
    if (r->truth) {
        double angle, trans;
        ptreg_transform_difference(r->truth, r->transformation, &angle, &trans);
        cli_json_number(o, "rotation_error_deg", angle);
        cli_json_number(o, "translation_error", trans);
    }
    cli_json_string(o, "version", ptreg_version());
    return cli_json_print(o);
}

void cli_result_print_iterations(const cli_result *r)
{
    printf("  iterations %d, stopped: %s\n", r->iterations, ptreg_stop_reason_name(r->stop_reason));
}

void cli_result_print_pose(const cli_result *r)
{
    double world[16];
    cli_transform_to_world(r->transformation, world);
    printf("  transformation (SOURCE -> TARGET):\n");
    cli_print_matrix("    ", world);
    if (r->truth) {
        double angle, trans;
        ptreg_transform_difference(r->truth, r->transformation, &angle, &trans);
        printf("  pose error vs truth: rotation %.6f deg, translation %.6g\n", angle, trans);
    }
}

/* Writes the moved source and the transform; nothing is written unless
 * the registration succeeded. */
int cli_write_registration(const char *cmd, const cli_args *a, const ptreg_cloud *src, const double T[16])
{
    int rc = EXIT_OK;
    if (cli_has(a, "output")) {
        ptreg_cloud moved;
        ptreg_error err;
        if (ptreg_cloud_alloc(&moved, src->n, src->normals != NULL, &err)) {
            cli_error(cmd, "%s", err.message);
            return EXIT_RUNTIME;
        }
        memcpy(moved.origin, src->origin, sizeof moved.origin);
        ptreg_transform_points(T, src->xyz, moved.xyz, src->n);
        if (src->normals)
            ptreg_transform_vectors(T, src->normals, moved.normals, src->n);
        /* What the points carry moves with them: lent for the write, not copied. */
        moved.rgb = src->rgb;
        moved.intensity = src->intensity;
        moved.classification = src->classification;
        rc = cli_write_cloud(cmd, cli_string(a, "output", NULL), &moved, cli_has(a, "ascii"));
        moved.rgb = NULL;
        moved.intensity = NULL;
        moved.classification = NULL;
        ptreg_cloud_free(&moved);
    }
    if (!rc && cli_has(a, "transform-out"))
        rc = cli_write_transform(cmd, cli_string(a, "transform-out", NULL), T);
    return rc;
}

