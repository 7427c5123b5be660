#include "feat/neighborhood.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/counts.h"
#include "core/large_alloc.h"

/* k-NN lists have one length, so the table holds them in two n x kk
 * arrays (huge pages where the system has them); other lists in one
 * buffer per block, of the block's own length. */
typedef struct table_job {
    nn_hoods h;
    feat_table *table;
    size_t kk; /* k-NN: the table's width; 0: lists per block */
} table_job;

static void store_knn(const table_job *job, const nn_block *b)
{
    uint32_t *index = job->table->blocks[0];
    float *dist2 = job->table->blocks[1];
    for (size_t j = 0; j < b->count; j++) {
        const size_t at = count_slot(b->point[j], job->kk, 0), count = b->list[j].count;
        memcpy(index + at, b->list[j].index, count * sizeof *index);
        memcpy(dist2 + at, b->list[j].dist2, count * sizeof *dist2);
        job->table->list[b->point[j]] = (nn_list){index + at, dist2 + at, count};
    }
}

/* Other lists into the block's own buffers (the table's blocks 2b, 2b + 1). */
static int store_lists(const table_job *job, const nn_block *b)
{
    void **storage = job->table->blocks + 2 * b->number;
    size_t total = 0;
    for (size_t j = 0; j < b->count; j++)
        total += b->list[j].count;
    uint32_t *index = malloc((total ? total : 1) * sizeof *index);
    float *dist2 = malloc((total ? total : 1) * sizeof *dist2);
    storage[0] = index;
    storage[1] = dist2;
    if (!index || !dist2)
        return 0;
    for (size_t j = 0, at = 0; j < b->count; j++) {
        const size_t count = b->list[j].count;
        memcpy(index + at, b->list[j].index, count * sizeof *index);
        memcpy(dist2 + at, b->list[j].dist2, count * sizeof *dist2);
        job->table->list[b->point[j]] = (nn_list){index + at, dist2 + at, count};
        at += count;
    }
    return 1;
}

static int store_block(void *ctx, nn_block *b)
{
    const table_job *job = ctx;
    if (!job->kk)
        return store_lists(job, b);
    store_knn(job, b);
    return 1;
}

/* The table's storage: two n x kk arrays for k-NN lists (n x k entries
 * pass 2^32 at 100 M points and k 43: counted in size_t, and a table no
 * size_t can hold is refused as memory it cannot have), else room for a
 * pair of buffers per block. */
static ptreg_status allocate(const table_job *job, feat_table *table)
{
    table->list = calloc(table->n, sizeof *table->list);
    if (!table->list)
        return PTREG_ERR_NOMEM;
    if (!job->kk) {
        table->block_count = 2 * nn_hoods_blocks(&job->h);
        table->blocks = calloc(table->block_count, sizeof *table->blocks);
        return table->blocks ? PTREG_OK : PTREG_ERR_NOMEM;
    }
    size_t bytes;
    table->blocks = calloc(2, sizeof *table->blocks);
    if (!table->blocks || !count_mul3(table->n, job->kk, sizeof(uint32_t), &bytes))
        return PTREG_ERR_NOMEM;
    table->block_count = 2;
    table->blocks[0] = core_alloc_large(bytes);
    table->blocks[1] = core_alloc_large(bytes);
    return table->blocks[0] && table->blocks[1] ? PTREG_OK : PTREG_ERR_NOMEM;
}

ptreg_status feat_table_build(const ptreg_kdtree *tree, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                              int reference, nn_order order, feat_table *table, ptreg_error *err)
{
    memset(table, 0, sizeof *table);
    ptreg_status s = nn_check_neighborhood(nb, err);
    if (s)
        return s;
    const table_job job = {{tree, xyz, n, *nb, order, reference}, table, nb->k ? (nb->k < n ? nb->k : n) : 0};
    table->n = n;
    s = allocate(&job, table);
    if (!s && !nn_hoods_each(&job.h, store_block, (void *)&job))
        s = PTREG_ERR_NOMEM;
    if (s) {
        feat_table_free(table);
        return ptreg_error_set(err, s, "out of memory for the neighborhoods of %zu points", n);
    }
    for (size_t i = 0; i < n; i++)
        table->max_count = table->list[i].count > table->max_count ? table->list[i].count : table->max_count;
    return PTREG_OK;
}

void feat_table_free(feat_table *table)
{
    for (size_t b = 0; table->blocks && b < table->block_count; b++)
        free(table->blocks[b]);
    free(table->blocks);
    free(table->list);
    memset(table, 0, sizeof *table);
}
