/* ptreg index: build a model's k-d tree and Delaunay graph once and save
 * them as a .pti file for `ptreg icp --target-index`. Also how `ptreg info`
 * describes such a file. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/progress.h"
#include "ptreg/device.h"
#include "ptreg/icp.h"
#include "ptreg/nn.h"

static const cli_option index_options[] = {
    {"output", 'o', "FILE", "the index file to write (.pti)", "pti"},
    {"no-delaunay", 0, NULL, "build the k-d tree only (no Delaunay-walk methods)"},
    {"tune", 0, NULL,
     "measure the nearest-neighbor methods on this model and store the fastest "
     "for 'icp --nn auto'"},
    {"tune-repeat", 0, "N", "timed ICP runs per method when tuning, median kept (default 5)"},
    {"tune-sample", 0, "N", "model points in the tuning queries (default 40000; all when fewer)"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_JSON,
    CLI_OPT_QUIET,
};

const cli_command cli_cmd_index = CLI_COMMAND_LIBRARY(
    "index", "MODEL -o MODEL.pti [options]\n       ptreg index MODEL.pti -o MODEL.pti --tune [options]",
    "Build a model's search index (k-d tree and Delaunay graph) once, for many registrations.",
    "The model is the point set every sensed cloud is registered onto, known in advance.\n"
    "The index holds its k-d tree and its 3-D Delaunay triangulation (Qhull) as a graph,\n"
    "which the exact Delaunay-walk nearest-neighbor methods follow. Exact duplicate\n"
    "points are merged in the graph; a model Qhull cannot triangulate (fewer than 5\n"
    "distinct points, all coplanar or collinear) gets a k-d tree only, and the reason is\n"
    "printed. Use it with 'ptreg icp SOURCE --target-index MODEL.pti'; 'ptreg info\n"
    "MODEL.pti' describes a saved index. Format: docs/FORMATS.md.\n\n"
    "--tune first measures the k-d tree's leaf size (16 to 256, unless --leaf-size is given;\n"
    "the default 256 kept unless another is 2% faster), then which exact nearest-neighbor\n"
    "method is fastest on this model, on\n"
    "this machine, with these threads: a sample of the model's own points (--tune-sample),\n"
    "noisy and moved by a small rigid motion (fixed seed), is registered onto the model by\n"
    "30-iteration ICP runs with the k-d tree, brute force (small models only) and each\n"
    "Delaunay walk; one warm-up run each (a method over 3x the fastest warm-up is not\n"
    "repeated), then --tune-repeat interleaved timed runs, median kept. A method must give\n"
    "the k-d tree's result bits to win. The winner and the times are stored in the index,\n"
    "and 'ptreg icp --nn auto' on it runs the winner (its JSON says \"nn_auto\": \"measured\";\n"
    "--no-tune there keeps the built-in rule). MODEL may be a saved .pti, to tune it again\n"
    "without rebuilding. Tuning takes a few seconds for 40k points.",
    index_options, 1, 1, "index");

int cli_is_index_path(const char *path)
{
    size_t len = strlen(path);
    return len >= 4 && !strcasecmp(path + len - 4, ".pti");
}

int cli_load_index(const char *cmd, const char *path, ptreg_model_index **index)
{
    ptreg_error err;
    int rc = cli_frame_at_zero(cmd, path);
    if (rc)
        return rc;
    ptreg_status st = ptreg_model_index_load(path, index, &err);
    if (st) {
        cli_error(cmd, "%s", err.message);
        return cli_exit_code(st, 1);
    }
    return EXIT_OK;
}

cJSON *cli_json_index(const ptreg_model_index *index)
{
    ptreg_model_index_info info;
    ptreg_model_index_get_info(index, &info);
    cJSON *o = cJSON_CreateObject();
    if (!info.has_delaunay)
        cli_json_string(o, "delaunay_note", info.delaunay_note);
    cli_json_result(o, ptreg_result_table_find("model_index_info"), &info);
    ptreg_index_nn_tuning t;
    ptreg_model_index_get_nn_tuning(index, &t);
    if (t.method)
        cli_json_string(o, "nn_measured", ptreg_nn_method_name((ptreg_nn_method)t.method));
    else
        cli_json_null(o, "nn_measured");
    return o;
}

/* The stored measurement, one line per measured method. */
static void print_tuning(const char *indent, const ptreg_model_index *index)
{
    ptreg_index_nn_tuning t;
    ptreg_model_index_get_nn_tuning(index, &t);
    if (!t.method) {
        printf("%snearest neighbors not measured ('ptreg index --tune'): auto follows its rule\n", indent);
        return;
    }
    printf("%snearest neighbors measured (%zu queries, %d ICP iterations, %d threads, median of %d): "
           "auto runs %s\n",
           indent, t.queries, t.iterations, t.threads, t.repeat, ptreg_nn_method_name((ptreg_nn_method)t.method));
    for (int m = 1; m < PTREG_INDEX_NN_SLOTS; m++)
        if (t.median_ms[m] >= 0.0)
            printf("%s  %-16s %9.2f ms%s\n", indent, ptreg_nn_method_name((ptreg_nn_method)m), t.median_ms[m],
                   m == t.method ? "  <- chosen" : "");
}

