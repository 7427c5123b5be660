/* The model index: a model's k-d tree and Delaunay graph, built once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/options_table.h"
#include "nn/testing.h"
#include "nn/index_impl.h"
#include "nn/searcher.h" /* nn_method_names */
#include "ptreg/nn.h"

void ptreg_index_options_default(ptreg_index_options *opt)
{
    ptreg_kdtree_options kd;
    ptreg_kdtree_options_default(&kd);
    opt->delaunay = 1;
    opt->leaf_size = kd.leaf_size;
    opt->progress = (ptreg_progress){NULL, NULL};
}

/* The Delaunay graph (on or off) and the progress callback are the front
 * ends'. */
static const ptreg_option index_rows[] = {
    OPTION_FIELD(ptreg_index_options, leaf_size, NULL, INT, 4, PTREG_KD_MAX_LEAF, 0, "N",
                 "most points in a k-d tree leaf"),
};
OPTION_TABLE(ptreg_index_option_table, "model index", ptreg_index_options, ptreg_index_options_default, index_rows)

static ptreg_status index_create(const float *xyz, size_t n, const ptreg_index_options *opt, int borrow,
                                 ptreg_model_index **out, ptreg_error *err)
{
    *out = NULL;
    ptreg_index_options def;
    if (!opt) {
        ptreg_index_options_default(&def);
        opt = &def;
    }
    /* before the copy: a count the tree cannot index is not read */
    ptreg_status st = kd_check_points("model index", n, err);
    if (st)
        return st;
    ptreg_model_index *idx = calloc(1, sizeof *idx);
    if (idx) {
        idx->borrowed_points = borrow;
        idx->points = borrow ? (float *)xyz : malloc((n ? n : 1) * 3 * sizeof(float));
    }
    if (!idx || !idx->points) {
        ptreg_model_index_destroy(idx);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "model index: out of memory for %zu points", n);
    }
    st = ptreg_options_check(ptreg_index_option_table(), opt, err);
    if (st) {
        ptreg_model_index_destroy(idx);
        return st;
    }
    if (!borrow)
        memcpy(idx->points, xyz, n * 3 * sizeof(float));
    idx->n = n;
    index_nn_tuning_clear(&idx->tuning);
    ptreg_kdtree_options kd = {opt->leaf_size};
    double t0 = ptreg_time_ms();
    st = ptreg_kdtree_create(xyz, n, &kd, &idx->tree, err);
    idx->kdtree_ms = ptreg_time_ms() - t0;
    if (!st && opt->progress.fn)
        opt->progress.fn(opt->progress.ctx, 1, opt->delaunay ? 2 : 1, idx->kdtree_ms);
    if (!st && opt->delaunay) {
        ptreg_error why;
        t0 = ptreg_time_ms();
        st = delaunay_create(idx->tree, &idx->graph, &why);
        idx->delaunay_ms = ptreg_time_ms() - t0;
        if (opt->progress.fn)
            opt->progress.fn(opt->progress.ctx, 2, 2, idx->delaunay_ms);
        if (st == PTREG_ERR_UNSUPPORTED) { /* a model without a graph: the tree serves */
            snprintf(idx->note, sizeof idx->note, "%.255s", why.message);
            st = PTREG_OK;
        } else if (st) {
            ptreg_error_set(err, st, "%s", why.message);
        }
    } else if (!st) {
        snprintf(idx->note, sizeof idx->note, "not asked for");
    }
    if (st) {
        ptreg_model_index_destroy(idx);
        return st;
    }
    *out = idx;
    return PTREG_OK;
}

ptreg_status ptreg_model_index_create(const float *xyz, size_t n, const ptreg_index_options *opt,
                                      ptreg_model_index **out, ptreg_error *err)
{
    return index_create(xyz, n, opt, 0, out, err);
}

ptreg_status index_create_borrowing(const float *xyz, size_t n, const ptreg_index_options *opt, ptreg_model_index **out,
                                    ptreg_error *err)
{
    return index_create(xyz, n, opt, 1, out, err);
}

void ptreg_model_index_destroy(ptreg_model_index *idx)
{
    if (!idx)
        return;
    ptreg_kdtree_destroy(idx->tree);
    delaunay_destroy(idx->graph);
    if (idx->storage)
        free(idx->storage);
    else if (!idx->borrowed_points)
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

void index_nn_tuning_clear(ptreg_index_nn_tuning *t)
{
    memset(t, 0, sizeof *t);
    for (int k = 0; k < PTREG_INDEX_NN_SLOTS; k++)
        t->median_ms[k] = -1.0;
}

/* A time is -1 (not measured) or a finite duration; anything else is damage. */
static int time_sane(double ms) { return ms == -1.0 || (ms >= 0.0 && ms < 1e12); }

int index_nn_tuning_valid(const ptreg_index_nn_tuning *t, int has_graph, const char **why)
{
    for (int k = 0; k < PTREG_INDEX_NN_SLOTS; k++)
        if (!time_sane(t->median_ms[k])) {
            *why = "a measured time is not a duration";
            return 0;
        }
    if (t->method == 0)
        return 1;
    if (t->method < 0 || t->method > PTREG_INDEX_NN_LAST) {
        *why = "the measured nearest-neighbor method is not one ptreg knows";
        return 0;
    }
    if (t->method >= PTREG_INDEX_NN_FIRST_WALK && !has_graph) {
        *why = "the measured nearest-neighbor method walks a Delaunay graph the index has not got";
        return 0;
    }
    if (t->median_ms[t->method] < 0.0 || t->threads < 1 || t->iterations < 0 || t->repeat < 1 || t->queries < 1) {
        *why = "the measured nearest-neighbor method has no measurement of its own";
        return 0;
    }
    return 1;
}

void ptreg_model_index_get_nn_tuning(const ptreg_model_index *idx, ptreg_index_nn_tuning *tuning)
{
    *tuning = idx->tuning;
}

ptreg_status ptreg_model_index_set_nn_tuning(ptreg_model_index *idx, const ptreg_index_nn_tuning *tuning,
                                             ptreg_error *err)
{
    const char *why = "";
    if (!index_nn_tuning_valid(tuning, idx->graph != NULL, &why))
        return ptreg_error_set(err, PTREG_ERR_ARG, "model index: %s (method %d)", why, tuning->method);
    idx->tuning = *tuning;
    return PTREG_OK;
}

const ptreg_option_name nn_method_names[] = {{"auto", PTREG_NN_AUTO},
                                             {"brute", PTREG_NN_BRUTE},
                                             {"kdtree", PTREG_NN_KDTREE},
                                             {"delaunay-zero", PTREG_NN_DELAUNAY_ZERO},
                                             {"delaunay-kdann", PTREG_NN_DELAUNAY_KDANN},
                                             {"delaunay-pnn", PTREG_NN_DELAUNAY_PNN},
                                             {"delaunay-pnnopt", PTREG_NN_DELAUNAY_PNNOPT},
                                             {NULL, 0}};

OPTION_ENUM_FUNCTIONS(ptreg_nn_method, nn_method_names, "auto", ptreg_nn_method_name, ptreg_nn_method_parse)

int ptreg_nn_method_is_delaunay(ptreg_nn_method m)
{
    return m >= PTREG_NN_DELAUNAY_ZERO && m <= PTREG_NN_DELAUNAY_PNNOPT;
}
