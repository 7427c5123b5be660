/* Statistical and radius outlier removal with Open3D's conventions (nn.h):
 * each point's neighbors from one k-d tree (the neighbourhood engine's
 * blocks for the statistical filter), in parallel, and the
 * statistics summed in point order, so the mask has the same bits for any
 * thread count. */
#include "ptreg/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/hoods.h"
#include "nn/kdtree_query.h"

/* The distance in double of two float points: Open3D's, whose points are
 * doubles, so the threshold tests agree with it on the same inputs. */
static double distance2(const float *a, const float *b)
{
    const double dx = (double)a[0] - b[0], dy = (double)a[1] - b[1], dz = (double)a[2] - b[2];
    return (dx * dx + dy * dy) + dz * dz;
}

typedef struct mean_job {
    const float *xyz;
    double *mean;
} mean_job;

/* The mean distance of each point of a block to its k nearest (itself
 * first). */
static int block_means(void *ctx, nn_block *b)
{
    const mean_job *job = ctx;
    for (size_t j = 0; j < b->count; j++) {
        const float *p = job->xyz + 3 * (size_t)b->point[j];
        const nn_list *l = &b->list[j];
        double sum = 0.0;
        for (size_t m = 0; m < l->count; m++)
            sum += sqrt(distance2(p, job->xyz + 3 * (size_t)l->index[m]));
        job->mean[b->point[j]] = sum / (double)l->count;
    }
    return 1;
}

static ptreg_status mean_distances(const ptreg_kdtree *tree, const float *xyz, size_t n, size_t k, double *mean,
                                   ptreg_error *err)
{
    const nn_hoods h = {tree, xyz, n, {k, 0.0}, NN_SORTED, 0};
    mean_job job = {xyz, mean};
    return nn_hoods_each(&h, block_means, &job)
               ? PTREG_OK
               : ptreg_error_set(err, PTREG_ERR_NOMEM, "statistical outliers: out of memory for %zu neighbors", k);
}

/* Open3D's threshold, its sums as it takes them: a mean of 0 is left out of
 * both sums but counted in n (with n = 1 the deviation is NaN and nothing
 * passes, as there). */
static double statistical_threshold(const double *mean, size_t n, double std_ratio)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += mean[i] > 0 ? mean[i] : 0.0;
    const double m = sum / (double)n;
    double sq = 0.0;
    for (size_t i = 0; i < n; i++)
        sq += mean[i] > 0 ? (mean[i] - m) * (mean[i] - m) : 0.0;
    return m + std_ratio * sqrt(sq / (double)(n - 1));
}

ptreg_status ptreg_statistical_outliers(const float *xyz, size_t n, size_t k, double std_ratio, unsigned char *keep,
                                        double *mean_distance, ptreg_error *err)
{
    if (k < 1 || !(std_ratio > 0.0) || !isfinite(std_ratio))
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "statistical outliers: k %zu and std_ratio %g: k >= 1 and a std_ratio > 0 are needed", k,
                               std_ratio);
    if (n == 0)
        return PTREG_OK;
    double *mean = mean_distance ? mean_distance : malloc(n * sizeof *mean);
    if (!mean)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "statistical outliers: out of memory for %zu points", n);
    ptreg_kdtree *tree = NULL;
    ptreg_status st = ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    if (!st)
        st = mean_distances(tree, xyz, n, k, mean, err);
    if (!st) {
        const double threshold = statistical_threshold(mean, n, std_ratio);
        for (size_t i = 0; i < n; i++)
            keep[i] = mean[i] > 0 && mean[i] < threshold;
    }
    ptreg_kdtree_destroy(tree);
    if (mean != mean_distance)
        free(mean);
    return st;
}

/* The points strictly within radius of point i, itself included, found in
 * a float search a little wider than radius and counted in double;
 * SIZE_MAX when out of memory. */
static size_t count_within(const ptreg_kdtree *tree, const float *xyz, size_t i, double r2, float limit,
                           ptreg_neighbors *nb)
{
    if (kd_radius_within(tree, xyz + 3 * i, limit, 0, nb))
        return SIZE_MAX;
    size_t count = 0;
    for (size_t j = 0; j < nb->count; j++)
        count += distance2(xyz + 3 * i, xyz + 3 * (size_t)nb->index[j]) < r2;
    return count;
}

ptreg_status ptreg_radius_outliers(const float *xyz, size_t n, double radius, size_t min_neighbors, unsigned char *keep,
                                   ptreg_error *err)
{
    if (!(radius > 0.0) || !isfinite(radius) || min_neighbors < 1)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "radius outliers: radius %g and %zu neighbors: a radius > 0 and at least 1 neighbor "
                               "are needed",
                               radius, min_neighbors);
    if (n == 0)
        return PTREG_OK;
    ptreg_kdtree *tree = NULL;
    ptreg_status st = ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    if (st)
        return st;
    const double r2 = radius * radius;
    /* float's squared distance is within a few ulps of double's: 1e-5 wider holds every point double takes */
    const float limit = (float)(r2 * (1.0 + 1e-5));
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads())
    {
        ptreg_neighbors nb = {0};
#pragma omp for schedule(dynamic, 256)
        for (size_t i = 0; i < n; i++) {
            const size_t count = count_within(tree, xyz, i, r2, limit, &nb);
            if (count == SIZE_MAX) {
#pragma omp atomic write
                failed = 1;
            }
            keep[i] = count != SIZE_MAX && count > min_neighbors;
        }
        ptreg_neighbors_free(&nb);
    }
    ptreg_kdtree_destroy(tree);
    return failed ? ptreg_error_set(err, PTREG_ERR_NOMEM, "radius outliers: out of memory for the neighbor lists")
                  : PTREG_OK;
}
