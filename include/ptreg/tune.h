/* ptreg's autotuner (the EM-ICP study's idea: the fastest variant of a
 * kernel depends on the machine, and a generated search over a constrained
 * space of variants beats hand tuning). A kernel declares its parameters
 * and constraints as data (a ptreg_tune_space); the space is enumerated as
 * a tree, each constraint tested at the first level where its parameters
 * are all bound, so a pruned subtree is never visited; candidates run on
 * the same inputs (warm-up, repetitions, median) and must pass the kernel's
 * check against its reference before they may win; small spaces are
 * searched exhaustively, large ones by successive halving on a random
 * sample. docs/ALGORITHMS.md, "Autotuner". */
#ifndef PTREG_TUNE_H
#define PTREG_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The options the apply and choice functions fill (pair.h, harris3d.h, features.h,
 * emicp.h, lddmm.h). */
struct ptreg_pair_options;
struct ptreg_pair_gpu;
struct ptreg_harris3d_options;
struct ptreg_feature_gpu;
struct ptreg_emicp_options;
struct ptreg_feature_options;
struct ptreg_lddmm_options;
struct ptreg_option_table; /* options.h */

#define PTREG_TUNE_MAX_PARAMS 8
#define PTREG_TUNE_MAX_VALUES 16
#define PTREG_TUNE_MAX_CONSTRAINTS 8

typedef enum ptreg_tune_kind {
    PTREG_TUNE_BINARY = 0, /* 0 or 1 */
    PTREG_TUNE_LIST,       /* the listed values (ordinal) */
    PTREG_TUNE_RANGE,      /* integers lo, lo + step, ..., hi */
    PTREG_TUNE_CONTINUOUS  /* [lo, hi], enumerated at `count` evenly spaced points */
} ptreg_tune_kind;

typedef struct ptreg_tune_param {
    const char *name;
    ptreg_tune_kind kind;
    int count;                            /* LIST: values; CONTINUOUS: grid points */
    double values[PTREG_TUNE_MAX_VALUES]; /* LIST */
    double lo, hi, step;                  /* RANGE, CONTINUOUS */
    double fallback;                      /* the built-in default */
} ptreg_tune_param;

/* What a constraint's limit is: a constant or a quantity of the machine. */
typedef enum ptreg_tune_limit {
    PTREG_TUNE_CONST = 0,
    PTREG_TUNE_L1_BYTES,
    PTREG_TUNE_L2_BYTES,
    PTREG_TUNE_CORES,
    PTREG_TUNE_WORK_GROUP, /* a device's largest work-group */
    PTREG_TUNE_LOCAL_BYTES /* a device's local memory per group */
} ptreg_tune_limit;

typedef enum ptreg_tune_op {
    PTREG_TUNE_LE = 0,  /* a * scale (* b when b >= 0) <= limit */
    PTREG_TUNE_MULTIPLE /* a is a multiple of b * scale (b >= 0), or of scale */
} ptreg_tune_op;

typedef struct ptreg_tune_constraint {
    const char *text; /* as a person writes it: "col_tile * 12 <= L1" */
    ptreg_tune_op op;
    int a, b;         /* parameter indices; b < 0: none */
    double scale;
    ptreg_tune_limit limit;
    double value;     /* PTREG_TUNE_CONST's */
} ptreg_tune_constraint;

typedef struct ptreg_tune_space {
    const char *kernel;
    int param_count;
    ptreg_tune_param params[PTREG_TUNE_MAX_PARAMS];
    int constraint_count;
    ptreg_tune_constraint constraints[PTREG_TUNE_MAX_CONSTRAINTS];
} ptreg_tune_space;

/* The machine the limits come from, and its name in the cache. */
typedef struct ptreg_tune_machine {
    char name[192]; /* "cpu: MODEL, N cores, ISA" or a device's name and driver */
    double l1_bytes, l2_bytes, cores, work_group, local_bytes;
} ptreg_tune_machine;

