/* ptreg multiway: many scans into one frame (multiway.h). Under mpirun the
 * candidate pairs are shared among the ranks; rank 0 writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/device_arg.h"
#include "cli/files.h"
#include "cli/json.h"
#include "cli/mpi.h"
#include "cli/report.h"
#include "ptreg/io.h"
#include "ptreg/multiway.h"

static const cli_option multiway_options[] = {
    {"output", 'o', "FILE", "write each scan's pose into the anchor's frame (4x4 per scan, text)", "txt"},
    {"merged", 0, "FILE", "write every placed scan moved into the anchor's frame as one cloud", CLI_WRITES_CLOUD},
    {"merged-voxel", 0, "V", "downsample the merged cloud by a voxel grid of cube V (default: every point)"},
    {"pairs", 0, "FILE", "the candidate pairs: 'i j' per line, 0-based scan numbers (scan i onto scan j)"},
    {"pose-graph", 0, "FILE",
     "read a pose graph (Open3D's JSON) and solve it instead of registering pairs: its "
     "nodes are the first poses, its edges the pairs"},
    {"pose-graph-out", 0, "FILE", "write the solved pose graph (Open3D's JSON layout)", "json"},
    {"truth", 0, "FILE", "known poses (4x4 per scan, any common frame): report each scan's error"},
    CLI_OPT_THREADS,
    CLI_DEVICE_OPTION,
    CLI_OPT_QUIET,
    CLI_OPT_ASCII,
    CLI_OPT_JSON,
    CLI_OPT_HTML,
};

const cli_command cli_cmd_multiway = CLI_COMMAND_LIBRARY(
    "multiway", "SCAN... [options]", "Register many scans of one object into the frame of one of them (a pose graph).",
    "Every scan is downsampled by a voxel grid (cube V), with normals and FPFH as 'ptreg\n"
    "register' makes them. Each candidate pair (every pair; --pair-neighbors K: each scan's\n"
    "K most similar by mean descriptor and its successor; or --pairs FILE) is registered by\n"
    "RANSAC (or FGR) over mutual feature matches, then ICP (--method, within 1.5V) on the\n"
    "two scans' centroids. A pair is no edge when its fitness both ways (the smaller share\n"
    "of either scan within 1.5V of the other) is below --min-fitness, or when under half of\n"
    "its pairs lie within 1.5V/8 of the target's surface (a wrong pose that overlaps). The\n"
    "spanning tree of the best pairs (Kruskal by fitness x that share) places every scan\n"
    "and makes the certain edges; the other pairs are loop closures. Each edge carries\n"
    "Open3D's information matrix; the pose graph is solved by Levenberg-Marquardt with a\n"
    "line process that drops wrong loop closures (Open3D's GlobalOptimization, factored by\n"
    "CHOLMOD), the anchor fixed. Then the joint refinement: every kept edge's ICP again on\n"
    "centroids of V/2 cubes, from the solved poses, within 0.75V then 0.375V, and the graph\n"
    "solved again. A scan no kept edge reaches is reported lost (identity pose). The same\n"
    "output for any thread count; under mpirun (a build with MPI) the pairs are shared\n"
    "among the ranks with the same output bytes, rank 0 writing.",
    multiway_options, 2, CLI_MAX_POSITIONAL, "multiway");

typedef struct multiway_inputs {
    ptreg_cloud *clouds;
    ptreg_multiway_scan *scans;
    size_t count;
    ptreg_scan_pair *pairs;
    size_t pair_count;
    ptreg_pose_graph graph;
    int have_graph;
    double *truth;
    double merged_voxel; /* --merged-voxel, 0 when not given (a cube of 0 is no grid: leave the option out) */
} multiway_inputs;

static void inputs_free(multiway_inputs *in)
{
    for (size_t i = 0; in->clouds && i < in->count; i++)
        ptreg_cloud_free(&in->clouds[i]);
    free(in->clouds), free(in->scans), free(in->pairs), free(in->truth);
    ptreg_pose_graph_free(&in->graph);
}

static int no_memory(void)
{
    cli_error("multiway", "out of memory");
    return EXIT_RUNTIME;
}

static int fail(ptreg_status st, const ptreg_error *err)
{
    cli_error("multiway", "%s", err->message);
    return cli_exit_code(st, 1);
}

static int read_pairs(const char *path, multiway_inputs *in)
{
    size_t *ij = NULL, n = 0;
    ptreg_error err;
    ptreg_status st = ptreg_index_pairs_read(path, in->count, &ij, &n, &err);
    if (st)
        return fail(st, &err);
    in->pairs = malloc((n ? n : 1) * sizeof *in->pairs);
    for (size_t k = 0; in->pairs && k < n; k++)
        in->pairs[k] = (ptreg_scan_pair){ij[2 * k], ij[2 * k + 1]};
    free(ij);
    in->pair_count = n;
    return in->pairs ? EXIT_OK : no_memory();
}

