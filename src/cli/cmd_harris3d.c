/* ptreg harris3d: 3-D Harris interest points of a volume. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "cli/report.h"
#include "cli/tune_choice.h"
#include "ptreg/device.h"
#include "ptreg/harris3d.h"
#include "ptreg/io.h"
#include "ptreg/tune.h"

static const cli_option harris_options[] = {
    {"output", 'o', "FILE", "write the keypoints: .ply (x y z score i j k) or .csv/.txt", "ply csv txt"},
    {"scores", 0, "FILE", "write every voxel's score as a float32 volume: .nrrd or .nii (NIfTI-1)", "nrrd nii"},
    {"threshold", 0, "T", "keep scores above T (absolute)"},
    {"relative", 0, "R", "keep scores above R times the largest (default 0.01, the library's)"},
    {"dims", 0, "X,Y,Z", "raw volumes: sizes (default: from a name like NAME_XxYxZ_TYPE.raw)"},
    {"type", 0, "TYPE", "raw volumes: u8, i8, u16, i16, u32, i32, f32 or f64 (uint8, int16, float ... too)"},
    {"endian", 0, "E", "raw volumes: little (default) or big"},
    {"spacing", 0, "A,B,C", "voxel spacing for physical coordinates (default: the file's, or 1,1,1)"},
    {"format", 0, "F", "raw, nrrd or nifti (default: by extension, then by content)"},
    {"reference", 0, NULL, "use the literal loop (w^3 terms per voxel, double): slow, for checking"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_REPEAT,
    {"no-tune", 0, NULL, "ignore `ptreg tune --kernel harris`'s winner (the CPU path's tiling and threads)"},
    CLI_OPT_HTML,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_harris3d = CLI_COMMAND_LIBRARY(
    "harris3d", "VOLUME [options]", "Find 3-D Harris interest points (corners) in a volume.",
    "Gradients by central differences g = (I[x+1] - I[x-1], ...), the structure tensor\n"
    "M = sum over a W^3 window of w g g^T with Gaussian weights w, and the score\n"
    "det(M) - K trace(M)^3 at every voxel. For an isotropic tensor (all eigenvalues lambda)\n"
    "the score is lambda^3 (1 - 27 K), so corners score above 0 only when K < 1/27; edges and\n"
    "flat regions score at most 0. Keypoints are local maxima of their 26 neighbors\n"
    "above the threshold (and above 0), thinned by --min-distance, best first, cut by --top.\n\n"
    "Volumes: NRRD (.nrrd, .nhdr: raw, gzip or ascii data, attached or detached), NIfTI-1\n"
    "(.nii, .nii.gz) and headerless raw files (x fastest; --dims and --type, or a name like\n"
    "tooth_103x94x161_uint8.raw). Voxels are converted to float32.\n\n"
    "--device runs it on a GPU (CUDA or OpenCL): the scores (the CPU's bits), the peaks and\n"
    "their order there, --min-distance and --top on the host; env PTREG_HARRIS_METHOD picks\n"
    "the kernels (direct, tile, separable, zchunk; default zchunk). --reference is CPU only.\n"
    "On a GPU, scores_ms includes the volume's upload and, with --scores, the scores' copy\n"
    "back; with --repeat the volume stays on the device, so only the first run uploads it.\n\n"
    "time_ms counts from the volume in memory to the keypoints (scores and selection);\n"
    "with --repeat, it and scores_ms, keypoints_ms are medians over the runs.\n"
    "Keypoint coordinates x y z are origin + index * spacing; i j k are the voxel.\n\n"
    "--html FILE: the keypoints in physical coordinates, coloured by score, over three\n"
    "orthogonal slices through the volume's centre (grey from its 0.5th to 99.5th percentile;\n"
    "at most 512 pixels a side), and the JSON's numbers.",
    harris_options, 1, 1, "harris3d");

static int parse_dims(const cli_args *a, size_t dims[3])
{
    const char *v = cli_string(a, "dims", NULL);
    if (!v)
        return EXIT_OK;
    const char *p = v;
    for (int k = 0; k < 3; k++) {
        char *end;
        unsigned long long n = strtoull(p, &end, 10);
        if (end == p || *p == '-' || n == 0 || n > 1u << 30 || (k < 2 ? *end != ',' : *end != 0)) {
            cli_error("harris3d", "--dims: '%s' is not three sizes X,Y,Z (1 .. 2^30)", v);
            return EXIT_USAGE;
        }
        dims[k] = (size_t)n;
        p = end + 1;
    }
    return EXIT_OK;
}

static int read_raw_options(const cli_args *a, ptreg_raw_options *raw, ptreg_volume_format *format)
{
    int rc = parse_dims(a, raw->dims);
    rc = rc ? rc : cli_vec3(a, "spacing", raw->spacing);
    if (rc)
        return rc;
    if (!(raw->spacing[0] > 0 && raw->spacing[1] > 0 && raw->spacing[2] > 0)) {
        cli_error("harris3d", "--spacing: %s: each spacing must be above 0", cli_string(a, "spacing", ""));
        return EXIT_USAGE;
    }
    const char *type = cli_string(a, "type", NULL);
    if (type && !(raw->type_set = ptreg_voxel_type_parse(type, &raw->type) == 0)) {
        cli_error("harris3d", "--type: '%s' is not u8, i8, u16, i16, u32, i32, f32 or f64", type);
        return EXIT_USAGE;
    }
    const char *endian = cli_string(a, "endian", "little");
    if (strcmp(endian, "little") && strcmp(endian, "big")) {
        cli_error("harris3d", "--endian: '%s' is not little or big", endian);
        return EXIT_USAGE;
    }
    raw->big_endian = !strcmp(endian, "big");
    const char *f = cli_string(a, "format", "auto");
    static const char *const names[] = {"auto", "raw", "nrrd", "nifti"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(f, names[i])) {
            *format = (ptreg_volume_format)i;
            return EXIT_OK;
        }
    cli_error("harris3d", "--format: '%s' is not raw, nrrd or nifti", f);
    return EXIT_USAGE;
}

static int read_detector_options(const cli_args *a, ptreg_harris3d_options *o)
{
    int rc = cli_read_library(a, o);
    if (rc)
        return rc;
    o->reference = cli_has(a, "reference");
    if (cli_has(a, "threshold") && cli_has(a, "relative")) {
        cli_error("harris3d", "--threshold and --relative exclude each other");
        return EXIT_USAGE;
    }
    if (cli_has(a, "threshold")) {
        o->threshold_mode = PTREG_HARRIS_ABSOLUTE;
        return cli_double(a, "threshold", -1e300, 1e300, &o->threshold);
    }
    if (cli_has(a, "top") && !cli_has(a, "relative"))
        o->threshold = 0; /* --top alone ranks every positive maximum */
    return cli_double(a, "relative", 0, 1, &o->threshold);
}