/* This CPU: its model, core count (ptreg's threads), ISA and data caches
 * (sysfs; 32 KiB and 1 MiB when it does not say). */
PTREG_API void ptreg_tune_machine_cpu(ptreg_tune_machine *m);

/* The values parameter p takes, in order, into out (PTREG_TUNE_MAX_VALUES
 * at most); returns how many. */
PTREG_API int ptreg_tune_param_values(const ptreg_tune_param *p, double *out);

typedef struct ptreg_tune_enum_stats {
    double full;    /* the product of the parameters' value counts */
    double valid;   /* points that satisfy every constraint */
    double visited; /* tree nodes visited (partial points included) */
} ptreg_tune_enum_stats;

/* The valid points in lexicographic order (the first parameter slowest):
 * up to cap points of param_count doubles each into points (may be NULL to
 * count); returns how many are valid. A constraint is tested as soon as its
 * parameters are bound. */
PTREG_API size_t ptreg_tune_enumerate(const ptreg_tune_space *space, const ptreg_tune_machine *m, double *points, size_t cap,
                            ptreg_tune_enum_stats *stats);
/* Whether a whole point satisfies every constraint (the plain filter the
 * enumeration is tested against). */
PTREG_API int ptreg_tune_valid(const ptreg_tune_space *space, const ptreg_tune_machine *m, const double *point);

/* Runs the candidate `point` reps times on the kernel's inputs: *seconds
 * the median, *error the output's distance from the reference (the
 * kernel's own measure), ctx the kernel's. */
typedef ptreg_status (*ptreg_tune_measure_fn)(void *ctx, const double *point, int reps, double *seconds,
                                              double *error, ptreg_error *err);

typedef enum ptreg_tune_method {
    PTREG_TUNE_AUTO = 0,   /* exhaustive up to 64 valid points, else coordinate descent */
    PTREG_TUNE_EXHAUSTIVE,
    PTREG_TUNE_HALVING,    /* successive halving on a random sample */
    PTREG_TUNE_COORDINATE  /* from the default, one parameter at a time: every value of it, the
                            * best kept, sweep after sweep, within sample_fraction of the space */
} ptreg_tune_method;

typedef struct ptreg_tune_options {
    ptreg_tune_method method;
    double sample_fraction; /* halving, coordinate: the share of the valid points measured (default 0.25) */
    int reps;               /* repetitions of an exhaustive measure, or halving's last round (default 5) */
    double budget_s;        /* stop measuring new candidates after this long (default 300 s); 0: no limit */
    double tolerance;       /* a candidate whose error exceeds it cannot win */
    int confirm;            /* rounds of the winner and the default measured in turn at the end (default 3;
                             * 0: none): on a shared machine one run's noise can crown a candidate */
    double min_gain;        /* the winner must then beat the default by this factor, else the default
                             * wins (default 1.02) */
    uint64_t seed;
    /* called after each measurement (NULL: none) */
    void (*progress)(void *ctx, size_t done, size_t planned, const double *point, double seconds);
    void *progress_ctx;
} ptreg_tune_options;

PTREG_API void ptreg_tune_options_default(ptreg_tune_options *o);
/* The table of its options (options.h): method (--search), sample_fraction
 * (--sample), reps, budget_s (--budget), confirm, min_gain. */
PTREG_API const struct ptreg_option_table *ptreg_tune_option_table(void);
/* "auto", "exhaustive", "halving", "coordinate"; parse: 0, or -1 for an
 * unknown name. */
PTREG_API const char *ptreg_tune_method_name(ptreg_tune_method m);
PTREG_API int ptreg_tune_method_parse(const char *name, ptreg_tune_method *m);

typedef struct ptreg_tune_candidate {
    double point[PTREG_TUNE_MAX_PARAMS];
    double seconds; /* the median of its last measurement */
    double error;
    int reps;       /* repetitions of that measurement */
    int rounds;     /* halving rounds it took part in */
    int passed;     /* error <= tolerance */
} ptreg_tune_candidate;

