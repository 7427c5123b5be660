/* The model index file (.pti, docs/FORMATS.md): a 64-byte header, a table
 * of sections, and the index's arrays as they are in memory, each 64-byte
 * aligned, so loading is one read and a check; the arrays are used in
 * place. Everything a file says is checked before it is used: sizes against
 * the file, the checksum, and every index the searches will follow. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/io.h"
#include "nn/index_impl.h"
#include "ptreg/nn.h"
#include "nn/testing.h"

#define PTI_MAGIC "PTREGIDX"
#define PTI_VERSION 2u        /* 2: the TUNE section (the measured method) */
#define PTI_OLDEST_VERSION 1u /* still read: no measurement, auto follows its rule */
#define PTI_ENDIAN 0x01020304u
#define PTI_HEADER 64u
#define PTI_ALIGN 64u

typedef struct pti_header {
    char magic[8];
    uint32_t version;
    uint32_t endian;
    uint64_t file_size;
    uint64_t checksum; /* pti_checksum of every byte after the header */
    uint32_t sections;
    uint32_t header_bytes;
    uint8_t unused[24];
} pti_header;

typedef struct pti_section {
    uint32_t tag;
    uint32_t elem_size;
    uint64_t offset;
    uint64_t count;
} pti_section;

/* The counts the arrays are checked against, and the graph's scalars. */
typedef struct pti_meta {
    uint64_t points, leaf_size, nodes, leaves, near_blocks, chunks;
    uint64_t has_graph, graph_slots, graph_edges, graph_start, graph_duplicates;
    double kdtree_ms, delaunay_ms; /* how long the build took, for reports */
    char note[256];
} pti_meta;

enum {
    TAG_META = 1,
    TAG_POINTS,
    TAG_NODES,
    TAG_CELLS,
    TAG_PARENT,
    TAG_LEAVES,
    TAG_NEAR,
    TAG_CHUNKS,
    TAG_INDEX,
    TAG_SLOT,
    TAG_DT_OFFSET,
    TAG_DT_NBR,
    TAG_DT_EX,
    TAG_DT_EY,
    TAG_DT_EZ,
    TAG_DT_HALF,
    TAG_TUNE,
    TAG_COUNT
};

/* Version 2's TUNE section: ptreg_index_nn_tuning at fixed widths. */
typedef struct pti_tune {
    uint32_t method; /* a ptreg_nn_method; 0: none measured */
    uint32_t threads, iterations, repeat;
    uint64_t queries;
    double median_ms[PTREG_INDEX_NN_SLOTS]; /* -1: not measured */
} pti_tune;

_Static_assert(sizeof(pti_tune) == 88, "TUNE section size");

_Static_assert(sizeof(pti_header) == PTI_HEADER, "header size");

typedef struct pti_part {
    uint32_t tag, elem_size;
    uint64_t count;
    const void *data;
} pti_part;

uint64_t pti_checksum(const void *data, size_t size)
{
    const uint64_t basis = 0xcbf29ce484222325ull, prime = 0x100000001b3ull;
    const unsigned char *p = data;
    uint64_t lane[4] = {basis, basis, basis, basis};
    for (size_t at = 0; at + 32 <= size; at += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + at + 8 * (size_t)k, sizeof w);
            lane[k] = (lane[k] ^ w) * prime;
            lane[k] ^= lane[k] >> 32;
        }
    uint64_t h = basis;
    const unsigned char *bytes = (const unsigned char *)lane;
    for (size_t i = 0; i < sizeof lane; i++)
        h = (h ^ bytes[i]) * prime;
    for (size_t i = size / 32 * 32; i < size; i++) /* none in a valid file: its body is whole 64-byte units */
        h = (h ^ p[i]) * prime;
    return h;
}

static uint64_t align_up(uint64_t x) { return (x + PTI_ALIGN - 1) / PTI_ALIGN * PTI_ALIGN; }

/* ---- writing ---- */

