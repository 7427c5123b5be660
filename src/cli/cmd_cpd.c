/* ptreg cpd: Coherent Point Drift of SOURCE onto TARGET (rigid, similarity,
 * affine or deformable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "ptreg/cpd.h"

static const cli_option cpd_options[] = {
    {"output", 'o', "FILE", "write SOURCE moved onto TARGET (format from the extension)", CLI_WRITES_CLOUD},
    {"transform-out", 't', "FILE",
     "write the 4x4 result (.txt: text, row-major; .json); not for --transform deformable", CLI_WRITES_TRANSFORM},
    {"warp", 0, "POINTS", "other points (a cloud, a mesh's vertices) to move as SOURCE moved: needs --warp-out"},
    {"warp-out", 0, "FILE", "write --warp's points, moved as SOURCE was", CLI_WRITES_CLOUD},
    CLI_OPT_PLOT("the objective (the negative log-likelihood's bound)"),
    CLI_OPT_HTML,
    CLI_OPT_QUIET,
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_cpd = CLI_COMMAND_LIBRARY(
    "cpd", "SOURCE TARGET [options]",
    "Register SOURCE onto TARGET by Coherent Point Drift (rigid, similarity, affine or deformable).",
    "SOURCE's points are the centroids of a Gaussian mixture, all with one variance sigma^2,\n"
    "plus a uniform term of weight --w for outliers; EM moves the centroids onto TARGET\n"
    "(Myronenko & Song, IEEE TPAMI 2010). --transform picks how they move:\n"
    "  rigid       a rotation and a translation\n"
    "  similarity  the same and a uniform scale\n"
    "  affine      any 3x3 matrix and a translation\n"
    "  deformable  y + v(y), v a smooth field: a sum of Gaussians of width --beta,\n"
    "              kept smooth by --lambda (larger: stiffer)\n"
    "The options and their defaults are pycpd's (its alpha is --lambda), so a run with the\n"
    "same --w, --beta, --lambda, --max-iter and --sigma2 gives its answer; --tol is relative\n"
    "(the objective's change over its value; 0 runs every iteration).\n\n"
    "Memory is O(n + m): every sum over (SOURCE, TARGET) pairs, and the deformable step's\n"
    "products with the n x n Gaussian matrix, are computed on the fly (Gauss transforms),\n"
    "and the deformable step's linear system is solved by conjugate gradients. A run costs\n"
    "2 n m pair terms an iteration, plus n^2 per conjugate-gradient step (deformable);\n"
    "gpts in the output is pair terms / time / 1e9. Pairs whose terms all fall below\n"
    "float32's range (far apart against sigma or beta) are skipped as whole tiles in fp32.\n\n"
    "--beta is in the clouds' units (pycpd's default 2 suits clouds of unit size; scale it\n"
    "with yours). --warp POINTS --warp-out FILE moves other points by the same transform\n"
    "or field: v(x) = sum_j exp(-|x - y_j|^2 / (2 beta^2)) w_j.\n\n"
    "Output: the moved SOURCE (-o), the 4x4 (-t; rigid, similarity, affine: the affine\n"
    "matrix in the top three rows), the result's numbers (--json), a page with TARGET,\n"
    "SOURCE before and after and the displacements (--html). Clouds: PLY, PCD, XYZ/CSV/TXT,\n"
    "VTK, LAS. There is no GPU path yet: --device takes auto or cpu.",
    cpd_options, 2, 2, "cpd");

static int read_options(const cli_args *a, ptreg_cpd_options *o)
{
    int rc = cli_read_library(a, o);
    rc = rc ? rc : cli_apply_threads(a);
    rc = rc ? rc : cli_device_cpu_only(a, "cpd");
    if (!rc && o->transform == PTREG_CPD_DEFORMABLE && cli_has(a, "transform-out")) {
        cli_error("cpd", "--transform-out: a deformable result has no 4x4 (use -o, or --warp and --warp-out)");
        return EXIT_USAGE;
    }
    if (!rc && cli_has(a, "warp") != cli_has(a, "warp-out")) {
        cli_error("cpd", "--warp and --warp-out go together: the points to move and where they go");
        return EXIT_USAGE;
    }
    return rc;
}

static void print_human(const cli_args *a, const ptreg_cloud *s, const ptreg_cloud *t, const ptreg_cpd_result *r)
{
    char device[32];
    ptreg_device_format(&r->device, device, sizeof device);
    printf("ptreg cpd: %s (%zu points) onto %s (%zu points), %s, %s on %s (%s), %d threads\n", a->positional[0], s->n,
           a->positional[1], t->n, cli_string(a, "transform", "rigid"), ptreg_precision_name(r->precision), device,
           r->isa, ptreg_get_num_threads());
    printf("  sigma^2 %.6g -> %.6g, %d iterations (%s), objective %.9g, Np %.6g\n", r->sigma2_init, r->sigma2,
           r->iterations, ptreg_stop_reason_name(r->stop_reason), r->objective, r->np);
    if (r->transform == PTREG_CPD_DEFORMABLE)
        printf("  %d conjugate-gradient steps, beta %g\n", r->cg_iterations, r->beta);
    else
        for (int u = 0; u < 4; u++)
            printf("  %12.8f %12.8f %12.8f %12.8f\n", r->transformation[4 * u], r->transformation[4 * u + 1],
                   r->transformation[4 * u + 2], r->transformation[4 * u + 3]);
    if (r->transform == PTREG_CPD_SIMILARITY)
        printf("  scale %.9g\n", r->scale);
    printf("  time %.2f ms (Gauss transforms %.2f ms), %.3f Gpts/s, %.1f%% of pair tiles skipped\n", r->time_ms,
           r->pair_ms, r->gpts, 100.0 * r->culled);
}

/* With --html: TARGET, SOURCE before and after, and each point's move. */
static int report_cpd(const ptreg_cloud *s, const ptreg_cloud *t, const ptreg_cpd_result *r)
{
    ptreg_report *rep = cli_report();
    if (!rep)
        return EXIT_OK;
    float *ends = malloc(6 * s->n * sizeof(float));
    if (!ends) {
        cli_error("cpd", "out of memory for the report");
        return EXIT_RUNTIME;
    }
    for (size_t i = 0; i < s->n; i++) {
        memcpy(ends + 6 * i, s->xyz + 3 * i, 3 * sizeof(float));
        memcpy(ends + 6 * i + 3, r->moved + 3 * i, 3 * sizeof(float));
    }
    ptreg_error err;
    ptreg_status st = ptreg_report_add_cloud(rep, "target", t->xyz, t->n, 0x3b82f6, &err);
    st = st ? st : ptreg_report_add_cloud(rep, "source", s->xyz, s->n, 0x9ca3af, &err);
    st = st ? st : ptreg_report_add_cloud(rep, "source moved", r->moved, s->n, 0xf97316, &err);
    st = st ? st : ptreg_report_add_lines(rep, "moves", ends, s->n, 0x6b7280, &err);
    free(ends);
    return cli_report_check(st, &err);
}

