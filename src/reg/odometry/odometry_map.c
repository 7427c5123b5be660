/* Odometry's local map: a voxel hash map of bounded voxels
 * (odometry_impl.h). A nearest-point query visits the query's voxel first
 * and then only those of its 26 neighbours whose box is nearer than the
 * best point found so far, which gives the same point as searching all 27
 * (KISS-ICP's search) at a fraction of the lookups. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reg/odometry/odometry_impl.h"

#define COORD_BITS 21
#define COORD_BIAS (1 << (COORD_BITS - 1))
#define COORD_MASK ((1u << COORD_BITS) - 1u)

static uint64_t pack(const int32_t c[3])
{
    return ((uint64_t)((uint32_t)(c[0] + COORD_BIAS) & COORD_MASK) |
            ((uint64_t)((uint32_t)(c[1] + COORD_BIAS) & COORD_MASK) << COORD_BITS) |
            ((uint64_t)((uint32_t)(c[2] + COORD_BIAS) & COORD_MASK) << (2 * COORD_BITS))) +
           1u;
}

static size_t home(const odo_map *m, uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & m->mask;
}

/* The table position holding key, or the empty one where it would go. */
static size_t probe(const odo_map *m, uint64_t key)
{
    size_t i = home(m, key);
    while (m->table[i].key && m->table[i].key != key)
        i = (i + 1) & m->mask;
    return i;
}

static int alloc_table(odo_map *m, size_t size)
{
    odo_entry *table = calloc(size, sizeof *table);
    if (!table)
        return -1;
    free(m->table);
    m->table = table, m->mask = size - 1;
    for (size_t c = 0; c < m->cells; c++) {
        const uint64_t key = pack(m->coord + 3 * c);
        m->table[probe(m, key)] = (odo_entry){key, (uint32_t)c, m->count[c]};
    }
    return 0;
}

int odo_map_init(odo_map *m, double voxel, int per)
{
    memset(m, 0, sizeof *m);
    m->voxel = voxel, m->inv_voxel = 1.0 / voxel, m->per = per;
    m->spacing2 = voxel * voxel / per;
    return alloc_table(m, 1024);
}

void odo_map_free(odo_map *m)
{
    free(m->table), free(m->coord), free(m->count), free(m->offset);
    memset(m, 0, sizeof *m);
}

static int grow_cells(odo_map *m)
{
    const size_t cap = m->cap ? 2 * m->cap : 4096;
    int32_t *coord = realloc(m->coord, 3 * cap * sizeof *coord);
    if (coord)
        m->coord = coord;
    uint8_t *count = realloc(m->count, cap * sizeof *count);
    if (count)
        m->count = count;
    float *offset = realloc(m->offset, 3 * (size_t)m->per * cap * sizeof *offset);
    if (offset)
        m->offset = offset;
    if (!coord || !count || !offset)
        return -1;
    m->cap = cap;
    return 0;
}

static void voxel_of(const odo_map *m, const double p[3], int32_t c[3])
{
    for (int k = 0; k < 3; k++)
        c[k] = (int32_t)floor(p[k] * m->inv_voxel);
}

static void centre_of(const odo_map *m, const int32_t c[3], double centre[3])
{
    for (int k = 0; k < 3; k++)
        centre[k] = ((double)c[k] + 0.5) * m->voxel;
}

static void put(odo_map *m, size_t entry, const double p[3], const int32_t c[3])
{
    const size_t cell = m->table[entry].cell;
    double centre[3];
    centre_of(m, c, centre);
    float *block = m->offset + 3 * (size_t)m->per * cell;
    for (int k = 0; k < 3; k++)
        block[k * m->per + m->count[cell]] = (float)(p[k] - centre[k]);
    m->table[entry].count = ++m->count[cell];
    m->points++;
}

