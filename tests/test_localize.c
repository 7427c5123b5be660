/* Localization in a tiled prior map: the tiled map's tiles against a plain
 * reference (the cloud's points of each tile, in file order, through the
 * localizer's voxel map), a cloud or a .ptm loaded as a user names it, its
 * header and table checked against bad files,
 * and a second drive through a generated street localized in the first
 * drive's map (in UTM-sized coordinates): within 5 cm of its truth, tiles
 * dropped behind it, the same bits for 1 and 2 threads, a kidnapped start
 * recovered (and lost without recovery). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/numeric.h"
#include "ptreg/ptreg.h"
#include "reg/odometry/odometry_impl.h"
#include "reg/odometry/tiled_map.h"

static char tmp[256];

static const char *tmp_path(const char *name)
{
    static char path[4][320];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", tmp, name);
    return p;
}

static const double ORIGIN[3] = {500000.0, 5400000.0, 100.0};

/* A scattered cloud over a few tiles, far from zero, as a LAS. */
static void write_scatter(const char *path, size_t n)
{
    ptreg_cloud c;
    ptreg_error err;
    CHECK(ptreg_cloud_alloc(&c, n, 0, &err) == PTREG_OK);
    memcpy(c.origin, ORIGIN, sizeof c.origin);
    ptreg_rng rng;
    ptreg_rng_seed(&rng, 5);
    for (size_t i = 0; i < n; i++) {
        c.xyz[3 * i] = (float)(-7.0 + 30.0 * ptreg_rng_uniform(&rng));
        c.xyz[3 * i + 1] = (float)(-3.0 + 18.0 * ptreg_rng_uniform(&rng));
        c.xyz[3 * i + 2] = (float)(2.0 * ptreg_rng_uniform(&rng));
    }
    CHECK(ptreg_cloud_write(path, &c, NULL, &err) == PTREG_OK);
    ptreg_cloud_free(&c);
}

/* Each tile's points, as the reference makes them: the file's points in
 * the tile, in file order, as offsets from its corner, through a voxel map. */
static void check_tile_against_reference(const ptreg_tiled_map *m, size_t t, const ptreg_cloud *c, double tile,
                                         double voxel)
{
    const map_tile *mt = &tiled_map_tiles(m)[t];
    double *pts = malloc(3 * c->n * sizeof *pts);
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        const double x = c->origin[0] + c->xyz[3 * i], y = c->origin[1] + c->xyz[3 * i + 1];
        if (floor(x / tile) != mt->ix || floor(y / tile) != mt->iy)
            continue;
        pts[3 * k] = (double)(float)(x - mt->ix * tile);
        pts[3 * k + 1] = (double)(float)(y - mt->iy * tile);
        pts[3 * k + 2] = (double)(float)(c->origin[2] + c->xyz[3 * i + 2] - tiled_map_z0(m));
        k++;
    }
    odo_map ref;
    CHECK(odo_map_init(&ref, voxel, 4) == 0 && odo_map_add(&ref, pts, k) == 0);
    double *want = malloc(3 * (ref.points ? ref.points : 1) * sizeof *want);
    double *got = malloc(3 * (mt->count ? mt->count : 1) * sizeof *got);
    odo_map_points(&ref, want);
    ptreg_error err;
    const double zero[3] = {0.0, 0.0, 0.0};
    CHECK(tiled_map_read(m, t, zero, got, &err) == PTREG_OK);
    int same = ref.points == mt->count;
    for (size_t i = 0; same && i < 3 * ref.points; i++)
        same = (float)want[i] == (float)got[i];
    CHECK_MSG(same, "tile %zu: %zu points against the reference's %zu, or other ones", t, (size_t)mt->count,
              ref.points);
    odo_map_free(&ref);
    free(pts), free(want), free(got);
}

static void test_tiles(void)
{
    const char *las = tmp_path("scatter.las"), *ptm = tmp_path("scatter.ptm");
    write_scatter(las, 20000);
    ptreg_tiled_map_options mo = {10.0, 0.5, 4};
    ptreg_error err;
    CHECK_MSG(tiled_map_build(las, NULL, &mo, ptm, &err) == PTREG_OK, "%s", err.message);
    ptreg_tiled_map *m;
    CHECK_MSG(tiled_map_open(ptm, &m, &err) == PTREG_OK, "%s", err.message);
    ptreg_tiled_map_info info;
    ptreg_tiled_map_get_info(m, &info);
    /* x 499993 .. 500023 and y 5399997 .. 5400015: tiles 49999..50002 by 539999..540001 */
    CHECK_MSG(info.tiles == 12 && info.source_points == 20000 && info.points < 20000 && info.points > 1000,
              "%zu tiles, %zu of %zu points", info.tiles, info.points, info.source_points);
    CHECK(info.lo[0] == 499990.0 && info.hi[0] == 500030.0 && info.lo[1] == 5399990.0 && info.hi[1] == 5400020.0);
    ptreg_cloud c;
    CHECK(ptreg_cloud_read(las, PTREG_FORMAT_AUTO, &c, &err) == PTREG_OK);
    for (size_t t = 0; t < info.tiles; t++)
        check_tile_against_reference(m, t, &c, mo.tile, mo.voxel);
    ptreg_cloud_free(&c);
    ptreg_tiled_map_close(m);
    mo.tile = 10.3;
    CHECK(tiled_map_build(las, NULL, &mo, tmp_path("x.ptm"), &err) == PTREG_ERR_ARG &&
          access(tmp_path("x.ptm"), F_OK) != 0);
}

