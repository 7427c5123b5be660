/* Normals by PCA of each point's neighbourhood (the way PCL's
 * NormalEstimation does it): covariance about the neighbourhood's centroid
 * in double, the eigenvector of the smallest eigenvalue, curvature
 * l0 / (l0 + l1 + l2), the sign chosen so the normal faces the viewpoint. */
#include "ptreg/features.h"

#include <math.h>
#include <string.h>

#include "feat/neighborhood.h"

void ptreg_normals_options_default(ptreg_normals_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->neighbors.k = 30;
}

/* Normal and curvature of one neighbourhood; 0 with fewer than 3 points
 * or with all of them in one place (a scanner's invalid returns at the
 * origin), where no plane is defined and any axis would pin registration
 * pairs to it. */
static int pca_normal(const float *xyz, const feat_list *nb, const float p[3], const double vp[3],
                      float normal[3], float *curvature)
{
    if (nb->count < 3)
        return 0;
    double c[3] = {0, 0, 0}, cov[9] = {0};
    for (size_t i = 0; i < nb->count; i++)
        for (int a = 0; a < 3; a++)
            c[a] += xyz[3 * (size_t)nb->index[i] + (size_t)a];
    for (int a = 0; a < 3; a++)
        c[a] /= (double)nb->count;
    for (size_t i = 0; i < nb->count; i++) {
        const float *q = xyz + 3 * (size_t)nb->index[i];
        double d[3] = {q[0] - c[0], q[1] - c[1], q[2] - c[2]};
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                cov[3 * a + b] += d[a] * d[b];
    }
    double lambda[3], V[9];
    ptreg_eigen_symmetric(cov, 3, lambda, V);
    double nx = V[0], ny = V[3], nz = V[6]; /* column 0: the smallest eigenvalue */
    double sum = lambda[0] + lambda[1] + lambda[2];
    if (!(sum > 0))
        return 0;
    *curvature = (float)(lambda[0] / sum);
    /* Face the viewpoint: (vp - p) . n >= 0. */
    if ((vp[0] - p[0]) * nx + (vp[1] - p[1]) * ny + (vp[2] - p[2]) * nz < 0) {
        nx = -nx;
        ny = -ny;
        nz = -nz;
    }
    normal[0] = (float)nx;
    normal[1] = (float)ny;
    normal[2] = (float)nz;
    return 1;
}

ptreg_status ptreg_normals(const float *xyz, size_t n, const ptreg_normals_options *opt, float *normals,
                           float *curvature, size_t *missing, ptreg_error *err)
{
    ptreg_normals_options d;
    if (!opt) {
        ptreg_normals_options_default(&d);
        opt = &d;
    }
    if (!xyz || !normals || !n)
        return ptreg_error_set(err, PTREG_ERR_ARG, "normals: no points or no output");
    ptreg_device on;
    ptreg_status st = ptreg_device_resolve(&opt->device, PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), "normals", &on, err);
    if (st)
        return st;
    ptreg_kdtree *tree = NULL;
    feat_table table = {0};
    ptreg_status s = ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    if (!s)
        s = feat_table_build(tree, xyz, n, &opt->neighbors, 0, FEAT_SORTED, &table, err);
    ptreg_kdtree_destroy(tree);
    if (s)
        return s;
    size_t lacking = 0;
#pragma omp parallel for schedule(dynamic, 256) num_threads(ptreg_get_num_threads()) reduction(+ : lacking)
    for (size_t i = 0; i < n; i++) {
        float *nrm = normals + 3 * i, curv = NAN;
        if (!pca_normal(xyz, &table.list[i], xyz + 3 * i, opt->viewpoint, nrm, &curv)) {
            nrm[0] = nrm[1] = nrm[2] = NAN;
            lacking++;
        }
        if (curvature)
            curvature[i] = curv;
    }
    feat_table_free(&table);
    if (missing)
        *missing = lacking;
    return PTREG_OK;
}
