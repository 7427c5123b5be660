/* Tracking: every frame of a sensor registered against one known model, in
 * order, as it arrives (the aerial-refuelling loop). Each frame starts from
 * a prediction of its pose, is registered by ICP against the model (built
 * and, on a GPU, uploaded once), and is checked: a frame whose fit is poor
 * or whose pose jumps beyond what the object can move is lost, and is
 * recovered by global registration against the model. docs/ALGORITHMS.md,
 * "Tracking". */
#ifndef PTREG_TRACK_H
#define PTREG_TRACK_H

#include <stddef.h>

#include "core.h"
#include "global.h"
#include "icp.h"
#include "io.h"
#include "nn.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a frame's registration starts. Lost frames change nothing: the
 * prediction keeps extrapolating from the last good (tracked or recovered)
 * poses over the longer gap. A recovered pose starts the history over (one
 * pose: no velocity until the next good frame). */
typedef enum ptreg_track_predict {
    PTREG_PREDICT_NONE = 0,         /* each frame from the last good pose */
    PTREG_PREDICT_CONSTANT_VELOCITY /* from the last two good poses P0 (t0), P1 (t1) (the default):
                                       P1 D^s, D = P0^-1 P1, s = (t - t1) / (t1 - t0); D^s turns by s
                                       times D's angle about its axis and moves by s times its
                                       translation */
} ptreg_track_predict;

typedef enum ptreg_track_state {
    PTREG_TRACK_TRACKED = 0, /* ICP from the prediction passed the checks */
    PTREG_TRACK_RECOVERED,   /* it failed them; global registration found a pose that passes */
    PTREG_TRACK_LOST,        /* neither did (or the frame was empty): the pose is the prediction */
} ptreg_track_state;

static inline const char *ptreg_track_state_name(ptreg_track_state state)
{
    return state == PTREG_TRACK_TRACKED     ? "tracked"
           : state == PTREG_TRACK_RECOVERED ? "recovered"
           : state == PTREG_TRACK_LOST      ? "lost"
                                            : "unknown";
}
/* "none" or "constant-velocity" (a name to a value: the option "predict"
 * of ptreg_option_table_find("track")). */
static inline const char *ptreg_track_predict_name(ptreg_track_predict predict)
{
    return predict == PTREG_PREDICT_NONE                ? "none"
           : predict == PTREG_PREDICT_CONSTANT_VELOCITY ? "constant-velocity"
                                                        : "unknown";
}

typedef struct ptreg_track_options {
    ptreg_icp_options icp; /* each frame's registration (its init is the prediction;
                                       default method PLANE; max_dist 0: 5% of the model's
                                       bounding-box diagonal; tol < 0 (auto): (max_rmse / 100)^2) */
    ptreg_track_predict predict;
    double init[16];                 /* the first frame's prediction (identity) */
    double min_fitness;              /* a frame below is lost (default 0.3) */
    double max_rmse;                 /* a frame above is lost (default 0: 2% of the model's
                                       bounding-box diagonal) */
    double max_speed;                /* translation per second beyond which a pose is a jump,
                                       model units (default 0: no bound) */
    double max_turn_deg;             /* rotation per second, the same way (default 0: none) */
    int recover;                     /* global registration of a lost frame (default 1): RANSAC's pose
                                       and its half turns about the model's principal axes refined by
                                       the frame's ICP options; one passes min_fitness and max_rmse
                                       (not the motion bounds), an rmse of 3 model spacings (max_rmse
                                       when the caller set it) and 95% of its pairs on the model's
                                       surface; of those, the nearest the prediction is kept. The
                                       first frame (from init, a guess) must pass the same to be
                                       tracked. docs/ALGORITHMS.md, "Tracking" */
    ptreg_register_options recovery; /* its options; the model's centroids, normals and FPFH are
                                        made once, by ptreg_tracker_create */
    int visible_only;                /* 1 (default): each frame is registered against the model points
                                        whose outward normal faces the sensor at the predicted pose
                                        (the normals given to ptreg_tracker_create, which must point
                                        outward; without them the whole model serves, and so it does
                                        once one of the first 5 frames holds the model's every side:
                                        a quarter of its points on the far side); 0: the whole
                                        model. docs/ALGORITHMS.md, "Tracking", 6 */
    double sensor_origin[3];         /* the sensor's position in the frames' coordinates (default 0) */
    double voxel;                    /* > 0: each frame is first thinned to its points' centroids per voxel
                                        of this size (ptreg_voxel_downsample; in the latency); default 0: not */
} ptreg_track_options;

PTREG_API void ptreg_track_options_default(ptreg_track_options *opt);
/* The table of its options, ptreg_option_table_find("track") (options.h): predict, min_fitness, max_rmse,
 * max_speed, max_turn_deg (the command line's --max-turn), visible_only, voxel, then ICP's
 * (the rows of ptreg_option_table_find("icp"), in icp, with the tracker's defaults);
 * its check adds ICP's rules. init, recover, recovery and sensor_origin are set apart. */