static size_t list_parts(const ptreg_model_index *idx, const pti_meta *meta, const pti_tune *tune, pti_part *parts)
{
    const ptreg_kdtree *t = idx->tree;
    const delaunay_graph *g = idx->graph;
    size_t k = 0;
    parts[k++] = (pti_part){TAG_META, sizeof *meta, 1, meta};
    parts[k++] = (pti_part){TAG_POINTS, sizeof(float), 3 * (uint64_t)idx->n, idx->points};
    parts[k++] = (pti_part){TAG_NODES, sizeof *t->nodes, t->node_count, t->nodes};
    parts[k++] = (pti_part){TAG_CELLS, sizeof *t->cells, t->node_count, t->cells};
    parts[k++] = (pti_part){TAG_PARENT, sizeof *t->parent, t->node_count, t->parent};
    parts[k++] = (pti_part){TAG_LEAVES, sizeof *t->leaves, t->leaf_count, t->leaves};
    parts[k++] = (pti_part){TAG_NEAR, sizeof *t->near, t->near_count, t->near};
    parts[k++] = (pti_part){TAG_CHUNKS, sizeof *t->chunks, t->chunk_count, t->chunks};
    parts[k++] = (pti_part){TAG_INDEX, sizeof *t->index, t->chunk_count * PTREG_KD_LANES, t->index};
    parts[k++] = (pti_part){TAG_SLOT, sizeof *t->slot, t->n, t->slot};
    if (g) {
        parts[k++] = (pti_part){TAG_DT_OFFSET, sizeof *g->offset, g->slots + 1, g->offset};
        parts[k++] = (pti_part){TAG_DT_NBR, sizeof *g->nbr, g->edges, g->nbr};
        parts[k++] = (pti_part){TAG_DT_EX, sizeof(float), g->edges, g->ex};
        parts[k++] = (pti_part){TAG_DT_EY, sizeof(float), g->edges, g->ey};
        parts[k++] = (pti_part){TAG_DT_EZ, sizeof(float), g->edges, g->ez};
        parts[k++] = (pti_part){TAG_DT_HALF, sizeof(float), g->edges, g->half};
    }
    if (tune)
        parts[k++] = (pti_part){TAG_TUNE, sizeof *tune, 1, tune};
    return k;
}

static void fill_meta(const ptreg_model_index *idx, pti_meta *m)
{
    const ptreg_kdtree *t = idx->tree;
    const delaunay_graph *g = idx->graph;
    memset(m, 0, sizeof *m);
    m->points = idx->n, m->leaf_size = t->leaf_size, m->nodes = t->node_count, m->leaves = t->leaf_count;
    m->near_blocks = t->near_count, m->chunks = t->chunk_count;
    m->has_graph = g != NULL;
    if (g)
        m->graph_slots = g->slots, m->graph_edges = g->edges, m->graph_start = g->start,
        m->graph_duplicates = g->duplicates;
    m->kdtree_ms = idx->kdtree_ms, m->delaunay_ms = idx->delaunay_ms;
    snprintf(m->note, sizeof m->note, "%s", idx->note);
}

static void fill_tune(const ptreg_index_nn_tuning *t, pti_tune *f)
{
    memset(f, 0, sizeof *f);
    f->method = (uint32_t)t->method, f->threads = (uint32_t)t->threads;
    f->iterations = (uint32_t)t->iterations, f->repeat = (uint32_t)t->repeat;
    f->queries = t->queries;
    memcpy(f->median_ms, t->median_ms, sizeof f->median_ms);
}

/* Section table and offsets; returns the file size. */
static uint64_t lay_out(const pti_part *parts, size_t count, pti_section *table)
{
    uint64_t at = align_up(PTI_HEADER + count * sizeof *table);
    for (size_t i = 0; i < count; i++) {
        table[i] = (pti_section){parts[i].tag, parts[i].elem_size, at, parts[i].count};
        at = align_up(at + parts[i].count * parts[i].elem_size);
    }
    return at;
}

/* Everything after the header, as the file holds it: the section table,
 * then each section at its offset, zero padding between. */
static unsigned char *make_body(const pti_part *parts, const pti_section *table, size_t count, uint64_t file_size)
{
    unsigned char *body = calloc(1, (size_t)(file_size - PTI_HEADER));
    if (!body)
        return NULL;
    memcpy(body, table, count * sizeof *table);
    for (size_t i = 0; i < count; i++)
        if (parts[i].count)
            memcpy(body + table[i].offset - PTI_HEADER, parts[i].data, (size_t)(parts[i].count * parts[i].elem_size));
    return body;
}

