/* Multiway registration's graph (multiway.h): the registered pairs' best
 * spanning tree places the scans and makes the certain edges, every other
 * pair is a loop closure the line process may drop; the graph solved, then
 * the joint refinement. The entry points. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/icp/icp_impl.h"
#include "reg/multiway/multiway_impl.h"

typedef struct mw_run {
    const ptreg_multiway_scan *scans;
    size_t count;
    const multiway_prepared *p;
    const ptreg_scan_pair *pairs;
    size_t n;
    double *records;    /* n x MW_RECORD */
    int *tree;          /* n: an edge of the spanning tree (certain) */
    int *kept;          /* n: an edge of the solved graph */
    int *pruned;        /* n: the line process removed it: out of every later solve */
    double *confidence; /* n: its line-process confidence */
    int from_graph;     /* the records came from a caller's graph: no fitness to judge them by */
    ptreg_multiway_options opt;
    double voxel, dist;
    const ptreg_ranks *ranks;
} mw_run;

static int usable(const mw_run *r, size_t k)
{
    const double *rec = r->records + k * MW_RECORD;
    /* The tree's edges stay: a joint round cannot disconnect a scan. */
    return rec[MW_VALID] == 1.0 && !(r->pruned && r->pruned[k]) &&
           (r->from_graph || r->tree[k] || (rec[MW_FITNESS] >= r->opt.min_fitness && rec[MW_SHARP] >= MW_MIN_SHARP));
}

