/* Built-in test shapes and a simulated range scan of them (synth.h). The
 * shapes are fixed analytic surfaces so every run and machine makes the same
 * clouds from the same seed. */
#include "ptreg/synth.h"

#include "core/synth_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/numeric.h"

#define PI 3.14159265358979323846

const char *ptreg_shape_name(ptreg_shape shape) { return shape == PTREG_SHAPE_AIRCRAFT ? "aircraft" : "blob"; }

int ptreg_shape_parse(const char *name, ptreg_shape *shape)
{
    if (!strcmp(name, "blob"))
        *shape = PTREG_SHAPE_BLOB;
    else if (!strcmp(name, "aircraft"))
        *shape = PTREG_SHAPE_AIRCRAFT;
    else
        return -1;
    return 0;
}

static void normalize3(double v[3])
{
    double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    v[0] /= n, v[1] /= n, v[2] /= n;
}

static void cross3(const double a[3], const double b[3], double out[3])
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static double dot3(const double a[3], const double b[3]) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void random_direction(ptreg_rng *rng, double d[3])
{
    double z = 2.0 * ptreg_rng_uniform(rng) - 1.0, phi = 2.0 * PI * ptreg_rng_uniform(rng);
    double r = sqrt(1.0 - z * z);
    d[0] = r * cos(phi), d[1] = r * sin(phi), d[2] = z;
}

/* ---- blob: a sphere with Gaussian bumps and dents at fixed directions ---- */

static const double blob_bumps[][5] = {
    /* direction x, y, z, amplitude, width */
    {0.9, 0.3, 0.2, 0.35, 0.15},    {-0.5, 0.8, 0.1, -0.20, 0.25},  {0.1, -0.4, 0.9, 0.25, 0.10},
    {-0.3, -0.9, -0.2, 0.30, 0.20}, {0.2, 0.1, -1.0, -0.15, 0.30},  {-0.8, -0.1, 0.5, 0.20, 0.08},
    {0.5, -0.7, -0.4, 0.12, 0.05},  {0.6, 0.6, 0.5, 0.18, 0.04},    {-0.2, 0.5, 0.85, -0.12, 0.05},
    {0.95, -0.2, -0.3, 0.15, 0.03}, {-0.6, -0.5, 0.6, 0.16, 0.04},  {0.3, 0.9, -0.3, 0.22, 0.06},
    {-0.9, 0.3, -0.3, 0.14, 0.03},  {0.0, -0.95, 0.3, -0.10, 0.04}, {0.4, -0.3, 0.85, 0.12, 0.03},
    {-0.4, 0.2, -0.9, 0.17, 0.05},
};

static double blob_radius(const double d[3])
{
    double r = 1.0;
    for (size_t k = 0; k < sizeof blob_bumps / sizeof blob_bumps[0]; k++) {
        double c[3] = {blob_bumps[k][0], blob_bumps[k][1], blob_bumps[k][2]};
        normalize3(c);
        r += blob_bumps[k][3] * exp((dot3(d, c) - 1.0) / blob_bumps[k][4]);
    }
    return r;
}

static void blob_point(const double d_in[3], double p[3])
{
    double d[3] = {d_in[0], d_in[1], d_in[2]};
    normalize3(d);
    double r = blob_radius(d);
    p[0] = r * d[0], p[1] = r * d[1], p[2] = r * d[2];
}

/* The surface point in direction d, its outward normal and the area it
 * covers per unit of solid angle (from two tangent differences). */