static int dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    int empty = d != NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        empty = empty && (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."));
    if (d)
        closedir(d);
    return empty;
}

/* What a user names, loaded: a cloud tiled into a scratch file that is
 * gone while the map is open (and after a failure), or into save; a .ptm
 * opened as it is, and refused with save. */
static void test_load(void)
{
    CHECK(ptreg_tiled_map_is_file("a/b.ptm") && ptreg_tiled_map_is_file("B.PTM") &&
          !ptreg_tiled_map_is_file("b.ptm.las") && !ptreg_tiled_map_is_file("ptm"));
    char scratch[320];
    snprintf(scratch, sizeof scratch, "%s", tmp_path("scratch")); /* tmp_path's buffers are reused */
    CHECK(mkdir(scratch, 0700) == 0 && setenv("TMPDIR", scratch, 1) == 0);
    ptreg_tiled_map_options mo = {10.0, 0.5, 4};
    ptreg_tiled_map *m, *saved;
    ptreg_error err;
    CHECK_MSG(ptreg_tiled_map_load(tmp_path("scatter.las"), NULL, &mo, NULL, &m, &err) == PTREG_OK, "%s", err.message);
    CHECK(dir_is_empty(scratch));
    CHECK_MSG(ptreg_tiled_map_load(tmp_path("scatter.las"), NULL, &mo, tmp_path("saved.ptm"), &saved, &err) == PTREG_OK,
              "%s", err.message);
    ptreg_tiled_map_info a, b;
    ptreg_tiled_map_get_info(m, &a);
    ptreg_tiled_map_get_info(saved, &b);
    CHECK(a.tiles == 12 && a.tiles == b.tiles && a.points == b.points);
    ptreg_tiled_map_close(m);
    ptreg_tiled_map_close(saved);
    CHECK(ptreg_tiled_map_load(tmp_path("saved.ptm"), NULL, NULL, NULL, &m, &err) == PTREG_OK);
    ptreg_tiled_map_close(m);
    CHECK(ptreg_tiled_map_load(tmp_path("saved.ptm"), NULL, NULL, tmp_path("again.ptm"), &m, &err) == PTREG_ERR_ARG &&
          !m && strstr(err.message, "tiled already"));
    CHECK(ptreg_tiled_map_load(tmp_path("none.las"), NULL, &mo, NULL, &m, &err) == PTREG_ERR_IO && !m);
    CHECK(dir_is_empty(scratch));
    unsetenv("TMPDIR");
    rmdir(scratch);
    unlink(tmp_path("saved.ptm"));
}

static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*size);
    CHECK(fread(b, 1, *size, f) == *size);
    fclose(f);
    return b;
}

/* A damaged copy of the map: the error names the file and the byte. */
static void check_bad(const unsigned char *good, size_t size, size_t at, unsigned char value, size_t keep,
                      const char *byte)
{
    unsigned char *b = malloc(size);
    memcpy(b, good, size);
    if (at < size)
        b[at] = value;
    const char *path = tmp_path("bad.ptm");
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, keep, f);
    fclose(f);
    ptreg_tiled_map *m = NULL;
    ptreg_error err;
    const ptreg_status st = tiled_map_open(path, &m, &err);
    CHECK_MSG(st == PTREG_ERR_FORMAT && m == NULL && strstr(err.message, "bad.ptm") && strstr(err.message, byte),
              "byte %zu = %d, %zu kept: %d '%s'", at, value, keep, (int)st, err.message);
    free(b);
}

static void test_bad_maps(void)
{
    size_t size;
    unsigned char *good = slurp(tmp_path("scatter.ptm"), &size);
    check_bad(good, size, 0, 'X', size, "byte 0:");           /* magic */
    check_bad(good, size, 8, 2, size, "byte 8:");             /* version */
    check_bad(good, size, 23, 0x7f, size, "byte 12:");        /* the tile: 1e305 m */
    check_bad(good, size, 55, 0x7f, size, "byte 48:");        /* a tile count the file cannot hold */
    check_bad(good, size, 63, 0x7f, size, "byte 48:");        /* a point count likewise */
    check_bad(good, size, size, 0, size - 12, "byte 48:");    /* cut short */
    check_bad(good, size, 96 + 24 + 8, 1, size, "byte 128:"); /* the second tile's first point */
    check_bad(good, size, 96 + 24, 0x00, size, "byte 120:");  /* the second tile's x: out of row order */
    check_bad(good, size, 0, 'P', 40, "byte 40:");            /* shorter than the header */
    free(good);
}

