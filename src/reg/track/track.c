/* Tracking (track.h): each frame registered against one resident model
 * from a predicted pose, checked, and recovered by global registration when
 * the check fails. docs/ALGORITHMS.md, "Tracking". */
#include "ptreg/track.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/testing.h"
#include "ptreg/features.h"
#include "ptreg/nn.h"
#include "reg/global/global_impl.h"
#include "reg/icp/icp_impl.h"
#include "reg/track/track_visible.h"
#include "core/numeric.h"

#define PI 3.14159265358979323846
/* A recovered pose needs this share of its paired points on the model's
 * surface (surface_share). */
#define RECOVER_SURFACE_SHARE 0.95
/* Its rmse bound, in the model's mean nearest-neighbour spacings, when the
 * caller gave no max_rmse: the aircraft's right pose is at 1.3 (the
 * sensor's noise 0.6 spacings), its mirror at 6. */
#define RECOVER_RMSE_SPACINGS 3.0
/* The culled model is culled again once the sensor has moved by this
 * share of its distance from the model (0.3 degrees as seen from it):
 * only the grazing points change side. */
#define VISIBLE_REFRESH 0.005
/* Culling pays between these shares of a frame's points nearest the
 * model's far side (judge_sides), judged on the first VISIBLE_JUDGED
 * frames. */
#define TWO_SIDED_SHARE 0.25
#define FAR_SIDE_SHARE 0.015
#define VISIBLE_JUDGED 5
/* The candidates are told apart on a thinned frame of about this many
 * points (four ICP runs from far poses), the winner refined on all. */
#define RECOVER_CANDIDATE_POINTS 2000

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
    opt->visible_only = 1;
}

static const ptreg_option_name predict_names[] = {
    {"none", PTREG_PREDICT_NONE}, {"constant-velocity", PTREG_PREDICT_CONSTANT_VELOCITY}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_track_options, predict);
/* The tracker's own options; ICP's follow them in the table. A bound's 0
 * is the library's "default" or "no bound", not a bound of 0: a caller
 * gives a number above it. */
static const ptreg_option track_own_rows[] = {
    OPTION_ENUM(ptreg_track_options, predict, "predict", NULL, predict_names, 0,
                "where each frame starts: none, the last good pose; constant-velocity, the last two good poses' "
                "motion carried on"),
    OPTION_FIELD(ptreg_track_options, min_fitness, NULL, DOUBLE, 0, 1, 0, "F",
                 "a frame whose fitness is below F is lost"),
    OPTION_FIELD(ptreg_track_options, max_rmse, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET,
                 "D", "a frame whose rmse is above D is lost; default 2% of the model's bounding-box diagonal"),
    OPTION_FIELD(ptreg_track_options, max_speed, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET,
                 "V",
                 "a pose that moved faster than V model units per second from the last good one is lost; "
                 "default no bound"),
    OPTION_FIELD(ptreg_track_options, max_turn_deg, "max_turn", DOUBLE, 0, DBL_MAX,
                 PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET, "DEG",
                 "the same for its rotation, degrees per second; default no bound"),
    OPTION_FIELD(ptreg_track_options, visible_only, NULL, INT, 0, 1, 0, "0|1",
                 "1 (default): register each frame against the model points whose normal faces the sensor at "
                 "the predicted pose (the model's own normals, pointing outward; a model without normals is used "
                 "whole); 0: against the whole model"),
    OPTION_FIELD(ptreg_track_options, voxel, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO | PTREG_OPTION_LO_UNSET,
                 "V", "thin each frame to the centroids of its points per voxel of size V first; default not")};
#define TRACK_OWN_ROWS (sizeof track_own_rows / sizeof track_own_rows[0])
#define TRACK_MAX_ROWS 64

static ptreg_option track_rows[TRACK_MAX_ROWS];
static ptreg_option_table track_table;
static pthread_once_t track_table_once = PTHREAD_ONCE_INIT;

static void track_defaults(void *options) { ptreg_track_options_default(options); }

/* ICP's rules on the tracker's ICP options (the rows' ranges are checked
 * with the others). */
static ptreg_status track_rules(const void *options, ptreg_option_spelling spelling, ptreg_error *err)
{
    const ptreg_track_options *o = options;
    const ptreg_option_table *icp = ptreg_icp_option_table();
    return icp->check ? icp->check(&o->icp, spelling, err) : PTREG_OK;
}