ptreg_status pti_save_version(const ptreg_model_index *idx, const char *path, unsigned version, ptreg_error *err)
{
    if (version < PTI_OLDEST_VERSION || version > PTI_VERSION)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no index version %u", path, version);
    pti_meta meta;
    fill_meta(idx, &meta);
    pti_tune tune;
    fill_tune(&idx->tuning, &tune);
    pti_part parts[TAG_COUNT];
    pti_section table[TAG_COUNT];
    size_t count = list_parts(idx, &meta, version >= 2 ? &tune : NULL, parts);
    pti_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PTI_MAGIC, sizeof h.magic);
    h.version = version, h.endian = PTI_ENDIAN, h.sections = (uint32_t)count, h.header_bytes = PTI_HEADER;
    h.file_size = lay_out(parts, count, table);
    unsigned char *body = make_body(parts, table, count, h.file_size);
    if (!body)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory for %llu bytes", path,
                               (unsigned long long)h.file_size);
    size_t body_size = (size_t)(h.file_size - PTI_HEADER);
    h.checksum = pti_checksum(body, body_size);
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (!st && (fwrite(&h, sizeof h, 1, af.fp) != 1 || fwrite(body, 1, body_size, af.fp) != body_size)) {
        ptreg_atomic_abort(&af);
        st = ptreg_error_set(err, PTREG_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    } else if (!st) {
        st = ptreg_atomic_commit(&af, err);
    }
    free(body);
    return st;
}

ptreg_status ptreg_model_index_save(const ptreg_model_index *idx, const char *path, ptreg_error *err)
{
    return pti_save_version(idx, path, PTI_VERSION, err);
}

/* ---- reading ---- */

typedef struct pti_reader {
    const unsigned char *data;
    size_t size;
    const char *name;
    ptreg_error *err;
    const pti_section *table;
    uint32_t sections;
    uint32_t version;
} pti_reader;

static ptreg_status bad(const pti_reader *r, const char *what)
{
    return ptreg_error_set(r->err, PTREG_ERR_FORMAT, "%s: not a usable ptreg index: %s", r->name, what);
}

static ptreg_status check_header(pti_reader *r, const pti_header **out)
{
    if (r->size < PTI_HEADER)
        return bad(r, "shorter than the 64-byte header (truncated?)");
    const pti_header *h = (const pti_header *)r->data;
    if (memcmp(h->magic, PTI_MAGIC, sizeof h->magic))
        return bad(r, "wrong magic (not a .pti file)");
    if (h->endian != PTI_ENDIAN)
        return bad(r, "written on a machine of the other byte order");
    if (h->version < PTI_OLDEST_VERSION || h->version > PTI_VERSION)
        return ptreg_error_set(
            r->err, PTREG_ERR_FORMAT,
            "%s: index version %u, this ptreg reads versions %u to %u (rebuild it with `ptreg index`)", r->name,
            h->version, PTI_OLDEST_VERSION, PTI_VERSION);
    if (h->file_size != r->size)
        return ptreg_error_set(r->err, PTREG_ERR_FORMAT,
                               "%s: the header says %llu bytes, the file has %zu (truncated?)", r->name,
                               (unsigned long long)h->file_size, r->size);
    if (r->size % PTI_ALIGN)
        return bad(r, "not a whole number of 64-byte units (truncated?)");
    if (h->header_bytes != PTI_HEADER || h->sections == 0 || h->sections > TAG_COUNT ||
        PTI_HEADER + (uint64_t)h->sections * sizeof(pti_section) > r->size)
        return bad(r, "bad section table");
    if (pti_checksum(r->data + PTI_HEADER, r->size - PTI_HEADER) != h->checksum)
        return bad(r, "checksum mismatch (corrupted)");
    r->table = (const pti_section *)(r->data + PTI_HEADER);
    r->sections = h->sections;
    r->version = h->version;
    *out = h;
    return PTREG_OK;
}

/* The section with `tag`, checked to hold `count` elements of elem_size
 * inside the file, aligned; NULL (and err set) otherwise. */
