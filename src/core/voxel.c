/* Voxel-grid downsampling with Open3D's semantics (core.h): the grid
 * anchored half a voxel below the cloud's minimum, each occupied voxel's
 * points replaced by their centroid, voxels in the order of their first
 * point (docs/ALGORITHMS.md, "Global registration", step 1). */
#include "core/voxel_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define AXIS_CELLS ((double)(1u << VOXEL_AXIS_BITS))

ptreg_status voxel_grid_init(const double lo[3], const double hi[3], double voxel, voxel_grid *g, ptreg_error *err)
{
    g->voxel = voxel;
    for (int k = 0; k < 3; k++) {
        if (!((hi[k] - lo[k]) / voxel + 1.0 < AXIS_CELLS))
            return ptreg_error_set(err, PTREG_ERR_ARG,
                                   "voxel downsampling: a voxel of %g makes more than 2^%d cells along an axis of "
                                   "extent %g",
                                   voxel, VOXEL_AXIS_BITS, hi[k] - lo[k]);
        g->lo[k] = lo[k] - 0.5 * voxel;
    }
    return PTREG_OK;
}

static uint64_t voxel_key(const voxel_grid *g, const float p[3])
{
    uint64_t key = 0;
    for (int k = 0; k < 3; k++)
        key = key << VOXEL_AXIS_BITS | (uint64_t)floor(((double)p[k] - g->lo[k]) / g->voxel);
    return key;
}

void voxel_sums_init(voxel_sums *v, const voxel_grid *grid, int normals, int colors)
{
    memset(v, 0, sizeof *v);
    v->grid = *grid;
    v->normals = normals;
    v->colors = colors;
}

void voxel_sums_free(voxel_sums *v)
{
    free(v->table);
    free(v->sums);
    free(v->normal_sums);
    free(v->color_sums);
    memset(v, 0, sizeof *v);
}

/* Every bit of the key moves every bit of the hash (MurmurHash3's 64-bit
 * finaliser): keys of neighbouring voxels differ in a few low bits of each
 * axis' field. The low bits pick the slot, the high 32 are kept in the
 * slot as a fingerprint, so probing past other voxels' slots reads the
 * table only and a voxel's sums are read once, when they are its own. */
static uint64_t hash_of(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    return key ^ (key >> 33);
}

/* A slot: the fingerprint (high 32 bits) and 1 + the voxel's index. */
static uint64_t slot_entry(uint64_t hash, size_t index)
{
    return (hash & 0xffffffff00000000ull) | (uint64_t)(index + 1);
}

static ptreg_status grow_table(voxel_sums *v, ptreg_error *err)
{
    const size_t size = v->table_size ? 2 * v->table_size : 1u << 16;
    uint64_t *table = calloc(size, sizeof *table);
    if (!table)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory for %zu voxels", v->count);
    for (size_t i = 0; i < v->count; i++) {
        const uint64_t h = hash_of(v->sums[i].key);
        size_t s = (size_t)h & (size - 1);
        while (table[s])
            s = (s + 1) & (size - 1);
        table[s] = slot_entry(h, i);
    }
    free(v->table);
    v->table = table;
    v->table_size = size;
    return PTREG_OK;
}

static ptreg_status grow_sums(voxel_sums *v, ptreg_error *err)
{
    const size_t cap = v->cap ? 2 * v->cap : 1u << 16;
    voxel_sum *sums = realloc(v->sums, cap * sizeof *sums);
    if (sums)
        v->sums = sums;
    double *ns = v->normals ? realloc(v->normal_sums, 3 * cap * sizeof *ns) : NULL;
    if (ns)
        v->normal_sums = ns;
    uint64_t *cs = v->colors ? realloc(v->color_sums, 3 * cap * sizeof *cs) : NULL;
    if (cs)
        v->color_sums = cs;
    if (!sums || (v->normals && !ns) || (v->colors && !cs))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory for %zu voxels", cap);
    v->cap = cap;
    return PTREG_OK;
}

