/* Pose graphs (posegraph.h): the graph's memory, its check and the
 * options' defaults. The solver is posegraph_lm.c, the files
 * posegraph_json.c, the information matrix posegraph_info.c. */
#include "ptreg/posegraph.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "reg/posegraph/posegraph_impl.h"
#include "core/numeric.h"

void ptreg_pose_graph_init(ptreg_pose_graph *g)
{
    if (g)
        memset(g, 0, sizeof *g);
}

ptreg_status ptreg_pose_graph_alloc(ptreg_pose_graph *g, size_t nodes, size_t edges, ptreg_error *err)
{
    if (!g)
        return ptreg_error_set(err, PTREG_ERR_ARG, "pose graph: no graph");
    ptreg_pose_graph_init(g);
    if (nodes > SIZE_MAX / (16 * sizeof(double)) || edges > SIZE_MAX / sizeof(ptreg_pose_edge))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: %zu nodes and %zu edges are too many", nodes, edges);
    double *n = malloc((nodes ? nodes : 1) * 16 * sizeof *n);
    ptreg_pose_edge *e = calloc(edges ? edges : 1, sizeof *e);
    if (!n || !e) {
        free(n);
        free(e);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "pose graph: out of memory for %zu nodes and %zu edges", nodes,
                               edges);
    }
    for (size_t i = 0; i < nodes; i++)
        ptreg_transform_identity(n + 16 * i);
    for (size_t k = 0; k < edges; k++)
        e[k].confidence = 1.0;
    g->nodes = n;
    g->edges = e;
    g->node_count = nodes;
    g->edge_count = edges;
    return PTREG_OK;
}

void ptreg_pose_graph_free(ptreg_pose_graph *g)
{
    if (!g)
        return;
    free(g->nodes);
    free(g->edges);
    ptreg_pose_graph_init(g);
}

static const ptreg_option_name solver_names[] = {
    {"cholmod", PTREG_POSE_SOLVER_CHOLMOD}, {"dense", PTREG_POSE_SOLVER_DENSE}, {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_pose_graph_options, solver);
static const ptreg_option pose_graph_rows[] = {
    OPTION_FIELD(ptreg_pose_graph_options, max_dist, NULL, DOUBLE, 0, DBL_MAX, PTREG_OPTION_OPEN_LO, "D",
                 "the scans' max correspondence distance: sets the line process's weight (Open3D's)"),
    OPTION_FIELD(ptreg_pose_graph_options, edge_prune_threshold, NULL, DOUBLE, 0, 1, 0, "T",
                 "uncertain edges whose confidence ends at or below T are removed"),
    OPTION_FIELD(ptreg_pose_graph_options, preference_loop_closure, NULL, DOUBLE, 0, DBL_MAX, 0, "W",
                 "the weight of loop closures against odometry"),
    OPTION_FIELD(ptreg_pose_graph_options, max_iter, NULL, INT, 0, INT_MAX, 0, "N",
                 "Levenberg-Marquardt iterations of each solve; 0: none"),
    OPTION_ENUM(ptreg_pose_graph_options, solver, "solver", NULL, solver_names, 0,
                "cholmod: sparse Cholesky (SuiteSparse); dense: the reference")};
OPTION_TABLE(ptreg_pose_graph_option_table, "pose graph", ptreg_pose_graph_options, ptreg_pose_graph_options_default,
             pose_graph_rows)

void ptreg_pose_graph_options_default(ptreg_pose_graph_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->max_dist = 0.075;
    opt->edge_prune_threshold = 0.25;
    opt->preference_loop_closure = 1.0;
    opt->reference_node = 0;
    opt->max_iter = 100;
    opt->solver = PTREG_POSE_SOLVER_CHOLMOD;
}

/* Symmetric to rounding: |a_ij - a_ji| within 1e-9 of the largest entry. */
static int information_symmetric(const double *I)
{
    double big = 0;
    for (int k = 0; k < 36; k++)
        big = fmax(big, fabs(I[k]));
    for (int r = 0; r < 6; r++)
        for (int c = r + 1; c < 6; c++)
            if (fabs(I[6 * r + c] - I[6 * c + r]) > 1e-9 * big)
                return 0;
    return 1;
}

ptreg_status pose_graph_check_named(const char *name, const ptreg_pose_graph *g, ptreg_error *err)
{
    const char *sep = name ? ": " : "";
    name = name ? name : "";
    if (!g || (g->node_count && !g->nodes) || (g->edge_count && !g->edges))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s%spose graph: no nodes or edges array", name, sep);
    for (size_t i = 0; i < g->node_count; i++)
        if (!ptreg_transform_is_rigid(g->nodes + 16 * i, PTREG_RIGID_TOL))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s%snode %zu: pose is not rigid (rigidity error %.3g)", name,
                                   sep, i, ptreg_transform_rigidity_error(g->nodes + 16 * i));
    for (size_t k = 0; k < g->edge_count; k++) {
        const ptreg_pose_edge *e = &g->edges[k];
        if (e->source >= g->node_count || e->target >= g->node_count)
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s%sedge %zu: %s node %zu of %zu nodes", name, sep, k,
                                   e->source >= g->node_count ? "source" : "target",
                                   e->source >= g->node_count ? e->source : e->target, g->node_count);
        if (!ptreg_transform_is_rigid(e->transformation, PTREG_RIGID_TOL))
            return ptreg_error_set(err, PTREG_ERR_FORMAT,
                                   "%s%sedge %zu: transformation is not rigid (rigidity error %.3g)", name, sep, k,
                                   ptreg_transform_rigidity_error(e->transformation));
        for (int j = 0; j < 36; j++)
            if (!isfinite(e->information[j]))
                return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s%sedge %zu: information[%d][%d] is not finite", name,
                                       sep, k, j / 6, j % 6);
        if (!information_symmetric(e->information))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s%sedge %zu: information is not symmetric", name, sep, k);
        if (!(e->confidence >= 0 && e->confidence <= 1))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s%sedge %zu: confidence %g is outside [0, 1]", name, sep, k,
                                   e->confidence);
    }
    return PTREG_OK;
}

ptreg_status ptreg_pose_graph_check(const ptreg_pose_graph *g, ptreg_error *err)
{
    return pose_graph_check_named(NULL, g, err);
}