static const void *section(const pti_reader *r, uint32_t tag, uint32_t elem_size, uint64_t count, ptreg_status *st)
{
    for (uint32_t i = 0; i < r->sections; i++) {
        const pti_section *s = &r->table[i];
        if (s->tag != tag)
            continue;
        if (s->elem_size != elem_size || s->count != count || s->offset % PTI_ALIGN || s->offset > r->size ||
            (elem_size && count > (r->size - s->offset) / elem_size)) {
            char what[96];
            snprintf(what, sizeof what, "section %u has the wrong size or lies outside the file", tag);
            *st = bad(r, what);
            return NULL;
        }
        return r->data + s->offset;
    }
    char what[64];
    snprintf(what, sizeof what, "section %u is missing", tag);
    *st = bad(r, what);
    return NULL;
}

static int meta_sane(const pti_meta *m)
{
    return m->points > 0 && m->points < PTREG_NO_NEIGHBOR / 2 && m->leaf_size >= 4 &&
           m->leaf_size <= PTREG_KD_MAX_LEAF && m->nodes > 0 && m->leaves > 0 &&
           m->chunks >= (m->points + PTREG_KD_LANES - 1) / PTREG_KD_LANES && m->chunks <= m->points &&
           m->chunks <= KD_MAX_CHUNKS && m->nodes <= m->points && m->leaves <= m->points &&
           m->near_blocks <= m->leaves * 64 &&
           (!m->has_graph || (m->graph_slots == m->chunks * PTREG_KD_LANES && m->graph_start < m->graph_slots &&
                              m->graph_edges < UINT32_MAX && m->graph_duplicates < m->points)) &&
           m->kdtree_ms >= 0.0 && m->kdtree_ms < 1e12 && m->delaunay_ms >= 0.0 && m->delaunay_ms < 1e12 &&
           memchr(m->note, '\0', sizeof m->note) != NULL;
}

/* Every reference a search follows stays inside its array. */
static int tree_sane(const ptreg_kdtree *t)
{
    for (size_t i = 0; i < t->node_count; i++) {
        if (t->parent[i] >= t->node_count)
            return 0;
        for (int c = 0; c < 2; c++) {
            uint32_t ref = t->nodes[i].child[c];
            if ((ref & PTREG_KD_LEAF_BIT) ? (ref & ~PTREG_KD_LEAF_BIT) >= t->leaf_count
                                          : ref >= t->node_count || ref <= i)
                return 0;
        }
    }
    for (size_t i = 0; i < t->leaf_count; i++) {
        const kd_leaf *l = &t->leaves[i];
        if (l->chunks < 1 || l->chunks > PTREG_KD_LEAF_CHUNKS || l->first_chunk >= t->chunk_count ||
            l->chunks > t->chunk_count - l->first_chunk || l->parent >= t->node_count ||
            l->near_first > t->near_count || l->near_blocks > t->near_count - l->near_first)
            return 0;
    }
    for (size_t i = 0; i < t->near_count; i++)
        for (int l = 0; l < PTREG_KD_NEAR_LANES; l++)
            if (t->near[i].leaf[l] != PTREG_NO_NEIGHBOR && t->near[i].leaf[l] >= t->leaf_count)
                return 0;
    for (size_t c = 0; c < t->chunk_count; c++)
        if (t->chunks[c].leaf >= t->leaf_count)
            return 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->slot[i] >= t->chunk_count * PTREG_KD_LANES || t->index[t->slot[i]] != i)
            return 0;
    for (size_t s = 0; s < t->chunk_count * PTREG_KD_LANES; s++)
        if (t->index[s] != PTREG_NO_NEIGHBOR && (t->index[s] >= t->n || t->slot[t->index[s]] != s))
            return 0;
    return 1;
}

/* Each slot holds its model point's bits, or NaN padding where no point
 * is, so no search can return an empty slot. */
static int chunks_match_points(const ptreg_kdtree *t, const float *points)
{
    for (size_t s = 0; s < t->chunk_count * PTREG_KD_LANES; s++) {
        const kd_chunk *ch = &t->chunks[s / PTREG_KD_LANES];
        size_t l = s % PTREG_KD_LANES;
        float p[3] = {ch->x[l], ch->y[l], ch->z[l]};
        uint32_t i = t->index[s];
        if (i == PTREG_NO_NEIGHBOR ? !isnan(p[0]) || !isnan(p[1]) || !isnan(p[2])
                                   : memcmp(p, &points[3 * (size_t)i], sizeof p) != 0)
            return 0;
    }
    return 1;
}

