/* Batched EM-ICP's device path (batch_device.c, kernels in batch.cl):
 * its layouts; its engine is in batch_impl.h. Private to the library and its tests. */
#ifndef PTREG_REG_BATCH_DEVICE_H
#define PTREG_REG_BATCH_DEVICE_H

#include "device/backend.h"
#include "reg/batch/batch_impl.h"

/* The program of the batch kernels (batch.cl). */
extern const kernel_program batch_kernels;

/* How a launch maps pairs to threads: `pairs` pairs per work-group,
 * `threads` threads per pair, local arrays for `cap` points per pair, one
 * target shared by all pairs or one per pair. */
typedef struct batch_layout {
    unsigned pairs, threads, cap;
    int shared;
} batch_layout;

/* The layout for pairs of at most max_points source or target points
 * (<= PTREG_BATCH_DEVICE_MAX_POINTS). PTREG_BATCH_LAYOUT=PAIRSxTHREADS
 * (say 32x4) overrides the pairs and threads, for benchmarks. */
ptreg_status batch_device_layout(size_t max_points, int shared, batch_layout *layout, ptreg_error *err);
/* Local memory a group of the layout takes (acc_size: 8 or 4). */
size_t batch_device_local_bytes(const batch_layout *layout, size_t acc_size);
/* The -D options of a layout. */
void batch_device_defines(const batch_layout *layout, char *defines, size_t size);

#endif
