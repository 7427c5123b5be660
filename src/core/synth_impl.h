/* The simulated range sensor of synth.c, shared with the sequences of
 * synth_sequence.c: a pinhole camera and its depth buffer. */
#ifndef PTREG_CORE_SYNTH_IMPL_H
#define PTREG_CORE_SYNTH_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/synth.h"
#include "core/numeric.h"

/* A pinhole camera at eye looking along fwd, right and up spanning its
 * image plane (an orthonormal frame). */
typedef struct synth_camera {
    double eye[3], fwd[3], right[3], up[3];
} synth_camera;

/* At eye, looking at the origin, up as close to +z as it can be. */
void synth_camera_init(synth_camera *cam, const double eye[3]);
/* Image-plane coordinates (tangent of the angle off axis) and depth. */
void synth_camera_project(const synth_camera *cam, const double p[3], double *u, double *v, double *depth);

typedef struct synth_sample {
    float p[3];
    uint32_t pixel;
    double depth;
} synth_sample;

/* Surface samples (about 6 * want drawn) that face the sensor and are the
 * nearest surface in their depth-buffer pixel, in raster order; *out is
 * the caller's to free (NULL and 0 when out of memory). */
size_t synth_visible_samples(ptreg_shape shape, const synth_camera *cam, size_t want, ptreg_rng *rng,
                             synth_sample **out);
/* Keeps `want` of the n samples, chosen at random, in their order; -1 when
 * out of memory. */
int synth_choose_subset(synth_sample *s, size_t n, size_t want, ptreg_rng *rng);
ptreg_status synth_check_shape(ptreg_shape shape, ptreg_error *err);

#endif
