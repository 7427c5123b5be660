/* Odometry's registration: robust point-to-point ICP against the voxel
 * map (odometry_impl.h), and the SE(3) exponential and logarithm it steps
 * and interpolates with. Each step's normal equations are summed per block
 * of source points and the blocks added in order, so the pose has the same
 * bits for any thread count; or on a GPU (odometry_device.c), whose groups'
 * sums are added in order too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "ptreg/transform.h"
#include "reg/odometry/odometry_impl.h"

/* Source points per block of the normal equations. */
#define ICP_BLOCK 256

static void hat(const double v[3], double H[9])
{
    H[0] = 0.0, H[1] = -v[2], H[2] = v[1];
    H[3] = v[2], H[4] = 0.0, H[5] = -v[0];
    H[6] = -v[1], H[7] = v[0], H[8] = 0.0;
}

/* I + a [v]x + b [v]x^2 */
static void rodrigues(const double v[3], double a, double b, double M[9])
{
    double H[9], H2[9];
    hat(v, H);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            H2[3 * r + c] = H[3 * r] * H[c] + H[3 * r + 1] * H[3 + c] + H[3 * r + 2] * H[6 + c];
    for (int k = 0; k < 9; k++)
        M[k] = (k % 4 == 0 ? 1.0 : 0.0) + a * H[k] + b * H2[k];
}

void odo_se3_exp(const double xi[6], double T[16])
{
    const double *rho = xi, *phi = xi + 3;
    const double t2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2], t = sqrt(t2);
    double a, b, c; /* sin t / t, (1 - cos t) / t^2, (t - sin t) / t^3 */
    if (t < 1e-4)
        a = 1.0 - t2 / 6.0, b = 0.5 - t2 / 24.0, c = 1.0 / 6.0 - t2 / 120.0;
    else
        a = sin(t) / t, b = (1.0 - cos(t)) / t2, c = (t - sin(t)) / (t2 * t);
    double R[9], V[9];
    rodrigues(phi, a, b, R);
    rodrigues(phi, b, c, V);
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 3; k++)
            T[4 * r + k] = R[3 * r + k];
        T[4 * r + 3] = V[3 * r] * rho[0] + V[3 * r + 1] * rho[1] + V[3 * r + 2] * rho[2];
    }
}

void odo_se3_log(const double T[16], double xi[6])
{
    double R[9], q[4];
    ptreg_transform_rotation(T, R);
    ptreg_matrix_to_quaternion(R, q); /* w >= 0: the angle is at most pi */
    const double s = sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]), t = 2.0 * atan2(s, q[0]);
    const double f = s > 1e-12 ? t / s : 2.0; /* phi = t * axis */
    double *phi = xi + 3;
    for (int k = 0; k < 3; k++)
        phi[k] = f * q[k + 1];
    /* rho = V^-1 t, V^-1 = I - [phi]x / 2 + e [phi]x^2 */
    const double t2 = t * t;
    const double e = t < 1e-4 ? 1.0 / 12.0 + t2 / 720.0 : (1.0 - t * sin(t) / (2.0 * (1.0 - cos(t)))) / t2;
    double Vi[9];
    rodrigues(phi, -0.5, e, Vi);
    for (int r = 0; r < 3; r++)
        xi[r] = Vi[3 * r] * T[3] + Vi[3 * r + 1] * T[7] + Vi[3 * r + 2] * T[11];
}

/* One block's normal equations at pose T: J = [I | -[p]x] of the moved
 * point p, r = p - q its nearest map point, weight (k / (k + |r|^2))^2. */
static void block_sums(const odo_map *m, const double *src, size_t n, odo_near_cache *cache, const double T[16],
                       double max_dist2, double kernel, double *sums)
{
    memset(sums, 0, ODO_STEP_SUMS * sizeof *sums);
    for (size_t j = 0; j < n; j++) {
        const double *s = src + 3 * j;
        double p[3], q[3], best2 = max_dist2;
        for (int r = 0; r < 3; r++)
            p[r] = T[4 * r] * s[0] + T[4 * r + 1] * s[1] + T[4 * r + 2] * s[2] + T[4 * r + 3];
        if (!odo_map_nearest(m, p, cache + j, &best2, q))
            continue;
        const double res[3] = {p[0] - q[0], p[1] - q[1], p[2] - q[2]};
        const double r2 = res[0] * res[0] + res[1] * res[1] + res[2] * res[2];
        const double w = kernel * kernel / ((kernel + r2) * (kernel + r2));
        const double J[3][6] = {{1, 0, 0, 0, p[2], -p[1]}, {0, 1, 0, -p[2], 0, p[0]}, {0, 0, 1, p[1], -p[0], 0}};
        int u = 0;
        for (int a = 0; a < 6; a++)
            for (int b = a; b < 6; b++, u++)
                sums[u] += w * (J[0][a] * J[0][b] + J[1][a] * J[1][b] + J[2][a] * J[2][b]);
        for (int a = 0; a < 6; a++)
            sums[21 + a] += w * (J[0][a] * res[0] + J[1][a] * res[1] + J[2][a] * res[2]);
        sums[27] += 1.0;
    }
}

