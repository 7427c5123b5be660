/* CPD's sums over point pairs: the pair engine's Gauss transform as every
 * part of a run calls it (the E-step, the field's products, Lanczos),
 * timed and counted in the run. */
#include "ptreg/core.h"
#include "reg/cpd/cpd_impl.h"

/* An fp32 run's field products skip tiles whose terms are all below 2^this. */
#define CPD_FIELD_DROP_LOG2 (-64)

ptreg_status cpd_gauss(cpd_run *r, const ptreg_pair_options *pair, const double *rows, size_t nr, const double *cols,
                       size_t nc, const double *weights, int channels, double scale, double *out, ptreg_error *err)
{
    /* An fp32 run's field products are float64 for W's cancellation alone:
     * their tiles of terms below 2^-64 (against G's diagonal of 1) go. */
    r->cull.drop_below_log2 = pair == &r->field && r->pair.precision != PTREG_PRECISION_FP64 ? CPD_FIELD_DROP_LOG2 : 0;
    const double t0 = ptreg_time_ms();
    ptreg_status st = ptreg_pair_gauss_transform(rows, nr, cols, nc, weights, channels, scale, pair, out, &r->cull,
                                                 err);
    r->pair_ms += ptreg_time_ms() - t0;
    r->pair_terms += (double)nr * (double)nc;
    return st;
}