/* The tracker's rows, then ICP's moved into ptreg_track_options.icp, with
 * the help of the two whose defaults the tracker derives otherwise. */
static void track_table_build(void)
{
    const ptreg_option_table *icp = ptreg_icp_option_table();
    size_t n = 0;
    for (size_t i = 0; i < TRACK_OWN_ROWS; i++)
        track_rows[n++] = track_own_rows[i];
    for (size_t i = 0; i < icp->count && n < TRACK_MAX_ROWS; i++) {
        ptreg_option r = icp->options[i];
        r.offset += offsetof(ptreg_track_options, icp);
        if (!strcmp(r.name, "max_dist"))
            r.help = "leave out pairs farther apart than D; default 5% of the model's bounding-box diagonal";
        else if (!strcmp(r.name, "tol"))
            r.help = "stop when the MSE drops by less than T; 0 runs all iterations; default (max-rmse / 100)^2";
        track_rows[n++] = r;
    }
    track_table = (ptreg_option_table){"track",        track_rows, n, sizeof(ptreg_track_options),
                                       track_defaults, track_rules};
}

const ptreg_option_table *ptreg_track_option_table(void)
{
    pthread_once(&track_table_once, track_table_build);
    return &track_table;
}

/* The last good poses (tracked or recovered) and their times: [1] the
 * latest, [0] the one before; `good` of them are set. */
typedef struct track_history {
    int good;
    double pose[2][16], time[2];
} track_history;

struct ptreg_tracker {
    const ptreg_model_index *index;
    ptreg_track_options opt; /* with the derived numbers filled in */
    ptreg_icp_model *model;
    const float *normals; /* the model's: the caller's or owned_normals */
    float *owned_normals;
    register_target recovery; /* the model's centroids, normals and FPFH, prepared once */
    int recovery_ready;
    track_history hist;
    double last_t; /* the last frame's time */
    size_t frames;
    /* a recovered pose's checks (docs/ALGORITHMS.md, "Tracking", 4) */
    double recover_rmse;   /* its rmse bound: 3 x the model's spacing (or the caller's max_rmse) */
    double surface_tol;    /* a frame point is on the surface within this of its model point's plane */
    double flips[3][16];   /* the half turns about the model's principal axes through its centroid */
    track_visible visible; /* with visible_only: the model as the sensor sees it */
    int whole_model;       /* culling was judged not to pay: the whole model from then on */
    int judged;            /* frames judged (judge_sides), and their far-side shares' sum */
    double far_share;
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

/* ICP from init on a resident model whose normals (for the plane-based
 * methods) are `normals`. */
static ptreg_status register_on(const ptreg_tracker *tr, ptreg_icp_model *model, const float *normals,
                                const float *frame, size_t n, const double init[16], ptreg_icp_result *r,
                                ptreg_error *err)
{
    ptreg_icp_options io = tr->opt.icp;
    memcpy(io.init, init, sizeof io.init);
    if (io.target_normals)
        io.target_normals = normals;
    return ptreg_icp_model_run(model, frame, n, &io, r, err);
}

static ptreg_status register_from(ptreg_tracker *tr, const float *frame, size_t n, const double init[16],
                                  ptreg_icp_result *r, ptreg_error *err)
{
    return register_on(tr, tr->model, tr->normals, frame, n, init, r, err);
}

/* The sensor's position in the model's frame when the frame's pose is T. */
static void sensor_at(const ptreg_tracker *tr, const double T[16], double o[3])
{
    const double *s = tr->opt.sensor_origin;
    for (int k = 0; k < 3; k++)
        o[k] = T[4 * k] * s[0] + T[4 * k + 1] * s[1] + T[4 * k + 2] * s[2] + T[4 * k + 3];
}

/* The share of the frame's points (every 8th) that, moved by T, are
 * nearest a model point facing away from the sensor: about 1% for a range
 * scan (6% at 0.37% noise on the aircraft), half for a frame that holds
 * the object's every side (a merged or simulated cloud). */
static ptreg_status back_share(const ptreg_tracker *tr, const float *frame, size_t n, const double T[16], double *share,
                               ptreg_error *err)
{
    const size_t count = (n + 7) / 8;
    float *moved = malloc(3 * count * sizeof *moved), *d2 = malloc(count * sizeof *d2);
    uint32_t *nn = malloc(count * sizeof *nn);
    ptreg_status st = moved && d2 && nn ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "track: out of memory");
    for (size_t i = 0; !st && i < count; i++)
        memcpy(moved + 3 * i, frame + 3 * 8 * i, 3 * sizeof *moved);
    if (!st) {
        ptreg_transform_points(T, moved, moved, count);
        st = ptreg_model_index_nearest(tr->index, moved, count, PTREG_NN_KDTREE, NULL, nn, d2, NULL, err);
    }
    double o[3];
    sensor_at(tr, T, o);
    size_t m, back = 0;
    const float *xyz = ptreg_model_index_points(tr->index, &m);
    for (size_t i = 0; !st && i < count; i++)
        back += !track_visible_faces(xyz + 3 * (size_t)nn[i], tr->normals + 3 * (size_t)nn[i], o);
    *share = count ? (double)back / (double)count : 0.0;
    free(moved), free(d2), free(nn);
    return st;
}

