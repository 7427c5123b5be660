/* ptreg core: status codes, errors, point clouds, rigid transforms, the Horn
 * solver, threads and deterministic reductions. */
#ifndef PTREG_CORE_H
#define PTREG_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTREG_VERSION_MAJOR 0
#define PTREG_VERSION_MINOR 1
#define PTREG_VERSION_PATCH 0
#define PTREG_VERSION_STRING "0.1.0"

/* What the shared library exports: the declarations marked PTREG_API, and
 * nothing else (the library is built with hidden visibility). */
#if defined(_WIN32)
#define PTREG_API
#elif defined(__GNUC__)
#define PTREG_API __attribute__((visibility("default")))
#else
#define PTREG_API
#endif

/* Library-side status. The CLI maps FORMAT and IO-on-read to exit code 3,
 * ARG to 2 and the rest to 4. */
typedef enum ptreg_status {
    PTREG_OK = 0,
    PTREG_ERR_ARG = 1,         /* invalid argument from the caller */
    PTREG_ERR_IO = 2,          /* a file could not be opened, read or written */
    PTREG_ERR_FORMAT = 3,      /* malformed or unusable input data */
    PTREG_ERR_NOMEM = 4,       /* allocation failed */
    PTREG_ERR_UNSUPPORTED = 5, /* valid input that ptreg cannot handle */
    PTREG_ERR_RUNTIME = 6      /* an algorithm could not produce a result */
} ptreg_status;

#define PTREG_ERROR_MESSAGE_MAX 512

/* Filled by functions that fail. The message names the input and the place
 * (file, line or byte offset) when there is one. */
typedef struct ptreg_error {
    ptreg_status status;
    char message[PTREG_ERROR_MESSAGE_MAX];
} ptreg_error;

/* Why an iterative method stopped: one list for every method (ICP, EM-ICP,
 * LDDMM's L-BFGS, batch). */
typedef enum ptreg_stop_reason {
    PTREG_STOP_CONVERGED = 0,    /* the drop in MSE fell below tol */
    PTREG_STOP_MAX_ITERATIONS,   /* ran max_iter updates */
    PTREG_STOP_TOO_FEW_PAIRS,    /* fewer than 3 correspondences survived the filters */
    PTREG_STOP_DEGENERATE,       /* the pairs do not fix a unique rotation (or, by Gauss-Newton, motion) */
    PTREG_STOP_SIGMA_FINAL,      /* EM-ICP: the annealed sigma^2 reached its final value */
    PTREG_STOP_RELATIVE_CHANGE,  /* Open3D's test: fitness and RMSE both changed by less than asked */
    PTREG_STOP_SMALL_STEP,       /* PCL's transformation epsilon: the last step was that small */
    PTREG_STOP_GRADIENT,         /* L-BFGS: the gradient fell below gtol (relative) */
    PTREG_STOP_OBJECTIVE_CHANGE, /* L-BFGS: the objective fell by less than ftol (relative) over 10 steps */
    PTREG_STOP_NO_PROGRESS       /* L-BFGS: already at a minimum, or the line search found no lower
                                 * point (rounding; the result's stop_detail says which) */
} ptreg_stop_reason;

/* "converged", "max_iterations", ..., "no_progress"; "unknown" for another value. */
PTREG_API const char *ptreg_stop_reason_name(ptreg_stop_reason reason);

/* A caller's view of an iterative method as it runs (a progress display, a
 * convergence plot): called on the calling thread after each step with the
 * steps done, the most there can be, and the step's measure (ICP: the MSE
 * before the step; EM-ICP: the pose change, radians + translation / r;
 * LDDMM: the objective). fn NULL (the default): not called. */
typedef struct ptreg_progress {
    void (*fn)(void *ctx, int step, int most, double value);
    void *ctx;
} ptreg_progress;

/* The caller's processes: this one's rank among size, and collectives over
 * all of them (with MPI: MPI_Allreduce, MPI_MAX on an int and MPI_SUM in
 * place on the arrays), so that the library needs no MPI of its own. A
 * collective a call does not use may be NULL. */
typedef struct ptreg_ranks {
    int rank, size;
    /* The largest of every rank's value, returned on every rank. */
    int (*max_of_all)(int value, void *ctx);
    /* Every rank's motif sums added up in place (orientation.h's combine_motif_sums). */
    ptreg_status (*sum_motif)(int64_t *sum, uint64_t *count, size_t points, void *ctx, ptreg_error *err);
    void *ctx;
    /* Every rank's values added up in place, in rank order (multiway's pairs: each rank fills
     * its own and leaves the others 0, so the sum is every rank's values exactly). */
    ptreg_status (*sum_doubles)(double *values, size_t count, void *ctx, ptreg_error *err);
} ptreg_ranks;

PTREG_API const char *ptreg_version(void);
PTREG_API const char *ptreg_status_string(ptreg_status status);
/* Sets err (which may be NULL) and returns status, so callers can write
 * `return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: line %zu: ...", ...)`. */
PTREG_API ptreg_status ptreg_error_set(ptreg_error *err, ptreg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Threads: default all cores, or env PTREG_NUM_THREADS; n <= 0 resets to the
 * default. Results never depend on the number. */
PTREG_API void ptreg_set_num_threads(int n);
PTREG_API int ptreg_get_num_threads(void);

/* Monotonic wall clock in milliseconds. */
PTREG_API double ptreg_time_ms(void);
/* The median of n > 0 values, the mean of the middle two for an even n;
 * v is sorted in place. */
PTREG_API double ptreg_median(double *v, size_t n);

#ifdef __cplusplus
}
#endif

/* What <ptreg/core.h> held before 1.x split it: clouds, volumes and
 * transforms have their own headers now, and core.h still brings them. */
#include "cloud.h"
#include "transform.h"
#include "volume.h"

#endif
