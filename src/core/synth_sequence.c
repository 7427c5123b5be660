/* A sequence of range scans of a shape by a sensor approaching it
 * (synth.h): the aerial-refuelling approach, for tracking. Each frame is
 * the depth-buffer scan of synth.c from the sensor's pose at its time. */
#include "ptreg/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/synth_impl.h"
#include "core/numeric.h"

#define PI 3.14159265358979323846

void ptreg_synth_sequence_options_default(ptreg_synth_sequence_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->shape = PTREG_SHAPE_AIRCRAFT;
    opt->frames = 300;
    opt->model_points = 40000;
    opt->points = 30000;
    opt->noise = 0.005;
    opt->rate = 10.0;
    opt->from = 3.0;
    opt->to = 1.0;
    opt->seed = 1;
}

/* The shape's longest extent: the aircraft's fuselage, the blob's diameter. */
static double body_length(ptreg_shape shape) { return shape == PTREG_SHAPE_AIRCRAFT ? 4.0 : 2.0; }

static void unit(double v[3])
{
    const double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    v[0] /= n, v[1] /= n, v[2] /= n;
}

static void cross(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* The sensor at time t of a sequence whose progress is a in [0, 1]: on the
 * line from the model's centre towards ahead-and-above (the tanker's boom
 * sees the receiver's nose and back), at a distance from `from` to `to`
 * body lengths, swaying in position, in where it looks and in roll. */
static void sensor_at(const ptreg_synth_sequence_options *opt, double a, double t, synth_camera *cam)
{
    const double L = body_length(opt->shape), d = L * (opt->from + (opt->to - opt->from) * a);
    double dir[3] = {1.0, 0.15, 0.5};
    unit(dir);
    const double sway = 0.02 * L, w = 2.0 * PI;
    double look[3];
    for (int k = 0; k < 3; k++) {
        cam->eye[k] = d * dir[k] + sway * sin(w * (0.13 + 0.04 * k) * t + k);
        look[k] = 0.5 * sway * sin(w * (0.07 + 0.03 * k) * t + 2.0 * k + 0.5);
        cam->fwd[k] = look[k] - cam->eye[k];
    }
    unit(cam->fwd);
    const double z[3] = {0, 0, 1};
    double right[3], up[3];
    cross(cam->fwd, z, right);
    unit(right);
    cross(right, cam->fwd, up);
    const double roll = PI / 180.0 * sin(w * 0.11 * t); /* one degree */
    for (int k = 0; k < 3; k++) {
        cam->right[k] = cos(roll) * right[k] + sin(roll) * up[k];
        cam->up[k] = -sin(roll) * right[k] + cos(roll) * up[k];
    }
}

static ptreg_status check_options(const ptreg_synth_sequence_options *opt, size_t i, ptreg_error *err)
{
    ptreg_status st = synth_check_shape(opt->shape, err);
    if (st)
        return st;
    if (opt->frames == 0 || i >= opt->frames)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: frame %zu of a sequence of %zu", i, opt->frames);
    if (opt->points == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: a frame needs at least one point");
    if (!(opt->dropouts >= 0.0 && opt->dropouts < 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: dropout fraction %g is outside [0, 1)", opt->dropouts);
    if (!(opt->noise >= 0.0) || !isfinite(opt->noise) || !(opt->rate > 0.0) || !isfinite(opt->rate))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: noise must be >= 0 and the frame rate > 0");
    if (!(opt->from > 0.75 && opt->to > 0.75 && opt->from < 1e6 && opt->to < 1e6))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "synth: the approach's distances (%g, %g body lengths) must be more than 0.75 "
                               "(the sensor outside the shape)",
                               opt->from, opt->to);
    return PTREG_OK;
}

static int by_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* An occluder near the sensor (the boom) across all but the left 15% of
 * the view: every ray to its right hits it at depth 1 instead. */
static int occlude(float *xyz, size_t n)
{
    double *u = malloc((n ? n : 1) * sizeof *u);
    if (!u)
        return -1;
    for (size_t i = 0; i < n; i++)
        u[i] = xyz[3 * i] / xyz[3 * i + 2];
    qsort(u, n, sizeof *u, by_double);
    const double cut = n ? u[(size_t)(0.15 * (double)n)] : 0.0;
    free(u);
    for (size_t i = 0; i < n; i++) {
        float *p = xyz + 3 * i;
        if (p[0] / p[2] >= cut)
            p[0] /= p[2], p[1] /= p[2], p[2] = 1.0f;
    }
    return 0;
}

ptreg_status ptreg_synth_sequence_frame(const ptreg_synth_sequence_options *opt, size_t i, ptreg_cloud *frame,
                                        double truth[16], double *time, ptreg_error *err)
{
    ptreg_cloud_init(frame);
    ptreg_status st = check_options(opt, i, err);
    if (st)
        return st;
    const double t = (double)i / opt->rate, a = opt->frames > 1 ? (double)i / (double)(opt->frames - 1) : 0.0;
    synth_camera cam;
    sensor_at(opt, a, t, &cam);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, opt->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)));
    synth_sample *s = NULL;
    size_t n = 0;
    for (size_t want = opt->points + 1; n < opt->points; want *= 2) {
        free(s);
        if (!(n = synth_visible_samples(opt->shape, &cam, want, &rng, &s)) && !s)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth: out of memory");
    }
    if (synth_choose_subset(s, n, opt->points, &rng)) {
        free(s);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth: out of memory");
    }
    /* the sensor's frame (a camera's): x right, y down, z along the view;
     * truth = [R | eye], R's columns those axes in the model's frame */
    ptreg_transform_identity(truth);
    for (int r = 0; r < 3; r++) {
        truth[4 * r + 0] = cam.right[r], truth[4 * r + 1] = -cam.up[r], truth[4 * r + 2] = cam.fwd[r];
        truth[4 * r + 3] = cam.eye[r];
    }
    size_t kept = 0;
    for (size_t j = 0; j < opt->points; j++) {
        const int drop = opt->dropouts > 0.0 && ptreg_rng_uniform(&rng) < opt->dropouts;
        double p[3], q[3];
        for (int k = 0; k < 3; k++)
            p[k] = (double)s[j].p[k] + opt->noise * ptreg_rng_normal(&rng) - cam.eye[k];
        if (drop)
            continue;
        q[0] = p[0] * cam.right[0] + p[1] * cam.right[1] + p[2] * cam.right[2];
        q[1] = -(p[0] * cam.up[0] + p[1] * cam.up[1] + p[2] * cam.up[2]);
        q[2] = p[0] * cam.fwd[0] + p[1] * cam.fwd[1] + p[2] * cam.fwd[2];
        for (int k = 0; k < 3; k++)
            s[kept].p[k] = (float)q[k];
        kept++;
    }
    if ((st = ptreg_cloud_alloc(frame, kept, 0, err))) {
        free(s);
        return st;
    }
    for (size_t j = 0; j < kept; j++)
        memcpy(frame->xyz + 3 * j, s[j].p, sizeof s[j].p);
    free(s);
    if (opt->occlusion_length > 0 && i >= opt->occlusion_start && i - opt->occlusion_start < opt->occlusion_length &&
        occlude(frame->xyz, frame->n)) {
        ptreg_cloud_free(frame);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth: out of memory");
    }
    *time = t;
    return PTREG_OK;
}
