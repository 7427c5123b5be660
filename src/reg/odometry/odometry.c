/* LiDAR odometry (ptreg/odometry.h): the per-frame pipeline, its options
 * table and the run's summary. The steps and the adaptive threshold follow
 * KISS-ICP's paper (Vizzo et al., RA-L 2023, sections III.A-D);
 * docs/ALGORITHMS.md, "LiDAR odometry", has the formulas. */
#include "ptreg/odometry.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "core/options_table.h"
#include "ptreg/transform.h"
#include "reg/odometry/odometry_impl.h"

/* The map's integer voxel coordinates reach +-2^20: a drive must stay
 * within half of that from its start. */
#define MAP_REACH_VOXELS 524288.0
/* Voxel thinning: what enters the map, and what is registered, in map
 * voxels (KISS-ICP's 0.5 and 1.5). */
#define MAP_THIN 0.5
#define SOURCE_THIN 1.5
/* Thinning runs in at most this many parts (a thread each). */
#define ODO_THIN_PARTS 64


static const ptreg_option odometry_rows[] = {
    OPTION_FIELD(ptreg_odometry_options, max_range, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_OPEN_LO, "R",
                 "drop points farther than R from the sensor, and map voxels farther than R from it"),
    OPTION_FIELD(ptreg_odometry_options, min_range, NULL, DOUBLE, 0, 1e6, 0, "R",
                 "drop points nearer than R (the vehicle itself)"),
    OPTION_FIELD(ptreg_odometry_options, voxel, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "V",
                 "the map's voxel; default max-range / 100"),
    OPTION_FIELD(ptreg_odometry_options, max_points_per_voxel, NULL, INT, 1, 255, 0, "N",
                 "the most points a map voxel keeps"),
    OPTION_FIELD(ptreg_odometry_options, initial_threshold, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_OPEN_LO, "S",
                 "the motion's deviation sigma until a motion is seen (pairs within 3 sigma)"),
    OPTION_FIELD(ptreg_odometry_options, min_motion, NULL, DOUBLE, 0, 1e6, 0, "D",
                 "a correction smaller than D does not update sigma"),
    OPTION_FIELD(ptreg_odometry_options, max_iter, NULL, INT, 1, 100000, 0, "N", "ICP steps per frame"),
    OPTION_FIELD(ptreg_odometry_options, tol, NULL, DOUBLE, 0, 1, 0, "T", "stop ICP when a step is shorter than T"),
};

static ptreg_status odometry_rules(const void *options, ptreg_option_spelling spelling, ptreg_error *err)
{
    const ptreg_odometry_options *o = options;
    const ptreg_option_table *t = ptreg_odometry_option_table();
    char a[48], b[48];
    if (!(o->min_range < o->max_range))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s %g is not below %s %g",
                               option_spelled(t, "min_range", spelling, a, sizeof a), o->min_range,
                               option_spelled(t, "max_range", spelling, b, sizeof b), o->max_range);
    const double voxel = o->voxel > 0.0 ? o->voxel : o->max_range / 100.0;
    if (o->max_range / voxel > 1e5)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s %g is too small for %s %g: over 1e5 voxels across",
                               option_spelled(t, "voxel", spelling, a, sizeof a), voxel,
                               option_spelled(t, "max_range", spelling, b, sizeof b), o->max_range);
    return PTREG_OK;
}
OPTION_TABLE_CHECKED(ptreg_odometry_option_table, "odometry", ptreg_odometry_options, ptreg_odometry_options_default,
                     odometry_rows, odometry_rules)

void ptreg_odometry_options_default(ptreg_odometry_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->max_range = 100.0;
    opt->min_range = 0.0;
    opt->voxel = 0.0;
    opt->max_points_per_voxel = 20;
    opt->initial_threshold = 2.0;
    opt->min_motion = 0.1;
    opt->max_iter = 500;
    opt->tol = 1e-4;
    opt->device = (ptreg_device){PTREG_BACKEND_AUTO, 0};
}

/* ---- localization's options: its own rows, then odometry's ---- */

