/* What the registration commands share: --repeat, the result's text and
 * JSON, the moved source and the transform written (registration.h). */
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
