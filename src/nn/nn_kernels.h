/* The nearest-neighbor kernels built once per ISA (nn_kernels_isa.c,
 * knn_kernels_isa.c), and their table (defined in kdtree.c). */
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

typedef struct brute_target {
    const float *x, *y, *z;
    size_t m;     /* real points */
    size_t m_pad; /* stored, a multiple of PTREG_BRUTE_PAD */
} brute_target;

#define PTREG_DECLARE_NN_KERNELS(sfx)                                                                                  \
    void brute_range##sfx(const brute_target *t, const float *q, size_t nq, uint32_t *index, float *dist2);            \
    void kd_nearest_range##sfx(const ptreg_kdtree *tree, const float *q, size_t nq, float limit,                       \
                               const uint32_t *hint_slot, uint32_t *out_slot, float *dist2);                           \
    void dt_nearest_range##sfx(const ptreg_kdtree *t, const delaunay_graph *g, const float *q, size_t nq,              \
                               walk_start start, uint32_t *slot, float *dist2, dt_memory *mem,                         \
                               ptreg_walk_stats *tally);                                                               \
    size_t kd_knn##sfx(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2); \
    int kd_radius##sfx(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb);         \
    int kd_group_gather##sfx(const ptreg_kdtree *t, const float lo[3], const float hi[3], float reach, kd_group *g);   \
    size_t kd_group_knn##sfx(const ptreg_kdtree *t, const kd_group *g, const float q[3], size_t k, float guess,        \
                             float limit, uint32_t *index, float *dist2);

PTREG_DECLARE_NN_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_NN_KERNELS(_avx2)
PTREG_DECLARE_NN_KERNELS(_avx512)
#endif

/* The copies one ISA built (PTREG_ISA_TABLE: nn_cpu_kernels() is this
 * CPU's). Nearest neighbors of one range of queries (the callers spread
 * ranges over threads): by brute force, and in the k-d tree, each search
 * seeded by hint_slot (NULL or PTREG_NO_NEIGHBOR: by the previous query's
 * answer) and bounded by limit (a squared distance; INFINITY: none): a
 * query with no point within it gets PTREG_NO_NEIGHBOR and INFINITY.
 * Nearest points by Delaunay walks from `start` (with PTREG_WALK_SEED, slot
 * holds the seeds; PTREG_NO_NEIGHBOR starts at the graph's start); slot
 * receives the answers, tally the walk statistics (added to). mem (NULL, or
 * one per query) carries each answer's certificate to the next call for the
 * same queries moved a little (dt_memory). The k nearest points of q
 * within squared distance limit, 0 < k <= n, sorted by (distance, index);
 * every point within squared distance limit (d <= limit), sorted, -1 when
 * out of memory. kd_group_gather and kd_group_knn: kdtree_query.h's. */
typedef struct nn_cpu_kernel_table {
    void (*brute_range)(const brute_target *t, const float *q, size_t nq, uint32_t *index, float *dist2);
    void (*kd_nearest_range)(const ptreg_kdtree *tree, const float *q, size_t nq, float limit,
                             const uint32_t *hint_slot, uint32_t *out_slot, float *dist2);
    void (*dt_nearest_range)(const ptreg_kdtree *t, const delaunay_graph *g, const float *q, size_t nq,
                             walk_start start, uint32_t *slot, float *dist2, dt_memory *mem, ptreg_walk_stats *tally);
    size_t (*kd_knn)(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2);
    int (*kd_radius)(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb);
    int (*kd_group_gather)(const ptreg_kdtree *t, const float lo[3], const float hi[3], float reach, kd_group *g);
    size_t (*kd_group_knn)(const ptreg_kdtree *t, const kd_group *g, const float q[3], size_t k, float guess,
                           float limit, uint32_t *index, float *dist2);
} nn_cpu_kernel_table;

#define NN_CPU_KERNELS(sfx)                                                                          \
    {                                                                                                \
        brute_range##sfx, kd_nearest_range##sfx, dt_nearest_range##sfx, kd_knn##sfx, kd_radius##sfx, \
            kd_group_gather##sfx, kd_group_knn##sfx                                                  \
    }
PTREG_DECLARE_ISA_TABLE(nn_cpu_kernel_table, nn_cpu_kernels)

#endif
