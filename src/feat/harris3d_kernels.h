/* The fast path of 3-D Harris, built once per ISA (harris3d_kernels_isa.c).
 * One call scores the voxels of rows [y0, y1) of every plane. */
#ifndef PTREG_HARRIS3D_KERNELS_H
#define PTREG_HARRIS3D_KERNELS_H

#include "core/cpu.h"

#include "ptreg/harris3d.h"

typedef struct ptreg_harris_tile {
    const void *data;
    ptreg_voxel_type type;
    size_t nx, ny, nz;
    int r;                /* window radius */
    const float *weights; /* 2r + 1 one-dimensional Gaussian weights */
    float k;
    size_t y0, y1;
    int border;     /* skip mode: voxels within this many of an edge score 0; 0 in clamp mode */
    float *scores;  /* the whole score volume */
    float *row_max; /* ny * nz: each row's largest score, for the keypoint scan */
    float *scratch; /* harris_scratch_floats(nx, r, y1 - y0), 64-byte aligned */
    float max;      /* out: the tile's largest score */
} ptreg_harris_tile;

static inline size_t harris_pad(size_t n) { return (n + 15) & ~(size_t)15; }

/* The row stride of every tile buffer: a padded intensity row (the volume's
 * row plus r + 1 edge voxels on each side), in whole 64-byte lines. */
static inline size_t harris_stride(size_t nx, int r) { return harris_pad(nx + 2 * (size_t)r + 2); }

/* Product rows reach 2r columns further, for the x pass over whole rows. */
static inline size_t harris_prod_stride(size_t nx, int r) { return harris_stride(nx, r) + harris_pad(2 * (size_t)r); }

/* One plane of intensity rows y0 - r - 1 .. y1 + r, with slack for the
 * gradient's reads past the last row. */
static inline size_t harris_slab_floats(size_t nx, int r, size_t rows)
{
    return (rows + 2 * (size_t)r + 2) * harris_stride(nx, r) + 2 * harris_prod_stride(nx, r);
}

/* Three intensity planes, six product rows, a ring of 2r + 1 x-smoothed
 * rows and a ring of 2r + 1 xy-smoothed planes (those two with the six
 * channels interleaved per vector: 6 harris_pad(nx) floats a row). The
 * caller zeroes its first harris_scratch_zeroed_floats(), so that no pass
 * meets uninitialised values. */
static inline size_t harris_scratch_floats(size_t nx, int r, size_t rows)
{
    size_t row = 6 * harris_pad(nx), w = 2 * (size_t)r + 1;
    return 3 * harris_slab_floats(nx, r, rows) + 6 * harris_prod_stride(nx, r) + w * row + w * rows * row;
}

/* The scratch's leading floats that must start zeroed: the intensity
 * planes, whose padding columns and slack the products read but no load
 * writes. Every other buffer is written before it is read; zeroing all of
 * it (600 KiB a thread at 256 x 256) took 5% of a run. */
static inline size_t harris_scratch_zeroed_floats(size_t nx, int r, size_t rows)
{
    return 3 * harris_slab_floats(nx, r, rows);
}

/* Row y of plane z of a score volume: peak[x] = 1 where the score is above
 * thr and beats its 26 neighbors (an equal neighbor loses when it comes
 * later in raster order, so a plateau keeps its first voxel), else 0. */
typedef struct harris_peak_row {
    const float *scores;
    size_t nx, ny, nz, y, z;
    float thr;
    int32_t *peak; /* nx */
} harris_peak_row;

#define PTREG_DECLARE_HARRIS_KERNELS(sfx)              \
    void ptreg_harris_tile##sfx(ptreg_harris_tile *t); \
    void harris_peaks##sfx(const harris_peak_row *row);

PTREG_DECLARE_HARRIS_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_HARRIS_KERNELS(_avx2)
PTREG_DECLARE_HARRIS_KERNELS(_avx512)
#endif

/* The copies one ISA built (harris_cpu_kernels(): this CPU's; defined in
 * harris3d.c). */
typedef struct harris_cpu_kernel_table {
    void (*tile)(ptreg_harris_tile *t);
    void (*peaks)(const harris_peak_row *row);
} harris_cpu_kernel_table;

#define HARRIS_CPU_KERNELS(sfx)                   \
    {                                             \
        ptreg_harris_tile##sfx, harris_peaks##sfx \
    }
PTREG_DECLARE_ISA_TABLE(harris_cpu_kernel_table, harris_cpu_kernels)

#endif
