/* ptreg odometry: LiDAR scans registered one after another against a local
 * map of those before (no prior map), written as a TUM or KITTI
 * trajectory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/track_io.h"
#include "ptreg/odometry.h"
#include "ptreg/transform.h"

#define PI 3.14159265358979323846

static const cli_option odometry_options[] = {
    {"output", 'o', "FILE",
     "write the trajectory, a line per frame registered (--poses: TUM or KITTI); written "
     "whole when the run succeeds (a FIFO or a device: line by line)",
     CLI_WRITES_LIVE "txt tum"},
    {"poses", 0, "NAME",
     "-o's format: tum (timestamp tx ty tz qx qy qz qw) or kitti (12 numbers, [R | t] row by "
     "row: the odometry benchmark's) (default tum)"},
    {"frames", 0, "DIR", "the frames: DIR's cloud files (.bin .ply .pcd .las ...), in name order"},
    {"rate", 0, "HZ", "frame files' rate: frame i is at i / HZ seconds (default 10)"},
    {"calib", 0, "FILE",
     "KITTI's calib.txt: -o's poses in the camera frame of its Tr, as KITTI's poses.txt "
     "(Tr P Tr^-1; default the scanner's own)"},
    {"deskew", 0, NULL,
     "move each point by the motion at its time in the sweep, from its azimuth (the turn "
     "running counterclockwise from behind the sensor, -x)"},
    {"map", 0, "FILE", "write the local map at the end (--map-whole: the whole run's, a point per voxel)",
     CLI_WRITES_CLOUD},
    {"map-whole", 0, NULL, "--map writes the whole run's map, thinned to a point per map voxel"},
    CLI_OPT_QUIET,
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_JSON,
    CLI_OPT_HTML,
};

const cli_command cli_cmd_odometry = CLI_COMMAND_LIBRARY(
    "odometry",
    "FRAME... [options]\n       ptreg odometry --frames DIR [options]\n"
    "       ptreg odometry - [options] < frames.ptf",
    "LiDAR odometry: each scan registered against a local map of the scans before it.",
    "No prior map: each frame, in order, is registered against a local map built from the\n"
    "frames before it, as KISS-ICP does (Vizzo et al., RA-L 2023), and its pose written.\n"
    "Per frame: points outside [--min-range, --max-range] are dropped; the rest are thinned\n"
    "to the first point of each voxel of half --voxel (what enters the map) and of one and\n"
    "a half (what is registered); ICP, point to point with a Geman-McClure kernel, starts\n"
    "from a constant-velocity prediction and pairs each point with its nearest map point\n"
    "within 3 sigma, sigma being the RMS of the past corrections to the predictions\n"
    "(--initial-threshold until one above --min-motion is seen; the kernel's width is\n"
    "sigma / 3). The frame then enters the map, whose voxels (--voxel, default --max-range /\n"
    "100) keep at most --max-points-per-voxel points and are dropped beyond --max-range from\n"
    "the sensor, so memory stays bounded however long the drive. The defaults are KISS-ICP's\n"
    "for KITTI. The same poses, bit for bit, for any thread count.\n\n"
    "Frames: files (KITTI's velodyne .bin, or any cloud; timestamp: index / --rate), a folder\n"
    "(--frames), or '-': the PTF1 stream on stdin ('ptreg track --help'). An unreadable frame,\n"
    "or one with non-finite coordinates, is reported and skipped (no line in the trajectory);\n"
    "a frame with no point in range keeps the predicted pose. --deskew moves each point by\n"
    "the motion at its time in the sweep (its azimuth); KITTI's scans come motion-corrected\n"
    "and are taken as they are without it.\n\n"
    "Output: -o (TUM, or --poses kitti: what 'ptreg eval' and the KITTI devkit read; with\n"
    "--calib in the camera frame of calib.txt's Tr, as KITTI's poses.txt), --map\n"
    "(the local map, or with --map-whole the whole run's), --json (each frame's numbers and\n"
    "the run's latency percentiles), --html (the trajectory over the map). Poses take each\n"
    "frame into the first frame's coordinates.\n"
    "  ptreg synth --lidar-sequence 1000 --frames-dir seq\n"
    "  ptreg odometry --frames seq/velodyne -o poses.txt --poses kitti\n"
    "  ptreg eval poses.txt seq/poses.txt --align none",
    odometry_options, 0, CLI_MAX_POSITIONAL, "odometry");

typedef struct odo_job {
    const char *cmd; /* odometry or localize */
    int localize;
    ptreg_device on; /* where the ICP steps run */
    int whole_map;   /* odometry's --map-whole: --map writes every voxel the run saw */
    int calib;       /* --calib: -o's poses as Tr P Tr^-1 */
    double tr[16], tr_inv[16];
    ptreg_odometry *od;
    int kitti; /* -o's format */
    FILE *out; /* -o's temporary file */
    ptreg_atomic_file out_file;
    ptreg_odometry_frame *frames; /* --json's and --html's records */
    size_t count, cap, skipped;
} odo_job;

