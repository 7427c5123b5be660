/* Feature matching's nearest descriptors on a device (match_device.c,
 * match.cl): global_match.c's ptreg_match_features asks it in place of its CPU
 * scan, with the same answers. */
#ifndef PTREG_REG_GLOBAL_MATCH_DEVICE_H
#define PTREG_REG_GLOBAL_MATCH_DEVICE_H

#include <stdint.h>

#include "device/backend.h"
#include "device/engine.h"

/* The GPU engine of the matching: devices that keep a*b + c unfused. */
extern const engine match_device_engine;
/* Its program (test_kernels_nvrtc compiles it for sm_90) and the defines
 * it is built with for descriptors of dim floats. */
extern const kernel_program match_kernels;
void match_device_defines(int dim, char *defines, size_t size);

/* row_best[i]: source row i's nearest target row, (col_best not NULL)
 * col_best[j]: target row j's nearest source row, and (row_second not
 * NULL) row_second[i]: row i's second least distance, as global_match.c's
 * nearest_both gives them (rows of dim floats; the *_nan flags mark rows
 * without a descriptor; UINT32_MAX: none). */
ptreg_status match_device_nearest(const ptreg_device *on, const float *source, size_t ns,
                                  const unsigned char *source_nan, const float *target, size_t nt,
                                  const unsigned char *target_nan, int dim, uint32_t *row_best, uint32_t *col_best,
                                  float *row_second, ptreg_error *err);

#endif
