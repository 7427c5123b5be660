/* The model index: a model's k-d tree and Delaunay graph, built once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/index_impl.h"
#include "ptreg/nn.h"

void ptreg_index_options_default(ptreg_index_options *opt)
{
    ptreg_kdtree_options kd;
    ptreg_kdtree_options_default(&kd);
    opt->delaunay = 1;
    opt->leaf_size = kd.leaf_size;
}

ptreg_status ptreg_model_index_create(const float *xyz, size_t n, const ptreg_index_options *opt,
                                     ptreg_model_index **out, ptreg_error *err)
{
    *out = NULL;
    ptreg_index_options def;
    if (!opt) {
        ptreg_index_options_default(&def);
        opt = &def;
    }
    ptreg_model_index *idx = calloc(1, sizeof *idx);
    if (idx)
        idx->points = malloc((n ? n : 1) * 3 * sizeof(float));
    if (!idx || !idx->points) {
        ptreg_model_index_destroy(idx);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "model index: out of memory for %zu points", n);
    }
    memcpy(idx->points, xyz, n * 3 * sizeof(float));
    idx->n = n;
    ptreg_kdtree_options kd = {opt->leaf_size};
    double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_kdtree_create(xyz, n, &kd, &idx->tree, err);
    idx->kdtree_ms = ptreg_time_ms() - t0;
    if (!st && opt->delaunay) {
        ptreg_error why;
        t0 = ptreg_time_ms();
        st = ptreg_delaunay_create(idx->tree, &idx->graph, &why);
        idx->delaunay_ms = ptreg_time_ms() - t0;
        if (st == PTREG_ERR_UNSUPPORTED) { /* a model without a graph: the tree serves */
            snprintf(idx->note, sizeof idx->note, "%.255s", why.message);
            st = PTREG_OK;
        } else if (st) {
            ptreg_error_set(err, st, "%s", why.message);
        }
    } else if (!st) {
        snprintf(idx->note, sizeof idx->note, "not built (--no-delaunay)");
    }
    if (st) {
        ptreg_model_index_destroy(idx);
        return st;
    }
    *out = idx;
    return PTREG_OK;
}

void ptreg_model_index_destroy(ptreg_model_index *idx)
{
    if (!idx)
        return;
    ptreg_kdtree_destroy(idx->tree);
    ptreg_delaunay_destroy(idx->graph);
    if (idx->storage)
        free(idx->storage);
    else
        free(idx->points);
    free(idx);
}

void ptreg_model_index_get_info(const ptreg_model_index *idx, ptreg_model_index_info *info)
{
    memset(info, 0, sizeof *info);
    info->points = idx->n;
    info->has_delaunay = idx->graph != NULL;
    info->duplicates = idx->graph ? idx->graph->duplicates : 0;
    info->delaunay_edges = idx->graph ? idx->graph->edges : 0;
    snprintf(info->delaunay_note, sizeof info->delaunay_note, "%s", idx->note);
    info->kdtree_ms = idx->kdtree_ms;
    info->delaunay_ms = idx->delaunay_ms;
}

const float *ptreg_model_index_points(const ptreg_model_index *idx, size_t *n)
{
    *n = idx->n;
    return idx->points;
}