static double blob_sample_at(const double d[3], double p[3], double n[3])
{
    double t1[3], t2[3], a[3] = {1, 0, 0};
    if (fabs(d[0]) > 0.9)
        a[0] = 0, a[1] = 1;
    cross3(d, a, t1);
    normalize3(t1);
    cross3(d, t1, t2);
    const double h = 1e-5;
    double pp[3], pm[3], qp[3], qm[3], e1[3], e2[3], dd[3];
    for (int s = 0; s < 4; s++) {
        double sign = (s & 1) ? -h : h;
        const double *t = s < 2 ? t1 : t2;
        for (int k = 0; k < 3; k++)
            dd[k] = d[k] + sign * t[k];
        blob_point(dd, s == 0 ? pp : s == 1 ? pm : s == 2 ? qp : qm);
    }
    for (int k = 0; k < 3; k++)
        e1[k] = (pp[k] - pm[k]) / (2 * h), e2[k] = (qp[k] - qm[k]) / (2 * h);
    cross3(e1, e2, n);
    double area = sqrt(dot3(n, n));
    normalize3(n);
    if (dot3(n, d) < 0)
        n[0] = -n[0], n[1] = -n[1], n[2] = -n[2];
    blob_point(d, p);
    return area;
}

static void blob_sample(ptreg_rng *rng, double p[3], double n[3])
{
    /* Rejection against a bound on the area factor makes the samples
     * uniform over the surface rather than over directions; the factor's
     * largest value over 2e6 directions is 1.86. */
    const double bound = 2.5;
    for (;;) {
        double d[3];
        random_direction(rng, d);
        double area = blob_sample_at(d, p, n);
        if (ptreg_rng_uniform(rng) * bound < area)
            return;
    }
}

/* ---- aircraft: a union of ellipsoids ---- */

typedef struct ellipsoid {
    double c[3], a[3];
} ellipsoid;

static const ellipsoid aircraft_parts[] = {
    {{0.0, 0.0, 0.0}, {2.0, 0.25, 0.25}},    /* fuselage */
    {{0.15, 0.0, -0.05}, {0.45, 1.8, 0.05}}, /* wings */
    {{-1.7, 0.0, 0.05}, {0.22, 0.65, 0.03}}, /* horizontal tail */
    {{-1.7, 0.0, 0.3}, {0.28, 0.03, 0.35}},  /* fin */
    {{0.7, 0.6, -0.2}, {0.35, 0.08, 0.08}},  /* one engine pod: breaks the mirror symmetry */
};
#define AIRCRAFT_PARTS (sizeof aircraft_parts / sizeof aircraft_parts[0])

static double ellipsoid_level(const ellipsoid *e, const double p[3])
{
    double s = 0.0;
    for (int k = 0; k < 3; k++) {
        double u = (p[k] - e->c[k]) / e->a[k];
        s += u * u;
    }
    return s;
}

/* Knud Thomsen's approximation; only the ratios between parts matter. */
static double ellipsoid_area(const ellipsoid *e)
{
    const double q = 1.6075;
    double ab = pow(e->a[0] * e->a[1], q), ac = pow(e->a[0] * e->a[2], q), bc = pow(e->a[1] * e->a[2], q);
    return 4.0 * PI * pow((ab + ac + bc) / 3.0, 1.0 / q);
}

static void ellipsoid_sample(const ellipsoid *e, ptreg_rng *rng, double p[3], double n[3])
{
    double amin = fmin(e->a[0], fmin(e->a[1], e->a[2]));
    for (;;) {
        double u[3];
        random_direction(rng, u);
        for (int k = 0; k < 3; k++)
            n[k] = u[k] / e->a[k];
        double g = sqrt(dot3(n, n)) * amin; /* area factor over its maximum */
        if (ptreg_rng_uniform(rng) < g) {
            for (int k = 0; k < 3; k++)
                p[k] = e->c[k] + e->a[k] * u[k];
            normalize3(n);
            return;
        }
    }
}

static void aircraft_sample(ptreg_rng *rng, double p[3], double n[3])
{
    double area[AIRCRAFT_PARTS], total = 0.0;
    for (size_t i = 0; i < AIRCRAFT_PARTS; i++)
        total += area[i] = ellipsoid_area(&aircraft_parts[i]);
    for (;;) {
        double pick = ptreg_rng_uniform(rng) * total;
        size_t part = 0;
        while (part + 1 < AIRCRAFT_PARTS && pick >= area[part])
            pick -= area[part++];
        ellipsoid_sample(&aircraft_parts[part], rng, p, n);
        int hidden = 0; /* inside another part: not on the union's surface */
        for (size_t j = 0; j < AIRCRAFT_PARTS && !hidden; j++)
            hidden = j != part && ellipsoid_level(&aircraft_parts[j], p) < 1.0;
        if (!hidden)
            return;
    }
}

