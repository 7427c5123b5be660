/* Neighbourhood queries shared by the point features: k nearest or within
 * a radius, through the k-d tree, into a list each thread reuses. */
#ifndef PTREG_FEAT_NEIGHBORHOOD_H
#define PTREG_FEAT_NEIGHBORHOOD_H

#include "ptreg/features.h"
#include "ptreg/nn.h"

ptreg_status feat_check_neighborhood(const ptreg_neighborhood *nb, ptreg_error *err);
/* The neighbours of q, sorted by (distance, index). */
ptreg_status feat_neighbors(const ptreg_kdtree *tree, const ptreg_neighborhood *nb, const float q[3],
                            ptreg_neighbors *out, ptreg_error *err);

#endif
