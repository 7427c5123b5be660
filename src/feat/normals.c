/* Normals by PCA of each point's neighborhood (the way PCL's
 * NormalEstimation does it): covariance about the neighborhood's centroid
 * in double, the eigenvector of the smallest eigenvalue, curvature
 * l0 / (l0 + l1 + l2), the sign chosen so the normal faces the viewpoint. */
#include "ptreg/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/engine.h"
#include "feat/neighborhood.h"
#include "nn/tiles.h"
#include "feat/normals_device.h"
#include "nn/kdtree_query.h"
#include "core/numeric.h"

void ptreg_normals_options_default(ptreg_normals_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->neighbors.k = 30;
    opt->orientation = PTREG_ORIENT_VIEWPOINT;
    opt->direction[2] = 1.0;
    opt->orient_k = 10;
}

static const ptreg_option_name orientation_names[] = {{"viewpoint", PTREG_ORIENT_VIEWPOINT},
                                                      {"direction", PTREG_ORIENT_DIRECTION},
                                                      {"none", PTREG_ORIENT_NONE},
                                                      {"tangent-plane", PTREG_ORIENT_TANGENT_PLANE},
                                                      {NULL, 0}};

OPTION_ENUM_IS_INT(ptreg_normals_options, orientation);
/* The viewpoint and the direction (three numbers each) are the front ends'. */
static const ptreg_option normals_rows[] = {
    FEAT_NEIGHBORHOOD_ROWS(ptreg_normals_options, neighbors),
    OPTION_ENUM(ptreg_normals_options, orientation, "orientation", "orient", orientation_names, 0,
                "viewpoint (face the viewpoint), direction (along the direction), none (as PCA gives them) or "
                "tangent-plane (consistent over the surface, Open3D's OrientNormalsConsistentTangentPlane)"),
    OPTION_FIELD(ptreg_normals_options, orient_k, NULL, INT, 1, 1000, 0, "K",
                 "orientation tangent-plane: the graph's neighbors"),
};
OPTION_TABLE(ptreg_normals_option_table, "normals", ptreg_normals_options, ptreg_normals_options_default, normals_rows)

/* The eigenvalues (ascending) of a symmetric positive semi-definite 3x3
 * matrix and the smallest one's unit eigenvector. The smallest root of the
 * characteristic polynomial p(l) = l^3 - c2 l^2 + c1 l - c0 by Newton's
 * method from 0: p is increasing and concave below its first root (its
 * inflection is at the mean eigenvalue), so the steps climb to it
 * monotonically, in two or three steps when l0 is well below l1 (a
 * surface); the other two from the deflated quadratic. The eigenvector is
 * the longest cross product of two rows of A - l0 I. 0 when that is
 * ill-conditioned (the two smallest eigenvalues within 1e-6 of the
 * spread, or A a multiple of I): the caller then uses Jacobi. Smith's
 * closed form needed an acos and a cos, 3% of a GICP run. */
