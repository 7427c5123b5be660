/* libFuzzer entry point for Open3D's pose-graph JSON
 * (src/reg/posegraph/posegraph_json.c): any text is either a graph that
 * passes ptreg_pose_graph_check, every id within its nodes, or an error
 * naming the input with the graph left empty. A small graph read is then
 * optimised a few steps (both solvers), which must end, on any numbers. See
 * run.sh. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/posegraph.h"
#include "reg/posegraph/posegraph_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ptreg_pose_graph g;
    ptreg_error err;
    const ptreg_status st = pose_graph_parse_json("fuzz.json", (const char *)data, size, &g, &err);
    if (st != PTREG_OK) {
        if (g.nodes || g.edges || g.node_count || g.edge_count || strncmp(err.message, "fuzz.json: ", 11))
            abort();
        return 0;
    }
    if (ptreg_pose_graph_check(&g, &err) != PTREG_OK)
        abort();
    for (size_t k = 0; k < g.edge_count; k++)
        if (g.edges[k].source >= g.node_count || g.edges[k].target >= g.node_count)
            abort();
    if (g.node_count && g.node_count <= 12 && g.edge_count <= 24) {
        ptreg_pose_graph_options opt;
        ptreg_pose_graph_options_default(&opt);
        opt.max_iter = 3;
        for (int solver = 0; solver < 2; solver++) {
            opt.solver = solver ? PTREG_POSE_SOLVER_DENSE : PTREG_POSE_SOLVER_CHOLMOD;
            ptreg_pose_graph_result res;
            const ptreg_status o = ptreg_pose_graph_optimize(&g, &opt, &res, &err);
            if (o != PTREG_OK && o != PTREG_ERR_FORMAT && o != PTREG_ERR_RUNTIME && o != PTREG_ERR_NOMEM)
                abort();
            if (o == PTREG_OK && res.pruned > g.edge_count + res.pruned)
                abort();
        }
    }
    ptreg_pose_graph_free(&g);
    return 0;
}
