/* What odometry's driver (odometry.c), its voxel map (odometry_map.c) and
 * its registration (odometry_icp.c) share. Private to the library. */
#ifndef PTREG_REG_ODOMETRY_IMPL_H
#define PTREG_REG_ODOMETRY_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "device/engine.h"
#include "ptreg/odometry.h"

/* A voxel hash map: voxels (cells) of up to `per` points, found by their
 * integer coordinates through an open-addressed table (linear probing).
 * A point is kept as a float offset from its voxel's centre, so the map
 * keeps its precision however far the drive goes. Cells sit in an array
 * in the order they were made; removing one moves the last into its
 * place, so the order, like everything else, follows from the frames
 * alone. */
/* The most points a voxel may hold (the option's range). */
#define ODO_MAX_PER 255

/* A table entry: a cell's packed coordinates + 1 (0: empty), its index and
 * its points' count, together so that a lookup reads one cache line. */
typedef struct odo_entry {
    uint64_t key;
    uint32_t cell, count;
} odo_entry;

typedef struct odo_map {
    double voxel, inv_voxel;
    int per;         /* the most points a voxel holds */
    double spacing2; /* a point joins a voxel only this far (squared) from its others:
                          voxel^2 / per, spreading them over it (KISS-ICP's rule) */
    odo_entry *table;
    size_t mask;       /* table size - 1 (a power of two) */
    size_t cells, cap; /* cells in use, room */
    int32_t *coord;    /* cell: its integer coordinates (3) */
    uint8_t *count;    /* cell: its points */
    float *offset;     /* cell: its points' offsets from its centre, per x's, then
                          per y's and per z's */
    size_t points;
} odo_map;

int odo_map_init(odo_map *m, double voxel, int per);
void odo_map_free(odo_map *m);
/* Adds world points (double xyz) to their voxels, each while it has room
 * and it keeps the spacing;
 * -1 when out of memory (the map keeps what was added). */
int odo_map_add(odo_map *m, const double *xyz, size_t n);
/* Drops the voxels whose first point is `range` or more from c. */
void odo_map_prune(odo_map *m, const double c[3], double range);
/* Drops the voxels whose integer x and y lie in [lo, hi): a prior map's
 * tile leaving the submap. */
void odo_map_drop_columns(odo_map *m, const int32_t lo[2], const int32_t hi[2]);
/* What a query remembers of its voxel's neighbourhood from one call to the
 * next (ICP asks again for the same source point, moved a little): each
 * neighbour's table position, looked up once while the query stays in
 * its voxel (the map does not change during a registration). */
#define ODO_NEAR_UNKNOWN UINT32_MAX
#define ODO_NEAR_NONE (UINT32_MAX - 1)
typedef struct odo_near_cache {
    int32_t voxel[3];
    int valid;
    uint32_t entry[27]; /* ODO_NEAR_UNKNOWN: not looked up; ODO_NEAR_NONE: no cell */
} odo_near_cache;

/* The nearest map point to q among q's voxel and its 26 neighbours, if
 * nearer than sqrt(*best2): written to out, *best2 lowered; 0 when none.
 * cache may be NULL; one, zeroed first, per query point. */
int odo_map_nearest(const odo_map *m, const double q[3], odo_near_cache *cache, double *best2, double out[3]);
/* Every point, cell by cell, as doubles (n x 3). */
void odo_map_points(const odo_map *m, double *out);
size_t odo_map_bytes(const odo_map *m);

/* Point-to-point ICP with a Geman-McClure kernel against the map, from
 * *T (updated): pairs farther than max_dist are left out; each pair
 * weighs k^2 / (k + r^2)^2, k = kernel. Steps until a step's twist is
 * shorter than tol or max_iter. KISS-ICP's Geman-McClure weight. */
typedef struct odo_icp_out {
    int iterations;
    size_t pairs;
} odo_icp_out;
typedef struct odo_device odo_device;
/* dev: the steps' sums on that device (NULL: the CPU's). */
ptreg_status odo_register(const odo_map *m, const double *src, size_t n, double T[16], double max_dist, double kernel,
                          int max_iter, double tol, odo_device *dev, odo_icp_out *out, ptreg_error *err);

/* A step's sums: the 6 x 6 system's upper triangle (21), its right-hand
 * side (6) and the pairs found. */
#define ODO_STEP_SUMS 28

/* ---- the steps on a GPU (odometry_device.c, odometry.cl) ---- */
/* odometry's engines: the CPU's, and this one's (double precision needed) */
extern const engine odometry_device_engine;
ptreg_status odo_device_open(const ptreg_device *on, odo_device **d, ptreg_error *err);
void odo_device_close(odo_device *d);
/* The map and the frame's n points (sensor frame, double xyz) for a
 * registration's steps. */
ptreg_status odo_device_load(odo_device *d, const odo_map *m, const double *src, size_t n, ptreg_error *err);
/* The step's sums at T (pairs within sqrt(max_dist2), Geman-McClure
 * kernel), the groups' added in order. */
ptreg_status odo_device_sums(odo_device *d, const double T[16], double max_dist2, double kernel,
                             double total[ODO_STEP_SUMS], ptreg_error *err);

/* How many of the n points, moved by T, have a map point within dist
 * (dist at most a voxel: the search looks at the 27 voxels around). */
size_t odo_fitness(const odo_map *m, const double *src, size_t n, const double T[16], double dist);

/* The rigid motion exp(xi) of a twist xi = (rho, phi) (translation part
 * first), and its inverse map log (xi of T). */
void odo_se3_exp(const double xi[6], double T[16]);
void odo_se3_log(const double T[16], double xi[6]);

/* ---- localization's submap (localize.c) ---- */
typedef struct odo_prior odo_prior;
/* The submap of `map` for a localizer starting at loc->init (checked by
 * the caller); anchor: the map's coordinates of the local zero. */
ptreg_status odo_prior_create(const ptreg_tiled_map *map, const ptreg_localize_options *loc, double max_range,
                              odo_prior **p, double anchor[3], ptreg_error *err);
void odo_prior_free(odo_prior *p);
size_t odo_prior_held(const odo_prior *p);
/* The tiles within the radius of P's position read into m (and the
 * nearest one within the prefetch ring), those beyond dropped; *read
 * counts the tiles read. */
ptreg_status odo_prior_update(odo_prior *p, odo_map *m, const double P[16], size_t *read, ptreg_error *err);
/* A frame that did not fit (n points, sensor frame): global registration
 * (2-voxel FPFH, RANSAC) against the submap within icp->range of P's
 * position, then ICP at RANSAC's voxel and at the map's; T its pose, *pairs
 * the last step's. */
typedef struct odo_recover_icp {
    int max_iter;
    double tol;
    double range; /* the submap's points within range of P's position are the target */
} odo_recover_icp;
ptreg_status odo_prior_recover(const odo_map *m, const double *src, size_t n, const double P[16],
                               const odo_recover_icp *icp, double T[16], size_t *pairs, ptreg_error *err);

#endif
