/* NIfTI-1 single-file volumes (.nii, magic "n+1"), plain or gzip
 * (.nii.gz). Sizes from dim[1..3], spacing from pixdim[1..3], the origin
 * from the sform (else the qform) offsets; the orientation is not kept.
 * Voxels with a scaling (scl_slope not 0 or 1, or scl_inter not 0) become
 * float32 values slope * v + inter. Field offsets: the NIfTI-1 standard's
 * nifti1.h (docs/FORMATS.md). */
#include "io/io_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/numeric.h"

#define NIFTI_HEADER 348
#define NIFTI_MIN_OFFSET 352 /* header + the 4-byte extension flag */

typedef struct nifti_header {
    int big_endian;
    size_t dims[3];
    double spacing[3], origin[3];
    ptreg_voxel_type type;
    size_t offset;
    double slope, inter;
} nifti_header;

static double header_field(const unsigned char *h, size_t at, io_type type, int big_endian)
{
    return io_load(h + at, type, big_endian);
}

static int voxel_type(int code, ptreg_voxel_type *type)
{
    static const struct {
        int code;
        ptreg_voxel_type type;
    } codes[] = {{2, PTREG_VOXEL_U8},   {4, PTREG_VOXEL_I16},  {8, PTREG_VOXEL_I32},   {16, PTREG_VOXEL_F32},
                 {64, PTREG_VOXEL_F64}, {256, PTREG_VOXEL_I8}, {512, PTREG_VOXEL_U16}, {768, PTREG_VOXEL_U32}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (codes[i].code == code) {
            *type = codes[i].type;
            return 1;
        }
    return 0;
}

static ptreg_status parse_sizes(const io_in *in, const unsigned char *p, nifti_header *h)
{
    int be = h->big_endian;
    int ndim = (int)header_field(p, 40, IO_I16, be);
    if (ndim < 1 || ndim > 7)
        return io_fail_byte(in, PTREG_ERR_FORMAT, 40, "dim[0] = %d: must be 1 to 7", ndim);
    for (int a = 1; a <= 7; a++) {
        double d = a <= ndim ? header_field(p, 40 + 2 * (size_t)a, IO_I16, be) : 1;
        if (d < 1)
            return io_fail_byte(in, PTREG_ERR_FORMAT, 40 + 2 * (size_t)a, "dim[%d] = %g: must be at least 1", a, d);
        if (a > 3 && d != 1)
            return io_fail_byte(in, PTREG_ERR_FORMAT, 40 + 2 * (size_t)a,
                                "dim[%d] = %g: only 3-D volumes (no time series) are read", a, d);
        if (a <= 3) {
            h->dims[a - 1] = (size_t)d;
            double sp = a <= ndim ? fabs(header_field(p, 76 + 4 * (size_t)a, IO_F32, be)) : 1;
            h->spacing[a - 1] = isfinite(sp) && sp > 0 ? sp : 1.0;
        }
    }
    return PTREG_OK;
}

/* The origin: the sform's translation when sform_code > 0, else the
 * qform's offsets when qform_code > 0, else 0. */
static void parse_origin(const unsigned char *p, nifti_header *h)
{
    int be = h->big_endian;
    size_t at[3] = {0, 0, 0};
    if (header_field(p, 254, IO_I16, be) > 0) {
        at[0] = 280 + 12, at[1] = 296 + 12, at[2] = 312 + 12;
    } else if (header_field(p, 252, IO_I16, be) > 0) {
        at[0] = 268, at[1] = 272, at[2] = 276;
    }
    for (int a = 0; a < 3; a++) {
        double o = at[a] ? header_field(p, at[a], IO_F32, be) : 0.0;
        h->origin[a] = isfinite(o) ? o : 0.0;
    }
}

static ptreg_status parse_header(const io_in *in, const unsigned char *p, size_t n, nifti_header *h)
{
    if (n < NIFTI_HEADER)
        return io_fail_byte(in, PTREG_ERR_FORMAT, n, "truncated NIfTI-1 header (%zu of 348 bytes)", n);
    memset(h, 0, sizeof *h);
    if (header_field(p, 0, IO_I32, 0) == NIFTI_HEADER)
        h->big_endian = 0;
    else if (header_field(p, 0, IO_I32, 1) == NIFTI_HEADER)
        h->big_endian = 1;
    else
        return io_fail_byte(in, PTREG_ERR_FORMAT, 0, "not a NIfTI-1 file (sizeof_hdr is not 348)");
    if (memcmp(p + 344, "n+1\0", 4))
        return io_fail_byte(in, PTREG_ERR_FORMAT, 344,
                            memcmp(p + 344, "ni1\0", 4) ? "bad NIfTI-1 magic (expected n+1)"
                                                        : "a .hdr/.img pair: only single .nii files are read");
    ptreg_status s = parse_sizes(in, p, h);
    if (s)
        return s;
    int code = (int)header_field(p, 70, IO_I16, h->big_endian);
    if (!voxel_type(code, &h->type))
        return io_fail_byte(in, PTREG_ERR_FORMAT, 70,
                            "unsupported datatype %d (8-, 16-, 32-bit integers, "
                            "float32, float64 are read)",
                            code);
    double off = header_field(p, 108, IO_F32, h->big_endian);
    if (!(off >= NIFTI_MIN_OFFSET && off < 1e15) || off != floor(off))
        return io_fail_byte(in, PTREG_ERR_FORMAT, 108, "vox_offset %g: must be a whole number >= 352", off);
    h->offset = (size_t)off;
    h->slope = header_field(p, 112, IO_F32, h->big_endian);
    h->inter = header_field(p, 116, IO_F32, h->big_endian);
    parse_origin(p, h);
    return PTREG_OK;
}

/* slope * v + inter as float32, unless the scaling is the identity (or
 * slope 0, which the standard says means "no scaling"). */
static ptreg_status apply_scaling(const io_in *in, const nifti_header *h, ptreg_volume *vol)
{
    if (!isfinite(h->slope) || !isfinite(h->inter) || h->slope == 0 || (h->slope == 1 && h->inter == 0))
        return PTREG_OK;
    ptreg_volume scaled;
    ptreg_error quiet;
    if (ptreg_volume_alloc(&scaled, vol->nx, vol->ny, vol->nz, PTREG_VOXEL_F32, &quiet))
        return ptreg_error_set(in->err, quiet.status, "%s: %s", in->name, quiet.message);
    float *out = scaled.data;
    size_t n = ptreg_volume_count(vol);
    for (size_t i = 0; i < n; i++)
        out[i] = ptreg_double_to_float(h->slope * ptreg_volume_voxel(vol, i) + h->inter);
    free(vol->data);
    vol->data = scaled.data;
    vol->type = PTREG_VOXEL_F32;
    return PTREG_OK;
}

static ptreg_status read_plain(const io_in *in, ptreg_volume *vol)
{
    nifti_header h;
    size_t bytes;
    ptreg_status s = parse_header(in, in->data, in->size, &h);
    if (!s)
        s = io_volume_bytes(in, h.dims, h.type, &bytes);
    if (s)
        return s;
    if (h.offset > in->size || in->size - h.offset < bytes)
        return io_fail_byte(in, PTREG_ERR_FORMAT, in->size,
                            "the file has %zu bytes, %zu x %zu x %zu voxels of %s at offset %zu need %zu", in->size,
                            h.dims[0], h.dims[1], h.dims[2], ptreg_voxel_type_name(h.type), h.offset, bytes);
    if ((s = io_volume_from_bytes(in, in->data + h.offset, h.dims, h.type, h.big_endian, vol)))
        return s;
    memcpy(vol->spacing, h.spacing, sizeof h.spacing);
    memcpy(vol->origin, h.origin, sizeof h.origin);
    return apply_scaling(in, &h, vol);
}

/* .nii.gz: the header first, to learn how much to inflate, then the whole
 * file, which the plain reader parses (offsets in messages are then
 * offsets into the decompressed file). */
static ptreg_status read_gzip(const io_in *in, ptreg_volume *vol)
{
    unsigned char head[NIFTI_HEADER];
    size_t got, bytes;
    nifti_header h;
    ptreg_status s = io_gunzip(in, 0, in->data, in->size, head, sizeof head, &got, NULL);
    if (!s)
        s = parse_header(in, head, got, &h);
    if (!s)
        s = io_volume_bytes(in, h.dims, h.type, &bytes);
    if (s)
        return s;
    if (bytes > SIZE_MAX - h.offset || h.offset + bytes > io_gunzip_bound(in->size))
        return io_fail_byte(in, PTREG_ERR_FORMAT, 0,
                            "the sizes need %zu bytes, more than %zu bytes of gzip "
                            "data can hold",
                            bytes, in->size);
    size_t total = h.offset + bytes;
    unsigned char *buf = malloc(total);
    if (!buf)
        return io_fail_byte(in, PTREG_ERR_NOMEM, 0, "out of memory for %zu bytes", total);
    s = io_gunzip(in, 0, in->data, in->size, buf, total, &got, NULL);
    if (!s) {
        io_in plain = {buf, got, in->name, in->err, NULL};
        s = read_plain(&plain, vol);
    }
    free(buf);
    return s;
}

ptreg_status io_read_nifti(const io_in *in, ptreg_volume *vol)
{
    if (in->size >= 2 && in->data[0] == 0x1f && in->data[1] == 0x8b)
        return read_gzip(in, vol);
    return read_plain(in, vol);
}
