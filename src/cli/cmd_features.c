/* ptreg normals, ptreg pfh, ptreg fpfh: point features of a cloud. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/features_report.h"
#include "cli/json.h"
#include "cli/registration.h"
#include "cli/report.h"
#include "cli/tune_choice.h"
#include "ptreg/device.h"
#include "ptreg/features.h"
#include "ptreg/io.h"
#include "ptreg/tune.h"

/* The library's --k and --radius (--radius alone: every point within R). */
#define NEIGHBORHOOD_SHORT CLI_SHORT("k", 'k'), CLI_SHORT("radius", 'r')
#define RUN_OPTIONS CLI_OPT_THREADS, CLI_DEVICE_OPTION, CLI_OPT_QUIET, CLI_OPT_REPEAT, CLI_OPT_HTML, CLI_OPT_JSON

/* What pfh and fpfh share after their own options. */
#define DESCRIPTOR_OPTIONS                                                                                     \
    {"recompute", 0, NULL, "estimate normals even when the cloud has them"},                                   \
        {"normal-k", 0, "N", "normals, when estimated: the N nearest (default 30)"},                           \
        {"normal-radius", 0, "R", "normals, when estimated: every point closer than R"},                       \
        {"viewpoint", 0, "X,Y,Z", "estimated normals face this point (default 0,0,0)"},                        \
        {"reference", 0, NULL, "use the plain path (one search, one scalar pair at a time): same bits, slow"}, \
        {"no-tune", 0, NULL,                                                                                   \
         "fpfh: ignore `ptreg tune --kernel fpfh`'s winner (threads; on a GPU, work-groups; "                  \
         "not used when --wg or --search-wg is given)"},                                                       \
        RUN_OPTIONS

static const cli_option normals_options[] = {
    {"output", 'o', "FILE",
     "write the cloud with its normals (.ply, .pcd: also the curvature, as PCL's "
     "PointNormal; .xyz/.txt/.csv: x y z nx ny nz)",
     CLI_WRITES_CLOUD},
    NEIGHBORHOOD_SHORT,
    {"viewpoint", 0, "X,Y,Z", "normals face this point (default 0,0,0, the sensor of most scans)"},
    {"direction", 0, "X,Y,Z", "--orient direction: n . d >= 0 (default 0,0,1)"},
    CLI_OPT_ASCII,
    RUN_OPTIONS,
};

const cli_command cli_cmd_normals = CLI_COMMAND_LIBRARY(
    "normals", "CLOUD [-o OUT] [--k N] [--radius R] [options]", "Estimate normals by PCA of each point's neighborhood.",
    "A point's normal is the eigenvector of the smallest eigenvalue of its neighborhood's\n"
    "covariance (about the neighborhood's centroid, in double), turned to face the viewpoint\n"
    "(or as --orient says: along a direction; as computed; or consistent over the surface by\n"
    "flips spread along a minimum spanning tree of the --orient-k nearest graph weighted by\n"
    "1 - |n_i . n_j|, from each component's highest point, whose normal faces +z);\n"
    "curvature is l0 / (l0 + l1 + l2). Points with fewer than 3 neighbors, or whose\n"
    "neighbors all coincide (a scanner's invalid returns at the origin), get NaN normals\n"
    "and are counted as missing. This is what PCL's NormalEstimation computes.\n"
    "On a GPU (--device cuda[:N]|opencl[:N]) the neighborhoods and the estimates run there,\n"
    "in double where the GPU has it: the CPU's normals bit for bit; --orient tangent-plane\n"
    "runs on the CPU only (refused on a GPU).\n\n"
    "time_ms counts from the cloud in memory to the normals (k-d tree included).\n\n"
    "--html FILE: the cloud coloured by curvature (points without a normal in grey), a short\n"
    "segment along the normal of up to 20000 of its points (evenly chosen), and the JSON.",
    normals_options, 1, 1, "normals");

