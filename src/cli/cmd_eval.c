/* ptreg eval: a trajectory against a true one (track.h's
 * ptreg_trajectory_eval): ATE, RPE and the KITTI metric, as text, --json
 * and an --html page. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/report.h"
#include "ptreg/io.h"
#include "ptreg/report.h"
#include "ptreg/track.h"

static const cli_option eval_options[] = {
    {"kitti-lengths", 0, "L,L,...",
     "the KITTI metric's segment lengths, in the poses' units (default 100,200,...,800, the devkit's)"},
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_JSON,
    CLI_OPT_HTML,
};

const cli_command cli_cmd_eval = CLI_COMMAND_LIBRARY(
    "eval", "ESTIMATE TRUTH [options]", "Evaluate a trajectory against the true one: ATE, RPE and the KITTI metric.",
    "ESTIMATE and TRUTH are trajectories: TUM files (\"timestamp tx ty tz qx qy qz qw\" a line,\n"
    "what 'ptreg track -o' writes) or KITTI pose files (12 numbers a line, a 3x4 [R | t] row\n"
    "by row; no times: a pose's time is its index). Poses are paired by time (the nearest\n"
    "within --max-diff, greedily, each pose once: TUM's associate.py) when both files have\n"
    "timestamps, else by index (--associate). The estimate is then laid on the truth by\n"
    "the rigid motion (--align se3, the default) or the similarity (sim3) that best fits\n"
    "the paired positions (Umeyama), or left as it is (none: a tracker's poses are in its\n"
    "model's frame already).\n\n"
    "ATE: each pair's position and rotation error after the alignment (Sturm et al. 2012);\n"
    "RPE: the error of the estimate's motion over --delta (frames, metres or seconds);\n"
    "KITTI: from every 10th pose, segments of 100 to 800 along the true path, the mean\n"
    "translation error in % of the length and rotation error in degrees per metre (Geiger\n"
    "et al. 2012, the odometry devkit). docs/ALGORITHMS.md, \"Evaluating trajectories\", has\n"
    "the definitions. A line that is not a pose (NaN, a matrix that is not rigid) or a\n"
    "timestamp that does not increase exits 3 naming the file and line.\n\n"
    "Examples:\n"
    "  ptreg eval trajectory.txt truth.txt --align none\n"
    "  ptreg eval trajectory.txt truth.txt --align none --delta 1 --delta-unit s --json\n",
    eval_options, 2, 2, "eval");

/* --kitti-lengths' list into the options; EXIT_USAGE when it is not one. */
static int read_lengths(const cli_args *a, ptreg_eval_options *o)
{
    const char *s = cli_string(a, "kitti-lengths", NULL);
    if (!s)
        return EXIT_OK;
    o->kitti_lengths = 0;
    for (const char *p = s; *p;) {
        char *end;
        const double v = strtod(p, &end);
        if (end == p || !(v > 0.0) || !isfinite(v) || o->kitti_lengths == PTREG_EVAL_MAX_LENGTHS ||
            (*end && *end != ',')) {
            cli_error("eval", "--kitti-lengths '%s': up to %d positive lengths separated by commas", s,
                      PTREG_EVAL_MAX_LENGTHS);
            return EXIT_USAGE;
        }
        o->kitti_length[o->kitti_lengths++] = v;
        p = *end ? end + 1 : end;
    }
    if (!o->kitti_lengths) {
        cli_error("eval", "--kitti-lengths: no length given");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

static const char *format_name(ptreg_trajectory_format f) { return f == PTREG_TRAJECTORY_KITTI ? "kitti" : "tum"; }

static cJSON *json_file(const char *path, const ptreg_trajectory *tr)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "path", path);
    cli_json_number(o, "poses", (double)tr->n);
    cli_json_string(o, "format", format_name(tr->format));
    return o;
}