/* A drive's frames' poses in the world, moved to the map's coordinates. */
static void at_origin(double T[16])
{
    for (int k = 0; k < 3; k++)
        T[4 * k + 3] += ORIGIN[k];
}

/* The mapping drive's returns in the world, about ORIGIN, as a LAS. */
static void write_street_map(const ptreg_synth_lidar_options *o, const char *path)
{
    ptreg_synth_lidar *w;
    ptreg_error err;
    CHECK(ptreg_synth_lidar_create(o, &w, &err) == PTREG_OK);
    ptreg_cloud map;
    ptreg_cloud_init(&map);
    memcpy(map.origin, ORIGIN, sizeof map.origin);
    size_t cap = 0;
    for (size_t i = 0; i < o->frames; i++) {
        ptreg_cloud c;
        double T[16], t;
        CHECK(ptreg_synth_lidar_frame(w, i, &c, T, &t, &err) == PTREG_OK);
        if (map.n + c.n > cap) {
            cap = 2 * (map.n + c.n);
            map.xyz = realloc(map.xyz, 3 * cap * sizeof *map.xyz);
        }
        for (size_t j = 0; j < c.n; j++) {
            const float *p = c.xyz + 3 * j;
            for (int r = 0; r < 3; r++)
                map.xyz[3 * (map.n + j) + r] = (float)(T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] +
                                                       T[4 * r + 3]);
        }
        map.n += c.n;
        ptreg_cloud_free(&c);
    }
    CHECK(ptreg_cloud_write(path, &map, NULL, &err) == PTREG_OK);
    ptreg_cloud_free(&map);
    ptreg_synth_lidar_destroy(w);
}

typedef struct drive_run {
    double *poses;
    ptreg_track_state *states;
    size_t most_tiles, fewest_after_most; /* held: the most, and the fewest after it */
    ptreg_odometry_summary summary;
} drive_run;

static drive_run localize_drive(const ptreg_synth_lidar *w, size_t frames, const ptreg_localize_options *loc,
                                const char *ptm, int threads, double *truth)
{
    drive_run run = {
        malloc(16 * frames * sizeof(double)), malloc(frames * sizeof(ptreg_track_state)), 0, SIZE_MAX, {0}};
    ptreg_tiled_map *m;
    ptreg_odometry *od;
    ptreg_error err;
    CHECK(tiled_map_open(ptm, &m, &err) == PTREG_OK);
    CHECK_MSG(ptreg_odometry_create_localizer(loc, m, &od, &err) == PTREG_OK, "%s", err.message);
    const int before = ptreg_get_num_threads();
    ptreg_set_num_threads(threads);
    for (size_t i = 0; i < frames; i++) {
        ptreg_cloud c;
        double T[16], t;
        CHECK(ptreg_synth_lidar_frame(w, i, &c, T, &t, &err) == PTREG_OK);
        at_origin(T);
        if (truth)
            memcpy(truth + 16 * i, T, sizeof T);
        ptreg_odometry_frame f;
        CHECK_MSG(ptreg_odometry_push(od, c.xyz, c.n, NULL, &f, &err) == PTREG_OK, "%s", err.message);
        memcpy(run.poses + 16 * i, f.pose, sizeof f.pose);
        run.states[i] = f.state;
        if (f.tiles > run.most_tiles)
            run.most_tiles = f.tiles, run.fewest_after_most = SIZE_MAX;
        run.fewest_after_most = f.tiles < run.fewest_after_most ? f.tiles : run.fewest_after_most;
        ptreg_cloud_free(&c);
    }
    ptreg_set_num_threads(before);
    CHECK(ptreg_odometry_summarize(od, &run.summary, &err) == PTREG_OK);
    ptreg_odometry_destroy(od);
    ptreg_tiled_map_close(m);
    return run;
}

static void free_run(drive_run *r) { free(r->poses), free(r->states); }

static double worst_error(const drive_run *r, const double *truth, size_t frames)
{
    double worst = 0.0;
    for (size_t i = 0; i < frames; i++) {
        double deg, dist;
        ptreg_transform_difference(truth + 16 * i, r->poses + 16 * i, &deg, &dist);
        worst = check_worse(worst, dist);
    }
    return worst;
}