/* The slot holding hash's voxel (its fingerprint and key), or the free
 * slot where it goes. */
static size_t probe(const voxel_sums *v, uint64_t key, uint64_t hash)
{
    const uint64_t mask = v->table_size - 1, print = hash & 0xffffffff00000000ull;
    size_t s = (size_t)hash & mask;
    for (; v->table[s]; s = (s + 1) & mask)
        if ((v->table[s] & 0xffffffff00000000ull) == print && v->sums[(uint32_t)v->table[s] - 1].key == key)
            break;
    return s;
}

/* The index of key's voxel (hash: hash_of(key)), made (zeroed) when it
 * is new. */
static ptreg_status find_voxel(voxel_sums *v, uint64_t key, uint64_t hash, size_t *index, ptreg_error *err)
{
    if (2 * (v->count + 1) > v->table_size && grow_table(v, err))
        return PTREG_ERR_NOMEM;
    const size_t s = probe(v, key, hash);
    if (v->table[s]) {
        *index = (uint32_t)v->table[s] - 1;
        return PTREG_OK;
    }
    if (v->count == UINT32_MAX - 1)
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: more than 2^32 voxels");
    if (v->count == v->cap && grow_sums(v, err))
        return PTREG_ERR_NOMEM;
    *index = v->count++;
    v->table[s] = slot_entry(hash, *index);
    v->sums[*index] = (voxel_sum){key, 0, {0, 0, 0}};
    if (v->normals)
        memset(v->normal_sums + 3 * *index, 0, 3 * sizeof(double));
    if (v->colors)
        memset(v->color_sums + 3 * *index, 0, 3 * sizeof(uint64_t));
    return PTREG_OK;
}

/* Points go in blocks through a three-stage pipeline: block b + 2's keys
 * are made and their slots prefetched, block b + 1's slots are read and
 * the voxels whose fingerprints they hold prefetched, block b is added in
 * point order. A cloud's points may hit voxels far apart in memory (a
 * uniform sample of a surface: every point a random voxel); the pipeline
 * lets those cache misses overlap instead of waiting one after another
 * (bench/NOTES.md change 119). */
enum { KEY_BLOCK = 32, STAGES = 3 };

typedef struct key_block {
    uint64_t key[KEY_BLOCK], hash[KEY_BLOCK];
    size_t first, count;
} key_block;

static void block_keys(const voxel_sums *v, const float *xyz, size_t n, size_t first, key_block *b)
{
    b->first = first;
    b->count = n - first < KEY_BLOCK ? n - first : KEY_BLOCK;
    for (size_t j = 0; j < b->count; j++) {
        b->key[j] = voxel_key(&v->grid, xyz + 3 * (first + j));
        b->hash[j] = hash_of(b->key[j]);
        if (v->table)
            __builtin_prefetch(&v->table[b->hash[j] & (v->table_size - 1)]);
    }
}

static void block_prefetch_sums(const voxel_sums *v, const key_block *b)
{
    for (size_t j = 0; v->table && j < b->count; j++) {
        const uint64_t e = v->table[b->hash[j] & (v->table_size - 1)];
        if (e && (e & 0xffffffff00000000ull) == (b->hash[j] & 0xffffffff00000000ull))
            __builtin_prefetch(&v->sums[(uint32_t)e - 1]);
    }
}

static ptreg_status block_add(voxel_sums *v, const key_block *b, const float *xyz, const float *normals,
                              const uint8_t *rgb, ptreg_error *err)
{
    for (size_t j = 0; j < b->count; j++) {
        const size_t i = b->first + j;
        size_t at = 0;
        ptreg_status st = find_voxel(v, b->key[j], b->hash[j], &at, err);
        if (st)
            return st;
        voxel_sum *s = &v->sums[at];
        s->count++;
        for (int k = 0; k < 3; k++)
            s->xyz[k] += xyz[3 * i + k];
        for (int k = 0; v->normals && k < 3; k++)
            v->normal_sums[3 * at + k] += normals[3 * i + k];
        for (int k = 0; v->colors && k < 3; k++)
            v->color_sums[3 * at + k] += rgb[3 * i + k];
    }
    return PTREG_OK;
}