static const cli_option pfh_options[] = {
    {"output", 'o', "FILE",
     "write the descriptors: .pcd (field pfh, PCL's layout), .npy (n x 125 "
     "float32) or .csv/.txt",
     "pcd npy csv txt"},
    NEIGHBORHOOD_SHORT,
    DESCRIPTOR_OPTIONS,
};

static const cli_option fpfh_options[] = {
    {"output", 'o', "FILE",
     "write the descriptors: .pcd (field fpfh, PCL's layout), .npy (n x 33 "
     "float32) or .csv/.txt",
     "pcd npy csv txt"},
    NEIGHBORHOOD_SHORT,
    DESCRIPTOR_OPTIONS,
};

#define DESCRIPTOR_HELP                                                                                                                             \
    "Normals come from the cloud (PLY nx ny nz, PCD normal_x normal_y normal_z, ...) unless\n"                                                      \
    "--recompute, or when it has none: then they are estimated as `ptreg normals` does.\n"                                                          \
    "Neighborhoods are those of PCL and Open3D: k-NN counts the point itself, a radius keeps\n"                                                     \
    "points strictly closer than R, and --k N --radius R together keep the N nearest of those\n"                                                    \
    "(Open3D's KDTreeSearchParamHybrid(R, N), the search its tutorials use for FPFH). A point alone in its neighborhood gets an all-zero row (as\n" \
    "from PCL and Open3D); a point whose normal or a neighbor's normal is not finite gets a NaN\n"                                                  \
    "row, counted as missing.\n"                                                                                                                    \
    "On a GPU (--device cuda[:N]|opencl[:N]; estimated normals too) the bins equal the CPU's\n"                                                     \
    "but for float rounding of the FPFH sums and rare pairs at a bin edge; lists of <= 1024.\n\n"                                                   \
    "time_ms counts from the cloud and normals in memory to the descriptors (k-d tree and\n"                                                        \
    "neighborhoods included, normal estimation and file I/O not); with --repeat it is the median.\n\n"                                              \
    "--html FILE: the cloud coloured by each descriptor's Euclidean distance to the mean\n"                                                         \
    "descriptor (how distinctive the point is; points without one in grey), and the JSON."

const cli_command cli_cmd_pfh = CLI_COMMAND_LIBRARY(
    "pfh", "CLOUD [-o OUT] [--k N] [--radius R] [options]",
    "Point feature histograms (PFH, 125 bins) as PCL's PFHEstimation computes them.",
    "Every unordered pair of a point's neighborhood (the point included) adds 100 / pairs to\n"
    "bin theta + 5 alpha + 25 phi of PCL's pair feature (5 bins per feature); rows sum to 100.\n\n" DESCRIPTOR_HELP,
    pfh_options, 1, 1, "features");

const cli_command cli_cmd_fpfh = CLI_COMMAND_LIBRARY(
    "fpfh", "CLOUD [-o OUT] [--k N] [--radius R] [--convention pcl|open3d] [options]",
    "Fast point feature histograms (FPFH, 33 bins) as PCL's FPFHEstimation or Open3D computes them.",
    "SPFH(p): the pairs of p with each neighbor, 11 bins each for theta, alpha and phi.\n"
    "FPFH(p) = sum over neighbors q of SPFH(q) / |p - q|^2, each 11-bin block scaled to sum to\n"
    "100 (--convention pcl); --convention open3d adds SPFH(p), so blocks sum to 200.\n\n" DESCRIPTOR_HELP,
    fpfh_options, 1, 1, "features");

/* --k alone: k-NN; --radius alone: a ball; both: Open3D's hybrid search
 * (the library's k is 30 unless given). */
static int read_neighborhood(const cli_args *a, const char *k_name, const char *r_name, ptreg_neighborhood *nb)
{
    nb->radius = 0.0;
    if (cli_has(a, r_name)) {
        nb->k = 0;
        int rc = cli_double(a, r_name, 1e-30, 1e30, &nb->radius);
        if (rc || !cli_has(a, k_name))
            return rc;
    }
    return cli_size(a, k_name, 1, (size_t)1 << 20, &nb->k);
}

