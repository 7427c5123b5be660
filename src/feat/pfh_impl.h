/* PFH and FPFH on a GPU device (pfh_device.c; kernels: feat/neighbors.cl,
 * feat/pfh.cl): what pfh.c dispatches to, and what the parity suite and
 * the NVRTC build test reach. Private to the library and its tests. */
#ifndef PTREG_FEAT_PFH_IMPL_H
#define PTREG_FEAT_PFH_IMPL_H

#include "device/backend.h"
#include "device/engine.h"
#include "nn/nn_device.h"
#include "ptreg/features.h"

/* Threads per work-group of the feature kernels (one group per point; at
 * least FPFH's 33 bins) and of the neighbor searches, by default. */
#define PTREG_FEAT_DEVICE_WG 64
#define PTREG_FEAT_SEARCH_WG 256
/* The longest neighbor list the feature kernels take (7 words of local
 * memory per entry: 28 KiB at 1024). */
#define PTREG_FEAT_DEVICE_CAP_MAX 1024

/* The neighborhood searches (nn/kdtree.cl, feat/neighbors.cl), built with
 * nn_device_layout's options, and the descriptors (feat/pfh.cl),
 * built with feat_device_defines'. */
extern const kernel_program knn_kernels, feat_kernels;

/* The -D options of the descriptor program for lists of up to cap entries
 * (rounded up to a power of two, at least 32) and wg threads per point (0:
 * PTREG_FEAT_DEVICE_WG), on a device with local_bytes of local (shared)
 * memory per work-group (0: not checked). */
ptreg_status feat_device_defines(size_t cap, int wg, uint64_t local_bytes, char *defines, size_t size,
                                 ptreg_error *err);

/* The rows of which[0 .. count) (which NULL: all n, count n) of one
 * descriptor into out, *missing: how many are NaN (may be NULL). ctx: the
 * engine's (features_engine.open); xyz, normals, n: the cloud it was
 * opened on. The caller has checked the options and the indices. */
typedef ptreg_status (*features_rows_fn)(void *ctx, const float *xyz, const float *normals, size_t n,
                                         const ptreg_features_options *opt, const uint32_t *which, size_t count,
                                         float *out, size_t *missing, ptreg_error *err);

/* An engine of PFH and FPFH (the CPU's, pfh.c; a GPU device's,
 * pfh_device.c), chosen once per call, or once per model, which keeps it:
 * its set-up on a cloud (*ctx: the device's copy; the CPU reads the
 * caller's arrays), each descriptor's rows, its end. */
typedef struct features_engine {
    engine base; /* the backends and whether it runs the options (device/engine.h) */
    /* Calls on one ctx take their turns (the device keeps the last
     * neighborhood's lists and SPFH rows); the CPU's may run at once. */
    int take_turns;
    ptreg_status (*open)(const ptreg_device *on, const float *xyz, const float *normals, size_t n, void **ctx,
                         ptreg_error *err);
    features_rows_fn pfh, fpfh;
    void (*close)(void *ctx);
} features_engine;

/* The device engine: not the reference path; the options' work-groups
 * within the device's. */
extern const features_engine feat_device_engine;

/* A cloud on a device (points, normals: may be NULL for the lists alone,
 * tree), its last neighborhood's lists and SPFH rows kept (pfh_device.c). */
typedef struct feat_device_model feat_device_model;
ptreg_status feat_device_model_create(const ptreg_device *device, const float *xyz, const float *normals, size_t n,
                                      feat_device_model **out, ptreg_error *err);
void feat_device_model_free(feat_device_model *m);
/* A model over a cloud already on dev (xyz: 3n floats; tree: a k-d tree
 * of those points, any build: the lists are exact), for the lists alone
 * (feat_device_model_lists; normals_device.c): both stay the caller's and
 * must outlive the model. */
ptreg_status feat_device_model_borrow(dev_handle *dev, const dbuf *xyz, const nn_device_tree *tree, size_t n,
                                      feat_device_model **out, ptreg_error *err);
/* Every point's neighbor list of nb on the device (found unless the model
 * holds them), with search_wg threads per group: list i is
 * index[start[i] .. start[i] + count[i]) (start u64, count u32), sorted by
 * (squared distance, index), the CPU's feat_table_build(NN_SORTED) lists
 * bit for bit. k-NN: 1 launch; radius: 2 and the counts back. The buffers
 * are the model's. */
ptreg_status feat_device_model_lists(feat_device_model *m, const ptreg_neighborhood *nb, size_t search_wg,
                                     const dbuf **start, const dbuf **count, const dbuf **index, ptreg_error *err);
/* The rows of which[0 .. count) (which NULL: all n) into out (pfh.c has
 * checked the options and the indices). */
ptreg_status feat_device_model_pfh(feat_device_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                   size_t count, float *out, size_t *missing, ptreg_error *err);
ptreg_status feat_device_model_fpfh(feat_device_model *m, const ptreg_features_options *opt, const uint32_t *which,
                                    size_t count, float *out, size_t *missing, ptreg_error *err);

/* Every point's neighbor list as the device finds it, brought back (for
 * the parity suite): list i is index/dist2[start[i] .. start[i] + count[i]),
 * sorted by (squared distance, index); start is 64-bit (the lists pass
 * 2^32 entries at 100 M points). The caller frees the four arrays. */
typedef struct feat_device_lists {
    size_t n, total, max_count;
    uint64_t *start;
    uint32_t *count, *index;
    float *dist2;
} feat_device_lists;

ptreg_status feat_device_neighbors(const ptreg_device *device, const float *xyz, size_t n, const ptreg_neighborhood *nb,
                                   feat_device_lists *out, ptreg_error *err);
void feat_device_lists_free(feat_device_lists *l);

#endif
