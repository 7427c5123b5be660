/* LAS writer: LAS 1.2, point data record format 0 (20-byte records), or 2
 * (26 bytes: the colour, 8 bits scaled to 16 by 257) for a cloud with
 * colours, the
 * 227-byte public header block and no VLRs (ASPRS LAS 1.4 R15 specification
 * for the byte places, which 1.2 shares). Coordinates are millimetres
 * (scale 0.001) from an offset: the cloud's origin when it has one, else
 * its minimum rounded down to a whole unit, so that the 32-bit integers
 * reach about 2,147 km from it. docs/FORMATS.md, "LAS". */
#include "io/io_internal.h"

#include <math.h>
#include <string.h>

#define LAS_HEADER_SIZE 227
#define LAS_RECORD_LENGTH 20
#define LAS_RECORD_LENGTH_RGB 26
#define LAS_RECORD_MAX 26
#define LAS_SCALE 0.001
/* X = round(d * 1000): 1000 is exact where 1 / 0.001 is not. */
#define LAS_PER_UNIT 1000.0
/* Format 0 keeps the class in 5 bits: the other 3 are flags. */
#define LAS_CLASS_MAX 31
#define LAS_UNCLASSIFIED 1
/* Return number 1 (bits 0-2) of 1 return (bits 3-5). */
#define LAS_ONE_RETURN (1u | 1u << 3)
#define CHUNK_POINTS 1024

/* Where the integers start from and what they span. */
typedef struct las_frame {
    double offset[3];
    int32_t lo[3], hi[3];
} las_frame;

static void put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static double world(const ptreg_cloud *cloud, size_t i, int k)
{
    return cloud->origin[k] + (double)cloud->xyz[3 * i + k];
}

/* The offset: the origin keeps the float coordinates' own zero; a cloud
 * without one starts from its floor, so its integers are never negative. */
static void choose_offset(const ptreg_cloud *cloud, double offset[3])
{
    if (io_has_origin(cloud)) {
        memcpy(offset, cloud->origin, sizeof cloud->origin);
        return;
    }
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY;
        for (size_t i = 0; i < cloud->n; i++)
            if (world(cloud, i, k) < lo)
                lo = world(cloud, i, k);
        offset[k] = isfinite(lo) ? floor(lo) : 0.0;
    }
}

/* Point i's integer on axis k; 0 when it does not fit int32. The
 * difference to the offset is taken from the origin first, so a cloud
 * written at its origin gives its float coordinates exactly. */
static int to_integer(const ptreg_cloud *cloud, const double offset[3], size_t i, int k, int32_t *out)
{
    const double d = (cloud->origin[k] - offset[k]) + (double)cloud->xyz[3 * i + k];
    const double v = nearbyint(d * LAS_PER_UNIT);
    if (!(v >= INT32_MIN && v <= INT32_MAX))
        return 0;
    *out = (int32_t)v;
    return 1;
}

