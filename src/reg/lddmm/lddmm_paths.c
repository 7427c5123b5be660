/* The paths of points carried along an LDDMM flow: where ptreg_lddmm_warp
 * gives each point's end, this gives every time point's position (for a
 * page's paths, or an animation). */
#include <stdlib.h>
#include <string.h>

#include "ptreg/lddmm.h"
#include "reg/lddmm/lddmm_impl.h"

/* The flow's state over a step: the landmarks (q, p) and the points carried. */
typedef struct warp_state {
    double *q, *p, *q1, *p1, *x;
    size_t n, m;
} warp_state;

/* One step of 1 / (T - 1) from (q, p): the flow is homogeneous in p (H is
 * quadratic in it), so a step of h with p is the one step of a [0, 1] flow
 * of 2 time points with h p: the warp's steps up to rounding (the paths
 * end within 1e-5 of the warp's points; tests/cli/lddmm.sh). */
static ptreg_status warp_step(warp_state *w, const lddmm_choice *c, const ptreg_lddmm_options *one, double h,
                              ptreg_error *err)
{
    for (size_t i = 0; i < 3 * w->n; i++)
        w->p[i] *= h;
    ptreg_status st = lddmm_warp_on(c, w->q, w->p, w->n, one, w->x, w->m, w->x, err);
    st = st ? st : lddmm_shoot_on(c, w->q, w->p, w->n, one, w->q1, w->p1, NULL, err);
    for (size_t i = 0; !st && i < 3 * w->n; i++)
        w->q[i] = w->q1[i], w->p[i] = w->p1[i] / h;
    return st;
}

ptreg_status ptreg_lddmm_warp_paths(const double *q0, const double *p0, size_t n, const ptreg_lddmm_options *opt,
                                    const double *x, size_t m, double *paths, ptreg_error *err)
{
    ptreg_lddmm_options d;
    if (!opt)
        ptreg_lddmm_options_default(&d), opt = &d;
    if (!q0 || !p0 || (m && (!x || !paths)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm warp paths: no landmarks, momenta, points or paths");
    if (opt->time_points < 2)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm warp paths: %d time points: at least 2 are needed",
                               opt->time_points);
    const size_t T = (size_t)opt->time_points;
    double *buf = malloc((12 * n + 3 * m + 1) * sizeof *buf);
    if (!buf)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the paths");
    warp_state w = {buf, buf + 3 * n, buf + 6 * n, buf + 9 * n, buf + 12 * n, n, m};
    memcpy(w.q, q0, 3 * n * sizeof *buf);
    memcpy(w.p, p0, 3 * n * sizeof *buf);
    if (m)
        memcpy(w.x, x, 3 * m * sizeof *buf);
    /* the steps' flow, on the engine chosen once for them all */
    ptreg_lddmm_options one = *opt;
    one.time_points = 2;
    lddmm_choice c;
    ptreg_status st = lddmm_choice_make(&one, n, &c, err);
    for (size_t t = 0; !st && t < T; t++) {
        st = t ? warp_step(&w, &c, &one, 1.0 / (double)(T - 1), err) : PTREG_OK;
        for (size_t i = 0; !st && i < m; i++)
            for (int k = 0; k < 3; k++)
                paths[3 * (i * T + t) + k] = w.x[3 * i + k];
    }
    free(buf);
    return st;
}