/* Whether culling pays, judged on the first VISIBLE_JUDGED frames
 * registered against the culled model by the share of their points
 * nearest the far side (back_share). One above TWO_SIDED_SHARE holds the
 * model's every side: culled, half its points would lose their partners
 * (3.6 times the error on the aircraft). A mean below FAR_SIDE_SHARE says
 * the far side captures too few points to pull the pose, while culling
 * takes the partners of the points at the silhouette (on the aircraft at
 * 0.09% noise, 1% of the points: 0.8 mm ATE whole, 1.5 mm culled; at 0.2%,
 * 2.5%: 8.5 mm whole, 3.5 mm culled). Either way the whole model serves
 * for the rest of the run. */
static ptreg_status judge_sides(ptreg_tracker *tr, const float *frame, size_t n, const ptreg_icp_result *r,
                                ptreg_error *err)
{
    double share = 0.0;
    ptreg_status st = back_share(tr, frame, n, r->transformation, &share, err);
    if (st)
        return st;
    tr->far_share += share;
    tr->judged++;
    if (share > TWO_SIDED_SHARE || (tr->judged == VISIBLE_JUDGED && tr->far_share / tr->judged < FAR_SIDE_SHARE))
        tr->whole_model = 1;
    return PTREG_OK;
}

/* A frame's registration from its prediction: against the model as the
 * sensor sees it from there (visible_only, one-sided frames), else the
 * whole model. *visible says which; a frame judged to hold every side is
 * registered again on the whole model. */
static ptreg_status register_predicted(ptreg_tracker *tr, const float *frame, size_t n, const double P[16],
                                       ptreg_icp_result *r, int *visible, ptreg_error *err)
{
    *visible = 0;
    if (!tr->opt.visible_only || tr->whole_model)
        return register_from(tr, frame, n, P, r, err);
    double o[3];
    sensor_at(tr, P, o);
    ptreg_status st = track_visible_update(&tr->visible, o, err);
    if (st || !tr->visible.ready)
        return st ? st : register_from(tr, frame, n, P, r, err);
    if ((st = register_on(tr, tr->visible.model, tr->visible.kept_normals, frame, n, P, r, err)))
        return st;
    *visible = 1;
    /* judged whatever the fit: a frame of every side fails it culled. A
     * pose from a bad first guess may be judged wrong, and the whole model
     * is the answer to most of those (today's, at worst) */
    if (tr->judged >= VISIBLE_JUDGED)
        return PTREG_OK;
    st = judge_sides(tr, frame, n, r, err);
    if (!st && !tr->whole_model)
        return PTREG_OK;
    /* the caller holds no result on an error */
    ptreg_icp_result_free(r);
    if (st)
        return st;
    *visible = 0;
    return register_from(tr, frame, n, P, r, err);
}

static void keep(ptreg_track_frame *out, const ptreg_icp_result *r, ptreg_track_state state)
{
    memcpy(out->pose, r->transformation, sizeof out->pose);
    out->state = state;
    out->iterations = r->iterations;
    out->fitness = r->fitness;
    out->rmse = r->rmse;
}

/* The share of the frame's paired points (within max_dist of the model
 * when moved by T) that lie within surface_tol of their model point's
 * tangent plane. A right pose puts nearly all of them there (the sensor's
 * noise); a mirrored pose of a near-symmetric model pairs most points too,
 * with an rmse under 2% of the diagonal, but spreads them off the surface
 * (the aircraft's first frame: 0.999 against 0.64 within 2 spacings). */