typedef struct ptreg_tune_result {
    ptreg_tune_candidate *candidates; /* every candidate measured, in the order measured first */
    size_t count;
    size_t best;     /* index of the winner among candidates; count when none passed */
    size_t fallback; /* index of the built-in default's candidate, count when not measured */
    ptreg_tune_enum_stats stats;
    ptreg_tune_method method; /* the one used */
    size_t measurements;      /* measure calls made */
    double elapsed_s;
    double gain;              /* the default's time over the winner's in the confirmation (1: none) */
    int default_kept;         /* the search's winner did not beat the default by min_gain */
} ptreg_tune_result;

PTREG_API ptreg_status ptreg_tune_search(const ptreg_tune_space *space, const ptreg_tune_machine *m,
                               ptreg_tune_measure_fn measure, void *ctx, const ptreg_tune_options *opt,
                               ptreg_tune_result *result, ptreg_error *err);
PTREG_API void ptreg_tune_result_free(ptreg_tune_result *result);

/* ---- the kernels' spaces ---- */

/* The pair engine (pair.h): threads, col_tile, row_block, row_vectors and
 * the loop order (0 tiles inside, 1 outside), on n x n Gaussian sums in
 * the given precision. */
PTREG_API void ptreg_tune_space_pair(ptreg_tune_space *space);
/* A point of that space as the engine's options and a thread count. */
PTREG_API void ptreg_tune_pair_apply(const double *point, struct ptreg_pair_options *opt, int *threads);

typedef struct ptreg_tune_pair_job ptreg_tune_pair_job;
/* Inputs for the pair engine's candidates: n random rows and columns
 * (fixed seed), the reference sums (the built-in defaults' options). */
PTREG_API ptreg_status ptreg_tune_pair_job_create(size_t n, int precision, ptreg_tune_pair_job **job, ptreg_error *err);
PTREG_API void ptreg_tune_pair_job_destroy(ptreg_tune_pair_job *job);
/* ptreg_tune_measure_fn for the pair engine (error: the sums' normalised
 * distance from the reference's). */
PTREG_API ptreg_status ptreg_tune_pair_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                     ptreg_error *err);

/* 3-D Harris's CPU fast path (harris3d.h): threads and rows per tile
 * (0: the built-in rule); the scores' bits never change. */
PTREG_API void ptreg_tune_space_harris(ptreg_tune_space *space);
PTREG_API void ptreg_tune_harris_apply(const double *point, struct ptreg_harris3d_options *opt, int *threads);
/* FPFH (features.h): threads (its work is per point, with no tile to
 * choose). */
PTREG_API void ptreg_tune_space_fpfh(ptreg_tune_space *space);
PTREG_API void ptreg_tune_fpfh_apply(const double *point, int *threads);

/* The pair engine on a GPU device (EM-ICP's E-steps there): work-group
 * size, the exp (0 the engine's polynomial, 1 the device's), the column
 * splits' groups per compute unit; wg within the device's work-group and
 * local memory. */
PTREG_API void ptreg_tune_space_pair_device(ptreg_tune_space *space);
PTREG_API void ptreg_tune_pair_device_apply(const double *point, struct ptreg_pair_gpu *gpu);
/* A device space's fallbacks as the device resolves them (the exp its
 * backend takes by default), so that the built-in default is a candidate. */
PTREG_API ptreg_status ptreg_tune_space_on_device(ptreg_tune_space *space, const ptreg_device *device, ptreg_error *err);
/* The device's limits and its name in the cache (its name and driver). */
PTREG_API ptreg_status ptreg_tune_machine_device(const ptreg_device *device, ptreg_tune_machine *m, ptreg_error *err);

typedef struct ptreg_tune_pair_device_job ptreg_tune_pair_device_job;
/* n random rows and columns; the reference: the CPU engine's sums in the
 * same precision. */
PTREG_API ptreg_status ptreg_tune_pair_device_job_create(const ptreg_device *device, size_t n, int precision,
                                               ptreg_tune_pair_device_job **job, ptreg_error *err);
