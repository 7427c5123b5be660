/* ptreg built-in test data: scan-like clouds of analytic shapes with a known
 * pose, for the demo, the tests and the benchmarks. */
#ifndef PTREG_SYNTH_H
#define PTREG_SYNTH_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_shape {
    PTREG_SHAPE_BLOB = 0, /* a lumpy, asymmetric closed surface of radius ~1 */
    PTREG_SHAPE_AIRCRAFT  /* fuselage, wings and tail: the refuelling study's kind of model */
} ptreg_shape;

PTREG_API const char *ptreg_shape_name(ptreg_shape shape);
PTREG_API int ptreg_shape_parse(const char *name, ptreg_shape *shape);

/* n points uniform over the whole surface (the model), with outward normals. */
PTREG_API ptreg_status ptreg_synth_model(ptreg_shape shape, size_t n, uint64_t seed, ptreg_cloud *model,
                                         ptreg_error *err);

typedef struct ptreg_synth_options {
    size_t points;          /* sensed points (default 30000) */
    double max_angle_deg;   /* rotation angle drawn uniformly in [-a, a] per axis (default 20) */
    double max_translation; /* translation components in [-t, t] (default 0.1) */
    double noise;           /* Gaussian noise sigma (default 0.005) */
    double outliers;        /* fraction of points replaced by uniform outliers (default 0) */
    double overlap;         /* visible fraction kept by a planar crop, (0, 1] (default 1) */
    double view[3];         /* sensor position, looking at the origin (default 1, -2, 5) */
    uint64_t seed;
} ptreg_synth_options;

PTREG_API void ptreg_synth_options_default(ptreg_synth_options *opt);

/* A scan of the shape as a range sensor at opt->view would see it: surface
 * samples independent of the model's, the nearest surface per pixel of a
 * depth buffer, in raster order; then cropped by a plane to the overlap
 * fraction, noisy, with outliers, and moved by a random pose. *truth takes
 * the sensed cloud back onto the model frame (what ICP should return). */
PTREG_API ptreg_status ptreg_synth_scan(ptreg_shape shape, const ptreg_synth_options *opt, ptreg_cloud *sensed,
                                        double truth[16], ptreg_error *err);


/* ---- a sequence of frames: a sensor approaching the model ---- */

/* The aerial-refuelling approach: the model (the receiver) seen by a range
 * sensor that closes in from 3 body lengths (the model's longest extent)
 * to 1 along a straight line ahead of and above it, looking at it, with a
 * gentle sway in all six degrees of freedom (a few centimetres per body
 * length and about a degree, at incommensurate frequencies). Frame i is
 * taken at i / rate seconds. docs/ALGORITHMS.md, "Tracking". */
typedef struct ptreg_synth_sequence_options {
    ptreg_shape shape;       /* default AIRCRAFT */
    size_t frames;           /* N (default 300) */
    size_t model_points;     /* of the model, ptreg_synth_model (default 40000; the caller makes the model) */
    size_t points;           /* sensed points per frame before dropouts (default 30000) */
    double noise;            /* Gaussian noise sigma, model units (default 0.005) */
    double dropouts;         /* each point dropped with this probability, [0, 1) (default 0) */
    size_t occlusion_start;  /* frames [start, start + length) have most of the view blocked: */
    size_t occlusion_length; /* 85% of the rays hit an occluder near the sensor (default length 0) */
    double rate;             /* frames per second (default 10) */
    double from, to;         /* the sensor's distance from the model's centre at the first and the last
                                frame, in body lengths (default 3 and 1) */
    uint64_t seed;           /* default 1; each frame draws from its own stream of it */
} ptreg_synth_sequence_options;

PTREG_API void ptreg_synth_sequence_options_default(ptreg_synth_sequence_options *opt);

/* Frame i (< opt->frames) of the sequence: its points in the sensor's
 * frame (x right, y down, z along the view), *truth the pose taking them into
 * the model's frame (what a tracker should return) and *time its time in
 * seconds. Any frame can be made alone; the same options give the same
 * bits. */
PTREG_API ptreg_status ptreg_synth_sequence_frame(const ptreg_synth_sequence_options *opt, size_t i, ptreg_cloud *frame,
                                                  double truth[16], double *time, ptreg_error *err);

/* ---- a LiDAR drive: a spinning multi-beam scanner on a car ---- */

/* A car drives a winding, hilly street at constant speed: straights of 60
 * to 200 m, turns of 30 to 90 degrees (radius 25 to 60 m), smooth hills of
 * a few metres. Beside the road stand building facades, poles, trees (a
 * trunk and a cone) and parked cars, placed from the seed. The scanner, KITTI's
 * Velodyne HDL-64E by default, sits 1.73 m above the road; its frame is x
 * forward, y left, z up, pitched and rolled with the ground. Each frame is
 * one instantaneous turn (KITTI's scans come motion-compensated), its spin
 * starting at a random azimuth. docs/ALGORITHMS.md, "LiDAR odometry". */
typedef struct ptreg_synth_lidar_options {
    size_t frames;               /* default 1000 */
    int beams;                   /* lasers, spread evenly over the vertical field (default 64) */
    double azimuth_step_deg;     /* between firings (default 0.2) */
    double fov_up_deg;           /* the top beam's elevation (default 2) */
    double fov_down_deg;         /* the bottom one's (default -24.8) */
    double min_range, max_range; /* returns kept, m (default 2.5, 120) */
    double speed;                /* m/s (default 10) */
    double rate;                 /* turns per second: frame i is at i / rate s (default 10) */
    double noise;                /* range noise sigma, m (default 0.02) */
    double dropouts;             /* each return dropped with this probability (default 0) */
    uint64_t seed;               /* default 1: the world, and each frame's stream */
    double lane;                 /* the sensor's offset from the road's centre line, m, left > 0 (default 0):
                                    another drive through the same world */
    uint64_t scan_seed;          /* each frame's noise, dropouts and spin (default 0: seed) */
} ptreg_synth_lidar_options;

typedef struct ptreg_synth_lidar ptreg_synth_lidar;

PTREG_API void ptreg_synth_lidar_options_default(ptreg_synth_lidar_options *opt);
/* Makes the world (the road and its objects) for the options' drive. */
PTREG_API ptreg_status ptreg_synth_lidar_create(const ptreg_synth_lidar_options *opt, ptreg_synth_lidar **world,
                                                ptreg_error *err);
/* Frame i: the returns in the sensor's frame (intensity: each surface's
 * reflectance x 65535), *pose taking them into the world (the truth an
 * odometry should return, up to the first pose) and *time. Any frame can
 * be made alone; the same options give the same bits for any thread count. */
PTREG_API ptreg_status ptreg_synth_lidar_frame(const ptreg_synth_lidar *world, size_t i, ptreg_cloud *frame,
                                               double pose[16], double *time, ptreg_error *err);
PTREG_API void ptreg_synth_lidar_destroy(ptreg_synth_lidar *world);

#ifdef __cplusplus
}
#endif

#endif
