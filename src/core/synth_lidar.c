/* A LiDAR drive (synth.h): a spinning multi-beam scanner on a car driving
 * a winding, hilly street, ray-cast against the ground, building facades,
 * poles, trees (a trunk and a cone) and parked cars. The world is made
 * once from the seed; any frame can then be made alone. Rays are binned by
 * azimuth so that each is tested against the few objects in its bin, and
 * the beams run in parallel, each with its own random stream, so the bits
 * do not depend on the thread count. docs/ALGORITHMS.md, "LiDAR
 * odometry". */
#include "ptreg/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"

#define PI 3.14159265358979323846
/* Where the drive starts along the road, and the road beyond its end:
 * objects behind and ahead of the first and last frames. */
#define ROAD_LEAD 30.0
#define ROAD_TAIL 150.0
#define SENSOR_HEIGHT 1.73 /* KITTI's Velodyne above the road */
#define AZIMUTH_BINS 720
/* Objects are made along the road, so a run of them in the list stands
 * together: a frame tests a run's enclosing circle before its objects. */
#define OBJECT_CHUNK 64
#define MAX_SEGMENTS 4096
/* An object keeps clear of the road this far along it either way, m. */
#define CLEAR_WINDOW 400.0

typedef enum object_kind { OBJ_BOX, OBJ_CYLINDER, OBJ_CONE } object_kind;

typedef struct lidar_object {
    object_kind kind;
    double c[3];     /* the footprint's centre and the base's height */
    double yaw;      /* box: its x axis's heading */
    double half[2];  /* box: half length and width; cylinder, cone: radius */
    double height;   /* from c[2] up */
    double bound;    /* radius of the footprint's enclosing circle */
    float intensity; /* reflectance, 0 to 1 */
} lidar_object;

/* A piece of road of constant curvature (0: straight). */
typedef struct road_segment {
    double s0, length, x0, y0, h0, curvature;
} road_segment;

struct ptreg_synth_lidar {
    ptreg_synth_lidar_options opt;
    double phase[3]; /* of the ground's hills */
    road_segment *segments;
    size_t segment_count;
    lidar_object *objects;
    size_t object_count, object_cap;
    double *chunks; /* per OBJECT_CHUNK objects in a row: a circle (x, y, r) round their footprints */
};

void ptreg_synth_lidar_options_default(ptreg_synth_lidar_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->frames = 1000;
    opt->beams = 64;
    opt->azimuth_step_deg = 0.2;
    opt->fov_up_deg = 2.0; /* the HDL-64E's vertical field */
    opt->fov_down_deg = -24.8;
    opt->max_range = 120.0;
    opt->min_range = 2.5;
    opt->speed = 10.0;
    opt->rate = 10.0;
    opt->noise = 0.02;
    opt->dropouts = 0.0;
    opt->seed = 1;
}

/* ---- the ground: smooth hills, a few metres over a hundred, and a rough
 * surface of a few centimetres over a metre or two (a perfectly smooth
 * ground's rings look the same from every place on it, and pull a
 * point-to-point registration towards standing still) ---- */

static double hills(const ptreg_synth_lidar *w, double x, double y, double grad[2])
{
    const double *p = w->phase;
    const double a = x / 90.0 + p[0], b = y / 110.0 + p[1], c = (0.6 * x + 0.8 * y) / 60.0 + p[2];
    if (grad) {
        grad[0] = 2.5 * cos(a) * cos(b) / 90.0 + 1.5 * cos(c) * 0.6 / 60.0;
        grad[1] = -2.5 * sin(a) * sin(b) / 110.0 + 1.5 * cos(c) * 0.8 / 60.0;
    }
    return 2.5 * sin(a) * cos(b) + 1.5 * sin(c);
}

