/* The model as the sensor sees it (track.h, visible_only): the points whose
 * outward normal faces the sensor's position in the model's frame, culled
 * again when that position has moved, and resident (an ICP model) like the
 * whole one. docs/ALGORITHMS.md, "Tracking", 6. */
#ifndef PTREG_REG_TRACK_VISIBLE_H
#define PTREG_REG_TRACK_VISIBLE_H

#include <stddef.h>

#include "ptreg/icp.h"
#include "ptreg/nn.h"

typedef struct track_visible {
    const float *xyz, *normals; /* the whole model; normals outward */
    size_t m;
    ptreg_device device;
    double centre[3]; /* the model's */
    double refresh;   /* cull again once the sensor moved by this share of its distance from centre */
    /* the culled model and where it was culled from */
    float *kept_xyz, *kept_normals;
    size_t kept;
    ptreg_model_index *index;
    ptreg_icp_model *model;
    double viewpoint[3];
    int ready;
    size_t culls; /* how many times it was culled */
} track_visible;

/* Whether model point q, its outward normal n, faces a sensor at o:
 * n . (o - q) > 0 (the one rule: the cull and the tracker's judging). */
int track_visible_faces(const float q[3], const float n[3], const double o[3]);

/* The culled model for a sensor at viewpoint (model frame): the last one
 * when the sensor moved less than refresh of its distance since; else
 * culled anew. A cull
 * that keeps fewer than 3 points keeps the last (ready stays as it was). */
ptreg_status track_visible_update(track_visible *v, const double viewpoint[3], ptreg_error *err);
void track_visible_free(track_visible *v);

#endif