/* --warp POINTS --warp-out FILE: the points moved as SOURCE was. */
static int write_warp(const cli_args *a, const ptreg_cpd_result *r)
{
    ptreg_cloud c;
    int rc = cli_load_cloud("cpd", cli_string(a, "warp", NULL), &c, cli_quiet(a));
    if (rc)
        return rc;
    ptreg_error err;
    ptreg_status st = ptreg_cpd_warp(r, c.xyz, c.n, c.xyz, &err);
    if (st) {
        cli_error("cpd", "--warp: %s", err.message);
        rc = cli_exit_code(st, 0);
    } else {
        free(c.normals); /* normals are not carried by a field */
        c.normals = NULL;
        rc = cli_write_cloud("cpd", cli_string(a, "warp-out", NULL), &c, cli_has(a, "ascii"));
    }
    ptreg_cloud_free(&c);
    return rc;
}

static int write_outputs(const cli_args *a, const ptreg_cloud *s, const ptreg_cpd_result *r)
{
    int rc = EXIT_OK;
    if (cli_has(a, "output")) {
        ptreg_cloud moved = *s;
        moved.xyz = r->moved;
        moved.normals = NULL;
        rc = cli_write_cloud("cpd", cli_string(a, "output", NULL), &moved, cli_has(a, "ascii"));
    }
    if (!rc && cli_has(a, "transform-out"))
        rc = cli_write_transform("cpd", cli_string(a, "transform-out", NULL), r->transformation);
    if (!rc && cli_has(a, "warp"))
        rc = write_warp(a, r);
    return rc;
}

static int print_json(const ptreg_cloud *s, const ptreg_cloud *t, const ptreg_cpd_result *r)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "command", "cpd");
    cli_json_number(o, "source_points", (double)s->n);
    cli_json_number(o, "target_points", (double)t->n);
    cli_json_number(o, "threads", ptreg_get_num_threads());
    cli_json_result(o, ptreg_result_table_find("cpd"), r);
    return cli_json_print(o);
}

int cli_run_cpd(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_cpd, argc, argv, &a, &rc))
        return rc;
    ptreg_cpd_options opt;
    ptreg_cpd_options_default(&opt);
    if ((rc = read_options(&a, &opt)) || (rc = cli_report_begin(&a, "cpd")))
        return rc;
    ptreg_cloud source, target;
    if ((rc = cli_load_pair("cpd", &a, 1, &source, &target)))
        return rc;
    cli_progress progress;
    cli_progress_begin(&progress, &a, "cpd", "iteration", "objective");
    opt.progress = cli_progress_hook(&progress);
    ptreg_cpd_result r;
    ptreg_error err;
    ptreg_status st = ptreg_cpd(source.xyz, source.n, target.xyz, target.n, &opt, &r, &err);
    const int plot_rc = cli_progress_end(&progress, &a, !st);
    if (st) {
        cli_error("cpd", "%s", err.message);
        rc = cli_exit_code(st, 0);
    } else {
        rc = plot_rc ? plot_rc : write_outputs(&a, &source, &r);
        rc = rc ? rc : report_cpd(&source, &target, &r);
        if (!rc && (cli_has(&a, "json") || cli_report()))
            rc = print_json(&source, &target, &r);
        if (!rc && !cli_has(&a, "json"))
            print_human(&a, &source, &target, &r);
        ptreg_cpd_result_free(&r);
    }
    ptreg_cloud_free(&source);
    ptreg_cloud_free(&target);
    return rc;
}