static size_t root_of(size_t *parent, size_t i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

/* A pair's weight for the tree: its overlap, discounted by the share of it
 * off the surface. */
static double weight(const mw_run *r, size_t k)
{
    return r->records[k * MW_RECORD + MW_FITNESS] * r->records[k * MW_RECORD + MW_SHARP];
}

static int heavier(const mw_run *r, size_t x, size_t y)
{
    const double fx = weight(r, x), fy = weight(r, y);
    return fx > fy || (fx == fy && x < y);
}

/* Insertion sort, heaviest first: a handful of pairs per scan, and no
 * shared state as qsort's comparison would need. */
static void sort_by_weight(const mw_run *r, size_t *order, size_t m)
{
    for (size_t i = 1; i < m; i++) {
        const size_t k = order[i];
        size_t j = i;
        for (; j > 0 && heavier(r, k, order[j - 1]); j--)
            order[j] = order[j - 1];
        order[j] = k;
    }
}

/* Kruskal's maximum spanning tree by weight (ties: the earlier pair):
 * the surest pairs place the scans, so one wrong pair cannot, unlike
 * consecutive scans taken as odometry whatever their overlap. */
static ptreg_status spanning_tree(mw_run *r, ptreg_error *err)
{
    size_t *order = malloc((r->n ? r->n : 1) * sizeof *order), *parent = malloc(r->count * sizeof *parent), m = 0;
    if (!order || !parent) {
        free(order), free(parent);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for the spanning tree");
    }
    for (size_t k = 0; k < r->n; k++)
        if (usable(r, k))
            order[m++] = k;
    sort_by_weight(r, order, m);
    for (size_t i = 0; i < r->count; i++)
        parent[i] = i;
    for (size_t j = 0; j < m; j++) {
        const size_t k = order[j];
        const size_t a = root_of(parent, r->pairs[k].source), b = root_of(parent, r->pairs[k].target);
        if (a == b)
            continue;
        parent[a < b ? b : a] = a < b ? a : b; /* the lower root stays: the same tree every run */
        r->tree[k] = 1;
    }
    free(order), free(parent);
    return PTREG_OK;
}

/* Which scans usable edges join to the anchor, and (with first_poses) their
 * poses composed along the tree's edges: x_anchor = pose[t] x_t = pose[t] T x_s. */
static void place(const mw_run *r, int first_poses, double *poses, int *placed)
{
    memset(placed, 0, r->count * sizeof *placed);
    placed[r->opt.anchor] = 1;
    if (first_poses)
        ptreg_transform_identity(poses + 16 * r->opt.anchor);
    for (int grew = 1; grew;) {
        grew = 0;
        for (size_t k = 0; k < r->n; k++) {
            const size_t s = r->pairs[k].source, t = r->pairs[k].target;
            if (!usable(r, k) || placed[s] == placed[t] || (first_poses && !r->tree[k]))
                continue;
            const double *T = r->records + k * MW_RECORD;
            if (first_poses && placed[t]) {
                ptreg_transform_mul(poses + 16 * t, T, poses + 16 * s);
            } else if (first_poses) {
                double inv[16];
                ptreg_transform_invert_rigid(T, inv);
                ptreg_transform_mul(poses + 16 * s, inv, poses + 16 * t);
            }
            placed[s] = placed[t] = 1;
            grew = 1;
        }
    }
    for (size_t i = 0; first_poses && i < r->count; i++)
        if (!placed[i])
            ptreg_transform_identity(poses + 16 * i);
}

/* The graph of the placed scans (node ids in scan order) and the usable
 * edges between them. */
static ptreg_status build_graph(const mw_run *r, const double *poses, const int *placed, size_t *node_of,
                                ptreg_pose_graph *g, ptreg_error *err)
{
    size_t nodes = 0, edges = 0;
    for (size_t i = 0; i < r->count; i++)
        node_of[i] = placed[i] ? nodes++ : SIZE_MAX;
    for (size_t k = 0; k < r->n; k++)
        edges += usable(r, k) && placed[r->pairs[k].source];
    ptreg_status st = ptreg_pose_graph_alloc(g, nodes, edges, err);
    for (size_t i = 0; !st && i < r->count; i++)
        if (placed[i])
            memcpy(g->nodes + 16 * node_of[i], poses + 16 * i, 16 * sizeof *poses);
    for (size_t k = 0, e = 0; !st && k < r->n; k++) {
        if (!usable(r, k) || !placed[r->pairs[k].source])
            continue;
        const double *rec = r->records + k * MW_RECORD;
        ptreg_pose_edge *ge = &g->edges[e];
        ge->source = node_of[r->pairs[k].source];
        ge->target = node_of[r->pairs[k].target];
        memcpy(ge->transformation, rec, 16 * sizeof *rec);
        memcpy(ge->information, rec + 16, 36 * sizeof *rec);
        ge->uncertain = !r->tree[k];
        ge->confidence = 1.0;
        e++;
    }
    return st;
}

/* Which candidates survived the solve (the graph removes pruned edges; the
 * pairs are distinct, so (source, target) finds each), and the poses in
 * the anchor's frame. */
static void read_solution(mw_run *r, const ptreg_pose_graph *g, const size_t *node_of, double *poses, const int *placed)
{
    memset(r->kept, 0, r->n * sizeof *r->kept);
    for (size_t k = 0; k < r->n; k++)
        r->confidence[k] = 0.0;
    for (size_t e = 0, k = 0; e < g->edge_count; e++) {
        while (k < r->n && !(usable(r, k) && node_of[r->pairs[k].source] == g->edges[e].source &&
                             node_of[r->pairs[k].target] == g->edges[e].target))
            k++;
        if (k < r->n)
            r->kept[k] = 1, r->confidence[k] = g->edges[e].confidence;
    }
    double inv[16];
    ptreg_transform_invert_rigid(g->nodes + 16 * node_of[r->opt.anchor], inv);
    for (size_t i = 0; i < r->count; i++)
        if (placed[i])
            ptreg_transform_mul(inv, g->nodes + 16 * node_of[i], poses + 16 * i);
}

static ptreg_status solve(mw_run *r, double *poses, const int *placed, ptreg_pose_graph *g, ptreg_error *err)
{
    size_t *node_of = malloc(r->count * sizeof *node_of);
    ptreg_status st = node_of ? PTREG_OK
                              : ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for the graph");
    ptreg_pose_graph_free(g);
    st = st ? st : build_graph(r, poses, placed, node_of, g, err);
    ptreg_pose_graph_options go = r->opt.graph;
    go.max_dist = go.max_dist > 0.0 ? go.max_dist : r->dist;
    if (!st)
        go.reference_node = node_of[r->opt.anchor];
    ptreg_pose_graph_result gr;
    st = st || !g->edge_count ? st : ptreg_pose_graph_optimize(g, &go, &gr, err);
    if (!st) {
        read_solution(r, g, node_of, poses, placed);
        for (size_t k = 0; k < r->n; k++)
            r->pruned[k] |= usable(r, k) && placed[r->pairs[k].source] && !r->kept[k];
    }
    free(node_of);
    return st;
}

/* Each kept edge's ICP again from the solved poses (its new record judged
 * as the first: a loop closure the ICP now fits worse leaves the graph). */
static ptreg_status joint_round(mw_run *r, const double *poses, ptreg_error *err)
{
    double *starts = malloc((r->n ? r->n : 1) * 16 * sizeof *starts);
    double *fresh = malloc((r->n ? r->n : 1) * MW_RECORD * sizeof *fresh);
    ptreg_status st = starts && fresh ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory");
    for (size_t k = 0; !st && k < r->n; k++) {
        double inv[16];
        ptreg_transform_invert_rigid(poses + 16 * r->pairs[k].target, inv);
        ptreg_transform_mul(inv, poses + 16 * r->pairs[k].source, starts + 16 * k);
        if (!r->kept[k])
            starts[16 * k] = NAN;
    }
    st = st ? st
            : multiway_register_pairs(r->p, r->pairs, r->n, &r->opt, r->voxel, r->dist, starts, r->ranks, fresh, err);
    if (!st)
        r->from_graph = 0; /* each kept edge now has its ICP's fitness */
    for (size_t k = 0; !st && k < r->n; k++)
        if (r->kept[k]) /* the others keep their first record: why they were dropped */
            memcpy(r->records + k * MW_RECORD, fresh + k * MW_RECORD, MW_RECORD * sizeof *fresh);
    free(starts), free(fresh);
    return st;
}

static ptreg_status fill_result(const mw_run *r, double *poses, int *placed, ptreg_pose_graph *g,
                                ptreg_multiway_result *res, ptreg_error *err)
{
    res->scan_count = r->count;
    res->poses = poses, res->placed = placed;
    res->edge_count = r->n;
    res->voxel = r->voxel;
    res->edges = calloc(r->n ? r->n : 1, sizeof *res->edges);
    if (!res->edges)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for the result");
    for (size_t k = 0; k < r->n; k++) {
        ptreg_multiway_edge *e = &res->edges[k];
        const double *rec = r->records + k * MW_RECORD;
        e->source = r->pairs[k].source, e->target = r->pairs[k].target;
        memcpy(e->transformation, rec, sizeof e->transformation);
        if (rec[MW_VALID] != 1.0)
            ptreg_transform_identity(e->transformation);
        e->fitness = rec[MW_VALID] == 1.0 && !r->from_graph ? rec[MW_FITNESS] : -1.0;
        e->rmse = rec[MW_VALID] == 1.0 && !r->from_graph ? rec[MW_RMSE] : -1.0;
        e->surface = rec[MW_VALID] == 1.0 && !r->from_graph ? rec[MW_SHARP] : -1.0;
        e->uncertain = !r->tree[k];
        e->kept = r->kept[k];
        e->confidence = r->confidence[k];
    }
    /* The graph in scan numbers: every scan a node, each kept edge. */
    ptreg_status st = ptreg_pose_graph_alloc(&res->graph, r->count, g->edge_count, err);
    if (!st)
        memcpy(res->graph.nodes, poses, r->count * 16 * sizeof *poses);
    for (size_t k = 0, e = 0; !st && k < r->n; k++) {
        if (!r->kept[k])
            continue;
        ptreg_pose_edge *ge = &res->graph.edges[e++];
        const double *rec = r->records + k * MW_RECORD;
        ge->source = r->pairs[k].source, ge->target = r->pairs[k].target;
        memcpy(ge->transformation, rec, 16 * sizeof *rec);
        memcpy(ge->information, rec + 16, 36 * sizeof *rec);
        ge->uncertain = !r->tree[k];
        ge->confidence = r->confidence[k];
    }
    return st;
}

/* From the records: the first poses, the solve, the joint rounds. */
static ptreg_status run_graph(mw_run *r, const double *given_poses, ptreg_multiway_result *res, ptreg_error *err)
{
    double *poses = calloc(r->count * 16, sizeof *poses);
    int *placed = calloc(r->count, sizeof *placed);
    r->tree = calloc(r->n ? r->n : 1, sizeof *r->tree);
    r->kept = calloc(r->n ? r->n : 1, sizeof *r->kept);
    r->confidence = calloc(r->n ? r->n : 1, sizeof *r->confidence);
    r->pruned = calloc(r->n ? r->n : 1, sizeof *r->pruned);
    ptreg_pose_graph g;
    ptreg_pose_graph_init(&g);
    ptreg_status st = poses && placed && r->tree && r->kept && r->confidence && r->pruned
                          ? PTREG_OK
                          : ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu scans", r->count);
    if (!st && given_poses) {
        double inv[16];
        ptreg_transform_invert_rigid(given_poses + 16 * r->opt.anchor, inv);
        for (size_t i = 0; i < r->count; i++)
            ptreg_transform_mul(inv, given_poses + 16 * i, poses + 16 * i);
        for (size_t k = 0; k < r->n; k++)
            r->tree[k] = r->records[k * MW_RECORD + MW_FITNESS] > 0.0; /* the caller's certain edges */
        place(r, 0, poses, placed);
    } else if (!st) {
        st = spanning_tree(r, err);
        place(r, 1, poses, placed);
    }
    double t = ptreg_time_ms();
    st = st ? st : solve(r, poses, placed, &g, err);
    res->graph_ms = ptreg_time_ms() - t;
    t = ptreg_time_ms();
    for (int round = 0; !st && round < r->opt.joint_refine; round++) {
        st = joint_round(r, poses, err);
        st = st ? st : solve(r, poses, placed, &g, err);
    }
    res->joint_ms = ptreg_time_ms() - t;
    st = st ? st : fill_result(r, poses, placed, &g, res, err);
    ptreg_pose_graph_free(&g);
    free(r->tree), free(r->kept), free(r->confidence), free(r->pruned);
    if (st) {
        free(poses), free(placed);
        res->poses = NULL, res->placed = NULL;
    }
    return st;
}

/* ---- the entry points ---- */

static ptreg_status check_inputs(const ptreg_multiway_scan *scans, size_t count, const ptreg_multiway_options *opt,
                                 const ptreg_ranks *ranks, ptreg_error *err)
{
    if (!scans || count < 2)
        return ptreg_error_set(err, PTREG_ERR_ARG, "multiway: %zu scans: at least 2 are needed", count);
    ptreg_status st = ptreg_options_check(ptreg_multiway_option_table(), opt, err);
    if (st)
        return st;
    if (opt->anchor >= count)
        return ptreg_error_set(err, PTREG_ERR_ARG, "multiway: anchor %zu: there are %zu scans", opt->anchor, count);
    for (size_t i = 0; i < count; i++) {
        char what[64];
        snprintf(what, sizeof what, "multiway: scan %zu", i);
        if ((st = ptreg_check_shape(what, scans[i].xyz, scans[i].n, err)))
            return st;
    }
    if (ranks && (ranks->size < 1 || ranks->rank < 0 || ranks->rank >= ranks->size ||
                  (ranks->size > 1 && (!ranks->max_of_all || !ranks->sum_doubles))))
        return ptreg_error_set(err, PTREG_ERR_ARG, "multiway: rank %d of %d without max_of_all and sum_doubles",
                               ranks->rank, ranks->size);
    return PTREG_OK;
}

static double voxel_of(const ptreg_multiway_scan *scans, const ptreg_multiway_options *opt)
{
    if (opt->voxel > 0.0)
        return opt->voxel;
    double centre[3], d2;
    icp_target_extent(scans[0].xyz, scans[0].n, centre, &d2);
    return sqrt(d2) / 80.0;
}

static ptreg_status begin(const ptreg_multiway_scan *scans, size_t count, const ptreg_multiway_options *opt_in,
                          const ptreg_ranks *ranks, mw_run *r, ptreg_multiway_result *res, ptreg_error *err)
{
    memset(res, 0, sizeof *res);
    ptreg_pose_graph_init(&res->graph);
    memset(r, 0, sizeof *r);
    if (opt_in)
        r->opt = *opt_in;
    else
        ptreg_multiway_options_default(&r->opt);
    ptreg_status st = check_inputs(scans, count, &r->opt, ranks, err);
    if (st)
        return st;
    r->scans = scans, r->count = count, r->ranks = ranks && ranks->size > 1 ? ranks : NULL;
    r->voxel = voxel_of(scans, &r->opt);
    if (!(r->voxel > 0.0) || !isfinite(r->voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG, "multiway: scan 0 has no extent to scale a voxel by");
    r->dist = r->opt.refine_dist > 0.0 ? r->opt.refine_dist : 1.5 * r->voxel;
    return PTREG_OK;
}

ptreg_status ptreg_multiway(const ptreg_multiway_scan *scans, size_t count, const ptreg_scan_pair *pairs,
                            size_t pair_count, const ptreg_multiway_options *opt, const ptreg_ranks *ranks,
                            ptreg_multiway_result *res, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    mw_run r;
    ptreg_status st = begin(scans, count, opt, ranks, &r, res, err);
    if (st)
        return st;
    for (size_t k = 0; pairs && k < pair_count; k++)
        if (pairs[k].source >= count || pairs[k].target >= count || pairs[k].source == pairs[k].target)
            return ptreg_error_set(err, PTREG_ERR_ARG,
                                   "multiway: pair %zu (%zu, %zu): scans are 0 to %zu, two "
                                   "different",
                                   k, pairs[k].source, pairs[k].target, count - 1);
    multiway_prepared *p = NULL;
    ptreg_scan_pair *cand = NULL;
    double t = ptreg_time_ms();
    st = multiway_prepare(scans, count, r.voxel, 1, &p, err);
    res->prepare_ms = ptreg_time_ms() - t;
    t = ptreg_time_ms();
    if (!st && pairs) {
        cand = malloc((pair_count ? pair_count : 1) * sizeof *cand);
        if (!cand)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu pairs", pair_count);
        else
            memcpy(cand, pairs, pair_count * sizeof *cand), r.n = pair_count;
    } else if (!st) {
        st = multiway_candidates(p, count, r.opt.pair_neighbors, &cand, &r.n, err);
    }
    r.p = p, r.pairs = cand;
    r.records = st ? NULL : malloc((r.n ? r.n : 1) * MW_RECORD * sizeof *r.records);
    if (!st && !r.records)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu pairs", r.n);
    st = st ? st : multiway_register_pairs(p, cand, r.n, &r.opt, r.voxel, r.dist, NULL, r.ranks, r.records, err);
    res->pairs_ms = ptreg_time_ms() - t;
    st = st ? st : run_graph(&r, NULL, res, err);
    multiway_prepared_free(p, count);
    free(cand), free(r.records);
    res->total_ms = ptreg_time_ms() - t0;
    if (st)
        ptreg_multiway_result_free(res);
    return st;
}

ptreg_status ptreg_multiway_graph(const ptreg_multiway_scan *scans, size_t count, const ptreg_pose_graph *graph,
                                  const ptreg_multiway_options *opt, const ptreg_ranks *ranks,
                                  ptreg_multiway_result *res, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    mw_run r;
    ptreg_status st = begin(scans, count, opt, ranks, &r, res, err);
    st = st ? st : ptreg_pose_graph_check(graph, err);
    if (!st && graph->node_count != count)
        st = ptreg_error_set(err, PTREG_ERR_ARG, "multiway: the pose graph has %zu nodes for %zu scans",
                             graph->node_count, count);
    if (st)
        return st;
    ptreg_scan_pair *cand = malloc((graph->edge_count ? graph->edge_count : 1) * sizeof *cand);
    r.records = calloc((graph->edge_count ? graph->edge_count : 1) * MW_RECORD, sizeof *r.records);
    multiway_prepared *p = NULL;
    if (!cand || !r.records)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "multiway: out of memory for %zu edges", graph->edge_count);
    for (size_t k = 0; !st && k < graph->edge_count; k++) {
        const ptreg_pose_edge *e = &graph->edges[k];
        double *rec = r.records + k * MW_RECORD;
        cand[k] = (ptreg_scan_pair){e->source, e->target};
        memcpy(rec, e->transformation, 16 * sizeof *rec);
        memcpy(rec + 16, e->information, 36 * sizeof *rec);
        rec[MW_FITNESS] = e->uncertain ? 0.0 : 1.0; /* certain edges make the tree */
        rec[MW_VALID] = 1.0;
        rec[MW_SHARP] = 1.0;
    }
    r.n = graph->edge_count, r.pairs = cand, r.from_graph = 1;
    double t = ptreg_time_ms();
    st = st || !r.opt.joint_refine ? st : multiway_prepare(scans, count, r.voxel, 0, &p, err);
    res->prepare_ms = ptreg_time_ms() - t;
    r.p = p;
    st = st ? st : run_graph(&r, graph->nodes, res, err);
    multiway_prepared_free(p, count);
    free(cand), free(r.records);
    res->total_ms = ptreg_time_ms() - t0;
    if (st)
        ptreg_multiway_result_free(res);
    return st;
}
