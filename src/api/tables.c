/* The library's catalogues by name: every options table and result table
 * behind one lookup each (options.h, results.h), as the tuner's kernels are
 * behind ptreg_tune_kernel_find. A module's table stays its own (hidden);
 * this file only lists them, so it sits above every module. */
#include <string.h>

#include "core/options_table.h"
#include "core/results_table.h"

static const struct {
    const char *name;
    const ptreg_option_table *(*table)(void);
} option_tables[] = {
    {"icp", ptreg_icp_option_table},           {"emicp", ptreg_emicp_option_table},
    {"register", ptreg_register_option_table}, {"ransac", ptreg_ransac_option_table},
    {"fgr", ptreg_fgr_option_table},           {"lddmm", ptreg_lddmm_option_table},
    {"cpd", ptreg_cpd_option_table},           {"harris3d", ptreg_harris3d_option_table},
    {"features", ptreg_features_option_table}, {"normals", ptreg_normals_option_table},
    {"index", ptreg_index_option_table},       {"batch", ptreg_batch_option_table},
    {"multiway", ptreg_multiway_option_table}, {"pose_graph", ptreg_pose_graph_option_table},
    {"track", ptreg_track_option_table},       {"eval", ptreg_eval_option_table},
    {"tune", ptreg_tune_option_table},         {"odometry", ptreg_odometry_option_table},
    {"localize", ptreg_localize_option_table},
};

static const struct {
    const char *name;
    const ptreg_result_table *(*table)(void);
} result_tables[] = {
    {"icp", ptreg_icp_result_table},
    {"walk_stats", ptreg_walk_stats_table},
    {"emicp", ptreg_emicp_result_table},
    {"register", ptreg_register_result_table},
    {"evaluation", ptreg_evaluation_table},
    {"lddmm", ptreg_lddmm_result_table},
    {"cpd", ptreg_cpd_result_table},
    {"harris3d", ptreg_harris3d_result_table},
    {"multiway", ptreg_multiway_result_table},
    {"multiway_edge", ptreg_multiway_edge_table},
    {"device_info", ptreg_device_info_table},
    {"model_index_info", ptreg_model_index_info_table},
    {"track_frame", ptreg_track_frame_table},
    {"track_summary", ptreg_track_summary_table},
    {"trajectory_eval", ptreg_eval_result_table},
    {"batch_stats", ptreg_batch_stats_table},
    {"odometry_frame", ptreg_odometry_frame_table},
    {"odometry_summary", ptreg_odometry_summary_table},
};

const ptreg_option_table *ptreg_option_table_find(const char *name)
{
    for (size_t k = 0; name && k < sizeof option_tables / sizeof option_tables[0]; k++)
        if (!strcmp(option_tables[k].name, name))
            return option_tables[k].table();
    return NULL;
}

const ptreg_result_table *ptreg_result_table_find(const char *name)
{
    for (size_t k = 0; name && k < sizeof result_tables / sizeof result_tables[0]; k++)
        if (!strcmp(result_tables[k].name, name))
            return result_tables[k].table();
    return NULL;
}