/* The hills and the rough surface on them (the car rides the hills). */
static double ground(const ptreg_synth_lidar *w, double x, double y, double grad[2])
{
    const double *p = w->phase;
    const double u = 2.3 * x + p[0], v = 1.9 * y + p[1], r = 0.8 * x - 1.1 * y + p[2];
    const double h = hills(w, x, y, grad);
    if (grad) {
        grad[0] += 0.03 * 2.3 * cos(u) * sin(v) + 0.03 * 0.8 * cos(r);
        grad[1] += 0.03 * 1.9 * sin(u) * cos(v) - 0.03 * 1.1 * cos(r);
    }
    return h + 0.03 * sin(u) * sin(v) + 0.03 * sin(r);
}

/* The ray o + t d meets the ground: Newton's method from the flat ground
 * under the sensor. */
static double hit_ground(const ptreg_synth_lidar *w, const double o[3], const double d[3], double tmax)
{
    if (d[2] > -1e-3)
        return INFINITY;
    double t = (ground(w, o[0], o[1], NULL) - o[2]) / d[2];
    for (int it = 0; it < 8 && t > 0.0 && t < 2.0 * tmax; it++) {
        double g[2];
        const double f = o[2] + t * d[2] - ground(w, o[0] + t * d[0], o[1] + t * d[1], g);
        const double df = d[2] - g[0] * d[0] - g[1] * d[1];
        const double step = f / df;
        t -= step;
        if (fabs(step) < 1e-7)
            return t > 0.0 && t <= tmax ? t : INFINITY;
    }
    return INFINITY;
}

/* ---- objects ---- */

static double hit_box(const lidar_object *b, const double o[3], const double d[3])
{
    const double c = cos(b->yaw), s = sin(b->yaw);
    const double ox = o[0] - b->c[0], oy = o[1] - b->c[1];
    const double lo[3] = {c * ox + s * oy, -s * ox + c * oy, o[2] - b->c[2]};
    const double ld[3] = {c * d[0] + s * d[1], -s * d[0] + c * d[1], d[2]};
    const double mn[3] = {-b->half[0], -b->half[1], 0.0}, mx[3] = {b->half[0], b->half[1], b->height};
    double t0 = 0.0, t1 = INFINITY;
    for (int k = 0; k < 3; k++) {
        if (fabs(ld[k]) < 1e-12) {
            if (lo[k] < mn[k] || lo[k] > mx[k])
                return INFINITY;
            continue;
        }
        double a = (mn[k] - lo[k]) / ld[k], e = (mx[k] - lo[k]) / ld[k];
        if (a > e) {
            const double tmp = a;
            a = e, e = tmp;
        }
        t0 = a > t0 ? a : t0;
        t1 = e < t1 ? e : t1;
        if (t0 > t1)
            return INFINITY;
    }
    return t0 > 0.0 ? t0 : INFINITY;
}

/* The nearest root above 0 of a t^2 + b t + c whose point lies in the
 * object's height range. */
static double first_root_in(const lidar_object *ob, const double o[3], const double d[3], double a, double b, double c)
{
    const double disc = b * b - 4.0 * a * c;
    if (disc < 0.0 || fabs(a) < 1e-15)
        return INFINITY;
    const double r = sqrt(disc), q = b < 0.0 ? -0.5 * (b - r) : -0.5 * (b + r);
    double t[2] = {q / a, q != 0.0 ? c / q : INFINITY};
    if (t[0] > t[1]) {
        const double tmp = t[0];
        t[0] = t[1], t[1] = tmp;
    }
    for (int k = 0; k < 2; k++) {
        const double z = o[2] + t[k] * d[2] - ob->c[2];
        if (t[k] > 0.0 && z >= 0.0 && z <= ob->height)
            return t[k];
    }
    return INFINITY;
}

/* A sensor inside a solid sees nothing of it (a long drive's road may come
 * back through an object placed beside it far before), as for a box. */
static int inside_height(const lidar_object *ob, const double o[3])
{
    return o[2] >= ob->c[2] && o[2] <= ob->c[2] + ob->height;
}