static void test_street(void)
{
    ptreg_synth_lidar_options o;
    ptreg_synth_lidar_options_default(&o);
    o.frames = 60;
    o.beams = 16;
    o.azimuth_step_deg = 0.8;
    o.max_range = 40.0;
    const char *las = tmp_path("street.las"), *ptm = tmp_path("street.ptm");
    write_street_map(&o, las);
    ptreg_tiled_map_options mo = {8.0, 0.4, 20};
    ptreg_error err;
    CHECK_MSG(tiled_map_build(las, NULL, &mo, ptm, &err) == PTREG_OK, "%s", err.message);
    /* the second drive: 1.5 m to the right, its own scans, 40 m of the 60 */
    o.frames = 40;
    o.lane = -1.5;
    o.scan_seed = 7;
    ptreg_synth_lidar *w;
    CHECK(ptreg_synth_lidar_create(&o, &w, &err) == PTREG_OK);
    double *truth = malloc(16 * o.frames * sizeof *truth);
    ptreg_localize_options loc;
    ptreg_localize_options_default(&loc);
    loc.odometry.max_range = 30.0;
    loc.radius = 12.0; /* held within 12 + 8 + 8 m: tiles go behind a 40 m drive */
    ptreg_cloud first;
    double T0[16], t0;
    CHECK(ptreg_synth_lidar_frame(w, 0, &first, T0, &t0, &err) == PTREG_OK);
    ptreg_cloud_free(&first);
    at_origin(T0);
    memcpy(loc.init, T0, sizeof T0);
    loc.init[3] += 0.3, loc.init[7] -= 0.2; /* a GNSS fix's error */
    drive_run one = localize_drive(w, o.frames, &loc, ptm, 1, truth),
              two = localize_drive(w, o.frames, &loc, ptm, 2, NULL);
    CHECK_MSG(memcmp(one.poses, two.poses, 16 * o.frames * sizeof(double)) == 0, "1 and 2 threads differ");
    const double worst = worst_error(&one, truth, o.frames);
    CHECK_MSG(one.summary.tracked == o.frames && worst < 0.05, "%zu of %zu tracked; worst error %.3f m",
              one.summary.tracked, o.frames, worst);
    CHECK_MSG(one.fewest_after_most < one.most_tiles && one.summary.tiles_read > one.most_tiles,
              "tiles held: at most %zu, then down to %zu; %zu read", one.most_tiles, one.fewest_after_most,
              one.summary.tiles_read);
    free_run(&one), free_run(&two);
    /* kidnapped: the start 6 m and 60 degrees off; recovered, or lost without recovery */
    double off[16];
    const double axis[3] = {0.0, 0.0, 1.0}, move[3] = {6.0, 0.0, 0.0};
    ptreg_transform_from_axis_angle(axis, 60.0, move, off);
    ptreg_transform_mul(T0, off, loc.init);
    drive_run kid = localize_drive(w, 5, &loc, ptm, 2, NULL);
    /* the recovered frame within 15 cm (a 16-beam scan's features), the next ones within 5 */
    double deg, first_error;
    ptreg_transform_difference(truth, kid.poses, &deg, &first_error);
    CHECK_MSG(kid.states[0] == PTREG_TRACK_RECOVERED && kid.summary.lost == 0 && first_error < 0.15 &&
                  worst_error(&kid, truth, 5) < 0.15,
              "kidnapped start: frame 0 %s (%.3f m off), %zu lost, worst error %.3f m",
              ptreg_track_state_name(kid.states[0]), first_error, kid.summary.lost, worst_error(&kid, truth, 5));
    double later = 0.0;
    for (size_t i = 1; i < 5; i++) {
        double dist;
        ptreg_transform_difference(truth + 16 * i, kid.poses + 16 * i, &deg, &dist);
        later = check_worse(later, dist);
    }
    CHECK_MSG(later < 0.05, "after the recovery: %.3f m off", later);
    free_run(&kid);
    loc.recover = 0;
    drive_run lost = localize_drive(w, 2, &loc, ptm, 2, NULL);
    CHECK(lost.states[0] == PTREG_TRACK_LOST && lost.summary.lost >= 1);
    free_run(&lost);
    /* a voxel that is not the map's */
    ptreg_tiled_map *m;
    ptreg_odometry *od;
    CHECK(tiled_map_open(ptm, &m, &err) == PTREG_OK);
    loc.odometry.voxel = 0.5;
    CHECK(ptreg_odometry_create_localizer(&loc, m, &od, &err) == PTREG_ERR_ARG && od == NULL);
    ptreg_tiled_map_close(m);
    free(truth);
    ptreg_synth_lidar_destroy(w);
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/ptreg_localize_XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_tiles();
    test_load();
    test_bad_maps();
    test_street();
    const char *names[] = {"scatter.las", "scatter.ptm", "bad.ptm", "street.las", "street.ptm"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tmp_path(names[i]));
    rmdir(tmp);
    return check_exit();
}
