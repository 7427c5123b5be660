/* Volumes: voxel types, allocation and float access. */
#include "ptreg/core.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/numeric.h"

size_t ptreg_voxel_size(ptreg_voxel_type type)
{
    switch (type) {
    case PTREG_VOXEL_U8:
    case PTREG_VOXEL_I8: return 1;
    case PTREG_VOXEL_U16:
    case PTREG_VOXEL_I16: return 2;
    case PTREG_VOXEL_U32:
    case PTREG_VOXEL_I32:
    case PTREG_VOXEL_F32: return 4;
    case PTREG_VOXEL_F64: return 8;
    }
    return 0;
}

const char *ptreg_voxel_type_name(ptreg_voxel_type type)
{
    static const char *const names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "f64"};
    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "unknown";
}

/* Our short names, C's <stdint.h> names and NRRD's type spellings. */
static const struct {
    const char *name;
    ptreg_voxel_type type;
} type_names[] = {
    {"u8", PTREG_VOXEL_U8},
    {"uint8", PTREG_VOXEL_U8},
    {"uint8_t", PTREG_VOXEL_U8},
    {"uchar", PTREG_VOXEL_U8},
    {"unsigned char", PTREG_VOXEL_U8},
    {"i8", PTREG_VOXEL_I8},
    {"int8", PTREG_VOXEL_I8},
    {"int8_t", PTREG_VOXEL_I8},
    {"signed char", PTREG_VOXEL_I8},
    {"u16", PTREG_VOXEL_U16},
    {"uint16", PTREG_VOXEL_U16},
    {"uint16_t", PTREG_VOXEL_U16},
    {"ushort", PTREG_VOXEL_U16},
    {"unsigned short", PTREG_VOXEL_U16},
    {"unsigned short int", PTREG_VOXEL_U16},
    {"i16", PTREG_VOXEL_I16},
    {"int16", PTREG_VOXEL_I16},
    {"int16_t", PTREG_VOXEL_I16},
    {"short", PTREG_VOXEL_I16},
    {"short int", PTREG_VOXEL_I16},
    {"signed short", PTREG_VOXEL_I16},
    {"signed short int", PTREG_VOXEL_I16},
    {"u32", PTREG_VOXEL_U32},
    {"uint32", PTREG_VOXEL_U32},
    {"uint32_t", PTREG_VOXEL_U32},
    {"uint", PTREG_VOXEL_U32},
    {"unsigned int", PTREG_VOXEL_U32},
    {"i32", PTREG_VOXEL_I32},
    {"int32", PTREG_VOXEL_I32},
    {"int32_t", PTREG_VOXEL_I32},
    {"int", PTREG_VOXEL_I32},
    {"signed int", PTREG_VOXEL_I32},
    {"f32", PTREG_VOXEL_F32},
    {"float", PTREG_VOXEL_F32},
    {"float32", PTREG_VOXEL_F32},
    {"f64", PTREG_VOXEL_F64},
    {"double", PTREG_VOXEL_F64},
    {"float64", PTREG_VOXEL_F64},
};

int ptreg_voxel_type_parse(const char *name, ptreg_voxel_type *type)
{
    for (size_t i = 0; name && i < sizeof type_names / sizeof type_names[0]; i++)
        if (!strcasecmp(name, type_names[i].name)) {
            *type = type_names[i].type;
            return 0;
        }
    return -1;
}

void ptreg_volume_init(ptreg_volume *vol)
{
    memset(vol, 0, sizeof *vol);
    for (int a = 0; a < 3; a++)
        vol->spacing[a] = 1.0;
}

ptreg_status ptreg_volume_alloc(ptreg_volume *vol, size_t nx, size_t ny, size_t nz, ptreg_voxel_type type,
                                ptreg_error *err)
{
    ptreg_volume_init(vol);
    size_t size = ptreg_voxel_size(type);
    if (!size || !nx || !ny || !nz)
        return ptreg_error_set(err, PTREG_ERR_ARG, "volume of %zu x %zu x %zu voxels of type %d", nx, ny, nz,
                               (int)type);
    if (ny > SIZE_MAX / nx || nz > SIZE_MAX / (nx * ny) || nx * ny * nz > SIZE_MAX / size)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "volume of %zu x %zu x %zu voxels is too large", nx, ny, nz);
    vol->data = malloc(nx * ny * nz * size);
    if (!vol->data)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for a volume of %zu x %zu x %zu", nx, ny, nz);
    vol->nx = nx;
    vol->ny = ny;
    vol->nz = nz;
    vol->type = type;
    return PTREG_OK;
}

void ptreg_volume_free(ptreg_volume *vol)
{
    if (!vol)
        return;
    free(vol->data);
    ptreg_volume_init(vol);
}

float ptreg_double_to_float(double v)
{
    /* C leaves out-of-range conversions undefined; IEEE gives infinity. */
    if (v > FLT_MAX || v < -FLT_MAX)
        return v > 0 ? HUGE_VALF : -HUGE_VALF;
    return (float)v;
}

float ptreg_volume_voxel(const ptreg_volume *vol, size_t i)
{
    const void *d = vol->data;
    switch (vol->type) {
    case PTREG_VOXEL_U8: return ((const uint8_t *)d)[i];
    case PTREG_VOXEL_I8: return ((const int8_t *)d)[i];
    case PTREG_VOXEL_U16: return ((const uint16_t *)d)[i];
    case PTREG_VOXEL_I16: return ((const int16_t *)d)[i];
    case PTREG_VOXEL_U32: return (float)((const uint32_t *)d)[i];
    case PTREG_VOXEL_I32: return (float)((const int32_t *)d)[i];
    case PTREG_VOXEL_F32: return ((const float *)d)[i];
    case PTREG_VOXEL_F64: return ptreg_double_to_float(((const double *)d)[i]);
    }
    return 0.0f;
}
