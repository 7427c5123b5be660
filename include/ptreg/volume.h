/* ptreg's volumes: voxel types, the volume and a volume's keypoints.
 * (<ptreg/core.h> includes it too.) */
#ifndef PTREG_VOLUME_H
#define PTREG_VOLUME_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Voxel types of volumes. Computation converts voxels to float32, which is
 * exact for the 8- and 16-bit types. */
typedef enum ptreg_voxel_type {
    PTREG_VOXEL_U8 = 0,
    PTREG_VOXEL_I8,
    PTREG_VOXEL_U16,
    PTREG_VOXEL_I16,
    PTREG_VOXEL_U32,
    PTREG_VOXEL_I32,
    PTREG_VOXEL_F32,
    PTREG_VOXEL_F64
} ptreg_voxel_type;

/* Bytes per voxel (0 for an unknown type). */
PTREG_API size_t ptreg_voxel_size(ptreg_voxel_type type);
/* "u8", "i8", "u16", "i16", "u32", "i32", "f32", "f64". */
PTREG_API const char *ptreg_voxel_type_name(ptreg_voxel_type type);
/* Parses those names and the C/NRRD spellings (uint8, uchar, unsigned char,
 * int16, short, float, double ...). Returns -1 when the name is unknown. */
PTREG_API int ptreg_voxel_type_parse(const char *name, ptreg_voxel_type *type);

/* A volume: voxel (x, y, z) is element x + nx * (y + ny * z) of data (x
 * varies fastest), in the host's byte order. Physical position of a voxel:
 * origin + (x, y, z) * spacing, per axis. The caller owns it; free with
 * ptreg_volume_free. */
typedef struct ptreg_volume {
    size_t nx, ny, nz;
    ptreg_voxel_type type;
    void *data;
    double spacing[3]; /* default 1, 1, 1 */
    double origin[3];  /* default 0, 0, 0 */
} ptreg_volume;

PTREG_API void ptreg_volume_init(ptreg_volume *vol);
/* Allocates nx*ny*nz voxels (uninitialised), spacing 1 and origin 0.
 * Every size must be at least 1. */
PTREG_API ptreg_status ptreg_volume_alloc(ptreg_volume *vol, size_t nx, size_t ny, size_t nz, ptreg_voxel_type type,
                                          ptreg_error *err);
PTREG_API void ptreg_volume_free(ptreg_volume *vol);
static inline size_t ptreg_volume_count(const ptreg_volume *vol) { return vol->nx * vol->ny * vol->nz; }
/* Voxel i (linear index) as float32, as the algorithms see it. */
PTREG_API float ptreg_volume_voxel(const ptreg_volume *vol, size_t i);

/* A detected point of a volume: its voxel and its score. */
typedef struct ptreg_keypoint {
    uint32_t x, y, z;
    float score;
} ptreg_keypoint;

#ifdef __cplusplus
}
#endif

#endif
