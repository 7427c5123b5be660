/* A prior map cut into square tiles (ptreg/odometry.h's ptreg_tiled_map):
 * built once from a cloud file of any size, read in pieces, and read back
 * a tile at a time. The layout is docs/FORMATS.md's ".ptm": a header, the
 * tile table, then each tile's points as float32 offsets from its corner,
 * all little-endian. */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reg/odometry/odometry_impl.h"
#include "reg/odometry/tiled_map.h"

#define PTM_MAGIC "PTM1\r\n\032\n"
#define PTM_VERSION 1u
#define PTM_HEADER 96
#define PTM_ENTRY 24
/* A tile's corner index stays within int32 with room. */
#define PTM_MAX_INDEX 1e9
/* Points per piece while building, and the tiles' write buffers' budget. */
#define BUILD_PIECE (1u << 20)
#define BUILD_BUFFER_POINTS (16u << 20)

/* ---- little-endian fields ---- */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_f64(unsigned char *p, double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    put_u64(p, b);
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static double get_f64(const unsigned char *p)
{
    const uint64_t b = get_u64(p);
    double v;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* float32 in the file: the host's bits, little-endian */
static void put_f32(unsigned char *p, float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    put_u32(p, b);
}

static float get_f32(const unsigned char *p)
{
    const uint32_t b = get_u32(p);
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

void ptreg_tiled_map_options_default(ptreg_tiled_map_options *opt)
{
    opt->tile = 50.0;
    opt->voxel = 1.0;
    opt->max_points_per_voxel = 20;
}

static int whole_voxels(double tile, double voxel)
{
    const double k = tile / voxel;
    return k >= 1.0 && k <= 1e5 && fabs(k - nearbyint(k)) <= 1e-9 * k;
}

static ptreg_status check_map_options(const ptreg_tiled_map_options *o, ptreg_error *err)
{
    if (!(o->voxel > 0.0 && o->voxel <= 1e4) || !(o->tile > 0.0 && o->tile <= 1e6))
        return ptreg_error_set(err, PTREG_ERR_ARG, "tiled map: tile %g or voxel %g is not a positive size", o->tile,
                               o->voxel);
    if (!whole_voxels(o->tile, o->voxel))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "tiled map: the tile %g is not a whole number of voxels %g (1 to 1e5 of them)", o->tile,
                               o->voxel);
    if (o->max_points_per_voxel < 1 || o->max_points_per_voxel > ODO_MAX_PER)
        return ptreg_error_set(err, PTREG_ERR_ARG, "tiled map: %d points per voxel is not 1 to %d",
                               o->max_points_per_voxel, ODO_MAX_PER);
    return PTREG_OK;
}

/* ---- building ---- */

typedef struct build_tile {
    int32_t ix, iy;
    uint64_t count;   /* points read into it */
    uint64_t raw;     /* its first point in the scratch file */
    uint64_t written; /* of them, in the scratch file so far */
    float *buf;       /* its points not yet written (3 floats each) */
    size_t buffered, buf_cap;
} build_tile;

typedef struct build_state {
    double tile, z0;
    build_tile *tiles;
    size_t count, cap;
    size_t *slot; /* open addressing: tile index + 1, 0 empty */
    size_t slots;
    uint64_t points;
    double zlo, zhi;
    int scratch;      /* fd */
    const char *path; /* the cloud, for messages */
    int failed_io;
} build_state;

static size_t tile_home(int32_t ix, int32_t iy, size_t slots)
{
    uint64_t h = ((uint64_t)(uint32_t)ix << 32) | (uint32_t)iy;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (slots - 1);
}

static int rehash(build_state *b, size_t slots)
{
    size_t *slot = calloc(slots, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t t = 0; t < b->count; t++) {
        size_t h = tile_home(b->tiles[t].ix, b->tiles[t].iy, slots);
        while (slot[h])
            h = (h + 1) & (slots - 1);
        slot[h] = t + 1;
    }
    free(b->slot);
    b->slot = slot, b->slots = slots;
    return 0;
}

/* The tile (ix, iy): found, or added when `add`; NULL when absent or out
 * of memory. */
static build_tile *tile_at(build_state *b, int32_t ix, int32_t iy, int add)
{
    size_t h = tile_home(ix, iy, b->slots);
    while (b->slot[h]) {
        build_tile *t = &b->tiles[b->slot[h] - 1];
        if (t->ix == ix && t->iy == iy)
            return t;
        h = (h + 1) & (b->slots - 1);
    }
    if (!add)
        return NULL;
    if (b->count == b->cap) {
        const size_t cap = b->cap ? 2 * b->cap : 256;
        build_tile *tiles = realloc(b->tiles, cap * sizeof *tiles);
        if (!tiles)
            return NULL;
        b->tiles = tiles, b->cap = cap;
    }
    b->tiles[b->count] = (build_tile){.ix = ix, .iy = iy};
    b->slot[h] = ++b->count;
    if (2 * b->count > b->slots && rehash(b, 2 * b->slots))
        return NULL;
    return &b->tiles[b->count - 1];
}

/* A point of a piece in the file's coordinates, and its tile. */
typedef struct tile_point {
    int32_t ix, iy;
    double x, y, z;
} tile_point;

typedef ptreg_status (*point_action)(build_state *b, const tile_point *p, ptreg_error *err);

/* Both passes over the cloud: each point of a piece placed in its tile and
 * handed to act. */
static ptreg_status each_point(build_state *b, const ptreg_cloud *piece, point_action act, ptreg_error *err)
{
    for (size_t i = 0; i < piece->n; i++) {
        tile_point p;
        p.x = piece->origin[0] + (double)piece->xyz[3 * i];
        p.y = piece->origin[1] + (double)piece->xyz[3 * i + 1];
        p.z = piece->origin[2] + (double)piece->xyz[3 * i + 2];
        const double fx = floor(p.x / b->tile), fy = floor(p.y / b->tile);
        if (!(fabs(fx) < PTM_MAX_INDEX && fabs(fy) < PTM_MAX_INDEX))
            return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: a point at (%g, %g) is beyond a tiled map's reach",
                                   b->path, p.x, p.y);
        p.ix = (int32_t)fx, p.iy = (int32_t)fy;
        const ptreg_status st = act(b, &p, err);
        if (st)
            return st;
    }
    return PTREG_OK;
}

static ptreg_status count_point(build_state *b, const tile_point *p, ptreg_error *err)
{
    build_tile *t = tile_at(b, p->ix, p->iy, 1);
    if (!t)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory (%zu tiles)", b->count);
    t->count++;
    b->zlo = p->z < b->zlo ? p->z : b->zlo;
    b->zhi = p->z > b->zhi ? p->z : b->zhi;
    return PTREG_OK;
}

static ptreg_status count_piece(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    build_state *b = ctx;
    const ptreg_status st = each_point(b, piece, count_point, err);
    b->points += st ? 0 : piece->n;
    return st;
}

static int by_row(const void *pa, const void *pb)
{
    const build_tile *a = pa, *b = pb;
    return a->iy != b->iy ? (a->iy < b->iy ? -1 : 1) : a->ix != b->ix ? (a->ix < b->ix ? -1 : 1) : 0;
}

static int write_all(int fd, const void *data, size_t size, uint64_t at)
{
    const unsigned char *p = data;
    while (size) {
        const ssize_t w = pwrite(fd, p, size, (off_t)at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w, size -= (size_t)w, at += (uint64_t)w;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t size, uint64_t at)
{
    unsigned char *p = data;
    while (size) {
        const ssize_t r = pread(fd, p, size, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r, size -= (size_t)r, at += (uint64_t)r;
    }
    return 0;
}

/* Tiles in row order, each given its place in the scratch file and a
 * write buffer from the budget. */
static int plan_scratch(build_state *b)
{
    qsort(b->tiles, b->count, sizeof *b->tiles, by_row);
    if (rehash(b, b->slots))
        return -1;
    uint64_t at = 0;
    const size_t each = BUILD_BUFFER_POINTS / (b->count ? b->count : 1);
    for (size_t t = 0; t < b->count; t++) {
        build_tile *bt = &b->tiles[t];
        bt->raw = at;
        at += bt->count;
        bt->buf_cap = (size_t)(bt->count < each ? bt->count : each < 256 ? 256 : each);
        bt->buf = malloc(3 * bt->buf_cap * sizeof *bt->buf);
        if (!bt->buf)
            return -1;
    }
    return 0;
}

static int flush_tile(build_state *b, build_tile *t)
{
    const size_t bytes = 3 * t->buffered * sizeof *t->buf;
    if (t->buffered && write_all(b->scratch, t->buf, bytes, 12 * (t->raw + t->written)))
        return -1;
    t->written += t->buffered;
    t->buffered = 0;
    return 0;
}

static ptreg_status scatter_point(build_state *b, const tile_point *p, ptreg_error *err)
{
    build_tile *t = tile_at(b, p->ix, p->iy, 0);
    if (!t || t->written + t->buffered >= t->count) /* the file changed between the passes */
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: changed while the tiled map was built", b->path);
    float *q = t->buf + 3 * t->buffered++;
    q[0] = (float)(p->x - p->ix * b->tile);
    q[1] = (float)(p->y - p->iy * b->tile);
    q[2] = (float)(p->z - b->z0);
    if (t->buffered == t->buf_cap && flush_tile(b, t))
        return ptreg_error_set(err, PTREG_ERR_IO, "tiled map: writing its scratch file failed: %s", strerror(errno));
    return PTREG_OK;
}

static ptreg_status scatter_piece(void *ctx, ptreg_cloud *piece, ptreg_error *err)
{
    return each_point(ctx, piece, scatter_point, err);
}

static void build_free(build_state *b)
{
    for (size_t t = 0; t < b->count; t++)
        free(b->tiles[t].buf);
    free(b->tiles), free(b->slot);
    if (b->scratch >= 0)
        close(b->scratch);
}

static void put_header(unsigned char h[PTM_HEADER], const ptreg_tiled_map_options *o, double z0, double zhi,
                       uint64_t tiles, uint64_t points, uint64_t source)
{
    memset(h, 0, PTM_HEADER);
    memcpy(h, PTM_MAGIC, 8);
    put_u32(h + 8, PTM_VERSION);
    put_u32(h + 12, (uint32_t)o->max_points_per_voxel);
    put_f64(h + 16, o->tile);
    put_f64(h + 24, o->voxel);
    put_f64(h + 32, z0);
    put_f64(h + 40, zhi);
    put_u64(h + 48, tiles);
    put_u64(h + 56, points);
    put_u64(h + 64, source);
}

/* One tile from the scratch file, thinned as the localizer's map keeps
 * points, into its place in the output; *kept its points. 0, -1 when
 * reading or writing failed, 1 when out of memory. */
static int thin_tile(const build_state *b, const build_tile *t, const ptreg_tiled_map_options *o, FILE *out,
                     uint64_t *kept)
{
    const size_t n = (size_t)t->count;
    float *raw = malloc(3 * (n ? n : 1) * sizeof *raw);
    double *pts = malloc(3 * (n ? n : 1) * sizeof *pts);
    unsigned char *bytes = malloc(12 * (n ? n : 1));
    odo_map m;
    const int have_map = raw && pts && bytes && odo_map_init(&m, o->voxel, o->max_points_per_voxel) == 0;
    int rc = have_map ? 0 : 1;
    if (!rc && read_all(b->scratch, raw, 3 * n * sizeof *raw, 12 * t->raw))
        rc = -1;
    for (size_t i = 0; !rc && i < 3 * n; i++)
        pts[i] = raw[i];
    if (!rc && odo_map_add(&m, pts, n))
        rc = 1;
    if (!rc) {
        odo_map_points(&m, pts);
        for (size_t i = 0; i < 3 * m.points; i++)
            put_f32(bytes + 4 * i, (float)pts[i]);
        *kept = m.points;
        rc = fwrite(bytes, 12, m.points, out) != m.points ? -1 : 0;
    }
    if (have_map)
        odo_map_free(&m);
    free(raw), free(pts), free(bytes);
    return rc;
}

static ptreg_status write_map(build_state *b, const ptreg_tiled_map_options *o, const char *path, ptreg_error *err)
{
    ptreg_atomic_file af;
    ptreg_status st = ptreg_atomic_open(path, &af, err);
    if (st)
        return st;
    unsigned char header[PTM_HEADER], entry[PTM_ENTRY];
    const long table = PTM_HEADER, points_at = PTM_HEADER + (long)(PTM_ENTRY * b->count);
    int bad = fseek(af.fp, points_at, SEEK_SET) != 0, no_memory = 0;
    uint64_t first = 0;
    for (size_t t = 0; !bad && t < b->count; t++) {
        uint64_t kept = 0;
        const int rc = thin_tile(b, &b->tiles[t], o, af.fp, &kept);
        bad = rc != 0, no_memory = rc > 0;
        b->tiles[t].written = kept; /* now: its points in the map */
        b->tiles[t].raw = first;
        first += kept;
    }
    bad = bad || fseek(af.fp, table, SEEK_SET) != 0;
    for (size_t t = 0; !bad && t < b->count; t++) {
        const build_tile *bt = &b->tiles[t];
        put_u32(entry, (uint32_t)bt->ix);
        put_u32(entry + 4, (uint32_t)bt->iy);
        put_u64(entry + 8, bt->raw);
        put_u64(entry + 16, bt->written);
        bad = fwrite(entry, PTM_ENTRY, 1, af.fp) != 1;
    }
    put_header(header, o, b->z0, b->zhi, b->count, first, b->points);
    bad = bad || fseek(af.fp, 0, SEEK_SET) != 0 || fwrite(header, PTM_HEADER, 1, af.fp) != 1;
    if (bad) {
        ptreg_atomic_abort(&af);
        return no_memory
                   ? ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory (a tile)")
                   : ptreg_error_set(err, PTREG_ERR_IO, "%s: writing the tiled map failed: %s", path, strerror(errno));
    }
    return ptreg_atomic_commit(&af, err);
}

/* A scratch file beside out, unlinked at once: it goes when closed. -1
 * (errno) when it cannot be made, -2 when out of memory. */
static int open_scratch(const char *out)
{
    const size_t len = strlen(out) + 32;
    char *path = malloc(len);
    if (!path)
        return -2;
    snprintf(path, len, "%s.scratch-%ld", out, (long)getpid());
    const int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0)
        unlink(path);
    free(path);
    return fd;
}

ptreg_status tiled_map_build(const char *cloud, const ptreg_read_options *read, const ptreg_tiled_map_options *opt,
                             const char *out, ptreg_error *err)
{
    ptreg_tiled_map_options defaults;
    if (!opt) {
        ptreg_tiled_map_options_default(&defaults);
        opt = &defaults;
    }
    ptreg_status st = check_map_options(opt, err);
    if (st)
        return st;
    build_state b = {.tile = opt->tile, .zlo = INFINITY, .zhi = -INFINITY, .scratch = -1, .path = cloud};
    if (rehash(&b, 1024))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory");
    st = ptreg_cloud_read_pieces(cloud, read, BUILD_PIECE, count_piece, &b, err);
    if (!st) {
        b.z0 = floor(b.zlo);
        b.scratch = open_scratch(out);
        if (b.scratch == -2)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory");
        else if (b.scratch < 0)
            st = ptreg_error_set(err, PTREG_ERR_IO, "%s: cannot make a scratch file beside it: %s", out,
                                 strerror(errno));
        else if (plan_scratch(&b))
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory (%zu tiles)", b.count);
    }
    if (!st)
        st = ptreg_cloud_read_pieces(cloud, read, BUILD_PIECE, scatter_piece, &b, err);
    for (size_t t = 0; !st && t < b.count; t++)
        if (flush_tile(&b, &b.tiles[t]) || b.tiles[t].written != b.tiles[t].count)
            st = ptreg_error_set(err, PTREG_ERR_IO,
                                 "%s: changed while the tiled map was built, or its scratch "
                                 "file could not be written",
                                 cloud);
    for (size_t t = 0; t < b.count; t++) { /* the buffers' memory back before the thinning */
        free(b.tiles[t].buf);
        b.tiles[t].buf = NULL;
    }
    if (!st)
        st = write_map(&b, opt, out, err);
    build_free(&b);
    return st;
}

/* ---- reading ---- */

struct ptreg_tiled_map {
    int fd;
    char *path;
    ptreg_tiled_map_info info;
    double z0;
    map_tile *tiles;
};

static ptreg_status bad_map(const char *path, size_t byte, const char *why, ptreg_error *err)
{
    return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: byte %zu: %s", path, byte, why);
}

static ptreg_status check_header(const char *path, const unsigned char *h, uint64_t size, ptreg_tiled_map *m,
                                 ptreg_error *err)
{
    if (memcmp(h, PTM_MAGIC, 8))
        return bad_map(path, 0, "not a ptreg tiled map (.ptm)", err);
    if (get_u32(h + 8) != PTM_VERSION)
        return bad_map(path, 8, "a tiled map version this ptreg does not read", err);
    ptreg_tiled_map_options o = {get_f64(h + 16), get_f64(h + 24), (int)get_u32(h + 12)};
    if (get_u32(h + 12) > ODO_MAX_PER || check_map_options(&o, err))
        return bad_map(path, 12, "the tile, the voxel or the points per voxel are out of range", err);
    m->z0 = get_f64(h + 32);
    const double zhi = get_f64(h + 40);
    if (!isfinite(m->z0) || !isfinite(zhi) || !(zhi >= m->z0))
        return bad_map(path, 32, "the heights are not finite", err);
    const uint64_t tiles = get_u64(h + 48), points = get_u64(h + 56);
    /* the counts are believed only as far as the file holds them */
    if (tiles > (size - PTM_HEADER) / PTM_ENTRY || points > (size - PTM_HEADER - tiles * PTM_ENTRY) / 12 ||
        PTM_HEADER + tiles * PTM_ENTRY + points * 12 != size)
        return bad_map(path, 48, "the tile and point counts do not match the file's size", err);
    m->info = (ptreg_tiled_map_info){.tile = o.tile,
                                     .voxel = o.voxel,
                                     .max_points_per_voxel = o.max_points_per_voxel,
                                     .tiles = (size_t)tiles,
                                     .points = (size_t)points,
                                     .source_points = (size_t)get_u64(h + 64)};
    m->info.lo[2] = m->z0, m->info.hi[2] = zhi;
    return PTREG_OK;
}

static ptreg_status check_table(const char *path, const unsigned char *table, ptreg_tiled_map *m, ptreg_error *err)
{
    uint64_t first = 0;
    const double s = m->info.tile;
    for (size_t t = 0; t < m->info.tiles; t++) {
        const unsigned char *e = table + (size_t)PTM_ENTRY * t;
        map_tile *mt = &m->tiles[t];
        mt->ix = (int32_t)get_u32(e), mt->iy = (int32_t)get_u32(e + 4);
        mt->first = get_u64(e + 8), mt->count = get_u64(e + 16);
        const size_t at = PTM_HEADER + (size_t)PTM_ENTRY * t;
        if (mt->first != first || mt->count > m->info.points - first)
            return bad_map(path, at + 8, "a tile's points are not where the one before it ends", err);
        if (t && by_row(&(build_tile){.ix = m->tiles[t - 1].ix, .iy = m->tiles[t - 1].iy},
                        &(build_tile){.ix = mt->ix, .iy = mt->iy}) >= 0)
            return bad_map(path, at, "the tiles are not in row order, each once", err);
        if (!(fabs((double)mt->ix) < PTM_MAX_INDEX && fabs((double)mt->iy) < PTM_MAX_INDEX))
            return bad_map(path, at, "a tile's index is beyond a tiled map's reach", err);
        first += mt->count;
        const double x = mt->ix * s, y = mt->iy * s;
        m->info.lo[0] = t == 0 || x < m->info.lo[0] ? x : m->info.lo[0];
        m->info.lo[1] = t == 0 || y < m->info.lo[1] ? y : m->info.lo[1];
        m->info.hi[0] = t == 0 || x + s > m->info.hi[0] ? x + s : m->info.hi[0];
        m->info.hi[1] = t == 0 || y + s > m->info.hi[1] ? y + s : m->info.hi[1];
    }
    if (first != m->info.points)
        return bad_map(path, PTM_HEADER, "the tiles' points do not add up to the map's", err);
    return PTREG_OK;
}

ptreg_status tiled_map_open(const char *path, ptreg_tiled_map **out, ptreg_error *err)
{
    *out = NULL;
    ptreg_tiled_map *m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path))) {
        free(m);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory");
    }
    struct stat sb;
    m->fd = open(path, O_RDONLY);
    if (m->fd < 0 || fstat(m->fd, &sb) || !S_ISREG(sb.st_mode)) {
        ptreg_status st = ptreg_error_set(err, PTREG_ERR_IO, "%s: %s", path,
                                          m->fd < 0 || errno ? strerror(errno) : "not a regular file");
        ptreg_tiled_map_close(m);
        return st;
    }
    unsigned char header[PTM_HEADER];
    const uint64_t size = (uint64_t)sb.st_size;
    ptreg_status st = size < PTM_HEADER || read_all(m->fd, header, PTM_HEADER, 0)
                          ? bad_map(path, (size_t)size, "shorter than a tiled map's header", err)
                          : check_header(path, header, size, m, err);
    unsigned char *table = NULL;
    if (!st) {
        table = malloc(PTM_ENTRY * (m->info.tiles ? m->info.tiles : 1));
        m->tiles = calloc(m->info.tiles ? m->info.tiles : 1, sizeof *m->tiles);
        if (!table || !m->tiles)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory");
        else if (read_all(m->fd, table, PTM_ENTRY * m->info.tiles, PTM_HEADER))
            st = ptreg_error_set(err, PTREG_ERR_IO, "%s: reading its tile table failed", path);
        else
            st = check_table(path, table, m, err);
    }
    free(table);
    if (st) {
        ptreg_tiled_map_close(m);
        return st;
    }
    *out = m;
    return PTREG_OK;
}