static ptreg_status surface_share(const ptreg_tracker *tr, const float *frame, size_t n, const double T[16],
                                  double *share, ptreg_error *err)
{
    float *moved = malloc(3 * n * sizeof *moved), *d2 = malloc(n * sizeof *d2);
    uint32_t *nn = malloc(n * sizeof *nn);
    ptreg_status st = moved && d2 && nn ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "track: out of memory");
    if (!st) {
        ptreg_transform_points(T, frame, moved, n);
        st = ptreg_model_index_nearest(tr->index, moved, n, PTREG_NN_KDTREE, NULL, nn, d2, NULL, err);
    }
    size_t paired = 0, on = 0;
    const double d2max = tr->opt.icp.max_dist * tr->opt.icp.max_dist;
    size_t m;
    const float *xyz = ptreg_model_index_points(tr->index, &m);
    for (size_t i = 0; !st && i < n; i++) {
        if (!(d2[i] <= d2max))
            continue;
        paired++;
        const float *q = xyz + 3 * (size_t)nn[i], *nv = tr->normals + 3 * (size_t)nn[i], *x = moved + 3 * i;
        const double r = (double)nv[0] * (x[0] - q[0]) + (double)nv[1] * (x[1] - q[1]) + (double)nv[2] * (x[2] - q[2]);
        on += fabs(r) <= tr->surface_tol;
    }
    *share = paired ? (double)on / (double)paired : 0.0;
    free(moved), free(d2), free(nn);
    return st;
}

/* How far T is from the prediction P: the rotation first (the mirror
 * poses of a near-symmetric model differ by a half turn), then the
 * translation. */
static int nearer(const double A[16], const double B[16], const double P[16])
{
    double aa, at, ba, bt;
    ptreg_transform_difference(P, A, &aa, &at);
    ptreg_transform_difference(P, B, &ba, &bt);
    return aa < ba - 1.0 || (!(aa > ba + 1.0) && at < bt);
}

/* Whether a refined candidate passes a recovery's checks: the fit checks,
 * the rmse bound of a few model spacings and the share on the surface. */
static int recovery_passes(const ptreg_tracker *tr, const float *frame, size_t n, const ptreg_icp_result *r, double t,
                           ptreg_status *st, ptreg_error *err)
{
    double share = 0.0;
    if (!passes(tr, r, t, 0) || !(r->rmse <= tr->recover_rmse))
        return 0;
    *st = surface_share(tr, frame, n, r->transformation, &share, err);
    return !*st && share >= RECOVER_SURFACE_SHARE;
}

/* Every stride-th point of the frame (at most about RECOVER_CANDIDATE_POINTS). */
static float *thin_frame(const float *frame, size_t n, size_t *kept)
{
    const size_t stride = n > RECOVER_CANDIDATE_POINTS ? (n + RECOVER_CANDIDATE_POINTS - 1) / RECOVER_CANDIDATE_POINTS
                                                       : 1;
    *kept = (n + stride - 1) / stride;
    float *out = malloc(3 * *kept * sizeof *out);
    for (size_t i = 0; out && i < *kept; i++)
        memcpy(out + 3 * i, frame + 3 * i * stride, 3 * sizeof *out);
    return out;
}

/* Global registration of the frame against the prepared model, refined by
 * ICP on the resident model. RANSAC's pose and its half turns about the
 * model's principal axes (where a near-symmetric model's mirror poses lie)
 * are each refined on a thinned frame and checked (recovery_passes); of
 * those that pass, the one nearest the prediction is refined on the whole
 * frame and kept when it passes again. 1 when it does (*out kept); 0 when
 * none does or the frame has too little in it to try. */
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
    size_t thin_n;
    float *thin = thin_frame(frame, n, &thin_n);
    if (!thin) {
        *fatal = ptreg_error_set(err, PTREG_ERR_NOMEM, "track: out of memory");
        return 0;
    }
    int found = 0, ok = 0;
    double best[16];
    for (int k = 0; k < 4 && !fatal_status(st); k++) {
        double init[16];
        if (k == 0)
            memcpy(init, rr.transformation, sizeof init);
        else
            ptreg_transform_mul(tr->flips[k - 1], rr.transformation, init);
        ptreg_icp_result r;
        /* a candidate ICP cannot register (no pairs within reach) is no
         * candidate; the others are still tried */
        if ((st = register_from(tr, thin, thin_n, init, &r, &local)))
            continue;
        if (recovery_passes(tr, thin, thin_n, &r, t, &st, &local) &&
            (!found || nearer(r.transformation, best, out->predicted))) {
            memcpy(best, r.transformation, sizeof best);
            found = 1;
        }
        ptreg_icp_result_free(&r);
    }
    free(thin);
    ptreg_icp_result r;
    if (!fatal_status(st))
        st = PTREG_OK;
    if (found && !st && !(st = register_from(tr, frame, n, best, &r, &local))) {
        ok = recovery_passes(tr, frame, n, &r, t, &st, &local);
        if (ok && !st)
            keep(out, &r, PTREG_TRACK_RECOVERED);
        ptreg_icp_result_free(&r);
    }
    if (fatal_status(st))
        *fatal = ptreg_error_set(err, st, "%s", local.message);
    return ok && !st;
}

