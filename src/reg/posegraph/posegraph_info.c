/* The information matrix of a pair of scans (Open3D's
 * GetInformationMatrixFromPointClouds): the source moved by T, each source
 * point whose nearest target point q lies within max_dist adds G^T G,
 * G = [-[q]x | I] (3 x 6). Summed in double in the source's point order,
 * so the bits are the same for every thread count. */
#include "ptreg/posegraph.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/nn.h"

ptreg_status ptreg_information_matrix(const float *source, size_t n, const float *target, size_t m, const double T[16],
                                      double max_dist, double information[36], size_t *pairs, ptreg_error *err)
{
    if (pairs)
        *pairs = 0;
    if (!information || !T || (n && !source) || (m && !target))
        return ptreg_error_set(err, PTREG_ERR_ARG, "information matrix: missing argument");
    memset(information, 0, 36 * sizeof *information);
    if (!(max_dist > 0) || !isfinite(max_dist))
        return ptreg_error_set(err, PTREG_ERR_ARG, "information matrix: max_dist %g must be a positive number",
                               max_dist);
    for (int k = 0; k < 16; k++)
        if (!isfinite(T[k]))
            return ptreg_error_set(err, PTREG_ERR_ARG, "information matrix: T is not finite");
    if (n == 0 || m == 0)
        return PTREG_OK;
    if (n > SIZE_MAX / (3 * sizeof(float)) || m > UINT32_MAX)
        return ptreg_error_set(err, PTREG_ERR_ARG, "information matrix: %zu and %zu points are too many", n, m);

    ptreg_kdtree_options ko;
    ptreg_kdtree_options_default(&ko);
    ptreg_kdtree *tree = NULL;
    ptreg_status st = ptreg_kdtree_create(target, m, &ko, &tree, err);
    if (st)
        return st;
    float *moved = malloc(n * 3 * sizeof *moved);
    uint32_t *index = malloc(n * sizeof *index);
    float *d2 = malloc(n * sizeof *d2);
    if (!moved || !index || !d2) {
        free(moved);
        free(index);
        free(d2);
        ptreg_kdtree_destroy(tree);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "information matrix: out of memory for %zu points", n);
    }
    ptreg_transform_points(T, source, moved, n);
    ptreg_kdtree_nearest(tree, moved, n, NULL, index, d2);

    /* The distance is taken again in double from the source point moved in
     * double (as Open3D moves it) against the strict radius of its hybrid
     * search (d^2 < max_dist^2). */
    const double r2 = max_dist * max_dist;
    double GTG[36] = {0};
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (index[i] == PTREG_NO_NEIGHBOR || index[i] >= m)
            continue;
        const float *p = source + 3 * i;
        const float *q = target + 3 * (size_t)index[i];
        double d = 0;
        for (int r = 0; r < 3; r++) {
            const double pr = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
            d += (pr - q[r]) * (pr - q[r]);
        }
        if (!(d < r2))
            continue;
        const double x = q[0], y = q[1], z = q[2];
        const double G[3][6] = {{0, z, -y, 1, 0, 0}, {-z, 0, x, 0, 1, 0}, {y, -x, 0, 0, 0, 1}};
        for (int a = 0; a < 6; a++)
            for (int b = 0; b < 6; b++)
                GTG[6 * a + b] += G[0][a] * G[0][b] + G[1][a] * G[1][b] + G[2][a] * G[2][b];
        count++;
    }
    memcpy(information, GTG, sizeof GTG);
    if (pairs)
        *pairs = count;
    free(moved);
    free(index);
    free(d2);
    ptreg_kdtree_destroy(tree);
    return PTREG_OK;
}
