/* The nearest-neighbour kernels built once per ISA (nn_kernels_isa.c,
 * knn_kernels_isa.c); the CPU's kernel table (device/cpu_kernels.h) holds
 * the copy this CPU runs. */
#ifndef PTREG_NN_KERNELS_H
#define PTREG_NN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "core/cpu.h"
#include "nn/delaunay_impl.h"
#include "nn/kdtree_impl.h"

/* Target points for brute force: SoA, padded with NaN to a multiple of
 * PTREG_BRUTE_PAD so every vector load is whole. */
#define PTREG_BRUTE_PAD 64

typedef struct ptreg_brute_target {
    const float *x, *y, *z;
    size_t m;     /* real points */
    size_t m_pad; /* stored, a multiple of PTREG_BRUTE_PAD */
} ptreg_brute_target;

#define PTREG_DECLARE_NN_KERNELS(sfx)                                                       \
    void ptreg_brute_range##sfx(const ptreg_brute_target *t, const float *q, size_t nq,     \
                                uint32_t *index, float *dist2);                             \
    void ptreg_kd_nearest_range##sfx(const ptreg_kdtree *tree, const float *q, size_t nq, float limit, \
                                     const uint32_t *hint_slot, uint32_t *out_slot, float *dist2); \
    void ptreg_dt_nearest_range##sfx(const ptreg_kdtree *t, const ptreg_delaunay *g, const float *q, \
                                     size_t nq, ptreg_walk_start start, uint32_t *slot, float *dist2,   \
                                     ptreg_dt_memory *mem, ptreg_walk_stats *tally);          \
    size_t ptreg_kd_knn##sfx(const ptreg_kdtree *t, const float q[3], size_t k, float limit,          \
                             uint32_t *index, float *dist2);                                          \
    int ptreg_kd_radius##sfx(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb);

PTREG_DECLARE_NN_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_NN_KERNELS(_avx2)
PTREG_DECLARE_NN_KERNELS(_avx512)
#endif

#endif
