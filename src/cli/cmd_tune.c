/* ptreg tune: search a kernel's variants on this machine, keep the winner. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "ptreg/device.h"
#include "ptreg/io.h"
#include "ptreg/pair.h"
#include "ptreg/tune.h"

static const cli_option tune_options[] = {
    {"kernel", 0, "K",
     "pair (the EM-ICP E-step's engine; default), harris (3-D Harris), fpfh, or lddmm "
     "(shooting and its adjoint; --device only)"},
    {"size", 0, "N",
     "the problem: pair N x N point pairs (default 20000), harris an N x N x N/2 volume (256), "
     "fpfh N points (50000), lddmm N landmarks (2000); the winner is kept for its size class"},
    {"precision", 0, "P", "fp32 (default) or fp16 (pair only): the pair terms' arithmetic, never changed by tuning"},
    {"csv", 0, "FILE", "write every candidate: parameters, seconds, Gpts/s, error, passed, rounds", "csv"},
    {"plot", 0, "FILE.svg", "draw the rate of every candidate, the winner and the default marked", CLI_WRITES_SVG},
    {"no-save", 0, NULL, "do not keep the winner in the cache"},
    {"threads", 0, "N", "the most threads a candidate may use (default: all cores)"},
    {"device", 0, "DEV",
     "tune the kernels on a GPU (cuda[:N], opencl[:N]): pair and lddmm, the work-group size, "
     "exp and column splits; harris, its method; fpfh, the work-groups (default: the CPU's)"},
    CLI_OPT_QUIET,
    CLI_OPT_JSON,
};

const cli_command cli_cmd_tune = CLI_COMMAND_LIBRARY(
    "tune", "[--kernel pair|harris|fpfh|lddmm] [--size N] [--device DEV] [options]",
    "Search a kernel's variants on this machine and keep the fastest for later commands.",
    "The kernel declares its parameters and the constraints between them as data (for the pair\n"
    "engine: column tile, row block, row vectors, loop order, threads; tiles within the caches,\n"
    "row blocks of whole vector groups, threads <= cores; for harris: threads and rows per\n"
    "tile; for fpfh: threads; on a GPU, work-group sizes within the device's limits and local\n"
    "memory, the exp, column splits, Harris's kernel variant); the valid candidates are enumerated\n"
    "with each constraint tested as soon as its parameters are known. Each candidate runs on the\n"
    "same inputs (a warm-up, then repetitions, the median) and its answer is checked against\n"
    "a reference (the built-in default's output, or the CPU's: normalised error <= 1e-5) before\n"
    "it may win. Small spaces are searched exhaustively; large ones by coordinate descent from\n"
    "the built-in default: every\n"
    "value of one parameter with the others held, the fastest kept, parameter after parameter,\n"
    "sweep after sweep, until a sweep changes nothing or --sample of the space is measured\n"
    "(these kernels' costs are nearly separable in their knobs). --search halving instead\n"
    "samples --sample of the space at random and measures every candidate once, the faster half\n"
    "twice as long, and so on. The built-in default is always a candidate, and at the end the\n"
    "winner and the default are measured in turn three times: the winner must beat the default\n"
    "by 2% there, or the default is kept (one noisy run must not change a command's speed).\n\n"
    "The winner goes into the cache (env PTREG_TUNE_CACHE, else $XDG_CACHE_HOME/ptreg/tune.json,\n"
    "else ~/.cache/ptreg/tune.json; PTREG_TUNE_CACHE=off disables it), per machine (CPU model,\n"
    "threads, instruction set; a GPU's name and driver), kernel and size class (its work rounded\n"
    "to a power of ten). `ptreg emicp`, `ptreg harris3d`, `ptreg fpfh` and (on a GPU) `ptreg\n"
    "lddmm` then use it (their JSON says which variant ran) unless given --no-tune (or, for\n"
    "emicp, engine options). A missing, stale or corrupted\n"
    "cache means the defaults, with a warning.\n"
    "Progress shows on stderr when it is a terminal.",
    tune_options, 0, 0, "tune");

typedef struct tune_job {
    const ptreg_tune_kernel *kernel; /* the library's registry (ptreg_tune_kernels) */
    ptreg_device device;             /* --device: a GPU (the pair engine's device kernels) */
    int on_device;
    size_t n;
    ptreg_tune_space space;
    ptreg_tune_machine machine;
    ptreg_tune_options opt;
    ptreg_tune_result result;
    char size_class[16];
    int tty;
} tune_job;