static void shape_sample(ptreg_shape shape, ptreg_rng *rng, double p[3], double n[3])
{
    if (shape == PTREG_SHAPE_AIRCRAFT)
        aircraft_sample(rng, p, n);
    else
        blob_sample(rng, p, n);
}

ptreg_status synth_check_shape(ptreg_shape shape, ptreg_error *err)
{
    if (shape != PTREG_SHAPE_BLOB && shape != PTREG_SHAPE_AIRCRAFT)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: unknown shape %d", (int)shape);
    return PTREG_OK;
}

ptreg_status ptreg_synth_model(ptreg_shape shape, size_t n, uint64_t seed, ptreg_cloud *model, ptreg_error *err)
{
    ptreg_cloud_init(model);
    ptreg_status st = synth_check_shape(shape, err);
    if (st)
        return st;
    if (n == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: a model needs at least one point");
    if ((st = ptreg_cloud_alloc(model, n, 1, err)))
        return st;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) {
        double p[3], nn[3];
        shape_sample(shape, &rng, p, nn);
        for (int k = 0; k < 3; k++) {
            model->xyz[3 * i + k] = (float)p[k];
            model->normals[3 * i + k] = (float)nn[k];
        }
    }
    return PTREG_OK;
}

void ptreg_synth_options_default(ptreg_synth_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->points = 30000;
    opt->max_angle_deg = 20.0;
    opt->max_translation = 0.1;
    opt->noise = 0.005;
    opt->outliers = 0.0;
    opt->overlap = 1.0;
    opt->view[0] = 1.0, opt->view[1] = -2.0, opt->view[2] = 5.0;
    opt->seed = 1;
}

/* ---- the simulated scan ---- */

void synth_camera_init(synth_camera *cam, const double eye[3])
{
    memcpy(cam->eye, eye, sizeof cam->eye);
    for (int k = 0; k < 3; k++)
        cam->fwd[k] = -eye[k];
    normalize3(cam->fwd);
    double world_up[3] = {0, 0, 1};
    if (fabs(cam->fwd[2]) > 0.99)
        world_up[1] = 1, world_up[2] = 0;
    cross3(cam->fwd, world_up, cam->right);
    normalize3(cam->right);
    cross3(cam->right, cam->fwd, cam->up);
}

/* Image-plane coordinates (tangent of the angle off axis) and depth. */
void synth_camera_project(const synth_camera *cam, const double p[3], double *u, double *v, double *depth)
{
    double r[3] = {p[0] - cam->eye[0], p[1] - cam->eye[1], p[2] - cam->eye[2]};
    *depth = dot3(r, cam->fwd);
    *u = dot3(r, cam->right) / *depth;
    *v = dot3(r, cam->up) / *depth;
}

static int sample_by_pixel(const void *a, const void *b)
{
    const synth_sample *x = a, *y = b;
    if (x->pixel != y->pixel)
        return x->pixel < y->pixel ? -1 : 1;
    return (x->depth > y->depth) - (x->depth < y->depth);
}

/* Surface samples that face the sensor and are the nearest surface in their
 * depth-buffer pixel (within a tolerance), in raster order. */