static const ptreg_option localize_own_rows[] = {
    OPTION_FIELD(ptreg_localize_options, radius, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "R",
                 "hold the map's tiles within R of the predicted position; default max-range"),
    OPTION_FIELD(ptreg_localize_options, prefetch, NULL, DOUBLE, 0, 1e6, PTREG_OPTION_OPEN_LO | PTREG_OPTION_AUTO, "D",
                 "read tiles within radius + D ahead, one a frame; default a tile's side"),
    OPTION_FIELD(ptreg_localize_options, min_fitness, NULL, DOUBLE, 0, 1, 0, "F",
                 "recover a pose with a smaller share F of its points within half a voxel of the map"),
};
#define LOCALIZE_OWN_ROWS (sizeof localize_own_rows / sizeof localize_own_rows[0])
#define LOCALIZE_MAX_ROWS 32

static ptreg_option localize_rows[LOCALIZE_MAX_ROWS];
static ptreg_option_table localize_table;
static pthread_once_t localize_table_once = PTHREAD_ONCE_INIT;

static void localize_defaults(void *options) { ptreg_localize_options_default(options); }

static ptreg_status localize_rules(const void *options, ptreg_option_spelling spelling, ptreg_error *err)
{
    const ptreg_localize_options *o = options;
    const ptreg_option_table *odo = ptreg_odometry_option_table();
    return odo->check ? odo->check(&o->odometry, spelling, err) : PTREG_OK;
}

/* Localization's rows, then odometry's moved into ptreg_localize_options.odometry. */
static void localize_table_build(void)
{
    const ptreg_option_table *odo = ptreg_odometry_option_table();
    size_t n = 0;
    for (size_t i = 0; i < LOCALIZE_OWN_ROWS; i++)
        localize_rows[n++] = localize_own_rows[i];
    for (size_t i = 0; i < odo->count && n < LOCALIZE_MAX_ROWS; i++) {
        ptreg_option r = odo->options[i];
        r.offset += offsetof(ptreg_localize_options, odometry);
        localize_rows[n++] = r;
    }
    localize_table = (ptreg_option_table){"localize",        localize_rows, n, sizeof(ptreg_localize_options),
                                          localize_defaults, localize_rules};
}

const ptreg_option_table *ptreg_localize_option_table(void)
{
    pthread_once(&localize_table_once, localize_table_build);
    return &localize_table;
}

void ptreg_localize_options_default(ptreg_localize_options *opt)
{
    memset(opt, 0, sizeof *opt);
    ptreg_odometry_options_default(&opt->odometry);
    ptreg_transform_identity(opt->init);
    opt->min_fitness = 0.5;
    opt->recover = 1;
}

/* A growable array of doubles, kept between frames so that a long run
 * allocates only while its frames grow. */
typedef struct dbuf {
    double *v;
    size_t cap;
} dbuf;

static int dbuf_reserve(dbuf *b, size_t n)
{
    if (n <= b->cap)
        return 0;
    double *v = realloc(b->v, n * sizeof *v);
    if (!v)
        return -1;
    b->v = v, b->cap = n;
    return 0;
}

/* A thinning table: a voxel's key (0: empty), the draw of the point it
 * keeps and where that point is (in a part's list, or in the output). It
 * keeps its size from frame to frame: it grows once, to what a frame needs. */
typedef struct thin_entry {
    uint64_t key, draw;
    size_t slot;
} thin_entry;

typedef struct thin_table {
    thin_entry *e;
    size_t cap;
} thin_table;

/* One part of a frame thinned alone: its voxels in the order it first
 * reaches them, each with its smallest draw and that point. */
typedef struct thin_part {
    thin_table t;
    uint64_t *keys, *draws;
    double *pts;
    size_t count, cap;
    int failed;
} thin_part;

static void part_free(thin_part *p)
{
    free(p->t.e), free(p->keys), free(p->draws), free(p->pts);
    memset(p, 0, sizeof *p);
}

struct ptreg_odometry {
    ptreg_odometry_options opt;
    ptreg_device on; /* where the ICP steps run */
    odo_device *dev; /* there, when a GPU */
    double voxel;
    odo_map map, whole;
    double pose[16], delta[16]; /* the last pose and the motion into it */
    double model_sse;           /* the corrections' squares, and their count */
    size_t model_samples;
    size_t frames, empty;
    dbuf frame, thin, source, world;
    ptreg_latency_histogram latencies; /* fixed memory, however long the run */
    thin_part *parts;                  /* voxel_thin's, ODO_THIN_PARTS of them, and the table that merges them */
    thin_table merge;
    double distance;
    /* localization: the prior map's submap, the map coordinates of the local zero */
    odo_prior *prior;
    ptreg_localize_options loc;
    double anchor[3];
    size_t tracked, recovered, lost, tiles_read;
};

