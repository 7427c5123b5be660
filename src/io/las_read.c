/* LAS reader: ASPRS LAS 1.0 to 1.4, point data record formats 0 to 10 (the
 * byte places below are those of the ASPRS LAS 1.4 R15 specification, which
 * 1.0-1.3 share for what is read here). Each record's x y z, intensity,
 * classification and colour (formats 2, 3, 5, 7, 8 and 10) are read
 * straight from the memory map; whatever else a record holds (GPS time,
 * waveforms, extra bytes) is skipped.
 * LAZ, LASzip's compressed LAS, is refused with a pointer to a tool that
 * decompresses it. docs/FORMATS.md, "LAS". */
#include "io/io_internal.h"

#include <math.h>
#include <string.h>
#include "io/testing.h"

/* Fields of the public header block, by byte. */
enum {
    LAS_VERSION = 24,
    LAS_SYSTEM = 26,
    LAS_SOFTWARE = 58,
    LAS_HEADER_SIZE = 94,
    LAS_DATA_OFFSET = 96,
    LAS_VLR_COUNT = 100,
    LAS_FORMAT = 104,
    LAS_RECORD_LENGTH = 105,
    LAS_LEGACY_COUNT = 107,
    LAS_SCALE = 131,
    LAS_OFFSET = 155,
    LAS_BOUNDS = 179, /* max x, min x, max y, min y, max z, min z */
    LAS_COUNT_64 = 247,
    LAS_HEADER_MIN = 227,    /* 1.0 to 1.3 (1.3's waveform start is not needed) */
    LAS_HEADER_MIN_14 = 375, /* 1.4: the 64-bit counts lie beyond 227 */
    LAS_VLR_HEADER = 54,
    LAS_VLR_USER = 2,
    LAS_VLR_LENGTH = 20,
};

/* The bytes each point data record format takes (LAS 1.4 R15, tables 7 to
 * 17); a longer record carries extra bytes after them. */
static const unsigned short record_min[] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};
#define LAS_FORMATS (sizeof record_min / sizeof record_min[0])

/* Where each format keeps its red, green and blue (16 bits each); 0: none. */
static const unsigned short rgb_at[] = {0, 0, 20, 28, 0, 28, 0, 30, 30, 0, 30};

/* Bits 6 and 7 of the format byte are LASzip's mark of compressed points. */
#define LAS_COMPRESSED_BITS 0xC0u

typedef struct las_header {
    ptreg_las_header pub;
    size_t header_size, data_offset;
} las_header;

static uint64_t le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static double le_f64(const unsigned char *p) { return io_load(p, IO_F64, 0); }

static ptreg_status laz_refused(const io_in *in, size_t at)
{
    return io_fail_byte(in, PTREG_ERR_UNSUPPORTED, at,
                        "LAZ (compressed LAS) is not read: decompress it first, e.g. with laszip or PDAL "
                        "(`pdal translate in.laz out.las`)");
}

/* The signature, the file holding a whole header block of its version,
 * and the version. */
static ptreg_status check_frame(const io_in *in, las_header *h)
{
    if (in->size < 4 || memcmp(in->data, "LASF", 4) != 0)
        return io_fail_byte(in, PTREG_ERR_FORMAT, 0, "not a LAS file: it does not start with \"LASF\"");
    if (in->size < LAS_HEADER_MIN)
        return io_fail_byte(in, PTREG_ERR_FORMAT, in->size, "the file ends inside the public header block (%d bytes)",
                            LAS_HEADER_MIN);
    const unsigned major = in->data[LAS_VERSION], minor = in->data[LAS_VERSION + 1];
    if (major != 1 || minor > 4)
        return io_fail_byte(in, major == 1 ? PTREG_ERR_UNSUPPORTED : PTREG_ERR_FORMAT, LAS_VERSION,
                            "LAS version %u.%u is not read (1.0 to 1.4 are)", major, minor);
    h->pub.version_major = (int)major;
    h->pub.version_minor = (int)minor;
    const size_t least = minor == 4 ? LAS_HEADER_MIN_14 : LAS_HEADER_MIN;
    h->header_size = (size_t)le(in->data + LAS_HEADER_SIZE, 2);
    if (h->header_size < least)
        return io_fail_byte(in, PTREG_ERR_FORMAT, LAS_HEADER_SIZE,
                            "header size %zu is less than the %zu bytes of a LAS 1.%u public header block",
                            h->header_size, least, minor);
    if (h->header_size > in->size)
        return io_fail_byte(in, PTREG_ERR_FORMAT, LAS_HEADER_SIZE, "header size %zu but the file has only %zu bytes",
                            h->header_size, in->size);
    return PTREG_OK;
}