size_t synth_visible_samples(ptreg_shape shape, const synth_camera *cam, size_t want, ptreg_rng *rng,
                             synth_sample **out)
{
    size_t dense = want * 6 + 1000, kept = 0;
    synth_sample *s = malloc(dense * sizeof *s);
    if (!s)
        return 0;
    double umin = INFINITY, umax = -INFINITY, vmin = INFINITY, vmax = -INFINITY;
    for (size_t i = 0; i < dense; i++) {
        double p[3], n[3], u, v, depth;
        shape_sample(shape, rng, p, n);
        double to_eye[3] = {cam->eye[0] - p[0], cam->eye[1] - p[1], cam->eye[2] - p[2]};
        if (dot3(n, to_eye) <= 0)
            continue;
        synth_camera_project(cam, p, &u, &v, &depth);
        s[kept] = (synth_sample){{(float)p[0], (float)p[1], (float)p[2]}, 0, depth};
        umin = fmin(umin, u), umax = fmax(umax, u), vmin = fmin(vmin, v), vmax = fmax(vmax, v);
        kept++;
    }
    /* Pixels hold ~4 front-facing samples each; a sample more than the tolerance
     * behind its pixel's nearest is occluded. */
    double cells = (double)kept / 4.0 + 1.0;
    double aspect = (umax - umin) / fmax(vmax - vmin, 1e-12);
    uint32_t w = (uint32_t)fmax(1.0, sqrt(cells * aspect)), h = (uint32_t)fmax(1.0, cells / w);
    for (size_t i = 0; i < kept; i++) {
        double p[3] = {s[i].p[0], s[i].p[1], s[i].p[2]}, u, v, depth;
        synth_camera_project(cam, p, &u, &v, &depth);
        uint32_t px = (uint32_t)fmin(w - 1.0, (u - umin) / (umax - umin + 1e-12) * w);
        uint32_t py = (uint32_t)fmin(h - 1.0, (v - vmin) / (vmax - vmin + 1e-12) * h);
        s[i].pixel = py * w + px;
    }
    qsort(s, kept, sizeof *s, sample_by_pixel);
    double tol = 3.0 * sqrt(dot3(cam->eye, cam->eye)) * (umax - umin) / w; /* 3 pixel footprints */
    size_t vis = 0;
    for (size_t i = 0, first = 0; i < kept; i++) {
        if (i == 0 || s[i].pixel != s[i - 1].pixel)
            first = i;
        if (s[i].depth <= s[first].depth + tol)
            s[vis++] = s[i];
    }
    *out = s;
    return vis;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Keeps the fraction `overlap` of the samples on one side of a random plane,
 * as a scan that sees only part of what the model covers: *n becomes how
 * many are kept. -1 when out of memory. */
static int crop_by_plane(synth_sample *s, size_t *n, double overlap, ptreg_rng *rng)
{
    if (overlap >= 1.0 || *n == 0)
        return 0;
    double dir[3];
    random_direction(rng, dir);
    double *proj = malloc(*n * sizeof *proj), *sorted = malloc(*n * sizeof *sorted);
    if (!proj || !sorted) {
        free(proj), free(sorted);
        return -1;
    }
    for (size_t i = 0; i < *n; i++) {
        double p[3] = {s[i].p[0], s[i].p[1], s[i].p[2]};
        sorted[i] = proj[i] = dot3(p, dir);
    }
    qsort(sorted, *n, sizeof *sorted, compare_double);
    size_t k = (size_t)(overlap * (double)*n);
    double cut = sorted[k < *n ? k : *n - 1];
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++)
        if (proj[i] < cut)
            s[kept++] = s[i];
    free(proj), free(sorted);
    *n = kept;
    return 0;
}

/* Chooses `want` of n samples at random, keeping their raster order; -1
 * when out of memory. */