static int load_volume(const cli_args *a, const char *path, ptreg_volume *vol)
{
    ptreg_raw_options raw;
    ptreg_raw_options_default(&raw);
    ptreg_volume_format format;
    int rc = read_raw_options(a, &raw, &format);
    if (rc)
        return rc;
    ptreg_error err;
    ptreg_status st = ptreg_volume_read(path, format, &raw, vol, &err);
    if (st) {
        cli_error("harris3d", "%s", err.message);
        return st == PTREG_ERR_ARG ? EXIT_USAGE : cli_exit_code(st, 1);
    }
    if (cli_has(a, "spacing"))
        memcpy(vol->spacing, raw.spacing, sizeof raw.spacing);
    return EXIT_OK;
}

/* A window wider than the volume sees only its repeated edges (or, with
 * --border skip, no voxel at all): a usage error, named with the volume. */
static int check_window(const char *path, const ptreg_volume *vol, int window)
{
    if ((size_t)window <= vol->nx && (size_t)window <= vol->ny && (size_t)window <= vol->nz)
        return EXIT_OK;
    cli_error("harris3d", "--window %d is larger than %s, a %zu x %zu x %zu volume", window, path, vol->nx, vol->ny,
              vol->nz);
    return EXIT_USAGE;
}

/* One detection of --repeat (cli_repeat) on a volume kept where the
 * options run it (created by the first run, whose time counts the
 * upload): the last run's result (empty before the first: the detection
 * zeroes it, so freeing it is always safe) and each run's stage times.
 * The scores (or, when no --scores asks for them, the keypoints) must
 * repeat exactly. */
typedef struct harris_run {
    const ptreg_volume *vol;
    const ptreg_harris3d_options *o;
    int with_scores;
    ptreg_harris3d_volume *hv;
    ptreg_harris3d_result r;
    double *scores_ms, *keypoints_ms;
    int runs;
} harris_run;

static ptreg_status harris_once(void *ctx, double *time_ms, const void **bits, size_t *size, ptreg_error *err)
{
    harris_run *run = ctx;
    ptreg_harris3d_result_free(&run->r);
    double t0 = ptreg_time_ms();
    ptreg_status st = run->hv ? PTREG_OK : ptreg_harris3d_volume_create(run->vol, run->o, &run->hv, err);
    double upload_ms = ptreg_time_ms() - t0;
    st = st ? st : ptreg_harris3d_volume_run(run->hv, run->o, run->with_scores, &run->r, err);
    *time_ms = run->r.time_ms + upload_ms;
    run->scores_ms[run->runs] = run->r.scores_ms + upload_ms;
    run->keypoints_ms[run->runs++] = run->r.keypoints_ms;
    if (run->r.scores) {
        *bits = run->r.scores;
        *size = ptreg_volume_count(run->vol) * sizeof(float);
    } else {
        *bits = run->r.keypoints;
        *size = run->r.keypoint_count * sizeof *run->r.keypoints;
    }
    return st;
}

