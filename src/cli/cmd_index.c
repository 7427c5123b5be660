/* ptreg index: build a model's k-d tree and Delaunay graph once and save
 * them as a .pti file for `ptreg icp --target-index`. Also how `ptreg info`
 * describes such a file. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli/common.h"

static const cli_option index_options[] = {
    {"output", 'o', "FILE", "the index file to write (.pti)"},
    {"no-delaunay", 0, NULL, "build the k-d tree only (no Delaunay-walk methods)"},
    {"leaf-size", 0, "N", "most points in a k-d tree leaf, 4..256 (default 256)"},
    {"threads", 0, "N", "threads (default: all cores, or env PTREG_NUM_THREADS)"},
    CLI_DEVICE_OPTION,
    {"json", 0, NULL, "print what was built as one JSON object on stdout"},
};

const cli_command cli_cmd_index = {
    "index",
    "MODEL -o MODEL.pti [options]",
    "Build a model's search index (k-d tree and Delaunay graph) once, for many registrations.",
    "The model is the point set every sensed cloud is registered onto, known in advance.\n"
    "The index holds its k-d tree and its 3-D Delaunay triangulation (Qhull) as a graph,\n"
    "which the exact Delaunay-walk nearest-neighbour methods follow. Exact duplicate\n"
    "points are merged in the graph; a model Qhull cannot triangulate (fewer than 5\n"
    "distinct points, all coplanar or collinear) gets a k-d tree only, and the reason is\n"
    "printed. Use it with 'ptreg icp SOURCE --target-index MODEL.pti'; 'ptreg info\n"
    "MODEL.pti' describes a saved index. Format: docs/FORMATS.md.",
    index_options,
    sizeof index_options / sizeof index_options[0],
    1,
    1,
};

int cli_is_index_path(const char *path)
{
    size_t len = strlen(path);
    return len >= 4 && !strcasecmp(path + len - 4, ".pti");
}

int cli_load_index(const char *cmd, const char *path, ptreg_model_index **index)
{
    ptreg_error err;
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
    cJSON_AddNumberToObject(o, "points", (double)info.points);
    cJSON_AddBoolToObject(o, "delaunay", info.has_delaunay);
    cJSON_AddNumberToObject(o, "duplicates_merged", (double)info.duplicates);
    cJSON_AddNumberToObject(o, "delaunay_edges", (double)info.delaunay_edges);
    if (!info.has_delaunay)
        cJSON_AddStringToObject(o, "delaunay_note", info.delaunay_note);
    cJSON_AddNumberToObject(o, "kdtree_ms", info.kdtree_ms);
    cJSON_AddNumberToObject(o, "delaunay_ms", info.delaunay_ms);
    cJSON_AddNumberToObject(o, "build_ms", info.kdtree_ms + info.delaunay_ms);
    return o;
}

void cli_print_index(const char *indent, const ptreg_model_index *index)
{
    ptreg_model_index_info info;
    ptreg_model_index_get_info(index, &info);
    printf("%s%zu model points; k-d tree built in %.2f ms\n", indent, info.points, info.kdtree_ms);
    if (info.has_delaunay)
        printf("%sDelaunay graph built in %.1f ms: %zu edges (%.1f per point), %zu duplicate points merged\n",
               indent, info.delaunay_ms, info.delaunay_edges / 2,
               (double)info.delaunay_edges / (double)(info.points - info.duplicates), info.duplicates);
    else
        printf("%sno Delaunay graph: %s\n", indent, info.delaunay_note);
}

int cli_describe_index(const char *path, int json)
{
    ptreg_model_index *index;
    int rc = cli_load_index("info", path, &index);
    if (rc)
        return rc;
    if (json) {
        cJSON *o = cli_json_index(index);
        cJSON_AddStringToObject(o, "file", path);
        rc = cli_json_print(o);
    } else {
        printf("%s: ptreg model index\n", path);
        cli_print_index("  ", index);
    }
    ptreg_model_index_destroy(index);
    return rc;
}

int cli_run_index(int argc, char **argv)
{
    cli_args a;
    int rc = cli_parse(&cli_cmd_index, argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    ptreg_index_options opt;
    ptreg_index_options_default(&opt);
    opt.delaunay = !cli_has(&a, "no-delaunay");
    ptreg_device device;
    if ((rc = cli_int(&a, "leaf-size", 4, 256, &opt.leaf_size)) || (rc = cli_apply_threads(&a)) ||
        (rc = cli_device(&a, CLI_CPU_ONLY, "index (built on the CPU; ICP uploads it)", &device)))
        return rc;
    const char *out = cli_string(&a, "output", NULL);
    if (!out) {
        cli_error("index", "give the output file: -o MODEL.pti");
        return EXIT_USAGE;
    }
    ptreg_cloud model;
    if ((rc = cli_load_cloud("index", a.positional[0], &model, 0)))
        return rc;
    ptreg_model_index *index = NULL;
    ptreg_error err;
    ptreg_status st = ptreg_model_index_create(model.xyz, model.n, &opt, &index, &err);
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
            cJSON_AddStringToObject(o, "command", "index");
            cJSON_AddStringToObject(o, "model", a.positional[0]);
            cJSON_AddStringToObject(o, "output", out);
            cJSON_AddNumberToObject(o, "file_bytes", bytes);
            cJSON_AddNumberToObject(o, "threads", ptreg_get_num_threads());
            cJSON_AddStringToObject(o, "version", ptreg_version());
            rc = cli_json_print(o);
        } else {
            printf("ptreg index: %s -> %s (%.1f MB)\n", a.positional[0], out, bytes / 1e6);
            cli_print_index("  ", index);
        }
    }
    ptreg_model_index_destroy(index);
    ptreg_cloud_free(&model);
    return rc;
}