int synth_choose_subset(synth_sample *s, size_t n, size_t want, ptreg_rng *rng)
{
    unsigned char *take = calloc(n, 1);
    if (!take)
        return -1;
    /* Floyd's algorithm: `want` distinct indices in O(want) draws. */
    for (size_t j = n - want; j < n; j++) {
        size_t t = (size_t)(ptreg_rng_uniform(rng) * (double)(j + 1));
        if (t > j)
            t = j;
        take[take[t] ? j : t] = 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (take[i])
            s[kept++] = s[i];
    free(take);
    return 0;
}

static void random_pose(const ptreg_synth_options *opt, ptreg_rng *rng, double M[16])
{
    double angles[3], t[3];
    for (int k = 0; k < 3; k++)
        angles[k] = (2.0 * ptreg_rng_uniform(rng) - 1.0) * opt->max_angle_deg;
    for (int k = 0; k < 3; k++)
        t[k] = (2.0 * ptreg_rng_uniform(rng) - 1.0) * opt->max_translation;
    /* roll about x, then pitch about y, then yaw about z */
    static const double axes[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    ptreg_transform_identity(M);
    for (int k = 0; k < 3; k++) {
        double R[16];
        ptreg_transform_from_axis_angle(axes[k], angles[k], NULL, R);
        ptreg_transform_mul(R, M, M);
    }
    M[3] = t[0], M[7] = t[1], M[11] = t[2];
}

static ptreg_status check_scan_options(const ptreg_synth_options *opt, ptreg_error *err)
{
    if (opt->points == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: a scan needs at least one point");
    if (!(opt->overlap > 0.0 && opt->overlap <= 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: overlap %g is outside (0, 1]", opt->overlap);
    if (!(opt->outliers >= 0.0 && opt->outliers < 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: outlier fraction %g is outside [0, 1)", opt->outliers);
    if (!(opt->noise >= 0.0) || !(opt->max_angle_deg >= 0.0) || !(opt->max_translation >= 0.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: noise, angle and translation must be >= 0");
    double v = dot3(opt->view, opt->view);
    if (!(v > 9.0) || !isfinite(v))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth: the sensor must be outside the shape (|view| > 3)");
    return PTREG_OK;
}

ptreg_status ptreg_synth_scan(ptreg_shape shape, const ptreg_synth_options *opt, ptreg_cloud *sensed, double truth[16],
                              ptreg_error *err)
{
    ptreg_cloud_init(sensed);
    ptreg_status st = synth_check_shape(shape, err);
    if (st || (st = check_scan_options(opt, err)))
        return st;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, opt->seed);
    synth_camera cam;
    synth_camera_init(&cam, opt->view);
    synth_sample *s = NULL;
    size_t n = 0;
    for (size_t want = (size_t)((double)opt->points / opt->overlap) + 1; n < opt->points; want *= 2) {
        free(s);
        n = synth_visible_samples(shape, &cam, want, &rng, &s);
        if (!s || crop_by_plane(s, &n, opt->overlap, &rng)) {
            free(s);
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth: out of memory");
        }
    }
    if (synth_choose_subset(s, n, opt->points, &rng)) {
        free(s);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth: out of memory");
    }
    if ((st = ptreg_cloud_alloc(sensed, opt->points, 0, err))) {
        free(s);
        return st;
    }
    for (size_t i = 0; i < opt->points; i++)
        for (int k = 0; k < 3; k++)
            sensed->xyz[3 * i + k] = s[i].p[k] + (float)(opt->noise * ptreg_rng_normal(&rng));
    free(s);
    double dlo[3] = {INFINITY, INFINITY, INFINITY}, dhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(sensed->xyz, opt->points, dlo, dhi);
    /* the bounds of floats, exact as floats: the box's arithmetic below stays in float */
    const float lo[3] = {(float)dlo[0], (float)dlo[1], (float)dlo[2]};
    const float hi[3] = {(float)dhi[0], (float)dhi[1], (float)dhi[2]};
    /* Outliers: evenly spaced points moved to uniform positions in the
     * scan's bounding box grown by 20%. */
    size_t outliers = (size_t)(opt->outliers * (double)opt->points);
    for (size_t o = 0; o < outliers; o++) {
        size_t i = (size_t)(((double)o + 0.5) * (double)opt->points / (double)outliers);
        for (int k = 0; k < 3; k++) {
            double span = 1.4 * (hi[k] - lo[k]);
            sensed->xyz[3 * i + k] = (float)(lo[k] - 0.2 * (hi[k] - lo[k]) + ptreg_rng_uniform(&rng) * span);
        }
    }
    double M[16];
    random_pose(opt, &rng, M);
    ptreg_transform_points(M, sensed->xyz, sensed->xyz, sensed->n);
    ptreg_transform_invert_rigid(M, truth);
    return PTREG_OK;
}
