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
    PTREG_STOP_CONVERGED = 0,   /* the drop in MSE fell below tol */
    PTREG_STOP_MAX_ITERATIONS,  /* ran max_iter updates */
    PTREG_STOP_TOO_FEW_PAIRS,   /* fewer than 3 correspondences survived the filters */
    PTREG_STOP_DEGENERATE,      /* the pairs do not fix a unique rotation (or, by Gauss-Newton, motion) */
    PTREG_STOP_SIGMA_FINAL,     /* EM-ICP: the annealed sigma^2 reached its final value */
    PTREG_STOP_RELATIVE_CHANGE, /* Open3D's test: fitness and RMSE both changed by less than asked */
    PTREG_STOP_SMALL_STEP,      /* PCL's transformation epsilon: the last step was that small */
    PTREG_STOP_GRADIENT,        /* L-BFGS: the gradient fell below gtol (relative) */
    PTREG_STOP_OBJECTIVE_CHANGE, /* L-BFGS: the objective fell by less than ftol (relative) over 10 steps */
    PTREG_STOP_NO_PROGRESS      /* L-BFGS: already at a minimum, or the line search found no lower
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
PTREG_API void ptreg_error_clear(ptreg_error *err);
/* Sets err (which may be NULL) and returns status, so callers can write
 * `return ptreg_error_set(err, PTREG_ERR_FORMAT, "%s: line %zu: ...", ...)`. */