void cli_print_index(const char *indent, const ptreg_model_index *index)
{
    ptreg_model_index_info info;
    ptreg_model_index_get_info(index, &info);
    printf("%s%zu model points; k-d tree built in %.2f ms\n", indent, info.points, info.kdtree_ms);
    if (info.has_delaunay)
        printf("%sDelaunay graph built in %.1f ms: %zu edges (%.1f per point), %zu duplicate points merged\n", indent,
               info.delaunay_ms, info.delaunay_edges / 2,
               (double)info.delaunay_edges / (double)(info.points - info.duplicates), info.duplicates);
    else
        printf("%sno Delaunay graph: %s\n", indent, info.delaunay_note);
    print_tuning(indent, index);
}

int cli_describe_index(const char *path, int json)
{
    ptreg_model_index *index;
    int rc = cli_load_index("info", path, &index);
    if (rc)
        return rc;
    if (json) {
        cJSON *o = cli_json_index(index);
        cli_json_string(o, "file", path);
        rc = cli_json_print(o);
    } else {
        printf("%s: ptreg model index\n", path);
        cli_print_index("  ", index);
    }
    ptreg_model_index_destroy(index);
    return rc;
}

/* The index to save: built from a cloud, or a saved one read back (to be
 * tuned again without the seconds of a Delaunay build). */
