/* The motif fit of orientation maps (orient_fit, orientation_impl.h),
 * built once per ISA (orientation_kernels_isa.c): the same bits on every
 * one (no contraction; the sums in the points' order). */
#ifndef PTREG_ORIENTATION_KERNELS_H
#define PTREG_ORIENTATION_KERNELS_H

#include <stddef.h>

#include "core/cpu.h"

#define PTREG_DECLARE_ORIENT_KERNELS(sfx)                                                                          \
    double orient_fit_kernel##sfx(const double R[9], const float *p, size_t n, const float *motif, size_t mk,      \
                                  double tau2);                                                                    \
    void orient_point_fits_kernel##sfx(const double R[9], const float *p, size_t n, const float *motif, size_t mk, \
                                       double tau2, double *fit);

PTREG_DECLARE_ORIENT_KERNELS(_generic)
#if defined(__x86_64__)
PTREG_DECLARE_ORIENT_KERNELS(_avx2)
PTREG_DECLARE_ORIENT_KERNELS(_avx512)
#endif

/* The copies one ISA built (orient_cpu_kernels(): this CPU's; defined in
 * orientation_starts.c). */
typedef struct orient_cpu_kernel_table {
    double (*fit)(const double R[9], const float *p, size_t n, const float *motif, size_t mk, double tau2);
    void (*point_fits)(const double R[9], const float *p, size_t n, const float *motif, size_t mk, double tau2,
                       double *fit);
} orient_cpu_kernel_table;

#define ORIENT_CPU_KERNELS(sfx)                               \
    {                                                         \
        orient_fit_kernel##sfx, orient_point_fits_kernel##sfx \
    }
PTREG_DECLARE_ISA_TABLE(orient_cpu_kernel_table, orient_cpu_kernels)

#endif
