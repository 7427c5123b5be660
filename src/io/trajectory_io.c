/* Trajectories (docs/FORMATS.md): TUM's "timestamp tx ty tz qx qy qz qw"
 * a line, what evo and the SLAM benchmarks read (track's --truth and -o),
 * and KITTI's 3x4 row-major [R | t] a line, without times; eval reads both. */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "io/testing.h"
#include "ptreg/io.h"

/* Up to max finite numbers of a line; how many, or -1 when something else
 * (text, NaN, infinity) is on it. */
static int line_numbers(const char *line, double *v, int max)
{
    const char *p = line;
    int k = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ',')
            p++;
        if (!*p)
            return k;
        char *end;
        const double x = strtod(p, &end);
        if (end == p || !isfinite(x) || k == max)
            return -1;
        v[k++] = x;
        p = end;
    }
}

/* TUM's 8 numbers into (t, T); 0 when the quaternion is zero. */
static int tum_pose(const double v[8], double *t, double T[16])
{
    const double q[4] = {v[7], v[4], v[5], v[6]}; /* w x y z */
    if (!(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 0.0))
        return 0;
    double R[9];
    ptreg_quaternion_to_matrix(q, R);
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++) {
        memcpy(T + 4 * r, R + 3 * r, 3 * sizeof *T);
        T[4 * r + 3] = v[1 + r];
    }
    *t = v[0];
    return 1;
}

/* KITTI's 12 numbers into T; 0 when [R | t] is not rigid to the files'
 * printed digits (the devkit's poses carry about 7). */
static int kitti_pose(const double v[12], double T[16])
{
    ptreg_transform_identity(T);
    memcpy(T, v, 12 * sizeof *T);
    return ptreg_transform_is_rigid(T, PTREG_TRAJECTORY_RIGID_TOL);
}

/* Room for one more pose; NOMEM when there is none. */
static ptreg_status grow(ptreg_trajectory *tr, size_t *cap, const char *path, ptreg_error *err)
{
    if (tr->n < *cap)
        return PTREG_OK;
    *cap = *cap ? 2 * *cap : 256;
    double *t = realloc(tr->t, *cap * sizeof *t);
    tr->t = t ? t : tr->t;
    double *pose = realloc(tr->pose, *cap * 16 * sizeof *pose);
    tr->pose = pose ? pose : tr->pose;
    return t && pose ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory reading %s", path);
}

static ptreg_status bad_line(ptreg_error *err, const char *path, size_t lineno, ptreg_trajectory_format format)
{
    if (format == PTREG_TRAJECTORY_KITTI)
        return ptreg_error_set(err, PTREG_ERR_FORMAT,
                               "%s: line %zu: not a KITTI pose (12 finite numbers, a rigid 3x4 [R | t] row by row)",
                               path, lineno);
    return ptreg_error_set(err, PTREG_ERR_FORMAT,
                           "%s: line %zu: not a TUM pose (timestamp tx ty tz qx qy qz qw, finite, the "
                           "quaternion not zero)",
                           path, lineno);
}

/* The first pose line decides the format: 8 numbers TUM, 12 KITTI; every
 * other line must be the same. KITTI's times are the poses' indices. */
static ptreg_status read_lines(FILE *f, const char *path, ptreg_trajectory *tr, ptreg_error *err)
{
    char line[4096];
    size_t cap = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line + strspn(line, " \t\r\n");
        if (!*p || *p == '#')
            continue;
        if (!strchr(line, '\n') && !feof(f))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: line %zu: longer than %zu characters", path, lineno,
                                   sizeof line - 2);
        double v[12];
        const int k = line_numbers(p, v, 12);
        if (tr->n == 0)
            tr->format = k == 12 ? PTREG_TRAJECTORY_KITTI : PTREG_TRAJECTORY_TUM;
        ptreg_status st = grow(tr, &cap, path, err);
        if (st)
            return st;
        double *t = &tr->t[tr->n], *T = tr->pose + 16 * tr->n;
        const int ok = tr->format == PTREG_TRAJECTORY_KITTI ? k == 12 && kitti_pose(v, T) : k == 8 && tum_pose(v, t, T);
        if (!ok && tr->n == 0 && k != 8)
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "%s: line %zu: not a pose: a TUM line holds 8 finite numbers (timestamp tx ty tz "
                                   "qx qy qz qw), a KITTI line 12 (a 3x4 [R | t] row by row)",
                                   path, lineno);
        if (!ok)
            return bad_line(err, path, lineno, tr->format);
        if (tr->format == PTREG_TRAJECTORY_KITTI)
            *t = (double)tr->n;
        if (tr->n > 0 && !(tr->t[tr->n] > tr->t[tr->n - 1]))
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "%s: line %zu: the timestamp %.17g does not come after the last one (%.17g)", path,
                                   lineno, tr->t[tr->n], tr->t[tr->n - 1]);
        tr->n++;
    }
    if (ferror(f))
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: read failed", path);
    return tr->n ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: no poses in it", path);
}

/* The lines of f (closed here), tr holding nothing on failure. */
static ptreg_status read_stream(FILE *f, const char *path, ptreg_trajectory *tr, ptreg_error *err)
{
    ptreg_status st = read_lines(f, path, tr, err);
    fclose(f);
    if (st)
        ptreg_trajectory_free(tr);
    return st;
}

ptreg_status ptreg_trajectory_read(const char *path, ptreg_trajectory *tr, ptreg_error *err)
{
    memset(tr, 0, sizeof *tr);
    FILE *f = fopen(path, "r");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot be read: %s", path, strerror(errno));
    return read_stream(f, path, tr, err);
}

ptreg_status ptreg_trajectory_read_memory(const void *data, size_t size, const char *name, ptreg_trajectory *tr,
                                          ptreg_error *err)
{
    memset(tr, 0, sizeof *tr);
    if (!size)
        return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: no poses in it", name);
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: cannot be read from memory: %s", name, strerror(errno));
    return read_stream(f, name, tr, err);
}

const double *ptreg_trajectory_at(const ptreg_trajectory *tr, double t)
{
    size_t lo = 0, hi = tr->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (tr->t[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    const double tol = 5e-7 + 1e-12 * fabs(t);
    if (lo < tr->n && fabs(tr->t[lo] - t) <= tol)
        return tr->pose + 16 * lo;
    if (lo > 0 && fabs(tr->t[lo - 1] - t) <= tol)
        return tr->pose + 16 * (lo - 1);
    return NULL;
}

void ptreg_trajectory_free(ptreg_trajectory *tr)
{
    free(tr->t);
    free(tr->pose);
    memset(tr, 0, sizeof *tr);
}

ptreg_status ptreg_kitti_calib_read(const char *path, double Tr[16], ptreg_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char line[4096];
    size_t lineno = 0;
    ptreg_status st = PTREG_ERR_FORMAT;
    while (st == PTREG_ERR_FORMAT && fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, "Tr:", 3) && strncmp(p, "Tr_velo_to_cam:", 15))
            continue;
        double v[12];
        if (line_numbers(strchr(p, ':') + 1, v, 12) != 12 || !kitti_pose(v, Tr)) {
            fclose(f);
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "%s: line %zu: Tr is not 12 finite numbers of a rigid 3x4 [R | t] row by row", path,
                                   lineno);
        }
        st = PTREG_OK;
    }
    const int failed = ferror(f);
    fclose(f);
    if (failed)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: read failed", path);
    return st ? ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: no 'Tr:' line (KITTI's velodyne-to-camera calibration)",
                                path)
              : PTREG_OK;
}
