/* 3-D Harris interest points on volumes (CT scans): the structure tensor
 * of central-difference gradients under a Gaussian window, scored by
 * det(M) - k trace(M)^3, then thresholded, non-maximum suppressed over the
 * 26 neighbors, thinned by distance and cut to the best N. Formulas and
 * defaults: docs/ALGORITHMS.md, "3-D Harris". */
#ifndef PTREG_HARRIS3D_H
#define PTREG_HARRIS3D_H

#include "core.h"
#include "options.h"
#include "results.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_harris_border {
    /* Voxels within window radius + 1 of an edge, whose window needs
     * gradients from outside the volume, score 0 (the study's loop skips
     * them). */
    PTREG_HARRIS_BORDER_SKIP = 0,
    /* The volume is extended by repeating its edge voxels; every voxel
     * gets a score. */
    PTREG_HARRIS_BORDER_CLAMP
} ptreg_harris_border;

typedef enum ptreg_harris_threshold {
    PTREG_HARRIS_RELATIVE = 0, /* threshold * the largest score */
    PTREG_HARRIS_ABSOLUTE
} ptreg_harris_threshold;

#define PTREG_HARRIS_MAX_WINDOW 31
#define PTREG_HARRIS_MAX_RADIUS 15

typedef struct ptreg_harris3d_options {
    int window;   /* odd, 3 .. PTREG_HARRIS_MAX_WINDOW (default 5) */
    double sigma; /* Gaussian weight's sigma in voxels; 0: (window - 1) / 4 */
    double k;     /* score det - k tr^3; corners need k < 1/27 (default 0.01) */
    ptreg_harris_border border;
    /* Keypoints: score > threshold and > 0, a local maximum of its 26
     * neighbors, at least min_distance voxels from a better one, the best
     * `top` of them (0: all). */
    ptreg_harris_threshold threshold_mode;
    double threshold;    /* default 0.01, relative */
    double min_distance; /* voxels; 0 keeps every local maximum */
    size_t top;
    int reference; /* the literal loop (w^3 terms per voxel, double): tests */
    /* The CPU fast path's rows per tile (speed only: the scores' bits do
     * not depend on it; `ptreg tune --kernel harris` picks it). 0: as many
     * as keep a tile's ring of smoothed planes within 512 KiB (about an
     * L2), at most a quarter of a thread's share of the rows, at least 4. */
    size_t tile_rows;
    /* On a GPU, the kernels: -1 (default) env PTREG_HARRIS_METHOD, else
     * zchunk (separable where its planes do not fit); 0 direct, 1 tile,
     * 2 separable, 3 zchunk (`ptreg tune --kernel harris --device` picks). */
    int device_method;
    ptreg_device device;
} ptreg_harris3d_options;

PTREG_API void ptreg_harris3d_options_default(ptreg_harris3d_options *opt);
/* The table of its options, ptreg_option_table_find("harris3d") (options.h):
 * window, sigma, k, border, min_distance, top. */
/* Where the calls below run the options (ptreg_device_resolve): scores and the keypoints' peaks and
 * order on a GPU (harris3d.cl; methods by env PTREG_HARRIS_METHOD=direct,
 * tile, separable or zchunk, default zchunk), the min-distance thinning
 * and the top-N cut on the host. The device's scores have the CPU fast
 * path's bits; `reference` runs on the CPU only (auto: the CPU; a GPU
 * named: PTREG_ERR_UNSUPPORTED). */
PTREG_API ptreg_status ptreg_harris3d_resolve_device(const ptreg_harris3d_options *opt, ptreg_device *on,
                                                     ptreg_error *err);

typedef struct ptreg_harris3d_result {
    float *scores;             /* nx*ny*nz, the volume's layout; owned */
    ptreg_keypoint *keypoints; /* best first (score, then x fastest index); owned */
    size_t keypoint_count;
    size_t local_maxima; /* above the threshold, before min_distance and top */
    float max_score;
    double threshold; /* the absolute threshold used */
    double sigma;
    double time_ms; /* scores + keypoints, the volume in memory */
    double scores_ms, keypoints_ms;
    const char *isa; /* the kernels' instruction set ("reference" for the literal loop), or the GPU's name */
} ptreg_harris3d_result;


/* Both steps, timed. */
PTREG_API ptreg_status ptreg_harris3d(const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                      ptreg_harris3d_result *result, ptreg_error *err);
PTREG_API void ptreg_harris3d_result_free(ptreg_harris3d_result *result);

/* A volume kept where the options' device resolves to, for repeated
 * detections (a sweep of windows or thresholds, a loop re-detecting a
 * volume updated in place): a GPU holds a copy, uploaded by create and
 * set only, and the detections upload nothing else (the window's weights
 * when they change); the CPU reads the caller's volume, which must then
 * outlive the handle or the next set. Threads may share the handle's
 * detections (on a GPU they take turns); a set must not overlap them. */
typedef struct ptreg_harris3d_volume ptreg_harris3d_volume;
PTREG_API ptreg_status ptreg_harris3d_volume_create(const ptreg_volume *vol, const ptreg_harris3d_options *opt,
                                                    ptreg_harris3d_volume **out, ptreg_error *err);
/* ptreg_harris3d of the handle's volume on the handle's device (opt's
 * device is not read); with_scores 0 leaves result->scores NULL, which on
 * a GPU spares the score volume's copy back. */
PTREG_API ptreg_status ptreg_harris3d_volume_run(ptreg_harris3d_volume *hv, const ptreg_harris3d_options *opt,
                                                 int with_scores, ptreg_harris3d_result *result, ptreg_error *err);
PTREG_API void ptreg_harris3d_volume_destroy(ptreg_harris3d_volume *hv);

#ifdef __cplusplus
}
#endif

#endif