static int smallest_eigen3(const double A[9], double lambda[3], double v[3])
{
    const double c2 = A[0] + A[4] + A[8];
    const double c1 = A[0] * A[4] - A[1] * A[1] + A[0] * A[8] - A[2] * A[2] + A[4] * A[8] - A[5] * A[5];
    const double c0 = A[0] * (A[4] * A[8] - A[5] * A[5]) - A[1] * (A[1] * A[8] - A[5] * A[2]) +
                      A[2] * (A[1] * A[5] - A[4] * A[2]);
    if (!(c2 > 0.0) || !isfinite(c0))
        return 0;
    double l = 0.0;
    for (int it = 0; it < 64; it++) {
        const double p = ((l - c2) * l + c1) * l - c0, dp = (3.0 * l - 2.0 * c2) * l + c1;
        if (!(dp > 0.0))
            break;
        const double step = p / dp;
        l -= step;
        if (!(fabs(step) > 1e-15 * c2))
            break;
    }
    const double sum = c2 - l, product = c1 - l * sum;
    const double root = sqrt(fmax(sum * sum - 4.0 * product, 0.0));
    lambda[0] = l, lambda[1] = 0.5 * (sum - root), lambda[2] = 0.5 * (sum + root);
    if (!(lambda[1] - lambda[0] > 1e-6 * (lambda[2] - lambda[0])))
        return 0;
    const double r0[3] = {A[0] - l, A[1], A[2]}, r1[3] = {A[3], A[4] - l, A[5]}, r2[3] = {A[6], A[7], A[8] - l};
    const double *rows[3][2] = {{r0, r1}, {r0, r2}, {r1, r2}};
    double best = 0.0;
    v[0] = v[1] = v[2] = 0.0;
    for (int k = 0; k < 3; k++) {
        const double *a = rows[k][0], *b = rows[k][1];
        const double c[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
        const double n2 = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
        if (n2 > best)
            best = n2, v[0] = c[0], v[1] = c[1], v[2] = c[2];
    }
    if (!(best > 0.0))
        return 0;
    const double inv = 1.0 / sqrt(best);
    v[0] *= inv, v[1] *= inv, v[2] *= inv;
    return 1;
}

/* Normal and curvature of one neighborhood; 0 with fewer than 3 points
 * or with all of them in one place (a scanner's invalid returns at the
 * origin), where no plane is defined and any axis would pin registration
 * pairs to it. */
static int pca_normal(const float *xyz, const nn_list *nb, const float p[3], const ptreg_normals_options *o,
                      float normal[3], float *curvature)
{
    if (nb->count < 3)
        return 0;
    /* One pass about the query point (inside the neighborhood, so the
     * offsets stay small and the shifted sums lose nothing in double):
     * cov = sum d d^T - (sum d)(sum d)^T / n. */
    double s1[3] = {0, 0, 0}, s2[6] = {0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < nb->count; i++) {
        const float *q = xyz + 3 * (size_t)nb->index[i];
        const double d[3] = {(double)q[0] - p[0], (double)q[1] - p[1], (double)q[2] - p[2]};
        s1[0] += d[0], s1[1] += d[1], s1[2] += d[2];
        s2[0] += d[0] * d[0], s2[1] += d[0] * d[1], s2[2] += d[0] * d[2];
        s2[3] += d[1] * d[1], s2[4] += d[1] * d[2], s2[5] += d[2] * d[2];
    }
    const double inv_n = 1.0 / (double)nb->count;
    const double xx = s2[0] - s1[0] * s1[0] * inv_n, xy = s2[1] - s1[0] * s1[1] * inv_n,
                 xz = s2[2] - s1[0] * s1[2] * inv_n, yy = s2[3] - s1[1] * s1[1] * inv_n,
                 yz = s2[4] - s1[1] * s1[2] * inv_n, zz = s2[5] - s1[2] * s1[2] * inv_n;
    const double cov[9] = {xx, xy, xz, xy, yy, yz, xz, yz, zz};
    double lambda[3], V[9], v[3];
    if (!smallest_eigen3(cov, lambda, v)) {
        ptreg_eigen_symmetric(cov, 3, lambda, V);
        v[0] = V[0], v[1] = V[3], v[2] = V[6]; /* column 0: the smallest eigenvalue */
    }
    double nx = v[0], ny = v[1], nz = v[2];
    double sum = lambda[0] + lambda[1] + lambda[2];
    if (!(sum > 0))
        return 0;
    *curvature = (float)(lambda[0] / sum);
    /* Face the viewpoint, (vp - p) . n >= 0, or the direction, d . n >= 0. */
    const double *vp = o->viewpoint, *d = o->direction;
    const int flip = o->orientation == PTREG_ORIENT_VIEWPOINT
                         ? (vp[0] - p[0]) * nx + (vp[1] - p[1]) * ny + (vp[2] - p[2]) * nz < 0
                         : o->orientation == PTREG_ORIENT_DIRECTION && d[0] * nx + d[1] * ny + d[2] * nz < 0;
    if (flip) {
        nx = -nx;
        ny = -ny;
        nz = -nz;
    }
    normal[0] = (float)nx;
    normal[1] = (float)ny;
    normal[2] = (float)nz;
    return 1;
}

/* ---- consistent orientation over the surface (Hoppe et al. 1992) ---- */

typedef struct graph_edge {
    double w;
    uint32_t a, b;
} graph_edge;

static int by_weight(const void *x, const void *y)
{
    const graph_edge *e = x, *f = y;
    if (e->w != f->w)
        return e->w < f->w ? -1 : 1;
    if (e->a != f->a)
        return e->a < f->a ? -1 : 1;
    return (e->b > f->b) - (e->b < f->b);
}

static uint32_t find_root(uint32_t *parent, uint32_t v)
{
    while (parent[v] != v)
        v = parent[v] = parent[parent[v]];
    return v;
}

static int finite_normal(const float *n) { return isfinite(n[0]) && isfinite(n[1]) && isfinite(n[2]); }

/* The k-nearest graph's edges between points with normals, each once
 * (a < b), weighted 1 - |n_a . n_b|; sorted by (weight, a, b). */
static graph_edge *knn_edges(const feat_table *t, const float *normals, int k, size_t *count)
{
    graph_edge *e = malloc((t->n ? t->n : 1) * (size_t)k * sizeof *e);
    size_t m = 0;
    for (size_t i = 0; e && i < t->n; i++) {
        if (!finite_normal(normals + 3 * i))
            continue;
        int taken = 0;
        for (size_t q = 0; q < t->list[i].count && taken < k; q++) {
            const uint32_t j = t->list[i].index[q];
            if (j == i || !finite_normal(normals + 3 * (size_t)j))
                continue;
            taken++;
            const float *a = normals + 3 * i, *b = normals + 3 * (size_t)j;
            const double dot = (double)a[0] * b[0] + (double)a[1] * b[1] + (double)a[2] * b[2];
            e[m++] = (graph_edge){1.0 - fabs(dot), (uint32_t)(i < j ? i : j), (uint32_t)(i < j ? j : i)};
        }
    }
    if (e)
        qsort(e, m, sizeof *e, by_weight);
    *count = m;
    return e;
}

/* Kruskal's tree of the graph (the first of equal edges wins), as
 * adjacency lists (CSR: first[v] .. first[v + 1] in adj). The offsets are
 * uint32: a tree has n - 1 edges, and 2 (n - 1) < 2^32 for the k-d tree's
 * n < 2^31 (kd_check_points). */
static int spanning_tree(const graph_edge *e, size_t m, size_t n, uint32_t **first, uint32_t **adj)
{
    uint32_t *parent = malloc(n * sizeof *parent), *deg = calloc(n + 1, sizeof *deg);
    graph_edge *kept = malloc((m ? m : 1) * sizeof *kept);
    *first = NULL, *adj = NULL;
    size_t t = 0;
    if (parent && deg && kept) {
        for (size_t v = 0; v < n; v++)
            parent[v] = (uint32_t)v;
        for (size_t q = 0; q < m; q++) {
            const uint32_t ra = find_root(parent, e[q].a), rb = find_root(parent, e[q].b);
            if (ra == rb)
                continue;
            parent[ra < rb ? rb : ra] = ra < rb ? ra : rb;
            kept[t++] = e[q];
            deg[e[q].a + 1]++, deg[e[q].b + 1]++;
        }
        for (size_t v = 0; v < n; v++)
            deg[v + 1] += deg[v];
        *first = deg, deg = NULL;
        *adj = malloc((t ? 2 * t : 1) * sizeof **adj);
        uint32_t *fill = *adj ? malloc((n ? n : 1) * sizeof *fill) : NULL;
        for (size_t v = 0; fill && v < n; v++)
            fill[v] = (*first)[v];
        for (size_t q = 0; fill && q < t; q++) {
            (*adj)[fill[kept[q].a]++] = kept[q].b;
            (*adj)[fill[kept[q].b]++] = kept[q].a;
        }
        if (!fill) {
            free(*first), free(*adj);
            *first = NULL, *adj = NULL;
        }
        free(fill);
    }
    free(parent), free(deg), free(kept);
    return *first != NULL;
}

/* From each component's highest point (normal turned to +z; ties: the
 * lower index), flips spread down the tree: a child agrees with its
 * parent. */
static void propagate(const float *xyz, size_t n, const uint32_t *first, const uint32_t *adj, float *normals,
                      unsigned char *seen, uint32_t *queue)
{
    for (;;) {
        size_t root = n;
        for (size_t v = 0; v < n; v++)
            if (!seen[v] && finite_normal(normals + 3 * v) && (root == n || xyz[3 * v + 2] > xyz[3 * root + 2]))
                root = v;
        if (root == n)
            return;
        float *nr = normals + 3 * root;
        if (nr[2] < 0.0f)
            nr[0] = -nr[0], nr[1] = -nr[1], nr[2] = -nr[2];
        size_t head = 0, tail = 0;
        queue[tail++] = (uint32_t)root;
        seen[root] = 1;
        while (head < tail) {
            const uint32_t u = queue[head++];
            const float *nu = normals + 3 * (size_t)u;
            for (uint32_t q = first[u]; q < first[u + 1]; q++) {
                const uint32_t v = adj[q];
                if (seen[v])
                    continue;
                float *nv = normals + 3 * (size_t)v;
                if (nu[0] * nv[0] + nu[1] * nv[1] + nu[2] * nv[2] < 0.0f)
                    nv[0] = -nv[0], nv[1] = -nv[1], nv[2] = -nv[2];
                seen[v] = 1;
                queue[tail++] = v;
            }
        }
    }
}

static ptreg_status orient_tangent_plane(const float *xyz, size_t n, const feat_table *t, int k, float *normals,
                                         ptreg_error *err)
{
    size_t m;
    graph_edge *e = knn_edges(t, normals, k, &m);
    uint32_t *first = NULL, *adj = NULL, *queue = malloc((n ? n : 1) * sizeof *queue);
    unsigned char *seen = calloc(n ? n : 1, 1);
    int ok = e && queue && seen && spanning_tree(e, m, n, &first, &adj);
    if (ok)
        propagate(xyz, n, first, adj, normals, seen, queue);
    free(e), free(first), free(adj), free(queue), free(seen);
    return ok ? PTREG_OK : ptreg_error_set(err, PTREG_ERR_NOMEM, "normals: out of memory orienting %zu points", n);
}

/* One point's normal and curvature (NaN when it has none); 1 when it has
 * none. */
static size_t normal_of(const float *xyz, uint32_t i, const nn_list *nb, const ptreg_normals_options *opt,
                        float *normals, float *curvature)
{
    float *nrm = normals + 3 * (size_t)i, curv = NAN;
    const int made = pca_normal(xyz, nb, xyz + 3 * (size_t)i, opt, nrm, &curv);
    if (!made)
        nrm[0] = nrm[1] = nrm[2] = NAN;
    if (curvature)
        curvature[i] = curv;
    return !made;
}

/* The tangent-plane orientation reads neighbours' lists across the cloud:
 * the whole table, kept at once. */
static ptreg_status normals_by_table(const ptreg_kdtree *tree, const float *xyz, size_t n,
                                     const ptreg_normals_options *opt, float *normals, float *curvature,
                                     size_t *lacking, ptreg_error *err)
{
    feat_table table = {0};
    ptreg_status s = feat_table_build(tree, xyz, n, &opt->neighbors, 0, NN_SORTED, &table, err);
    if (s)
        return s;
    size_t missing = 0;
#pragma omp parallel for schedule(dynamic, 256) num_threads(ptreg_get_num_threads()) reduction(+ : missing)
    for (size_t i = 0; i < n; i++)
        missing += normal_of(xyz, (uint32_t)i, &table.list[i], opt, normals, curvature);
    *lacking = missing;
    s = orient_tangent_plane(xyz, n, &table, opt->orient_k, normals, err);
    feat_table_free(&table);
    return s;
}

/* Normals of blocks of lists (by blocks of one tree, or by tiles). */
typedef struct block_normals {
    const float *xyz;
    const ptreg_normals_options *opt;
    float *normals, *curvature;
    size_t missing;
} block_normals;

static int normals_of_block(void *ctx, nn_block *b)
{
    block_normals *job = ctx;
    size_t missing = 0;
    for (size_t j = 0; j < b->count; j++)
        missing += normal_of(job->xyz, b->point[j], &b->list[j], job->opt, job->normals, job->curvature);
#pragma omp atomic
    job->missing += missing;
    return 1;
}

/* Every other orientation needs a point's own list only: the normals of
 * each block as its lists are found, so memory stays one block's lists a
 * thread, whatever the cloud's size. */
static ptreg_status normals_by_blocks(const ptreg_kdtree *tree, const float *xyz, size_t n,
                                      const ptreg_normals_options *opt, float *normals, float *curvature,
                                      size_t *lacking, ptreg_error *err)
{
    ptreg_status s = nn_check_neighborhood(&opt->neighbors, err);
    if (s)
        return s;
    const nn_hoods h = {tree, xyz, n, opt->neighbors, NN_SORTED, 0};
    block_normals job = {xyz, opt, normals, curvature, 0};
    if (!nn_hoods_each(&h, normals_of_block, &job))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "normals: out of memory for the neighborhoods of %zu points", n);
    *lacking = job.missing;
    return PTREG_OK;
}

