/* ptreg batch: many small registrations in one call, what atom-probe
 * crystallography builds on (orientation.h; Eq. 4 of the EM-ICP study of
 * Tamaki et al.: min over R_i, P_i of sum_i |m - P_i d_i R_i|^2 for every
 * atom's neighborhood d_i against the average local structure m).
 *
 * Every pair is registered by ptreg_emicp's soft-assign EM-ICP (no
 * correspondences: the permutation is the soft assignment), many pairs in
 * the lanes of the CPU's vectors; a pair's answer is ptreg_emicp's on the
 * same schedule, bit for bit on the same instruction set. On a GPU (CUDA
 * or OpenCL, with double precision) the whole schedule of every pair runs
 * in one launch, a work-group to a few pairs, and gives the CPU's answer
 * to rounding (docs/ALGORITHMS.md, "Batched EM-ICP on devices"). */
#ifndef PTREG_BATCH_H
#define PTREG_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "device.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- registering many pairs ---- */

typedef struct ptreg_batch_options {
    int translation;     /* 1: rotation and translation (as ptreg_emicp); 0: rotation only,
                            about the origin, where source and target are centred (default 1) */
    double sigma2_init;  /* <= 0: PTREG_EMICP_SIGMA2_INIT_REL r^2, r the target's RMS radius */
    double sigma2_final; /* <= 0: PTREG_EMICP_SIGMA2_FINAL_REL r^2 */
    double sigma_factor; /* in (0, 1) (default 0.9) */
    double d02;          /* < 0: the first sigma^2 (default) */
    int max_iter;        /* default 1000 */
    double tol;          /* ptreg_emicp's (default 1e-7; 0: run the whole schedule) */
    int reference;       /* 1: the plain path, one pair at a time (for checking; slow) */
    ptreg_device device; /* auto (default), cpu, cuda[:N], opencl[:N]: ptreg_batch_resolve_device */
    int loop;            /* 1: one ptreg_emicp call per pair, in order, on the CPU (a benchmark baseline;
                            ptreg_emicp frees the translation: needs translation) */
} ptreg_batch_options;

/* The most source or target points a pair may have on a GPU (the kernel's
 * local arrays are sized for it). A set with a larger pair is
 * PTREG_ERR_ARG on a device asked for; auto then takes the CPU. */
#define PTREG_BATCH_DEVICE_MAX_POINTS 64

PTREG_API void ptreg_batch_options_default(ptreg_batch_options *opt);
/* The table of its options, ptreg_option_table_find("batch") (options.h): EM-ICP's schedule. */
/* Where ptreg_batch_register runs the options (ptreg_device_resolve): a
 * GPU unless `reference` (then auto means the CPU, and a GPU named is
 * PTREG_ERR_UNSUPPORTED). */
PTREG_API ptreg_status ptreg_batch_resolve_device(const ptreg_batch_options *opt, ptreg_device *on, ptreg_error *err);


/* Pairs of small clouds: pair i registers its source points
 * source[source_offset[i] .. source_offset[i + 1]) onto target points
 * target[target_offset[i] .. target_offset[i + 1]), or onto one target of
 * target_points points shared by all (target_offset NULL). Offsets count
 * points (3 floats each). */
typedef struct ptreg_pair_set {
    size_t count;
    const float *source;
    const size_t *source_offset; /* count + 1 */
    const float *target;
    const size_t *target_offset; /* count + 1, or NULL */
    size_t target_points;        /* the shared target's, when target_offset is NULL */
} ptreg_pair_set;

typedef struct ptreg_batch_stats {
    size_t pairs;
    double pair_terms; /* source points x target points x iterations, summed over the pairs */
    double time_ms;
    double pairs_per_s, gpts; /* pairs / s; pair terms / s / 1e9 */
    const char *isa;          /* the CPU's instruction set, or the device's name */
    double kernel_ms;         /* on a device: the launches alone (its events; -1 when it gave no timing);
                                 time_ms adds packing and copies */
} ptreg_batch_stats;

/* Registers every pair: transform[16 * i ...] (row-major 4x4, taking pair
 * i's source onto its target; in: ignored), and when not NULL iterations[i]
 * and stop[i] (ptreg_stop_reason). Pairs need at least one source and one
 * target point and finite coordinates (else PTREG_ERR_ARG naming the
 * pair). The same bits for any thread count, and on every run of a
 * device. stats->isa names the device on a GPU. */
PTREG_API ptreg_status ptreg_batch_register(const ptreg_pair_set *pairs, const ptreg_batch_options *opt,
                                            double *transform, int *iterations, int *stop, ptreg_batch_stats *stats,
                                            ptreg_error *err);

/* How well each pair ended: rms[i], the root mean square of the distances
 * from pair i's source points, moved by transform[16 * i ...], to their
 * nearest target points (exact, by brute force: O(n m) a pair; a pair
 * without source points gives NaN). The same bits for any thread count. */
PTREG_API ptreg_status ptreg_batch_rms(const ptreg_pair_set *pairs, const double *transform, double *rms,
                                       ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
