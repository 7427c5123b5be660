/* A tracking run's summary (ptreg/track.h) and the result tables of a
 * tracked frame and of the summary (ptreg/results.h). */
#include "ptreg/track.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "core/results_table.h"
#include "ptreg/results.h"

static int grow(void **p, size_t cap, size_t size)
{
    void *grown = realloc(*p, cap * size);
    *p = grown ? grown : *p;
    return grown != NULL;
}

static void finish(ptreg_track_summary *s);

ptreg_status ptreg_track_summary_add(ptreg_track_summary *s, const ptreg_track_record *r, int keep, ptreg_error *err)
{
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_ARG, "track summary: no summary");
    if (!r) {
        finish(s);
        return PTREG_OK;
    }
    if (s->frames == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 256;
        int ok = grow((void **)&s->latencies, cap, sizeof *s->latencies);
        ok &= !keep || grow((void **)&s->records, cap, sizeof *s->records);
        ok &= grow((void **)&s->rot_err, cap, sizeof *s->rot_err);
        ok &= grow((void **)&s->trans_err, cap, sizeof *s->trans_err);
        ok &= grow((void **)&s->err_frame, cap, sizeof *s->err_frame);
        if (!ok)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
        s->cap = cap;
    }
    if (r->has_error) {
        s->rot_err[s->errors.frames] = r->rotation_error_deg, s->trans_err[s->errors.frames] = r->translation_error;
        s->err_frame[s->errors.frames++] = s->frames;
    }
    if (keep)
        s->records[s->frames] = *r;
    s->latencies[s->frames++] = r->frame.latency_ms;
    s->tracked += r->frame.state == PTREG_TRACK_TRACKED;
    s->recovered += r->frame.state == PTREG_TRACK_RECOVERED;
    s->lost += r->frame.state == PTREG_TRACK_LOST;
    s->unreadable += (size_t)r->unreadable;
    return PTREG_OK;
}

/* The errors' medians and maxima, and the frame of the worst rotation. */
static void summarize_errors(ptreg_track_summary *s)
{
    ptreg_track_errors *e = &s->errors;
    for (size_t i = 0; i < e->frames; i++) {
        if (!(s->rot_err[i] <= e->rotation_deg_max)) /* the first, or a larger one */
            e->rotation_deg_max = s->rot_err[i], e->rotation_deg_max_frame = s->err_frame[i];
        e->translation_max = i == 0 || s->trans_err[i] > e->translation_max ? s->trans_err[i] : e->translation_max;
    }
    e->rotation_deg_median = ptreg_median(s->rot_err, e->frames);
    e->translation_median = ptreg_median(s->trans_err, e->frames);
}

static void finish(ptreg_track_summary *s)
{
    const size_t n = s->frames;
    ptreg_track_latency *l = &s->latency;
    s->latency_ms = l;
    s->error = s->errors.frames ? &s->errors : NULL;
    if (s->errors.frames)
        summarize_errors(s);
    double p[5];
    if (ptreg_latency_percentiles(s->latencies, n, p))
        return;
    l->p50 = p[0], l->p95 = p[1], l->p99 = p[2], l->max = p[3], l->mean = p[4];
}

void ptreg_track_summary_free(ptreg_track_summary *s)
{
    free(s->latencies);
    free(s->records);
    free(s->rot_err), free(s->trans_err), free(s->err_frame);
    memset(s, 0, sizeof *s);
}

/* ---- the tables ---- */

static const char *state_name(int value) { return ptreg_track_state_name((ptreg_track_state)value); }

#define R ptreg_track_frame
static const ptreg_result_field frame_rows[] = {
    RESULT_FIELD(R, time, DOUBLE, "s", "the frame's time"),
    RESULT_ENUM(R, state, "state", state_name, "tracked, recovered or lost"),
    RESULT_FIELD(R, points, SIZE, "", "the frame's points"),
    RESULT_FIELD(R, iterations, INT, "", "ICP's, of the pose kept"),
    RESULT_FIELD(R, fitness, DOUBLE, "", "of the pose kept"),
    RESULT_FIELD(R, rmse, DOUBLE, "the clouds' units", "of the pose kept"),
    RESULT_FIELD(R, latency_ms, DOUBLE, "ms", "frame in memory to pose, recovery included"),
    RESULT_FIELD(R, visible, INT, "", "1: tracked against the model points that face the sensor")};
#undef R
RESULT_TABLE(ptreg_track_frame_table, "track frame", ptreg_track_frame, frame_rows)

#define R ptreg_track_errors
static const ptreg_result_field error_rows[] = {
    RESULT_FIELD(R, frames, SIZE, "", "frames with a true pose"),
    RESULT_FIELD(R, rotation_deg_median, DOUBLE, "deg", "the rotation errors' median"),
    RESULT_FIELD(R, rotation_deg_max, DOUBLE, "deg", "the largest rotation error"),
    RESULT_FIELD(R, rotation_deg_max_frame, SIZE, "", "its frame (the first of the largest)"),
    RESULT_FIELD(R, translation_median, DOUBLE, "the clouds' units", "the translation errors' median"),
    RESULT_FIELD(R, translation_max, DOUBLE, "the clouds' units", "the largest translation error")};
#undef R
static const ptreg_result_table errors_table = {"track errors", error_rows, sizeof error_rows / sizeof error_rows[0],
                                                sizeof(ptreg_track_errors)};

#define R ptreg_track_latency
static const ptreg_result_field latency_rows[] = {
    RESULT_FIELD(R, p50, DOUBLE, "ms", "the median latency (nearest rank)"),
    RESULT_FIELD(R, p95, DOUBLE, "ms", "the 95th percentile"),
    RESULT_FIELD(R, p99, DOUBLE, "ms", "the 99th percentile"), RESULT_FIELD(R, max, DOUBLE, "ms", "the largest"),
    RESULT_FIELD(R, mean, DOUBLE, "ms", "the mean")};
#undef R
const ptreg_result_table track_latency_table = {
    "latency percentiles", latency_rows, sizeof latency_rows / sizeof latency_rows[0], sizeof(ptreg_track_latency)};

static double frames_per_s(const void *result)
{
    const ptreg_track_summary *s = result;
    return s->wall_ms > 0.0 ? 1000.0 * (double)s->frames / s->wall_ms : 0.0;
}

#define R ptreg_track_summary
static const ptreg_result_field summary_rows[] = {
    RESULT_FIELD(R, frames, SIZE, "", "frames read or found unreadable (not those skipped)"),
    RESULT_FIELD(R, tracked, SIZE, "", "frames tracked"),
    RESULT_FIELD(R, recovered, SIZE, "", "frames recovered"),
    RESULT_FIELD(R, lost, SIZE, "", "frames lost"),
    RESULT_FIELD(R, unreadable, SIZE, "", "frames that could not be read (lost)"),
    RESULT_OBJECT(R, error, "error", &errors_table, "against the true trajectory"),
    RESULT_FIELD(R, skipped, SIZE, "", "stream frames whose timestamp did not increase"),
    RESULT_OBJECT(R, latency_ms, "latency_ms", &track_latency_table, "per frame"),
    RESULT_FIELD(R, wall_ms, DOUBLE, "ms", "the frames' wall time"),
    RESULT_DERIVED("frames_per_s", frames_per_s, "1/s", "frames over the wall time")};
#undef R
RESULT_TABLE(ptreg_track_summary_table, "track summary", ptreg_track_summary, summary_rows)
