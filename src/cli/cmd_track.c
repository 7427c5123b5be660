/* ptreg track: frames registered one by one against a model, as they come
 * (files, a folder, or a binary stream on stdin), written as a TUM
 * trajectory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/track_io.h"
#include "ptreg/device.h"
#include "ptreg/features.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"
#include "ptreg/track.h"

static const cli_option track_options[] = {
    {"output", 'o', "FILE",
     "write the trajectory (TUM: timestamp tx ty tz qx qy qz qw), a line per frame read "
     "(an unreadable frame has none); written whole when the run succeeds (a FIFO or a "
     "device: line by line)",
     CLI_WRITES_LIVE "txt tum"},
    {"states", 0, "FILE", "write each frame's timestamp and state (tracked, recovered, lost), the same way",
     CLI_WRITES_LIVE "txt"},
    {"truth", 0, "FILE",
     "the true poses, a TUM trajectory (synth --sequence's --truth-trajectory-out): report "
     "each frame's rotation and translation error and their median and max"},
    {"frames", 0, "DIR", "the frames: DIR's cloud files (.ply .pcd .xyz ...), in name order"},
    {"rate", 0, "HZ", "frame files' rate: frame i is at i / HZ seconds (default 10)"},
    {"init", 0, "FILE", "the first frame's predicted pose, a 4x4 transform (default identity)"},
    {"no-recover", 0, NULL, "no global registration of a frame that failed the checks: it is lost"},
    {"sensor-origin", 0, "X,Y,Z",
     "the sensor's position in the frames' coordinates, for --visible-only (default 0,0,0: a range "
     "sensor's frames)"},
    {"no-tune", 0, NULL, "--nn auto ignores the index's measured method ('ptreg index --tune'): the rule"},
    CLI_OPT_QUIET,
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_JSON,
    CLI_OPT_HTML,
};

const cli_command cli_cmd_track = CLI_COMMAND_LIBRARY(
    "track",
    "MODEL FRAME... [options]\n       ptreg track MODEL --frames DIR [options]\n"
    "       ptreg track MODEL - [options] < frames.ptf",
    "Track frames against a model: each frame registered by ICP from a predicted pose, checked, recovered.",
    "MODEL is a cloud (its normals, when it has them, serve point-to-plane ICP; else they\n"
    "are estimated once) or a model index from 'ptreg index' (.pti). The model is built and,\n"
    "on a GPU, uploaded once. Each frame, in order, starts from a prediction of its pose\n"
    "(--predict constant-velocity: the motion between the last two good poses, scaled by\n"
    "the ratio of the times; none: the last good pose), is registered by ICP (--method,\n"
    "default plane; --max-dist default 5% of the model's diagonal), and is lost when its\n"
    "fitness is below --min-fitness, its rmse above --max-rmse, or its pose moved from the\n"
    "last good one faster than --max-speed or --max-turn. A lost frame is registered again\n"
    "without a guess (global registration: FPFH, RANSAC; the model's half prepared once):\n"
    "RANSAC's pose and its half turns about the model's principal axes (a near-symmetric\n"
    "model's mirror poses) are refined by ICP, and a candidate passes when it passes the fit\n"
    "checks, its rmse is within 3 of the model's mean point spacings (--max-rmse, when given,\n"
    "instead) and 95% of its paired points lie on the model's surface; of those that pass,\n"
    "the one nearest the prediction is recovered. The first frame, from --init (a guess),\n"
    "must pass the same checks to count as tracked. A frame with no candidate stays lost and\n"
    "its pose is the prediction. Lost frames leave the velocity as it was; a recovered one\n"
    "starts it over. The pose takes the frame's points into the model's frame.\n\n"
    "Only what the sensor can see: with the model's own normals (MODEL a cloud with outward\n"
    "normals), each frame is registered against the model points that face the sensor\n"
    "(--sensor-origin, in the frame's coordinates) at the predicted pose: a noisy frame's\n"
    "points near thin parts then cannot pair with the far side. The first 5 frames judge\n"
    "whether that pays: frames that hold the model's every side (a quarter of their points\n"
    "nearest the far side), or so little noise that under 1.5% are, are tracked against the\n"
    "whole model from then on (--json: each frame's visible; --visible-only 0: always the\n"
    "whole model; a model without normals is used whole). --voxel V thins each frame to\n"
    "voxel centroids first (in the latency).\n\n"
    "Frames: files (timestamp: index / --rate), a folder (--frames), or '-': a stream on\n"
    "stdin, each frame the 4 bytes \"PTF1\", a little-endian uint64 point count, a\n"
    "little-endian double timestamp (seconds, increasing), then count x, y, z as\n"
    "little-endian float32 (docs/FORMATS.md). An unreadable or empty frame is reported on\n"
    "stderr and is lost (an unreadable one has no line in the trajectory: no pose is known);\n"
    "a stream frame whose timestamp does not increase is reported and skipped; a truncated\n"
    "stream or a bad magic ends the stream (reported, exit 3).\n\n"
    "Output: -o's TUM trajectory (what evo and SLAM benchmarks read), --states, and with\n"
    "--json each frame's state, iterations, fitness, rmse and latency (frame in memory to\n"
    "pose) and a summary: counts, latency percentiles, frames per second. --truth adds each\n"
    "frame's rotation and translation error against the true pose at its time, and their\n"
    "median and max. -o and --states are written when the run ends, and only when it\n"
    "succeeds (exit 0): a failed run leaves no file (a FIFO or a device, such as /dev/null,\n"
    "is written line by line). Exit 0 when a frame at least was read, 3 when none could be\n"
    "or the stream was malformed.\n"
    "  ptreg synth --sequence 300 --model model.ply --frames-dir frames --truth-trajectory-out truth.txt\n"
    "  ptreg track model.ply --frames frames -o trajectory.txt --json --truth truth.txt",
    track_options, 1, CLI_MAX_POSITIONAL, "track");

/* ---- the run ---- */