/* Where the points are and how they are laid out; LAZ is named before
 * anything else is checked, as what a user needs to hear first. */
static ptreg_status check_layout(const io_in *in, las_header *h)
{
    const unsigned format = in->data[LAS_FORMAT];
    if (format & LAS_COMPRESSED_BITS)
        return laz_refused(in, LAS_FORMAT);
    h->data_offset = (size_t)le(in->data + LAS_DATA_OFFSET, 4);
    if (h->data_offset < h->header_size)
        return io_fail_byte(in, PTREG_ERR_FORMAT, LAS_DATA_OFFSET,
                            "offset to point data %zu is inside the %zu-byte header", h->data_offset, h->header_size);
    if (h->data_offset > in->size)
        return io_fail_byte(in, PTREG_ERR_FORMAT, LAS_DATA_OFFSET,
                            "offset to point data %zu is beyond the end of the file (%zu bytes)", h->data_offset,
                            in->size);
    if (format >= LAS_FORMATS)
        return io_fail_byte(in, PTREG_ERR_UNSUPPORTED, LAS_FORMAT,
                            "point data record format %u is not read (0 to 10 are)", format);
    h->pub.point_format = (int)format;
    h->pub.record_length = (size_t)le(in->data + LAS_RECORD_LENGTH, 2);
    if (h->pub.record_length < record_min[format])
        return io_fail_byte(in, PTREG_ERR_FORMAT, LAS_RECORD_LENGTH,
                            "point data record length %zu is less than the %u bytes of point format %u",
                            h->pub.record_length, record_min[format], format);
    return PTREG_OK;
}

/* Scale factors and offsets: x y z are integers times the scale plus the
 * offset, so a zero or non-finite scale leaves no coordinate. */
static ptreg_status check_scale(const io_in *in, las_header *h)
{
    for (int k = 0; k < 3; k++) {
        h->pub.scale[k] = le_f64(in->data + LAS_SCALE + 8 * k);
        h->pub.offset[k] = le_f64(in->data + LAS_OFFSET + 8 * k);
        if (!isfinite(h->pub.scale[k]) || h->pub.scale[k] == 0.0)
            return io_fail_byte(in, PTREG_ERR_FORMAT, (size_t)(LAS_SCALE + 8 * k),
                                "%c scale factor %g must be finite and nonzero", "xyz"[k], h -> pub.scale[k]);
        if (!isfinite(h->pub.offset[k]))
            return io_fail_byte(in, PTREG_ERR_FORMAT, (size_t)(LAS_OFFSET + 8 * k), "%c offset %g must be finite",
                                "xyz"[k], h -> pub.offset[k]);
        h->pub.max[k] = le_f64(in->data + LAS_BOUNDS + 16 * k);
        h->pub.min[k] = le_f64(in->data + LAS_BOUNDS + 16 * k + 8);
    }
    return PTREG_OK;
}

static int is_laszip_vlr(const unsigned char *vlr)
{
    static const char user[16] = "laszip encoded";
    return memcmp(vlr + LAS_VLR_USER, user, sizeof user) == 0;
}

/* A LAZ file whose format byte was cleared still has LASzip's VLR. The
 * VLRs are walked for it alone: the walk stops where one would run into
 * the points (their other content is never needed, so a broken list is
 * not an error). */
static ptreg_status check_vlrs(const io_in *in, const las_header *h)
{
    const uint64_t count = le(in->data + LAS_VLR_COUNT, 4);
    size_t pos = h->header_size;
    for (uint64_t i = 0; i < count && h->data_offset - pos >= LAS_VLR_HEADER; i++) {
        if (is_laszip_vlr(in->data + pos))
            return laz_refused(in, pos);
        const size_t length = (size_t)le(in->data + pos + LAS_VLR_LENGTH, 2);
        if (h->data_offset - pos - LAS_VLR_HEADER < length)
            break;
        pos += LAS_VLR_HEADER + length;
    }
    return PTREG_OK;
}

/* The count, never trusted beyond the records the file holds. */
static ptreg_status check_count(const io_in *in, las_header *h)
{
    uint64_t count = le(in->data + LAS_LEGACY_COUNT, 4);
    if (h->pub.version_minor == 4 && le(in->data + LAS_COUNT_64, 8) != 0)
        count = le(in->data + LAS_COUNT_64, 8);
    const size_t fit = (in->size - h->data_offset) / h->pub.record_length;
    if (count > fit)
        return io_fail_byte(in, PTREG_ERR_FORMAT, h->data_offset + fit * h->pub.record_length,
                            "point count %llu but the file holds %zu records", (unsigned long long)count, fit);
    h->pub.points = count;
    return PTREG_OK;
}