/* The problem's work (what its size class counts): pairs, voxels or points. */
static double work(const tune_job *j) { return j->kernel->work(j->n); }

static double rate(const tune_job *j, double seconds)
{
    return seconds > 0 ? work(j) * j->kernel->terms / seconds / j->kernel->scale : 0.0;
}

static void progress(void *ctx, size_t done, size_t planned, const double *point, double seconds)
{
    const tune_job *j = ctx;
    fprintf(stderr, "\r  [%zu/~%zu]", done, planned);
    for (int p = 0; p < j->space.param_count; p++)
        fprintf(stderr, " %s=%g", j->space.params[p].name, point[p]);
    fprintf(stderr, ": %.3f ms, %.2f %s   ", seconds * 1e3, rate(j, seconds), j->kernel->unit);
}

static int read_options(const cli_args *a, tune_job *j, ptreg_precision *precision)
{
    const char *kernel = cli_string(a, "kernel", "pair");
    j->kernel = ptreg_tune_kernel_find(kernel);
    if (!j->kernel) {
        cli_error("tune", "--kernel: '%s' is not pair, harris, fpfh or lddmm", kernel);
        return EXIT_USAGE;
    }
    j->n = j->kernel->default_size;
    const char *prec = cli_string(a, "precision", "fp32");
    if (ptreg_precision_parse(prec, precision) || *precision == PTREG_PRECISION_FP64 ||
        (*precision == PTREG_PRECISION_FP16 && strcmp(kernel, "pair"))) {
        cli_error("tune", "--precision: '%s' is not fp32 or, for pair, fp16", prec);
        return EXIT_USAGE;
    }
    int rc = cli_size(a, "size", 16, j->kernel->max_size, &j->n);
    rc = rc ? rc : cli_read_library(a, &j->opt);
    return rc ? rc : cli_apply_threads(a);
}

/* The winner into the tuner's cache (an exit code; a failure is printed). */
static int store_winner(const tune_job *j, double default_seconds)
{
    char path[1024];
    if (!ptreg_tune_cache_path(path, sizeof path)) {
        fprintf(stderr, "ptreg tune: no cache (PTREG_TUNE_CACHE=off, or no HOME): the winner is not kept\n");
        return EXIT_OK;
    }
    if (cli_out_of_memory()) { /* a cache read under memory pressure is no reason to replace it */
        fprintf(stderr, "ptreg tune: out of memory for the cache %s\n", path);
        return EXIT_RUNTIME;
    }
    const ptreg_tune_candidate *best = &j->result.candidates[j->result.best];
    ptreg_error err;
    if (ptreg_tune_cache_store(&j->space, j->machine.name, j->size_class, best->point, best->seconds, default_seconds,
                               &err)) {
        fprintf(stderr, "ptreg tune: cannot write the cache: %s\n", err.message);
        return EXIT_RUNTIME;
    }
    return cli_out_of_memory() ? EXIT_RUNTIME : EXIT_OK;
}

