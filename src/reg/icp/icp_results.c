/* ICP's result table (ptreg/results.h): what ptreg icp --json and
 * ptreg.icp's result hold, declared once. */
#include "core/results_table.h"
#include "ptreg/icp.h"

static const char *nn_name(int value) { return ptreg_nn_method_name((ptreg_nn_method)value); }

static size_t passes(const void *result)
{
    return result_iterations_plus_one(result, offsetof(ptreg_icp_result, iterations));
}

static double mean_steps(const void *record)
{
    const ptreg_walk_stats *w = record;
    return w->queries ? (double)w->steps / (double)w->queries : 0.0;
}

static const ptreg_result_field walk_rows[] = {
    RESULT_FIELD(ptreg_walk_stats, queries, U64, "", "nearest-neighbor queries of the pass"),
    RESULT_DERIVED("mean_steps", mean_steps, "", "walk steps per query"),
    RESULT_FIELD(ptreg_walk_stats, max_steps, U64, "", "the longest walk"),
    RESULT_FIELD(ptreg_walk_stats, fallbacks, U64, "", "walks that gave up for the k-d tree"),
    RESULT_FIELD(ptreg_walk_stats, kept, U64, "", "queries whose nearest point was the seed's (no step)"),
    RESULT_ARRAY(ptreg_walk_stats, histogram, "histogram", U64S, PTREG_WALK_HISTOGRAM, "",
                 "queries by steps: 0..31, and 32 or more")};
RESULT_TABLE(ptreg_walk_stats_table, "Delaunay walk", ptreg_walk_stats, walk_rows)

static const ptreg_result_field icp_rows[] = {
    RESULT_ARRAY(ptreg_icp_result, transformation, "transformation", TRANSFORM, 16, "",
                 "4 x 4, row-major: takes the source onto the target"),
    RESULT_FIELD(ptreg_icp_result, rmse, DOUBLE, "the clouds' units", "of the pairs' distances at the final transform"),
    RESULT_FIELD(ptreg_icp_result, fitness, DOUBLE, "", "pairs used / source points at the final transform"),
    RESULT_FIELD(ptreg_icp_result, pairs, SIZE, "", "pairs used at the final transform"),
    RESULT_FIELD(ptreg_icp_result, iterations, INT, "", "transform updates made"),
    RESULT_FIELD(ptreg_icp_result, converged, BOOL, "", "stopped by tol"),
    RESULT_ENUM(ptreg_icp_result, stop_reason, "stop_reason", result_stop_reason_name, "why it stopped"),
    RESULT_FIELD(ptreg_icp_result, time_ms, DOUBLE, "ms", "clouds in memory to result, the search build included"),
    RESULT_FIELD(ptreg_icp_result, build_ms, DOUBLE, "ms", "the search structure's build, part of time_ms"),
    RESULT_ENUM(ptreg_icp_result, nn, "nn", nn_name, "the nearest-neighbor method that ran"),
    RESULT_FIELD(ptreg_icp_result, nn_note, TEXT, "", "why it is not the one asked for (\"\" when it is)"),
    RESULT_FIELD(ptreg_icp_result, nn_measured, BOOL, "", "auto ran the index's measured choice (not the rule)"),
    RESULT_FIELD(ptreg_icp_result, device, DEVICE, "", "where it ran"),
    RESULT_FIELD(ptreg_icp_result, upload_ms, DOUBLE, "ms", "a one-off GPU run: the model's upload, part of time_ms"),
    RESULT_SERIES(ptreg_icp_result, mse, "mse", passes, "the clouds' units squared",
                  "the MSE before each update and at the end (iterations + 1)"),
    RESULT_RECORDS(ptreg_icp_result, walk, "walk", passes, &ptreg_walk_stats_table_data,
                   "the Delaunay methods' walks, per correspondence pass (iterations + 1)")};
RESULT_TABLE(ptreg_icp_result_table, "ICP", ptreg_icp_result, icp_rows)