PTREG_API void ptreg_tune_pair_device_job_destroy(ptreg_tune_pair_device_job *job);
PTREG_API ptreg_status ptreg_tune_pair_device_measure(void *job, const double *point, int reps, double *seconds,
                                            double *error, ptreg_error *err);

/* LDDMM's shooting and adjoint on a GPU device: the pair engine's device
 * space (ptreg_tune_pair_device_apply sets its points), wg within the
 * adjoint's local memory too; wg also orders LDDMM's reductions. Measured
 * on one objective and gradient evaluation of n landmarks over 10 steps. */
PTREG_API void ptreg_tune_space_lddmm_device(ptreg_tune_space *space);
typedef struct ptreg_tune_lddmm_device_job ptreg_tune_lddmm_device_job;
/* The reference: the CPU's gradient in the same precision (fp32 or fp64). */
PTREG_API ptreg_status ptreg_tune_lddmm_device_job_create(const ptreg_device *device, size_t n, int precision,
                                                ptreg_tune_lddmm_device_job **job, ptreg_error *err);
PTREG_API void ptreg_tune_lddmm_device_job_destroy(ptreg_tune_lddmm_device_job *job);
/* ptreg_tune_measure_fn (error: the gradient's normalised distance from
 * the reference). */
PTREG_API ptreg_status ptreg_tune_lddmm_device_measure(void *job, const double *point, int reps, double *seconds,
                                             double *error, ptreg_error *err);

typedef struct ptreg_tune_feature_job ptreg_tune_feature_job;
/* Harris (harris != 0): an n x n x n/2 uint8 volume of boxes, W = 5; FPFH:
 * a blob of n points with normals, radius 0.12 (about fifty neighbors);
 * the reference: the built-in defaults' output. */
PTREG_API ptreg_status ptreg_tune_feature_job_create(int harris, size_t n, ptreg_tune_feature_job **job, ptreg_error *err);
PTREG_API void ptreg_tune_feature_job_destroy(ptreg_tune_feature_job *job);
/* The candidates on a GPU from here on, the spaces of
 * ptreg_tune_space_harris_device and ptreg_tune_space_fpfh_device. Harris's
 * reference stays the CPU's scores (the device's are the same bits);
 * FPFH's becomes the device's default output (its knobs keep the bits). */
PTREG_API ptreg_status ptreg_tune_feature_job_on(ptreg_tune_feature_job *job, const ptreg_device *device, ptreg_error *err);
/* Harris on a GPU: its kernels, direct, tile, separable or zchunk (0..3). */
PTREG_API void ptreg_tune_space_harris_device(ptreg_tune_space *space);
/* FPFH on a GPU: threads per point's work-group (64, 128, 256) and per
 * neighbor-search group (32..256), within the device's work-group. */
PTREG_API void ptreg_tune_space_fpfh_device(ptreg_tune_space *space);
PTREG_API void ptreg_tune_fpfh_device_apply(const double *point, struct ptreg_feature_gpu *gpu);
/* ptreg_tune_measure_fn (error: the largest difference relative to the
 * reference's largest value). */
PTREG_API ptreg_status ptreg_tune_feature_measure(void *job, const double *point, int reps, double *seconds, double *error,
                                        ptreg_error *err);

/* ---- the cache of winners, and choosing a kernel's variant ---- */

/* `ptreg tune` keeps each machine's winner per kernel and problem size
 * class in one JSON file: $PTREG_TUNE_CACHE, else
 * $XDG_CACHE_HOME/ptreg/tune.json, else ~/.cache/ptreg/tune.json ("off":
 * none). A missing cache means the built-in defaults; an unreadable,
 * corrupted or stale one (another format, or another ptreg version) is
 * ignored with one warning on stderr per process, never an error. */