/* The library's options of the command, --radius alone meaning the ball. */
static int read_library_neighborhood(const cli_args *a, void *options, ptreg_neighborhood *nb)
{
    int rc = cli_read_library(a, options);
    if (!rc && cli_has(a, "radius") && !cli_has(a, "k"))
        nb->k = 0;
    return rc;
}

/* k-NN without a radius takes k points of the cloud: a k beyond it is a
 * usage error, named with the cloud's size (with a radius, k only caps). */
static int check_k(const char *cmd, const char *k_name, const ptreg_neighborhood *nb, const char *path, size_t n)
{
    if (nb->radius > 0 || nb->k <= n)
        return EXIT_OK;
    cli_error(cmd, "--%s: %zu is more than the %zu points of %s", k_name, nb->k, n, path);
    return EXIT_USAGE;
}

/* ---- the runs ---- */

/* One computation of --repeat (cli_repeat) into out (and curvature, for
 * normals): what it computes must repeat exactly. */
typedef struct feature_run {
    const ptreg_cloud *c;
    const ptreg_normals_options *normals; /* set: normals; else descriptors */
    const ptreg_features_options *features;
    ptreg_status (*descriptors)(const float *, const float *, size_t, const ptreg_features_options *, float *, size_t *,
                                ptreg_error *);
    int width; /* floats per point of out */
    float *out, *curvature;
    size_t missing;
} feature_run;

static ptreg_status feature_once(void *ctx, double *time_ms, const void **bits, size_t *size, ptreg_error *err)
{
    feature_run *run = ctx;
    const ptreg_cloud *c = run->c;
    double t0 = ptreg_time_ms();
    ptreg_status st = run->normals
                          ? ptreg_normals(c->xyz, c->n, run->normals, run->out, run->curvature, &run->missing, err)
                          : run->descriptors(c->xyz, c->normals, c->n, run->features, run->out, &run->missing, err);
    *time_ms = ptreg_time_ms() - t0;
    *bits = run->out;
    *size = c->n * (size_t)run->width * sizeof *run->out;
    return st;
}

/* Runs --repeat computations into run->out (allocated here) and *times. */
static ptreg_status repeat_runs(feature_run *run, int repeat, double **times, ptreg_error *err)
{
    double median;
    run->out = malloc(run->c->n * (size_t)run->width * sizeof *run->out);
    *times = calloc((size_t)repeat, sizeof **times);
    if (run->normals)
        run->curvature = malloc(run->c->n * sizeof *run->curvature);
    if (!run->out || !*times || (run->normals && !run->curvature))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    return cli_repeat(repeat, feature_once, run, *times, &median, err);
}

/* normals, pfh or fpfh. */
typedef struct feature_kind {
    const cli_command *cmd;
    int bins; /* 0: normals */
    ptreg_status (*descriptors)(const float *, const float *, size_t, const ptreg_features_options *, float *, size_t *,
                                ptreg_error *);
} feature_kind;

/* The command's options: normals' orientation, or the descriptors'
 * convention and --reference (-o's format: cli_begin checks what the
 * option writes). */
static int read_options(const cli_args *a, const feature_kind *kind, ptreg_normals_options *no,
                        ptreg_features_options *fo)
{
    if (kind->bins) {
        if (kind->bins != PTREG_FPFH_BINS && cli_has(a, "convention")) {
            cli_error(kind->cmd->name, "--convention is FPFH's: PFH has one");
            return EXIT_USAGE;
        }
        fo->reference = cli_has(a, "reference");
        return read_library_neighborhood(a, fo, &fo->neighbors);
    }
    int rc = read_library_neighborhood(a, no, &no->neighbors);
    rc = rc ? rc : cli_vec3(a, "direction", no->direction);
    return rc ? rc : cli_vec3(a, "viewpoint", no->viewpoint);
}

