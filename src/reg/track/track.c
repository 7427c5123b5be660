/* Tracking (track.h): each frame registered against one resident model
 * from a predicted pose, checked, and recovered by global registration when
 * the check fails. docs/ALGORITHMS.md, "Tracking". */
#include "ptreg/track.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/features.h"
#include "reg/global/global_impl.h"
#include "reg/icp/icp_impl.h"

#define PI 3.14159265358979323846

const char *ptreg_track_state_name(ptreg_track_state state)
{
    switch (state) {
    case PTREG_TRACK_TRACKED:
        return "tracked";
    case PTREG_TRACK_RECOVERED:
        return "recovered";
    case PTREG_TRACK_LOST:
        return "lost";
    }
    return "unknown";
}

const char *ptreg_track_predict_name(ptreg_track_predict predict)
{
    return predict == PTREG_PREDICT_NONE ? "none" : predict == PTREG_PREDICT_CONSTANT_VELOCITY ? "constant-velocity"
                                                                                                : "unknown";
}

int ptreg_track_predict_parse(const char *name, ptreg_track_predict *predict)
{
    if (!name)
        return -1;
    if (!strcmp(name, "none"))
        *predict = PTREG_PREDICT_NONE;
    else if (!strcmp(name, "constant-velocity"))
        *predict = PTREG_PREDICT_CONSTANT_VELOCITY;
    else
        return -1;
    return 0;
}

void ptreg_track_options_default(ptreg_track_options *opt)
{
    memset(opt, 0, sizeof *opt);
    ptreg_icp_options_default(&opt->icp);
    opt->icp.method = PTREG_ICP_PLANE;
    opt->icp.max_iter = 30; /* a frame starts near its pose (the prediction) */
    opt->predict = PTREG_PREDICT_CONSTANT_VELOCITY;
    ptreg_transform_identity(opt->init);
    opt->min_fitness = 0.3;
    opt->recover = 1;
    ptreg_register_options_default(&opt->recovery);
}

/* The last good poses (tracked or recovered) and their times: [1] the
 * latest, [0] the one before; `good` of them are set. */
typedef struct track_history {
    int good;
    double pose[2][16], time[2];
} track_history;

struct ptreg_tracker {
    const ptreg_model_index *index;
    ptreg_track_options opt;      /* with the derived numbers filled in */
    ptreg_icp_model *model;
    const float *normals;         /* the model's: the caller's or owned_normals */
    float *owned_normals;
    register_target recovery;     /* the model's centroids, normals and FPFH, prepared once */
    int recovery_ready;
    track_history hist;
    double last_t;                /* the last frame's time */
    size_t frames;
};

/* T^s for a rigid motion T: its rotation angle about the same axis and its
 * translation, each scaled by s (exact for s = 1; for other s the motion is
 * treated as a rotation and a translation made together at constant rates). */
static void motion_scale(const double T[16], double s, double out[16])
{
    double R[9], q[4];
    ptreg_transform_rotation(T, R);
    ptreg_matrix_to_quaternion(R, q);
    const double w = fmin(1.0, fmax(-1.0, q[0])), half = acos(w), sin_half = sin(half);
    const double t[3] = {s * T[3], s * T[7], s * T[11]};
    if (sin_half < 1e-12) {
        ptreg_transform_identity(out);
        out[3] = t[0], out[7] = t[1], out[11] = t[2];
        return;
    }
    const double axis[3] = {q[1] / sin_half, q[2] / sin_half, q[3] / sin_half};
    ptreg_transform_from_axis_angle(axis, s * 2.0 * half * 180.0 / PI, t, out);
}

/* The prediction of a frame at time t. */
static void predict(const ptreg_tracker *tr, double t, double P[16])
{
    const track_history *h = &tr->hist;
    if (h->good == 0) {
        memcpy(P, tr->opt.init, 16 * sizeof *P);
        return;
    }
    memcpy(P, h->pose[1], 16 * sizeof *P);
    const double dt_last = h->time[1] - h->time[0];
    if (tr->opt.predict != PTREG_PREDICT_CONSTANT_VELOCITY || h->good < 2 || !(dt_last > 0.0))
        return;
    /* D: the sensor's motion between the last two good poses, in the
     * earlier one's frame; extrapolated by the ratio of the times */
    double inv[16], D[16], Ds[16];
    ptreg_transform_invert_rigid(h->pose[0], inv);
    ptreg_transform_mul(inv, h->pose[1], D);
    motion_scale(D, (t - h->time[1]) / dt_last, Ds);
    ptreg_transform_mul(h->pose[1], Ds, P);
}

