/* Nearest neighbors on a device: the model index's arrays uploaded once,
 * and the launches of the search kernels (kdtree.cl, delaunay.cl,
 * brute.cl). See nn_device.h. */
#include "nn/nn_device.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/index_impl.h"
#include "nn/kdtree_query.h"

static const char *const nn_files[] = {"device/reduce.cl", "nn/kdtree.cl", "nn/delaunay.cl", "nn/brute.cl", NULL};
const kernel_program nn_kernels = {"nearest-neighbor", nn_files};

#define WORDS(type, field) (offsetof(type, field) / 4)

void nn_device_layout(const dev_handle *dev, char *defines, size_t size)
{
    (void)dev;
    snprintf(defines, size,
             "-DWG=%d -DITEMS=%d -DKD_LANES=%d -DKD_LEAF_MAX_CHUNKS=%d -DKD_LEAF_BIT=0x%xu -DKD_MAX_DEPTH=%d "
             "-DKD_NODE_WORDS=%zu -DKD_NODE_LO=%zu -DKD_NODE_HI=%zu -DKD_NODE_CHILD=%zu "
             "-DKD_CELL_WORDS=%zu -DKD_CELL_LO=%zu -DKD_CELL_HI=%zu "
             "-DKD_LEAF_WORDS=%zu -DKD_LEAF_LO=%zu -DKD_LEAF_HI=%zu -DKD_LEAF_CELL=%zu -DKD_LEAF_FIRST_CHUNK=%zu "
             "-DKD_LEAF_CHUNK_COUNT=%zu -DKD_LEAF_PARENT=%zu "
             "-DKD_CHUNK_WORDS=%zu -DKD_CHUNK_X=%zu -DKD_CHUNK_Y=%zu -DKD_CHUNK_Z=%zu -DKD_CHUNK_LEAF=%zu "
             "-DDT_LANES=%d -DDT_HEAD_WORDS=%zu -DDT_HEAD_X=%zu -DDT_HEAD_Y=%zu -DDT_HEAD_Z=%zu "
             "-DDT_HEAD_DEGREE=%zu -DDT_HEAD_NBR_FIRST=%zu -DDT_BLOCK_WORDS=%zu -DDT_BLOCK_EX=%zu "
             "-DDT_BLOCK_EY=%zu -DDT_BLOCK_EZ=%zu -DDT_BLOCK_HALF=%zu -DWALK_STEPS_MASK=0x%xu -DWALK_FALLBACK=0x%xu "
             "-DWALK_KEPT=0x%xu -DMEM_WORDS=%d -DWALK_FIELDS=%d -DWALK_HISTOGRAM=%d -DWALK_FIXED=%du -DWALK_KDANN=%du "
             "-DWALK_SEED=%du",
             PTREG_DEVICE_WG, PTREG_DEVICE_ITEMS, PTREG_KD_LANES, PTREG_KD_LEAF_CHUNKS, PTREG_KD_LEAF_BIT,
             PTREG_KD_MAX_DEPTH, sizeof(kd_node) / 4, WORDS(kd_node, lo), WORDS(kd_node, hi), WORDS(kd_node, child),
             sizeof(kd_cell) / 4, WORDS(kd_cell, lo), WORDS(kd_cell, hi), sizeof(kd_leaf) / 4, WORDS(kd_leaf, lo),
             WORDS(kd_leaf, hi), WORDS(kd_leaf, cell), WORDS(kd_leaf, first_chunk), WORDS(kd_leaf, chunks),
             WORDS(kd_leaf, parent), sizeof(kd_chunk) / 4, WORDS(kd_chunk, x), WORDS(kd_chunk, y), WORDS(kd_chunk, z),
             WORDS(kd_chunk, leaf), PTREG_DT_LANES, sizeof(dt_head) / 4, WORDS(dt_head, x), WORDS(dt_head, y),
             WORDS(dt_head, z), WORDS(dt_head, degree), WORDS(dt_head, nbr_first), sizeof(dt_block) / 4,
             WORDS(dt_block, ex), WORDS(dt_block, ey), WORDS(dt_block, ez), WORDS(dt_block, half),
             PTREG_WALK_STEPS_MASK, PTREG_WALK_FALLBACK, PTREG_WALK_KEPT, PTREG_WALK_MEMORY_FLOATS, PTREG_WALK_FIELDS,
             PTREG_WALK_HISTOGRAM, PTREG_WALK_FIXED, PTREG_WALK_KDANN, PTREG_WALK_SEED);
}