/* Whether p keeps the map's spacing from every point of the cell. */
static int spaced(const odo_map *m, size_t cell, const double p[3], const int32_t c[3])
{
    double centre[3];
    centre_of(m, c, centre);
    const float *block = m->offset + 3 * (size_t)m->per * cell;
    for (int q = 0; q < m->count[cell]; q++) {
        double d2 = 0.0;
        for (int k = 0; k < 3; k++)
            d2 += (p[k] - centre[k] - block[k * m->per + q]) * (p[k] - centre[k] - block[k * m->per + q]);
        if (d2 < m->spacing2)
            return 0;
    }
    return 1;
}

int odo_map_add(odo_map *m, const double *xyz, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        const double *p = xyz + 3 * j;
        int32_t c[3];
        voxel_of(m, p, c);
        const uint64_t key = pack(c);
        size_t i = probe(m, key);
        if (m->table[i].key) {
            const size_t cell = m->table[i].cell;
            if (m->count[cell] < m->per && spaced(m, cell, p, c))
                put(m, i, p, c);
            continue;
        }
        if ((m->cells == m->cap && grow_cells(m)) || m->cells >= UINT32_MAX)
            return -1;
        const size_t cell = m->cells++;
        memcpy(m->coord + 3 * cell, c, sizeof c);
        m->count[cell] = 0;
        m->table[i] = (odo_entry){key, (uint32_t)cell, 0};
        put(m, i, p, c);
        if (2 * m->cells > m->mask + 1 && alloc_table(m, 2 * (m->mask + 1)))
            return -1;
    }
    return 0;
}

/* Empties table position i, moving later entries of its run back
 * (linear probing's deletion: no tombstones). */
static void table_delete(odo_map *m, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->table[j].key)
            break;
        const size_t h = home(m, m->table[j].key);
        /* j's entry may move to i when its home is not cyclically in (i, j] */
        const int stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!stays) {
            m->table[i] = m->table[j];
            i = j;
        }
    }
    m->table[i].key = 0;
}

static void remove_cell(odo_map *m, size_t cell)
{
    m->points -= m->count[cell];
    table_delete(m, probe(m, pack(m->coord + 3 * cell)));
    const size_t last = --m->cells;
    if (cell == last)
        return;
    memcpy(m->coord + 3 * cell, m->coord + 3 * last, 3 * sizeof *m->coord);
    m->count[cell] = m->count[last];
    memcpy(m->offset + 3 * (size_t)m->per * cell, m->offset + 3 * (size_t)m->per * last,
           3 * (size_t)m->per * sizeof *m->offset);
    m->table[probe(m, pack(m->coord + 3 * cell))].cell = (uint32_t)cell;
}

void odo_map_prune(odo_map *m, const double c[3], double range)
{
    const double r2 = range * range;
    for (size_t cell = 0; cell < m->cells;) {
        double centre[3], d2 = 0.0;
        centre_of(m, m->coord + 3 * cell, centre);
        const float *block = m->offset + 3 * (size_t)m->per * cell;
        for (int k = 0; k < 3; k++)
            d2 += (centre[k] + block[k * m->per] - c[k]) * (centre[k] + block[k * m->per] - c[k]);
        if (d2 >= r2)
            remove_cell(m, cell); /* the last cell comes here: look at it next */
        else
            cell++;
    }
}

void odo_map_drop_columns(odo_map *m, const int32_t lo[2], const int32_t hi[2])
{
    for (size_t cell = 0; cell < m->cells;) {
        const int32_t *c = m->coord + 3 * cell;
        if (c[0] >= lo[0] && c[0] < hi[0] && c[1] >= lo[1] && c[1] < hi[1])
            remove_cell(m, cell); /* the last cell comes here: look at it next */
        else
            cell++;
    }
}

/* The 27 neighbours, the query's own voxel first, then faces, edges and
 * corners: the nearest are searched first and prune the rest. */
static const int8_t neighbours[27][3] = {
    {0, 0, 0},  {-1, 0, 0},   {1, 0, 0},   {0, -1, 0},  {0, 1, 0},  {0, 0, -1},  {0, 0, 1},   {-1, -1, 0}, {-1, 1, 0},
    {1, -1, 0}, {1, 1, 0},    {-1, 0, -1}, {-1, 0, 1},  {1, 0, -1}, {1, 0, 1},   {0, -1, -1}, {0, -1, 1},  {0, 1, -1},
    {0, 1, 1},  {-1, -1, -1}, {-1, -1, 1}, {-1, 1, -1}, {-1, 1, 1}, {1, -1, -1}, {1, -1, 1},  {1, 1, -1},  {1, 1, 1}};