PTREG_API ptreg_status ptreg_error_set(ptreg_error *err, ptreg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A point cloud: interleaved float xyz (NumPy's N x 3 layout), optional
 * normals in the same layout. Point i sits at origin + xyz[3i..3i+2] in
 * the world: float32 keeps about 7 digits, so georeferenced data (UTM
 * northings in the millions of metres) is stored relative to a float64
 * origin that the readers choose and the writers add back
 * (docs/FORMATS.md, "Coordinates far from zero"). The caller owns it; free
 * with ptreg_cloud_free. */
typedef struct ptreg_cloud {
    size_t n;
    float *xyz;
    float *normals;           /* NULL when the cloud has none */
    float *curvature;         /* NULL when none: set by the caller (ptreg normals), written by the
                               * PLY and PCD writers next to the normals; readers skip it */
    size_t dropped_nonfinite; /* points dropped on load (NaN/inf coordinates) */
    double origin[3];         /* world position of xyz's zero (default 0, 0, 0) */
    uint16_t *intensity;      /* NULL when none: LAS intensity, kept when a reader is asked to */
    uint8_t *classification;  /* NULL when none: LAS classification, likewise */
    uint8_t *rgb;             /* NULL when none: 3 per point (red, green, blue, 0-255), from PLY, PCD, LAS,
                               * text or OBJ/OFF colours; kept by the readers unless asked not to and
                               * written where the format has a place for it (docs/FORMATS.md) */
} ptreg_cloud;

/* A coordinate at least this large (in magnitude) loses more than 1 mm
 * (half a float32 step) when stored as float32: the readers give a cloud
 * whose first point has one an origin (docs/FORMATS.md). */
#define PTREG_ORIGIN_THRESHOLD 16384.0

PTREG_API void ptreg_cloud_init(ptreg_cloud *cloud);
PTREG_API ptreg_status ptreg_cloud_alloc(ptreg_cloud *cloud, size_t n, int with_normals, ptreg_error *err);
PTREG_API void ptreg_cloud_free(ptreg_cloud *cloud);
/* Expresses the points relative to a new origin: each coordinate becomes
 * (old origin - new origin) + xyz in double, rounded once to float. A
 * point that lands beyond float range is PTREG_ERR_ARG (nothing changed). */
PTREG_API ptreg_status ptreg_cloud_set_origin(ptreg_cloud *cloud, const double origin[3], ptreg_error *err);
/* Removes points with a non-finite coordinate (normals do not decide: a NaN
 * normal is a valid "unknown") and adds the count to dropped_nonfinite. */
PTREG_API void ptreg_cloud_drop_nonfinite(ptreg_cloud *cloud);
/* Whether n points can carry a shape: a pose, a normal or a descriptor needs
 * at least 3 points, not all one point (compared by value: -0 is 0).
 * Otherwise PTREG_ERR_ARG, "WHAT: 1 point: at least 3 are needed" or "WHAT:
 * all 64 points are the same point". The registrations and the feature
 * estimators check their clouds with it; without it such a cloud gave an
 * arbitrary pose or normals with a success status. */
PTREG_API ptreg_status ptreg_check_shape(const char *what, const float *xyz, size_t n, ptreg_error *err);

/* Voxel-grid downsampling as Open3D's VoxelDownSample: cubes of side voxel
 * (> 0) from half a voxel below the cloud's minimum; each occupied cube's
 * points become their centroid (in double, in point order) and, when the
 * cloud has normals, their mean normal made unit (NaN where they cancel;
 * Open3D leaves the mean unnormalised) and, when it has colours, their mean
 * colour rounded (intensity and classification are not kept). The same output for every run: in
 * the order of each cube's first point (Open3D's is a hash map's). A voxel
 * so small that an axis holds 2^21 cubes, or a non-finite point, is
 * PTREG_ERR_ARG. out is allocated (ptreg_cloud_free). */
PTREG_API ptreg_status ptreg_voxel_downsample(const ptreg_cloud *in, double voxel, ptreg_cloud *out, ptreg_error *err);

struct ptreg_device; /* device.h */
/* ptreg_voxel_downsample on a device: the CPU (cpu; auto takes a GPU where
 * one is found, as ptreg_device_resolve does), or a GPU named (cuda:N,
 * opencl:N) with double precision, which gives the same output bit for bit
 * (the same count, order, centroids, normals and colours); a GPU without
 * double precision is PTREG_ERR_UNSUPPORTED. *on (may be NULL) receives
 * where it ran; ptreg_voxel_resolve_device says where beforehand (or why
 * not). */
PTREG_API ptreg_status ptreg_voxel_resolve_device(const struct ptreg_device *request, struct ptreg_device *on,
                                                  ptreg_error *err);
PTREG_API ptreg_status ptreg_voxel_downsample_on(const ptreg_cloud *in, double voxel, const struct ptreg_device *device,
                                                 struct ptreg_device *on, ptreg_cloud *out, ptreg_error *err);

/* ---- selecting points: downsampling and filters (nn.h has the outlier
 * filters, whose masks this applies) ---- */

/* out holds the points of in whose keep[i] is nonzero, in their order, with
 * every attribute in carries (normals, curvature, intensity, classification)
 * and its origin. out is allocated (ptreg_cloud_free); in and out must differ. */
PTREG_API ptreg_status ptreg_cloud_select(const ptreg_cloud *in, const unsigned char *keep, ptreg_cloud *out,
                                          ptreg_error *err);
/* Random downsampling: keep[i] set for exactly count of the n points
 * (count <= n), drawn without replacement by a Fisher-Yates shuffle seeded
 * with seed (ptreg_rng), the same points for every run and thread count;
 * selecting by the mask keeps the cloud's order (Open3D's
 * RandomDownSample keeps floor(ratio * n) points from an unseeded shuffle,
 * in shuffled order). count > n is PTREG_ERR_ARG. */
PTREG_API ptreg_status ptreg_random_downsample(size_t n, size_t count, uint64_t seed, unsigned char *keep,
                                               ptreg_error *err);
/* The count a fraction in [0, 1] of n points keeps, as Open3D's
 * RandomDownSample: floor(fraction * n). */
PTREG_API size_t ptreg_random_downsample_count(size_t n, double fraction);
/* Uniform downsampling as Open3D's UniformDownSample: points 0, every,
 * 2 every, ... (every >= 1, else PTREG_ERR_ARG). */
PTREG_API ptreg_status ptreg_uniform_downsample(size_t n, size_t every, unsigned char *keep, ptreg_error *err);

/* The mean of n > 0 points (interleaved xyz), summed in double in order,
 * and their RMS distance from c. */
PTREG_API void ptreg_points_centroid(const float *xyz, size_t n, double c[3]);
PTREG_API double ptreg_points_rms_radius(const float *xyz, size_t n, const double c[3]);

/* Voxel types of volumes. Computation converts voxels to float32, which is
 * exact for the 8- and 16-bit types. */
typedef enum ptreg_voxel_type {
    PTREG_VOXEL_U8 = 0,
    PTREG_VOXEL_I8,
    PTREG_VOXEL_U16,
    PTREG_VOXEL_I16,
    PTREG_VOXEL_U32,
    PTREG_VOXEL_I32,
    PTREG_VOXEL_F32,
    PTREG_VOXEL_F64
} ptreg_voxel_type;

/* Bytes per voxel (0 for an unknown type). */
PTREG_API size_t ptreg_voxel_size(ptreg_voxel_type type);
/* "u8", "i8", "u16", "i16", "u32", "i32", "f32", "f64". */
PTREG_API const char *ptreg_voxel_type_name(ptreg_voxel_type type);
/* Parses those names and the C/NRRD spellings (uint8, uchar, unsigned char,
 * int16, short, float, double ...). Returns -1 when the name is unknown. */
PTREG_API int ptreg_voxel_type_parse(const char *name, ptreg_voxel_type *type);

/* A volume: voxel (x, y, z) is element x + nx * (y + ny * z) of data (x
 * varies fastest), in the host's byte order. Physical position of a voxel:
 * origin + (x, y, z) * spacing, per axis. The caller owns it; free with
 * ptreg_volume_free. */
typedef struct ptreg_volume {
    size_t nx, ny, nz;
    ptreg_voxel_type type;
    void *data;
    double spacing[3]; /* default 1, 1, 1 */
    double origin[3];  /* default 0, 0, 0 */
} ptreg_volume;

PTREG_API void ptreg_volume_init(ptreg_volume *vol);
/* Allocates nx*ny*nz voxels (uninitialised), spacing 1 and origin 0.
 * Every size must be at least 1. */
PTREG_API ptreg_status ptreg_volume_alloc(ptreg_volume *vol, size_t nx, size_t ny, size_t nz,
                                ptreg_voxel_type type, ptreg_error *err);
PTREG_API void ptreg_volume_free(ptreg_volume *vol);
PTREG_API size_t ptreg_volume_count(const ptreg_volume *vol);
/* double -> float, infinity beyond FLT_MAX (C leaves that undefined). */
PTREG_API float ptreg_double_to_float(double v);
/* Voxel i (linear index) as float32, as the algorithms see it. */
PTREG_API float ptreg_volume_voxel(const ptreg_volume *vol, size_t i);

/* A detected point of a volume: its voxel and its score. */
typedef struct ptreg_keypoint {
    uint32_t x, y, z;
    float score;
} ptreg_keypoint;

/* Rigid transforms are 4x4 row-major double matrices, T[4*r + c]. A point p
 * maps to R p + t with R = T[0..2][0..2], t = T[0..2][3]. */
PTREG_API void ptreg_transform_identity(double T[16]);
/* out = A * B (apply B first). out may alias A or B. */
PTREG_API void ptreg_transform_mul(const double A[16], const double B[16], double out[16]);
/* Inverse of a rigid transform (R^T, -R^T t). */
PTREG_API void ptreg_transform_invert_rigid(const double T[16], double out[16]);
/* out[i] = T * in[i] for n points; in and out may be the same array. */
PTREG_API void ptreg_transform_points(const double T[16], const float *in, float *out, size_t n);
/* A world transform T as it acts on coordinates relative to origin o:
 * Tr(-o) T Tr(o), the rotation unchanged and t' = R o + t - o. With o = 0
 * it is T, bit for bit. ptreg_transform_to_world is the inverse map,
 * Tr(o) T Tr(-o). out may alias T. */
PTREG_API void ptreg_transform_to_local(const double T[16], const double origin[3], double out[16]);
PTREG_API void ptreg_transform_to_world(const double T[16], const double origin[3], double out[16]);
/* Rotates n vectors (normals) by T's rotation. */
PTREG_API void ptreg_transform_vectors(const double T[16], const float *in, float *out, size_t n);
/* The rotation angle of R(T) in degrees and |t| of A^-1 B: the pose error. */
PTREG_API void ptreg_transform_difference(const double A[16], const double B[16], double *angle_deg,
                                double *translation);
/* R, the rotation part of T (row-major 3x3). */
PTREG_API void ptreg_transform_rotation(const double T[16], double R[9]);
/* R from a unit quaternion (w, x, y, z); normalises q first. */
PTREG_API void ptreg_quaternion_to_matrix(const double q[4], double R[9]);
/* The unit quaternion (w, x, y, z) of a rotation matrix, with w >= 0. */
PTREG_API void ptreg_matrix_to_quaternion(const double R[9], double q[4]);
/* T from an axis (any length > 0), an angle in degrees and a translation. */
PTREG_API void ptreg_transform_from_axis_angle(const double axis[3], double angle_deg, const double t[3],
                                     double T[16]);
/* What the library takes as rigid (ptreg_transform_is_rigid's tol for
 * every initial transform), and how far from it ptreg_transform_make_rigid
 * repairs (Open3D's tutorials ship matrices 7.5e-4 off). */
#define PTREG_RIGID_TOL 1e-6
#define PTREG_NEARLY_RIGID_TOL 1e-2
/* How far T is from a rigid motion: the largest of |R^T R - I| (entries)
 * and |det R - 1|; INFINITY when T is not finite or its last row is not
 * 0 0 0 1. */
PTREG_API double ptreg_transform_rigidity_error(const double T[16]);
/* Checks that T is finite, its last row is 0 0 0 1 and R is a rotation to
 * within tol (R^T R = I, det = +1). */
PTREG_API int ptreg_transform_is_rigid(const double T[16], double tol);
/* Replaces T's R by the nearest rotation (its polar factor), keeping t,
 * when T is within PTREG_NEARLY_RIGID_TOL of rigid; returns its rigidity
 * error before (T unchanged, and the error returned, when it is further). */
PTREG_API double ptreg_transform_make_rigid(double T[16]);

/* Weighted first and second moments of paired points p_i -> q_i, taken
 * relative to reference points so the cross-covariance keeps its digits
 * when the clouds sit far from the origin. */
typedef struct ptreg_moments {
    double ref_p[3], ref_q[3];
    double w;       /* sum of weights */
    double sp[3];   /* sum w (p - ref_p) */
    double sq[3];   /* sum w (q - ref_q) */
    double spq[9];  /* sum w (p - ref_p)(q - ref_q)^T, row-major */
} ptreg_moments;

PTREG_API void ptreg_moments_init(ptreg_moments *m, const double ref_p[3], const double ref_q[3]);
PTREG_API void ptreg_moments_add(ptreg_moments *m, const double p[3], const double q[3], double w);
/* a += b; both must share reference points. */
PTREG_API void ptreg_moments_merge(ptreg_moments *a, const ptreg_moments *b);

/* Horn's closed-form absolute orientation (unit quaternion, the largest
 * eigenvector of the 4x4 symmetric matrix, solved by Jacobi in double):
 * T minimises sum w |R p + t - q|^2, a proper rotation (det = +1).
 * Returns PTREG_ERR_RUNTIME when the total weight is not positive; sets
 * *degenerate (may be NULL) when the rotation is not unique (collinear or
 * single points). */
PTREG_API ptreg_status ptreg_horn_solve(const ptreg_moments *m, double T[16], int *degenerate,
                              ptreg_error *err);
/* Convenience: Horn on n float point pairs, weights may be NULL (all 1). */
PTREG_API ptreg_status ptreg_horn(const float *p, const float *q, const float *weights, size_t n,
                        double T[16], ptreg_error *err);

/* Symmetric eigenproblem of small matrices by cyclic Jacobi, in double.
 * A is n x n row-major (n <= 8) and is not modified; eigenvalues come out
 * ascending with eigenvectors as the columns of V (row-major n x n). */
PTREG_API void ptreg_eigen_symmetric(const double *A, int n, double *eigenvalues, double *V);

/* Threads: default all cores, or env PTREG_NUM_THREADS; n <= 0 resets to the
 * default. Results never depend on the number. */
PTREG_API void ptreg_set_num_threads(int n);
PTREG_API int ptreg_get_num_threads(void);

/* Deterministic random numbers (xoshiro256**), seeded by splitmix64. */
typedef struct ptreg_rng {
    uint64_t s[4];
} ptreg_rng;

PTREG_API void ptreg_rng_seed(ptreg_rng *rng, uint64_t seed);
PTREG_API uint64_t ptreg_rng_next(ptreg_rng *rng);
PTREG_API double ptreg_rng_uniform(ptreg_rng *rng); /* [0, 1) */
PTREG_API double ptreg_rng_normal(ptreg_rng *rng);  /* standard normal */

/* Monotonic wall clock in milliseconds. */
PTREG_API double ptreg_time_ms(void);

#ifdef __cplusplus
}
#endif

#endif
