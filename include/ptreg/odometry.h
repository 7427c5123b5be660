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
#include "device.h"
#include "io.h"
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
    ptreg_device device;      /* where the ICP steps run: auto (default: a GPU with double precision, else
                                 the CPU), cpu, cuda:N or opencl:N; the map stays on the host and is copied
                                 up once a registration; the poses are the CPU's within rounding */
} ptreg_odometry_options;

PTREG_API void ptreg_odometry_options_default(ptreg_odometry_options *opt);
/* The device opt->device resolves to for odometry (auto: a GPU with double
 * precision, else the CPU; a device named that cannot run it: its error). */
PTREG_API ptreg_status ptreg_odometry_resolve_device(const ptreg_odometry_options *opt, ptreg_device *on,
                                                     ptreg_error *err);

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
    /* localization (ptreg_odometry_create_localizer); odometry's frames are tracked, 0 and 0 */
    ptreg_track_state state; /* tracked: ICP's pose fits the map (min_fitness); recovered: it did not,
                                 global registration's did; lost: neither (the pose is the prediction) */
    double fitness;          /* the share of registered points within half a voxel of the map at the pose
                                 (of the recovered pose when recovered) */
    size_t tiles;            /* the prior map's tiles held after the frame */
    size_t tiles_read;       /* read for this frame */
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
    ptreg_track_latency latency;           /* per frame: nearest-rank percentiles to 0.2% (a fixed
                                              histogram, so memory does not grow with the run) */
    const ptreg_track_latency *latency_ms; /* &latency (what its result table writes) */
    double frames_per_s;                   /* frames / the sum of their latencies */
    double distance;                       /* the path's length, the poses' translations */
    size_t map_points;                     /* in the local map */
    size_t map_bytes;                      /* the map's memory */
    size_t tracked, recovered, lost;       /* frames by state (localization; odometry's are all tracked) */
    size_t tiles_read;                     /* prior map tiles read, in all */
} ptreg_odometry_summary;

PTREG_API ptreg_status ptreg_odometry_summarize(const ptreg_odometry *od, ptreg_odometry_summary *summary,
                                                ptreg_error *err);
PTREG_API void ptreg_odometry_destroy(ptreg_odometry *od);

/* ---- localization in a prior map ----
 * A prior map of any size (a LAS of 10^8 points in UTM) is cut once into
 * square tiles of its x and y, each thinned to the map's voxels (at most
 * max_points_per_voxel a voxel, KISS-ICP's spacing rule) and written as a
 * tiled map file (.ptm, docs/FORMATS.md). Localization then registers each
 * frame as odometry does, but against the tiles around the predicted pose,
 * read as the path reaches them and dropped behind it: memory holds the
 * submap, never the map. docs/ALGORITHMS.md, "Localization". */
typedef struct ptreg_tiled_map ptreg_tiled_map;

typedef struct ptreg_tiled_map_options {
    double tile;              /* a tile's side, m (default 50); a whole number of voxels */
    double voxel;             /* the thinning voxel (default 1: odometry's for a 100 m range) */
    int max_points_per_voxel; /* default 20 */
} ptreg_tiled_map_options;

PTREG_API void ptreg_tiled_map_options_default(ptreg_tiled_map_options *opt);
typedef struct ptreg_tiled_map_info {
    double tile, voxel;
    int max_points_per_voxel;
    size_t tiles, points; /* points kept after thinning */
    size_t source_points; /* read from the cloud it was built from */
    double lo[3], hi[3];  /* the tiles' extent in x and y; z: the points' */
} ptreg_tiled_map_info;

/* The map a localizer reads, from what a user names: a .ptm (its name ends
 * so, any case: ptreg_tiled_map_is_file) opened as it is (its header and
 * tile table checked against the file's size; tiles are read when asked
 * for), or any other cloud tiled first with opt (NULL: the defaults) into
 * save, or without save into a scratch file under $TMPDIR that is gone
 * once the map is closed. save with a .ptm is refused (PTREG_ERR_ARG); opt
 * is then unused. Tiling reads the cloud in pieces (its points in the
 * file's absolute coordinates), twice, and writes the map atomically;
 * memory: a piece, the tiles' write buffers and the largest tile; a
 * scratch file beside the map holds the points sorted by tile meanwhile. */
PTREG_API ptreg_status ptreg_tiled_map_load(const char *path, const ptreg_read_options *read,
                                            const ptreg_tiled_map_options *opt, const char *save, ptreg_tiled_map **map,
                                            ptreg_error *err);
PTREG_API int ptreg_tiled_map_is_file(const char *path);
PTREG_API void ptreg_tiled_map_get_info(const ptreg_tiled_map *map, ptreg_tiled_map_info *info);
PTREG_API void ptreg_tiled_map_close(ptreg_tiled_map *map);

typedef struct ptreg_localize_options {
    ptreg_odometry_options odometry; /* each frame's registration, as odometry's; its voxel is the map's
                                        (0, or the map's own value) and so is its per-voxel bound (the
                                        one the map was tiled with); keep_all is refused */
    double init[16];                 /* the first frame's predicted pose in the map's coordinates (identity) */
    double radius;                   /* tiles within radius of the predicted position are held (default 0: max_range) */
    double prefetch;                 /* and those within radius + prefetch are read ahead, one a frame (default 0:
                            a tile's side); held tiles farther than radius + prefetch + a tile are dropped */
    double min_fitness;              /* a pose with fewer of its registered points within half a voxel of the map
                            is recovered (default 0.5) */
    int recover;                     /* 1 (default): global registration (FPFH, RANSAC) of a frame that fails
                            min_fitness against the submap around the prediction, refined by the
                            frame's ICP; 0: it is lost */
} ptreg_localize_options;

PTREG_API void ptreg_localize_options_default(ptreg_localize_options *opt);
/* The table of its numbers, ptreg_option_table_find("localize") (options.h): radius, prefetch,
 * min_fitness, then odometry's (in odometry). */

/* A localizer: ptreg_odometry_push registers each frame against `map`
 * (which must outlive it), poses in the map's coordinates;
 * ptreg_odometry_map gives the submap held. */
PTREG_API ptreg_status ptreg_odometry_create_localizer(const ptreg_localize_options *loc, ptreg_tiled_map *map,
                                                       ptreg_odometry **od, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