static double hit_cylinder(const lidar_object *cy, const double o[3], const double d[3])
{
    const double px = o[0] - cy->c[0], py = o[1] - cy->c[1], r = cy->half[0];
    if (px * px + py * py <= r * r && inside_height(cy, o))
        return INFINITY;
    return first_root_in(cy, o, d, d[0] * d[0] + d[1] * d[1], 2.0 * (px * d[0] + py * d[1]), px * px + py * py - r * r);
}

/* A vertical cone, base radius half[0] at c[2], apex height above. */
static double hit_cone(const lidar_object *co, const double o[3], const double d[3])
{
    const double k = co->half[0] / co->height, k2 = k * k;
    const double px = o[0] - co->c[0], py = o[1] - co->c[1], pz = o[2] - (co->c[2] + co->height);
    if (px * px + py * py <= k2 * pz * pz && inside_height(co, o))
        return INFINITY;
    return first_root_in(co, o, d, d[0] * d[0] + d[1] * d[1] - k2 * d[2] * d[2],
                         2.0 * (px * d[0] + py * d[1] - k2 * pz * d[2]), px * px + py * py - k2 * pz * pz);
}

static double hit_object(const lidar_object *ob, const double o[3], const double d[3])
{
    switch (ob->kind) {
    case OBJ_BOX: return hit_box(ob, o, d);
    case OBJ_CYLINDER: return hit_cylinder(ob, o, d);
    case OBJ_CONE: return hit_cone(ob, o, d);
    }
    return INFINITY;
}

/* The distance from (x, y) to the object's footprint (0 inside). */
static double footprint_distance(const lidar_object *ob, double x, double y)
{
    const double dx = x - ob->c[0], dy = y - ob->c[1];
    if (ob->kind != OBJ_BOX)
        return fmax(0.0, hypot(dx, dy) - ob->half[0]);
    const double c = cos(ob->yaw), s = sin(ob->yaw);
    const double u = fabs(c * dx + s * dy) - ob->half[0], v = fabs(-s * dx + c * dy) - ob->half[1];
    return hypot(fmax(u, 0.0), fmax(v, 0.0));
}

/* ---- the road ---- */

static void road_at(const ptreg_synth_lidar *w, double s, double *x, double *y, double *h)
{
    size_t lo = 0, hi = w->segment_count - 1;
    while (lo < hi) { /* the last segment starting at or before s */
        const size_t mid = (lo + hi + 1) / 2;
        if (w->segments[mid].s0 <= s)
            lo = mid;
        else
            hi = mid - 1;
    }
    const road_segment *g = &w->segments[lo];
    const double u = s - g->s0, k = g->curvature;
    *h = g->h0 + k * u;
    if (k == 0.0) {
        *x = g->x0 + u * cos(g->h0);
        *y = g->y0 + u * sin(g->h0);
    } else {
        *x = g->x0 + (sin(*h) - sin(g->h0)) / k;
        *y = g->y0 - (cos(*h) - cos(g->h0)) / k;
    }
}

/* Straights of 60 to 200 m and turns of 30 to 90 degrees, radius 25 to 60 m. */
static int make_road(ptreg_synth_lidar *w, ptreg_rng *rng, double length)
{
    w->segments = malloc(MAX_SEGMENTS * sizeof *w->segments);
    if (!w->segments)
        return -1;
    double s = 0.0, x = 0.0, y = 0.0, h = 0.0;
    for (size_t i = 0; s < length && i < MAX_SEGMENTS; i++) {
        road_segment g = {s, 0.0, x, y, h, 0.0};
        if (i % 2 == 0)
            g.length = 60.0 + 140.0 * ptreg_rng_uniform(rng);
        else {
            const double radius = 25.0 + 35.0 * ptreg_rng_uniform(rng);
            const double turn = (30.0 + 60.0 * ptreg_rng_uniform(rng)) * PI / 180.0;
            g.curvature = (ptreg_rng_uniform(rng) < 0.5 ? -1.0 : 1.0) / radius;
            g.length = turn * radius;
        }
        w->segments[w->segment_count++] = g;
        s += g.length;
        road_at(w, s, &x, &y, &h);
    }
    if (s < length) /* MAX_SEGMENTS straights of 60 m at least: 245 km */
        w->segments[w->segment_count - 1].length += length - s;
    return 0;
}

