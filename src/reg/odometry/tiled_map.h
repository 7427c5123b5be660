/* What the localizer reads of a tiled map (tiled_map.c), and how one is
 * built and opened. Private to the library. */
#ifndef PTREG_REG_ODOMETRY_TILED_MAP_H
#define PTREG_REG_ODOMETRY_TILED_MAP_H

#include <stdint.h>

#include "ptreg/odometry.h"

/* A tile: its corner is (ix, iy) x the tile's side; its points are the
 * map's [first, first + count). */
typedef struct map_tile {
    int32_t ix, iy;
    uint64_t first, count;
} map_tile;

/* ptreg_tiled_map_load's two halves: the cloud at `cloud` tiled into
 * `out` (odometry.h has the how), and a .ptm opened. */
ptreg_status tiled_map_build(const char *cloud, const ptreg_read_options *read, const ptreg_tiled_map_options *opt,
                             const char *out, ptreg_error *err);
ptreg_status tiled_map_open(const char *path, ptreg_tiled_map **map, ptreg_error *err);

/* The info's tiles, in row order (iy, then ix). */
const map_tile *tiled_map_tiles(const ptreg_tiled_map *map);
/* The height the points' z is kept from. */
double tiled_map_z0(const ptreg_tiled_map *map);
/* Tile `tile`'s points as doubles (count x 3) into out: each its offset
 * from the tile's corner (x, y) and from z0 (z), plus shift. */
ptreg_status tiled_map_read(const ptreg_tiled_map *map, size_t tile, const double shift[3], double *out,
                            ptreg_error *err);

#endif