/* The nearest point of a cell to q (within *best2): 1 with it in out. */
static int nearest_in_cell(const odo_map *m, const odo_entry *e, const int32_t nc[3], const double q[3], double *best2,
                           double out[3])
{
    double centre[3];
    centre_of(m, nc, centre);
    const float qr[3] = {(float)(q[0] - centre[0]), (float)(q[1] - centre[1]), (float)(q[2] - centre[2])};
    const float *x = m->offset + 3 * (size_t)m->per * e->cell, *y = x + m->per, *z = y + m->per;
    const int count = (int)e->count;
    float d2[ODO_MAX_PER]; /* all distances first: a loop the compiler vectorizes */
    for (int p = 0; p < count; p++) {
        const float dx = x[p] - qr[0], dy = y[p] - qr[1], dz = z[p] - qr[2];
        d2[p] = dx * dx + dy * dy + dz * dz;
    }
    int best = -1;
    float best_d2 = (float)*best2;
    for (int p = 0; p < count; p++)
        if (d2[p] < best_d2)
            best_d2 = d2[p], best = p;
    if (best < 0)
        return 0;
    *best2 = best_d2;
    out[0] = centre[0] + x[best], out[1] = centre[1] + y[best], out[2] = centre[2] + z[best];
    return 1;
}

int odo_map_nearest(const odo_map *m, const double q[3], odo_near_cache *cache, double *best2, double out[3])
{
    int32_t c[3];
    voxel_of(m, q, c);
    if (cache && (cache->voxel[0] != c[0] || cache->voxel[1] != c[1] || cache->voxel[2] != c[2] || !cache->valid)) {
        memcpy(cache->voxel, c, sizeof c);
        for (int v = 0; v < 27; v++)
            cache->entry[v] = ODO_NEAR_UNKNOWN;
        cache->valid = 1;
    }
    double local[3];
    for (int k = 0; k < 3; k++)
        local[k] = q[k] - (double)c[k] * m->voxel;
    int found = 0;
    for (int v = 0; v < 27; v++) {
        const int8_t *d = neighbours[v];
        double bound = 0.0; /* from q to the neighbour's box */
        for (int k = 0; k < 3; k++) {
            const double gap = d[k] < 0 ? local[k] : d[k] > 0 ? m->voxel - local[k] : 0.0;
            bound += gap * gap;
        }
        if (bound >= *best2)
            continue;
        const int32_t nc[3] = {c[0] + d[0], c[1] + d[1], c[2] + d[2]};
        uint32_t at = cache ? cache->entry[v] : ODO_NEAR_UNKNOWN;
        if (at == ODO_NEAR_UNKNOWN) {
            const size_t i = probe(m, pack(nc));
            at = m->table[i].key ? (uint32_t)i : ODO_NEAR_NONE;
            if (cache)
                cache->entry[v] = at;
        }
        if (at != ODO_NEAR_NONE)
            found |= nearest_in_cell(m, &m->table[at], nc, q, best2, out);
    }
    return found;
}

void odo_map_points(const odo_map *m, double *out)
{
    size_t n = 0;
    for (size_t cell = 0; cell < m->cells; cell++) {
        double centre[3];
        centre_of(m, m->coord + 3 * cell, centre);
        const float *block = m->offset + 3 * (size_t)m->per * cell;
        for (int p = 0; p < m->count[cell]; p++, n++)
            for (int k = 0; k < 3; k++)
                out[3 * n + k] = centre[k] + block[k * m->per + p];
    }
}

size_t odo_map_bytes(const odo_map *m)
{
    return (m->mask + 1) * sizeof *m->table +
           m->cap * (3 * sizeof *m->coord + sizeof *m->count + 3 * (size_t)m->per * sizeof *m->offset);
}
