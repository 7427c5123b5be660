/* ptreg synth --lidar-sequence N: a LiDAR drive in KITTI's odometry
 * layout (velodyne/NNNNNN.bin, poses.txt, times.txt, calib.txt). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/track_io.h"
#include "ptreg/io.h"
#include "ptreg/synth.h"
#include "ptreg/transform.h"

static int read_lidar_options(const cli_args *a, ptreg_synth_lidar_options *o)
{
    static const char *const not_here[] = {
        "shape",       "model",   "model-points", "output",   "points",  "truth-out", "max-angle", "max-translation",
        "outliers",    "overlap", "view",         "motif",    "lattice", "grains",    "box",       "efficiency",
        "noise-depth", "solute",  "occlusion",    "approach", "ascii"};
    for (size_t i = 0; i < sizeof not_here / sizeof not_here[0]; i++)
        if (cli_has(a, not_here[i])) {
            cli_error("synth", "--%s is not an option of --lidar-sequence", not_here[i]);
            return EXIT_USAGE;
        }
    int rc = cli_size(a, "lidar-sequence", 1, 10000000, &o->frames);
    rc = rc ? rc : cli_int(a, "beams", 1, 1024, &o->beams);
    rc = rc ? rc : cli_double(a, "azimuth-step", 0.01, 10.0, &o->azimuth_step_deg);
    rc = rc ? rc : cli_double(a, "speed", 0.0, 100.0, &o->speed);
    rc = rc ? rc : cli_double(a, "rate", 0.1, 1000.0, &o->rate);
    rc = rc ? rc : cli_double(a, "noise", 0.0, 10.0, &o->noise);
    rc = rc ? rc : cli_double(a, "dropouts", 0.0, 0.99, &o->dropouts);
    rc = rc ? rc : cli_u64(a, "seed", &o->seed);
    rc = rc ? rc : cli_u64(a, "scan-seed", &o->scan_seed);
    rc = rc ? rc : cli_double(a, "lane", -2.0, 2.0, &o->lane);
    if (!rc && !cli_has(a, "frames-dir")) {
        cli_error("synth", "--lidar-sequence: give --frames-dir DIR (velodyne/, poses.txt, times.txt, calib.txt)");
        rc = EXIT_USAGE;
    }
    return rc;
}

/* Makes a folder; *made says whether it was not there before. */
static int make_dir(const char *path, int *made)
{
    *made = mkdir(path, 0777) == 0;
    if (!*made && errno != EEXIST) {
        cli_error("synth", "--frames-dir: %s cannot be made (%s)", path, strerror(errno));
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

/* A 3 x 4 row-major [R | t], KITTI's pose and calibration line. */
static int write_3x4(FILE *f, const double T[16])
{
    int bad = 0;
    for (int k = 0; k < 12; k++)
        bad |= fprintf(f, "%.12e%c", T[k], k == 11 ? '\n' : ' ') < 0;
    return bad;
}

/* calib.txt: P0..P3 zero (no cameras) and Tr the identity. */
static int write_calib(FILE *f)
{
    double I[16];
    ptreg_transform_identity(I);
    int bad = 0;
    for (int p = 0; p < 4; p++)
        bad |= fprintf(f, "P%d: 0 0 0 0 0 0 0 0 0 0 0 0\n", p) < 0;
    bad |= fputs("Tr: ", f) < 0;
    return bad | write_3x4(f, I);
}

typedef struct lidar_files {
    ptreg_atomic_file poses, times, calib, truth;
    int open, truth_open;
    double origin[3]; /* --origin */
    int want_map;
    ptreg_cloud map; /* --lidar-map's returns so far */
    size_t map_cap;
    size_t written; /* frames written */
    int made_dir, made_velodyne;
} lidar_files;

/* A failed run leaves nothing: the frames written so far, and the folders
 * it made. */
static void remove_partial(const char *dir, const lidar_files *lf)
{
    char path[4096];
    for (size_t i = 0; i < lf->written; i++) {
        snprintf(path, sizeof path, "%s/velodyne/%06zu.bin", dir, i);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/velodyne", dir);
    if (lf->made_velodyne)
        rmdir(path);
    if (lf->made_dir)
        rmdir(dir);
}

static int open_files(const char *dir, lidar_files *lf)
{
    static const char *const names[] = {"poses.txt", "times.txt", "calib.txt"};
    ptreg_atomic_file *files[] = {&lf->poses, &lf->times, &lf->calib};
    for (int k = 0; k < 3; k++) {
        char path[4096];
        ptreg_error err;
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        if (ptreg_atomic_open(path, files[k], &err)) {
            cli_error("synth", "%s", err.message);
            return EXIT_RUNTIME;
        }
        lf->open = k + 1;
    }
    return EXIT_OK;
}

static int open_truth(const cli_args *a, lidar_files *lf)
{
    if (!cli_has(a, "truth-trajectory-out"))
        return EXIT_OK;
    ptreg_error err;
    if (ptreg_atomic_open(cli_string(a, "truth-trajectory-out", NULL), &lf->truth, &err)) {
        cli_error("synth", "%s", err.message);
        return EXIT_RUNTIME;
    }
    lf->truth_open = 1;
    return EXIT_OK;
}

static int close_files(lidar_files *lf, int rc)
{
    ptreg_atomic_file *files[] = {&lf->poses, &lf->times, &lf->calib, &lf->truth};
    for (int k = 0; k < 4; k++) {
        if (k == 3 ? !lf->truth_open : k >= lf->open)
            continue;
        ptreg_error err;
        if (rc)
            ptreg_atomic_abort(files[k]);
        else if (ptreg_atomic_commit(files[k], &err)) {
            cli_error("synth", "%s", err.message);
            rc = EXIT_RUNTIME;
        }
    }
    return rc;
}

/* n bytes of v little-endian into out, whatever the host's order. */
static void put_le(unsigned char *out, uint64_t v, int n)
{
    for (int k = 0; k < n; k++)
        out[k] = (unsigned char)(v >> (8 * k));
}

/* A frame as the PTF1 stream has it (docs/FORMATS.md, "Frame streams"). */
static int stream_frame(FILE *f, const ptreg_cloud *frame, double t)
{
    unsigned char head[20], rec[12];
    uint64_t bits;
    memcpy(head, "PTF1", 4);
    put_le(head + 4, frame->n, 8);
    memcpy(&bits, &t, sizeof bits);
    put_le(head + 12, bits, 8);
    int bad = fwrite(head, 1, sizeof head, f) != sizeof head;
    for (size_t i = 0; !bad && i < frame->n; i++) {
        for (int k = 0; k < 3; k++) {
            uint32_t b;
            memcpy(&b, &frame->xyz[3 * i + k], sizeof b);
            put_le(rec + 4 * k, b, 4);
        }
        bad = fwrite(rec, 1, sizeof rec, f) != sizeof rec;
    }
    return bad;
}

/* --frames-dir -: every frame on stdout, a PTF1 stream (nothing else is
 * written: the stream is for a reader such as ptreg odometry -). */
static int stream_frames(const ptreg_synth_lidar *world, const ptreg_synth_lidar_options *o)
{
    for (size_t i = 0; i < o->frames; i++) {
        ptreg_cloud frame;
        double pose[16], t;
        ptreg_error err;
        ptreg_status st = ptreg_synth_lidar_frame(world, i, &frame, pose, &t, &err);
        if (st) {
            cli_error("synth", "%s", err.message);
            return cli_exit_code(st, 0);
        }
        const int bad = stream_frame(stdout, &frame, t) || fflush(stdout) != 0;
        ptreg_cloud_free(&frame);
        if (bad) {
            cli_error("synth", "stdout: writing the stream failed (frame %zu)", i);
            return EXIT_RUNTIME;
        }
    }
    return EXIT_OK;
}

/* --lidar-map: the frame's returns moved by its pose into the world (about
 * --origin, the map cloud's origin). */
static int add_to_map(lidar_files *lf, const ptreg_cloud *frame, const double pose[16])
{
    ptreg_cloud *m = &lf->map;
    if (m->n + frame->n > lf->map_cap) {
        const size_t cap = 2 * (m->n + frame->n);
        float *xyz = realloc(m->xyz, 3 * cap * sizeof *xyz);
        m->xyz = xyz ? xyz : m->xyz;
        uint16_t *in = xyz ? realloc(m->intensity, cap * sizeof *in) : NULL;
        m->intensity = in ? in : m->intensity;
        if (!in) {
            cli_error("synth", "--lidar-map: out of memory (%zu points)", m->n);
            return EXIT_RUNTIME;
        }
        lf->map_cap = cap;
    }
    for (size_t i = 0; i < frame->n; i++) {
        const float *p = frame->xyz + 3 * i;
        for (int r = 0; r < 3; r++)
            m->xyz[3 * (m->n + i) + r] = (float)(pose[4 * r] * p[0] + pose[4 * r + 1] * p[1] + pose[4 * r + 2] * p[2] +
                                                 pose[4 * r + 3]);
        m->intensity[m->n + i] = frame->intensity ? frame->intensity[i] : 0;
    }
    m->n += frame->n;
    return EXIT_OK;
}

static int write_truth(lidar_files *lf, double t, const double pose[16])
{
    if (!lf->truth_open)
        return 0;
    double T[16], q[7];
    memcpy(T, pose, sizeof T);
    for (int k = 0; k < 3; k++)
        T[4 * k + 3] += lf->origin[k];
    track_tum_numbers(T, q);
    return track_write_tum(lf->truth.fp, t, q);
}

/* Every frame: its scan, and its pose relative to the first frame's. */
static int write_frames(const ptreg_synth_lidar *world, const ptreg_synth_lidar_options *o, const char *dir,
                        lidar_files *lf, size_t *points)
{
    double first_inv[16];
    for (size_t i = 0; i < o->frames; i++) {
        ptreg_cloud frame;
        double pose[16], rel[16], t;
        ptreg_error err;
        ptreg_status st = ptreg_synth_lidar_frame(world, i, &frame, pose, &t, &err);
        if (st) {
            cli_error("synth", "%s", err.message);
            return cli_exit_code(st, 0);
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/velodyne/%06zu.bin", dir, i);
        int rc = cli_write_cloud("synth", path, &frame, 0);
        *points += frame.n;
        if (!rc)
            lf->written = i + 1; /* a failure from here on removes this frame too */
        if (!rc && lf->want_map)
            rc = add_to_map(lf, &frame, pose);
        ptreg_cloud_free(&frame);
        if (rc)
            return rc;
        if (i == 0)
            ptreg_transform_invert_rigid(pose, first_inv);
        ptreg_transform_mul(first_inv, pose, rel);
        if (write_3x4(lf->poses.fp, rel) || fprintf(lf->times.fp, "%.6e\n", t) < 0 || write_truth(lf, t, pose)) {
            cli_error("synth", "%s: writing failed", dir);
            return EXIT_RUNTIME;
        }
    }
    return write_calib(lf->calib.fp) ? (cli_error("synth", "%s: writing failed", dir), EXIT_RUNTIME) : EXIT_OK;
}

static int print_result(const cli_args *a, const ptreg_synth_lidar_options *o, const char *dir, size_t points)
{
    if (!cli_has(a, "json")) {
        printf("lidar sequence: %zu frames of %d beams (%zu points in all, %.0f a frame) at %g Hz, %g m/s, in "
               "%s/velodyne/NNNNNN.bin; truth: %s/poses.txt\n",
               o->frames, o->beams, points, (double)points / (double)o->frames, o->rate, o->speed, dir, dir);
        return EXIT_OK;
    }
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "synth");
    cli_json_string(j, "kind", "lidar-sequence");
    cli_json_number(j, "frames", (double)o->frames);
    cli_json_number(j, "beams", o->beams);
    cli_json_number(j, "points", (double)points);
    cli_json_number(j, "rate", o->rate);
    cli_json_number(j, "speed", o->speed);
    cli_json_string(j, "frames_dir", dir);
    cli_json_number(j, "seed", (double)o->seed);
    return cli_json_print(j);
}

int cli_synth_lidar(const cli_args *a)
{
    ptreg_synth_lidar_options o;
    ptreg_synth_lidar_options_default(&o);
    int rc = read_lidar_options(a, &o);
    if (rc)
        return rc;
    const char *dir = cli_string(a, "frames-dir", NULL);
    if (!dir) /* read_lidar_options asked for it: what the compiler cannot see */
        return EXIT_USAGE;
    ptreg_synth_lidar *world;
    ptreg_error err;
    ptreg_status st = ptreg_synth_lidar_create(&o, &world, &err);
    if (st) {
        cli_error("synth", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    if (!strcmp(dir, "-")) {
        const int other = cli_has(a, "json") || cli_has(a, "lidar-map") || cli_has(a, "truth-trajectory-out");
        rc = other ? (cli_error("synth", "--frames-dir -: the stream is stdout and all that is written: no --json, "
                                         "--lidar-map or --truth-trajectory-out"),
                      EXIT_USAGE)
                   : stream_frames(world, &o);
        ptreg_synth_lidar_destroy(world);
        return rc;
    }
    lidar_files lf;
    memset(&lf, 0, sizeof lf);
    ptreg_cloud_init(&lf.map);
    lf.want_map = cli_has(a, "lidar-map");
    char velodyne[4096];
    snprintf(velodyne, sizeof velodyne, "%s/velodyne", dir);
    size_t points = 0;
    rc = make_dir(dir, &lf.made_dir);
    rc = rc ? rc : make_dir(velodyne, &lf.made_velodyne);
    rc = rc ? rc : cli_vec3(a, "origin", lf.origin);
    memcpy(lf.map.origin, lf.origin, sizeof lf.origin);
    rc = rc ? rc : open_files(dir, &lf);
    rc = rc ? rc : open_truth(a, &lf);
    rc = rc ? rc : write_frames(world, &o, dir, &lf, &points);
    if (!rc && lf.want_map)
        rc = cli_write_cloud("synth", cli_string(a, "lidar-map", NULL), &lf.map, 0);
    ptreg_cloud_free(&lf.map);
    rc = rc ? rc : print_result(a, &o, dir, points); /* before the commit: a failed print leaves nothing */
    rc = close_files(&lf, rc);
    if (rc)
        remove_partial(dir, &lf);
    ptreg_synth_lidar_destroy(world);
    return rc;
}