/* normals' -o must hold normals, which not every cloud format does:
 * refused before the normals are computed, not after. */
static int check_normals_output(const cli_args *a, const feature_kind *kind)
{
    const char *out = cli_string(a, "output", NULL);
    if (kind->bins || !out || ptreg_format_holds_normals(ptreg_format_from_path(out)))
        return EXIT_OK;
    cli_error("normals", "-o %s: %s files cannot hold normals: write PLY, PCD or text (.xyz .txt .csv .pts)", out,
              ptreg_format_name(ptreg_format_from_path(out)));
    return EXIT_USAGE;
}

static int ensure_normals(const cli_args *a, const char *cmd, const ptreg_device *on, ptreg_cloud *c,
                          const char **source)
{
    int recompute = cli_has(a, "recompute") || !c->normals;
    *source = recompute ? "estimated" : "file";
    if (!recompute)
        return EXIT_OK;
    ptreg_normals_options o;
    ptreg_normals_options_default(&o);
    o.device = *on;
    int rc = read_neighborhood(a, "normal-k", "normal-radius", &o.neighbors);
    rc = rc ? rc : check_k(cmd, "normal-k", &o.neighbors, a->positional[0], c->n);
    rc = rc ? rc : cli_vec3(a, "viewpoint", o.viewpoint);
    if (rc)
        return rc;
    for (int k = 0; k < 3; k++) /* the viewpoint is a place in the world: into the cloud's frame */
        o.viewpoint[k] -= c->origin[k];
    float *normals = malloc(3 * c->n * sizeof *normals);
    ptreg_error err;
    ptreg_status st = normals ? ptreg_normals(c->xyz, c->n, &o, normals, NULL, NULL, &err)
                              : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory for normals");
    if (st) {
        free(normals);
        cli_error(cmd, "%s: %s", a->positional[0], err.message);
        return cli_exit_code(st, 1);
    }
    free(c->normals);
    c->normals = normals;
    if (!cli_quiet(a) && !cli_has(a, "recompute"))
        fprintf(stderr, "ptreg %s: %s has no normals: estimated them (see --normal-k)\n", cmd, a->positional[0]);
    return EXIT_OK;
}


/* FPFH's knobs from `ptreg tune --kernel fpfh [--device]` (unless
 * --no-tune; on the CPU its threads, unless --threads): what ran, for the
 * JSON; NULL with --reference. */
static cJSON *tuned_variant(const cli_args *a, ptreg_features_options *o, size_t n)
{
    if (o->reference)
        return NULL;
    ptreg_tune_choice c;
    ptreg_error err;
    const int use_cache = !cli_has(a, "no-tune") && !cli_library_knob_given(a);
    return cli_tune_adopt(a, ptreg_tune_variant("features", o, n, 0, use_cache, &c, &err), &c);
}

/* The computation's failure: the input's (normals) or the options' (descriptors). */
static int failed(const feature_kind *kind, const char *path, ptreg_status st, const ptreg_error *err)
{
    if (!kind->bins) {
        cli_error("normals", "%s: %s", path, err->message);
        return cli_exit_code(st, 1);
    }
    cli_error(kind->cmd->name, "%s", err->message);
    return st == PTREG_ERR_ARG ? EXIT_USAGE : cli_exit_code(st, 0);
}

/* -o and --html: the cloud with its normals, or the descriptors. */
static int write_outputs(const cli_args *a, const feature_kind *kind, ptreg_cloud *c, feature_run *run)
{
    const char *out = cli_string(a, "output", NULL);
    if (kind->bins) {
        ptreg_error err;
        ptreg_status st = out ? ptreg_descriptors_write(out, run->out, c->n, kind->bins, kind->cmd->name, &err)
                              : PTREG_OK;
        return st ? failed(kind, out, st, &err) : cli_feature_report_descriptors(kind->bins, c, run->out);
    }
    free(c->normals);
    free(c->curvature);
    c->normals = run->out;
    c->curvature = run->curvature;
    run->out = run->curvature = NULL;
    int rc = out ? cli_write_cloud("normals", out, c, cli_has(a, "ascii")) : EXIT_OK;
    return rc ? rc : cli_feature_report_normals(c, c->normals, c->curvature);
}