ptreg_status feat_normals_tiled(const float *xyz, size_t n, const ptreg_normals_options *opt, size_t tile_points,
                                float *normals, float *curvature, size_t *missing, ptreg_error *err)
{
    block_normals job = {xyz, opt, normals, curvature, 0};
    const ptreg_status s = nn_hoods_tiled(xyz, n, &opt->neighbors, tile_points, normals_of_block, &job, err);
    if (!s && missing)
        *missing = job.missing;
    return s;
}

ptreg_status feat_normals_on_tree(const ptreg_kdtree *tree, const float *xyz, size_t n,
                                  const ptreg_normals_options *opt, float *normals, float *curvature, size_t *missing,
                                  ptreg_error *err)
{
    size_t lacking = 0;
    const ptreg_status s = opt->orientation == PTREG_ORIENT_TANGENT_PLANE
                               ? normals_by_table(tree, xyz, n, opt, normals, curvature, &lacking, err)
                               : normals_by_blocks(tree, xyz, n, opt, normals, curvature, &lacking, err);
    if (missing)
        *missing = lacking;
    return s;
}

static const engine *const normals_engines[] = {&engine_cpu, &normals_device_engine};

ptreg_status ptreg_normals_resolve_device(const ptreg_normals_options *opt, ptreg_device *on, ptreg_error *err)
{
    return engine_choose(normals_engines, 2, &opt->device, opt, "normals", on, NULL, err);
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
    ptreg_status st = kd_check_points("normals", n, err);
    st = st ? st : ptreg_check_shape("normals: the cloud", xyz, n, err);
    st = st ? st : ptreg_options_check(ptreg_normals_option_table(), opt, err);
    st = st ? st : ptreg_normals_resolve_device(opt, &on, err);
    if (st)
        return st;
    if (on.backend != PTREG_BACKEND_CPU)
        return feat_device_normals_host(&on, xyz, n, opt, normals, curvature, missing, err);
    if (n >= NN_TILED_MIN && opt->orientation != PTREG_ORIENT_TANGENT_PLANE) /* memory: no tree of the whole */
        return feat_normals_tiled(xyz, n, opt, NN_TILE_POINTS, normals, curvature, missing, err);
    ptreg_kdtree *tree = NULL;
    st = ptreg_kdtree_create(xyz, n, NULL, &tree, err);
    if (!st)
        st = feat_normals_on_tree(tree, xyz, n, opt, normals, curvature, missing, err);
    ptreg_kdtree_destroy(tree);
    return st;
}
