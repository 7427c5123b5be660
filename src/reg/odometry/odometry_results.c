/* Odometry's result tables (ptreg/results.h): what ptreg odometry --json and
 * ptreg.odometry's frames and summary hold, declared once. */
#include "core/results_table.h"
#include "ptreg/odometry.h"

static const char *state_name(int value) { return ptreg_track_state_name((ptreg_track_state)value); }

#define R ptreg_odometry_frame
static const ptreg_result_field frame_rows[] = {
    RESULT_ARRAY(R, pose, "pose", TRANSFORM, 16, "", "4 x 4, row-major: the frame's points into the first frame's"),
    RESULT_FIELD(R, points, SIZE, "", "points within the range"),
    RESULT_FIELD(R, registered, SIZE, "", "after thinning: the points ICP registered"),
    RESULT_FIELD(R, pairs, SIZE, "", "of them, with a map point within 3 sigma (the last step)"),
    RESULT_FIELD(R, iterations, INT, "", "ICP steps (0: the first frame)"),
    RESULT_FIELD(R, sigma, DOUBLE, "m", "the motion's deviation: pairs within 3 sigma, the kernel's width sigma / 3"),
    RESULT_FIELD(R, correction, DOUBLE, "m", "ICP's move from the prediction: translation + angle x max_range"),
    RESULT_FIELD(R, map_points, SIZE, "", "in the local map after the frame"),
    RESULT_FIELD(R, latency_ms, DOUBLE, "ms", "points in memory to pose, the map's update included"),
    RESULT_ENUM(R, state, "state", state_name, "localization: tracked, recovered or lost"),
    RESULT_FIELD(R, fitness, DOUBLE, "", "localization: the share of registered points within half a voxel of the map"),
    RESULT_FIELD(R, tiles, SIZE, "", "localization: the prior map's tiles held after the frame"),
    RESULT_FIELD(R, tiles_read, SIZE, "", "localization: tiles read for this frame")};
#undef R
RESULT_TABLE(ptreg_odometry_frame_table, "odometry frame", ptreg_odometry_frame, frame_rows)

#define R ptreg_odometry_summary
static const ptreg_result_field summary_rows[] = {
    RESULT_FIELD(R, frames, SIZE, "", "frames pushed"),
    RESULT_FIELD(R, empty, SIZE, "", "frames with no point in range (their pose: the prediction)"),
    RESULT_OBJECT(R, latency_ms, "latency_ms", &track_latency_table, "per frame"),
    RESULT_FIELD(R, frames_per_s, DOUBLE, "1 / s", "1000 / the mean latency"),
    RESULT_FIELD(R, distance, DOUBLE, "m", "the path's length"),
    RESULT_FIELD(R, map_points, SIZE, "", "in the local map"),
    RESULT_FIELD(R, map_bytes, SIZE, "bytes", "the map's memory"),
    RESULT_FIELD(R, tracked, SIZE, "", "frames whose pose fits the map (localization; odometry: all)"),
    RESULT_FIELD(R, recovered, SIZE, "", "localization: frames recovered by global registration"),
    RESULT_FIELD(R, lost, SIZE, "", "localization: frames neither fit nor recovered (their pose: the prediction)"),
    RESULT_FIELD(R, tiles_read, SIZE, "", "localization: prior map tiles read")};
#undef R
RESULT_TABLE(ptreg_odometry_summary_table, "odometry summary", ptreg_odometry_summary, summary_rows)