/* Solves H x = -g (H symmetric positive definite, its upper triangle
 * packed row by row) by Cholesky; -1 when H is not positive definite. */
static int solve6(const double *upper, const double *g, double x[6])
{
    double L[6][6] = {{0}}, A[6][6];
    int u = 0;
    for (int a = 0; a < 6; a++)
        for (int b = a; b < 6; b++, u++)
            A[a][b] = A[b][a] = upper[u];
    for (int j = 0; j < 6; j++) {
        double d = A[j][j];
        for (int k = 0; k < j; k++)
            d -= L[j][k] * L[j][k];
        if (!(d > 1e-12 * (A[j][j] > 1.0 ? A[j][j] : 1.0)))
            return -1;
        L[j][j] = sqrt(d);
        for (int i = j + 1; i < 6; i++) {
            double v = A[i][j];
            for (int k = 0; k < j; k++)
                v -= L[i][k] * L[j][k];
            L[i][j] = v / L[j][j];
        }
    }
    double y[6];
    for (int i = 0; i < 6; i++) {
        double v = -g[i];
        for (int k = 0; k < i; k++)
            v -= L[i][k] * y[k];
        y[i] = v / L[i][i];
    }
    for (int i = 5; i >= 0; i--) {
        double v = y[i];
        for (int k = i + 1; k < 6; k++)
            v -= L[k][i] * x[k];
        x[i] = v / L[i][i];
    }
    return 0;
}

/* The CPU's step: blocks of ICP_BLOCK points summed in parallel, then
 * added in order, so the bits do not depend on the thread count. */
typedef struct cpu_step {
    const odo_map *m;
    const double *src;
    size_t n, blocks;
    double *sums;          /* blocks x ODO_STEP_SUMS */
    odo_near_cache *cache; /* a point's neighbourhood, from step to step */
} cpu_step;

static void cpu_step_sums(const cpu_step *c, const double T[16], double max_dist2, double kernel,
                          double total[ODO_STEP_SUMS])
{
#pragma omp parallel for schedule(dynamic, 4) num_threads(ptreg_get_num_threads())
    for (size_t b = 0; b < c->blocks; b++) {
        const size_t first = b * ICP_BLOCK, count = c->n - first < ICP_BLOCK ? c->n - first : ICP_BLOCK;
        block_sums(c->m, c->src + 3 * first, count, c->cache + first, T, max_dist2, kernel,
                   c->sums + ODO_STEP_SUMS * b);
    }
    memset(total, 0, ODO_STEP_SUMS * sizeof *total);
    for (size_t b = 0; b < c->blocks; b++)
        for (int k = 0; k < ODO_STEP_SUMS; k++)
            total[k] += c->sums[ODO_STEP_SUMS * b + k];
}

ptreg_status odo_register(const odo_map *m, const double *src, size_t n, double T[16], double max_dist, double kernel,
                          int max_iter, double tol, odo_device *dev, odo_icp_out *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    cpu_step cpu = {m, src, n, (n + ICP_BLOCK - 1) / ICP_BLOCK, NULL, NULL};
    ptreg_status st = PTREG_OK;
    if (dev)
        st = odo_device_load(dev, m, src, n, err);
    else {
        cpu.sums = malloc((cpu.blocks ? cpu.blocks : 1) * ODO_STEP_SUMS * sizeof *cpu.sums);
        cpu.cache = calloc(n ? n : 1, sizeof *cpu.cache);
        if (!cpu.sums || !cpu.cache)
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "odometry: out of memory");
    }
    const double max_dist2 = max_dist * max_dist;
    for (int it = 0; !st && it < max_iter; it++) {
        double total[ODO_STEP_SUMS];
        if (dev)
            st = odo_device_sums(dev, T, max_dist2, kernel, total, err);
        else
            cpu_step_sums(&cpu, T, max_dist2, kernel, total);
        out->pairs = st ? 0 : (size_t)total[27];
        double dx[6], step[16], moved[16];
        if (st || out->pairs < 6 || solve6(total, total + 21, dx))
            break;
        odo_se3_exp(dx, step);
        ptreg_transform_mul(step, T, moved);
        memcpy(T, moved, sizeof moved);
        out->iterations = it + 1;
        if (sqrt(dx[0] * dx[0] + dx[1] * dx[1] + dx[2] * dx[2] + dx[3] * dx[3] + dx[4] * dx[4] + dx[5] * dx[5]) < tol)
            break;
    }
    free(cpu.sums), free(cpu.cache);
    return st;
}

size_t odo_fitness(const odo_map *m, const double *src, size_t n, const double T[16], double dist)
{
    size_t near = 0;
#pragma omp parallel for schedule(static) num_threads(ptreg_get_num_threads()) reduction(+ : near)
    for (size_t i = 0; i < n; i++) {
        const double *p = src + 3 * i;
        double q[3], best2 = dist * dist, out[3];
        for (int r = 0; r < 3; r++)
            q[r] = T[4 * r] * p[0] + T[4 * r + 1] * p[1] + T[4 * r + 2] * p[2] + T[4 * r + 3];
        near += (size_t)odo_map_nearest(m, q, NULL, &best2, out);
    }
    return near;
}