static int print_json(const cli_args *a, const ptreg_trajectory tr[2], const ptreg_eval_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "eval");
    cli_json_put(j, "estimate", json_file(a->positional[0], &tr[0]));
    cli_json_put(j, "reference", json_file(a->positional[1], &tr[1]));
    cli_json_result(j, ptreg_result_table_find("trajectory_eval"), r);
    /* a measure that could not be taken is null, not absent */
    if (!r->rpe)
        cli_json_null(j, "rpe");
    if (!r->kitti)
        cli_json_null(j, "kitti");
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

static void print_stats(const char *what, const ptreg_eval_stats *s, const char *unit)
{
    printf("  %-22s rmse %-11.6g mean %-11.6g median %-11.6g std %-11.6g max %.6g %s\n", what, s->rmse, s->mean,
           s->median, s->std, s->max, unit);
}

static const char *unit_word(ptreg_eval_unit u)
{
    return u == PTREG_DELTA_METERS ? "m" : u == PTREG_DELTA_SECONDS ? "s" : "frames";
}

static void print_text(const cli_args *a, const ptreg_trajectory tr[2], const ptreg_eval_result *r)
{
    const ptreg_eval_association *as = r->association;
    printf("ptreg eval: %s (%zu poses, %s) against %s (%zu poses, %s)\n", a->positional[0], tr[0].n,
           format_name(tr[0].format), a->positional[1], tr[1].n, format_name(tr[1].format));
    if (as->method == PTREG_ASSOCIATE_TIME)
        printf("  %zu pairs by time (within %g s, offset %g s); ", as->pairs, as->max_diff, as->offset);
    else
        printf("  %zu pairs by index; ", as->pairs);
    printf("aligned by %s", r->align == PTREG_ALIGN_NONE ? "nothing" : r->align == PTREG_ALIGN_SIM3 ? "sim3" : "se3");
    if (r->align == PTREG_ALIGN_SIM3)
        printf(" (scale %.9g)", r->alignment->scale);
    printf("\n");
    print_stats("ATE translation", r->ate->translation, "");
    print_stats("ATE rotation", r->ate->rotation_deg, "deg");
    if (r->rpe) {
        char what[64];
        snprintf(what, sizeof what, "RPE/%g %s translation", r->rpe->delta, unit_word(r->rpe->unit));
        print_stats(what, r->rpe->translation, "");
        snprintf(what, sizeof what, "RPE/%g %s rotation", r->rpe->delta, unit_word(r->rpe->unit));
        print_stats(what, r->rpe->rotation_deg, "deg");
    } else {
        printf("  RPE: no pair of poses %g %s apart\n", r->rpe_errors.delta, unit_word(r->rpe_errors.unit));
    }
    if (r->kitti)
        printf("  KITTI: translation %.6g %%, rotation %.6g deg/m over %zu segments\n", r->kitti->translation_percent,
               r->kitti->rotation_deg_per_m, r->kitti->segments);
    else
        printf("  KITTI: no segment fits (the true path is shorter than the shortest length)\n");
}

