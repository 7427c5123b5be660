/* Picks the per-ISA ICP kernel for this CPU. */
#include "core/cpu.h"
#include "reg/icp_kernels.h"

void ptreg_pair_sums_range(const float *p, const float *q, const float *d2, const unsigned char *use, size_t n,
                           const double ref[3], ptreg_pair_sums *out)
{
#if defined(__x86_64__)
    switch (ptreg_cpu_isa()) {
    case PTREG_ISA_AVX512: ptreg_pair_sums_range_avx512(p, q, d2, use, n, ref, out); return;
    case PTREG_ISA_AVX2: ptreg_pair_sums_range_avx2(p, q, d2, use, n, ref, out); return;
    case PTREG_ISA_GENERIC: break;
    }
#endif
    ptreg_pair_sums_range_generic(p, q, d2, use, n, ref, out);
}