static int write_csv(const char *path, const tune_job *j)
{
    ptreg_atomic_file af;
    ptreg_error err;
    if (ptreg_atomic_open(path, &af, &err)) {
        cli_error("tune", "%s", err.message);
        return EXIT_RUNTIME;
    }
    for (int p = 0; p < j->space.param_count; p++)
        fprintf(af.fp, "%s,", j->space.params[p].name);
    fprintf(af.fp, "seconds,rate,error,passed,reps,rounds,winner,default\n");
    const ptreg_tune_result *r = &j->result;
    for (size_t i = 0; i < r->count; i++) {
        const ptreg_tune_candidate *c = &r->candidates[i];
        for (int p = 0; p < j->space.param_count; p++)
            fprintf(af.fp, "%g,", c->point[p]);
        fprintf(af.fp, "%.9g,%.6g,%.3g,%d,%d,%d,%d,%d\n", c->seconds, rate(j, c->seconds), c->error, c->passed, c->reps,
                c->rounds, i == r->best, i == r->fallback);
    }
    if (ptreg_atomic_commit(&af, &err)) {
        cli_error("tune", "%s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

static const char *method_name(ptreg_tune_method m)
{
    return m == PTREG_TUNE_HALVING      ? "successive halving"
           : m == PTREG_TUNE_COORDINATE ? "coordinate descent"
                                        : "exhaustive";
}

static int measured(const ptreg_tune_candidate *c) { return c->rounds > 0; }

/* A bar per measured candidate, fastest first: its rate, the winner green,
 * the default orange, candidates that failed their check grey. */
static void svg_bars(FILE *f, const tune_job *j, const size_t *order, size_t count, double top)
{
    const double w = 900.0 / (double)(count ? count : 1);
    for (size_t k = 0; k < count; k++) {
        const ptreg_tune_candidate *c = &j->result.candidates[order[k]];
        const double h = top > 0 ? 360.0 * rate(j, c->seconds) / top : 0;
        const char *fill = order[k] == j->result.best       ? "#2a9d3a"
                           : order[k] == j->result.fallback ? "#e08a1e"
                           : c->passed                      ? "#4a74b8"
                                                            : "#aaaaaa";
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>", 60 + k * w,
                420 - h, w > 1.5 ? w - 0.5 : w, h, fill);
        for (int p = 0; p < j->space.param_count; p++)
            fprintf(f, "%s=%g ", j->space.params[p].name, c->point[p]);
        fprintf(f, "%.3f %s</title></rect>\n", rate(j, c->seconds), j->kernel->unit);
    }
}

/* qsort has no context argument: the job being plotted. */
static const tune_job *sort_job;

/* Fastest (fewest seconds) first. */
static int compare_order(const void *a, const void *b)
{
    const double x = sort_job->result.candidates[*(const size_t *)a].seconds,
                 y = sort_job->result.candidates[*(const size_t *)b].seconds;
    return (x > y) - (x < y);
}

static int write_plot(const char *path, const tune_job *j)
{
    size_t *order = malloc((j->result.count + 1) * sizeof *order), count = 0;
    double top = 0;
    for (size_t i = 0; order && i < j->result.count; i++)
        if (measured(&j->result.candidates[i])) {
            order[count++] = i;
            top = fmax(top, rate(j, j->result.candidates[i].seconds));
        }
    sort_job = j;
    if (order)
        qsort(order, count, sizeof *order, compare_order);
    ptreg_atomic_file af;
    ptreg_error err;
    if (!order || ptreg_atomic_open(path, &af, &err)) {
        cli_error("tune", "%s", order ? err.message : "out of memory");
        free(order);
        return EXIT_RUNTIME;
    }
    FILE *f = af.fp;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"480\" font-family=\"sans-serif\" "
               "font-size=\"13\">\n<rect width=\"1000\" height=\"480\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"60\" y=\"24\">ptreg tune %s, size %zu, %s: %zu candidates (%s), %s</text>\n", j->space.kernel,
            j->n, j->machine.name, count, method_name(j->result.method), j->kernel->unit);
    fprintf(f,
            "<line x1=\"58\" y1=\"420\" x2=\"962\" y2=\"420\" stroke=\"black\"/>\n"
            "<line x1=\"58\" y1=\"60\" x2=\"58\" y2=\"420\" stroke=\"black\"/>\n"
            "<text x=\"6\" y=\"64\">%.2f</text><text x=\"6\" y=\"424\">0</text>\n",
            top);
    svg_bars(f, j, order, count, top);
    fprintf(f, "<text x=\"60\" y=\"450\" fill=\"#2a9d3a\">winner</text><text x=\"130\" y=\"450\" "
               "fill=\"#e08a1e\">built-in default</text><text x=\"260\" y=\"450\" fill=\"#aaaaaa\">failed its "
               "check</text><text x=\"400\" y=\"450\">candidates, fastest first</text>\n</svg>\n");
    free(order);
    if (ptreg_atomic_commit(&af, &err)) {
        cli_error("tune", "%s", err.message);
        return EXIT_RUNTIME;
    }
    return EXIT_OK;
}

static cJSON *json_point(const tune_job *j, const ptreg_tune_candidate *c)
{
    cJSON *o = cJSON_CreateObject();
    for (int p = 0; p < j->space.param_count; p++)
        cli_json_number(o, j->space.params[p].name, c->point[p]);
    cli_json_number(o, "seconds", c->seconds);
    cli_json_number(o, "rate", rate(j, c->seconds));
    return o;
}

static int report(const cli_args *a, const tune_job *j)
{
    const ptreg_tune_result *r = &j->result;
    const ptreg_tune_candidate *best = &r->candidates[r->best];
    const ptreg_tune_candidate *def = r->fallback < r->count ? &r->candidates[r->fallback] : NULL;
    const double gain = def && measured(def) && best->seconds > 0 ? def->seconds / best->seconds : 0.0;
    if (cli_has(a, "json")) {
        cJSON *o = cJSON_CreateObject();
        cli_json_string(o, "command", "tune");
        cli_json_string(o, "kernel", j->space.kernel);
        cli_json_string(o, "rate_unit", j->kernel->unit);
        cli_json_string(o, "machine", j->machine.name);
        cli_json_number(o, "size", (double)j->n);
        cli_json_string(o, "size_class", j->size_class);
        cli_json_string(o, "search", ptreg_tune_method_name(r->method));
        cli_json_number(o, "space_points", r->stats.full);
        cli_json_number(o, "valid_points", r->stats.valid);
        cli_json_number(o, "nodes_visited", r->stats.visited);
        cli_json_number(o, "candidates", (double)r->count);
        cli_json_number(o, "measurements", (double)r->measurements);
        cli_json_number(o, "seconds", r->elapsed_s);
        cli_json_put(o, "winner", json_point(j, best));
        if (def)
            cli_json_put(o, "default", json_point(j, def));
        cli_json_number(o, "speedup_over_default", gain);
        cli_json_number(o, "confirmed_gain", r->gain);
        cli_json_bool(o, "default_kept", r->default_kept);
        cli_json_string(o, "version", ptreg_version());
        return cli_json_print(o);
    }
    printf("ptreg tune %s: size %zu on %s\n", j->space.kernel, j->n, j->machine.name);
    printf("  space: %.0f points, %.0f valid (%.0f tree nodes visited); %s over %zu candidates, %zu measurements, "
           "%.1f s\n",
           r->stats.full, r->stats.valid, r->stats.visited, method_name(r->method), r->count, r->measurements,
           r->elapsed_s);
    printf("  winner: ");
    for (int p = 0; p < j->space.param_count; p++)
        printf("%s=%g ", j->space.params[p].name, best->point[p]);
    printf("%.3f ms, %.2f %s\n", best->seconds * 1e3, rate(j, best->seconds), j->kernel->unit);
    if (def && measured(def) && r->default_kept)
        printf("  the built-in default kept: the search's winner was %.3fx it over %d alternating rounds, under "
               "the %.2fx a change must show\n",
               r->gain, j->opt.confirm, j->opt.min_gain);
    else if (def && measured(def))
        printf("  built-in default: %.3f ms, %.2f %s: the winner is %.2fx (confirmed over %d alternating rounds)\n",
               def->seconds * 1e3, rate(j, def->seconds), j->kernel->unit, gain, j->opt.confirm);
    return EXIT_OK;
}

static int run_search(tune_job *j, ptreg_precision precision)
{
    void *job = NULL;
    ptreg_error err;
    ptreg_status st = j->kernel->job_create(j->on_device ? &j->device : NULL, j->n, precision, &job, &err);
    if (!st) {
        if (j->tty) {
            j->opt.progress = progress;
            j->opt.progress_ctx = j;
        }
        st = ptreg_tune_search(&j->space, &j->machine, j->kernel->measure, job, &j->opt, &j->result, &err);
        if (j->tty)
            fprintf(stderr, "\n");
    }
    j->kernel->job_destroy(job);
    if (!st && j->result.best == j->result.count)
        st = ptreg_error_set(&err, PTREG_ERR_RUNTIME, "no candidate passed its check");
    if (st) {
        cli_error("tune", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

/* --device: the CPU (the default), or a GPU for the pair engine's device
 * kernels. */
static int device_of(const cli_args *a, tune_job *j)
{
    if (!cli_has(a, "device"))
        return EXIT_OK;
    ptreg_device on;
    ptreg_error err;
    int rc = cli_device(a, &j->device);
    rc = rc ? rc
            : cli_device_usable(a, ptreg_device_resolve(&j->device, ~0u /* every backend */, "tune", &on, &err), &err);
    j->on_device = !rc && on.backend != PTREG_BACKEND_CPU;
    j->device = j->on_device ? on : j->device;
    return rc;
}

int cli_run_tune(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_tune, argc, argv, &a, &rc))
        return rc;
    tune_job j;
    memset(&j, 0, sizeof j);
    ptreg_tune_options_default(&j.opt);
    ptreg_precision precision = PTREG_PRECISION_FP32;
    if ((rc = read_options(&a, &j, &precision)))
        return rc;
    j.tty = isatty(2) && !cli_quiet(&a);
    if ((rc = device_of(&a, &j)))
        return rc;
    if (!j.on_device && !j.kernel->space) {
        cli_error("tune", "--kernel %s: its tunable kernels run on a GPU; give --device", j.kernel->name);
        return EXIT_USAGE;
    }
    (j.on_device ? j.kernel->device_space : j.kernel->space)(&j.space);
    if (precision == PTREG_PRECISION_FP16 && !strcmp(j.kernel->name, "pair"))
        j.space.kernel = j.on_device ? "pair-device-fp16" : "pair-fp16"; /* kept apart from fp32's winners */
    ptreg_error err;
    ptreg_status st = j.on_device ? ptreg_tune_machine_device(&j.device, &j.machine, &err) : PTREG_OK;
    st = st || !j.on_device ? st : ptreg_tune_space_on_device(&j.space, &j.device, &err);
    if (st) {
        cli_error("tune", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    if (!j.on_device)
        ptreg_tune_machine_cpu(&j.machine);
    ptreg_tune_size_class(work(&j), j.size_class, sizeof j.size_class);
    rc = run_search(&j, precision);
    const ptreg_tune_result *r = &j.result;
    const double def_s = r->fallback < r->count ? r->candidates[r->fallback].seconds : 0.0;
    if (!rc && cli_has(&a, "csv"))
        rc = write_csv(cli_string(&a, "csv", NULL), &j);
    if (!rc && cli_has(&a, "plot"))
        rc = write_plot(cli_string(&a, "plot", NULL), &j);
    if (!rc && !cli_has(&a, "no-save"))
        rc = store_winner(&j, def_s);
    if (!rc)
        rc = report(&a, &j);
    ptreg_tune_result_free(&j.result);
    return rc;
}
