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
struct ptreg_features_gpu;
struct ptreg_emicp_options;
struct ptreg_features_options;
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
    int a, b; /* parameter indices; b < 0: none */
    double scale;
    ptreg_tune_limit limit;
    double value; /* PTREG_TUNE_CONST's */
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

typedef struct ptreg_tune_enum_stats {
    double full;    /* the product of the parameters' value counts */
    double valid;   /* points that satisfy every constraint */
    double visited; /* tree nodes visited (partial points included) */
} ptreg_tune_enum_stats;

/* Runs the candidate `point` reps times on the kernel's inputs: *seconds
 * the median, *error the output's distance from the reference (the
 * kernel's own measure), ctx the kernel's. */
typedef ptreg_status (*ptreg_tune_measure_fn)(void *ctx, const double *point, int reps, double *seconds, double *error,
                                              ptreg_error *err);

typedef enum ptreg_tune_method {
    PTREG_TUNE_AUTO = 0, /* exhaustive up to 64 valid points, else coordinate descent */
    PTREG_TUNE_EXHAUSTIVE,
    PTREG_TUNE_HALVING,   /* successive halving on a random sample */
    PTREG_TUNE_COORDINATE /* from the default, one parameter at a time: every value of it, the
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
/* The table of its options, ptreg_option_table_find("tune") (options.h): method (--search), sample_fraction
 * (--sample), reps, budget_s (--budget), confirm, min_gain. */
/* "auto", "exhaustive", "halving", "coordinate". */
PTREG_API const char *ptreg_tune_method_name(ptreg_tune_method m);

typedef struct ptreg_tune_candidate {
    double point[PTREG_TUNE_MAX_PARAMS];
    double seconds; /* the median of its last measurement */
    double error;
    int reps;   /* repetitions of that measurement */
    int rounds; /* halving rounds it took part in */
    int passed; /* error <= tolerance */
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
    double gain;      /* the default's time over the winner's in the confirmation (1: none) */
    int default_kept; /* the search's winner did not beat the default by min_gain */
} ptreg_tune_result;

PTREG_API ptreg_status ptreg_tune_search(const ptreg_tune_space *space, const ptreg_tune_machine *m,
                                         ptreg_tune_measure_fn measure, void *ctx, const ptreg_tune_options *opt,
                                         ptreg_tune_result *result, ptreg_error *err);
PTREG_API void ptreg_tune_result_free(ptreg_tune_result *result);

/* ---- the kernels: one registry for every front end ---- */

/* A tunable kernel: its spaces, its problem and the inputs its candidates
 * run on. The front ends (`ptreg tune`, Python's tune) take them from
 * ptreg_tune_kernels and call through the pointers; the spaces' and jobs'
 * own functions are not exported. */
typedef struct ptreg_tune_kernel {
    const char *name;                              /* "pair", "harris", "fpfh", "lddmm" */
    void (*space)(ptreg_tune_space *space);        /* its CPU space; NULL: none (lddmm) */
    void (*device_space)(ptreg_tune_space *space); /* its space on a GPU */
    size_t default_size, max_size;                 /* the problem's size: `ptreg tune --size` */
    const char *unit;                              /* of the rate */
    double scale;                                  /* rate = work * terms / seconds / scale */
    double terms;                                  /* the rate's units per unit of work */
    /* The problem's work for size n (what its size class counts): pairs,
     * voxels or points. */
    double (*work)(size_t n);
    /* The candidates' inputs and reference for a problem of size n in the
     * given precision (ptreg_precision), on `on` (a resolved GPU device,
     * device_space's candidates) or on the CPU (NULL: space's). */
    ptreg_status (*job_create)(const ptreg_device *on, size_t n, int precision, void **job, ptreg_error *err);
    ptreg_tune_measure_fn measure;  /* on a job_create's job */
    void (*job_destroy)(void *job); /* NULL is let be */
} ptreg_tune_kernel;

/* The kernels, in a fixed order ("pair" first: the default); *count of them. */
PTREG_API const ptreg_tune_kernel *ptreg_tune_kernels(size_t *count);
/* The kernel of that name, or NULL. */
PTREG_API const ptreg_tune_kernel *ptreg_tune_kernel_find(const char *name);

/* A device space's fallbacks as the device resolves them (the exp its
 * backend takes by default), so that the built-in default is a candidate. */
PTREG_API ptreg_status ptreg_tune_space_on_device(ptreg_tune_space *space, const ptreg_device *device,
                                                  ptreg_error *err);
/* The device's limits and its name in the cache (its name and driver). */
PTREG_API ptreg_status ptreg_tune_machine_device(const ptreg_device *device, ptreg_tune_machine *m, ptreg_error *err);

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
    int threads; /* a CPU winner's thread count; 0: none (the caller's count stands) */
} ptreg_tune_choice;

/* A tuned kernel's variant for one run of `algorithm`, named as its
 * options table (ptreg_option_table_find), with *options that table's
 * struct, on the device the options resolve to:
 *   "emicp"    (ptreg_emicp_options) clouds of n and m points: the pair
 *              engine's winner (fp32 or fp16; fp64 runs the reference and
 *              has none) written into options->pair, or the device
 *              kernels' into options->pair.gpu;
 *   "harris3d" (ptreg_harris3d_options) a volume of n voxels: the CPU's
 *              tiling and threads, or a device's method;
 *   "features" (ptreg_features_options) FPFH on n points: the CPU's
 *              threads, or a device's work-groups;
 *   "lddmm"    (ptreg_lddmm_options) n landmarks: a device's pair kernels
 *              (the CPU's LDDMM has no knobs).
 * m is EM-ICP's alone (0 for the others). With use_cache, the tuner's cache's
 * winner for this machine and the problem's size class is applied; without
 * (and on the reference paths, opt->reference, which have no knobs),
 * nothing is changed and the choice names the defaults. The thread count is
 * the caller's to apply (choice->threads): the CLI takes it unless --threads
 * is given. The front ends use the cache unless told not to (--no-tune,
 * tune=False) or given the knobs themselves. Another name (or no options)
 * is PTREG_ERR_ARG, the choice the empty default. */
PTREG_API ptreg_status ptreg_tune_variant(const char *algorithm, void *options, size_t n, size_t m, int use_cache,
                                          ptreg_tune_choice *choice, ptreg_error *err);

#ifdef __cplusplus
}
#endif

#endif