/* The options both commands share; library: the command's library options
 * struct (o, or the localizer's, holding o); frames from positional[first]. */
static int read_options(const cli_args *a, void *library, ptreg_odometry_options *o, int first, int *kitti,
                        ptreg_device *on)
{
    const char *cmd = a->cmd->name;
    int rc = cli_read_library(a, library);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_device(a, &o->device);
    ptreg_error err;
    rc = rc ? rc : cli_device_usable(a, ptreg_odometry_resolve_device(o, on, &err), &err);
    if (rc)
        return rc;
    const char *poses = cli_string(a, "poses", "tum");
    if (strcmp(poses, "tum") && strcmp(poses, "kitti")) {
        cli_error(cmd, "--poses: '%s' is not tum or kitti", poses);
        return EXIT_USAGE;
    }
    *kitti = !strcmp(poses, "kitti");
    o->deskew = cli_has(a, "deskew");
    const int frames = a->positional_count - first;
    const int dash = frames == 1 && !strcmp(a->positional[first], "-");
    for (int i = first; !dash && i < a->positional_count; i++)
        if (!strcmp(a->positional[i], "-")) {
            cli_error(cmd, "'-' (the stream on stdin) is the only frame source when given");
            return EXIT_USAGE;
        }
    if (cli_has(a, "frames") == (frames > 0)) {
        cli_error(cmd, cli_has(a, "frames") ? "give frame files or --frames DIR, not both"
                                            : "no frames: give FRAME files, --frames DIR, or '-' for stdin");
        return EXIT_USAGE;
    }
    if (dash && cli_has(a, "rate")) {
        cli_error(cmd, "--rate is for frame files: the stream's frames carry their timestamps");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* --calib: KITTI's Tr, and its inverse. */
static int read_calib(const cli_args *a, odo_job *job)
{
    if (!cli_has(a, "calib"))
        return EXIT_OK;
    ptreg_error err;
    ptreg_status st = ptreg_kitti_calib_read(cli_string(a, "calib", NULL), job->tr, &err);
    if (st) {
        cli_error("odometry", "--calib %s", err.message);
        return cli_exit_code(st, 1);
    }
    ptreg_transform_invert_rigid(job->tr, job->tr_inv);
    job->calib = 1;
    return EXIT_OK;
}

/* Each point's time in the sweep from its azimuth: 0 behind the sensor
 * (-x), rising counterclockwise to 1. */
static float *azimuth_times(const ptreg_cloud *c)
{
    float *t = malloc((c->n ? c->n : 1) * sizeof *t);
    for (size_t i = 0; t && i < c->n; i++) {
        const double az = atan2((double)c->xyz[3 * i + 1], (double)c->xyz[3 * i]);
        t[i] = (float)((az + PI) / (2.0 * PI));
    }
    return t;
}

static int write_pose(odo_job *job, double t, const double T[16])
{
    if (!job->out)
        return EXIT_OK;
    double camera[16], tmp[16];
    if (job->calib) {
        ptreg_transform_mul(job->tr, T, tmp);
        ptreg_transform_mul(tmp, job->tr_inv, camera);
        T = camera;
    }
    int bad = 0;
    if (job->kitti) {
        for (int k = 0; k < 12; k++) {
            char text[32]; /* a translation in UTM: as many digits as it takes */
            if (k % 4 == 3 && !(fabs(T[k]) < PTREG_ORIGIN_THRESHOLD))
                cli_format_coordinate(text, T[k]);
            else
                snprintf(text, sizeof text, "%.9e", T[k]);
            bad |= fprintf(job->out, "%s%c", text, k == 11 ? '\n' : ' ') < 0;
        }
    } else {
        double pose[7];
        track_tum_numbers(T, pose);
        bad = track_write_tum(job->out, t, pose);
    }
    if (bad)
        cli_error(job->cmd, "writing the trajectory failed");
    return bad ? EXIT_RUNTIME : EXIT_OK;
}

/* Keeps the frame for --json and --html. */
static int keep_frame(odo_job *job, const ptreg_odometry_frame *f)
{
    if (job->count == job->cap) {
        const size_t cap = job->cap ? 2 * job->cap : 256;
        ptreg_odometry_frame *frames = realloc(job->frames, cap * sizeof *frames);
        if (!frames) {
            cli_error(job->cmd, "out of memory");
            return EXIT_RUNTIME;
        }
        job->frames = frames, job->cap = cap;
    }
    job->frames[job->count++] = *f;
    return EXIT_OK;
}

/* A frame read: registered, or skipped when its points are not all finite. */
static int push_frame(const cli_args *a, odo_job *job, frame_in *f, ptreg_odometry_frame *out, int *pushed)
{
    *pushed = 0;
    if (f->cloud.dropped_nonfinite) {
        cli_error(job->cmd, "%s: %zu points have non-finite coordinates; the frame is skipped", f->name,
                  f->cloud.dropped_nonfinite);
        job->skipped++;
        return EXIT_OK;
    }
    float *times = cli_has(a, "deskew") ? azimuth_times(&f->cloud) : NULL;
    if (cli_has(a, "deskew") && !times) {
        cli_error(job->cmd, "out of memory");
        return EXIT_RUNTIME;
    }
    ptreg_error err;
    ptreg_status st = ptreg_odometry_push(job->od, f->cloud.xyz, f->cloud.n, times, out, &err);
    free(times);
    if (st) {
        cli_error(job->cmd, "%s: %s", f->name, err.message);
        return cli_exit_code(st, 0);
    }
    *pushed = 1;
    return EXIT_OK;
}

static int run_frames(const cli_args *a, odo_job *job, frame_source *src)
{
    cli_progress progress;
    cli_progress_begin(&progress, a, a->cmd->name, "frame", "latency ms");
    const ptreg_progress hook = cli_progress_hook(&progress);
    const int keep = cli_has(a, "json") || cli_report();
    int rc = EXIT_OK;
    double last_t = -INFINITY;
    frame_in f;
    while (!rc && track_source_next(src, &f)) {
        if (f.unreadable) {
            job->skipped++;
            continue;
        }
        if (!(f.t > last_t) && job->count + job->skipped > 0) {
            cli_error(job->cmd, "%s: frame %zu's timestamp %.9g does not come after %.9g: skipped", f.name,
                      src->next - 1, f.t, last_t);
            job->skipped++;
            ptreg_cloud_free(&f.cloud);
            continue;
        }
        ptreg_odometry_frame out;
        int pushed;
        rc = push_frame(a, job, &f, &out, &pushed);
        ptreg_cloud_free(&f.cloud);
        if (rc || !pushed)
            continue;
        last_t = f.t;
        rc = write_pose(job, f.t, out.pose);
        if (!rc && keep)
            rc = keep_frame(job, &out);
        hook.fn(hook.ctx, (int)(src->next), src->paths ? (int)src->count : 0, out.latency_ms);
    }
    cli_progress_end(&progress, a, 0);
    return rc;
}

static int write_map(const cli_args *a, const odo_job *job, ptreg_cloud *map)
{
    ptreg_error err;
    const ptreg_odometry_map_kind kind = job->whole_map ? PTREG_ODOMETRY_WHOLE_MAP : PTREG_ODOMETRY_LOCAL_MAP;
    ptreg_status st = ptreg_odometry_map(job->od, kind, map, &err);
    if (st) {
        cli_error(job->cmd, "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return cli_has(a, "map") ? cli_write_cloud(job->cmd, cli_string(a, "map", NULL), map, 0) : EXIT_OK;
}

/* The page: the map (its points about its origin, as the path) and the
 * sensor's path. */
static int report_odometry(const odo_job *job, const ptreg_cloud *map)
{
    ptreg_report *rep = cli_report();
    if (!rep)
        return EXIT_OK;
    ptreg_error err;
    float *path = malloc(3 * (job->count ? job->count : 1) * sizeof *path);
    if (!path)
        return cli_report_check(ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory"), &err);
    for (size_t i = 0; i < job->count; i++) /* the sensor's positions, about the map's origin */
        for (int k = 0; k < 3; k++)
            path[3 * i + k] = (float)((double)job->frames[i].pose[4 * k + 3] - map->origin[k]);
    ptreg_status st = ptreg_report_add_cloud(rep, "map", map->xyz, map->n, 0x8c8c8cu, &err);
    if (!st && job->count >= 2)
        st = ptreg_report_add_paths(rep, "trajectory", path, 1, job->count, 0xd62728u, &err);
    free(path);
    double *latency = malloc((job->count ? job->count : 1) * sizeof *latency);
    for (size_t i = 0; !st && latency && i < job->count; i++)
        latency[i] = job->frames[i].latency_ms;
    if (!st)
        st = latency ? ptreg_report_add_curve(rep, "latency per frame", "ms", latency, job->count, &err)
                     : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    free(latency);
    return cli_report_check(st, &err);
}

static int print_json(const odo_job *job, const ptreg_odometry_options *o, const ptreg_odometry_summary *s)
{
    cJSON *root = cJSON_CreateObject();
    cli_json_string(root, "command", job->cmd);
    char name[32];
    cli_json_string(root, "device", ptreg_device_format(&job->on, name, sizeof name));
    cli_json_number(root, "voxel", o->voxel > 0.0 ? o->voxel : o->max_range / 100.0);
    cli_json_bool(root, "deskew", o->deskew);
    cJSON *frames = cli_json_array(root, "frames");
    for (size_t i = 0; i < job->count; i++) {
        cJSON *fo = cJSON_CreateObject();
        cli_json_result(fo, ptreg_result_table_find("odometry_frame"), &job->frames[i]);
        cli_json_push(frames, fo);
    }
    cli_json_number(root, "skipped", (double)job->skipped);
    cli_json_result(cli_json_object(root, "summary"), ptreg_result_table_find("odometry_summary"), s);
    cli_json_number(root, "threads", ptreg_get_num_threads());
    cli_json_string(root, "version", ptreg_version());
    return cli_json_print(root);
}

static void print_human(const odo_job *job, const ptreg_odometry_summary *s)
{
    const ptreg_track_latency *l = &s->latency;
    char name[32];
    printf("ptreg %s: %zu frames (%zu skipped, %zu with no point in range) on the %s (%d threads)\n", job->cmd,
           s->frames, job->skipped, s->empty, ptreg_device_format(&job->on, name, sizeof name),
           ptreg_get_num_threads());
    if (job->localize)
        printf("  tracked %zu, recovered %zu, lost %zu; %zu map tiles read\n", s->tracked, s->recovered, s->lost,
               s->tiles_read);
    printf("  path %.2f m; %s %zu points (%.1f MiB)\n", s->distance, job->localize ? "submap" : "local map",
           s->map_points, (double)s->map_bytes / 1048576.0);
    printf("  latency ms: p50 %.2f, p95 %.2f, p99 %.2f, max %.2f; %.1f frames/s\n", l->p50, l->p95, l->p99, l->max,
           s->frames_per_s);
}

static int finish(const cli_args *a, odo_job *job, const ptreg_odometry_options *o)
{
    ptreg_odometry_summary s;
    ptreg_error err;
    ptreg_status st = ptreg_odometry_summarize(job->od, &s, &err);
    if (st) {
        cli_error(job->cmd, "%s", err.message);
        return cli_exit_code(st, 0);
    }
    if (s.frames == 0) {
        cli_error(job->cmd, "no frame could be read");
        return EXIT_BAD_INPUT;
    }
    ptreg_cloud map;
    ptreg_cloud_init(&map);
    int rc = EXIT_OK;
    if (cli_has(a, "map") || cli_report())
        rc = write_map(a, job, &map);
    rc = rc ? rc : report_odometry(job, &map);
    ptreg_cloud_free(&map);
    if (!rc && (cli_has(a, "json") || cli_report()))
        rc = print_json(job, o, &s);
    if (!rc && !cli_has(a, "json"))
        print_human(job, &s);
    return rc;
}

/* The frames from positional[first] on through the job's odometry (or
 * localizer), the outputs, and the job's memory released. */
static int run_job(const cli_args *a, odo_job *job, const ptreg_odometry_options *o, int first, int rc)
{
    frame_source src;
    memset(&src, 0, sizeof src);
    src.rate = 10.0;
    src.unreadable_is = "skipped";
    rc = rc ? rc : cli_double(a, "rate", 1e-9, 1e9, &src.rate);
    rc = rc ? rc : track_output_open(a, "output", &job->out_file, &job->out);
    rc = rc ? rc : track_source_open(a, first, &src);
    rc = rc ? rc : run_frames(a, job, &src);
    if (!rc && src.stream_error)
        rc = src.stream_error == 2 ? EXIT_RUNTIME : EXIT_BAD_INPUT;
    rc = rc ? rc : finish(a, job, o);
    rc = track_output_close(job->cmd, &job->out_file, &job->out, rc);
    track_source_free(&src);
    ptreg_odometry_destroy(job->od);
    free(job->frames);
    return rc;
}

/* The library keeps every voxel (keep_all) only when --map will write them. */
static int read_whole_map(const cli_args *a, ptreg_odometry_options *o, odo_job *job)
{
    job->whole_map = o->keep_all = cli_has(a, "map-whole");
    if (job->whole_map && !cli_has(a, "map")) {
        cli_error("odometry", "--map-whole says what --map writes: give --map FILE");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cli_run_odometry(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_odometry, argc, argv, &a, &rc))
        return rc;
    ptreg_odometry_options opt;
    ptreg_odometry_options_default(&opt);
    odo_job job;
    memset(&job, 0, sizeof job);
    job.cmd = "odometry";
    if ((rc = read_options(&a, &opt, &opt, 0, &job.kitti, &job.on)) || (rc = read_whole_map(&a, &opt, &job)) ||
        (rc = read_calib(&a, &job)) || (rc = cli_report_begin(&a, "odometry")))
        return rc;
    ptreg_error err;
    ptreg_status st = ptreg_odometry_create(&opt, &job.od, &err);
    if (st) {
        cli_error("odometry", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return run_job(&a, &job, &opt, 0, EXIT_OK);
}

/* ---- ptreg localize ---- */

static const cli_option localize_options[] = {
    {"init", 0, "FILE|X,Y,Z[,YAW]",
     "the first frame's predicted pose in MAP's coordinates: a 4 x 4 transform file, or the "
     "sensor's position and heading (degrees counterclockwise from +x; default 0), level"},
    {"output", 'o', "FILE",
     "write the trajectory in MAP's coordinates, a line per frame registered (--poses); written "
     "whole when the run succeeds (a FIFO or a device: line by line)",
     CLI_WRITES_LIVE "txt tum"},
    {"poses", 0, "NAME", "-o's format: tum or kitti (as 'ptreg odometry'; default tum)"},
    {"frames", 0, "DIR", "the frames: DIR's cloud files (.bin .ply .pcd .las ...), in name order"},
    {"rate", 0, "HZ", "frame files' rate: frame i is at i / HZ seconds (default 10)"},
    {"deskew", 0, NULL, "move each point by the motion at its time in the sweep (as 'ptreg odometry')"},
    {"tile", 0, "M", "MAP a cloud: the tiles' side, m (default 50, a whole number of voxels)"},
    {"save-tiles", 0, "FILE", "MAP a cloud: keep the tiled map made of it, for later runs", "ptm"},
    {"no-recover", 0, NULL, "a frame that does not fit the map is lost, not recovered"},
    {"map", 0, "FILE", "write the submap held at the end", CLI_WRITES_CLOUD},
    CLI_OPT_QUIET,
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_JSON,
    CLI_OPT_HTML,
};

const cli_command cli_cmd_localize = CLI_COMMAND_LIBRARY(
    "localize",
    "MAP FRAME... --init T [options]\n       ptreg localize MAP --frames DIR --init T [options]\n"
    "       ptreg localize MAP - --init T [options] < frames.ptf",
    "LiDAR localization: each scan registered against a prior map of any size, held a tile at a time.",
    "MAP is a cloud of any size in its own coordinates (a LAS of 10^8 points in UTM), or a tiled\n"
    "map saved before (.ptm). A cloud is first read twice in pieces and cut into square tiles\n"
    "of --tile metres in x and y, each thinned to the map's voxels (--voxel, at most\n"
    "--max-points-per-voxel a voxel, KISS-ICP's spacing rule); --save-tiles keeps the result\n"
    "(else it is a scratch file, removed at the end). Each frame is then registered as 'ptreg\n"
    "odometry' registers it (range, thinning, constant-velocity prediction, adaptive\n"
    "threshold, Geman-McClure ICP), but against the map's tiles within --radius of the\n"
    "predicted position, read as the path reaches them (those within --prefetch more are read\n"
    "ahead, one a frame) and dropped behind it: memory holds the submap, never the map. The\n"
    "first prediction is --init. A pose with fewer than --min-fitness of its registered points\n"
    "within half a voxel of the map is recovered: global registration (FPFH, RANSAC) against\n"
    "the submap around the prediction, refined by ICP; a frame that still does not fit is lost\n"
    "(its pose the prediction) and the next goes on from there. Frames as 'ptreg odometry'\n"
    "takes them.\n\n"
    "Output: -o (TUM or KITTI, in MAP's coordinates), --json (each frame's state, tiles and\n"
    "numbers; the run's counts and latency percentiles), --map (the submap at the end),\n"
    "--html (the path over the submap).\n"
    "  ptreg synth --lidar-sequence 900 --frames-dir mapping --lidar-map map.las --origin 500000,5400000,100\n"
    "  ptreg synth --lidar-sequence 300 --frames-dir drive --lane -1.5 --scan-seed 7 --origin 500000,5400000,100 "
    "--truth-trajectory-out drive_truth.txt\n"
    "  ptreg localize map.las --frames drive/velodyne --init 500030,5399998.5,100.1 --save-tiles map.ptm -o drive_poses.txt\n"
    "  ptreg eval drive_poses.txt drive_truth.txt --align none",
    localize_options, 1, CLI_MAX_POSITIONAL, "localize");

/* --init: a transform file (when one is there), or X,Y,Z[,YAW] inline. */
static int read_init(const cli_args *a, double T[16])
{
    const char *s = cli_string(a, "init", NULL);
    if (!s) {
        cli_error("localize", "give --init: the first frame's pose in the map (a 4 x 4 file, or X,Y,Z[,YAW])");
        return EXIT_USAGE;
    }
    if (access(s, F_OK) == 0)
        return cli_read_transform("localize", s, T);
    double v[4] = {0.0, 0.0, 0.0, 0.0};
    char tail;
    const int got = sscanf(s, "%lf,%lf,%lf%c%lf%c", &v[0], &v[1], &v[2], &tail, &v[3], &tail);
    if ((got != 3 && got != 5) || (got == 5 && tail != ',') || !isfinite(v[0] + v[1] + v[2] + v[3])) {
        cli_error("localize", "--init '%s': not a transform file, nor X,Y,Z or X,Y,Z,YAW", s);
        return EXIT_USAGE;
    }
    const double axis[3] = {0.0, 0.0, 1.0};
    ptreg_transform_from_axis_angle(axis, v[3], v, T);
    return EXIT_OK;
}

/* The tiled map: MAP itself, or made of it (kept at --save-tiles, or a
 * scratch file gone once the map is closed) with the localizer's voxel
 * rule. */
static int open_map(const cli_args *a, const ptreg_odometry_options *o, ptreg_tiled_map **map)
{
    const char *path = a->positional[0];
    const int tiled = ptreg_tiled_map_is_file(path);
    if (tiled && (cli_has(a, "save-tiles") || cli_has(a, "tile"))) {
        cli_error("localize", "%s is tiled already: --save-tiles and --tile are for a cloud", path);
        return EXIT_USAGE;
    }
    ptreg_tiled_map_options mo;
    ptreg_tiled_map_options_default(&mo);
    mo.voxel = o->voxel > 0.0 ? o->voxel : o->max_range / 100.0;
    mo.max_points_per_voxel = o->max_points_per_voxel;
    int rc = cli_double(a, "tile", 1e-6, 1e6, &mo.tile);
    if (rc)
        return rc;
    ptreg_error err;
    const double t0 = ptreg_time_ms();
    const ptreg_status st = ptreg_tiled_map_load(path, NULL, &mo, cli_string(a, "save-tiles", NULL), map, &err);
    if (st) {
        cli_error("localize", "%s", err.message);
        return cli_exit_code(st, st != PTREG_ERR_ARG); /* a tile the voxel does not divide: usage */
    }
    if (!tiled && !cli_has(a, "quiet") && !cli_has(a, "json"))
        fprintf(stderr, "localize: %s tiled in %.1f s\n", path, (ptreg_time_ms() - t0) / 1000.0);
    return EXIT_OK;
}

int cli_run_localize(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_localize, argc, argv, &a, &rc))
        return rc;
    ptreg_localize_options loc;
    ptreg_localize_options_default(&loc);
    odo_job job;
    memset(&job, 0, sizeof job);
    job.cmd = "localize", job.localize = 1;
    rc = read_options(&a, &loc, &loc.odometry, 1, &job.kitti, &job.on);
    rc = rc ? rc : read_init(&a, loc.init);
    loc.recover = !cli_has(&a, "no-recover");
    ptreg_tiled_map *map = NULL;
    rc = rc ? rc : cli_report_begin(&a, "localize");
    rc = rc ? rc : open_map(&a, &loc.odometry, &map);
    ptreg_error err;
    ptreg_status st = rc ? PTREG_OK : ptreg_odometry_create_localizer(&loc, map, &job.od, &err);
    if (st) {
        cli_error("localize", "%s", err.message);
        rc = cli_exit_code(st, 0);
    }
    if (!rc) {
        ptreg_tiled_map_info info;
        ptreg_tiled_map_get_info(map, &info);
        loc.odometry.voxel = info.voxel;
    }
    rc = run_job(&a, &job, &loc.odometry, 1, rc);
    ptreg_tiled_map_close(map); /* after the localizer, which reads it */
    return rc;
}
