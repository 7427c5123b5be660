/* RANSAC's inlier counts on a device (ransac_device.c, ransac.cl): ransac.c
 * draws, checks and fits each batch of hypotheses on the host, as its CPU
 * path does, and asks the device for their counts. */
#ifndef PTREG_REG_GLOBAL_RANSAC_DEVICE_H
#define PTREG_REG_GLOBAL_RANSAC_DEVICE_H

#include <stdint.h>

#include "device/backend.h"
#include "device/engine.h"

/* The GPU engine of ptreg_ransac: devices with double precision. */
extern const engine ransac_device_engine;
/* Its program (test_kernels_nvrtc compiles it for sm_90) and the defines
 * it is built with. */
extern const kernel_program ransac_kernels;
void ransac_device_defines(char *defines, size_t size);

typedef struct ransac_device ransac_device;

/* The matches' points (p[k] -> q[k], 3 floats each) uploaded to device
 * `on`, room for batch hypotheses. */
ptreg_status ransac_device_create(const ptreg_device *on, const float *p, const float *q, size_t matches, size_t batch,
                                  ransac_device **out, ptreg_error *err);
/* inliers[h]: the matches within squared distance max_d2 under
 * transforms[12 h ...] (its three rows), for h < count <= batch. */
ptreg_status ransac_device_count(ransac_device *rd, const double *transforms, size_t count, double max_d2,
                                 uint64_t *inliers, ptreg_error *err);
void ransac_device_destroy(ransac_device *rd);

#endif
