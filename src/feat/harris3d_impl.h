/* What 3-D Harris's CPU path (harris3d.c) and device path
 * (harris3d_device.c, kernels in harris3d.cl) share, and the device path's
 * handle for callers that keep a volume resident (the parity suite, the
 * GPU benchmark). */
#ifndef PTREG_FEAT_HARRIS3D_IMPL_H
#define PTREG_FEAT_HARRIS3D_IMPL_H

#include "device/backend.h"
#include "device/engine.h"
#include "ptreg/harris3d.h"

/* ---- shared by both paths (harris3d_shared.c) ---- */

/* The 2r + 1 normalised 1-D Gaussian weights over [-r, r], in double (the
 * literal loop), and as float, exactly as the fast paths use them. */
void harris3d_gaussian_weights(int r, double sigma, double *w);
void harris3d_weights(int r, double sigma, float *w);
/* Greedy thinning of keypoints sorted best first: drops those closer than
 * d to one kept, stops after top (0: all). Returns how many are kept (at
 * the front of kp), SIZE_MAX when out of memory. */
size_t harris3d_thin(ptreg_keypoint *kp, size_t n, double d, size_t top, size_t nx, size_t ny, size_t nz);

/* ---- the device path ---- */

extern const kernel_program harris3d_kernels;

typedef enum harris_method {
    PTREG_HARRIS_DIRECT = 0, /* one voxel per thread, the window from global memory */
    PTREG_HARRIS_TILE,       /* a brick plus halo in local memory */
    PTREG_HARRIS_SEPARABLE,  /* x, y, z passes through global scratch */
    PTREG_HARRIS_ZCHUNK,     /* column tiles walking z, planes in local memory */
    PTREG_HARRIS_METHODS,
    PTREG_HARRIS_AUTO = -1 /* env PTREG_HARRIS_METHOD, else zchunk (separable where zchunk does not fit) */
} harris_method;

#define PTREG_HARRIS_DEVICE_WG 256

const char *harris3d_method_name(int method);
/* env PTREG_HARRIS_METHOD (direct, tile, separable, zchunk) or AUTO;
 * PTREG_ERR_ARG for another value. */
ptreg_status harris3d_method_env(int *method, ptreg_error *err);

/* A build of harris3d.cl: its -D options for a method (not AUTO), input of
 * 8, 16 or 32 bits and radius r on a device with local_bytes of local
 * memory, max_wg threads per group and `units` compute units, for a volume
 * of nx x ny x nz; *kernels: how many kernels the build has.
 * PTREG_ERR_UNSUPPORTED when the method's tile does not fit. */
ptreg_status harris3d_device_defines(int method, int input_bits, int r, uint64_t local_bytes, size_t max_wg,
                                     size_t units, const size_t dims[3], char *defines, size_t size, size_t *kernels,
                                     ptreg_error *err);

typedef struct harris3d_device_state harris3d_device_state;

ptreg_status harris3d_device_open(const ptreg_device *device, harris3d_device_state **out, ptreg_error *err);
void harris3d_device_close(harris3d_device_state *hd);
/* The volume to the device, resident until the next upload (u8, u16 and
 * f32 as they are; other types converted to float32 on the host, as the
 * CPU path converts them). The caller has checked it (harris3d.c). */
ptreg_status harris3d_device_upload(harris3d_device_state *hd, const ptreg_volume *vol, ptreg_error *err);
/* Scores of the resident volume, left on the device; *used: the method
 * run (method may be AUTO). Waits for the kernels. */
ptreg_status harris3d_device_scores(harris3d_device_state *hd, const ptreg_harris3d_options *opt, int method, int *used,
                                    ptreg_error *err);
/* A score volume from the host onto the device (keypoints only). */
ptreg_status harris3d_device_set_scores(harris3d_device_state *hd, const float *scores, size_t nx, size_t ny, size_t nz,
                                        ptreg_error *err);
ptreg_status harris3d_device_read_scores(harris3d_device_state *hd, float *scores, ptreg_error *err);
/* Keypoints of the scores on the device: max, threshold, peaks and their
 * order on the device, thinning and the top-N cut on the host. */
ptreg_status harris3d_device_keypoints(harris3d_device_state *hd, const ptreg_harris3d_options *opt,
                                       ptreg_keypoint **keypoints, size_t *count, double *threshold_used,
                                       size_t *local_maxima, float *max_score, ptreg_error *err);

/* An engine of 3-D Harris (the CPU's, harris3d.c; a GPU device's,
 * harris3d_device.c), chosen once per call, or once per resident handle,
 * which keeps it. Its set-up on the device (*ctx), the volume it works on
 * (set_volume: the device keeps a copy, the CPU reads the caller's; vol in
 * the calls that follow is the one last set), the steps the public calls
 * run, and its end. harris3d.c has checked the options and the inputs. */
typedef struct harris3d_engine {
    engine base; /* the backends and whether it runs the options (device/engine.h) */
    /* Calls on one ctx take their turns (a device's buffers); the CPU's
     * may run at once. */
    int take_turns;
    ptreg_status (*open)(const ptreg_device *on, void **ctx, ptreg_error *err);
    ptreg_status (*set_volume)(void *ctx, const ptreg_volume *vol, ptreg_error *err);
    /* Scores and keypoints into a zeroed result, the scores kept when
     * with_scores; upload_ms: the volume's upload, which counts with the
     * scores where there was one. */
    ptreg_status (*detect)(void *ctx, const ptreg_volume *vol, const ptreg_harris3d_options *opt, int with_scores,
                           double upload_ms, ptreg_harris3d_result *result, ptreg_error *err);
    /* Every voxel's score into scores (nx*ny*nz floats). */
    ptreg_status (*scores)(void *ctx, const ptreg_volume *vol, const ptreg_harris3d_options *opt, float *scores,
                           ptreg_error *err);
    /* Keypoints of a score volume from the host. */
    ptreg_status (*select)(void *ctx, const float *scores, size_t nx, size_t ny, size_t nz,
                           const ptreg_harris3d_options *opt, ptreg_keypoint **keypoints, size_t *count,
                           double *threshold_used, size_t *local_maxima, ptreg_error *err);
    void (*close)(void *ctx);
} harris3d_engine;

/* The device engine: every option but the reference loop. */
extern const harris3d_engine harris3d_device_engine;

/* Declared in the public headers before 1.x; the library's own (not exported). */
/* The sigma the options mean (the default when opt->sigma is 0). */
double ptreg_harris3d_sigma(const ptreg_harris3d_options *opt);
/* Scores of every voxel into scores (nx*ny*nz floats). Voxels must be
 * finite (PTREG_ERR_FORMAT names the first that is not). The fast path and
 * the reference agree to 1e-5 of trace(M)^3; the fast path gives the same
 * bits for any thread count and instruction set. */
ptreg_status ptreg_harris3d_scores(const ptreg_volume *vol, const ptreg_harris3d_options *opt, float *scores,
                                   ptreg_error *err);

#endif