static void copy_text(char out[33], const unsigned char *field)
{
    memcpy(out, field, 32);
    out[32] = '\0';
}

static ptreg_status parse_header(const io_in *in, las_header *h)
{
    memset(h, 0, sizeof *h);
    ptreg_status s = check_frame(in, h);
    if (s == PTREG_OK)
        s = check_layout(in, h);
    if (s == PTREG_OK)
        s = check_vlrs(in, h);
    if (s == PTREG_OK)
        s = check_scale(in, h);
    if (s == PTREG_OK)
        s = check_count(in, h);
    if (s == PTREG_OK) {
        copy_text(h->pub.system, in->data + LAS_SYSTEM);
        copy_text(h->pub.software, in->data + LAS_SOFTWARE);
    }
    return s;
}

/* Formats 0 to 5 keep the class in the low 5 bits of byte 15 (the others
 * are the synthetic, key-point and withheld flags); 6 to 10 give it byte
 * 16 whole. */
static void las_point(const las_header *h, const unsigned char *r, io_point *p)
{
    for (int k = 0; k < 3; k++)
        p->xyz[k] = (double)(int32_t)(uint32_t)le(r + 4 * k, 4) * h->pub.scale[k] + h->pub.offset[k];
    p->intensity = (uint16_t)le(r + 12, 2);
    p->classification = h->pub.point_format < 6 ? r[15] & 0x1Fu : r[16];
}

/* The specification scales colours to 16 bits, but many writers store
 * 8-bit values as they are: when no value of the file exceeds 255 the
 * colours are taken as 8-bit (LAStools' rule), else scaled down. */
static int colors_16bit(const io_in *in, const las_header *h)
{
    const size_t at = rgb_at[h->pub.point_format], rec = h->pub.record_length;
    const unsigned char *r = in->data + h->data_offset + at;
    for (uint64_t i = 0; i < h->pub.points; i++, r += rec)
        if (r[1] | r[3] | r[5])
            return 1;
    return 0;
}

static void las_color(const unsigned char *r, int wide, io_point *p)
{
    for (int c = 0; c < 3; c++) {
        const unsigned v = (unsigned)le(r + 2 * c, 2);
        p->rgb[c] = (uint8_t)(wide ? (v + 128) / 257 : v);
    }
}

ptreg_status io_read_las(const io_in *in, ptreg_cloud *cloud)
{
    las_header h;
    ptreg_status s = parse_header(in, &h);
    if (s != PTREG_OK)
        return s;
    const size_t count = (size_t)h.pub.points, rec = h.pub.record_length;
    const size_t color = rgb_at[h.pub.point_format];
    if ((s = io_cloud_reserve(in, cloud, count, 0)) != PTREG_OK ||
        (s = io_cloud_add_attributes(in, cloud)) != PTREG_OK ||
        (color && (s = io_cloud_add_colors(in, cloud)) != PTREG_OK))
        return s;
    const int wide = cloud->rgb && colors_16bit(in, &h);
    /* 32-bit integers at a scale hold more than float32: the first point
     * chooses an origin, so UTM coordinates keep their millimetres. */
    in->cloud->wide = 1;
    io_point p;
    memset(&p, 0, sizeof p);
    size_t pos = h.data_offset;
    for (size_t i = 0; i < count; i++, pos += rec) {
        las_point(&h, in->data + pos, &p);
        if (cloud->rgb)
            las_color(in->data + pos + color, wide, &p);
        io_cloud_at(in, pos + rec);
        if ((s = io_cloud_store(in, cloud, &p)) != PTREG_OK)
            return s;
    }
    return io_cloud_finish(in, cloud, count, 0, pos);
}

ptreg_status ptreg_las_header_read_memory(const void *data, size_t size, const char *name, ptreg_las_header *header,
                                          ptreg_error *err)
{
    io_in in = {data, size, name ? name : "<memory>", err, NULL};
    if (header)
        memset(header, 0, sizeof *header);
    if (!header || (!data && size))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no header or no data", in.name);
    las_header h;
    ptreg_status s = parse_header(&in, &h);
    if (s == PTREG_OK)
        *header = h.pub;
    return s;
}

ptreg_status ptreg_las_header_read(const char *path, ptreg_las_header *header, ptreg_error *err)
{
    if (header)
        memset(header, 0, sizeof *header);
    if (!path || !header)
        return ptreg_error_set(err, PTREG_ERR_ARG, "LAS header read: no path or no header");
    unsigned char *data;
    size_t size;
    int mapped;
    ptreg_status s = io_map_file(path, &data, &size, &mapped, err);
    if (s != PTREG_OK)
        return s;
    s = ptreg_las_header_read_memory(data, size, path, header, err);
    io_unmap_file(data, size, mapped);
    return s;
}