static int write_outputs(const cli_args *a, const ptreg_volume *vol, const ptreg_harris3d_result *r)
{
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (cli_has(a, "scores")) {
        ptreg_volume s = *vol;
        s.type = PTREG_VOXEL_F32;
        s.data = r->scores;
        const char *path = cli_string(a, "scores", NULL);
        st = ptreg_volume_write(path, &s, &err); /* .nrrd or .nii, as --scores checked */
    }
    if (!st && cli_has(a, "output"))
        st = ptreg_keypoints_write(cli_string(a, "output", NULL), r->keypoints, r->keypoint_count, vol, &err);
    if (st) {
        cli_error("harris3d", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

/* ---- --html ---- */

/* The keypoints at origin + index * spacing, coloured by their scores. */
static ptreg_status add_keypoints(ptreg_report *report, const ptreg_volume *vol, const ptreg_harris3d_result *r,
                                  ptreg_error *err)
{
    const size_t n = r->keypoint_count;
    float *xyz = malloc((n ? n : 1) * 3 * sizeof *xyz), *score = malloc((n ? n : 1) * sizeof *score);
    ptreg_status st = xyz && score ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < n; i++) {
        const uint32_t at[3] = {r->keypoints[i].x, r->keypoints[i].y, r->keypoints[i].z};
        for (int k = 0; k < 3; k++)
            xyz[3 * i + k] = (float)(vol->origin[k] + at[k] * vol->spacing[k]);
        score[i] = r->keypoints[i].score;
    }
    st = st ? st : ptreg_report_add_cloud_values(report, "keypoints", xyz, n, score, "Harris score", err);
    free(xyz);
    free(score);
    return st;
}

/* With --html: three orthogonal slices through the centre, the keypoints over them. */
static int report_harris(const ptreg_volume *vol, const ptreg_harris3d_result *r)
{
    ptreg_report *report = cli_report();
    if (!report)
        return EXIT_OK;
    ptreg_error err;
    ptreg_status st = ptreg_report_add_volume_slices(report, vol, &err);
    st = st ? st : add_keypoints(report, vol, r, &err);
    return cli_report_check(st, &err);
}

static double voxels_per_s(const ptreg_volume *vol, double ms)
{
    return ms > 0 ? (double)ptreg_volume_count(vol) / (ms * 1e-3) : 0;
}

static int print_json(const char *path, const ptreg_volume *vol, const ptreg_harris3d_options *o,
                      const ptreg_harris3d_result *r, const double *times, int count, cJSON *variant)
{
    cJSON *j = cJSON_CreateObject();
    double dims[3] = {(double)vol->nx, (double)vol->ny, (double)vol->nz};
    cli_json_string(j, "command", "harris3d");
    cli_json_string(j, "volume", path);
    cli_json_put(j, "dims", cJSON_CreateDoubleArray(dims, 3));
    cli_json_string(j, "type", ptreg_voxel_type_name(vol->type));
    cli_json_put(j, "spacing", cJSON_CreateDoubleArray(vol->spacing, 3));
    cli_json_number(j, "window", o->window);
    cli_json_number(j, "k", o->k);
    cli_json_string(j, "border", o->border == PTREG_HARRIS_BORDER_SKIP ? "skip" : "clamp");
    cli_json_string(j, "threshold_mode", o->threshold_mode == PTREG_HARRIS_RELATIVE ? "relative" : "absolute");
    cli_json_number(j, "keypoints", (double)r->keypoint_count);
    if (count > 1)
        cli_json_put(j, "times_ms", cJSON_CreateDoubleArray(times, count));
    cli_json_number(j, "voxels_per_s", voxels_per_s(vol, r->time_ms));
    cli_json_result(j, ptreg_result_table_find("harris3d"), r); /* the count of keypoints is the key "keypoints" */
    if (variant)
        cli_json_put(j, "variant", variant);
    ptreg_device on;
    char device[32] = "cpu";
    if (!ptreg_harris3d_resolve_device(o, &on, NULL))
        ptreg_device_format(&on, device, sizeof device);
    cli_json_string(j, "device", device);
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

static void print_human(const char *path, const ptreg_volume *vol, const ptreg_harris3d_options *o,
                        const ptreg_harris3d_result *r)
{
    printf("ptreg harris3d: %s (%zu x %zu x %zu %s), window %d, sigma %.4g, k %.4g, border %s\n", path, vol->nx,
           vol->ny, vol->nz, ptreg_voxel_type_name(vol->type), o->window, r->sigma, o->k,
           o->border == PTREG_HARRIS_BORDER_SKIP ? "skip" : "clamp");
    printf("  max score %.6g, threshold %.6g, %zu local maxima, %zu keypoints\n", r->max_score, r->threshold,
           r->local_maxima, r->keypoint_count);
    printf("  time %.2f ms (scores %.2f, keypoints %.2f), %.3g voxels/s, %s, %d threads\n", r->time_ms, r->scores_ms,
           r->keypoints_ms, voxels_per_s(vol, r->time_ms), r->isa, ptreg_get_num_threads());
    size_t show = r->keypoint_count < 10 ? r->keypoint_count : 10;
    for (size_t i = 0; i < show; i++)
        printf("  %4zu  voxel (%u, %u, %u)  score %.6g\n", i + 1, r->keypoints[i].x, r->keypoints[i].y,
               r->keypoints[i].z, r->keypoints[i].score);
    if (show < r->keypoint_count)
        printf("  ... (%zu more; -o FILE writes them all)\n", r->keypoint_count - show);
}

/* The CPU fast path's tiling and threads from `ptreg tune --kernel harris`
 * (unless --no-tune, or --threads for the threads), or on a GPU its method:
 * what ran, for the JSON; NULL with --reference. */
static cJSON *tuned_tiling(const cli_args *a, const ptreg_volume *vol, ptreg_harris3d_options *o)
{
    if (o->reference)
        return NULL;
    ptreg_tune_choice c;
    ptreg_error err;
    return cli_tune_adopt(
        a, ptreg_tune_variant("harris3d", o, ptreg_volume_count(vol), 0, !cli_has(a, "no-tune"), &c, &err), &c);
}

int cli_run_harris3d(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_harris3d, argc, argv, &a, &rc))
        return rc;
    ptreg_harris3d_options o;
    ptreg_harris3d_options_default(&o);
    int repeat = 1;
    ptreg_device on;
    ptreg_error err;
    if ((rc = read_detector_options(&a, &o)) || (rc = cli_int(&a, "repeat", 1, 1000, &repeat)) ||
        (rc = cli_apply_threads(&a)) || (rc = cli_device(&a, &o.device)) ||
        (rc = cli_device_usable(&a, ptreg_harris3d_resolve_device(&o, &on, &err), &err)) ||
        (rc = cli_report_begin(&a, "harris3d")))
        return rc;
    const char *path = a.positional[0];
    ptreg_volume vol;
    if ((rc = load_volume(&a, path, &vol)))
        return rc;
    if ((rc = check_window(path, &vol, o.window))) {
        ptreg_volume_free(&vol);
        return rc;
    }
    cJSON *variant = tuned_tiling(&a, &vol, &o);
    double *times = calloc(3 * (size_t)repeat, sizeof *times); /* total, scores, keypoints */
    harris_run run = {&vol, &o, cli_has(&a, "scores"), NULL, {0}, NULL, NULL, 0};
    if (times)
        run.scores_ms = times + repeat, run.keypoints_ms = times + 2 * repeat;
    ptreg_status st = times ? cli_repeat(repeat, harris_once, &run, times, &run.r.time_ms, &err)
                            : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    ptreg_harris3d_result *r = &run.r;
    if (st) {
        cli_error("harris3d", "%s: %s", path, err.message);
        /* a voxel that is not finite is bad input; a bad PTREG_HARRIS_METHOD a usage
         * error; what the device cannot do (the reference loop) a runtime failure */
        rc = st == PTREG_ERR_FORMAT ? EXIT_BAD_INPUT : cli_exit_code(st, 0);
    } else {
        r->scores_ms = cli_median(run.scores_ms, repeat);
        r->keypoints_ms = cli_median(run.keypoints_ms, repeat);
        rc = write_outputs(&a, &vol, r);
        rc = rc ? rc : report_harris(&vol, r);
        if (!rc && (cli_has(&a, "json") || cli_report())) /* the page holds the JSON, printed only with --json */
            rc = print_json(path, &vol, &o, r, times, repeat, variant), variant = NULL;
        if (!rc && !cli_has(&a, "json"))
            print_human(path, &vol, &o, r);
    }
    ptreg_harris3d_result_free(r);
    ptreg_harris3d_volume_destroy(run.hv);
    cJSON_Delete(variant);
    free(times);
    ptreg_volume_free(&vol);
    return rc;
}