static int get_index(const cli_args *a, const char *path, const ptreg_index_options *opt, int tune, ptreg_cloud *model,
                     ptreg_model_index **index)
{
    if (cli_is_index_path(path)) {
        if (!tune) {
            cli_error("index", "%s is an index already: give a cloud, or --tune to measure it again", path);
            return EXIT_USAGE;
        }
        return cli_load_index("index", path, index);
    }
    int rc = cli_load_shape("index", path, model, 0);
    if (rc)
        return rc;
    if (model->origin[0] != 0.0 || model->origin[1] != 0.0 || model->origin[2] != 0.0) {
        /* an index holds float32 points and no origin: they would lose their place in the world */
        cli_error("index",
                  "%s: the cloud is far from zero (origin %.17g %.17g %.17g): an index file keeps no "
                  "origin yet; give the cloud itself to icp or track",
                  path, model->origin[0], model->origin[1], model->origin[2]);
        return EXIT_BAD_INPUT;
    }
    ptreg_error err;
    cli_progress progress;
    cli_progress_begin(&progress, a, "index", "stage", "build ms");
    ptreg_index_options with_progress = *opt;
    with_progress.progress = cli_progress_hook(&progress);
    ptreg_status st = ptreg_model_index_create(model->xyz, model->n, &with_progress, index, &err);
    cli_progress_end(&progress, a, 0);
    if (st) {
        cli_error("index", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

/* What a --tune run found beyond what the index keeps (cli_print_index
 * shows the times and the choice): the methods not repeated, any whose
 * result differed. */
static void print_report(const char *indent, const ptreg_nn_tune_report *r)
{
    printf("%stuned in %.1f s", indent, r->total_ms / 1000.0);
    for (int m = 1; m < PTREG_INDEX_NN_SLOTS; m++) {
        if (r->median_ms[m] >= 0.0 && r->differs[m])
            printf("; %s gave other result bits than the k-d tree (a bug): excluded",
                   ptreg_nn_method_name((ptreg_nn_method)m));
        else if (r->median_ms[m] >= 0.0 && !r->runs[m])
            printf("; %s: its warm-up time (over 3x the fastest: not repeated)",
                   ptreg_nn_method_name((ptreg_nn_method)m));
    }
    printf("\n");
}

static cJSON *json_report(const ptreg_nn_tune_report *r)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "choice", ptreg_nn_method_name(r->choice));
    cli_json_number(o, "queries", (double)r->queries);
    cli_json_number(o, "iterations", r->iterations);
    cli_json_number(o, "threads", r->threads);
    cli_json_number(o, "total_ms", r->total_ms);
    cJSON *methods = cli_json_object(o, "methods");
    for (int m = 1; m < PTREG_INDEX_NN_SLOTS; m++) {
        if (r->median_ms[m] < 0.0)
            continue;
        cJSON *x = cli_json_object(methods, ptreg_nn_method_name((ptreg_nn_method)m));
        cli_json_number(x, "median_ms", r->median_ms[m]);
        cli_json_number(x, "runs", r->runs[m]);
        cli_json_bool(x, "pruned", r->runs[m] == 0);
        cli_json_bool(x, "same_bits", !r->differs[m]);
    }
    return o;
}

/* --tune from a cloud without --leaf-size: the k-d tree's leaf size
 * measured first (ptreg_model_index_tune_leaf), into opt. */
static int tune_leaf(const char *path, const ptreg_nn_tune_options *topt, ptreg_index_options *opt,
                     int sizes[PTREG_LEAF_CANDIDATES], double ms[PTREG_LEAF_CANDIDATES])
{
    ptreg_cloud model;
    ptreg_cloud_init(&model);
    int rc = cli_load_shape("index", path, &model, 1);
    if (rc)
        return rc;
    ptreg_error err;
    ptreg_status st = ptreg_model_index_tune_leaf(model.xyz, model.n, topt, &opt->leaf_size, sizes, ms, &err);
    ptreg_cloud_free(&model);
    if (st) {
        cli_error("index", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return EXIT_OK;
}

int cli_run_index(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_index, argc, argv, &a, &rc))
        return rc;
    ptreg_index_options opt;
    ptreg_index_options_default(&opt);
    opt.delaunay = !cli_has(&a, "no-delaunay");
    ptreg_device device;
    if ((rc = cli_read_library(&a, &opt)) || (rc = cli_apply_threads(&a)) || (rc = cli_device(&a, &device)))
        return rc;
    if (device.backend != PTREG_BACKEND_AUTO && device.backend != PTREG_BACKEND_CPU) {
        cli_error("index", "--device %s: the index is built on the CPU only (icp uploads it to a GPU)",
                  cli_string(&a, "device", ""));
        return EXIT_USAGE;
    }
    if ((rc = cli_require(&a, "output", "the output file: -o MODEL.pti")))
        return rc;
    const char *out = cli_string(&a, "output", NULL);
    ptreg_nn_tune_options topt;
    ptreg_nn_tune_options_default(&topt);
    int tune = cli_has(&a, "tune"), sample = (int)topt.sample;
    if ((rc = cli_int(&a, "tune-repeat", 1, 1000, &topt.repeat)) ||
        (rc = cli_int(&a, "tune-sample", 1, 1 << 30, &sample)))
        return rc;
    topt.sample = (size_t)sample;
    ptreg_cloud model;
    ptreg_cloud_init(&model);
    ptreg_model_index *index = NULL;
    int sizes[PTREG_LEAF_CANDIDATES] = {0}, leaf_tuned = 0;
    double leaf_ms[PTREG_LEAF_CANDIDATES];
    if (tune && !cli_has(&a, "leaf-size") && !cli_is_index_path(a.positional[0]) &&
        (rc = tune_leaf(a.positional[0], &topt, &opt, sizes, leaf_ms)))
        return rc;
    leaf_tuned = sizes[0] != 0;
    if ((rc = get_index(&a, a.positional[0], &opt, tune, &model, &index))) {
        ptreg_cloud_free(&model);
        return rc;
    }
    ptreg_error err;
    ptreg_nn_tune_report report;
    ptreg_status st = tune ? ptreg_model_index_tune(index, NULL, 0, &topt, &report, &err) : PTREG_OK;
    if (!st)
        st = ptreg_model_index_save(index, out, &err);
    if (st) {
        cli_error("index", "%s", err.message);
        rc = cli_exit_code(st, 0);
    } else {
        struct stat sb;
        double bytes = stat(out, &sb) == 0 ? (double)sb.st_size : -1.0;
        if (cli_has(&a, "json")) {
            cJSON *o = cli_json_index(index);
            cli_json_string(o, "command", "index");
            cli_json_string(o, "model", a.positional[0]);
            cli_json_string(o, "output", out);
            cli_json_number(o, "file_bytes", bytes);
            cli_json_number(o, "threads", ptreg_get_num_threads());
            if (tune)
                cli_json_put(o, "tune", json_report(&report));
            if (leaf_tuned) {
                cJSON *l = cli_json_object(o, "leaf_tune");
                cli_json_number(l, "choice", opt.leaf_size);
                for (int c = 0; c < PTREG_LEAF_CANDIDATES; c++) {
                    char key[16];
                    snprintf(key, sizeof key, "%d", sizes[c]);
                    cli_json_number(l, key, leaf_ms[c]);
                }
            }
            cli_json_string(o, "version", ptreg_version());
            rc = cli_json_print(o);
        } else {
            printf("ptreg index: %s -> %s (%.1f MB)\n", a.positional[0], out, bytes / 1e6);
            cli_print_index("  ", index);
            if (tune)
                print_report("  ", &report);
            if (leaf_tuned) {
                printf("  k-d tree leaf size %d, measured (k-d tree ICP ms:", opt.leaf_size);
                for (int c = 0; c < PTREG_LEAF_CANDIDATES; c++)
                    printf(" %d: %.1f", sizes[c], leaf_ms[c]);
                printf("; another size than the default 256 only when 2%% faster)\n");
            }
        }
    }
    ptreg_model_index_destroy(index);
    ptreg_cloud_free(&model);
    return rc;
}
