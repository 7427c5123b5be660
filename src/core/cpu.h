/* Run-time choice of the instruction set for the kernels built per ISA
 * (cmake/isa.cmake); device/cpu_kernels.h holds each ISA's kernels.
 * Internal to the library and its tests. */
#ifndef PTREG_CORE_CPU_H
#define PTREG_CORE_CPU_H

typedef enum ptreg_isa {
    PTREG_ISA_GENERIC = 0,
    PTREG_ISA_AVX2 = 1,
    PTREG_ISA_AVX512 = 2
} ptreg_isa;

/* The best ISA this CPU runs, capped by env PTREG_ISA (generic|avx2|avx512,
 * read on first use) or by ptreg_cpu_set_isa. Cheap: call it per use. */
ptreg_isa ptreg_cpu_isa(void);
/* The best ISA the CPU supports, ignoring caps. */
ptreg_isa ptreg_cpu_best_isa(void);
/* Caps the ISA (tests run every path); -1 removes the cap. */
void ptreg_cpu_set_isa(int isa);
const char *ptreg_isa_name(ptreg_isa isa);

#endif
