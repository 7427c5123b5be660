/* Grain maps of orientation maps (ptreg_grain_map, orientation.h): the
 * library's own; ptreg_orientations_compute makes one when asked. */
#ifndef PTREG_GRAINS_IMPL_H
#define PTREG_GRAINS_IMPL_H

#include "ptreg/orientation.h"

/* The grains of orientations o of atoms xyz (o->n of them), without the
 * histogram and figures (grain_figures). */
ptreg_status grain_map_compute(const float *xyz, const ptreg_orientations *o, double threshold_deg, size_t min_atoms,
                               ptreg_grain_map *out, ptreg_error *err);
void grain_map_free(ptreg_grain_map *map);

/* The map's boundary histogram in bins of bin_deg (0.1 to 90), against
 * Mackenzie's expectation when cubic. */
ptreg_status grain_histogram(ptreg_grain_map *map, int cubic, double bin_deg, ptreg_error *err);
/* The histogram in 2.5-degree bins and the figures' SVG. */
ptreg_status grain_figures(const ptreg_orientations *o, ptreg_grain_map *map, ptreg_error *err);

/* Mackenzie's density of the misorientation angle between two uniformly
 * random cubic orientations, per degree, at deg (0 beyond 62.8 degrees):
 * (2/15)(1 - cos) up to 45 degrees, and beyond it that times the share of
 * rotation axes for which the rotation lies in the cubic fundamental zone. */
double grain_mackenzie_density(double deg);

#endif
