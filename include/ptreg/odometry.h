/* LiDAR odometry without a map: each scan registered against a local map of
 * the scans before it, as KISS-ICP does (Vizzo et al., RA-L 2023). Per
 * frame: the points within the range kept, optionally de-skewed; thinned to
 * a voxel grid (half the map's voxel: what enters the map; one and a half:
 * what is registered); registered from a constant-velocity prediction by
 * point-to-point ICP with a Geman-McClure kernel against the map's nearest
 * points, the correspondence distance and the kernel's width following the
 * recent motion's deviation from the predictions; then added to the map,
 * whose voxels hold a bounded number of points and are dropped beyond the
 * range. The same bits for any thread count. docs/ALGORITHMS.md, "LiDAR
 * odometry". */
#ifndef PTREG_ODOMETRY_H
#define PTREG_ODOMETRY_H

#include <stddef.h>

#include "core.h"
#include "track.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptreg_odometry_options {
    double max_range;         /* points farther from the sensor are dropped, and map voxels farther
                                  from it (default 100, KISS-ICP's for KITTI) */
    double min_range;         /* points nearer are dropped: the car itself (default 0) */
    double voxel;             /* the map's voxel (default 0: max_range / 100) */
    int max_points_per_voxel; /* the map's bound per voxel (default 20) */
    double initial_threshold; /* the deviation sigma before any motion is seen (default 2) */
    double min_motion;        /* a frame whose correction from the prediction is smaller does not
                                  update sigma (default 0.1) */
    int max_iter;             /* ICP steps per frame (default 500) */
    double tol;               /* a step shorter than this ends ICP (default 1e-4) */
    int deskew;               /* 1: move each point by the motion at its time (ptreg_odometry_push's
                                  times; default 0: scans are taken as they are) */
    int keep_all;             /* 1: also keep the whole run's map, a point per voxel (default 0) */
} ptreg_odometry_options;

PTREG_API void ptreg_odometry_options_default(ptreg_odometry_options *opt);

/* One frame's registration (its result table: ptreg_result_table_find("odometry_frame")). */
typedef struct ptreg_odometry_frame {
    double pose[16];   /* the frame's points into the first frame's */
    size_t points;     /* within the range */
    size_t registered; /* after thinning: those ICP registered */
    size_t pairs;      /* of them, with a map point within the correspondence distance (last step) */
    int iterations;    /* ICP steps (0: the first frame, or an empty map) */
    double sigma;      /* the deviation that set the correspondence distance (3 sigma) and the
                            kernel's width (sigma / 3) */
    double correction; /* how far ICP moved the prediction: translation + rotation angle x max_range */
    size_t map_points; /* in the local map after the frame */
    double latency_ms; /* points in memory to pose, map update included */
} ptreg_odometry_frame;

typedef struct ptreg_odometry ptreg_odometry;

PTREG_API ptreg_status ptreg_odometry_create(const ptreg_odometry_options *opt, ptreg_odometry **od, ptreg_error *err);
/* Registers the next frame: n points (xyz), times (NULL, or each point's
 * time within the sweep, 0 at its start and 1 at its end) for deskew. A
 * frame with no point in range keeps the prediction as its pose and leaves
 * the map as it was. Non-finite points are an error (PTREG_ERR_ARG): the
 * readers drop them. */
PTREG_API ptreg_status ptreg_odometry_push(ptreg_odometry *od, const float *xyz, size_t n, const float *times,
                                           ptreg_odometry_frame *out, ptreg_error *err);

typedef enum ptreg_odometry_map_kind {
    PTREG_ODOMETRY_LOCAL_MAP = 0, /* the local map now (up to max_points_per_voxel a voxel) */
    PTREG_ODOMETRY_WHOLE_MAP      /* the whole run's, a point per voxel (needs keep_all) */
} ptreg_odometry_map_kind;

/* The map's points in the first frame's coordinates (the cloud gets an
 * origin when they are far from it: ptreg_cloud's origin). */
PTREG_API ptreg_status ptreg_odometry_map(const ptreg_odometry *od, ptreg_odometry_map_kind kind, ptreg_cloud *map,
                                          ptreg_error *err);

/* The run so far (its result table: ptreg_result_table_find("odometry_summary")). */
typedef struct ptreg_odometry_summary {
    size_t frames;                         /* pushed */
    size_t empty;                          /* with no point in range */
    ptreg_track_latency latency;           /* per frame, nearest-rank percentiles */
    const ptreg_track_latency *latency_ms; /* &latency (what its result table writes) */
    double frames_per_s;                   /* frames / the sum of their latencies */
    double distance;                       /* the path's length, the poses' translations */
    size_t map_points;                     /* in the local map */
    size_t map_bytes;                      /* the map's memory */
} ptreg_odometry_summary;

PTREG_API ptreg_status ptreg_odometry_summarize(const ptreg_odometry *od, ptreg_odometry_summary *summary,
                                                ptreg_error *err);
PTREG_API void ptreg_odometry_destroy(ptreg_odometry *od);

#ifdef __cplusplus
}
#endif

#endif