static ptreg_status does_not_fit(const char *path, const ptreg_cloud *cloud, const double offset[3], size_t i, int k,
                                 ptreg_error *err)
{
    char v[32], o[32];
    if (!isfinite(world(cloud, i, k)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: point %zu: %c is not finite: LAS's integers cannot hold it",
                               path, i, "xyz"[k]);
    io_format_world(v, world(cloud, i, k));
    io_format_world(o, offset[k]);
    return ptreg_error_set(err, PTREG_ERR_ARG,
                           "%s: point %zu: %c = %s does not fit LAS's 32-bit integers at scale 0.001 from offset %s",
                           path, i, "xyz"[k], v, o);
}

static unsigned point_class(const ptreg_cloud *cloud, size_t i)
{
    return cloud->classification ? cloud->classification[i] : LAS_UNCLASSIFIED;
}

/* Every point checked before a byte is written: the integers fit, the
 * classes fit format 0; the span goes to the header. */
static ptreg_status frame_points(const char *path, const ptreg_cloud *cloud, las_frame *fr, ptreg_error *err)
{
    if ((uint64_t)cloud->n > UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %zu points: LAS 1.2 holds at most %lu", path, cloud->n,
                               (unsigned long)UINT32_MAX);
    choose_offset(cloud, fr->offset);
    for (int k = 0; k < 3; k++) {
        fr->lo[k] = cloud->n ? INT32_MAX : 0;
        fr->hi[k] = cloud->n ? INT32_MIN : 0;
    }
    for (size_t i = 0; i < cloud->n; i++) {
        for (int k = 0; k < 3; k++) {
            int32_t v;
            if (!to_integer(cloud, fr->offset, i, k, &v))
                return does_not_fit(path, cloud, fr->offset, i, k, err);
            fr->lo[k] = v < fr->lo[k] ? v : fr->lo[k];
            fr->hi[k] = v > fr->hi[k] ? v : fr->hi[k];
        }
        if (point_class(cloud, i) > LAS_CLASS_MAX)
            return ptreg_error_set(err, PTREG_ERR_ARG,
                                   "%s: point %zu: class %u does not fit LAS 1.2's classification (0 to %d)", path, i,
                                   point_class(cloud, i), LAS_CLASS_MAX);
    }
    return PTREG_OK;
}

static void put_text(unsigned char *p, const char *s) { memcpy(p, s, strlen(s)); }

/* The public header block. Creation day and year stay 0 (allowed when
 * unknown): the same cloud always gives the same bytes. */
static void write_header(FILE *f, const ptreg_cloud *cloud, const las_frame *fr)
{
    unsigned char h[LAS_HEADER_SIZE] = {0};
    put_text(h, "LASF");
    h[24] = 1; /* version 1.2 */
    h[25] = 2;
    put_text(h + 26, "OTHER");
    put_text(h + 58, "ptreg " PTREG_VERSION_STRING);
    put(h + 94, LAS_HEADER_SIZE, 2);
    put(h + 96, LAS_HEADER_SIZE, 4); /* the points follow the header: no VLRs */
    h[104] = cloud->rgb ? 2 : 0;
    put(h + 105, cloud->rgb ? LAS_RECORD_LENGTH_RGB : LAS_RECORD_LENGTH, 2);
    put(h + 107, cloud->n, 4);
    put(h + 111, cloud->n, 4); /* every point a first return */
    for (int k = 0; k < 3; k++) {
        io_store_f64le(h + 131 + 8 * k, LAS_SCALE);
        io_store_f64le(h + 155 + 8 * k, fr->offset[k]);
        io_store_f64le(h + 179 + 16 * k, fr->hi[k] * LAS_SCALE + fr->offset[k]);
        io_store_f64le(h + 187 + 16 * k, fr->lo[k] * LAS_SCALE + fr->offset[k]);
    }
    fwrite(h, 1, sizeof h, f);
}

static void put_record(unsigned char *r, const ptreg_cloud *cloud, const las_frame *fr, size_t i)
{
    memset(r, 0, LAS_RECORD_MAX);
    for (int k = 0; k < 3; k++) {
        int32_t v = 0;
        to_integer(cloud, fr->offset, i, k, &v); /* fits: frame_points checked it */
        put(r + 4 * k, (uint32_t)v, 4);
    }
    put(r + 12, cloud->intensity ? cloud->intensity[i] : 0, 2);
    r[14] = LAS_ONE_RETURN;
    r[15] = (unsigned char)point_class(cloud, i);
    for (int c = 0; cloud->rgb && c < 3; c++)
        put(r + 20 + 2 * c, 257u * cloud->rgb[3 * i + c], 2);
}

ptreg_status io_write_las(FILE *f, const ptreg_cloud *cloud, const char *path, ptreg_error *err)
{
    las_frame fr;
    ptreg_status s = frame_points(path, cloud, &fr, err);
    if (s != PTREG_OK)
        return s;
    write_header(f, cloud, &fr);
    const size_t rec = cloud->rgb ? LAS_RECORD_LENGTH_RGB : LAS_RECORD_LENGTH;
    unsigned char buf[CHUNK_POINTS * LAS_RECORD_MAX];
    for (size_t start = 0; start < cloud->n; start += CHUNK_POINTS) {
        const size_t end = cloud->n - start < CHUNK_POINTS ? cloud->n : start + CHUNK_POINTS;
        for (size_t i = start; i < end; i++)
            put_record(buf + (i - start) * rec, cloud, &fr, i);
        fwrite(buf, rec, end - start, f);
    }
    return PTREG_OK;
}