typedef struct ptreg_track_frame {
    double pose[16];      /* takes the frame's points into the model's frame */
    double predicted[16]; /* where it started */
    ptreg_track_state state;
    int iterations;       /* ICP's, of the pose kept */
    double fitness, rmse; /* of the pose kept */
    double latency_ms;    /* frame in memory to pose, recovery included */
    double time;          /* t, as pushed (seconds) */
    size_t points;        /* n, as pushed (after the voxel grid) */
    int visible;          /* tracked against the model as the sensor sees it (visible_only; 0 when the
                             model has no normals given or the frames were found to hold every side) */
} ptreg_track_frame;

/* One frame as the run saw it: the tracker's answer, whether the frame
 * could be read at all, and its error against the true pose at its time. */
typedef struct ptreg_track_record {
    ptreg_track_frame frame;
    int unreadable;
    int has_error; /* a true pose at the frame's time (and the frame was read) */
    double rotation_error_deg, translation_error;
} ptreg_track_record;

typedef struct ptreg_track_latency {
    double p50, p95, p99, max, mean; /* nearest-rank percentiles */
} ptreg_track_latency;

typedef struct ptreg_track_errors {
    size_t frames; /* those with a true pose */
    double rotation_deg_median, rotation_deg_max;
    size_t rotation_deg_max_frame; /* the first of the largest */
    double translation_median, translation_max;
} ptreg_track_errors;

/* A tracking run's summary (ptreg track --json's "summary", its text):
 * the counts, the latency percentiles and, with a true trajectory, the
 * errors' medians and maxima, from the frames as the caller recorded them. */
typedef struct ptreg_track_summary {
    size_t frames, tracked, recovered, lost, unreadable, skipped;
    const ptreg_track_errors *error;       /* &errors once summarized with a true trajectory; else NULL */
    const ptreg_track_latency *latency_ms; /* &latency once summarized */
    double wall_ms;
    ptreg_track_errors errors;
    ptreg_track_latency latency;
    /* what the run keeps as it goes: every latency (8 bytes a frame, for
     * the percentiles), the errors, and with keep, every record */
    double *latencies, *rot_err, *trans_err;
    size_t *err_frame;
    ptreg_track_record *records; /* NULL unless kept */
    size_t cap;
} ptreg_track_summary;

/* Adds a frame (its record kept in s->records when keep); r NULL: the run
 * is over: the percentiles, the mean and (when a frame had an error) the
 * errors' summary. PTREG_ERR_NOMEM when out of memory. Start from a zeroed
 * summary. */
PTREG_API ptreg_status ptreg_track_summary_add(ptreg_track_summary *s, const ptreg_track_record *r, int keep,
                                               ptreg_error *err);
PTREG_API void ptreg_track_summary_free(ptreg_track_summary *s);

typedef struct ptreg_tracker ptreg_tracker;

/* A tracker of frames against the model of index (which must outlive it);
 * normals (m x 3, may be NULL: estimated once when the options need them)
 * are the model's, for point-to-plane ICP and recovery. The model goes to
 * opt->icp.device once, here. */
PTREG_API ptreg_status ptreg_tracker_create(const ptreg_model_index *index, const float *normals,
                                            const ptreg_track_options *opt, ptreg_tracker **tracker, ptreg_error *err);
PTREG_API void ptreg_tracker_destroy(ptreg_tracker *tracker);

/* The next frame (n points, n may be 0: lost) taken at time t seconds
 * (increasing; speeds and the prediction use it). A frame never fails the
 * track: *out says what became of it. Errors are the caller's (bad
 * arguments, memory, a device that failed). */
PTREG_API ptreg_status ptreg_tracker_push(ptreg_tracker *tracker, const float *frame, size_t n, double t,
                                          ptreg_track_frame *out, ptreg_error *err);

/* ---- evaluating a trajectory against a true one (ptreg eval) ----
 * docs/ALGORITHMS.md, "Evaluating trajectories": the pairs by time or by
 * index, the alignment (Umeyama), ATE and RPE (Sturm et al. 2012), the
 * KITTI metric (Geiger et al. 2012, the odometry devkit). */

typedef enum ptreg_eval_associate {
    PTREG_ASSOCIATE_AUTO = 0, /* by time when both have timestamps (TUM), else by index */
    PTREG_ASSOCIATE_TIME,     /* TUM's associate.py: the nearest times within max_diff, greedily, one to one */
    PTREG_ASSOCIATE_INDEX     /* pose i with pose i */
} ptreg_eval_associate;

typedef enum ptreg_eval_align {
    PTREG_ALIGN_SE3 = 0, /* the rigid motion that best lays the estimate's positions on the truth's */
    PTREG_ALIGN_SIM3,    /* the same with a scale (monocular estimates) */
    PTREG_ALIGN_NONE     /* both in one frame already (a tracker against its model) */
} ptreg_eval_align;

