/* Harris 3-D's result table (ptreg/results.h): what ptreg harris3d --json
 * and ptreg.harris3d's result hold, declared once (the keypoints and the
 * scores are arrays each front end writes its own way). */
#include "core/results_table.h"
#include "ptreg/harris3d.h"

#define R ptreg_harris3d_result
static const ptreg_result_field harris_rows[] = {
    RESULT_FIELD(R, sigma, DOUBLE, "voxels", "the Gaussian window's sigma"),
    RESULT_FIELD(R, threshold, DOUBLE, "", "the absolute threshold used"),
    RESULT_FIELD(R, max_score, FLOAT, "", "the largest score"),
    RESULT_FIELD(R, local_maxima, SIZE, "", "above the threshold, before min_distance and top"),
    RESULT_FIELD(R, time_ms, DOUBLE, "ms", "scores and keypoints, the volume in memory"),
    RESULT_FIELD(R, scores_ms, DOUBLE, "ms", "the scores"),
    RESULT_FIELD(R, keypoints_ms, DOUBLE, "ms", "the keypoints"),
    RESULT_FIELD(R, isa, STRING, "", "the kernels' instruction set, or the GPU's name")};
#undef R
RESULT_TABLE(ptreg_harris3d_result_table, "Harris 3-D", ptreg_harris3d_result, harris_rows)