static int read_truth(const char *path, multiway_inputs *in)
{
    size_t n = 0;
    ptreg_error err;
    ptreg_status st = ptreg_poses_read(path, &in->truth, &n, &err);
    if (st)
        return fail(st, &err);
    if (n != in->count) {
        cli_error("multiway", "%s: %zu poses for %zu scans", path, n, in->count);
        return EXIT_BAD_INPUT;
    }
    for (size_t i = 0; i < n; i++) /* compared in the scans' frame: errors at the data, not at the world's zero */
        cli_transform_to_local(in->truth + 16 * i, in->truth + 16 * i);
    return EXIT_OK;
}

static int read_inputs(const cli_args *a, multiway_inputs *in)
{
    in->count = (size_t)a->positional_count;
    in->clouds = calloc(in->count, sizeof *in->clouds);
    in->scans = calloc(in->count, sizeof *in->scans);
    if (!in->clouds || !in->scans)
        return no_memory();
    for (size_t i = 0; i < in->count; i++) {
        int rc = cli_load_shape("multiway", a->positional[i], &in->clouds[i], 1);
        if (rc)
            return rc;
        in->scans[i] = (ptreg_multiway_scan){in->clouds[i].xyz, in->clouds[i].normals, in->clouds[i].n};
    }
    int rc = cli_has(a, "pairs") ? read_pairs(cli_string(a, "pairs", NULL), in) : EXIT_OK;
    rc = rc || !cli_has(a, "truth") ? rc : read_truth(cli_string(a, "truth", NULL), in);
    if (!rc && cli_has(a, "pose-graph")) {
        ptreg_error err;
        const char *path = cli_string(a, "pose-graph", NULL);
        ptreg_status st = ptreg_pose_graph_read_json(path, &in->graph, &err);
        if (st)
            return fail(st, &err);
        if (in->graph.node_count != in->count) { /* the library's own check cannot name the file */
            cli_error("multiway", "%s: %zu nodes for %zu scans", path, in->graph.node_count, in->count);
            return EXIT_BAD_INPUT;
        }
        in->have_graph = 1;
    }
    return rc;
}

/* Scan i's pose error against the truth, both taken relative to the anchor. */
static void truth_error(const multiway_inputs *in, const ptreg_multiway_result *r, size_t anchor, size_t i,
                        double *angle_deg, double *translation)
{
    double inv[16], rel[16];
    ptreg_transform_invert_rigid(in->truth + 16 * anchor, inv);
    ptreg_transform_mul(inv, in->truth + 16 * i, rel);
    ptreg_transform_difference(rel, r->poses + 16 * i, angle_deg, translation);
}

static int write_merged(const cli_args *a, const multiway_inputs *in, const ptreg_multiway_result *r)
{
    ptreg_cloud all, down;
    ptreg_cloud_init(&down);
    ptreg_error err;
    ptreg_status st = ptreg_multiway_merge(in->scans, in->count, r, &all, &err);
    if (!st)
        memcpy(all.origin, in->clouds[0].origin, sizeof all.origin);
    const double voxel = in->merged_voxel;
    int rc = st ? fail(st, &err) : EXIT_OK;
    if (!rc && voxel > 0.0 && (st = ptreg_voxel_downsample(&all, voxel, &down, &err)))
        rc = fail(st, &err);
    if (!rc)
        rc = cli_write_cloud("multiway", cli_string(a, "merged", NULL), voxel > 0.0 ? &down : &all,
                             cli_has(a, "ascii"));
    ptreg_cloud_free(&all), ptreg_cloud_free(&down);
    return rc;
}

static ptreg_status write_world_poses(const char *path, const cli_args *a, const ptreg_multiway_result *r,
                                      ptreg_error *err)
{
    double *world = malloc(16 * r->scan_count * sizeof *world);
    if (!world)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < r->scan_count; i++)
        cli_transform_to_world(r->poses + 16 * i, world + 16 * i);
    ptreg_status st = ptreg_poses_write(path, world, r->scan_count, (const char *const *)a->positional, err);
    free(world);
    return st;
}

static int write_outputs(const cli_args *a, const multiway_inputs *in, const ptreg_multiway_result *r)
{
    ptreg_error err;
    ptreg_status st = PTREG_OK;
    if (cli_has(a, "output"))
        st = write_world_poses(cli_string(a, "output", NULL), a, r, &err);
    if (!st && cli_has(a, "pose-graph-out"))
        st = ptreg_pose_graph_write_json(cli_string(a, "pose-graph-out", NULL), &r->graph, &err);
    if (st) {
        cli_error("multiway", "%s", err.message);
        return cli_exit_code(st, 0);
    }
    return cli_has(a, "merged") ? write_merged(a, in, r) : EXIT_OK;
}

