/* The CPU device's kernel table. The CPU is a device of the device layer;
 * its "kernels" are the hot functions compiled once per instruction set
 * (the *_isa.c files, cmake/isa.cmake). Each ISA's table is filled at
 * compile time, so picking the kernels of the ISA this CPU runs costs one
 * call, and every call site goes through the table instead of choosing a
 * copy itself. Internal to the library and its tests. */
#ifndef PTREG_DEVICE_CPU_KERNELS_H
#define PTREG_DEVICE_CPU_KERNELS_H

#include "core/cpu.h"
#include "feat/harris3d_kernels.h"
#include "feat/pfh_kernels.h"
#include "nn/nn_kernels.h"
#include "pair/lddmm_kernels.h"
#include "pair/pair_kernels.h"
#include "reg/batch_kernels.h"
#include "reg/global_kernels.h"
#include "reg/icp_kernels.h"

/* One ISA's copy of every kernel. Where the comment names a header, that
 * header says what the kernel computes. */
struct ptreg_cpu_kernels {
    ptreg_isa isa;
    /* Nearest neighbours of one range of queries (the callers spread ranges
     * over threads): by brute force, and in the k-d tree, each search
     * seeded by hint_slot (NULL or PTREG_NO_NEIGHBOR: by the previous
     * query's answer) and bounded by limit (a squared distance; INFINITY:
     * none): a query with no point within it gets PTREG_NO_NEIGHBOR and
     * INFINITY. */
    void (*brute_range)(const ptreg_brute_target *t, const float *q, size_t nq, uint32_t *index, float *dist2);
    void (*kd_nearest_range)(const ptreg_kdtree *tree, const float *q, size_t nq, float limit,
                             const uint32_t *hint_slot, uint32_t *out_slot, float *dist2);
    /* Nearest points by Delaunay walks from `start` (with PTREG_WALK_SEED,
     * slot holds the seeds; PTREG_NO_NEIGHBOR starts at the graph's start);
     * slot receives the answers, tally the walk statistics (added to). mem
     * (NULL, or one per query) carries each answer's certificate to the next
     * call for the same queries moved a little (ptreg_dt_memory). */
    void (*dt_nearest_range)(const ptreg_kdtree *t, const ptreg_delaunay *g, const float *q, size_t nq,
                             ptreg_walk_start start, uint32_t *slot, float *dist2, ptreg_dt_memory *mem,
                             ptreg_walk_stats *tally);
    /* The k nearest points of q within squared distance limit, 0 < k <= n,
     * sorted by (distance, index) (knn_kernels_isa.c). */
    size_t (*kd_knn)(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index,
                     float *dist2);
    /* Every point within squared distance limit (d <= limit), sorted; -1 when
     * out of memory. */
    int (*kd_radius)(const ptreg_kdtree *t, const float q[3], float limit, int sorted, ptreg_neighbors *nb);
    /* reg/icp_kernels.h */
    void (*pair_sums_range)(const float *p, const float *q, const float *d2, const unsigned char *use, size_t n,
                            const double ref[3], ptreg_pair_sums *out);
    /* pair/lddmm_kernels.h */
    void (*lddmm_flow_block)(const lddmm_block *b);
    void (*lddmm_adjoint_block)(const lddmm_block *b);
    /* feat/harris3d_kernels.h */
    void (*harris_tile)(ptreg_harris_tile *t);
    void (*harris_peaks)(const ptreg_harris_peak_row *row);
    /* feat/pfh_kernels.h */
    void (*pfh_pair_bins)(const feat_pair_batch *b);
    void (*fpfh_sum)(feat_fpfh_gather *g);
    /* pair/pair_kernels.h */
    void (*pair_gauss_block)(const ptreg_pair_gauss_block *blk);
    void (*pair_exp_array)(const float *in, float *out, size_t n);
    /* reg/batch_kernels.h: the lanes of a block, and one block's schedule */
    int (*batch_lanes)(void);
    void (*batch_block)(ptreg_batch_block *b);
    /* reg/global_kernels.h */
    void (*desc_scan_rows)(const ptreg_desc_scan *s);
};

/* The table of ptreg_cpu_isa(): read it at each use, not once per process,
 * so that ptreg_cpu_set_isa takes effect. */
const struct ptreg_cpu_kernels *ptreg_cpu_kernels(void);
/* The table of one ISA (for work that recorded its ISA when it was
 * planned); the generic table where this build has no copy for isa. */
const struct ptreg_cpu_kernels *ptreg_cpu_kernels_for(ptreg_isa isa);

#endif
