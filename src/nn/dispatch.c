/* Picks the per-ISA nearest-neighbour kernel for this CPU. */
#include "nn/nn_dispatch.h"

void ptreg_brute_range(const ptreg_brute_target *t, const float *q, size_t nq, uint32_t *index,
                       float *dist2)
{
#if defined(__x86_64__)
    switch (ptreg_cpu_isa()) {
    case PTREG_ISA_AVX512: ptreg_brute_range_avx512(t, q, nq, index, dist2); return;
    case PTREG_ISA_AVX2: ptreg_brute_range_avx2(t, q, nq, index, dist2); return;
    case PTREG_ISA_GENERIC: break;
    }
#endif
    ptreg_brute_range_generic(t, q, nq, index, dist2);
}

void ptreg_kd_nearest_range(const ptreg_kdtree *tree, const float *q, size_t nq,
                            const uint32_t *hint_slot, uint32_t *out_slot, float *dist2)
{
#if defined(__x86_64__)
    switch (ptreg_cpu_isa()) {
    case PTREG_ISA_AVX512: ptreg_kd_nearest_range_avx512(tree, q, nq, hint_slot, out_slot, dist2); return;
    case PTREG_ISA_AVX2: ptreg_kd_nearest_range_avx2(tree, q, nq, hint_slot, out_slot, dist2); return;
    case PTREG_ISA_GENERIC: break;
    }
#endif
    ptreg_kd_nearest_range_generic(tree, q, nq, hint_slot, out_slot, dist2);
}

void ptreg_dt_nearest_range(const ptreg_kdtree *t, const ptreg_delaunay *g, const float *q, size_t nq,
                            ptreg_walk_start start, uint32_t *slot, float *dist2, ptreg_dt_memory *mem,
                            ptreg_walk_stats *tally)
{
#if defined(__x86_64__)
    switch (ptreg_cpu_isa()) {
    case PTREG_ISA_AVX512: ptreg_dt_nearest_range_avx512(t, g, q, nq, start, slot, dist2, mem, tally); return;
    case PTREG_ISA_AVX2: ptreg_dt_nearest_range_avx2(t, g, q, nq, start, slot, dist2, mem, tally); return;
    case PTREG_ISA_GENERIC: break;
    }
#endif
    ptreg_dt_nearest_range_generic(t, g, q, nq, start, slot, dist2, mem, tally);
}

size_t ptreg_kd_knn(const ptreg_kdtree *t, const float q[3], size_t k, float limit, uint32_t *index, float *dist2)
{
#if defined(__x86_64__)
    switch (ptreg_cpu_isa()) {
    case PTREG_ISA_AVX512: return ptreg_kd_knn_avx512(t, q, k, limit, index, dist2);
    case PTREG_ISA_AVX2: return ptreg_kd_knn_avx2(t, q, k, limit, index, dist2);
    case PTREG_ISA_GENERIC: break;
    }
#endif
    return ptreg_kd_knn_generic(t, q, k, limit, index, dist2);
}

int ptreg_kd_radius(const ptreg_kdtree *t, const float q[3], float limit, ptreg_neighbors *nb)
{
#if defined(__x86_64__)
    switch (ptreg_cpu_isa()) {
    case PTREG_ISA_AVX512: return ptreg_kd_radius_avx512(t, q, limit, nb);
    case PTREG_ISA_AVX2: return ptreg_kd_radius_avx2(t, q, limit, nb);
    case PTREG_ISA_GENERIC: break;
    }
#endif
    return ptreg_kd_radius_generic(t, q, limit, nb);
}