/* ---- placing the objects along the road ---- */

static int add_object(ptreg_synth_lidar *w, const lidar_object *ob)
{
    if (w->object_count == w->object_cap) {
        const size_t cap = w->object_cap ? 2 * w->object_cap : 1024;
        lidar_object *grown = realloc(w->objects, cap * sizeof *grown);
        if (!grown)
            return -1;
        w->objects = grown, w->object_cap = cap;
    }
    w->objects[w->object_count++] = *ob;
    return 0;
}

/* Whether the footprint keeps `clearance` from the road's centre line
 * within CLEAR_WINDOW of the object's place s along it (a turn must not
 * bring the road through a building). A window, not the whole road, so
 * that a longer drive has the shorter one's world as its start. */
static int clear_of_road(const ptreg_synth_lidar *w, const lidar_object *ob, double at, double clearance)
{
    for (double s = fmax(0.0, at - CLEAR_WINDOW); s <= at + CLEAR_WINDOW; s += 1.0) {
        double x, y, h;
        road_at(w, s, &x, &y, &h);
        if (hypot(x - ob->c[0], y - ob->c[1]) < ob->bound + clearance && footprint_distance(ob, x, y) < clearance)
            return 0;
    }
    return 1;
}

/* An object beside the road at arclength s, `offset` to the left (< 0:
 * right), its base on the ground; kept when clear of the road. */
static int place(ptreg_synth_lidar *w, lidar_object ob, double s, double offset, double clearance)
{
    double x, y, h;
    road_at(w, s, &x, &y, &h);
    ob.c[0] = x - offset * sin(h);
    ob.c[1] = y + offset * cos(h);
    ob.c[2] = ground(w, ob.c[0], ob.c[1], NULL) - 0.3; /* sunk a little: no gap on a slope */
    ob.height += 0.3;
    ob.yaw = h;
    ob.bound = ob.kind == OBJ_BOX ? hypot(ob.half[0], ob.half[1]) : ob.half[0];
    return clear_of_road(w, &ob, s, clearance) ? add_object(w, &ob) : 0;
}

static double uniform(ptreg_rng *rng, double lo, double hi) { return lo + (hi - lo) * ptreg_rng_uniform(rng); }

/* Every kind of object, each side of the road, at its own spacing, each
 * kind and side drawing from its own stream of the seed (a longer drive
 * adds objects, it does not move them). */
static int make_objects(ptreg_synth_lidar *w, uint64_t seed, double length)
{
    ptreg_rng streams[8], *rng;
    for (int k = 0; k < 8; k++)
        ptreg_rng_seed(&streams[k], seed ^ (0x0b1ec7ull * (uint64_t)(k + 1)));
    for (int side = -1; side <= 1; side += 2) {
        ptreg_rng *own = streams + (side > 0 ? 4 : 0);
        rng = own + 0;
        for (double s = uniform(rng, 0, 10); s < length; s += uniform(rng, 2, 12)) { /* buildings */
            lidar_object b = {OBJ_BOX, {0},  0, {uniform(rng, 5, 15), uniform(rng, 4, 7.5)}, uniform(rng, 6, 20),
                              0,       0.55f};
            if (place(w, b, s + b.half[0], side * (uniform(rng, 7, 12) + b.half[1]), 6.0))
                return -1;
            s += 2.0 * b.half[0];
        }
        rng = own + 1;
        for (double s = uniform(rng, 0, 20); s < length; s += uniform(rng, 15, 30)) { /* poles */
            lidar_object p = {OBJ_CYLINDER, {0}, 0, {0.15, 0}, uniform(rng, 6, 8), 0, 0.8f};
            if (place(w, p, s, side * uniform(rng, 5, 6), 3.5))
                return -1;
        }
        rng = own + 2;
        for (double s = uniform(rng, 0, 10); s < length; s += uniform(rng, 8, 20)) { /* trees */
            const double offset = side * uniform(rng, 6.5, 9), trunk = uniform(rng, 2, 3);
            lidar_object t = {OBJ_CYLINDER, {0}, 0, {0.2, 0}, trunk, 0, 0.3f};
            lidar_object c = {OBJ_CONE, {0}, 0, {uniform(rng, 1.5, 3), 0}, uniform(rng, 4, 7), 0, 0.25f};
            const size_t before = w->object_count;
            if (place(w, t, s, offset, 3.5))
                return -1;
            if (w->object_count > before) { /* the crown on the trunk */
                c.kind = OBJ_CONE;
                c.c[0] = w->objects[before].c[0], c.c[1] = w->objects[before].c[1];
                c.c[2] = w->objects[before].c[2] + w->objects[before].height;
                c.bound = c.half[0];
                if (add_object(w, &c))
                    return -1;
            }
        }
        rng = own + 3;
        for (double s = uniform(rng, 0, 20); s < length; s += uniform(rng, 6, 25)) { /* parked cars */
            lidar_object car = {OBJ_BOX, {0}, 0, {2.25, 0.9}, 1.5, 0, 0.6f};
            if (place(w, car, s, side * uniform(rng, 3.2, 3.8), 2.2))
                return -1;
        }
    }
    return 0;
}

