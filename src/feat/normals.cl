/* Normals by PCA on a device (normals_device.c drives it): one thread per
 * point reads the point's neighbor list (feat/neighbors.cl made it, the
 * CPU's lists bit for bit, sorted by (distance, index)) and does what
 * normals.c's pca_normal does, the same operations in the same order: the
 * one-pass covariance about the point in acc_t (double where the device
 * has it, else float), the smallest eigenvalue by Newton's method on the
 * characteristic polynomial and its eigenvector as the longest cross
 * product, horn.c's cyclic Jacobi where that is ill-conditioned, the
 * curvature, the flip toward the viewpoint or along the direction. With
 * double and no contraction (dialect.h) the normals are the CPU's bits:
 * every operation here is an IEEE one (+ - * / sqrt) or exact (fabs, fmax,
 * frexp, ldexp, floor-free). Points without a normal get NaN and are
 * counted with an integer atomic (the count does not depend on the
 * order). */

#if PTREG_FP64
typedef double acc_t;
#define NORMALS_JACOBI_TOL 1e-36 /* horn.c's */
#define NORMALS_SCALE_LIMIT 1000
#else
typedef float acc_t;
#define NORMALS_JACOBI_TOL 2.2e-13f
#define NORMALS_SCALE_LIMIT 120
#endif

#define NORMALS_ORIENT_VIEWPOINT 0u /* ptreg_normal_orientation's values */
#define NORMALS_ORIENT_DIRECTION 1u

FN int normals_finite(acc_t x) { return x - x == (acc_t)0; }

/* normals.c's smallest_eigen3; 0 when ill-conditioned (then Jacobi). */
FN int normals_smallest_eigen3(const acc_t A[9], acc_t lambda[3], acc_t v[3])
{
    const acc_t c2 = A[0] + A[4] + A[8];
    const acc_t c1 = A[0] * A[4] - A[1] * A[1] + A[0] * A[8] - A[2] * A[2] + A[4] * A[8] - A[5] * A[5];
    const acc_t c0 = A[0] * (A[4] * A[8] - A[5] * A[5]) - A[1] * (A[1] * A[8] - A[5] * A[2]) +
                     A[2] * (A[1] * A[5] - A[4] * A[2]);
    if (!(c2 > (acc_t)0) || !normals_finite(c0))
        return 0;
    acc_t l = 0;
    for (int it = 0; it < 64; it++) {
        const acc_t p = ((l - c2) * l + c1) * l - c0, dp = ((acc_t)3 * l - (acc_t)2 * c2) * l + c1;
        if (!(dp > (acc_t)0))
            break;
        const acc_t step = p / dp;
        l -= step;
        if (!(fabs(step) > (acc_t)1e-15 * c2))
            break;
    }
    const acc_t sum = c2 - l, product = c1 - l * sum;
    const acc_t root = SQRT(fmax(sum * sum - (acc_t)4 * product, (acc_t)0));
    lambda[0] = l, lambda[1] = (acc_t)0.5 * (sum - root), lambda[2] = (acc_t)0.5 * (sum + root);
    if (!(lambda[1] - lambda[0] > (acc_t)1e-6 * (lambda[2] - lambda[0])))
        return 0;
    const acc_t r0[3] = {A[0] - l, A[1], A[2]}, r1[3] = {A[3], A[4] - l, A[5]}, r2[3] = {A[6], A[7], A[8] - l};
    acc_t best = 0;
    v[0] = v[1] = v[2] = 0;
    for (int k = 0; k < 3; k++) {
        /* the pairs (r0, r1), (r0, r2), (r1, r2) */
        const acc_t a0 = k < 2 ? r0[0] : r1[0], a1 = k < 2 ? r0[1] : r1[1], a2 = k < 2 ? r0[2] : r1[2];
        const acc_t b0 = k == 0 ? r1[0] : r2[0], b1 = k == 0 ? r1[1] : r2[1], b2 = k == 0 ? r1[2] : r2[2];
        const acc_t c[3] = {a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0};
        const acc_t n2 = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
        if (n2 > best)
            best = n2, v[0] = c[0], v[1] = c[1], v[2] = c[2];
    }
    if (!(best > (acc_t)0))
        return 0;
    const acc_t inv = (acc_t)1 / SQRT(best);
    v[0] *= inv, v[1] *= inv, v[2] *= inv;
    return 1;
}