ptreg_status ptreg_odometry_create(const ptreg_odometry_options *opt, ptreg_odometry **out, ptreg_error *err)
{
    *out = NULL;
    ptreg_odometry_options defaults;
    if (!opt) {
        ptreg_odometry_options_default(&defaults);
        opt = &defaults;
    }
    ptreg_status st = ptreg_options_check(ptreg_odometry_option_table(), opt, err);
    if (st)
        return st;
    ptreg_odometry *od = calloc(1, sizeof *od);
    if (!od)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    od->opt = *opt;
    od->voxel = opt->voxel > 0.0 ? opt->voxel : opt->max_range / 100.0;
    od->parts = calloc(ODO_THIN_PARTS, sizeof *od->parts);
    ptreg_transform_identity(od->pose);
    ptreg_transform_identity(od->delta);
    if (!od->parts || ptreg_latency_histogram_init(&od->latencies) ||
        odo_map_init(&od->map, od->voxel, opt->max_points_per_voxel) ||
        (opt->keep_all && odo_map_init(&od->whole, od->voxel, 1))) {
        ptreg_odometry_destroy(od);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    }
    st = ptreg_odometry_resolve_device(opt, &od->on, err);
    if (!st && od->on.backend != PTREG_BACKEND_CPU)
        st = odo_device_open(&od->on, &od->dev, err);
    if (st) {
        ptreg_odometry_destroy(od);
        return st;
    }
    *out = od;
    return PTREG_OK;
}

static const engine *const odometry_engines[] = {&engine_cpu, &odometry_device_engine};

ptreg_status ptreg_odometry_resolve_device(const ptreg_odometry_options *opt, ptreg_device *on, ptreg_error *err)
{
    return engine_choose(odometry_engines, 2, &opt->device, opt, "odometry", on, NULL, err);
}

void ptreg_odometry_destroy(ptreg_odometry *od)
{
    if (!od)
        return;
    odo_map_free(&od->map);
    odo_map_free(&od->whole);
    odo_prior_free(od->prior);
    odo_device_close(od->dev);
    free(od->frame.v), free(od->thin.v), free(od->source.v), free(od->world.v);
    ptreg_latency_histogram_free(&od->latencies);
    for (size_t q = 0; od->parts && q < ODO_THIN_PARTS; q++)
        part_free(&od->parts[q]);
    free(od->parts), free(od->merge.e);
    free(od);
}

ptreg_status ptreg_odometry_create_localizer(const ptreg_localize_options *loc, ptreg_tiled_map *map,
                                             ptreg_odometry **out, ptreg_error *err)
{
    *out = NULL;
    ptreg_localize_options l;
    if (!loc)
        ptreg_localize_options_default(&l);
    l = loc ? *loc : l;
    ptreg_status st = ptreg_options_check(ptreg_localize_option_table(), &l, err);
    if (st)
        return st;
    ptreg_odometry_options *o = &l.odometry;
    ptreg_tiled_map_info info;
    ptreg_tiled_map_get_info(map, &info);
    if (o->keep_all)
        return ptreg_error_set(err, PTREG_ERR_ARG, "localize: the whole run's map (keep_all) is the prior map");
    if (o->voxel > 0.0 && o->voxel != info.voxel)
        return ptreg_error_set(err, PTREG_ERR_ARG, "localize: the voxel %g is not the tiled map's %g (tile it again)",
                               o->voxel, info.voxel);
    if (!ptreg_transform_is_rigid(l.init, PTREG_RIGID_TOL))
        return ptreg_error_set(err, PTREG_ERR_ARG, "localize: the initial pose is not a rigid motion");
    o->voxel = info.voxel;
    o->max_points_per_voxel = info.max_points_per_voxel;
    st = ptreg_odometry_create(o, out, err);
    if (st)
        return st;
    ptreg_odometry *od = *out;
    od->loc = l;
    st = odo_prior_create(map, &l, o->max_range, &od->prior, od->anchor, err);
    if (st) {
        ptreg_odometry_destroy(od);
        *out = NULL;
        return st;
    }
    memcpy(od->pose, l.init, sizeof od->pose);
    for (int k = 0; k < 3; k++)
        od->pose[4 * k + 3] -= od->anchor[k];
    return PTREG_OK;
}