/* Each run's circle: the centre of its footprints' centres, and the radius
 * that holds every footprint. */
static int make_chunks(ptreg_synth_lidar *w)
{
    const size_t runs = (w->object_count + OBJECT_CHUNK - 1) / OBJECT_CHUNK;
    w->chunks = malloc((runs ? runs : 1) * 3 * sizeof *w->chunks);
    if (!w->chunks)
        return -1;
    for (size_t r = 0; r < runs; r++) {
        const size_t first = r * OBJECT_CHUNK;
        const size_t last = first + OBJECT_CHUNK < w->object_count ? first + OBJECT_CHUNK : w->object_count;
        double c[2] = {0.0, 0.0}, radius = 0.0;
        for (size_t i = first; i < last; i++)
            c[0] += w->objects[i].c[0] / (double)(last - first), c[1] += w->objects[i].c[1] / (double)(last - first);
        for (size_t i = first; i < last; i++)
            radius = fmax(radius, hypot(w->objects[i].c[0] - c[0], w->objects[i].c[1] - c[1]) + w->objects[i].bound);
        w->chunks[3 * r] = c[0], w->chunks[3 * r + 1] = c[1], w->chunks[3 * r + 2] = radius * 1.05 + 0.1;
    }
    return 0;
}

static ptreg_status check_options(const ptreg_synth_lidar_options *o, ptreg_error *err)
{
    if (o->frames < 1 || o->frames > 10000000)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: frames %zu is not in [1, 1e7]", o->frames);
    if (o->beams < 1 || o->beams > 1024)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: beams %d is not in [1, 1024]", o->beams);
    if (!(o->azimuth_step_deg >= 0.01 && o->azimuth_step_deg <= 10.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: azimuth step %g is not in [0.01, 10] degrees",
                               o->azimuth_step_deg);
    if (!(o->fov_up_deg <= 45.0 && o->fov_down_deg >= -45.0 && o->fov_down_deg < o->fov_up_deg))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "synth lidar: the vertical field [%g, %g] degrees is not within [-45, 45]",
                               o->fov_down_deg, o->fov_up_deg);
    if (!(o->min_range >= 0.0 && o->max_range > o->min_range && o->max_range <= 1000.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: ranges [%g, %g] m are not 0 <= min < max <= 1000",
                               o->min_range, o->max_range);
    if (!(o->speed >= 0.0 && o->speed <= 100.0) || !(o->rate >= 0.1 && o->rate <= 1000.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: speed %g m/s or rate %g Hz out of range", o->speed,
                               o->rate);
    if (!(fabs(o->lane) <= 2.0)) /* parked cars keep 2.2 m from the centre line */
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: the lane offset %g m is off the lanes (within 2 m)",
                               o->lane);
    if (!(o->noise >= 0.0 && o->noise <= 10.0) || !(o->dropouts >= 0.0 && o->dropouts < 1.0))
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: noise %g or dropouts %g out of range", o->noise,
                               o->dropouts);
    return PTREG_OK;
}