/* The cache's path into buf; 0 when the cache is off or no home is known. */
PTREG_API int ptreg_tune_cache_path(char *buf, size_t size);
/* The size class of a problem of `work` units (n * m pairs ...): "1e8". */
PTREG_API void ptreg_tune_size_class(double work, char *buf, size_t size);
/* The winner for (machine, the space's kernel, size class), or for the
 * nearest size class stored, into point (a parameter missing from the
 * entry keeps its fallback); its class into found_class. 1 when found, 0
 * when not (each value must be one its parameter takes and the point
 * within the constraints on m, else the entry is ignored), -1 when the
 * cache could not be read for want of memory. */
PTREG_API int ptreg_tune_cache_lookup(const ptreg_tune_space *space, const ptreg_tune_machine *m,
                                      const char *size_class, double *point, char *found_class, size_t class_size);
/* The same on the cache's text (path names it in the warning). */
PTREG_API int ptreg_tune_cache_lookup_text(const char *text, const char *path, const ptreg_tune_space *space,
                                           const ptreg_tune_machine *m, const char *size_class, double *point,
                                           char *found_class, size_t class_size);
/* Stores a winner atomically, keeping the other entries (a cache that
 * cannot be parsed is replaced). PTREG_ERR_ARG when the cache is off. */
PTREG_API ptreg_status ptreg_tune_cache_store(const ptreg_tune_space *space, const char *machine,
                                              const char *size_class, const double *point, double seconds,
                                              double default_seconds, ptreg_error *err);

/* A kernel's variant for one run, and where it came from. */
typedef struct ptreg_tune_choice {
    const char *source;     /* "tuned" (the cache's winner) or "default" (the space's fallbacks) */
    char size_class[16];    /* with "tuned": the cache's class used */
    ptreg_tune_space space; /* names the point's parameters */
    double point[PTREG_TUNE_MAX_PARAMS];
    int threads;            /* a CPU winner's thread count; 0: none (the caller's count stands) */
} ptreg_tune_choice;

/* The variant of space's kernel for a problem of `work` units on `on` (the
 * CPU or a resolved device): the machine's winner from the cache, else the
 * fallbacks. PTREG_ERR_NOMEM leaves the fallbacks; a device that cannot be
 * queried is left to the algorithm to report (the fallbacks, PTREG_OK). */
PTREG_API ptreg_status ptreg_tune_choose(const ptreg_tune_space *space, const ptreg_device *on, double work,
                                         ptreg_tune_choice *choice, ptreg_error *err);
/* EM-ICP's engine knobs for clouds of n and m points on the device its
 * options resolve to: with use_cache, the pair engine's winner (fp32 or
 * fp16; fp64 runs the reference and has none) written into opt->pair, or
 * the device kernels' into opt->pair.gpu; without, nothing is changed and
 * the choice names the defaults. The thread count is the caller's to apply
 * (choice->threads): the CLI takes it unless --threads is given. The front
 * ends use the cache unless told not to (--no-tune, tune=False) or given
 * the knobs themselves. */
PTREG_API ptreg_status ptreg_tune_emicp(struct ptreg_emicp_options *opt, size_t n, size_t m, int use_cache,
                                        ptreg_tune_choice *choice, ptreg_error *err);
/* The same for 3-D Harris on a volume of `voxels` (the CPU's tiling and
 * threads, or a device's method), FPFH on n points (the CPU's threads, or
 * a device's work-groups) and LDDMM on n landmarks (a device's pair
 * kernels; the CPU's LDDMM has no knobs). The reference paths (opt->reference)
 * have none either: their choice is the defaults. */
PTREG_API ptreg_status ptreg_tune_harris3d(struct ptreg_harris3d_options *opt, size_t voxels, int use_cache,
                                           ptreg_tune_choice *choice, ptreg_error *err);
PTREG_API ptreg_status ptreg_tune_fpfh(struct ptreg_feature_options *opt, size_t n, int use_cache,
                                       ptreg_tune_choice *choice, ptreg_error *err);
PTREG_API ptreg_status ptreg_tune_lddmm(struct ptreg_lddmm_options *opt, size_t n, int use_cache,
                                        ptreg_tune_choice *choice, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