static size_t count_kept(const ptreg_multiway_result *r)
{
    size_t k = 0;
    for (size_t e = 0; e < r->edge_count; e++)
        k += r->edges[e].kept != 0;
    return k;
}

static void print_human(const cli_args *a, const multiway_inputs *in, const ptreg_multiway_options *o,
                        const ptreg_multiway_result *r)
{
    printf("ptreg multiway: %zu scans, anchor %zu (%s), %d threads\n", r->scan_count, o->anchor,
           a->positional[o->anchor], ptreg_get_num_threads());
    printf("  voxel %g; %zu candidate pairs, %zu edges kept\n", r->voxel, r->edge_count, count_kept(r));
    for (size_t e = 0; e < r->edge_count; e++) {
        const ptreg_multiway_edge *x = &r->edges[e];
        printf("  %3zu -> %-3zu fitness %.4f surface %.3f rmse %.6g %s%s", x->source, x->target, x->fitness, x->surface,
               x->rmse, x->kept ? "kept" : "dropped", x->uncertain ? " (loop closure" : " (tree");
        printf(x->uncertain ? ", confidence %.3f)\n" : ")\n", x->confidence);
    }
    for (size_t i = 0; i < r->scan_count; i++) {
        printf("  scan %zu %s%s", i, a->positional[i], r->placed[i] ? "" : " LOST");
        if (in->truth) {
            double ang, tr;
            truth_error(in, r, o->anchor, i, &ang, &tr);
            printf(": error %.4f deg, %.6g", ang, tr);
        }
        printf("\n");
    }
    printf("  time %.1f ms: prepare %.1f, pairs %.1f, graph %.1f, joint refinement %.1f\n", r->total_ms, r->prepare_ms,
           r->pairs_ms, r->graph_ms, r->joint_ms);
}

static cJSON *json_scans(const cli_args *a, const multiway_inputs *in, const ptreg_multiway_options *o,
                         const ptreg_multiway_result *r)
{
    cJSON *scans = cJSON_CreateArray();
    for (size_t i = 0; scans && i < r->scan_count; i++) {
        cJSON *s = cJSON_CreateObject();
        cli_json_string(s, "file", a->positional[i]);
        cli_json_number(s, "points", (double)in->clouds[i].n);
        cli_json_bool(s, "placed", r->placed[i]);
        cli_json_put(s, "pose", cli_json_world_matrix(r->poses + 16 * i));
        if (in->truth) {
            double ang, tr;
            truth_error(in, r, o->anchor, i, &ang, &tr);
            cli_json_number(s, "rotation_error_deg", ang);
            cli_json_number(s, "translation_error", tr);
        }
        cli_json_push(scans, s);
    }
    return scans;
}

static int print_json(const cli_args *a, const multiway_inputs *in, const ptreg_multiway_options *o,
                      const ptreg_multiway_result *r)
{
    cJSON *j = cJSON_CreateObject();
    cli_json_string(j, "command", "multiway");
    cli_json_number(j, "anchor", (double)o->anchor);
    cli_json_put(j, "scans", json_scans(a, in, o, r));
    cli_json_result(j, ptreg_result_table_find("multiway"), r);
    cli_json_number(j, "threads", ptreg_get_num_threads());
    cli_json_string(j, "version", ptreg_version());
    return cli_json_print(j);
}

/* A placed scan in the anchor's frame, a colour each; its centre into c. */
static ptreg_status report_scan(ptreg_report *rep, const cli_args *a, const multiway_inputs *in,
                                const ptreg_multiway_result *r, size_t i, double c[3], ptreg_error *err)
{
    const ptreg_cloud *cloud = &in->clouds[i];
    float *moved = cli_moved(cloud->xyz, cloud->n, r->poses + 16 * i);
    if (!moved)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    c[0] = c[1] = c[2] = 0.0;
    for (size_t k = 0; k < cloud->n; k++)
        for (int d = 0; d < 3; d++)
            c[d] += moved[3 * k + d] / (double)cloud->n;
    char name[300];
    snprintf(name, sizeof name, "scan %zu: %s", i, a->positional[i]);
    ptreg_status st = ptreg_report_add_cloud(rep, name, moved, cloud->n, cli_report_palette(i), err);
    free(moved);
    return st;
}

/* The candidate pairs as lines between the scans' centres: the solved
 * graph's edges, and apart the pairs it left out. */