static double drive_length(const ptreg_synth_lidar_options *o)
{
    return ROAD_LEAD + (double)o->frames * o->speed / o->rate + ROAD_TAIL;
}

ptreg_status ptreg_synth_lidar_create(const ptreg_synth_lidar_options *opt, ptreg_synth_lidar **world, ptreg_error *err)
{
    *world = NULL;
    ptreg_status st = check_options(opt, err);
    if (st)
        return st;
    ptreg_synth_lidar *w = calloc(1, sizeof *w);
    if (!w)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth lidar: out of memory");
    w->opt = *opt;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, opt->seed ^ 0x11da5ull);
    for (int k = 0; k < 3; k++)
        w->phase[k] = 2.0 * PI * ptreg_rng_uniform(&rng);
    const double length = drive_length(opt);
    if (make_road(w, &rng, length + CLEAR_WINDOW) || make_objects(w, opt->seed, length) || make_chunks(w)) {
        ptreg_synth_lidar_destroy(w);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth lidar: out of memory");
    }
    *world = w;
    return PTREG_OK;
}

void ptreg_synth_lidar_destroy(ptreg_synth_lidar *world)
{
    if (!world)
        return;
    free(world->segments);
    free(world->objects);
    free(world->chunks);
    free(world);
}

/* The sensor's pose at frame i: on the road's centre line, SENSOR_HEIGHT
 * above the ground, x along the road, y to the left, z up, pitched and
 * rolled with the ground's slope. */
static void sensor_pose(const ptreg_synth_lidar *w, size_t i, double T[16])
{
    const double s = ROAD_LEAD + (double)i * w->opt.speed / w->opt.rate;
    double x, y, h, g[2];
    road_at(w, s, &x, &y, &h);
    x -= sin(h) * w->opt.lane, y += cos(h) * w->opt.lane;
    const double z = hills(w, x, y, g) + SENSOR_HEIGHT;
    double f[3] = {cos(h), sin(h), g[0] * cos(h) + g[1] * sin(h)};
    double l[3] = {-sin(h), cos(h), -g[0] * sin(h) + g[1] * cos(h)};
    const double nf = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    for (int k = 0; k < 3; k++)
        f[k] /= nf;
    const double fl = f[0] * l[0] + f[1] * l[1] + f[2] * l[2];
    for (int k = 0; k < 3; k++)
        l[k] -= fl * f[k];
    const double nl = sqrt(l[0] * l[0] + l[1] * l[1] + l[2] * l[2]);
    for (int k = 0; k < 3; k++)
        l[k] /= nl;
    const double u[3] = {f[1] * l[2] - f[2] * l[1], f[2] * l[0] - f[0] * l[2], f[0] * l[1] - f[1] * l[0]};
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++)
        T[4 * r + 0] = f[r], T[4 * r + 1] = l[r], T[4 * r + 2] = u[r];
    T[3] = x, T[7] = y, T[11] = z;
}

/* The objects near the sensor, listed per world azimuth bin (CSR). */
typedef struct azimuth_bins {
    size_t start[AZIMUTH_BINS + 1];
    size_t *items;
} azimuth_bins;

static int bin_of(double azimuth)
{
    int b = (int)floor((azimuth + PI) / (2.0 * PI) * AZIMUTH_BINS);
    return b < 0 ? 0 : b >= AZIMUTH_BINS ? AZIMUTH_BINS - 1 : b;
}

/* The bins (into bins; their count returned) the object's footprint may
 * cover seen from p. */
