/* The library's numeric helpers, shared by its modules and not part of
 * the public API (docs/API.md, "Tiers"): paired-point moments and Horn's
 * method, small symmetric eigenproblems, the random numbers, centroids,
 * rigidity checks. Not installed; hidden in libptreg.so. */
#ifndef PTREG_CORE_NUMERIC_H
#define PTREG_CORE_NUMERIC_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/core.h"

/* Weighted first and second moments of paired points p_i -> q_i, taken
 * relative to reference points so the cross-covariance keeps its digits
 * when the clouds sit far from the origin. */
typedef struct ptreg_moments {
    double ref_p[3], ref_q[3];
    double w;      /* sum of weights */
    double sp[3];  /* sum w (p - ref_p) */
    double sq[3];  /* sum w (q - ref_q) */
    double spq[9]; /* sum w (p - ref_p)(q - ref_q)^T, row-major */
    double spp;    /* sum w |p - ref_p|^2: a similarity's scale (ptreg_horn_solve_scaled) */
} ptreg_moments;

void ptreg_moments_init(ptreg_moments *m, const double ref_p[3], const double ref_q[3]);
void ptreg_moments_add(ptreg_moments *m, const double p[3], const double q[3], double w);
/* a += b; both must share reference points. */
void ptreg_moments_merge(ptreg_moments *a, const ptreg_moments *b);

/* Horn's closed-form absolute orientation (unit quaternion, the largest
 * eigenvector of the 4x4 symmetric matrix, solved by Jacobi in double):
 * T minimises sum w |R p + t - q|^2, a proper rotation (det = +1).
 * Returns PTREG_ERR_RUNTIME when the total weight is not positive; sets
 * *degenerate (may be NULL) when the rotation is not unique (collinear or
 * single points). */
ptreg_status ptreg_horn_solve(const ptreg_moments *m, double T[16], int *degenerate, ptreg_error *err);
/* The same with a uniform scale s (Umeyama, IEEE PAMI 13(4), 1991): T =
 * [s R | t] minimises sum w |s R p + t - q|^2; R is Horn's, s =
 * tr(R^T S) / sum w |p - mean p|^2 with S the cross-covariance. *scale may
 * be NULL. */
ptreg_status ptreg_horn_solve_scaled(const ptreg_moments *m, double T[16], double *scale, int *degenerate,
                                     ptreg_error *err);
/* Convenience: Horn on n float point pairs, weights may be NULL (all 1). */
ptreg_status ptreg_horn(const float *p, const float *q, const float *weights, size_t n, double T[16], ptreg_error *err);

/* Symmetric eigenproblem of small matrices by cyclic Jacobi, in double.
 * A is n x n row-major (n <= 8) and is not modified; eigenvalues come out
 * ascending with eigenvectors as the columns of V (row-major n x n). */
void ptreg_eigen_symmetric(const double *A, int n, double *eigenvalues, double *V);

/* A run's per-frame latencies summarised: p50, p95 and p99 (nearest rank),
 * max and mean into out (zeros for n 0); -1 when out of memory. The
 * layout of ptreg_track_latency, whose tables write it. */
int ptreg_latency_percentiles(const double *ms, size_t n, double out[5]);

/* The same summary in fixed memory, for runs without an end (odometry's
 * soak): latencies counted in log-linear buckets, 512 to each power of two
 * from 2^-10 to 2^20 ms, so a percentile is the nearest-rank value's bucket
 * top, at most 0.2% above it and never above the max (beyond 2^20 ms: the
 * max); max and mean exact. */
typedef struct ptreg_latency_histogram {
    uint64_t *count; /* PTREG_LATENCY_BUCKETS; NULL until init */
    uint64_t n;
    double sum, max;
} ptreg_latency_histogram;

int ptreg_latency_histogram_init(ptreg_latency_histogram *h); /* -1: out of memory */
void ptreg_latency_histogram_free(ptreg_latency_histogram *h);
void ptreg_latency_histogram_add(ptreg_latency_histogram *h, double ms);
void ptreg_latency_histogram_percentiles(const ptreg_latency_histogram *h, double out[5]);

/* Deterministic random numbers (xoshiro256**), seeded by splitmix64. */
typedef struct ptreg_rng {
    uint64_t s[4];
} ptreg_rng;

void ptreg_rng_seed(ptreg_rng *rng, uint64_t seed);
uint64_t ptreg_rng_next(ptreg_rng *rng);
double ptreg_rng_uniform(ptreg_rng *rng); /* [0, 1) */
double ptreg_rng_normal(ptreg_rng *rng);  /* standard normal */

/* The mean of n > 0 points (interleaved xyz), summed in double in order,
 * and their RMS distance from c. */
void ptreg_points_centroid(const float *xyz, size_t n, double c[3]);
double ptreg_points_rms_radius(const float *xyz, size_t n, const double c[3]);
/* order[i]: the point at position i of a Morton curve over the points'
 * bounding box (10 bits a coordinate), ties in the caller's order. Points
 * near each other on the curve are near each other in space, so queries
 * taken in this order read the same part of an index (ICP's walks) and a
 * block of rows has a small bounding box (the pair engine's culling).
 * Returns -1 when out of memory. */
int ptreg_morton_order(const float *p, size_t n, uint32_t *order);
/* double -> float, infinity beyond FLT_MAX (C leaves that undefined). */
float ptreg_double_to_float(double v);
/* How far T is from a rigid motion: the largest of |R^T R - I| (entries)
 * and |det R - 1|; INFINITY when T is not finite or its last row is not
 * 0 0 0 1. */
double ptreg_transform_rigidity_error(const double T[16]);
/* Checks that T is finite, its last row is 0 0 0 1 and R is a rotation to
 * within tol (R^T R = I, det = +1). */
int ptreg_transform_is_rigid(const double T[16], double tol);

#endif
