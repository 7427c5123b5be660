/* orient_fit's kernels (orientation_kernels.h), built once per ISA. */
#include <stddef.h>

#include "core/cpu_isa.h"
#include "apt/orientation_kernels.h"

/* orient_fit takes this many points at a time, one to a vector lane: the
 * nearest-motif minimum is then a lane-wise min, and the sum still runs
 * in the points' order (the same bits as one point at a time; no
 * contraction, so the same on every instruction set). */
#define FIT_LANES 8
typedef double fit_vec __attribute__((vector_size(FIT_LANES * sizeof(double))));
typedef long long fit_mask __attribute__((vector_size(FIT_LANES * sizeof(double))));

/* Points p[0 .. width) (width <= FIT_LANES; the lanes beyond repeat the
 * first) rotated by R: each one's min(d^2, tau2), d the distance to the
 * nearest motif point. */
static inline __attribute__((always_inline)) void
nearest_block(const double R[9], const float *p, size_t width, const float *motif, size_t mk, double tau2, fit_vec *out)
{
    fit_vec x, y, z, best;
    for (size_t l = 0; l < FIT_LANES; l++) {
        const float *q = p + 3 * (l < width ? l : 0);
        x[l] = R[0] * q[0] + R[1] * q[1] + R[2] * q[2];
        y[l] = R[3] * q[0] + R[4] * q[1] + R[5] * q[2];
        z[l] = R[6] * q[0] + R[7] * q[1] + R[8] * q[2];
        best[l] = tau2;
    }
    for (size_t m = 0; m < mk; m++) {
        const fit_vec dx = x - (double)motif[3 * m], dy = y - (double)motif[3 * m + 1],
                      dz = z - (double)motif[3 * m + 2];
        const fit_vec d2 = dx * dx + dy * dy + dz * dz;
        const fit_mask nearer = d2 < best; /* best stays where unordered */
        best = (fit_vec)(((fit_mask)d2 & nearer) | ((fit_mask)best & ~nearer));
    }
    *out = best;
}

void ISA_FN(orient_point_fits_kernel)(const double R[9], const float *p, size_t n, const float *motif, size_t mk,
                                      double tau2, double *fit)
{
    for (size_t j0 = 0; j0 < n; j0 += FIT_LANES) {
        const size_t width = n - j0 < FIT_LANES ? n - j0 : FIT_LANES;
        fit_vec best;
        nearest_block(R, p + 3 * j0, width, motif, mk, tau2, &best);
        for (size_t l = 0; l < width; l++)
            fit[j0 + l] = best[l];
    }
}

double ISA_FN(orient_fit_kernel)(const double R[9], const float *p, size_t n, const float *motif, size_t mk,
                                 double tau2)
{
    double sum = 0.0;
    for (size_t j0 = 0; j0 < n; j0 += FIT_LANES) {
        const size_t width = n - j0 < FIT_LANES ? n - j0 : FIT_LANES;
        fit_vec best;
        nearest_block(R, p + 3 * j0, width, motif, mk, tau2, &best);
        for (size_t l = 0; l < width; l++)
            sum += best[l];
    }
    return sum / (double)n;
}