/* A histogram of v[0..n) as SVG text (20 bins from 0 to the largest). */
static char *histogram_svg(const double *v, size_t n, const char *label)
{
    enum { BINS = 20, W = 360, H = 160 };
    size_t count[BINS] = {0}, top = 1;
    double hi = 0.0;
    for (size_t k = 0; k < n; k++)
        hi = v[k] > hi ? v[k] : hi;
    for (size_t k = 0; k < n; k++) {
        size_t b = hi > 0.0 ? (size_t)(v[k] / hi * BINS) : 0;
        b = b >= BINS ? BINS - 1 : b;
        top = ++count[b] > top ? count[b] : top;
    }
    char *svg = malloc(8192);
    if (!svg)
        return NULL;
    int len = snprintf(svg, 8192, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d'>", W, H + 30);
    for (int b = 0; b < BINS; b++) {
        const double h = (double)H * (double)count[b] / (double)top;
        len += snprintf(svg + len, 8192 - (size_t)len,
                        "<rect x='%d' y='%.1f' width='%d' height='%.1f' fill='#4878d0'/>", b * (W / BINS), H - h,
                        W / BINS - 1, h);
    }
    snprintf(svg + len, 8192 - (size_t)len,
             "<text x='0' y='%d' font-size='12'>0</text><text x='%d' y='%d' font-size='12' "
             "text-anchor='end'>%.4g %s</text></svg>",
             H + 16, W, H + 16, hi, label);
    return svg;
}

/* --html: the truth's path and the aligned estimate's, the estimate's
 * positions coloured by their error, the error along the pairs and its
 * histograms. */
static ptreg_status report_eval(ptreg_report *rep, const ptreg_eval_result *r, ptreg_error *err)
{
    const size_t n = r->association->pairs;
    float *xyz = malloc(6 * n * sizeof *xyz), *values = malloc(n * sizeof *values);
    ptreg_status st = xyz && values ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "eval: out of memory");
    for (size_t k = 0; !st && k < 3 * n; k++)
        xyz[k] = (float)r->reference_xyz[k], xyz[3 * n + k] = (float)r->aligned_xyz[k];
    for (size_t k = 0; !st && k < n; k++)
        values[k] = (float)r->translation_error[k];
    st = st ? st : ptreg_report_add_paths(rep, "true path", xyz, 1, n, 0x2ca02cu, err);
    st = st ? st : ptreg_report_add_paths(rep, "estimate (aligned)", xyz + 3 * n, 1, n, 0xd62728u, err);
    st = st ? st
            : ptreg_report_add_cloud_values(rep, "estimate by ATE error", xyz + 3 * n, n, values, "translation error",
                                            err);
    st = st ? st : ptreg_report_add_curve(rep, "ATE along the path", "translation error", r->translation_error, n, err);
    const struct {
        const char *title, *label;
        const double *v;
    } hist[2] = {{"ATE translation errors", "", r->translation_error},
                 {"ATE rotation errors", "deg", r->rotation_error_deg}};
    for (int h = 0; h < 2 && !st; h++) {
        char *svg = histogram_svg(hist[h].v, n, hist[h].label);
        st = svg ? ptreg_report_add_figure(rep, hist[h].title, svg, err)
                 : ptreg_error_set(err, PTREG_ERR_NOMEM, "eval: out of memory");
        free(svg);
    }
    free(xyz), free(values);
    return st;
}

static int read_both(const cli_args *a, ptreg_trajectory tr[2])
{
    for (int i = 0; i < 2; i++) {
        ptreg_error err;
        const ptreg_status st = ptreg_trajectory_read(a->positional[i], &tr[i], &err);
        if (st) {
            cli_error("eval", "%s", err.message);
            return cli_exit_code(st, 1);
        }
    }
    return EXIT_OK;
}

int cli_run_eval(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_eval, argc, argv, &a, &rc))
        return rc;
    ptreg_eval_options o;
    ptreg_eval_options_default(&o);
    if ((rc = cli_read_library(&a, &o)) || (rc = read_lengths(&a, &o)) || (rc = cli_device_cpu_only(&a, "eval")) ||
        (rc = cli_report_begin(&a, "eval")))
        return rc;
    ptreg_trajectory tr[2] = {{0}, {0}};
    ptreg_eval_result r;
    memset(&r, 0, sizeof r);
    rc = read_both(&a, tr);
    if (!rc) {
        ptreg_error err;
        ptreg_status st = ptreg_trajectory_eval(&tr[0], &tr[1], &o, &r, &err);
        if (!st && cli_report())
            rc = cli_report_check(report_eval(cli_report(), &r, &err), &err);
        if (st) {
            cli_error("eval", "%s", err.message);
            /* too few pairs is the files' fault; options out of range were caught before */
            rc = cli_exit_code(st, 1);
        }
    }
    if (!rc && (cli_has(&a, "json") || cli_report()))
        rc = print_json(&a, tr, &r);
    if (!rc && !cli_has(&a, "json") && !cli_has(&a, "quiet"))
        print_text(&a, tr, &r);
    ptreg_eval_result_free(&r);
    ptreg_trajectory_free(&tr[0]);
    ptreg_trajectory_free(&tr[1]);
    return rc;
}