static ptreg_status report_edges(ptreg_report *rep, const ptreg_multiway_result *r, const double *centres,
                                 ptreg_error *err)
{
    float *lines = malloc((r->edge_count ? r->edge_count : 1) * 6 * sizeof *lines);
    if (!lines)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    ptreg_status st = PTREG_OK;
    for (int kept = 1; kept >= 0 && !st; kept--) {
        size_t n = 0;
        for (size_t e = 0; e < r->edge_count; e++) {
            const ptreg_multiway_edge *edge = &r->edges[e];
            if (edge->kept != kept || !r->placed[edge->source] || !r->placed[edge->target])
                continue;
            for (int d = 0; d < 3; d++)
                lines[6 * n + d] = (float)centres[3 * edge->source + d],
                              lines[6 * n + 3 + d] = (float)centres[3 * edge->target + d];
            n++;
        }
        st = ptreg_report_add_lines(rep, kept ? "graph edges kept" : "pairs left out", lines,
                                    n, /* black, magenta: not scan colours */
                                    kept ? 0x000000u : 0xff00ffu, err);
    }
    free(lines);
    return st;
}

/* --html: every placed scan in the anchor's frame and the pose graph. */
static int report_multiway(const cli_args *a, const multiway_inputs *in, const ptreg_multiway_result *r)
{
    ptreg_report *rep = cli_report();
    if (!rep)
        return EXIT_OK;
    ptreg_error err;
    double *centres = calloc(3 * in->count, sizeof *centres);
    ptreg_status st = centres ? PTREG_OK : ptreg_error_set(&err, PTREG_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < in->count; i++)
        if (r->placed[i])
            st = report_scan(rep, a, in, r, i, centres + 3 * i, &err);
    st = st ? st : report_edges(rep, r, centres, &err);
    free(centres);
    return cli_report_check(st, &err);
}

static int run_multiway(const cli_args *a, cli_comm *comm)
{
    ptreg_multiway_options o;
    ptreg_multiway_options_default(&o);
    int rc = cli_read_library(a, &o);
    rc = rc ? rc : cli_device_cpu_only(a, "multiway");
    rc = rc ? rc : cli_apply_threads(a);
    if (!rc && o.anchor >= (size_t)a->positional_count) {
        cli_error("multiway", "--anchor %zu: there are %d scans", o.anchor, a->positional_count);
        rc = EXIT_USAGE;
    }
    if (!rc && cli_has(a, "pose-graph") && cli_has(a, "pairs")) {
        cli_error("multiway", "--pose-graph brings its own pairs: --pairs is not taken with it");
        rc = EXIT_USAGE;
    }
    if (!rc && cli_has(a, "pair-neighbors") && (cli_has(a, "pairs") || cli_has(a, "pose-graph"))) {
        cli_error("multiway", "--%s gives the pairs: --pair-neighbors is not taken with it",
                  cli_has(a, "pairs") ? "pairs" : "pose-graph");
        rc = EXIT_USAGE;
    }
    multiway_inputs in;
    memset(&in, 0, sizeof in);
    ptreg_pose_graph_init(&in.graph);
    rc = rc ? rc : cli_double(a, "merged-voxel", 1e-30, 1e30, &in.merged_voxel); /* told before the run */
    if (!rc && cli_has(a, "merged-voxel") && !cli_has(a, "merged")) {
        cli_error("multiway", "--merged-voxel downsamples the --merged cloud: give --merged FILE");
        rc = EXIT_USAGE;
    }
    if (!rc && comm->rank == 0)
        rc = cli_report_begin(a, "multiway"); /* rank 0 writes */
    rc = rc ? rc : read_inputs(a, &in);
    ptreg_multiway_result r;
    memset(&r, 0, sizeof r);
    if (!rc) {
        const ptreg_ranks ranks = cli_comm_ranks(comm);
        ptreg_error err;
        ptreg_status st = in.have_graph
                              ? ptreg_multiway_graph(in.scans, in.count, &in.graph, &o, &ranks, &r, &err)
                              : ptreg_multiway(in.scans, in.count, in.pairs, in.pair_count, &o, &ranks, &r, &err);
        rc = st ? fail(st, &err) : EXIT_OK;
    }
    if (!rc && comm->rank == 0) {
        rc = write_outputs(a, &in, &r);
        rc = rc ? rc : report_multiway(a, &in, &r);
        if (!rc && (cli_has(a, "json") || cli_report()))
            rc = print_json(a, &in, &o, &r);
        if (!rc && !cli_has(a, "json"))
            print_human(a, &in, &o, &r);
    }
    ptreg_multiway_result_free(&r);
    inputs_free(&in);
    return rc;
}

int cli_run_multiway(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_multiway, argc, argv, &a, &rc))
        return rc;
    cli_comm comm;
    if ((rc = cli_comm_open(&comm)))
        return rc;
    rc = run_multiway(&a, &comm);
    return cli_comm_close(&comm, cli_comm_agree(&comm, rc));
}
