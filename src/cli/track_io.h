/* ptreg track's inputs and outputs (track_io.c). */
#ifndef PTREG_CLI_TRACK_IO_H
#define PTREG_CLI_TRACK_IO_H

#include <stdint.h>
#include <stdio.h>

#include "cli/args.h"
#include "ptreg/io.h"
#include "ptreg/report.h"

typedef struct frame_source {
    const char *cmd;           /* the command, in messages */
    const char *unreadable_is; /* what an unreadable frame becomes: "lost" (track), "skipped" */
    const char **paths;        /* files, or NULL for the stream */
    size_t count, next;
    char **owned; /* --frames: the folder's paths */
    double rate;
    ptreg_frame_stream stream; /* '-': stdin */
    int stream_error;          /* 1: the stream was malformed, 2: out of memory (reported); either ends the input */
} frame_source;

/* One frame as read: its points (n 0: unreadable or empty), its time and
 * name. 0: no more frames. */
typedef struct frame_in {
    ptreg_cloud cloud;
    double t;
    const char *name;
    int unreadable;
} frame_in;

/* The frames of the command line: --frames DIR's files, FRAME files from
 * positional[first] on, or '-' there (stdin's stream). */
int track_source_open(const cli_args *a, int first, frame_source *src);
/* The next frame: 1 with one (an unreadable one flagged, reported), 0 at
 * the end or after an error (src->stream_error). */
int track_source_next(frame_source *src, frame_in *f);
void track_source_free(frame_source *src);
int track_output_open(const cli_args *a, const char *name, ptreg_atomic_file *af, FILE **f);
int track_output_close(const char *cmd, ptreg_atomic_file *af, FILE **f, int rc);
int track_read_truth(const char *path, ptreg_trajectory *tr);
/* A TUM line's numbers from a pose: tx ty tz qx qy qz qw (qw >= 0). */
void track_tum_numbers(const double T[16], double out[7]);
/* Writes "timestamp tx ty tz qx qy qz qw" (the translation as the shortest
 * text that reads back); nonzero when the write fails. */
int track_write_tum(FILE *f, double t, const double pose[7]);

/* --html: where the sensor was at each frame (the pose's translation, in
 * the model's frame), which frames were lost, and the last frame placed. */
typedef struct track_page {
    float *path;   /* 3 a frame: the pose's translation, in the model's frame */
    uint8_t *lost; /* 1 a frame */
    size_t count, cap;
    float *last; /* the last frame with points, moved by its pose */
    size_t last_n;
    int no_memory; /* a frame could not be kept: the page fails */
} track_page;

/* Adds a frame of n points (n may be 0) at pose. */
void track_page_add(track_page *p, const float *frame, size_t n, const double pose[16], int lost);
/* The page's layers: the model's m points, the last frame, the sensor's
 * path (two frames or more), the frames lost. */
ptreg_status track_page_report(const track_page *p, ptreg_report *rep, const float *model, size_t m, ptreg_error *err);
void track_page_free(track_page *p);

#endif