static void remember(track_history *h, const double pose[16], double t, int reset)
{
    if (reset)
        h->good = 0;
    if (h->good > 0) {
        memcpy(h->pose[0], h->pose[1], sizeof h->pose[0]);
        h->time[0] = h->time[1];
    }
    memcpy(h->pose[1], pose, sizeof h->pose[1]);
    h->time[1] = t;
    h->good = h->good < 2 ? h->good + 1 : 2;
}

/* Whether a registered pose passes: fit, then its speed and turn rate from
 * the last good pose. */
static int passes(const ptreg_tracker *tr, const ptreg_icp_result *r, double t, int motion)
{
    const ptreg_track_options *o = &tr->opt;
    if (!(r->fitness >= o->min_fitness) || !(r->rmse <= o->max_rmse))
        return 0;
    const track_history *h = &tr->hist;
    if (!motion || h->good == 0 || !(t > h->time[1]))
        return 1;
    double angle, shift;
    ptreg_transform_difference(h->pose[1], r->transformation, &angle, &shift);
    const double dt = t - h->time[1];
    if (o->max_speed > 0.0 && shift / dt > o->max_speed)
        return 0;
    if (o->max_turn_deg > 0.0 && angle / dt > o->max_turn_deg)
        return 0;
    return 1;
}

/* Whether a failed call is the caller's to hear of (memory, a device that
 * failed) rather than a frame with too little in it to register. */
static int fatal_status(ptreg_status st)
{
    return st && st != PTREG_ERR_ARG && st != PTREG_ERR_FORMAT && st != PTREG_ERR_UNSUPPORTED;
}

static ptreg_status register_from(ptreg_tracker *tr, const float *frame, size_t n, const double init[16],
                                  ptreg_icp_result *r, ptreg_error *err)
{
    ptreg_icp_options io = tr->opt.icp;
    memcpy(io.init, init, sizeof io.init);
    return ptreg_icp_model_register(tr->model, frame, n, &io, r, err);
}

static void keep(ptreg_track_frame *out, const ptreg_icp_result *r, ptreg_track_state state)
{
    memcpy(out->pose, r->transformation, sizeof out->pose);
    out->state = state;
    out->iterations = r->iterations;
    out->fitness = r->fitness;
    out->rmse = r->rmse;
}

/* Global registration of the frame against the prepared model, refined by
 * ICP on the resident model. 1 when it passes the fit checks (*out kept);
 * 0 when it does not or the frame has too little in it to try. */
static int recover(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                   ptreg_status *fatal, ptreg_error *err)
{
    ptreg_register_result rr;
    ptreg_error local;
    ptreg_status st = register_global_prepared(frame, NULL, n, &tr->recovery, &tr->opt.recovery, &rr, &local);
    if (st) {
        if (fatal_status(st))
            *fatal = ptreg_error_set(err, st, "%s", local.message);
        return 0;
    }
    ptreg_icp_result r;
    if ((st = register_from(tr, frame, n, rr.transformation, &r, &local))) {
        if (fatal_status(st))
            *fatal = ptreg_error_set(err, st, "%s", local.message);
        return 0;
    }
    const int ok = passes(tr, &r, t, 0);
    if (ok)
        keep(out, &r, PTREG_TRACK_RECOVERED);
    ptreg_icp_result_free(&r);
    return ok;
}

ptreg_status ptreg_tracker_push(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                                ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    if (!tr || !out || (n > 0 && !frame))
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: a tracker, a frame (n > 0: its points) and a result "
                                                   "are needed");
    if (!isfinite(t) || (tr->frames > 0 && !(t > tr->last_t)))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "track: frame %zu's time %.17g does not come after the last frame's (%.17g)",
                               tr->frames, t, tr->last_t);
    memset(out, 0, sizeof *out);
    predict(tr, t, out->predicted);
    memcpy(out->pose, out->predicted, sizeof out->pose);
    out->state = PTREG_TRACK_LOST;
    tr->frames++;
    tr->last_t = t;
    ptreg_error local;
    ptreg_status fatal = PTREG_OK;
    /* too few points, or all one point, to be registered: lost */
    if (ptreg_check_shape("track: the frame", frame, n, &local) == PTREG_OK) {
        ptreg_icp_result r;
        ptreg_status st = register_from(tr, frame, n, out->predicted, &r, &local);
        if (fatal_status(st)) {
            fatal = ptreg_error_set(err, st, "%s", local.message);
        } else if (!st) {
            if (passes(tr, &r, t, 1))
                keep(out, &r, PTREG_TRACK_TRACKED);
            ptreg_icp_result_free(&r);
        }
        if (!fatal && out->state == PTREG_TRACK_LOST && tr->recovery_ready)
            recover(tr, frame, n, t, out, &fatal, err);
    }
    /* a recovered pose starts the velocity over: it is one pose, not a motion */
    if (!fatal && out->state != PTREG_TRACK_LOST)
        remember(&tr->hist, out->pose, t, out->state == PTREG_TRACK_RECOVERED);
    out->latency_ms = ptreg_time_ms() - t0;
    return fatal;
}

