/* ptreg filter: outlier removal (statistical, radius) and downsampling
 * (random, uniform) with Open3D's conventions; nn.h does the work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/io.h"
#include "ptreg/nn.h"

static const cli_option filter_options[] = {
    {"output", 'o', "FILE", "the points kept (format from the extension), with their normals and attributes",
     CLI_WRITES_CLOUD},
    {"statistical", 0, "RATIO",
     "statistical outlier removal (Open3D's remove_statistical_outlier, PCL's StatisticalOutlierRemoval): drop a "
     "point whose mean distance to its --k nearest points (itself among them) is not below the mean of those "
     "means plus RATIO standard deviations (Open3D's std_ratio)"},
    {"k", 0, "K", "--statistical: the neighbors of each point, itself included (Open3D's nb_neighbors; default 20)"},
    {"radius", 0, "R",
     "radius outlier removal (Open3D's remove_radius_outlier): drop a point with fewer than --min-neighbors other "
     "points at distance < R"},
    {"min-neighbors", 0, "N", "--radius: the other points a point needs within R (Open3D's nb_points; default 16)"},
    {"random", 0, "FRACTION",
     "keep floor(FRACTION x points) points drawn at random (Open3D's random_down_sample), "
     "in the cloud's order"},
    {"random-count", 0, "N", "keep N points drawn at random, in the cloud's order"},
    {"seed", 0, "S", "--random, --random-count: the draw (default 1): the same points for every run"},
    {"uniform", 0, "EVERY", "keep points 0, EVERY, 2 EVERY, ... (Open3D's uniform_down_sample)"},
    {"indices", 0, "FILE", "write the kept points' indices in the input (0-based, one a line; Open3D's ind)", "txt"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_filter = CLI_COMMAND(
    "filter",
    "INPUT -o OUTPUT (--statistical RATIO | --radius R | --random FRACTION | --random-count N | --uniform EVERY)",
    "Remove outliers (statistical, radius) or downsample (random, uniform) as Open3D does.",
    "One filter a run, with Open3D's conventions, so that its users get the same points:\n"
    "--statistical counts the point itself among its --k nearest (--k 1 drops every point)\n"
    "and takes the sample standard deviation; like Open3D, a point whose k nearest all sit\n"
    "at its own place (mean distance 0) is dropped. --radius keeps a point with at least\n"
    "--min-neighbors others strictly within R. Distances are taken in double. The points\n"
    "kept stay in the input's order, with their normals, colours, intensity and classification; the\n"
    "same points for any thread count and every run. A filter that keeps no point writes\n"
    "nothing and exits 4.\n\n"
    "Examples:\n"
    "  ptreg filter scan.ply --statistical 2.0 --k 20 -o clean.ply\n"
    "  ptreg filter scan.ply --radius 0.05 --min-neighbors 16 -o clean.ply\n"
    "  ptreg filter scan.ply --random 0.1 --seed 7 -o sample.ply\n",
    filter_options, 1, 1);

typedef enum filter_kind { FILTER_NONE, FILTER_STATISTICAL, FILTER_RADIUS, FILTER_RANDOM, FILTER_UNIFORM } filter_kind;

typedef struct filter_choice {
    filter_kind kind;
    const char *name;
    double ratio, radius, fraction;
    size_t k, min_neighbors, count, every;
    int by_count;
    uint64_t seed;
} filter_choice;

/* Exactly one filter, and its options only beside it. */
static int choose_filter(const cli_args *a, filter_choice *f)
{
    static const struct {
        const char *option;
        filter_kind kind;
    } kinds[] = {{"statistical", FILTER_STATISTICAL},
                 {"radius", FILTER_RADIUS},
                 {"random", FILTER_RANDOM},
                 {"random-count", FILTER_RANDOM},
                 {"uniform", FILTER_UNIFORM}};
    int given = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (cli_has(a, kinds[i].option))
            f->kind = kinds[i].kind, f->name = kinds[i].option, given++;
    if (given != 1) {
        cli_error("filter", "give one filter: --statistical, --radius, --random, --random-count or --uniform");
        return EXIT_USAGE;
    }
    static const struct {
        const char *option;
        filter_kind with;
    } belongs[] = {{"k", FILTER_STATISTICAL}, {"min-neighbors", FILTER_RADIUS}, {"seed", FILTER_RANDOM}};
    for (size_t i = 0; i < sizeof belongs / sizeof belongs[0]; i++)
        if (cli_has(a, belongs[i].option) && f->kind != belongs[i].with) {
            cli_error("filter", "--%s does not go with --%s", belongs[i].option, f->name);
            return EXIT_USAGE;
        }
    return EXIT_OK;
}

static int read_filter(const cli_args *a, filter_choice *f)
{
    memset(f, 0, sizeof *f);
    f->k = 20, f->min_neighbors = 16, f->seed = 1;
    int rc = choose_filter(a, f);
    rc = rc ? rc : cli_double(a, "statistical", 1e-300, 1e300, &f->ratio);
    rc = rc ? rc : cli_size(a, "k", 1, 1u << 20, &f->k);
    rc = rc ? rc : cli_double(a, "radius", 1e-300, 1e300, &f->radius);
    rc = rc ? rc : cli_size(a, "min-neighbors", 1, SIZE_MAX, &f->min_neighbors);
    rc = rc ? rc : cli_double(a, "random", 0.0, 1.0, &f->fraction);
    rc = rc ? rc : cli_size(a, "random-count", 0, SIZE_MAX, &f->count);
    rc = rc ? rc : cli_u64(a, "seed", &f->seed);
    rc = rc ? rc : cli_size(a, "uniform", 1, SIZE_MAX, &f->every);
    f->by_count = cli_has(a, "random-count");
    rc = rc ? rc : cli_device_cpu_only(a, "filter");
    return rc ? rc : cli_apply_threads(a);
}

