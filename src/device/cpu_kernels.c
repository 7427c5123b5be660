/* The CPU device's kernel tables (device/cpu_kernels.h), one per ISA this
 * build compiles, filled at compile time. */
#include "device/cpu_kernels.h"

/* One ISA's table, from the functions its *_isa.c copies define with the
 * suffix sfx. One list for every ISA, so the tables cannot disagree on
 * which function fills which slot. */
#define PTREG_CPU_KERNELS(ISA, sfx)                            \
    {                                                          \
        .isa = (ISA),                                          \
        .brute_range = ptreg_brute_range##sfx,                 \
        .kd_nearest_range = ptreg_kd_nearest_range##sfx,       \
        .dt_nearest_range = ptreg_dt_nearest_range##sfx,       \
        .kd_knn = ptreg_kd_knn##sfx,                           \
        .kd_radius = ptreg_kd_radius##sfx,                     \
        .pair_sums_range = ptreg_pair_sums_range##sfx,         \
        .lddmm_flow_block = ptreg_lddmm_flow_block##sfx,       \
        .lddmm_adjoint_block = ptreg_lddmm_adjoint_block##sfx, \
        .harris_tile = ptreg_harris_tile##sfx,                 \
        .harris_peaks = ptreg_harris_peaks##sfx,               \
        .pfh_pair_bins = feat_pair_bins##sfx,                  \
        .fpfh_sum = feat_fpfh_sum##sfx,                        \
        .pair_gauss_block = ptreg_pair_gauss_block##sfx,       \
        .pair_exp_array = ptreg_pair_exp_array##sfx,           \
        .batch_lanes = ptreg_batch_lanes##sfx,                 \
        .batch_block = ptreg_batch_block_run##sfx,             \
        .desc_scan_rows = ptreg_desc_scan_rows##sfx,           \
    }

static const struct ptreg_cpu_kernels generic_kernels = PTREG_CPU_KERNELS(PTREG_ISA_GENERIC, _generic);
#if defined(__x86_64__)
static const struct ptreg_cpu_kernels avx2_kernels = PTREG_CPU_KERNELS(PTREG_ISA_AVX2, _avx2);
static const struct ptreg_cpu_kernels avx512_kernels = PTREG_CPU_KERNELS(PTREG_ISA_AVX512, _avx512);
#endif

const struct ptreg_cpu_kernels *ptreg_cpu_kernels_for(ptreg_isa isa)
{
#if defined(__x86_64__)
    switch (isa) {
    case PTREG_ISA_AVX512: return &avx512_kernels;
    case PTREG_ISA_AVX2: return &avx2_kernels;
    case PTREG_ISA_GENERIC: break;
    }
#else
    (void)isa;
#endif
    return &generic_kernels;
}

const struct ptreg_cpu_kernels *ptreg_cpu_kernels(void) { return ptreg_cpu_kernels_for(ptreg_cpu_isa()); }
