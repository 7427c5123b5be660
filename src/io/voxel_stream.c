/* Voxel-grid downsampling of a file read in pieces: ptreg_voxel_downsample's
 * cloud, bit for bit, while memory holds one piece and the occupied voxels
 * rather than every point. Two passes: the bounds anchor the grid (Open3D's
 * voxel_min_bound), then each point is added to its voxel's sums in file
 * order, so each centroid is summed in the same order as the whole-cloud
 * version's and voxels come out in the order of their first point. */
#include "core/voxel_impl.h"
#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>

/* Points per piece: 12 MB of coordinates, few enough calls. */
#define PIECE_POINTS (1u << 20)

typedef struct bounds_pass {
    double lo[3], hi[3];
    size_t points;
    int normals;
} bounds_pass;

static ptreg_status take_bounds(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    (void)err;
    bounds_pass *b = ctx;
    for (size_t i = 0; i < piece->n; i++)
        for (int k = 0; k < 3; k++) {
            b->lo[k] = fmin(b->lo[k], piece->xyz[3 * i + k]);
            b->hi[k] = fmax(b->hi[k], piece->xyz[3 * i + k]);
        }
    b->points += piece->n;
    b->normals = piece->normals != NULL;
    return PTREG_OK;
}

/* An occupied voxel: its key and sums, in the order of its first point. */
typedef struct voxel_sum {
    uint64_t key;
    uint64_t count;
    double xyz[3];
} voxel_sum;

typedef struct sum_pass {
    voxel_grid grid;
    int normals;
    voxel_sum *sums;
    double *normal_sums; /* 3 per voxel when the file has normals */
    size_t count, cap;
    uint32_t *table; /* open addressing: 1 + a voxel's index, 0 when free */
    size_t table_size;
    double origin[3];
} sum_pass;

static size_t slot_of(uint64_t key, size_t size)
{
    key ^= key >> 31;
    key *= 0x9e3779b97f4a7c15ull;
    return (size_t)(key >> 17) & (size - 1);
}

static ptreg_status grow_table(sum_pass *p, ptreg_error *err)
{
    const size_t size = p->table_size ? 2 * p->table_size : 1u << 16;
    uint32_t *table = calloc(size, sizeof *table);
    if (!table)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory for %zu voxels", p->count);
    for (size_t v = 0; v < p->count; v++) {
        size_t s = slot_of(p->sums[v].key, size);
        while (table[s])
            s = (s + 1) & (size - 1);
        table[s] = (uint32_t)(v + 1);
    }
    free(p->table);
    p->table = table;
    p->table_size = size;
    return PTREG_OK;
}

static ptreg_status grow_sums(sum_pass *p, ptreg_error *err)
{
    const size_t cap = p->cap ? 2 * p->cap : 1u << 16;
    voxel_sum *sums = realloc(p->sums, cap * sizeof *sums);
    if (sums)
        p->sums = sums;
    double *ns = p->normals ? realloc(p->normal_sums, 3 * cap * sizeof *ns) : NULL;
    if (ns)
        p->normal_sums = ns;
    if (!sums || (p->normals && !ns))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "voxel downsampling: out of memory for %zu voxels", cap);
    p->cap = cap;
    return PTREG_OK;
}

/* The index of key's voxel, made (zeroed) when it is new. */
static ptreg_status find_voxel(sum_pass *p, uint64_t key, size_t *index, ptreg_error *err)
{
    if (2 * (p->count + 1) > p->table_size && grow_table(p, err))
        return PTREG_ERR_NOMEM;
    size_t s = slot_of(key, p->table_size);
    for (; p->table[s]; s = (s + 1) & (p->table_size - 1))
        if (p->sums[p->table[s] - 1].key == key) {
            *index = p->table[s] - 1;
            return PTREG_OK;
        }
    if (p->count == UINT32_MAX - 1)
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: more than 2^32 voxels");
    if (p->count == p->cap && grow_sums(p, err))
        return PTREG_ERR_NOMEM;
    *index = p->count++;
    p->table[s] = (uint32_t)(*index + 1);
    p->sums[*index] = (voxel_sum){key, 0, {0, 0, 0}};
    if (p->normals)
        memset(p->normal_sums + 3 * *index, 0, 3 * sizeof(double));
    return PTREG_OK;
}

static ptreg_status add_piece(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    sum_pass *p = ctx;
    memcpy(p->origin, piece->origin, sizeof p->origin);
    for (size_t i = 0; i < piece->n; i++) {
        size_t v = 0;
        ptreg_status st = find_voxel(p, voxel_key(&p->grid, piece->xyz + 3 * i), &v, err);
        if (st)
            return st;
        voxel_sum *s = &p->sums[v];
        s->count++;
        for (int k = 0; k < 3; k++)
            s->xyz[k] += piece->xyz[3 * i + k];
        for (int k = 0; p->normals && k < 3; k++)
            p->normal_sums[3 * v + k] += piece->normals[3 * i + k];
    }
    return PTREG_OK;
}

static ptreg_status make_cloud(sum_pass *p, ptreg_cloud *out, ptreg_error *err)
{
    free(p->table); /* before the cloud: the peak is the sums and the cloud, not the table too */
    p->table = NULL;
    ptreg_status st = ptreg_cloud_alloc(out, p->count, p->normals, err);
    for (size_t v = 0; !st && v < p->count; v++) {
        voxel_finish(p->sums[v].xyz, p->sums[v].count, 0, out->xyz + 3 * v);
        if (p->normals)
            voxel_finish(p->normal_sums + 3 * v, p->sums[v].count, 1, out->normals + 3 * v);
    }
    if (!st)
        memcpy(out->origin, p->origin, sizeof out->origin);
    return st;
}

ptreg_status ptreg_voxel_downsample_file(const char *path, const ptreg_read_options *opt, double voxel,
                                         ptreg_cloud *out, ptreg_error *err)
{
    ptreg_cloud_init(out);
    if (!(voxel > 0.0) || !isfinite(voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG, "voxel downsampling: the voxel size %g is not a positive number",
                               voxel);
    bounds_pass b = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0, 0};
    ptreg_status st = ptreg_cloud_read_pieces(path, opt, PIECE_POINTS, take_bounds, &b, err);
    sum_pass p;
    memset(&p, 0, sizeof p);
    p.normals = b.normals;
    if (!st)
        st = voxel_grid_init(b.lo, b.hi, voxel, &p.grid, err);
    if (!st)
        st = ptreg_cloud_read_pieces(path, opt, PIECE_POINTS, add_piece, &p, err);
    if (!st)
        st = make_cloud(&p, out, err);
    free(p.table);
    free(p.sums);
    free(p.normal_sums);
    return st;
}
