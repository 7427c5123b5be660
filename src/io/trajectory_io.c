/* TUM trajectories (docs/FORMATS.md): one pose a line, "timestamp tx ty tz
 * qx qy qz qw", what evo and the SLAM benchmarks read; track's --truth. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"

/* One line's 8 numbers into (t, T); 0 when it is not 8 finite numbers with
 * a quaternion that is not zero. */
static int parse_tum(const char *line, double *t, double T[16])
{
    double v[8];
    const char *p = line;
    for (int k = 0; k < 8; k++) {
        char *end;
        v[k] = strtod(p, &end);
        if (end == p || !isfinite(v[k]))
            return 0;
        p = end;
    }
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    const double q[4] = {v[7], v[4], v[5], v[6]}; /* w x y z */
    if (*p || !(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 0.0))
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

static ptreg_status read_lines(FILE *f, const char *path, ptreg_trajectory *tr, ptreg_error *err)
{
    char line[1024];
    size_t cap = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        const char *p = line + strspn(line, " \t\r\n");
        if (!*p || *p == '#')
            continue;
        ptreg_status st = grow(tr, &cap, path, err);
        if (st)
            return st;
        if (!parse_tum(p, &tr->t[tr->n], tr->pose + 16 * tr->n))
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "%s: line %zu: not a TUM pose (timestamp tx ty tz qx qy qz qw)", path, lineno);
        if (tr->n > 0 && !(tr->t[tr->n] > tr->t[tr->n - 1]))
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "%s: line %zu: the timestamp does not come after the last one", path, lineno);
        tr->n++;
    }
    return tr->n ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: no poses in it", path);
}

ptreg_status ptreg_trajectory_read(const char *path, ptreg_trajectory *tr, ptreg_error *err)
{
    memset(tr, 0, sizeof *tr);
    FILE *f = fopen(path, "r");
    if (!f)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot be read: %s", path, strerror(errno));
    ptreg_status st = read_lines(f, path, tr, err);
    fclose(f);
    if (st)
        ptreg_trajectory_free(tr);
    return st;
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
