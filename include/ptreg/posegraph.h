/* Pose graphs: one pose per scan (node), relative transforms between scans
 * (edges) with their information matrices, solved for the poses that agree
 * best with the edges (Levenberg-Marquardt on SE(3), the sparse normal
 * equations factored by CHOLMOD), wrong loop closures pruned by a line
 * process (Choi, Zhou, Koltun, CVPR 2015), as Open3D's
 * GlobalOptimizationLevenbergMarquardt. Open3D's conventions throughout, so
 * that its pose-graph files mean the same here. docs/ALGORITHMS.md, "Pose
 * graphs". */
#ifndef PTREG_POSEGRAPH_H
#define PTREG_POSEGRAPH_H

#include <stddef.h>

#include "core.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Edge (source, target): transformation takes source's points into
 * target's frame, so that poses[target]^-1 * poses[source] ~ transformation
 * (Open3D's PoseGraphEdge). information: 6 x 6, row-major, in Open3D's
 * order (rotation x, y, z, then translation x, y, z). An uncertain edge (a
 * loop closure) carries a line-process confidence in [0, 1]; a certain one
 * (odometry) always counts fully. */
typedef struct ptreg_pose_edge {
    size_t source, target;
    double transformation[16];
    double information[36];
    int uncertain;
    double confidence;
} ptreg_pose_edge;

/* nodes: node_count x 16, each a pose that takes the node's frame into the
 * common one (Open3D's PoseGraphNode.pose). */
typedef struct ptreg_pose_graph {
    size_t node_count, edge_count;
    double *nodes;
    ptreg_pose_edge *edges;
} ptreg_pose_graph;

PTREG_API void ptreg_pose_graph_init(ptreg_pose_graph *g);
/* Room for nodes (identity poses) and edges (zeroed, confidence 1). */
PTREG_API ptreg_status ptreg_pose_graph_alloc(ptreg_pose_graph *g, size_t nodes, size_t edges, ptreg_error *err);
PTREG_API void ptreg_pose_graph_free(ptreg_pose_graph *g);
/* Each edge names nodes of the graph and carries a rigid transformation
 * (orthonormal rotation, last row 0 0 0 1) and a symmetric information
 * matrix with finite entries; PTREG_ERR_FORMAT names the first edge that
 * does not. */
PTREG_API ptreg_status ptreg_pose_graph_check(const ptreg_pose_graph *g, ptreg_error *err);

/* Open3D's JSON layout (class_name "PoseGraph", nodes with column-major
 * "pose" arrays, edges with "source_node_id", "target_node_id",
 * "transformation", "information", "uncertain", "confidence"). Reading
 * checks the graph (ptreg_pose_graph_check): PTREG_ERR_FORMAT names the
 * file and the edge. Writing is atomic (a temporary file renamed). */
PTREG_API ptreg_status ptreg_pose_graph_read_json(const char *path, ptreg_pose_graph *g, ptreg_error *err);
PTREG_API ptreg_status ptreg_pose_graph_write_json(const char *path, const ptreg_pose_graph *g, ptreg_error *err);

typedef enum ptreg_pose_solver {
    PTREG_POSE_SOLVER_CHOLMOD = 0, /* sparse Cholesky (SuiteSparse) */
    PTREG_POSE_SOLVER_DENSE        /* the reference: a dense Cholesky of the same equations */
} ptreg_pose_solver;

typedef struct ptreg_pose_graph_options {
    double max_dist;                /* the scans' max correspondence distance: sets the line
                                       process's weight (Open3D's; default 0.075) */
    double edge_prune_threshold;    /* uncertain edges whose confidence ends at or below are
                                       removed (Open3D keeps those above; default 0.25) */
    double preference_loop_closure; /* weight of loop closures against odometry (default 1) */
    size_t reference_node;          /* the anchor: its pose does not move, to the bit (default 0) */
    int max_iter;                   /* Levenberg-Marquardt iterations of each solve (default 100;
                                       0: none) */
    ptreg_pose_solver solver;
} ptreg_pose_graph_options;

PTREG_API void ptreg_pose_graph_options_default(ptreg_pose_graph_options *opt);
/* The table of its options, ptreg_option_table_find("pose_graph") (options.h): max_dist, edge_prune_threshold,
 * preference_loop_closure, max_iter, solver (reference_node is checked
 * against the graph). */

typedef struct ptreg_pose_graph_result {
    int iterations;                  /* of both solves together */
    double initial_cost, final_cost; /* the line-process objective before and after */
    size_t pruned;                   /* uncertain edges removed */
    double time_ms;
} ptreg_pose_graph_result;

/* Moves the nodes (all but the reference) to minimise the sum over edges
 * of l e^T Lambda e + mu (sqrt(l) - 1)^2 (l = 1 for certain edges), e the
 * edge's 6-vector residual, then removes the uncertain edges whose
 * confidence l is at or below the threshold, solves again and prunes again
 * (Open3D's GlobalOptimization). Each edge's confidence is left as the
 * line process set it. PTREG_ERR_FORMAT names a node with no path of edges
 * to the reference, PTREG_ERR_ARG a bad option; on failure the graph is
 * untouched. Deterministic: the same bits for every run and thread count,
 * and with either solver to rounding (1e-9). */
PTREG_API ptreg_status ptreg_pose_graph_optimize(ptreg_pose_graph *g, const ptreg_pose_graph_options *opt,
                                                 ptreg_pose_graph_result *result, ptreg_error *err);

/* Open3D's get_information_matrix_from_point_clouds: after source moved by
 * T, every source point whose nearest target point lies within max_dist
 * adds G^T G, G = [[0, z, -y, 1, 0, 0], [-z, 0, x, 0, 1, 0], [y, -x, 0, 0,
 * 0, 1]] at that target point (x, y, z). *pairs (may be NULL): how many. */
PTREG_API ptreg_status ptreg_information_matrix(const float *source, size_t n, const float *target, size_t m,
                                                const double T[16], double max_dist, double information[36],
                                                size_t *pairs, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