/* ---- one frame ---- */

/* Points [first, first + count) of the frame that are within the range, as
 * doubles at the same place of od->frame, moved by the motion at their time
 * when deskewing: exp((t - 1/2) xi), xi = log(delta), the pose being the
 * sweep's middle (KISS-ICP's). Returns how many; *bad the first point that
 * is not finite (SIZE_MAX: none). */
static size_t keep_in_range(ptreg_odometry *od, const float *xyz, const float *times, size_t first, size_t count,
                            const double *xi, size_t *bad)
{
    const double lo2 = od->opt.min_range * od->opt.min_range, hi2 = od->opt.max_range * od->opt.max_range;
    double *out = od->frame.v + 3 * first;
    size_t k = 0;
    *bad = SIZE_MAX;
    for (size_t j = first; j < first + count; j++) {
        const float *p = xyz + 3 * j;
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]) || (times && !isfinite(times[j]))) {
            *bad = j;
            return k;
        }
        const double r2 = (double)p[0] * p[0] + (double)p[1] * p[1] + (double)p[2] * p[2];
        if (r2 < lo2 || r2 > hi2)
            continue;
        double *q = out + 3 * k++;
        q[0] = p[0], q[1] = p[1], q[2] = p[2];
        if (xi) {
            double s[6], T[16];
            for (int c = 0; c < 6; c++)
                s[c] = ((double)times[j] - 0.5) * xi[c];
            odo_se3_exp(s, T);
            const double v[3] = {q[0], q[1], q[2]};
            for (int r = 0; r < 3; r++)
                q[r] = T[4 * r] * v[0] + T[4 * r + 1] * v[1] + T[4 * r + 2] * v[2] + T[4 * r + 3];
        }
    }
    return k;
}

static uint64_t thin_key(const double p[3], double inv)
{
    uint64_t key = 0;
    for (int k = 0; k < 3; k++)
        key = (key << 21) | ((uint64_t)((int64_t)floor(p[k] * inv) + (1 << 20)) & 0x1fffffu);
    return key + 1;
}

/* A point's draw: a hash of its coordinates' bits. */
static uint64_t point_draw(const double p[3])
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < 3; k++) {
        uint64_t bits;
        memcpy(&bits, &p[k], sizeof bits);
        h = (h ^ bits) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static size_t thin_home(uint64_t key, size_t cap) { return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1); }

/* Doubles the table, keeping its entries; -1 when out of memory. */
static int table_grow(thin_table *t)
{
    const size_t cap = t->cap ? 2 * t->cap : 8192;
    thin_entry *e = calloc(cap, sizeof *e);
    if (!e)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->e[i].key)
            continue;
        size_t h = thin_home(t->e[i].key, cap);
        while (e[h].key)
            h = (h + 1) & (cap - 1);
        e[h] = t->e[i];
    }
    free(t->e);
    t->e = e, t->cap = cap;
    return 0;
}

static int table_reset(thin_table *t)
{
    if (!t->e && table_grow(t))
        return -1;
    memset(t->e, 0, t->cap * sizeof *t->e);
    return 0;
}

static thin_entry *table_find(const thin_table *t, uint64_t key)
{
    size_t h = thin_home(key, t->cap);
    while (t->e[h].key && t->e[h].key != key)
        h = (h + 1) & (t->cap - 1);
    return &t->e[h];
}

static int part_reserve(thin_part *p, size_t n)
{
    if (n <= p->cap)
        return 0;
    uint64_t *keys = realloc(p->keys, n * sizeof *keys), *draws = keys ? realloc(p->draws, n * sizeof *draws) : NULL;
    p->keys = keys ? keys : p->keys;
    p->draws = draws ? draws : p->draws;
    double *pts = draws ? realloc(p->pts, 3 * n * sizeof *pts) : NULL;
    p->pts = pts ? pts : p->pts;
    if (!pts)
        return -1;
    p->cap = n;
    return 0;
}