static int run_features(const feature_kind *kind, int argc, char **argv)
{
    const char *name = kind->cmd->name;
    cli_args a;
    int rc;
    if (!cli_begin(kind->cmd, argc, argv, &a, &rc))
        return rc;
    ptreg_normals_options no;
    ptreg_features_options fo;
    ptreg_normals_options_default(&no);
    ptreg_features_options_default(&fo);
    ptreg_neighborhood *nb = kind->bins ? &fo.neighbors : &no.neighbors;
    int repeat = 1;
    ptreg_device on; /* what auto becomes, for the report */
    ptreg_error err;
    if ((rc = read_options(&a, kind, &no, &fo)) || (rc = cli_int(&a, "repeat", 1, 1000, &repeat)) ||
        (rc = cli_apply_threads(&a)) || (rc = cli_device(&a, kind->bins ? &fo.device : &no.device)) ||
        (rc = cli_device_usable(&a,
                                kind->bins ? ptreg_features_resolve_device(&fo, &on, &err)
                                           : ptreg_normals_resolve_device(&no, &on, &err),
                                &err)) ||
        (rc = cli_report_begin(&a, name)) || (rc = check_normals_output(&a, kind)))
        return rc;
    ptreg_cloud c;
    if ((rc = cli_load_shape(name, a.positional[0], &c, cli_quiet(&a))))
        return rc;
    double viewpoint[3]; /* normals': a place in the world, into the cloud's frame (and back for the JSON) */
    for (int k = 0; k < 3; k++)
        no.viewpoint[k] -= c.origin[k], viewpoint[k] = no.viewpoint[k] + c.origin[k];
    const char *normals = NULL;
    cJSON *variant = NULL;
    rc = check_k(name, "k", nb, a.positional[0], c.n);
    rc = rc || !kind->bins ? rc : ensure_normals(&a, name, &on, &c, &normals);
    if (!rc && kind->bins == PTREG_FPFH_BINS)
        variant = tuned_variant(&a, &fo, c.n);
    feature_run run = {&c, kind->bins ? NULL : &no, &fo, kind->descriptors, kind->bins ? kind->bins : 3, NULL, NULL, 0};
    double *times = NULL;
    ptreg_status st = rc ? PTREG_OK : repeat_runs(&run, repeat, &times, &err);
    rc = rc ? rc : st ? failed(kind, a.positional[0], st, &err) : write_outputs(&a, kind, &c, &run);
    const char *convention = fo.convention == PTREG_FPFH_PCL ? "pcl" : "open3d";
    const feature_report f = {name,
                              a.positional[0],
                              c.n,
                              run.missing,
                              kind->bins,
                              nb,
                              kind->bins ? NULL : viewpoint,
                              kind->bins == PTREG_FPFH_BINS ? convention : NULL,
                              normals,
                              &on,
                              fo.reference,
                              variant,
                              times,
                              repeat};
    rc = rc ? rc : cli_feature_print_report(&a, &f);
    cJSON_Delete(variant);
    free(run.out);
    free(run.curvature);
    free(times);
    ptreg_cloud_free(&c);
    return rc;
}

int cli_run_normals(int argc, char **argv)
{
    static const feature_kind kind = {&cli_cmd_normals, 0, NULL};
    return run_features(&kind, argc, argv);
}

int cli_run_pfh(int argc, char **argv)
{
    static const feature_kind kind = {&cli_cmd_pfh, PTREG_PFH_BINS, ptreg_pfh};
    return run_features(&kind, argc, argv);
}

int cli_run_fpfh(int argc, char **argv)
{
    static const feature_kind kind = {&cli_cmd_fpfh, PTREG_FPFH_BINS, ptreg_fpfh};
    return run_features(&kind, argc, argv);
}