/* Walks only ever stand on points with a row (edges): the start and every
 * neighbor must have one. */
static int graph_sane(const delaunay_graph *g, const ptreg_kdtree *t)
{
    if (g->offset[0] != 0 || g->offset[g->slots] != g->edges)
        return 0;
    for (size_t s = 0; s < g->slots; s++)
        if (g->offset[s + 1] < g->offset[s] || (g->offset[s + 1] > g->offset[s] && t->index[s] == PTREG_NO_NEIGHBOR))
            return 0;
    if (g->offset[g->start + 1] == g->offset[g->start])
        return 0;
    for (size_t e = 0; e < g->edges; e++) {
        uint32_t j = g->nbr[e];
        if (j >= g->slots || g->offset[j + 1] == g->offset[j] || !(g->half[e] >= 0.0f) || !isfinite(g->half[e]))
            return 0;
    }
    return 1;
}

static ptreg_status assemble(pti_reader *r, const pti_meta *m, ptreg_model_index *idx)
{
    ptreg_status st = PTREG_OK;
    ptreg_kdtree *t = calloc(1, sizeof *t);
    delaunay_graph *g = m->has_graph ? calloc(1, sizeof *g) : NULL;
    idx->tree = t, idx->graph = g;
    if (!t || (m->has_graph && !g))
        return ptreg_error_set(r->err, PTREG_ERR_NOMEM, "%s: out of memory", r->name);
    t->borrowed = 1;
    t->n = m->points, t->leaf_size = (uint32_t)m->leaf_size, t->node_count = m->nodes, t->leaf_count = m->leaves;
    t->near_count = m->near_blocks, t->chunk_count = m->chunks;
    idx->n = m->points;
    if (!(idx->points = (float *)section(r, TAG_POINTS, sizeof(float), 3 * m->points, &st)) ||
        !(t->nodes = (kd_node *)section(r, TAG_NODES, sizeof *t->nodes, m->nodes, &st)) ||
        !(t->cells = (kd_cell *)section(r, TAG_CELLS, sizeof *t->cells, m->nodes, &st)) ||
        !(t->parent = (uint32_t *)section(r, TAG_PARENT, sizeof *t->parent, m->nodes, &st)) ||
        !(t->leaves = (kd_leaf *)section(r, TAG_LEAVES, sizeof *t->leaves, m->leaves, &st)) ||
        !(t->chunks = (kd_chunk *)section(r, TAG_CHUNKS, sizeof *t->chunks, m->chunks, &st)) ||
        !(t->index = (uint32_t *)section(r, TAG_INDEX, sizeof *t->index, m->chunks * PTREG_KD_LANES, &st)) ||
        !(t->slot = (uint32_t *)section(r, TAG_SLOT, sizeof *t->slot, m->points, &st)))
        return st;
    t->near = m->near_blocks ? (kd_near *)section(r, TAG_NEAR, sizeof *t->near, m->near_blocks, &st) : NULL;
    if (m->near_blocks && !t->near)
        return st;
    for (size_t i = 0; i < 3 * idx->n; i++)
        if (!isfinite(idx->points[i]))
            return bad(r, "a model point is not finite");
    if (!tree_sane(t))
        return bad(r, "the k-d tree's references are inconsistent");
    if (!chunks_match_points(t, idx->points))
        return bad(r, "the k-d tree's points differ from the model's");
    if (!g)
        return PTREG_OK;
    g->borrowed = 1;
    g->slots = m->graph_slots, g->edges = m->graph_edges, g->start = (uint32_t)m->graph_start;
    g->duplicates = m->graph_duplicates;
    if (!(g->offset = (uint32_t *)section(r, TAG_DT_OFFSET, sizeof *g->offset, g->slots + 1, &st)) ||
        !(g->nbr = (uint32_t *)section(r, TAG_DT_NBR, sizeof *g->nbr, g->edges, &st)) ||
        !(g->ex = (float *)section(r, TAG_DT_EX, sizeof(float), g->edges, &st)) ||
        !(g->ey = (float *)section(r, TAG_DT_EY, sizeof(float), g->edges, &st)) ||
        !(g->ez = (float *)section(r, TAG_DT_EZ, sizeof(float), g->edges, &st)) ||
        !(g->half = (float *)section(r, TAG_DT_HALF, sizeof(float), g->edges, &st)))
        return st;
    if (!graph_sane(g, t))
        return bad(r, "the Delaunay graph's references are inconsistent");
    const int rows = delaunay_make_rows(g, t);
    if (rows == 1)
        return bad(r, "the Delaunay graph's rows are more than its uint32 offsets name");
    if (rows)
        return ptreg_error_set(r->err, PTREG_ERR_NOMEM, "%s: out of memory", r->name);
    return PTREG_OK;
}

