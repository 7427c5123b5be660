/* Clouds and transforms in and out of files, the world frame of the
 * clouds a command reads (files.h). */
#include "cli/files.h"
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
        cli_error(cmd,
                  "%s keeps no origin (its points are float32 world coordinates), but the clouds are far from "
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
    /* in a world frame, or far enough from zero that 9 digits lose a millimetre (a pose in UTM) */
    const int world = frame_origin[0] != 0.0 || frame_origin[1] != 0.0 || frame_origin[2] != 0.0 ||
                      !(fabs(v) < PTREG_ORIGIN_THRESHOLD);
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

int cli_load_cloud_with(const char *cmd, const char *path, const ptreg_read_options *ro, ptreg_cloud *cloud, int quiet)
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
        cli_error(cmd,
                  "%s: the matrix is not a rigid transform (its rotation is %.3g from orthonormal with "
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


int cli_quiet(const cli_args *args) { return cli_given(args, "quiet") || cli_given(args, "json"); }