/* horn.c's rotation of A and V in the (p, q) plane (n = 3). */
FN void normals_jacobi_rotate(acc_t A[9], acc_t V[9], int p, int q)
{
    const acc_t apq = A[p * 3 + q];
    if (apq * apq == (acc_t)0)
        return;
    const acc_t app = A[p * 4], aqq = A[q * 4];
    const acc_t h = aqq - app, ah = fabs(h);
    const acc_t r = SQRT(h * h + (acc_t)4 * apq * apq);
    const acc_t inv = (acc_t)1 / SQRT((acc_t)2 * r * (r + ah));
    const acc_t c = (ah + r) * inv;
    const acc_t s = (h >= (acc_t)0 ? (acc_t)2 * apq : (acc_t)-2 * apq) * inv;
    const acc_t cc = c * c, ss = s * s, cs2 = (acc_t)2 * c * s;
    A[p * 4] = cc * app - cs2 * apq + ss * aqq;
    A[q * 4] = ss * app + cs2 * apq + cc * aqq;
    A[p * 3 + q] = A[q * 3 + p] = 0;
    const int k = 3 - p - q; /* the one other index */
    const acc_t akp = A[k * 3 + p], akq = A[k * 3 + q];
    A[k * 3 + p] = A[p * 3 + k] = c * akp - s * akq;
    A[k * 3 + q] = A[q * 3 + k] = s * akp + c * akq;
    for (int m = 0; m < 3; m++) {
        const acc_t vkp = V[m * 3 + p], vkq = V[m * 3 + q];
        V[m * 3 + p] = c * vkp - s * vkq;
        V[m * 3 + q] = s * vkp + c * vkq;
    }
}

/* ptreg_eigen_symmetric on a 3x3: scaled by a power of two, the sweeps in
 * its round-robin order (1,2) (0,2) (0,1), the eigenvalues scaled back,
 * then its selection sort; the smallest one's column into v. */
FN void normals_jacobi3(const acc_t A_in[9], acc_t lambda[3], acc_t v[3])
{
    acc_t A[9], V[9], amax = 0;
    for (int i = 0; i < 9; i++)
        amax = fabs(A_in[i]) > amax ? fabs(A_in[i]) : amax;
    int e = 0;
    if (amax > (acc_t)0 && normals_finite(amax))
        frexp(amax, &e);
    e = e < -NORMALS_SCALE_LIMIT ? -NORMALS_SCALE_LIMIT : e > NORMALS_SCALE_LIMIT ? NORMALS_SCALE_LIMIT : e;
    const acc_t down = ldexp((acc_t)1, -e), up = ldexp((acc_t)1, e);
    for (int i = 0; i < 9; i++) {
        A[i] = A_in[i] * down;
        V[i] = i % 4 == 0 ? (acc_t)1 : (acc_t)0;
    }
    for (int sweep = 0; sweep < 100; sweep++) {
        acc_t off = 0, diag = 0;
        for (int i = 0; i < 3; i++) {
            diag += A[i * 4] * A[i * 4];
            for (int j = i + 1; j < 3; j++)
                off += A[i * 3 + j] * A[i * 3 + j];
        }
        if (off <= (acc_t)NORMALS_JACOBI_TOL * diag || off == (acc_t)0)
            break;
        normals_jacobi_rotate(A, V, 1, 2);
        normals_jacobi_rotate(A, V, 0, 2);
        normals_jacobi_rotate(A, V, 0, 1);
    }
    acc_t e0 = A[0] * up, e1 = A[4] * up, e2 = A[8] * up;
    int o0 = 0, o1 = 1, o2 = 2;
    /* the selection sort: the first smallest of i..2 swapped into i */
    if (e1 < e0 && !(e2 < e1)) {
        const acc_t t = e0; e0 = e1, e1 = t;
        const int u = o0; o0 = o1, o1 = u;
    } else if (e2 < e0 && e2 < e1) {
        const acc_t t = e0; e0 = e2, e2 = t;
        const int u = o0; o0 = o2, o2 = u;
    }
    if (e2 < e1) {
        const acc_t t = e1; e1 = e2, e2 = t;
        const int u = o1; o1 = o2, o2 = u;
    }
    lambda[0] = e0, lambda[1] = e1, lambda[2] = e2;
    for (int m = 0; m < 3; m++)
        v[m] = o0 == 0 ? V[m * 3] : o0 == 1 ? V[m * 3 + 1] : V[m * 3 + 2];
}

