/* Binary scalars of PLY and PCD, and the voxel arrays of the volume
 * readers. Values are assembled byte by byte, so the readers give the same
 * result on any host and never make unaligned loads. */
#include "io/io_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

size_t io_type_size(io_type type)
{
    switch (type) {
    case IO_I8:
    case IO_U8: return 1;
    case IO_I16:
    case IO_U16: return 2;
    case IO_I32:
    case IO_U32:
    case IO_F32: return 4;
    case IO_I64:
    case IO_U64:
    case IO_F64: return 8;
    }
    return 0;
}

int io_type_is_integer(io_type type) { return type != IO_F32 && type != IO_F64; }

static uint64_t load_bits(const unsigned char *p, size_t n, int big_endian)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[big_endian ? n - 1 - i : i] << (8 * i);
    return v;
}

double io_load(const unsigned char *p, io_type type, int big_endian)
{
    uint64_t b = load_bits(p, io_type_size(type), big_endian);
    switch (type) {
    case IO_I8: return (double)(int8_t)(uint8_t)b;
    case IO_U8: return (double)(uint8_t)b;
    case IO_I16: return (double)(int16_t)(uint16_t)b;
    case IO_U16: return (double)(uint16_t)b;
    case IO_I32: return (double)(int32_t)(uint32_t)b;
    case IO_U32: return (double)(uint32_t)b;
    case IO_I64: return (double)(int64_t)b;
    case IO_U64: return (double)b;
    case IO_F32: {
        uint32_t u = (uint32_t)b;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    case IO_F64: {
        double d;
        memcpy(&d, &b, sizeof d);
        return d;
    }
    }
    return 0.0;
}

float io_to_float(double d)
{
    /* Out-of-range double -> float conversion is undefined in C (UBSan can
     * flag it); round as IEEE 754 would: past FLT_MAX + half an ulp is
     * infinity. */
    const double limit = 0x1.ffffffp127;
    if (d >= limit)
        return HUGE_VALF;
    if (d <= -limit)
        return -HUGE_VALF;
    if (d > FLT_MAX)
        return FLT_MAX;
    if (d < -FLT_MAX)
        return -FLT_MAX;
    return (float)d;
}

float io_load_float(const unsigned char *p, io_type type, int big_endian)
{
    return io_to_float(io_load(p, type, big_endian));
}

void io_store_f32le(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(u >> (8 * i));
}

void io_store_f64le(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(u >> (8 * i));
}

int io_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

ptreg_status io_volume_bytes(const io_in *in, const size_t dims[3], ptreg_voxel_type type, size_t *bytes)
{
    size_t n = ptreg_voxel_size(type);
    for (int a = 0; a < 3; a++)
        if (!io_mul_size(n, dims[a], &n))
            return io_fail_byte(in, PTREG_ERR_FORMAT, 0, "sizes %zu x %zu x %zu overflow", dims[0], dims[1], dims[2]);
    *bytes = n;
    return PTREG_OK;
}

int io_host_big_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 0;
}

static void swap_bytes(unsigned char *p, size_t count, size_t size)
{
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

ptreg_status io_volume_from_bytes(const io_in *in, const unsigned char *bytes, const size_t dims[3],
                                  ptreg_voxel_type type, int big_endian, ptreg_volume *vol)
{
    ptreg_error quiet;
    if (ptreg_volume_alloc(vol, dims[0], dims[1], dims[2], type, &quiet) != PTREG_OK)
        return ptreg_error_set(in->err, quiet.status, "%s: %s", in->name, quiet.message);
    size_t size = ptreg_voxel_size(type), count = ptreg_volume_count(vol);
    memcpy(vol->data, bytes, count * size);
    if (size > 1 && big_endian != io_host_big_endian())
        swap_bytes(vol->data, count, size);
    return PTREG_OK;
}