static void thin_part_run(thin_part *pt, const double *in, size_t n, double inv)
{
    pt->count = 0;
    if (part_reserve(pt, n ? n : 1) || table_reset(&pt->t)) {
        pt->failed = 1;
        return;
    }
    thin_entry *last = NULL; /* a scan's neighbours share voxels: the last one found */
    for (size_t j = 0; j < n; j++) {
        const double *p = in + 3 * j;
        const uint64_t key = thin_key(p, inv), draw = point_draw(p);
        thin_entry *e = last && last->key == key ? last : (last = table_find(&pt->t, key));
        if (e->key) {
            if (draw < e->draw) {
                e->draw = pt->draws[e->slot] = draw;
                memcpy(pt->pts + 3 * e->slot, p, 3 * sizeof *p);
            }
            continue;
        }
        *e = (thin_entry){key, draw, pt->count};
        pt->keys[pt->count] = key, pt->draws[pt->count] = draw;
        memcpy(pt->pts + 3 * pt->count++, p, 3 * sizeof *p);
        if (2 * pt->count > pt->t.cap) {
            if (table_grow(&pt->t)) {
                pt->failed = 1;
                return;
            }
            last = NULL;
        }
    }
}

/* The parts' voxels into out: a voxel first met in an earlier part comes
 * first, and keeps the smallest draw of every part: what one pass over
 * the whole frame gives, for any number of parts. */
static int merge_parts(ptreg_odometry *od, size_t parts, dbuf *out, size_t *kept)
{
    if (table_reset(&od->merge))
        return -1;
    size_t k = 0;
    for (size_t q = 0; q < parts; q++) {
        const thin_part *pt = &od->parts[q];
        for (size_t i = 0; i < pt->count; i++) {
            thin_entry *e = table_find(&od->merge, pt->keys[i]);
            if (!e->key) {
                *e = (thin_entry){pt->keys[i], pt->draws[i], k};
                memcpy(out->v + 3 * k++, pt->pts + 3 * i, 3 * sizeof *out->v);
                if (2 * k > od->merge.cap && table_grow(&od->merge))
                    return -1;
            } else if (pt->draws[i] < e->draw) {
                e->draw = pt->draws[i];
                memcpy(out->v + 3 * e->slot, pt->pts + 3 * i, 3 * sizeof *out->v);
            }
        }
    }
    *kept = k;
    return 0;
}

/* How a frame is cut into parts, a thread each (small ones stay whole). */
static size_t part_count(size_t n)
{
    size_t parts = (size_t)ptreg_get_num_threads();
    parts = parts < 1 ? 1 : parts > ODO_THIN_PARTS ? ODO_THIN_PARTS : parts;
    return n < 4096 * parts ? n / 4096 + 1 : parts;
}

/* One point of each voxel of `size`, the voxels in the order the input
 * first reaches them (out may not be in). The point is the voxel's
 * smallest draw, as good as a random one: the first in the scan's order
 * would always come from the same beam, and a scan's rings seen the same
 * way from every place pull the registration towards standing still
 * (KISS-ICP's hash map gives it a random one too). The input is cut into
 * a part per thread, thinned alone and merged. */