int ptreg_tiled_map_is_file(const char *path)
{
    const size_t len = strlen(path);
    const char *ext = ".ptm";
    for (size_t i = 0; i < 4; i++)
        if (len < 4 || tolower((unsigned char)path[len - 4 + i]) != ext[i])
            return 0;
    return 1;
}

/* A new empty file under $TMPDIR for a map's tiles; -1 (errno) when none
 * can be made. */
static int make_scratch_map(char *path, size_t size)
{
    const char *tmp = getenv("TMPDIR");
    if (snprintf(path, size, "%s/ptreg-tiles-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    const int fd = mkstemp(path);
    return fd < 0 ? -1 : close(fd);
}

ptreg_status ptreg_tiled_map_load(const char *path, const ptreg_read_options *read, const ptreg_tiled_map_options *opt,
                                  const char *save, ptreg_tiled_map **map, ptreg_error *err)
{
    *map = NULL;
    if (ptreg_tiled_map_is_file(path))
        return save ? ptreg_error_set(err, PTREG_ERR_ARG, "%s is tiled already: saving tiles is for a cloud", path)
                    : tiled_map_open(path, map, err);
    char scratch[4096];
    if (!save && make_scratch_map(scratch, sizeof scratch))
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: no scratch file for its tiles: %s", path, strerror(errno));
    const char *out = save ? save : scratch;
    ptreg_status st = tiled_map_build(path, read, opt, out, err);
    st = st ? st : tiled_map_open(out, map, err);
    if (!save)
        unlink(scratch); /* the open map keeps it until closed */
    return st;
}

void ptreg_tiled_map_get_info(const ptreg_tiled_map *map, ptreg_tiled_map_info *info) { *info = map->info; }

void ptreg_tiled_map_close(ptreg_tiled_map *map)
{
    if (!map)
        return;
    if (map->fd >= 0)
        close(map->fd);
    free(map->path), free(map->tiles);
    free(map);
}

const map_tile *tiled_map_tiles(const ptreg_tiled_map *map) { return map->tiles; }

double tiled_map_z0(const ptreg_tiled_map *map) { return map->z0; }

ptreg_status tiled_map_read(const ptreg_tiled_map *map, size_t tile, const double shift[3], double *out,
                            ptreg_error *err)
{
    const map_tile *t = &map->tiles[tile];
    const size_t n = (size_t)t->count;
    unsigned char *bytes = malloc(12 * (n ? n : 1));
    if (!bytes)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "tiled map: out of memory");
    if (read_all(map->fd, bytes, 12 * n, PTM_HEADER + (uint64_t)PTM_ENTRY * map->info.tiles + 12 * t->first)) {
        free(bytes);
        return ptreg_error_set(err, PTREG_ERR_IO, "%s: reading tile (%d, %d) failed", map->path, (int)t->ix,
                               (int)t->iy);
    }
    for (size_t i = 0; i < 3 * n; i++) {
        const float v = get_f32(bytes + 4 * i);
        if (!isfinite(v)) {
            free(bytes);
            return bad_map(map->path,
                           (size_t)(PTM_HEADER + (uint64_t)PTM_ENTRY * map->info.tiles + 12 * t->first + 4 * i),
                           "a point is not finite", err);
        }
        out[i] = shift[i % 3] + (double)v;
    }
    free(bytes);
    return PTREG_OK;
}