static ptreg_status push(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                         ptreg_error *err);
static ptreg_status push_thinned(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                                 ptreg_error *err);

ptreg_status ptreg_tracker_push(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                                ptreg_error *err)
{
    if (!tr || !out || (n > 0 && !frame) || !(tr->opt.voxel > 0.0) || n == 0)
        return push(tr, frame, n, t, out, err);
    return push_thinned(tr, frame, n, t, out, err);
}

/* The frame thinned by the voxel grid first, its time in the latency. */
static ptreg_status push_thinned(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                                 ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    const ptreg_cloud in = {.xyz = (float *)frame, .n = n};
    ptreg_cloud thin;
    ptreg_error local;
    ptreg_status st = ptreg_voxel_downsample(&in, tr->opt.voxel, &thin, &local);
    /* a frame the grid cannot take (a non-finite point, too many cubes) is
     * judged as it came */
    if (st == PTREG_ERR_ARG)
        return push(tr, frame, n, t, out, err);
    if (st)
        return ptreg_error_set(err, st, "%s", local.message);
    const double voxel_ms = ptreg_time_ms() - t0;
    st = push(tr, thin.xyz, thin.n, t, out, err);
    out->latency_ms += voxel_ms;
    ptreg_cloud_free(&thin);
    return st;
}

static ptreg_status push(ptreg_tracker *tr, const float *frame, size_t n, double t, ptreg_track_frame *out,
                         ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    if (!tr || !out || (n > 0 && !frame))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "track: a tracker, a frame (n > 0: its points) and a result "
                               "are needed");
    if (!isfinite(t) || (tr->frames > 0 && !(t > tr->last_t)))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "track: frame %zu's time %.17g does not come after the last frame's (%.17g)", tr->frames,
                               t, tr->last_t);
    memset(out, 0, sizeof *out);
    out->time = t, out->points = n;
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
        int visible;
        ptreg_status st = register_predicted(tr, frame, n, out->predicted, &r, &visible, &local);
        if (fatal_status(st)) {
            fatal = ptreg_error_set(err, st, "%s", local.message);
        } else if (!st) {
            /* with no good pose yet the prediction is a guess (init), and
             * ICP from a guess can settle on a mirror pose as RANSAC can:
             * the recovery's checks */
            int ok = passes(tr, &r, t, 1);
            if (ok && tr->hist.good == 0)
                ok = recovery_passes(tr, frame, n, &r, t, &st, &local);
            if (fatal_status(st))
                fatal = ptreg_error_set(err, st, "%s", local.message);
            else if (ok && !st) {
                keep(out, &r, PTREG_TRACK_TRACKED);
                out->visible = visible;
            }
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
    /* the table's ranges and ICP's rules */
    ptreg_status st = ptreg_options_check(ptreg_track_option_table(), o, err);
    if (st)
        return st;
    if (!ptreg_transform_is_rigid(o->init, PTREG_RIGID_TOL))
        return ptreg_error_set(err, PTREG_ERR_ARG, "track: init is not a rigid transform");
    for (int k = 0; k < 3; k++)
        if (!isfinite(o->sensor_origin[k]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "track: sensor_origin is not three finite numbers");
    return ptreg_options_check(ptreg_register_option_table(), &o->recovery, err);
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

/* The model's mean nearest-neighbour spacing, over at most 4096 of its
 * points taken evenly: the scale of a right pose's residuals (with the
 * sensor's noise), whatever the model's size. */
static ptreg_status model_spacing(const float *xyz, size_t m, double *spacing, ptreg_error *err)
{
    ptreg_kdtree *tree;
    ptreg_status st = ptreg_kdtree_create(xyz, m, NULL, &tree, err);
    if (st)
        return st;
    const size_t step = m > 4096 ? m / 4096 : 1;
    double sum = 0.0;
    size_t count = 0;
    for (size_t i = 0; i < m; i += step) {
        uint32_t idx[2];
        float d2[2];
        if (ptreg_kdtree_knn(tree, xyz + 3 * i, 2, idx, d2) == 2)
            sum += sqrt((double)d2[1]), count++;
    }
    ptreg_kdtree_destroy(tree);
    *spacing = count ? sum / (double)count : 0.0;
    return PTREG_OK;
}

/* The half turns about the model's principal axes through its centroid:
 * where a near-symmetric model's mirror poses of a frame lie. */
static void model_flips(const float *xyz, size_t m, double flips[3][16])
{
    double c[3] = {0, 0, 0}, cov[9] = {0}, lambda[3], V[9];
    for (size_t i = 0; i < m; i++)
        for (int k = 0; k < 3; k++)
            c[k] += (double)xyz[3 * i + k] / (double)m;
    for (size_t i = 0; i < m; i++) {
        const double d[3] = {xyz[3 * i] - c[0], xyz[3 * i + 1] - c[1], xyz[3 * i + 2] - c[2]};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                cov[3 * a + b] += d[a] * d[b];
    }
    ptreg_eigen_symmetric(cov, 3, lambda, V);
    for (int k = 0; k < 3; k++) {
        /* R x + (I - R) c: the half turn about the axis through c */
        const double axis[3] = {V[k], V[3 + k], V[6 + k]}, zero[3] = {0, 0, 0};
        ptreg_transform_from_axis_angle(axis, 180.0, zero, flips[k]);
        for (int r = 0; r < 3; r++)
            flips[k][4 * r + 3] = c[r] -
                                  (flips[k][4 * r] * c[0] + flips[k][4 * r + 1] * c[1] + flips[k][4 * r + 2] * c[2]);
    }
}

/* The recovery's bounds: the caller's max_rmse when given, else 3 model
 * spacings (within the default 2% of the diagonal); the surface tolerance
 * two thirds of it. */
static ptreg_status recovery_bounds(ptreg_tracker *tr, const float *xyz, size_t m, int caller_rmse, ptreg_error *err)
{
    double spacing = 0.0;
    ptreg_status st = caller_rmse ? PTREG_OK : model_spacing(xyz, m, &spacing, err);
    if (st)
        return st;
    tr->recover_rmse = caller_rmse || !(spacing > 0.0) ? tr->opt.max_rmse
                                                       : fmin(tr->opt.max_rmse, RECOVER_RMSE_SPACINGS * spacing);
    tr->surface_tol = tr->recover_rmse * 2.0 / 3.0;
    model_flips(xyz, m, tr->flips);
    return PTREG_OK;
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
    const int caller_rmse = opt.max_rmse > 0.0;
    if (!caller_rmse)
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
    /* the recovery's surface check needs the model's normals whatever the method */
    if (!st && !normals)
        st = estimate_normals(tr, xyz, m, err);
    /* on a GPU up once, not with every frame */
    if (!st && plane)
        st = ptreg_icp_model_set_normals(tr->model, tr->normals, err);
    tr->opt.icp.target_normals = plane ? tr->normals : NULL;
    if (!st)
        st = recovery_bounds(tr, xyz, m, caller_rmse, err);
    if (!st && opt.recover) {
        st = register_target_prepare(xyz, tr->normals, m, &opt.recovery, &tr->recovery, err);
        tr->recovery_ready = !st;
    }
    /* facing the sensor needs outward normals, which estimates do not give
     * (a consistent orientation over the aircraft's thin wings came out 26%
     * to 97% right with k of 10 to 30): the caller's only */
    if (!normals)
        tr->opt.visible_only = 0;
    if (!st && tr->opt.visible_only) {
        tr->visible = (track_visible){
            .xyz = xyz, .normals = tr->normals, .m = m, .device = on, .refresh = VISIBLE_REFRESH};
        memcpy(tr->visible.centre, centre, sizeof centre);
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
    track_visible_free(&tr->visible);
    register_target_free(&tr->recovery);
    free(tr->owned_normals);
    free(tr);
}