typedef struct track_job {
    ptreg_model_index *index;
    ptreg_cloud model; /* a cloud MODEL (its normals) */
    const char *model_path;
    ptreg_tracker *tracker;
    ptreg_device device;
    double setup_ms;
    FILE *out, *states; /* the temporary files of -o and --states */
    ptreg_atomic_file out_file, states_file;
    ptreg_trajectory truth; /* --truth */
} track_job;

/* The page: the model, the sensor's path, the frames lost, the last frame. */
static int report_track(const track_job *job, const track_page *page)
{
    ptreg_report *rep = cli_report();
    if (!rep)
        return EXIT_OK;
    ptreg_error err;
    size_t m = job->model.n;
    const float *model = job->model.xyz ? job->model.xyz : ptreg_model_index_points(job->index, &m);
    return cli_report_check(track_page_report(page, rep, model, m, &err), &err);
}

static int read_track_options(const cli_args *a, ptreg_track_options *o, double *rate)
{
    /* the tracker's and ICP's options, ranges and rules from the library's table */
    int rc = cli_read_library(a, o);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_device(a, &o->icp.device);
    rc = rc ? rc : cli_double(a, "rate", 1e-9, 1e9, rate);
    rc = rc ? rc : cli_vec3(a, "sensor-origin", o->sensor_origin);
    if (rc)
        return rc;
    o->icp.no_tune = cli_has(a, "no-tune");
    o->recover = !cli_has(a, "no-recover");
    if (cli_has(a, "init") && (rc = cli_read_transform("track", cli_string(a, "init", NULL), o->init)))
        return rc;
    const int dash = a->positional_count == 2 && !strcmp(a->positional[1], "-");
    for (int i = 1; !dash && i < a->positional_count; i++)
        if (!strcmp(a->positional[i], "-")) {
            cli_error("track", "'-' (the stream on stdin) is the only frame source when given");
            return EXIT_USAGE;
        }
    if (cli_has(a, "frames") == (a->positional_count > 1)) {
        cli_error("track", cli_has(a, "frames") ? "give frame files or --frames DIR, not both"
                                                : "no frames: give FRAME files, --frames DIR, or '-' for stdin");
        return EXIT_USAGE;
    }
    if (dash && cli_has(a, "rate")) {
        cli_error("track", "--rate is for frame files: the stream's frames carry their timestamps");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static int load_model(const cli_args *a, ptreg_track_options *o, track_job *job)
{
    job->model_path = a->positional[0];
    ptreg_error err;
    if (cli_is_index_path(job->model_path))
        return cli_load_index("track", job->model_path, &job->index);
    int rc = cli_load_shape("track", job->model_path, &job->model, 0);
    if (rc)
        return rc;
    cli_transform_to_local(o->init, o->init);
    ptreg_index_options io;
    ptreg_index_options_default(&io);
    io.delaunay = ptreg_nn_method_is_delaunay(o->icp.nn);
    ptreg_status st = ptreg_model_index_create(job->model.xyz, job->model.n, &io, &job->index, &err);
    if (st) {
        cli_error("track", "%s: %s", job->model_path, err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}


/* The TUM line's numbers: tx ty tz qx qy qz qw; T the world pose. */
static void tum_pose(const double local[16], double out[7], double T[16])
{
    cli_transform_to_world(local, T);
    track_tum_numbers(T, out);
}

static int write_frame(const track_job *job, const ptreg_track_record *f, const double pose[7])
{
    int bad = 0;
    const double t = f->frame.time;
    if (job->out && !f->unreadable) /* no pose is known: no line (its state says lost) */
        bad |= track_write_tum(job->out, t, pose);
    if (job->states)
        bad |= fprintf(job->states, "%.6f %s\n", t, ptreg_track_state_name(f->frame.state)) < 0;
    if (bad)
        cli_error("track", "writing the trajectory failed");
    return bad ? EXIT_RUNTIME : EXIT_OK;
}

/* --html: each frame's fitness, a curve beside the view (the records are
 * kept when there is a page). */
static int report_fitness(const ptreg_track_summary *s)
{
    if (!cli_report())
        return EXIT_OK;
    double *fitness = malloc((s->frames ? s->frames : 1) * sizeof *fitness);
    ptreg_error err;
    if (!fitness)
        return cli_report_check(ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory"), &err);
    for (size_t i = 0; i < s->frames; i++)
        fitness[i] = s->records[i].frame.fitness;
    ptreg_status st = ptreg_report_add_curve(cli_report(), "fitness per frame", "fitness", fitness, s->frames, &err);
    free(fitness);
    return cli_report_check(st, &err);
}

static int print_json(const track_job *job, const ptreg_track_options *o, const ptreg_track_summary *s)
{
    cJSON *root = cJSON_CreateObject();
    char name[32];
    cli_json_string(root, "command", "track");
    cli_json_string(root, "model", job->model_path);
    size_t m;
    ptreg_model_index_points(job->index, &m);
    cli_json_number(root, "model_points", (double)m);
    cli_json_string(root, "device", ptreg_device_format(&job->device, name, sizeof name));
    cli_json_string(root, "method", ptreg_icp_method_name(o->icp.method));
    cli_json_string(root, "predict", ptreg_track_predict_name(o->predict));
    cli_json_bool(root, "recover", o->recover);
    /* asked and possible (the model's own normals): each frame's "visible" says what was done */
    cli_json_bool(root, "visible_only", o->visible_only && job->model.normals);
    if (o->voxel > 0.0)
        cli_json_number(root, "voxel", o->voxel);
    cli_json_number(root, "setup_ms", job->setup_ms);
    cJSON *frames = cli_json_array(root, "frames");
    for (size_t i = 0; i < s->frames; i++) {
        const ptreg_track_record *f = &s->records[i];
        cJSON *fo = cJSON_CreateObject();
        cli_json_result(fo, ptreg_result_table_find("track_frame"), &f->frame);
        if (f->unreadable) {
            cli_json_true(fo, "unreadable");
            cli_json_null(fo, "pose"); /* no pose is known */
        } else {
            double pose[7], world[16];
            tum_pose(f->frame.pose, pose, world);
            cli_json_put(fo, "pose", cJSON_CreateDoubleArray(pose, 7));
        }
        if (f->has_error) {
            cli_json_number(fo, "rotation_error_deg", f->rotation_error_deg);
            cli_json_number(fo, "translation_error", f->translation_error);
        }
        cli_json_push(frames, fo);
    }
    cli_json_result(cli_json_object(root, "summary"), ptreg_result_table_find("track_summary"), s);
    cli_json_number(root, "threads", ptreg_get_num_threads());
    cli_json_string(root, "version", ptreg_version());
    return cli_json_print(root);
}

static void print_human(const track_job *job, const ptreg_track_summary *s)
{
    const ptreg_track_latency *l = &s->latency;
    const ptreg_track_errors *e = &s->errors;
    char name[32];
    printf("ptreg track: %zu frames against %s on %s (%d threads); model ready in %.1f ms\n", s->frames,
           job->model_path, ptreg_device_format(&job->device, name, sizeof name), ptreg_get_num_threads(),
           job->setup_ms);
    printf("  tracked %zu, recovered %zu, lost %zu (unreadable %zu)", s->tracked, s->recovered, s->lost, s->unreadable);
    if (s->skipped)
        printf(", skipped %zu (timestamps not increasing)", s->skipped);
    printf("\n  latency ms: p50 %.2f, p95 %.2f, p99 %.2f, max %.2f; %.1f frames/s\n", l->p50, l->p95, l->p99, l->max,
           s->wall_ms > 0.0 ? 1000.0 * (double)s->frames / s->wall_ms : 0.0);
    if (job->truth.n)
        printf("  error vs truth (%zu frames): rotation median %.4f, max %.4f deg (frame %zu); translation median "
               "%.4g, max %.4g\n",
               e->frames, e->rotation_deg_median, e->rotation_deg_max, e->rotation_deg_max_frame, e->translation_median,
               e->translation_max);
}

/* Every frame of src through the tracker, each written as it is known. */
static int run_frames(const cli_args *a, track_job *job, frame_source *src, ptreg_track_summary *s, track_page *view)
{
    cli_progress progress;
    cli_progress_begin(&progress, a, "track", "frame", "latency ms");
    const ptreg_progress hook = cli_progress_hook(&progress);
    const int keep_records = cli_has(a, "json") || cli_report(); /* the JSON's frames */
    int rc = EXIT_OK;
    double last_t = -INFINITY;
    frame_in f;
    const double t0 = ptreg_time_ms();
    while (!rc && track_source_next(src, &f)) {
        if (s->frames > 0 && !(f.t > last_t)) {
            cli_error("track", "%s: frame %zu's timestamp %.9g does not come after %.9g: skipped", f.name,
                      src->next - 1, f.t, last_t);
            s->skipped++;
            ptreg_cloud_free(&f.cloud);
            continue;
        }
        if (!f.unreadable && f.cloud.n == 0)
            cli_error("track", "%s: frame %zu has no points; the frame is lost", f.name, src->next - 1);
        ptreg_track_frame tf;
        ptreg_error err;
        ptreg_status st = ptreg_tracker_push(job->tracker, f.cloud.xyz, f.cloud.n, f.t, &tf, &err);
        if (st) {
            cli_error("track", "%s: frame %zu: %s", f.name, src->next - 1, err.message);
            rc = cli_exit_code(st, 0);
        } else {
            ptreg_track_record r = {tf, f.unreadable, 0, 0.0, 0.0};
            double pose[7], world[16];
            tum_pose(tf.pose, pose, world);
            const double *truth = f.unreadable ? NULL : ptreg_trajectory_at(&job->truth, f.t);
            if (truth) {
                r.has_error = 1;
                ptreg_transform_difference(truth, world, &r.rotation_error_deg, &r.translation_error);
            }
            last_t = f.t;
            rc = write_frame(job, &r, pose);
            if (!rc && ptreg_track_summary_add(s, &r, keep_records, &err)) {
                cli_error("track", "out of memory");
                rc = EXIT_RUNTIME;
            }
            hook.fn(hook.ctx, (int)s->frames, src->paths ? (int)src->count : 0, tf.latency_ms);
            if (cli_report())
                track_page_add(view, f.cloud.xyz, f.cloud.n, tf.pose, tf.state == PTREG_TRACK_LOST);
        }
        ptreg_cloud_free(&f.cloud);
    }
    s->wall_ms = ptreg_time_ms() - t0;
    cli_progress_end(&progress, a, 0);
    return rc;
}

int cli_run_track(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_track, argc, argv, &a, &rc))
        return rc;
    ptreg_track_options opt;
    ptreg_track_options_default(&opt);
    frame_source src;
    memset(&src, 0, sizeof src);
    src.rate = 10.0;
    if ((rc = read_track_options(&a, &opt, &src.rate)) || (rc = cli_report_begin(&a, "track")))
        return rc;
    track_job job;
    memset(&job, 0, sizeof job);
    ptreg_cloud_init(&job.model);
    ptreg_error err;
    if ((rc = cli_device_usable(&a, ptreg_icp_resolve_device(&opt.icp, &job.device, &err), &err)))
        return rc;
    ptreg_track_summary sum;
    memset(&sum, 0, sizeof sum);
    track_page view;
    memset(&view, 0, sizeof view);
    rc = track_output_open(&a, "output", &job.out_file, &job.out);
    rc = rc ? rc : track_output_open(&a, "states", &job.states_file, &job.states);
    if (!rc && cli_has(&a, "truth"))
        rc = track_read_truth(cli_string(&a, "truth", NULL), &job.truth);
    if (rc || (rc = load_model(&a, &opt, &job)))
        goto done;
    rc = track_source_open(&a, 1, &src);
    if (rc)
        goto done;
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_tracker_create(job.index, job.model.normals, &opt, &job.tracker, &err);
    job.setup_ms = ptreg_time_ms() - t0;
    if (st) {
        cli_error("track", "%s", err.message);
        rc = cli_exit_code(st, 0);
        goto done;
    }
    rc = run_frames(&a, &job, &src, &sum, &view);
    const size_t readable = sum.frames - sum.unreadable;
    if (!rc && src.stream_error)
        rc = src.stream_error == 2 ? EXIT_RUNTIME : EXIT_BAD_INPUT;
    if (!rc && readable == 0) {
        cli_error("track", "no frame could be read");
        rc = EXIT_BAD_INPUT;
    }
    if (!rc && job.truth.n && sum.errors.frames == 0) {
        cli_error("track", "--truth %s: no pose at any frame's time", cli_string(&a, "truth", NULL));
        rc = EXIT_BAD_INPUT;
    }
    if (!rc) {
        ptreg_track_summary_add(&sum, NULL, 0, &err);
        rc = report_track(&job, &view);
        rc = rc ? rc : report_fitness(&sum);
        if (!rc && (cli_has(&a, "json") || cli_report()))
            rc = print_json(&job, &opt, &sum);
        if (!rc && !cli_has(&a, "json"))
            print_human(&job, &sum);
    }
done:
    rc = track_output_close("track", &job.out_file, &job.out, rc);
    rc = track_output_close("track", &job.states_file, &job.states, rc);
    ptreg_track_summary_free(&sum);
    ptreg_trajectory_free(&job.truth);
    track_page_free(&view);
    track_source_free(&src);
    ptreg_tracker_destroy(job.tracker);
    ptreg_model_index_destroy(job.index);
    ptreg_cloud_free(&job.model);
    return rc;
}