static size_t object_bins(const lidar_object *ob, const double p[3], double reach, int bins[AZIMUTH_BINS])
{
    const double dx = ob->c[0] - p[0], dy = ob->c[1] - p[1], dist = hypot(dx, dy);
    if (dist > reach + ob->bound)
        return 0;
    size_t n = 0;
    if (dist <= ob->bound * 1.05 + 0.1) {
        for (int b = 0; b < AZIMUTH_BINS; b++)
            bins[n++] = b;
        return n;
    }
    const double centre = atan2(dy, dx), half = asin(fmin(1.0, (ob->bound * 1.05 + 0.1) / dist));
    const int first = (int)floor((centre - half + PI) / (2.0 * PI) * AZIMUTH_BINS) - 1;
    const int last = (int)floor((centre + half + PI) / (2.0 * PI) * AZIMUTH_BINS) + 1;
    for (int b = first; b <= last && n < AZIMUTH_BINS; b++)
        bins[n++] = ((b % AZIMUTH_BINS) + AZIMUTH_BINS) % AZIMUTH_BINS;
    return n;
}

/* Whether object i's run of objects may reach within `reach` of p. */
static int chunk_near(const ptreg_synth_lidar *w, size_t i, const double p[3], double reach)
{
    const double *c = w->chunks + 3 * (i / OBJECT_CHUNK);
    return hypot(c[0] - p[0], c[1] - p[1]) <= reach + c[2];
}

static int make_bins(const ptreg_synth_lidar *w, const double p[3], azimuth_bins *ab)
{
    int *bins = malloc(AZIMUTH_BINS * sizeof *bins);
    if (!bins)
        return -1;
    memset(ab->start, 0, sizeof ab->start);
    for (size_t i = 0; i < w->object_count; i++) {
        if (i % OBJECT_CHUNK == 0 && !chunk_near(w, i, p, w->opt.max_range)) {
            i += OBJECT_CHUNK - 1;
            continue;
        }
        const size_t n = object_bins(&w->objects[i], p, w->opt.max_range, bins);
        for (size_t j = 0; j < n; j++)
            ab->start[bins[j] + 1]++;
    }
    for (int b = 0; b < AZIMUTH_BINS; b++)
        ab->start[b + 1] += ab->start[b];
    ab->items = malloc((ab->start[AZIMUTH_BINS] ? ab->start[AZIMUTH_BINS] : 1) * sizeof *ab->items);
    size_t fill[AZIMUTH_BINS];
    memcpy(fill, ab->start, sizeof fill);
    for (size_t i = 0; ab->items && i < w->object_count; i++) {
        if (i % OBJECT_CHUNK == 0 && !chunk_near(w, i, p, w->opt.max_range)) {
            i += OBJECT_CHUNK - 1;
            continue;
        }
        const size_t n = object_bins(&w->objects[i], p, w->opt.max_range, bins);
        for (size_t j = 0; j < n; j++)
            ab->items[fill[bins[j]]++] = i;
    }
    free(bins);
    return ab->items ? 0 : -1;
}

static uint64_t scan_seed(const ptreg_synth_lidar_options *o) { return o->scan_seed ? o->scan_seed : o->seed; }

/* One beam's sweep into out (sensor-frame points) and its reflectances;
 * returns the points kept. */
