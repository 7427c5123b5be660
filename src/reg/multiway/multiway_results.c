/* Multiway registration's result table (ptreg/results.h): what ptreg
 * multiway --json and ptreg.multiway's result hold, declared once (the
 * per-scan poses are arrays each front end writes its own way). */
#include "core/results_table.h"
#include "ptreg/multiway.h"

static const ptreg_result_field edge_rows[] = {
    RESULT_FIELD(ptreg_multiway_edge, source, SIZE, "", "the source scan's index"),
    RESULT_FIELD(ptreg_multiway_edge, target, SIZE, "", "the target scan's index"),
    RESULT_FIELD(ptreg_multiway_edge, fitness, DOUBLE, "",
                 "the smaller share of either scan's points within the ICP distance of the other (-1: not "
                 "registered)"),
    RESULT_FIELD(ptreg_multiway_edge, rmse, DOUBLE, "the clouds' units", "its ICP's"),
    RESULT_FIELD(ptreg_multiway_edge, surface, DOUBLE, "",
                 "the share of those points within 1/8 of the distance of the target's surface"),
    RESULT_FIELD(ptreg_multiway_edge, uncertain, BOOL, "", "a loop closure, not an edge of the spanning tree"),
    RESULT_FIELD(ptreg_multiway_edge, kept, BOOL, "", "an edge of the solved graph"),
    RESULT_FIELD(ptreg_multiway_edge, confidence, DOUBLE, "", "the line process's, after the solve"),
    RESULT_ARRAY(ptreg_multiway_edge, transformation, "transformation", TRANSFORM, 16, "",
                 "source into target, after refinement")};
RESULT_TABLE(ptreg_multiway_edge_table, "multiway edge", ptreg_multiway_edge, edge_rows)

static size_t edge_count(const void *result) { return ((const ptreg_multiway_result *)result)->edge_count; }

static double edges_kept(const void *result)
{
    const ptreg_multiway_result *r = result;
    size_t kept = 0;
    for (size_t e = 0; e < r->edge_count; e++)
        kept += r->edges[e].kept != 0;
    return (double)kept;
}

#define R ptreg_multiway_result
static const ptreg_result_field multiway_rows[] = {
    RESULT_FIELD(R, voxel, DOUBLE, "the clouds' units", "the downsampling voxel used"),
    RESULT_DERIVED("edges_kept", edges_kept, "", "edges of the solved graph"),
    RESULT_RECORDS(R, edges, "edges", edge_count, &ptreg_multiway_edge_table_data, "one per candidate pair"),
    RESULT_FIELD(R, prepare_ms, DOUBLE, "ms", "downsampling and normals"),
    RESULT_FIELD(R, pairs_ms, DOUBLE, "ms", "the pairs' registrations"),
    RESULT_FIELD(R, graph_ms, DOUBLE, "ms", "the pose graph's solve"),
    RESULT_FIELD(R, joint_ms, DOUBLE, "ms", "the joint refinement"),
    RESULT_AT(R, total_ms, "time_ms", DOUBLE, "ms", "every stage")};
#undef R
RESULT_TABLE(ptreg_multiway_result_table, "multiway", ptreg_multiway_result, multiway_rows)
