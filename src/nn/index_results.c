/* The model index's table (ptreg/results.h): what ptreg index --json (and
 * ptreg icp's "index") and ModelIndex.info say of an index, declared once
 * (why there is no graph, delaunay_note, is the command line's only when
 * there is none; the measured method is the index's tuning, not its info). */
#include "core/results_table.h"
#include "ptreg/nn.h"

static double build_ms(const void *result)
{
    const ptreg_model_index_info *info = result;
    return info->kdtree_ms + info->delaunay_ms;
}

#define R ptreg_model_index_info
static const ptreg_result_field index_rows[] = {
    RESULT_FIELD(R, points, SIZE, "", "the model's points, duplicates included"),
    RESULT_AT(R, has_delaunay, "delaunay", BOOL, "", "the index holds a Delaunay graph"),
    RESULT_AT(R, duplicates, "duplicates_merged", SIZE, "", "exact duplicates merged in the graph"),
    RESULT_FIELD(R, delaunay_edges, SIZE, "", "directed: each edge counted from both ends"),
    RESULT_FIELD(R, kdtree_ms, DOUBLE, "ms", "the k-d tree's build (a loaded index: as its file records)"),
    RESULT_FIELD(R, delaunay_ms, DOUBLE, "ms", "the graph's build (a loaded index: as its file records)"),
    RESULT_DERIVED("build_ms", build_ms, "ms", "both builds")};
#undef R
RESULT_TABLE(ptreg_model_index_info_table, "model index", ptreg_model_index_info, index_rows)