typedef enum ptreg_eval_unit {
    PTREG_DELTA_FRAMES = 0, /* RPE over pairs delta poses apart */
    PTREG_DELTA_METERS,     /* ... the first pose at least delta along the true path */
    PTREG_DELTA_SECONDS     /* ... the first pose at least delta later */
} ptreg_eval_unit;

#define PTREG_EVAL_MAX_LENGTHS 16

typedef struct ptreg_eval_options {
    ptreg_eval_associate associate;
    double max_diff; /* TIME: the largest time difference of a pair, seconds (default 0.02, TUM's) */
    double offset;   /* TIME: added to the estimate's times (default 0) */
    ptreg_eval_align align;
    double delta; /* RPE's step (default 1) in delta_unit (FRAMES: a whole number) */
    ptreg_eval_unit delta_unit;
    size_t kitti_lengths;                        /* the KITTI metric's segment lengths: default 8 */
    double kitti_length[PTREG_EVAL_MAX_LENGTHS]; /* default 100, 200, ..., 800 (the true poses' units) */
} ptreg_eval_options;

static inline void ptreg_eval_options_default(ptreg_eval_options *opt)
{
    const ptreg_eval_options d = {PTREG_ASSOCIATE_AUTO,
                                  0.02,
                                  0.0,
                                  PTREG_ALIGN_SE3,
                                  1.0,
                                  PTREG_DELTA_FRAMES,
                                  8,
                                  {100, 200, 300, 400, 500, 600, 700, 800}};
    *opt = d;
}
/* The table of its options, ptreg_option_table_find("eval") (options.h):
 * associate, max_diff, offset, align, delta, delta_unit; kitti_length is set apart. */

typedef struct ptreg_eval_stats {
    double rmse, mean, median, std, min, max; /* std: of the population */
} ptreg_eval_stats;

typedef struct ptreg_eval_errors {
    size_t pairs;
    double delta; /* RPE: its step and unit, as asked */
    ptreg_eval_unit unit;
    const ptreg_eval_stats *translation, *rotation_deg; /* &t, &r */
    ptreg_eval_stats t, r;
} ptreg_eval_errors;

typedef struct ptreg_eval_kitti_length {
    double length;
    size_t segments;
    double translation_percent, rotation_deg_per_m;
} ptreg_eval_kitti_length;

typedef struct ptreg_eval_kitti {
    size_t segments;
    double translation_percent;             /* 100 x the mean of a segment's translation error over its length */
    double rotation_deg_per_m;              /* the mean of its rotation error (the devkit's acos) over its length */
    size_t length_count;                    /* the lengths that have a segment */
    const ptreg_eval_kitti_length *lengths; /* &length[0] */
    ptreg_eval_kitti_length length[PTREG_EVAL_MAX_LENGTHS];
} ptreg_eval_kitti;

typedef struct ptreg_eval_association {
    ptreg_eval_associate method; /* TIME or INDEX, as done */
    size_t pairs;
    double max_diff, offset; /* TIME's, as asked */
} ptreg_eval_association;

typedef struct ptreg_eval_alignment {
    double rotation[9]; /* the estimate onto the truth: x -> scale R x + translation */
    double translation[3];
    double scale; /* 1 unless SIM3 */
} ptreg_eval_alignment;

/* An evaluation (its result table: ptreg_result_table_find("trajectory_eval")).
 * Its pointers point into it or to what ptreg_eval_result_free frees: a
 * result is not copied. */
typedef struct ptreg_eval_result {
    const ptreg_eval_association *association; /* &pairing */
    ptreg_eval_align align;
    const ptreg_eval_alignment *alignment; /* &aligned_by */
    const ptreg_eval_errors *ate;          /* &ate_errors */
    const ptreg_eval_errors *rpe;          /* &rpe_errors, NULL when no pair is delta apart */
    const ptreg_eval_kitti *kitti;         /* &kitti_metric, NULL when no segment fits */
    ptreg_eval_association pairing;
    ptreg_eval_alignment aligned_by;
    ptreg_eval_errors ate_errors, rpe_errors;
    ptreg_eval_kitti kitti_metric;
    /* per pair (pairing.pairs of them), in the estimate's order: its poses'
     * indices, the true pose's time, the ATE's errors, the aligned
     * estimate's position and the truth's (for plots) */
    size_t *estimate_index, *reference_index;
    double *time, *translation_error, *rotation_error_deg, *aligned_xyz, *reference_xyz;
} ptreg_eval_result;

/* Evaluates est against ref (the truth). PTREG_ERR_ARG for options out of
 * range or too few pairs (2; 3 to align), naming them; NOMEM. res holds
 * nothing on failure. */
PTREG_API ptreg_status ptreg_trajectory_eval(const ptreg_trajectory *est, const ptreg_trajectory *ref,
                                             const ptreg_eval_options *opt, ptreg_eval_result *res, ptreg_error *err);
PTREG_API void ptreg_eval_result_free(ptreg_eval_result *res);

#ifdef __cplusplus
}
#endif

#endif