size_t device_groups(size_t n)
{
    const size_t per_group = (size_t)PTREG_DEVICE_WG * PTREG_DEVICE_ITEMS;
    return (n + per_group - 1) / per_group;
}

void nn_device_destroy(nn_device_model *m)
{
    if (!m)
        return;
    dbuf *bufs[] = {m->point_xyz, m->slot_xyz, m->brute_x, m->brute_y, m->brute_z, m->lbkd, m->rows, m->row_at, m->nbr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    nn_device_tree_free(&m->tree);
    free(m);
}

/* Brute force's target: SoA, the original order. */
static ptreg_status upload_points(nn_device_model *m, const float *xyz, size_t n, ptreg_error *err)
{
    float *soa = malloc((3 * n + 1) * sizeof *soa);
    if (!soa)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu model points", n);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            soa[k * n + i] = xyz[3 * i + k];
    ptreg_status st = dbuf_upload(m->dev, xyz, 3 * n * sizeof(float), &m->point_xyz, err);
    st = st ? st : dbuf_upload(m->dev, soa, n * sizeof(float), &m->brute_x, err);
    st = st ? st : dbuf_upload(m->dev, soa + n, n * sizeof(float), &m->brute_y, err);
    st = st ? st : dbuf_upload(m->dev, soa + 2 * n, n * sizeof(float), &m->brute_z, err);
    free(soa);
    return st;
}

ptreg_status nn_device_tree_upload(dev_handle *dev, const ptreg_kdtree *t, int full, nn_device_tree *out,
                                   ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    out->slots = t->chunk_count * PTREG_KD_LANES;
    ptreg_status st = dbuf_upload(dev, t->nodes, t->node_count * sizeof *t->nodes, &out->nodes, err);
    st = st ? st : dbuf_upload(dev, t->leaves, t->leaf_count * sizeof *t->leaves, &out->leaves, err);
    st = st ? st : dbuf_upload(dev, t->chunks, t->chunk_count * sizeof *t->chunks, &out->chunks, err);
    st = st ? st : dbuf_upload(dev, t->index, out->slots * sizeof *t->index, &out->index_of_slot, err);
    if (full) {
        st = st ? st : dbuf_upload(dev, t->cells, t->node_count * sizeof *t->cells, &out->cells, err);
        st = st ? st : dbuf_upload(dev, t->parent, t->node_count * sizeof *t->parent, &out->parent, err);
    }
    return st;
}

void nn_device_tree_free(nn_device_tree *t)
{
    dbuf *bufs[] = {t->nodes, t->leaves, t->chunks, t->index_of_slot, t->cells, t->parent};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    memset(t, 0, sizeof *t);
}

static size_t tree_bytes(const nn_device_tree *t)
{
    const dbuf *bufs[] = {t->nodes, t->leaves, t->chunks, t->index_of_slot, t->cells, t->parent};
    size_t bytes = 0;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        bytes += bufs[i] ? bufs[i]->bytes : 0;
    return bytes;
}

/* The tree, and its points by slot (NaN padding included) for the pairs'
 * coordinates. */
static ptreg_status upload_tree(nn_device_model *m, const ptreg_kdtree *t, ptreg_error *err)
{
    const size_t slots = t->chunk_count * PTREG_KD_LANES;
    float *xyz = malloc((3 * slots + 1) * sizeof *xyz);
    if (!xyz)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for %zu model points", slots);
    for (size_t s = 0; s < slots; s++)
        kdtree_slot_point(t, (uint32_t)s, xyz + 3 * s);
    ptreg_status st = dbuf_upload(m->dev, xyz, 3 * slots * sizeof(float), &m->slot_xyz, err);
    free(xyz);
    lbkd_node *nodes = NULL;
    st = st ? st : lbkd_build(t, &nodes, &m->lbkd_count, err);
    st = st ? st : dbuf_upload(m->dev, nodes, m->lbkd_count * sizeof *nodes, &m->lbkd, err);
    free(nodes);
    return st ? st : nn_device_tree_upload(m->dev, t, 1, &m->tree, err);
}

static ptreg_status upload_graph(nn_device_model *m, const delaunay_graph *g, ptreg_error *err)
{
    m->has_graph = 1;
    m->graph_start = g->start;
    ptreg_status st = dbuf_upload(m->dev, g->rows, g->row_units * sizeof(dt_head), &m->rows, err);
    st = st ? st : dbuf_upload(m->dev, g->row_at, g->slots * sizeof *g->row_at, &m->row_at, err);
    st = st ? st : dbuf_upload(m->dev, g->nbr, g->edges * sizeof *g->nbr, &m->nbr, err);
    return st;
}

ptreg_status nn_device_prepare(dev_handle *dev, ptreg_error *err)
{
    char defines[1024];
    dprogram *p;
    nn_device_layout(dev, defines, sizeof defines);
    return dev_program(dev, &nn_kernels, defines, &p, err);
}

size_t nn_device_bytes(const nn_device_model *m)
{
    const dbuf *bufs[] = {m->point_xyz, m->slot_xyz, m->brute_x, m->brute_y, m->brute_z,
                          m->lbkd,      m->rows,     m->row_at,  m->nbr};
    size_t bytes = tree_bytes(&m->tree);
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        bytes += bufs[i] ? bufs[i]->bytes : 0;
    return bytes;
}

static ptreg_status get_kernels(nn_device_model *m, ptreg_error *err)
{
    dprogram *p;
    ptreg_status st = dev_program(m->dev, &nn_kernels, m->defines, &p, err);
    st = st ? st : dev_kernel(p, "ptreg_nn_brute", &m->brute, err);
    st = st ? st : dev_kernel(p, "ptreg_nn_kdtree", &m->kdtree, err);
    st = st ? st : dev_kernel(p, "ptreg_nn_lbkd", &m->lbkd_search, err);
    st = st ? st : dev_kernel(p, "ptreg_nn_walk", &m->walk, err);
    st = st ? st : dev_kernel(p, "ptreg_walk_partials", &m->walk_partials, err);
    st = st ? st : dev_kernel(p, "ptreg_walk_total", &m->walk_total, err);
    return st;
}

static ptreg_status kd_search_env(nn_kd_search *search, ptreg_error *err)
{
    const char *env = getenv("PTREG_NN_DEVICE_KDTREE");
    *search = NN_KD_CLIMB;
    if (!env || !*env || !strcmp(env, "climb"))
        return PTREG_OK;
    if (!strcmp(env, "lbkd")) {
        *search = NN_KD_LBKD;
        return PTREG_OK;
    }
    return ptreg_error_set(err, PTREG_ERR_ARG, "PTREG_NN_DEVICE_KDTREE='%.32s' is not climb or lbkd", env);
}

ptreg_status nn_device_create(dev_handle *dev, const ptreg_model_index *index, int with_graph, nn_device_model **out,
                              ptreg_error *err)
{
    nn_device_model *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    m->dev = dev;
    m->index = index;
    m->points = index->n;
    nn_device_layout(dev, m->defines, sizeof m->defines);
    ptreg_status st = kd_search_env(&m->kd_search, err);
    st = st ? st : get_kernels(m, err);
    st = st ? st : upload_points(m, index->points, index->n, err);
    st = st ? st : upload_tree(m, index->tree, err);
    if (!st && with_graph && index->graph)
        st = upload_graph(m, index->graph, err);
    if (st) {
        nn_device_destroy(m);
        return st;
    }
    *out = m;
    return PTREG_OK;
}

ptreg_status nn_device_brute(const nn_device_model *m, const dbuf *queries, size_t n, dbuf *nearest, dbuf *dist2,
                             ptreg_error *err)
{
    karg args[] = {KARG_BUF(queries),    KARG_U32(n),         KARG_BUF(m->brute_x), KARG_BUF(m->brute_y),
                   KARG_BUF(m->brute_z), KARG_U32(m->points), KARG_BUF(nearest),    KARG_BUF(dist2)};
    return dev_launch(m->brute, n, PTREG_DEVICE_WG, sizeof args / sizeof args[0], args, err);
}

/* The stack-free walk of the left-balanced tree (lbkd.c, kdtree.cl). */
static ptreg_status lbkd_search(const nn_device_model *m, const dbuf *queries, size_t n, float limit,
                                const dbuf *first_equal, dbuf *nearest, dbuf *dist2, ptreg_error *err)
{
    karg args[] = {KARG_BUF(queries),
                   KARG_U32(n),
                   KARG_F32(limit),
                   KARG_U32(first_equal != NULL),
                   KARG_BUF(first_equal ? first_equal : nearest),
                   KARG_BUF(nearest),
                   KARG_BUF(dist2),
                   KARG_BUF(m->lbkd),
                   KARG_U32(m->lbkd_count),
                   KARG_BUF(m->slot_xyz),
                   KARG_BUF(m->tree.index_of_slot)};
    return dev_launch(m->lbkd_search, n, PTREG_DEVICE_WG, sizeof args / sizeof args[0], args, err);
}

ptreg_status nn_device_kdtree(const nn_device_model *m, const dbuf *queries, size_t n, float limit,
                              const dbuf *first_equal, dbuf *nearest, dbuf *dist2, ptreg_error *err)
{
    if (m->kd_search == NN_KD_LBKD)
        return lbkd_search(m, queries, n, limit, first_equal, nearest, dist2, err);
    /* without first_equal the kernel still needs a buffer: it never reads it */
    karg args[] = {KARG_BUF(queries),
                   KARG_U32(n),
                   KARG_F32(limit),
                   KARG_U32(first_equal != NULL),
                   KARG_BUF(first_equal ? first_equal : nearest),
                   KARG_BUF(nearest),
                   KARG_BUF(dist2),
                   KARG_BUF(m->tree.nodes),
                   KARG_BUF(m->tree.cells),
                   KARG_BUF(m->tree.parent),
                   KARG_BUF(m->tree.leaves),
                   KARG_BUF(m->tree.chunks),
                   KARG_BUF(m->tree.index_of_slot)};
    return dev_launch(m->kdtree, n, PTREG_DEVICE_WG, sizeof args / sizeof args[0], args, err);
}

ptreg_status nn_device_walk(const nn_device_model *m, const dbuf *queries, size_t n, int start, dbuf *nearest,
                            dbuf *dist2, dbuf *memory, dbuf *info, ptreg_error *err)
{
    if (!m->has_graph)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: the model on the device has no Delaunay graph",
                               m->dev->label);
    /* without memory the kernel still needs a buffer: it never touches it */
    karg args[] = {KARG_BUF(queries),
                   KARG_U32(n),
                   KARG_U32(start),
                   KARG_U32(memory != NULL),
                   KARG_BUF(nearest),
                   KARG_BUF(dist2),
                   KARG_BUF(memory ? memory : dist2),
                   KARG_BUF(info),
                   KARG_BUF(m->rows),
                   KARG_BUF(m->row_at),
                   KARG_BUF(m->nbr),
                   KARG_U32(m->graph_start),
                   KARG_BUF(m->tree.nodes),
                   KARG_BUF(m->tree.cells),
                   KARG_BUF(m->tree.parent),
                   KARG_BUF(m->tree.leaves),
                   KARG_BUF(m->tree.chunks),
                   KARG_BUF(m->tree.index_of_slot)};
    return dev_launch(m->walk, n, PTREG_DEVICE_WG, sizeof args / sizeof args[0], args, err);
}

ptreg_status nn_device_walk_stats(const nn_device_model *m, const dbuf *info, size_t n, dbuf *partials, dbuf *stats,
                                  size_t offset, ptreg_error *err)
{
    size_t groups = device_groups(n);
    karg part[] = {KARG_BUF(info), KARG_U32(n), KARG_BUF(partials)};
    karg total[] = {KARG_BUF(partials), KARG_U32(groups), KARG_BUF(stats), KARG_U32(offset)};
    ptreg_status st = dev_launch(m->walk_partials, groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, 3, part, err);
    return st ? st : dev_launch(m->walk_total, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 4, total, err);
}

void walk_stats_from_words(const uint64_t *w, ptreg_walk_stats *s)
{
    s->queries = w[0];
    s->steps = w[1];
    s->max_steps = w[2];
    s->fallbacks = w[3];
    s->kept = w[4];
    for (int b = 0; b < PTREG_WALK_HISTOGRAM; b++)
        s->histogram[b] = w[5 + b];
}
