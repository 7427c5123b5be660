/* What EM-ICP's CPU path (emicp.c) and device path (emicp_device.c) share:
 * the iterations call one E-step, which leaves the weighted moments of
 * Horn's problem; Horn and the schedule stay on the host. */
#ifndef PTREG_REG_EMICP_IMPL_H
#define PTREG_REG_EMICP_IMPL_H

#include "device/backend.h"
#include "device/engine.h"
#include "ptreg/emicp.h"
#include "core/numeric.h"

/* One E-step under T at sigma2 (outlier: exp(-d0^2 / sigma^2)): the
 * weighted moments of every source point's pair, about the source's and
 * the target's centroids (mom arrives initialised so); the time it took is
 * added to *pair_ms. */
typedef ptreg_status (*emicp_estep_fn)(void *ctx, const double T[16], double sigma2, double outlier, ptreg_moments *mom,
                                       double *pair_ms, ptreg_error *err);

/* An engine of EM-ICP (the CPU's, emicp.c; a GPU device's,
 * emicp_device.c), chosen once per call: its set-up of a run (*ctx; *isa:
 * what ran the sums), its E-step on ctx, its end. The loop and Horn stay
 * with the caller (emicp.c). */
typedef struct emicp_engine {
    engine base; /* the backends and whether it runs the options (device/engine.h) */
    ptreg_status (*open)(const ptreg_device *on, const float *source, size_t n, const float *target, size_t m,
                         const ptreg_emicp_options *opt, const double source_c[3], const double target_c[3], void **ctx,
                         const char **isa, ptreg_error *err);
    emicp_estep_fn estep;
    void (*close)(void *ctx);
} emicp_engine;

/* The device engine: the pair sums' work-groups within the device's, and
 * its double precision for fp64 sums. */
extern const emicp_engine emicp_device_engine;

/* The program of EM-ICP on a device: pair.cl's sums, emicp.cl's steps. */
extern const kernel_program emicp_kernels;

typedef struct emicp_device_state emicp_device_state;

/* The target resident on the device, the source uploaded; *name: the
 * device's (for the result's isa). */
ptreg_status emicp_device_open(const ptreg_device *device, const float *source, size_t n, const float *target, size_t m,
                               const ptreg_pair_options *pair, const double source_c[3], const double target_c[3],
                               emicp_device_state **out, const char **name, ptreg_error *err);
/* emicp_estep_fn on the device (ctx: the emicp_device_state). */
ptreg_status emicp_device_estep(void *ctx, const double T[16], double sigma2, double outlier, ptreg_moments *mom,
                                double *pair_ms, ptreg_error *err);
void emicp_device_close(emicp_device_state *ed);

#endif
