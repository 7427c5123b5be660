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

PTREG_API const char *ptreg_track_state_name(ptreg_track_state state);
/* "none" or "constant-velocity" (a name to a value: the option "predict"
 * of ptreg_option_table_find("track")). */
PTREG_API const char *ptreg_track_predict_name(ptreg_track_predict predict);

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
} ptreg_track_options;

PTREG_API void ptreg_track_options_default(ptreg_track_options *opt);
/* The table of its options, ptreg_option_table_find("track") (options.h): predict, min_fitness, max_rmse,
 * max_speed, max_turn_deg (the command line's --max-turn), then ICP's
 * (the rows of ptreg_option_table_find("icp"), in icp, with the tracker's defaults);
 * its check adds ICP's rules. init, recover and recovery are set apart. */

typedef struct ptreg_track_frame {
    double pose[16];      /* takes the frame's points into the model's frame */
    double predicted[16]; /* where it started */
    ptreg_track_state state;
    int iterations;       /* ICP's, of the pose kept */
    double fitness, rmse; /* of the pose kept */
    double latency_ms;    /* frame in memory to pose, recovery included */
    double time;          /* t, as pushed (seconds) */
    size_t points;        /* n, as pushed */
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

#ifdef __cplusplus
}
#endif

#endif