/* Every point's normal and curvature (NaN without one, counted in
 * *missing). orient: a ptreg_normal_orientation; toward: the viewpoint or
 * the direction (3 acc_t). curvature may be the normals' buffer when
 * with_curvature is 0 (not written). */
KERNEL ptreg_normals_pca(GLOBAL const float *xyz, u32 n, GLOBAL const u64 *start, GLOBAL const u32 *count,
                         GLOBAL const u32 *index, u32 orient, GLOBAL const acc_t *toward, GLOBAL float *normals,
                         u32 with_curvature, GLOBAL float *curvature, GLOBAL u32 *missing)
{
    const u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    const float p0 = xyz[3 * (size_t)i], p1 = xyz[3 * (size_t)i + 1], p2 = xyz[3 * (size_t)i + 2];
    const u32 m = count[i];
    GLOBAL const u32 *list = index + start[i];
    int ok = m >= 3;
    acc_t lambda[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    if (ok) {
        acc_t s1[3] = {0, 0, 0}, s2[6] = {0, 0, 0, 0, 0, 0};
        for (u32 j = 0; j < m; j++) {
            GLOBAL const float *q = xyz + 3 * (size_t)list[j];
            const acc_t d0 = (acc_t)q[0] - (acc_t)p0, d1 = (acc_t)q[1] - (acc_t)p1, d2 = (acc_t)q[2] - (acc_t)p2;
            s1[0] += d0, s1[1] += d1, s1[2] += d2;
            s2[0] += d0 * d0, s2[1] += d0 * d1, s2[2] += d0 * d2;
            s2[3] += d1 * d1, s2[4] += d1 * d2, s2[5] += d2 * d2;
        }
        const acc_t inv_n = (acc_t)1 / (acc_t)m;
        const acc_t xx = s2[0] - s1[0] * s1[0] * inv_n, xy = s2[1] - s1[0] * s1[1] * inv_n,
                    xz = s2[2] - s1[0] * s1[2] * inv_n, yy = s2[3] - s1[1] * s1[1] * inv_n,
                    yz = s2[4] - s1[1] * s1[2] * inv_n, zz = s2[5] - s1[2] * s1[2] * inv_n;
        const acc_t cov[9] = {xx, xy, xz, xy, yy, yz, xz, yz, zz};
        if (!normals_smallest_eigen3(cov, lambda, v))
            normals_jacobi3(cov, lambda, v);
        ok = lambda[0] + lambda[1] + lambda[2] > (acc_t)0;
    }
    GLOBAL float *out = normals + 3 * (size_t)i;
    if (!ok) {
        out[0] = out[1] = out[2] = AS_FLOAT(0x7fc00000u);
        if (with_curvature)
            curvature[i] = AS_FLOAT(0x7fc00000u);
        GLOBAL_ATOMIC_INC(missing);
        return;
    }
    const acc_t sum = lambda[0] + lambda[1] + lambda[2];
    acc_t nx = v[0], ny = v[1], nz = v[2];
    const int flip = orient == NORMALS_ORIENT_VIEWPOINT
                         ? (toward[0] - (acc_t)p0) * nx + (toward[1] - (acc_t)p1) * ny + (toward[2] - (acc_t)p2) * nz <
                               (acc_t)0
                         : orient == NORMALS_ORIENT_DIRECTION && toward[0] * nx + toward[1] * ny + toward[2] * nz < (acc_t)0;
    if (flip)
        nx = -nx, ny = -ny, nz = -nz;
    out[0] = (float)nx, out[1] = (float)ny, out[2] = (float)nz;
    if (with_curvature)
        curvature[i] = (float)(lambda[0] / sum);
}
