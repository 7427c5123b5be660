/* The pair engine's Gaussian sums on a GPU device (pair.cl): the columns
 * resident on the device, rows placed there by the caller's kernel or
 * uploaded, the sums left on the device as partials (what EM-ICP's moments
 * kernel reads) or brought back as ptreg_pair_gauss gives them (the parity
 * suite). Private to the library and its tests. */
#ifndef PTREG_PAIR_DEVICE_H
#define PTREG_PAIR_DEVICE_H

#include "device/backend.h"
#include "ptreg/pair.h"
#include "pair/pair_engine.h"

/* Rows per work-group, and columns per local-memory tile, in the pair
 * kernels (pair.cl, lddmm.cl), unless a configuration says otherwise. */
#define PTREG_PAIR_DEVICE_WG 128
#define PTREG_PAIR_DEVICE_GROUPS 8

/* The pair kernels' knobs on a device (ptreg_pair_gpu, with its defaults
 * filled in). */
typedef struct pair_device_config {
    unsigned wg;              /* a power of two, 32..256 */
    int native_exp;           /* -1: the environment's or the backend's choice */
    unsigned groups_per_unit; /* column splits aim for this many groups per compute unit */
    int wg_asked;             /* wg is the options' (else ptreg's default: smaller where a kernel's limit is) */
} pair_device_config;

/* The configuration of options (NULL: the defaults). */
void pair_device_config_of(const ptreg_pair_gpu *gpu, pair_device_config *cfg);

/* Whether `device` runs the pair kernels of configuration c (an engine's
 * question, device/engine.h): its work-group limit, and its double
 * precision where fp64_for says what needs it (NULL: nothing does). */
#define PAIR_FP64_NEED "fp64 pair sums need it (use fp32 or fp16)"
ptreg_status pair_device_supports(const pair_device_config *c, const char *fp64_for, const ptreg_device_info *device,
                                  ptreg_error *err);

typedef struct pair_device_state {
    dev_handle *dev;
    ptreg_precision precision;
    size_t m, rows_cap;
    size_t acc;        /* bytes of the device's sums (acc_t): 8, or 4 without fp64 */
    size_t pair_bytes; /* of a row coordinate: 8 (fp64) or 4 */
    double center[3];  /* the columns' centroid, which every point is taken relative to */
    unsigned wg, forced_splits;
    pair_device_config cfg;
    /* the launch of the last run */
    unsigned row_blocks, splits;
    dprogram *program; /* the caller's program, pair.cl among its files */
    dkernel *partial_kernel, *sums_kernel;
    dbuf *cols, *rows, *partial, *sums;
} pair_device_state;


/* Whether the kernels take the device's own exp (PTREG_PAIR_EXP=engine|
 * native in the environment; by default native on CUDA, the engine's
 * elsewhere: exp.cl). */
ptreg_status pair_device_exp(const dev_handle *dev, int *native, ptreg_error *err);

/* The column splits of a launch over rows x cols: as many as fill the
 * device (the configuration's groups per compute unit), at most one per local
 * tile of columns; forced (> 0) instead of that, still at most one per
 * tile. The same for every run of a device. */
unsigned pair_device_splits(const dev_handle *dev, const pair_device_config *cfg, size_t rows, size_t cols,
                            unsigned forced);
/* The padded rows (splits times padded row count) the partials of any
 * launch of at most rows_cap rows take. */
size_t pair_device_planes(const dev_handle *dev, const pair_device_config *cfg, size_t rows_cap, unsigned forced);

/* The -D options of a program holding pair.cl for this device and
 * precision: WG, PAIR_PREC and the exp. */
ptreg_status pair_device_defines(const dev_handle *dev, ptreg_precision precision, const pair_device_config *cfg,
                                 char *defines, size_t size, ptreg_error *err);

/* Columns uploaded (centred on their centroid, in the precision's storage)
 * for up to rows_cap rows per run; splits 0: as many column splits as fill
 * the device (the same for every run of a device). The program must have
 * been built with pair_device_defines'. */
ptreg_status pair_device_create(dev_handle *dev, const kernel_program *program, const float *cols, size_t m,
                                ptreg_precision precision, const pair_device_config *cfg, size_t rows_cap,
                                unsigned splits, pair_device_state **out, ptreg_error *err);
void pair_device_free(pair_device_state *pd);

/* The padded row count of the partials' planes. */
size_t pair_device_npad(const pair_device_state *pd, size_t n);

/* The partial sums of the n rows already in pd->rows (three planes of
 * rows_cap values, relative to pd->center), queued. */
ptreg_status pair_device_run(pair_device_state *pd, size_t n, double scale, ptreg_error *err);

/* ptreg_pair_gauss on the device: rows (n x 3 doubles) rounded as the CPU
 * engine stores them, uploaded, summed, and the sums brought back. */
ptreg_status pair_device_gauss(pair_device_state *pd, const double *rows, size_t n, double scale, double *sum_e,
                               double *sum_e2, double *sum_eb, ptreg_error *err);

#endif
