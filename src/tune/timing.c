/* The candidates' timing (tune_impl.h). */
#include <math.h>
#include <stdlib.h>

#include "core/threads.h"
#include "tune/tune_impl.h"

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

ptreg_status tune_time_runs(tune_run_fn run, void *ctx, int threads, int reps, double *seconds, ptreg_error *err)
{
    const int before = core_thread_override(threads);
    double times[64];
    reps = reps < 1 ? 1 : reps > 64 ? 64 : reps;
    ptreg_status st = run(ctx, err);
    for (int r = 0; !st && r < reps; r++) {
        const double t0 = ptreg_time_ms();
        st = run(ctx, err);
        times[r] = (ptreg_time_ms() - t0) * 1e-3;
    }
    core_thread_override(before);
    if (st)
        return st;
    qsort(times, (size_t)reps, sizeof *times, by_value);
    *seconds = times[reps / 2];
    return PTREG_OK;
}

double tune_normalised_error(const double *ref, const double *got, size_t len)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < len; i++) {
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