static ptreg_status run_filter(const filter_choice *f, const ptreg_cloud *c, unsigned char *keep, ptreg_error *err)
{
    switch (f->kind) {
    case FILTER_STATISTICAL: return ptreg_statistical_outliers(c->xyz, c->n, f->k, f->ratio, keep, NULL, err);
    case FILTER_RADIUS: return ptreg_radius_outliers(c->xyz, c->n, f->radius, f->min_neighbors, keep, err);
    case FILTER_RANDOM:
        if (f->by_count && f->count > c->n)
            return ptreg_error_set(err, PTREG_ERR_ARG, "--random-count %zu: the cloud has %zu points", f->count, c->n);
        return ptreg_random_downsample(c->n, f->by_count ? f->count : ptreg_random_downsample_count(c->n, f->fraction),
                                       f->seed, keep, err);
    case FILTER_UNIFORM: return ptreg_uniform_downsample(c->n, f->every, keep, err);
    default: return ptreg_error_set(err, PTREG_ERR_ARG, "no filter");
    }
}

static ptreg_status write_indices(const char *path, const unsigned char *keep, size_t n, ptreg_error *err)
{
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (st)
        return st;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            fprintf(af.fp, "%zu\n", i);
    return ptreg_atomic_commit(&af, err);
}

static int write_filtered(const cli_args *a, const ptreg_cloud *c, const unsigned char *keep, ptreg_cloud *out)
{
    ptreg_error err;
    ptreg_status st = ptreg_cloud_select(c, keep, out, &err);
    if (!st) {
        ptreg_write_options opt;
        ptreg_write_options_default(&opt);
        opt.ascii = cli_has(a, "ascii");
        st = ptreg_cloud_write(cli_string(a, "output", NULL), out, &opt, &err);
    }
    if (!st && cli_has(a, "indices"))
        st = write_indices(cli_string(a, "indices", NULL), keep, c->n, &err);
    if (st)
        cli_error("filter", "%s", err.message);
    return st ? cli_exit_code(st, 0) : EXIT_OK;
}

/* An empty cloud is a file no reader takes (ptreg's included): refused,
 * nothing written, rather than a trap for the next command. */
static int nothing_kept(const cli_args *a, const filter_choice *f, const unsigned char *keep, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            return EXIT_OK;
    cli_error("filter", "%s: --%s kept none of its %zu points: nothing written", a->positional[0], f->name, n);
    return EXIT_RUNTIME;
}

static int print_filter(const cli_args *a, const filter_choice *f, size_t in, size_t kept, double ms)
{
    if (!cli_has(a, "json")) {
        printf("ptreg filter: %s: %s kept %zu of %zu points (%zu removed), %.1f ms\n", a->positional[0], f->name, kept,
               in, in - kept, ms);
        return EXIT_OK;
    }
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "command", "filter");
    cli_json_string(o, "input", a->positional[0]);
    cli_json_string(o, "output", cli_string(a, "output", ""));
    cli_json_string(o, "filter", f->name);
    cli_json_number(o, "points", (double)in);
    cli_json_number(o, "kept", (double)kept);
    cli_json_number(o, "removed", (double)(in - kept));
    cli_json_number(o, "time_ms", ms);
    cli_json_number(o, "threads", ptreg_get_num_threads());
    return cli_json_print(o);
}

int cli_run_filter(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_filter, argc, argv, &a, &rc) ||
        (rc = cli_require(&a, "output", "the output file: -o OUTPUT")))
        return rc;
    filter_choice f;
    if ((rc = read_filter(&a, &f)))
        return rc;
    ptreg_read_options ro;
    ptreg_read_options_default(&ro);
    ro.attributes = 1;
    ptreg_cloud c, out;
    if ((rc = cli_load_cloud_with("filter", a.positional[0], &ro, &c, cli_quiet(&a))))
        return rc;
    ptreg_cloud_init(&out);
    unsigned char *keep = malloc(c.n ? c.n : 1);
    ptreg_error err;
    const double t0 = ptreg_time_ms();
    ptreg_status st = keep ? run_filter(&f, &c, keep, &err)
                           : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for %zu points", c.n);
    const double ms = ptreg_time_ms() - t0;
    if (st) {
        cli_error("filter", "%s", err.message);
        rc = st == PTREG_ERR_ARG ? EXIT_USAGE : cli_exit_code(st, 0);
    }
    rc = rc ? rc : nothing_kept(&a, &f, keep, c.n);
    rc = rc ? rc : write_filtered(&a, &c, keep, &out);
    rc = rc ? rc : print_filter(&a, &f, c.n, out.n, ms);
    free(keep);
    ptreg_cloud_free(&out);
    ptreg_cloud_free(&c);
    return rc;
}
