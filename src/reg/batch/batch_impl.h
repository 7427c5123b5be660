/* What batched EM-ICP's CPU path (batch.c) and device path
 * (batch_device.c) share: the engine a call chooses once, whose set-up,
 * runs of pairs and end ptreg_batch_register calls. Private to the library
 * and its tests. */
#ifndef PTREG_REG_BATCH_IMPL_H
#define PTREG_REG_BATCH_IMPL_H

#include "device/engine.h"
#include "reg/batch/batch_pairs.h"

/* An engine of batched EM-ICP (the CPU's, batch.c; a GPU device's,
 * batch_device.c): its set-up of a run for the pairs (*ctx; *isa: what
 * runs them, for the stats), its run of pairs first .. first + n - 1 (at
 * most `chunk` a call) into the caller's arrays (transform, iterations,
 * stop indexed by pair; iterations and stop may be NULL), the work added to
 * *terms and the kernel time to *kernel_ms, and its end. The loop over the
 * pairs stays with the caller (batch.c). */
typedef struct batch_engine {
    engine base;       /* the backends and whether it runs the options (device/engine.h) */
    size_t max_points; /* the most points a side of a pair it takes; 0: any (the data's question, batch.c) */
    size_t chunk;      /* the most pairs one call of `pairs` takes */
    ptreg_status (*open)(const ptreg_pair_set *p, const ptreg_batch_options *o, const ptreg_device *on, void **ctx,
                         const char **isa, ptreg_error *err);
    ptreg_status (*pairs)(void *ctx, size_t first, size_t n, double *transform, int *iterations, int *stop,
                          double *terms, double *kernel_ms, ptreg_error *err);
    void (*close)(void *ctx);
} batch_engine;

/* The device engine: every option but the reference loop, pairs of at most
 * PTREG_BATCH_DEVICE_MAX_POINTS a side. */
extern const batch_engine batch_device_engine;

#endif
