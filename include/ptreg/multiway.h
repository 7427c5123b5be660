/* Multiway registration: many overlapping scans of one object brought into
 * one frame. Each scan downsampled, with normals and FPFH; candidate pairs
 * registered globally (RANSAC or FGR) and refined by ICP; each kept pair an
 * edge of a pose graph (posegraph.h) with Open3D's information matrix; the
 * graph solved with the anchor scan fixed; then a joint refinement (each
 * kept edge's ICP again from the solved poses, and the graph solved again).
 * docs/ALGORITHMS.md, "Multiway registration". */
#ifndef PTREG_MULTIWAY_H
#define PTREG_MULTIWAY_H

#include <stddef.h>

#include "core.h"
#include "global.h"
#include "options.h"
#include "posegraph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ptreg_multiway_scan {
    const float *xyz;
    const float *normals; /* may be NULL: estimated */
    size_t n;
} ptreg_multiway_scan;

/* A candidate pair of scans. */
typedef struct ptreg_scan_pair {
    size_t source, target;
} ptreg_scan_pair;

typedef struct ptreg_multiway_options {
    double voxel;                   /* downsampling cube (default 0: the first scan's bounding-box
                                 diagonal / 80) */
    int pair_neighbors;             /* 0 (default): every pair; k > 0: each scan with its k most
                                 similar scans by mean FPFH descriptor, and its successor */
    ptreg_global_method global;     /* RANSAC (default) or FGR */
    ptreg_icp_method refine;        /* the pairs' ICP (default point-to-plane) */
    double refine_dist;             /* its max correspondence distance (default 0: 1.5 voxels) */
    int refine_iter;                /* (default 30) */
    double min_fitness;             /* a pair whose fitness both ways (the smaller share of either scan's
                                 points within the ICP distance of the other) ends below is no edge
                                 (default 0.3) */
    size_t anchor;                  /* the scan whose frame is the common one (default 0) */
    int joint_refine;               /* rounds of the final joint refinement (default 1) */
    uint64_t seed;                  /* RANSAC's samples (default 1) */
    ptreg_pose_graph_options graph; /* max_dist 0: refine_dist; reference_node: anchor */
} ptreg_multiway_options;

PTREG_API void ptreg_multiway_options_default(ptreg_multiway_options *opt);
/* The table of its options, ptreg_option_table_find("multiway") (options.h). */

/* What became of a candidate pair. */
typedef struct ptreg_multiway_edge {
    size_t source, target;
    double transformation[16]; /* source into target, after refinement */
    double fitness;            /* the smaller share of either scan's points within the ICP distance of
                                  the other (-1: not registered, or the edge came from a graph) */
    double rmse;               /* its ICP's */
    double surface;            /* the share of those source points within 1/8 of the distance of the
                                  target's surface: near 1 for a right pose, far less for a wrong one
                                  that overlaps (below 0.5: no edge) */
    int uncertain;             /* a loop closure in the graph: not an edge of the spanning tree of
                                  the best pairs, which places the scans first */
    int kept;                  /* an edge of the solved graph */
    double confidence;         /* the line process's, after the solve */
} ptreg_multiway_edge;

typedef struct ptreg_multiway_result {
    size_t scan_count;
    double *poses; /* scan_count x 16: each scan into the anchor's frame */
    int *placed;   /* scan_count: 1 where kept edges join the scan to the anchor (else
                                 its pose is the identity: the scan is lost) */
    size_t edge_count;
    ptreg_multiway_edge *edges; /* one per candidate pair, in pair order */
    ptreg_pose_graph graph;     /* the solved graph (Open3D's layout when written) */
    double voxel;
    /* stage times, ms */
    double prepare_ms, pairs_ms, graph_ms, joint_ms, total_ms;
} ptreg_multiway_result;

PTREG_API void ptreg_multiway_result_free(ptreg_multiway_result *r);

/* Registers count >= 2 scans into the frame of opt->anchor. pairs (may be
 * NULL): the candidate pairs to use instead of opt->pair_neighbors' rule.
 * ranks (may be NULL: one process): the pairs are shared among the
 * caller's processes, each registering every size-th, and combined by
 * ranks->sum_doubles; every rank returns the same result, the same bits as
 * one process. On the CPU; the same result for any thread count. */
PTREG_API ptreg_status ptreg_multiway(const ptreg_multiway_scan *scans, size_t count, const ptreg_scan_pair *pairs,
                                      size_t pair_count, const ptreg_multiway_options *opt, const ptreg_ranks *ranks,
                                      ptreg_multiway_result *result, ptreg_error *err);

/* The same from a pose graph someone else made (Open3D's, read by
 * ptreg_pose_graph_read_json): its node_count must be count; its nodes are
 * the first poses and its edges the pairs (their transformations and
 * information as given, certain or uncertain as marked); then the solve
 * and the joint refinement as ptreg_multiway. */
PTREG_API ptreg_status ptreg_multiway_graph(const ptreg_multiway_scan *scans, size_t count,
                                            const ptreg_pose_graph *graph, const ptreg_multiway_options *opt,
                                            const ptreg_ranks *ranks, ptreg_multiway_result *result, ptreg_error *err);

/* The scans a result placed, each moved by its pose, as one cloud in the
 * anchor's frame (in scan order; with normals when every placed scan has
 * them); what ptreg multiway --merged writes (after a voxel grid when
 * asked). out's origin is left at zero: the caller's frame. A result of
 * another count of scans is PTREG_ERR_ARG. */
PTREG_API ptreg_status ptreg_multiway_merge(const ptreg_multiway_scan *scans, size_t count,
                                            const ptreg_multiway_result *result, ptreg_cloud *out, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