ptreg_status voxel_sums_add(voxel_sums *v, const float *xyz, const float *normals, const uint8_t *rgb, size_t n,
                            ptreg_error *err)
{
    key_block blocks[STAGES];
    const size_t count = (n + KEY_BLOCK - 1) / KEY_BLOCK;
    for (size_t b = 0; b < count && b < STAGES - 1; b++)
        block_keys(v, xyz, n, b * KEY_BLOCK, &blocks[b]);
    for (size_t b = 0; b < count; b++) {
        if (b + 2 < count)
            block_keys(v, xyz, n, (b + 2) * KEY_BLOCK, &blocks[(b + 2) % STAGES]);
        if (b + 1 < count)
            block_prefetch_sums(v, &blocks[(b + 1) % STAGES]);
        ptreg_status st = block_add(v, &blocks[b % STAGES], xyz, normals, rgb, err);
        if (st)
            return st;
    }
    return PTREG_OK;
}

/* A voxel's centroid from its sum in double, or its normal made unit (NaN
 * where the normals cancel). */
static void voxel_finish(const double s[3], uint64_t count, int unit, float out[3])
{
    double scale = 1.0 / (double)count;
    if (unit) {
        const double len = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
        scale = len > 0 ? 1.0 / len : NAN;
    }
    for (int k = 0; k < 3; k++)
        out[k] = (float)(s[k] * scale);
}

ptreg_status voxel_sums_cloud(voxel_sums *v, ptreg_cloud *out, ptreg_error *err)
{
    free(v->table);
    v->table = NULL;
    v->table_size = 0;
    ptreg_status st = ptreg_cloud_alloc(out, v->count, v->normals, err);
    if (!st && v->colors && !(out->rgb = malloc(3 * (v->count ? v->count : 1)))) {
        ptreg_cloud_free(out);
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory for %zu colours", v->count);
    }
    for (size_t i = 0; !st && i < v->count; i++) {
        for (int k = 0; v->colors && k < 3; k++) /* the mean, rounded half up */
            out->rgb[3 * i + k] = (uint8_t)((2 * v->color_sums[3 * i + k] + v->sums[i].count) / (2 * v->sums[i].count));
        voxel_finish(v->sums[i].xyz, v->sums[i].count, 0, out->xyz + 3 * i);
        if (v->normals)
            voxel_finish(v->normal_sums + 3 * i, v->sums[i].count, 1, out->normals + 3 * i);
    }
    return st;
}

ptreg_status ptreg_voxel_downsample(const ptreg_cloud *in, double voxel, ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    if (!(voxel > 0.0) || !isfinite(voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: the voxel size %g is not a positive number",
                               voxel);
    if (in->n > UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: %zu points is too many", in->n);
    for (size_t i = 0; i < 3 * in->n; i++)
        if (!isfinite(in->xyz[i]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: point %zu is not finite", i / 3);
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(in->xyz, in->n, lo, hi);
    voxel_grid grid;
    ptreg_status st = voxel_grid_init(lo, hi, voxel, &grid, err);
    if (st)
        return st;
    voxel_sums sums;
    voxel_sums_init(&sums, &grid, in->normals != NULL, in->rgb != NULL);
    st = voxel_sums_add(&sums, in->xyz, in->normals, in->rgb, in->n, err);
    if (!st)
        st = voxel_sums_cloud(&sums, out, err);
    if (!st)
        memcpy(out->origin, in->origin, sizeof out->origin);
    voxel_sums_free(&sums);
    return st;
}
