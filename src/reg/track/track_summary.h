/* A tracking run's summary (ptreg track --json and its text): each frame
 * as the caller recorded it, the counts, the latency percentiles and, with
 * a true trajectory, the errors' medians and maxima. Library-private (the
 * command line is its only caller; docs/API.md, "Tiers"). */
#ifndef PTREG_TRACK_SUMMARY_H
#define PTREG_TRACK_SUMMARY_H

#include <stddef.h>

#include "ptreg/results.h"
#include "ptreg/track.h"

/* One frame as the run saw it: the tracker's answer, whether the frame
 * could be read at all, and its error against the true pose at its time. */
typedef struct track_record {
    ptreg_track_frame frame;
    int unreadable;
    int has_error;                 /* a true pose at the frame's time (and the frame was read) */
    double rotation_error_deg, translation_error;
} track_record;

typedef struct track_latency {
    double p50, p95, p99, max, mean; /* nearest-rank percentiles */
} track_latency;

typedef struct track_errors {
    size_t frames; /* those with a true pose */
    double rotation_deg_median, rotation_deg_max;
    size_t rotation_deg_max_frame; /* the first of the largest */
    double translation_median, translation_max;
} track_errors;

typedef struct track_summary {
    size_t frames, tracked, recovered, lost, unreadable, skipped;
    const track_errors *error;     /* &errors once summarized with a true trajectory; else NULL */
    const track_latency *latency_ms; /* &latency once summarized */
    double wall_ms;
    track_errors errors;
    track_latency latency;
    /* what the run keeps as it goes: every latency (8 bytes a frame, for
     * the percentiles), the errors, and with keep, every record */
    double *latencies, *rot_err, *trans_err;
    size_t *err_frame;
    track_record *records; /* NULL unless kept */
    size_t cap;
} track_summary;

/* Adds a frame (its record kept when keep); PTREG_ERR_NOMEM when out of memory. */
ptreg_status track_summary_add(track_summary *s, const track_record *r, int keep, ptreg_error *err);
/* The percentiles, the mean and, with truth, the errors' summary. */
void track_summary_finish(track_summary *s, int truth);
void track_summary_free(track_summary *s);

/* The summary's table (its "error" and "latency_ms" objects nested, of
 * the other two). */
const ptreg_result_table *track_summary_table(void);
const ptreg_result_table *track_errors_table(void);
const ptreg_result_table *track_latency_table(void);

#endif
