/* What the lddmm and warp pages show (ptreg/report.h): the landmarks, the
 * target, the flow's paths (shot again: a result keeps only their ends)
 * and where they ended; for a warp, the points before and after and the
 * paths of some of them. */
#include <stdint.h>
#include <stdlib.h>

#include "ptreg/lddmm.h"
#include "ptreg/report.h"

/* The page's colours: template orange, target blue, paths grey, where the
 * template ended red (tableau10, told apart by most colour-blind eyes). */
#define COLOR_TEMPLATE 0xf28e2bu
#define COLOR_TARGET 0x4e79a7u
#define COLOR_PATHS 0x9c9c9cu
#define COLOR_ENDED 0xe15759u
#define COLOR_BEFORE 0x59a14fu /* warp: the points before (green), apart from the grey paths */
/* warp's paths: at most this many points' (their steps cost n landmarks
 * each), and fewer for long flows, so that the paths hold at most
 * WARP_PATH_POINTS_MAX points (--steps may be 100000). */
#define WARP_PATHS_MAX 2000
#define WARP_PATH_POINTS_MAX 400000

/* n points of doubles as the page's floats; NULL: no memory. */
static float *to_floats(const double *xyz, size_t n)
{
    float *f = malloc((n ? n : 1) * 3 * sizeof *f);
    for (size_t i = 0; f && i < 3 * n; i++)
        f[i] = (float)xyz[i];
    return f;
}

/* A cloud of doubles on the page, in one colour. */
static ptreg_status add_points(ptreg_report *r, const char *name, const double *xyz, size_t n, uint32_t color,
                               ptreg_error *err)
{
    float *f = to_floats(xyz, n);
    ptreg_status st = f ? ptreg_report_add_cloud(r, name, f, n, color, err)
                        : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    free(f);
    return st;
}

/* traj holds T states of n points (time major, as ptreg_lddmm_shoot gives
 * them); the page wants n paths of T points (point major). */
static ptreg_status add_time_major_paths(ptreg_report *r, const char *name, const double *traj, size_t T, size_t n,
                                         ptreg_error *err)
{
    float *paths = malloc((n ? n : 1) * T * 3 * sizeof *paths);
    if (!paths)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the paths");
    for (size_t t = 0; t < T; t++)
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++)
                paths[3 * (i * T + t) + k] = (float)traj[3 * (t * n + i) + k];
    ptreg_status st = ptreg_report_add_paths(r, name, paths, n, T, COLOR_PATHS, err);
    free(paths);
    return st;
}

ptreg_status ptreg_report_add_lddmm(ptreg_report *r, const double *q0, const double *target, size_t n,
                                    const ptreg_lddmm_options *o, const ptreg_lddmm_result *res, ptreg_error *err)
{
    const size_t T = (size_t)o->time_points;
    double *traj = malloc((n ? n : 1) * T * 3 * sizeof *traj);
    ptreg_status st = traj ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the paths");
    st = st ? st : add_points(r, "template", q0, n, COLOR_TEMPLATE, err);
    st = st ? st : add_points(r, "target", target, n, COLOR_TARGET, err);
    st = st ? st : ptreg_lddmm_shoot(q0, res->p0, n, o, NULL, NULL, traj, err);
    st = st ? st : add_time_major_paths(r, "paths", traj, T, n, err);
    st = st ? st : add_points(r, "template at t = 1", res->q1, n, COLOR_ENDED, err);
    free(traj);
    return st;
}

/* Up to WARP_PATHS_MAX of the points, evenly along their order, and their paths. */
static ptreg_status add_warp_paths(ptreg_report *r, const ptreg_lddmm_model *model, const ptreg_lddmm_options *o,
                                   const ptreg_cloud *before, ptreg_error *err)
{
    const size_t T = (size_t)o->time_points, most = T < WARP_PATH_POINTS_MAX / WARP_PATHS_MAX
                                                        ? WARP_PATHS_MAX
                                                        : (WARP_PATH_POINTS_MAX / T ? WARP_PATH_POINTS_MAX / T : 1);
    const size_t m = before->n < most ? before->n : most;
    double *x = malloc((m ? m : 1) * 3 * sizeof *x), *paths = malloc((m ? m : 1) * T * 3 * sizeof *paths);
    float *page = NULL;
    ptreg_status st = x && paths ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the paths");
    for (size_t i = 0; !st && i < m; i++) {
        const size_t from = (size_t)((double)i * (double)before->n / (double)m);
        for (int k = 0; k < 3; k++)
            x[3 * i + k] = before->xyz[3 * from + k];
    }
    st = st ? st : ptreg_lddmm_warp_paths(model->q0, model->p0, model->n, o, x, m, paths, err);
    if (!st && !(page = to_floats(paths, m * T)))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the paths");
    st = st ? st : ptreg_report_add_paths(r, "paths", page, m, T, COLOR_PATHS, err);
    free(x);
    free(paths);
    free(page);
    return st;
}

ptreg_status ptreg_report_add_warp(ptreg_report *r, const ptreg_lddmm_model *model, const ptreg_lddmm_options *o,
                                   const ptreg_cloud *before, const double *after, ptreg_error *err)
{
    ptreg_status st = add_points(r, "landmarks", model->q0, model->n, COLOR_TEMPLATE, err);
    st = st ? st : ptreg_report_add_cloud(r, "points before", before->xyz, before->n, COLOR_BEFORE, err);
    st = st ? st : add_points(r, "points after", after, before->n, COLOR_TARGET, err);
    st = st ? st : add_warp_paths(r, model, o, before, err);
    return st;
}