static ptreg_status voxel_thin(ptreg_odometry *od, const double *in, size_t n, double size, dbuf *out, size_t *kept,
                               ptreg_error *err)
{
    if (dbuf_reserve(out, 3 * (n ? n : 1)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    const size_t parts = part_count(n), each = (n + parts - 1) / parts;
    int failed = 0;
#pragma omp parallel for schedule(static, 1) num_threads((int)parts) reduction(| : failed)
    for (size_t q = 0; q < parts; q++) {
        const size_t first = q * each < n ? q * each : n, count = n - first < each ? n - first : each;
        od->parts[q].failed = 0;
        thin_part_run(&od->parts[q], in + 3 * first, count, 1.0 / size);
        failed |= od->parts[q].failed;
    }
    if (failed || merge_parts(od, parts, out, kept))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    return PTREG_OK;
}

/* The frame's points within the range (deskewed), thinned to what enters
 * the map (od->thin): each part keeps its own points in range, in place,
 * and thins them, so the frame is read once. *points: those in range. */
static ptreg_status range_and_thin(ptreg_odometry *od, const float *xyz, size_t n, const float *times, size_t *points,
                                   size_t *kept, ptreg_error *err)
{
    if (dbuf_reserve(&od->frame, 3 * (n ? n : 1)) || dbuf_reserve(&od->thin, 3 * (n ? n : 1)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    double xi[6];
    const int deskew = od->opt.deskew && times && od->frames >= 2;
    if (deskew)
        odo_se3_log(od->delta, xi);
    const size_t parts = part_count(n), each = (n + parts - 1) / parts;
    size_t in_range = 0, bad = SIZE_MAX;
    int failed = 0;
#pragma omp parallel for schedule(static, 1) num_threads((int)parts) reduction(| : failed) \
    reduction(+ : in_range) reduction(min : bad)
    for (size_t q = 0; q < parts; q++) {
        const size_t first = q * each < n ? q * each : n, count = n - first < each ? n - first : each;
        size_t part_bad;
        const size_t k = keep_in_range(od, xyz, times, first, count, deskew ? xi : NULL, &part_bad);
        od->parts[q].failed = 0;
        thin_part_run(&od->parts[q], od->frame.v + 3 * first, k, 1.0 / (MAP_THIN * od->voxel));
        failed |= od->parts[q].failed;
        in_range += k;
        bad = part_bad < bad ? part_bad : bad;
    }
    if (bad != SIZE_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "odometry: point %zu is not finite", bad);
    if (failed || merge_parts(od, parts, &od->thin, kept))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    *points = in_range;
    return PTREG_OK;
}

/* How far a correction D moved the prediction: its translation plus the
 * arc its rotation sweeps at the range's end. */
static double model_error(const double D[16], double max_range)
{
    double xi[6];
    odo_se3_log(D, xi);
    const double angle = sqrt(xi[3] * xi[3] + xi[4] * xi[4] + xi[5] * xi[5]);
    return sqrt(D[3] * D[3] + D[7] * D[7] + D[11] * D[11]) + 2.0 * max_range * sin(0.5 * angle);
}

/* The RMS of the corrections, the initial threshold counted as the first. */
static double sigma_now(const ptreg_odometry *od)
{
    const double t0 = od->opt.initial_threshold;
    return sqrt((t0 * t0 + od->model_sse) / (double)(1 + od->model_samples));
}

/* The frame's thinned points moved by its pose into the map(s), and the
 * voxels out of range dropped. */
static ptreg_status update_map(ptreg_odometry *od, size_t n, ptreg_error *err)
{
    if (dbuf_reserve(&od->world, 3 * (n ? n : 1)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    const double *T = od->pose;
    for (size_t j = 0; j < n; j++) {
        const double *p = od->thin.v + 3 * j;
        for (int r = 0; r < 3; r++)
            od->world.v[3 * j + r] = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
    }
    if (odo_map_add(&od->map, od->world.v, n) || (od->opt.keep_all && odo_map_add(&od->whole, od->world.v, n)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory (the map has %zu points)",
                               od->map.points);
    const double at[3] = {T[3], T[7], T[11]};
    odo_map_prune(&od->map, at, od->opt.max_range);
    return PTREG_OK;
}

/* Registers the thinned frame from the prediction P into T, and how far
 * that moved it. */
static ptreg_status register_frame(ptreg_odometry *od, size_t n, const double P[16], double T[16],
                                   ptreg_odometry_frame *out, ptreg_error *err)
{
    double inv[16], D[16];
    memcpy(T, P, 16 * sizeof *T);
    out->sigma = sigma_now(od);
    if (od->map.points) {
        odo_icp_out r;
        const ptreg_status st = odo_register(&od->map, od->source.v, n, T, 3.0 * out->sigma, out->sigma,
                                             od->opt.max_iter, od->opt.tol, od->dev, &r, err);
        if (st)
            return st;
        out->iterations = r.iterations;
        out->pairs = r.pairs;
    }
    ptreg_transform_invert_rigid(P, inv);
    ptreg_transform_mul(inv, T, D);
    out->correction = model_error(D, od->opt.max_range);
    return PTREG_OK;
}

/* A kept correction updates sigma. */
static void note_correction(ptreg_odometry *od, double correction)
{
    if (correction > od->opt.min_motion) {
        od->model_sse += correction * correction;
        od->model_samples++;
    }
}

/* Localization's check: the share of the frame's registered points within
 * half a voxel of the map at T (KISS-ICP's spacing keeps a surface's map
 * points closer than that), into out->fitness; whether it passes. */
static int fits(const ptreg_odometry *od, size_t n, const double T[16], ptreg_odometry_frame *out)
{
    const size_t near = n ? odo_fitness(&od->map, od->source.v, n, T, 0.5 * od->voxel) : 0;
    out->fitness = n ? (double)near / (double)n : 0.0;
    return n > 0 && !(out->fitness < od->loc.min_fitness);
}

/* Localization's frame: the submap brought to the prediction, the frame
 * (n thinned points registered; thin, the denser set that odometry's map
 * would take, for the recovery's features) registered and checked,
 * recovered when it does not fit (which starts the motion over: *restart). */
static ptreg_status localize_frame(ptreg_odometry *od, size_t n, size_t thin, const double P[16],
                                   ptreg_odometry_frame *out, int *restart, ptreg_error *err)
{
    double T[16];
    ptreg_status st = odo_prior_update(od->prior, &od->map, P, &out->tiles_read, err);
    st = st ? st : register_frame(od, n, P, T, out, err);
    if (st)
        return st;
    if (out->correction > od->voxel) {
        /* a long way from the prediction (the first motion, a jolt): the wide
         * kernel stops short; the map is sharp enough for a fine pass */
        odo_icp_out r;
        if ((st = odo_register(&od->map, od->source.v, n, T, od->voxel, od->voxel / 3.0, od->opt.max_iter, od->opt.tol,
                               od->dev, &r, err)))
            return st;
        out->iterations += r.iterations;
    }
    out->state = PTREG_TRACK_TRACKED;
    if (fits(od, n, T, out)) {
        note_correction(od, out->correction);
    } else {
        size_t pairs = 0;
        const odo_recover_icp icp = {od->opt.max_iter, od->opt.tol, od->opt.max_range};
        if (od->loc.recover && (st = odo_prior_recover(&od->map, od->thin.v, thin, P, &icp, T, &pairs, err)))
            return st;
        out->state = od->loc.recover && fits(od, n, T, out) ? PTREG_TRACK_RECOVERED : PTREG_TRACK_LOST;
        if (out->state == PTREG_TRACK_LOST)
            memcpy(T, P, sizeof T);
        out->pairs = pairs;
        *restart = out->state == PTREG_TRACK_RECOVERED;
    }
    memcpy(od->pose, T, sizeof T);
    return PTREG_OK;
}

ptreg_status ptreg_odometry_push(ptreg_odometry *od, const float *xyz, size_t n, const float *times,
                                 ptreg_odometry_frame *out, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    memset(out, 0, sizeof *out);
    if (!od || (n && !xyz))
        return ptreg_error_set(err, PTREG_ERR_ARG, "odometry: no odometry or no points");
    double P[16], last[16];
    memcpy(last, od->pose, sizeof last);
    ptreg_transform_mul(od->pose, od->delta, P); /* constant velocity */
    size_t kept = 0, thin = 0, source = 0;
    int restart = 0;
    ptreg_status st = range_and_thin(od, xyz, n, times, &kept, &thin, err);
    st = st ? st : voxel_thin(od, od->thin.v, thin, SOURCE_THIN * od->voxel, &od->source, &source, err);
    if (st)
        return st;
    out->points = kept;
    out->registered = source;
    if (kept == 0) { /* nothing to register: the prediction, the map as it was */
        memcpy(od->pose, P, sizeof P);
        out->sigma = sigma_now(od);
        out->state = od->prior ? PTREG_TRACK_LOST : PTREG_TRACK_TRACKED;
        od->empty++;
    } else if (od->prior) {
        if ((st = localize_frame(od, source, thin, P, out, &restart, err)))
            return st;
    } else {
        double T[16];
        if ((st = register_frame(od, source, P, T, out, err)))
            return st;
        note_correction(od, out->correction);
        memcpy(od->pose, T, sizeof T);
        if ((st = update_map(od, thin, err)))
            return st;
    }
    if (fabs(od->pose[3]) > MAP_REACH_VOXELS * od->voxel || fabs(od->pose[7]) > MAP_REACH_VOXELS * od->voxel ||
        fabs(od->pose[11]) > MAP_REACH_VOXELS * od->voxel)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "odometry: the drive left the map's reach (%.0f voxels of %g from the start)",
                               MAP_REACH_VOXELS, od->voxel);
    /* products of products leave SO(3) by rounding, and the prediction
     * pose * delta doubles a pose's error each frame: kept rigid */
    ptreg_transform_make_rigid(od->pose);
    double inv[16];
    ptreg_transform_invert_rigid(last, inv);
    ptreg_transform_mul(inv, od->pose, od->delta);
    ptreg_transform_make_rigid(od->delta);
    od->distance += sqrt(od->delta[3] * od->delta[3] + od->delta[7] * od->delta[7] + od->delta[11] * od->delta[11]);
    if (restart)
        ptreg_transform_identity(od->delta);
    memcpy(out->pose, od->pose, sizeof out->pose);
    for (int k = 0; k < 3; k++)
        out->pose[4 * k + 3] += od->anchor[k];
    out->map_points = od->map.points;
    out->tiles = od->prior ? odo_prior_held(od->prior) : 0;
    od->tracked += out->state == PTREG_TRACK_TRACKED;
    od->recovered += out->state == PTREG_TRACK_RECOVERED;
    od->lost += out->state == PTREG_TRACK_LOST;
    od->tiles_read += out->tiles_read;
    out->latency_ms = ptreg_time_ms() - t0;
    ptreg_latency_histogram_add(&od->latencies, out->latency_ms);
    od->frames++;
    return PTREG_OK;
}

/* ---- the map and the summary ---- */

/* n world points (doubles) as a cloud: about the first point, rounded to
 * a metre, when they reach where float32 loses a millimetre. */
static ptreg_status cloud_of(const double *pts, size_t n, ptreg_cloud *c, ptreg_error *err)
{
    ptreg_status st = ptreg_cloud_alloc(c, n, 0, err);
    if (st)
        return st;
    int far = 0;
    for (size_t i = 0; i < 3 * n; i++)
        far |= fabs(pts[i]) >= PTREG_ORIGIN_THRESHOLD;
    for (int k = 0; far && k < 3; k++)
        c->origin[k] = floor(pts[k]);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            c->xyz[3 * i + k] = (float)(pts[3 * i + k] - c->origin[k]);
    return PTREG_OK;
}

ptreg_status ptreg_odometry_map(const ptreg_odometry *od, ptreg_odometry_map_kind kind, ptreg_cloud *map,
                                ptreg_error *err)
{
    ptreg_cloud_init(map);
    if (kind == PTREG_ODOMETRY_WHOLE_MAP && !od->opt.keep_all)
        return ptreg_error_set(err, PTREG_ERR_ARG, "odometry: the whole run's map was not kept (keep_all)");
    const odo_map *m = kind == PTREG_ODOMETRY_WHOLE_MAP ? &od->whole : &od->map;
    double *pts = malloc(3 * (m->points ? m->points : 1) * sizeof *pts);
    if (!pts)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    odo_map_points(m, pts);
    for (size_t i = 0; i < 3 * m->points; i++)
        pts[i] += od->anchor[i % 3];
    ptreg_status st = cloud_of(pts, m->points, map, err);
    free(pts);
    return st;
}

ptreg_status ptreg_odometry_summarize(const ptreg_odometry *od, ptreg_odometry_summary *s, ptreg_error *err)
{
    (void)err; /* the API's: the summary no longer allocates */
    memset(s, 0, sizeof *s);
    s->frames = od->frames;
    s->empty = od->empty;
    s->distance = od->distance;
    s->map_points = od->map.points;
    s->map_bytes = odo_map_bytes(&od->map) + (od->opt.keep_all ? odo_map_bytes(&od->whole) : 0);
    s->latency_ms = &s->latency;
    s->tracked = od->tracked, s->recovered = od->recovered, s->lost = od->lost;
    s->tiles_read = od->tiles_read;
    double p[5];
    ptreg_latency_histogram_percentiles(&od->latencies, p);
    ptreg_track_latency *l = &s->latency;
    l->p50 = p[0], l->p95 = p[1], l->p99 = p[2], l->max = p[3], l->mean = p[4];
    s->frames_per_s = l->mean > 0.0 ? 1000.0 / l->mean : 0.0;
    return PTREG_OK;
}
