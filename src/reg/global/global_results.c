/* Global registration's result tables (ptreg/results.h): what ptreg
 * register --json and ptreg.register's result hold, and ptreg evaluate's
 * and ptreg.evaluate's, declared once. */
#include "core/results_table.h"
#include "ptreg/global.h"

#define R ptreg_register_result
static const ptreg_result_field register_rows[] = {
    RESULT_ARRAY(R, transformation, "transformation", TRANSFORM, 16, "",
                 "4 x 4, row-major: takes the source onto the target (after the refinement)"),
    RESULT_FIELD(R, rmse, DOUBLE, "the clouds' units", "of the final transform, within the refinement's distance"),
    RESULT_FIELD(R, fitness, DOUBLE, "", "of the final transform, within the refinement's distance"),
    RESULT_FIELD(R, device, DEVICE, "", "where the matches were found (and RANSAC's hypotheses scored)"),
    RESULT_FIELD(R, voxel, DOUBLE, "the clouds' units", "the downsampling voxel used"),
    RESULT_AT(R, source_down, "source_points_down", SIZE, "", "source points after downsampling"),
    RESULT_AT(R, target_down, "target_points_down", SIZE, "", "target points after downsampling"),
    RESULT_FIELD(R, matches, SIZE, "", "feature correspondences"),
    RESULT_AT(R, ransac.hypotheses, "ransac_hypotheses", INT, "", "RANSAC: samples drawn"),
    RESULT_AT(R, ransac.checked, "ransac_checked", INT, "", "RANSAC: samples that passed the checkers, scored"),
    RESULT_AT(R, ransac.inliers, "ransac_inliers", SIZE, "", "RANSAC: correspondences within max_dist"),
    RESULT_AT(R, fgr.tuples, "fgr_tuples", SIZE, "", "FGR: triples that passed the tuple test"),
    RESULT_FIELD(R, downsample_ms, DOUBLE, "ms", "the downsampling stage"),
    RESULT_FIELD(R, normals_ms, DOUBLE, "ms", "the normals stage"),
    RESULT_FIELD(R, features_ms, DOUBLE, "ms", "the features stage"),
    RESULT_FIELD(R, match_ms, DOUBLE, "ms", "the matching stage"),
    RESULT_FIELD(R, global_ms, DOUBLE, "ms", "RANSAC or FGR"),
    RESULT_FIELD(R, refine_ms, DOUBLE, "ms", "the ICP refinement"),
    RESULT_AT(R, total_ms, "time_ms", DOUBLE, "ms", "every stage")};
#undef R
RESULT_TABLE(ptreg_register_result_table, "global registration", ptreg_register_result, register_rows)

#define E ptreg_evaluation
static const ptreg_result_field evaluation_rows[] = {
    RESULT_AT(E, inliers, "correspondences", SIZE, "", "source points paired (within max_dist)"),
    RESULT_FIELD(E, fitness, DOUBLE, "", "correspondences / source points"),
    RESULT_FIELD(E, inlier_rmse, DOUBLE, "the clouds' units", "the root of the pairs' mean squared distance")};
#undef E
RESULT_TABLE(ptreg_evaluation_table, "evaluation", ptreg_evaluation, evaluation_rows)