static size_t sweep_beam(const ptreg_synth_lidar *w, const azimuth_bins *ab, const double T[16], size_t frame, int beam,
                         double phase, float *out, float *intensity)
{
    const ptreg_synth_lidar_options *o = &w->opt;
    ptreg_rng rng;
    ptreg_rng_seed(&rng, scan_seed(o) ^ (0x9e3779b97f4a7c15ull * (frame + 1)) ^
                             (0xc2b2ae3d27d4eb4full * (uint64_t)(beam + 1)));
    const double elev = (o->beams > 1 ? o->fov_up_deg - (o->fov_up_deg - o->fov_down_deg) * beam / (o->beams - 1)
                                      : 0.0) *
                        PI / 180.0;
    const size_t steps = (size_t)floor(360.0 / o->azimuth_step_deg + 0.5);
    const double origin[3] = {T[3], T[7], T[11]};
    size_t kept = 0;
    for (size_t j = 0; j < steps; j++) {
        const double az = ((double)j + phase) * o->azimuth_step_deg * PI / 180.0;
        const double ds[3] = {cos(elev) * cos(az), cos(elev) * sin(az), sin(elev)};
        double d[3];
        for (int r = 0; r < 3; r++)
            d[r] = T[4 * r] * ds[0] + T[4 * r + 1] * ds[1] + T[4 * r + 2] * ds[2];
        double t = hit_ground(w, origin, d, o->max_range);
        float refl = 0.2f;
        const int b = bin_of(atan2(d[1], d[0]));
        for (size_t k = ab->start[b]; k < ab->start[b + 1]; k++) {
            const lidar_object *ob = &w->objects[ab->items[k]];
            const double tk = hit_object(ob, origin, d);
            if (tk < t)
                t = tk, refl = ob->intensity;
        }
        const double noisy = t + o->noise * ptreg_rng_normal(&rng);
        const int drop = o->dropouts > 0.0 && ptreg_rng_uniform(&rng) < o->dropouts;
        if (drop || !(t <= o->max_range) || t < o->min_range)
            continue;
        for (int k = 0; k < 3; k++)
            out[3 * kept + k] = (float)(noisy * ds[k]);
        intensity[kept++] = refl;
    }
    return kept;
}

ptreg_status ptreg_synth_lidar_frame(const ptreg_synth_lidar *world, size_t i, ptreg_cloud *frame, double pose[16],
                                     double *time, ptreg_error *err)
{
    ptreg_cloud_init(frame);
    const ptreg_synth_lidar_options *o = &world->opt;
    if (i >= o->frames)
        return ptreg_error_set(err, PTREG_ERR_ARG, "synth lidar: frame %zu of %zu", i, o->frames);
    sensor_pose(world, i, pose);
    *time = (double)i / o->rate;
    const size_t steps = (size_t)floor(360.0 / o->azimuth_step_deg + 0.5), cap = steps * (size_t)o->beams;
    azimuth_bins ab;
    float *xyz = malloc(3 * cap * sizeof *xyz), *refl = malloc(cap * sizeof *refl);
    size_t *count = malloc((size_t)o->beams * sizeof *count);
    const double origin[3] = {pose[3], pose[7], pose[11]};
    int bad = !xyz || !refl || !count || make_bins(world, origin, &ab) != 0;
    if (bad) {
        free(xyz), free(refl), free(count);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth lidar: out of memory");
    }
    /* where the spin starts: a scanner's firings do not land on the same
     * azimuths every turn */
    ptreg_rng rng;
    ptreg_rng_seed(&rng, scan_seed(o) ^ (0xd6e8feb86659fd93ull * (i + 1)));
    const double phase = ptreg_rng_uniform(&rng);
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (int b = 0; b < o->beams; b++)
        count[b] = sweep_beam(world, &ab, pose, i, b, phase, xyz + 3 * steps * (size_t)b, refl + steps * (size_t)b);
    size_t n = 0; /* the beams' points, packed in beam order */
    for (int b = 0; b < o->beams; b++) {
        memmove(xyz + 3 * n, xyz + 3 * steps * (size_t)b, 3 * count[b] * sizeof *xyz);
        memmove(refl + n, refl + steps * (size_t)b, count[b] * sizeof *refl);
        n += count[b];
    }
    free(count);
    free(ab.items);
    frame->xyz = xyz;
    frame->n = n;
    frame->intensity = malloc((n ? n : 1) * sizeof *frame->intensity);
    if (!frame->intensity) {
        free(refl);
        ptreg_cloud_free(frame);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "synth lidar: out of memory");
    }
    for (size_t k = 0; k < n; k++)
        frame->intensity[k] = (uint16_t)lrint(65535.0 * refl[k]);
    free(refl);
    return PTREG_OK;
}