/* The measured method: version 2 files must hold one (method 0 when never
 * tuned); version 1 files predate it and get none. */
static ptreg_status read_tuning(const pti_reader *r, const pti_meta *m, ptreg_index_nn_tuning *t)
{
    index_nn_tuning_clear(t);
    if (r->version < 2)
        return PTREG_OK;
    ptreg_status st = PTREG_OK;
    const pti_tune *f = section(r, TAG_TUNE, sizeof *f, 1, &st);
    if (!f)
        return st;
    if (f->method > PTREG_INDEX_NN_LAST || f->threads > 1u << 20 || f->iterations > 1000000u || f->repeat > 1000000u ||
        f->queries >= PTREG_NO_NEIGHBOR)
        return bad(r, "the TUNE section's measurement is out of range");
    t->method = (int)f->method, t->threads = (int)f->threads, t->iterations = (int)f->iterations;
    t->repeat = (int)f->repeat, t->queries = (size_t)f->queries;
    memcpy(t->median_ms, f->median_ms, sizeof t->median_ms);
    const char *why = "";
    if (!index_nn_tuning_valid(t, m->has_graph != 0, &why)) {
        char what[160];
        snprintf(what, sizeof what, "TUNE section: %s", why);
        return bad(r, what);
    }
    return PTREG_OK;
}

/* Takes ownership of buf (64-byte aligned, size bytes) on success and on
 * failure. */
static ptreg_status load_buffer(void *buf, size_t size, const char *name, ptreg_model_index **out, ptreg_error *err)
{
    pti_reader r = {buf, size, name, err, NULL, 0, 0};
    const pti_header *h;
    ptreg_status st = check_header(&r, &h);
    const pti_meta *m = st ? NULL : section(&r, TAG_META, sizeof(pti_meta), 1, &st);
    if (!st && !meta_sane(m))
        st = bad(&r, "inconsistent counts");
    ptreg_model_index *idx = NULL;
    if (!st && !(idx = calloc(1, sizeof *idx)))
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", name);
    if (!st) {
        idx->storage = buf;
        snprintf(idx->note, sizeof idx->note, "%s", m->note);
        idx->kdtree_ms = m->kdtree_ms, idx->delaunay_ms = m->delaunay_ms;
        st = read_tuning(&r, m, &idx->tuning);
        st = st ? st : assemble(&r, m, idx);
    }
    if (st) {
        if (idx)
            ptreg_model_index_destroy(idx);
        else
            free(buf);
        return st;
    }
    *out = idx;
    return PTREG_OK;
}

ptreg_status ptreg_model_index_load_memory(const void *data, size_t size, const char *name, ptreg_model_index **out,
                                           ptreg_error *err)
{
    *out = NULL;
    void *buf = aligned_alloc(PTI_ALIGN, align_up(size ? size : 1));
    if (!buf)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory for %zu bytes", name, size);
    memcpy(buf, data, size);
    return load_buffer(buf, size, name, out, err);
}

ptreg_status ptreg_model_index_load(const char *path, ptreg_model_index **out, ptreg_error *err)
{
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0)
        size = ftell(fp);
    if (size < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    }
    void *buf = aligned_alloc(PTI_ALIGN, align_up(size ? (uint64_t)size : 1));
    if (!buf) {
        fclose(fp);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory for %ld bytes", path, size);
    }
    size_t got = fread(buf, 1, (size_t)size, fp);
    int read_error = ferror(fp);
    fclose(fp);
    if (read_error || got != (size_t)size) {
        free(buf);
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: read failed", path);
    }
    return load_buffer(buf, (size_t)size, path, out, err);
}