static ptreg_status check_options(const ptreg_track_options *o, ptreg_error *err)
{
    if (o->predict != PTREG_PREDICT_NONE && o->predict != PTREG_PREDICT_CONSTANT_VELOCITY)
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: unknown prediction %d", (int)o->predict);
    if (!(o->min_fitness >= 0.0 && o->min_fitness <= 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: min_fitness %g is outside [0, 1]", o->min_fitness);
    if (!(o->max_rmse >= 0.0) || !(o->max_speed >= 0.0) || !(o->max_turn_deg >= 0.0) || isinf(o->max_rmse))
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: max_rmse, max_speed and max_turn_deg must be finite "
                                                   "and >= 0 (0: the default or no bound)");
    if (!ptreg_transform_is_rigid(o->init, PTREG_RIGID_TOL))
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: init is not a rigid transform");
    ptreg_status st = ptreg_options_check(ptreg_icp_option_table(), &o->icp, err);
    return st ? st : ptreg_options_check(ptreg_register_option_table(), &o->recovery, err);
}

/* The model's normals, estimated once as ICP would estimate them. */
static ptreg_status estimate_normals(ptreg_tracker *tr, const float *xyz, size_t m, ptreg_error *err)
{
    if (!(tr->owned_normals = malloc(3 * m * sizeof *tr->owned_normals)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "track: out of memory for %zu normals", m);
    ptreg_normals_options no;
    ptreg_normals_options_default(&no);
    no.neighbors = (ptreg_neighborhood){(size_t)tr->opt.icp.normal_k, tr->opt.icp.normal_radius};
    tr->normals = tr->owned_normals;
    return ptreg_normals(xyz, m, &no, tr->owned_normals, NULL, NULL, err);
}

ptreg_status ptreg_tracker_create(const ptreg_model_index *index, const float *normals,
                                  const ptreg_track_options *opt_in, ptreg_tracker **out, ptreg_error *err)
{
    if (out)
        *out = NULL;
    if (!index || !out)
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: a model index and a place for the tracker are needed");
    ptreg_track_options opt;
    if (opt_in)
        opt = *opt_in;
    else
        ptreg_track_options_default(&opt);
    ptreg_status st = check_options(&opt, err);
    if (st)
        return st;
    size_t m;
    const float *xyz = ptreg_model_index_points(index, &m);
    if ((st = ptreg_check_shape("track: the model", xyz, m, err)))
        return st;
    ptreg_tracker *tr = calloc(1, sizeof *tr);
    if (!tr)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "track: out of memory");
    ptreg_cloud_init(&tr->recovery.down);
    tr->index = index;
    tr->normals = normals;
    double centre[3], diag2;
    icp_target_extent(xyz, m, centre, &diag2);
    const double diag = sqrt(diag2);
    if (!(opt.max_rmse > 0.0))
        opt.max_rmse = 0.02 * diag;
    if (!(opt.icp.max_dist > 0.0))
        opt.icp.max_dist = 0.05 * diag;
    /* ICP's own auto tol (1e-10 diag^2) polishes far below what a frame's
     * noise allows; from a good prediction a tracker stops once the MSE
     * moves by less than (max_rmse / 100)^2 */
    if (opt.icp.tol < 0.0)
        opt.icp.tol = 1e-4 * opt.max_rmse * opt.max_rmse;
    opt.icp.progress = (ptreg_progress){NULL, NULL};
    ptreg_device on;
    st = ptreg_icp_resolve_device(&opt.icp, &on, err);
    opt.icp.device = on;
    tr->opt = opt;
    st = st ? st : ptreg_icp_model_create(index, &on, &tr->model, err);
    const int plane = opt.icp.method != PTREG_ICP_POINT;
    if (!st && plane && !normals)
        st = estimate_normals(tr, xyz, m, err);
    tr->opt.icp.target_normals = plane ? tr->normals : NULL;
    if (!st && opt.recover) {
        st = register_target_prepare(xyz, tr->normals, m, &opt.recovery, &tr->recovery, err);
        tr->recovery_ready = !st;
    }
    if (st) {
        ptreg_tracker_destroy(tr);
        return st;
    }
    *out = tr;
    return PTREG_OK;
}

void ptreg_tracker_destroy(ptreg_tracker *tr)
{
    if (!tr)
        return;
    ptreg_icp_model_destroy(tr->model);
    register_target_free(&tr->recovery);
    free(tr->owned_normals);
    free(tr);
}
