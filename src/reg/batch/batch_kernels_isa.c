/* The batched EM-ICP kernel, compiled once per ISA (cmake/isa.cmake): one
 * pair per lane of the pair engine's vectors (vec_isa.h), so a block runs
 * W pairs with each instruction. Each lane repeats ptreg_emicp's arithmetic
 * for its pair operation for operation (see batch_kernels.h): the E-step in
 * the pair engine's float32 with its exp, the moments and Horn's Jacobi in
 * double, so a pair gives ptreg_emicp's bits on the same ISA. The double
 * parts run on chunks of DW lanes, one native vector each (GCC's and
 * clang's vector extensions), with masks instead of branches; a lane that
 * has stopped keeps computing, and what it computes is thrown away. */
#include <math.h>
#include <string.h>

#include "core/cpu_isa.h"
#include "pair/pair_kernels.h"
#include "pair/vec_isa.h"
#include "ptreg/core.h"
#include "ptreg/icp.h"
#include "reg/batch/batch_kernels.h"
#include "core/numeric.h"

#define W VW
/* ptreg_emicp's: below this normaliser the weights are uniform */
#define MIN_NORMALISER 1e-6
#define JACOBI_SWEEPS 100

int ISA_FN(batch_lanes)(void) { return W; }

/* ---- DW doubles: one native vector ---- */

#if defined(__AVX512F__)
#define DW 8
#elif defined(__AVX__)
#define DW 4
#else
#define DW 2
#endif
#define NC (W / DW) /* chunks of a block */

typedef double vd __attribute__((vector_size(DW * sizeof(double))));
typedef long long vm __attribute__((vector_size(DW * sizeof(double)))); /* lane masks: all ones or zero */

static inline vd vd_set(double x)
{
    vd v;
    for (int l = 0; l < DW; l++)
        v[l] = x;
    return v;
}

static inline vd vd_floats(const float *p)
{
#if defined(__AVX512F__)
    return (vd)_mm512_cvtps_pd(_mm256_loadu_ps(p));
#elif defined(__AVX__)
    return (vd)_mm256_cvtps_pd(_mm_loadu_ps(p));
#else
    vd v;
    for (int l = 0; l < DW; l++)
        v[l] = p[l];
    return v;
#endif
}

/* The lanes rounded to float, stored at p. */
static inline void vd_store_floats(float *p, vd v)
{
#if defined(__AVX512F__)
    _mm256_storeu_ps(p, _mm512_cvtpd_ps((__m512d)v));
#elif defined(__AVX__)
    _mm_storeu_ps(p, _mm256_cvtpd_ps((__m256d)v));
#else
    for (int l = 0; l < DW; l++)
        p[l] = (float)v[l];
#endif
}

static inline vd vd_doubles(const double *p)
{
    vd v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline vd vd_sel(vm mask, vd a, vd b) { return (vd)((mask & (vm)a) | (~mask & (vm)b)); }

/* |x|, by the sign bit (as fabs) */
static inline vd vd_abs(vd x)
{
    vm sign;
    for (int l = 0; l < DW; l++)
        sign[l] = 0x7fffffffffffffffLL;
    return (vd)((vm)x & sign);
}

static inline vd vd_sqrt(vd x)
{
#if defined(__AVX512F__)
    return (vd)_mm512_sqrt_pd((__m512d)x);
#elif defined(__AVX__)
    return (vd)_mm256_sqrt_pd((__m256d)x);
#elif defined(__SSE2__)
    return (vd)_mm_sqrt_pd((__m128d)x);
#else
    for (int l = 0; l < DW; l++)
        x[l] = sqrt(x[l]);
    return x;
#endif
}

/* Lanes where x is finite: x - x is 0 there, NaN elsewhere. */
static inline vm vd_finite(vd x) { return (x - x) == vd_set(0.0); }

static inline int vm_all(vm m)
{
    int all = 1;
    for (int l = 0; l < DW; l++)
        all &= m[l] != 0;
    return all;
}

/* ---- the E-step ---- */

/* One chunk's constants and weighted moments (ptreg_moments). */
typedef struct chunk_consts {
    vd center[3], ref_p[3], ref_q[3];
} chunk_consts;

typedef struct chunk_moments {
    vd w, sp[3], sq[3], spq[9];
} chunk_moments;

/* Row j of the source under T, as the pair engine stores it: the double
 * product rounded to float after centring on the target's centroid; and
 * the row itself in double. */
static void move_row(const batch_block *b, const chunk_consts k[NC], const vd T[NC][12], size_t j, float r[3][W],
                     vd p[NC][3])
{
    for (int c = 0; c < NC; c++) {
        for (int d = 0; d < 3; d++)
            p[c][d] = vd_floats(b->src + (3 * j + (size_t)d) * W + c * DW);
        for (int d = 0; d < 3; d++) {
            const vd m = T[c][4 * d] * p[c][0] + T[c][4 * d + 1] * p[c][1] + T[c][4 * d + 2] * p[c][2] +
                         T[c][4 * d + 3] - k[c].center[d];
            vd_store_floats(r[d] + c * DW, m);
        }
    }
}

/* The pair engine's sweep of one row over every target point. */
static void row_sums(const batch_block *b, const float r[3][W], vf neg_scale_log2e, float se[W], float se2[W],
                     float sb[3][W])
{
    const vf ax = v_load(r[0]), ay = v_load(r[1]), az = v_load(r[2]);
    vf s_e = v_zero(), s_e2 = v_zero(), sx = v_zero(), sy = v_zero(), sz = v_zero();
    for (size_t i = 0; i < b->nt; i++) {
        vf bx, by, bz;
        if (b->shared_target) {
            bx = v_set1(b->tgt[3 * i]), by = v_set1(b->tgt[3 * i + 1]), bz = v_set1(b->tgt[3 * i + 2]);
        } else {
            bx = v_load(b->tgt + (3 * i) * W), by = v_load(b->tgt + (3 * i + 1) * W);
            bz = v_load(b->tgt + (3 * i + 2) * W);
        }
        const vf dx = v_sub(ax, bx), dy = v_sub(ay, by), dz = v_sub(az, bz);
        const vf d2 = v_fma(dz, dz, v_fma(dy, dy, v_mul(dx, dx)));
        vf e = v_exp2(v_mul(d2, neg_scale_log2e));
        if (b->tmask)
            e = v_mul(e, v_load(b->tmask + i * W));
        s_e = v_add(s_e, e);
        s_e2 = v_fma(e, e, s_e2);
        sx = v_fma(e, bx, sx);
        sy = v_fma(e, by, sy);
        sz = v_fma(e, bz, sz);
    }
    v_store(se, s_e);
    v_store(se2, s_e2);
    v_store(sb[0], sx);
    v_store(sb[1], sy);
    v_store(sb[2], sz);
}

/* The row sums of one chunk, in double. */
typedef struct chunk_sums {
    vd e, e2, b[3];
} chunk_sums;

/* Row j's pair (source point -> its weighted target) added to a chunk's
 * moments, with ptreg_emicp's weights: lambda = sum e / sqrt(C), the point
 * sum e x / sum e; uniform weights (lambda 1, the target's centroid) when C
 * is tiny; no weight when no target point has any, or for padding. */
static void add_row(const chunk_consts *k, const vd p[3], const chunk_sums *s, vd outlier, vm present, chunk_moments *m)
{
    const vd zero = vd_set(0.0), c = s->e2 + outlier;
    const vm uniform = c<vd_set(MIN_NORMALISER), weighted = s->e> zero;
    const vd lambda = vd_sel(present, vd_sel(uniform, vd_set(1.0), vd_sel(weighted, s->e / vd_sqrt(c), zero)), zero);
    vd a[3], d[3];
    for (int r = 0; r < 3; r++) {
        /* sum e x, the target uncentred again; the centroid where the
         * weights are uniform, and where there are none (any finite point:
         * its weight is 0) */
        const vd sum = s->b[r] + k->center[r] * s->e;
        const vd q = vd_sel(weighted & ~uniform, sum / s->e, k->center[r]);
        a[r] = p[r] - k->ref_p[r];
        d[r] = q - k->ref_q[r];
    }
    m->w += lambda;
    for (int r = 0; r < 3; r++) {
        m->sp[r] += lambda * a[r];
        m->sq[r] += lambda * d[r];
        for (int c2 = 0; c2 < 3; c2++)
            m->spq[3 * r + c2] += lambda * a[r] * d[c2];
    }
}

static void e_step(const batch_block *b, const chunk_consts k[NC], const vd T[NC][12], const double sigma2[W],
                   chunk_moments m[NC])
{
    memset(m, 0, NC * sizeof *m);
    float neg[W];
    double outlier[W];
    for (int l = 0; l < W; l++) {
        neg[l] = pair_exp2_factor(0.5 / sigma2[l]); /* as ptreg_emicp's pair engine */
        outlier[l] = exp(-b->d02[l] / sigma2[l]);
    }
    const vf neg_scale_log2e = v_load(neg);
    for (size_t j = 0; j < b->ns; j++) {
        float r[3][W], se[W], se2[W], sb[3][W];
        vd p[NC][3];
        move_row(b, k, T, j, r, p);
        const fp_env env = flush_denormals(); /* as the pair engine sums */
        row_sums(b, r, neg_scale_log2e, se, se2, sb);
        restore_fp(env);
        for (int c = 0; c < NC; c++) {
            const chunk_sums s = {vd_floats(se + c * DW),
                                  vd_floats(se2 + c * DW),
                                  {vd_floats(sb[0] + c * DW), vd_floats(sb[1] + c * DW), vd_floats(sb[2] + c * DW)}};
            vm present = ~(vm)vd_set(0.0);
            if (b->smask)
                present = vd_floats(b->smask + j * W + c * DW) != vd_set(0.0);
            add_row(&k[c], p[c], &s, vd_doubles(outlier + c * DW), present, &m[c]);
        }
    }
}

/* ---- Horn's solution, per lane (horn.c's arithmetic) ---- */

/* horn.c's exact scaling of each lane's A by a power of two: 2^-e with
 * frexp's e of the largest |entry| (its exponent field less 1022; 0 for
 * zero and non-finite), clamped to [-1000, 1000], which takes in every
 * subnormal. */
static void jacobi_scale(vd A[16])
{
    vd amax = vd_set(0.0);
    for (int i = 0; i < 16; i++) {
        const vd x = vd_abs(A[i]);
        amax = vd_sel(x > amax, x, amax);
    }
    const vm biased = ((vm)amax >> 52) & 0x7ff;
    vm e = biased - 1022;
    const vm low = e<-1000, high = e> 1000, none = (amax == vd_set(0.0)) | (biased == 0x7ff);
    e = (e & ~low) | (-1000 & low);
    e = (e & ~high) | (1000 & high);
    e &= ~none;
    const vd down = (vd)((1023 - e) << 52);
    for (int i = 0; i < 16; i++)
        A[i] *= down;
}

/* horn.c's jacobi_rotation for the (p, q) entry of every lane, and which
 * lanes skip it: done, or the entry negligible (their cs and sn are
 * whatever came out, unused). */
static inline void rotation_angle(const vd *a, int p, int q, vm done, vd *cs, vd *sn, vm *skip_out)
{
    const vd zero = vd_set(0.0), one = vd_set(1.0), two = vd_set(2.0), four = vd_set(4.0);
    const vd apq = a[p * 4 + q];
    const vm skip = done | (apq * apq == zero);
    *skip_out = skip;
    const vd h = a[q * 5] - a[p * 5], ah = vd_abs(h);
    const vd r = vd_sqrt(h * h + four * apq * apq);
    const vd inv = one / vd_sqrt(two * r * (r + ah));
    *cs = (ah + r) * inv;
    *sn = vd_sel(h >= zero, two * apq, -two * apq) * inv;
}

/* horn.c's rotate_symmetric, then V <- V J, in the lanes that rotate; the
 * others (done, or a_pq negligible: horn.c skips the rotation) keep their
 * bits, zeros' signs included. */
static inline void rotate(vd *a, vd *v, int p, int q, vd cs, vd sn, vm skip)
{
    const vd app = a[p * 5], aqq = a[q * 5], apq = a[p * 4 + q];
    const vd cc = cs * cs, ss = sn * sn, cs2 = vd_set(2.0) * cs * sn;
    a[p * 5] = vd_sel(skip, app, cc * app - cs2 * apq + ss * aqq);
    a[q * 5] = vd_sel(skip, aqq, ss * app + cs2 * apq + cc * aqq);
    a[p * 4 + q] = a[q * 4 + p] = vd_sel(skip, apq, vd_set(0.0));
    for (int k = 0; k < 4; k++) {
        if (k == p || k == q)
            continue;
        const vd akp = a[k * 4 + p], akq = a[k * 4 + q];
        a[k * 4 + p] = a[p * 4 + k] = vd_sel(skip, akp, cs * akp - sn * akq);
        a[k * 4 + q] = a[q * 4 + k] = vd_sel(skip, akq, sn * akp + cs * akq);
    }
    for (int k = 0; k < 4; k++) {
        const vd vkp = v[k * 4 + p], vkq = v[k * 4 + q];
        v[k * 4 + p] = vd_sel(skip, vkp, cs * vkp - sn * vkq);
        v[k * 4 + q] = vd_sel(skip, vkq, sn * vkp + cs * vkq);
    }
}

/* Jacobi on every lane's 4x4 symmetric A (eigen_symmetric: its order and
 * its rotation formula), all chunks of the block in step: a lane whose
 * off-diagonal part has vanished gets identity rotations, which leave it
 * exactly as it is. A comes out scaled (its eigenvalues' order is what
 * counts). */
static void jacobi4(vd A[NC][16], vd V[NC][16])
{
    const vd zero = vd_set(0.0), one = vd_set(1.0);
    for (int c = 0; c < NC; c++) {
        jacobi_scale(A[c]);
        for (int i = 0; i < 16; i++)
            V[c][i] = i % 5 == 0 ? one : zero;
    }
    for (int sweep = 0; sweep < JACOBI_SWEEPS; sweep++) {
        vm done[NC];
        int all = 1;
        for (int c = 0; c < NC; c++) {
            vd off = zero, diag = zero;
            for (int i = 0; i < 4; i++) {
                diag += A[c][i * 5] * A[c][i * 5];
                for (int j = i + 1; j < 4; j++)
                    off += A[c][i * 4 + j] * A[c][i * 4 + j];
            }
            done[c] = (off <= vd_set(1e-36) * diag) | (off == zero);
            all &= vm_all(done[c]);
        }
        if (all)
            return;
        /* horn.c's round-robin order: a round's two rotations touch
         * different rows and columns, so their angles are computed
         * together (two chains of square roots in flight per chunk) */
        static const int rounds[3][2][2] = {{{0, 3}, {1, 2}}, {{1, 3}, {0, 2}}, {{2, 3}, {0, 1}}};
        for (int r = 0; r < 3; r++) {
            vd cs[NC][2], sn[NC][2];
            vm skip[NC][2];
            for (int c = 0; c < NC; c++)
                for (int j = 0; j < 2; j++)
                    rotation_angle(A[c], rounds[r][j][0], rounds[r][j][1], done[c], &cs[c][j], &sn[c][j], &skip[c][j]);
            for (int c = 0; c < NC; c++)
                for (int j = 0; j < 2; j++)
                    rotate(A[c], V[c], rounds[r][j][0], rounds[r][j][1], cs[c][j], sn[c][j], skip[c][j]);
        }
    }
}

static inline vm vm_set(long long x)
{
    vm v;
    for (int l = 0; l < DW; l++)
        v[l] = x;
    return v;
}

static inline vm vm_sel(vm mask, vm a, vm b) { return (mask & a) | (~mask & b); }

/* The eigenvector of the largest eigenvalue: the column the selection sort
 * of eigen_symmetric would put last (the sort itself, with masks, so that
 * ties go where it puts them); the identity when A is zero. */
static void top_vector(const vd A[16], const vd V[16], vd q[4])
{
    vd eval[4] = {A[0], A[5], A[10], A[15]};
    vm order[4] = {vm_set(0), vm_set(1), vm_set(2), vm_set(3)};
    for (int i = 0; i < 3; i++) {
        vd best = eval[i];
        vm pos = vm_set(i);
        for (int j = i + 1; j < 4; j++) {
            const vm lt = eval[j] < best;
            best = vd_sel(lt, eval[j], best);
            pos = vm_sel(lt, vm_set(j), pos);
        }
        for (int j = i + 1; j < 4; j++) {
            const vm swap = pos == vm_set(j);
            const vd te = eval[i];
            const vm to = order[i];
            eval[i] = vd_sel(swap, eval[j], eval[i]), order[i] = vm_sel(swap, order[j], order[i]);
            eval[j] = vd_sel(swap, te, eval[j]), order[j] = vm_sel(swap, to, order[j]);
        }
    }
    const vm zero = (vd_abs(eval[0]) + vd_abs(eval[3])) == vd_set(0.0);
    for (int k = 0; k < 4; k++) {
        const vd *row = V + 4 * k;
        const vd v = vd_sel(order[3] == vm_set(0), row[0],
                            vd_sel(order[3] == vm_set(1), row[1], vd_sel(order[3] == vm_set(2), row[2], row[3])));
        q[k] = vd_sel(zero, vd_set(k == 0 ? 1.0 : 0.0), v);
    }
}

/* ptreg_quaternion_to_matrix, per lane. */
static void rotation_of(const vd q_in[4], vd R[9])
{
    const vd two = vd_set(2.0), one = vd_set(1.0);
    const vd n = vd_sqrt(q_in[0] * q_in[0] + q_in[1] * q_in[1] + q_in[2] * q_in[2] + q_in[3] * q_in[3]);
    const vd w = q_in[0] / n, x = q_in[1] / n, y = q_in[2] / n, z = q_in[3] / n;
    R[0] = one - two * (y * y + z * z);
    R[1] = two * (x * y - w * z);
    R[2] = two * (x * z + w * y);
    R[3] = two * (x * y + w * z);
    R[4] = one - two * (x * x + z * z);
    R[5] = two * (y * z - w * x);
    R[6] = two * (x * z - w * y);
    R[7] = two * (y * z + w * x);
    R[8] = one - two * (x * x + y * y);
}

/* Horn's N of a chunk from its moments: the (centred, or for rotation
 * only the plain) cross-covariance; zero in the lanes whose moments carry
 * no weight or are not finite, which `ok` leaves out. */
static void horn_matrix(int rotation_only, const chunk_moments *m, vd N[16], vd cp[3], vd cq[3], vm *ok)
{
    const vd zero = vd_set(0.0);
    vd S[9];
    for (int c = 0; c < 3; c++) {
        cp[c] = rotation_only ? zero : m->sp[c] / m->w;
        cq[c] = rotation_only ? zero : m->sq[c] / m->w;
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            S[3 * r + c] = rotation_only ? m->spq[3 * r + c] : m->spq[3 * r + c] - m->w * cp[r] * cq[c];
    const vd xx = S[0], xy = S[1], xz = S[2], yx = S[3], yy = S[4], yz = S[5], zx = S[6], zy = S[7], zz = S[8];
    const vd n[16] = {xx + yy + zz, yz - zy, zx - xz,       xy - yx, yz - zy, xx - yy - zz, xy + yx, zx + xz,
                      zx - xz,      xy + yx, -xx + yy - zz, yz + zy, xy - yx, zx + xz,      yz + zy, -xx - yy + zz};
    *ok = (m->w > zero) & vd_finite(m->w);
    for (int i = 0; i < 16; i++)
        *ok &= vd_finite(n[i]);
    for (int i = 0; i < 16; i++)
        N[i] = vd_sel(*ok, n[i], zero);
}

/* T of a chunk's lanes from the top eigenvector q: R, then t. */
static void horn_transform(int rotation_only, const chunk_consts *k, const vd q[4], const vd cp[3], const vd cq[3],
                           vm ok, vd T[12])
{
    const vd zero = vd_set(0.0);
    vd R[9];
    rotation_of(q, R);
    for (int r = 0; r < 3; r++) {
        vd rp = zero;
        for (int c = 0; c < 3; c++) {
            T[4 * r + c] = vd_sel(ok, R[3 * r + c], T[4 * r + c]);
            rp += R[3 * r + c] * (k->ref_p[c] + cp[c]);
        }
        const vd t = rotation_only ? zero : k->ref_q[r] + cq[r] - rp;
        T[4 * r + 3] = vd_sel(ok, t, T[4 * r + 3]);
    }
}

/* Every chunk's next T from its moments (Horn). Returns, per chunk, the
 * lanes whose moments carry no weight or are not finite (T is left). */
static void horn(int rotation_only, const chunk_consts k[NC], const chunk_moments m[NC], vd T[NC][12], vm no_weight[NC])
{
    vd N[NC][16], V[NC][16], cp[NC][3], cq[NC][3], q[4];
    vm ok[NC];
    for (int c = 0; c < NC; c++)
        horn_matrix(rotation_only, &m[c], N[c], cp[c], cq[c], &ok[c]);
    jacobi4(N, V);
    for (int c = 0; c < NC; c++) {
        top_vector(N[c], V[c], q);
        horn_transform(rotation_only, &k[c], q, cp[c], cq[c], ok[c], T[c]);
        no_weight[c] = ~ok[c];
    }
}

/* ---- the schedule ---- */

/* How far an update moved lane l's pose (ptreg_emicp's measure). */
static double pose_change(const vd before[12], const vd after[12], int l, double radius)
{
    double A[16], B[16], angle_deg, trans;
    for (int k = 0; k < 12; k++)
        A[k] = before[k][l], B[k] = after[k][l];
    A[12] = A[13] = A[14] = B[12] = B[13] = B[14] = 0.0;
    A[15] = B[15] = 1.0;
    ptreg_transform_difference(A, B, &angle_deg, &trans);
    return angle_deg * (3.14159265358979323846 / 180.0) + trans / radius;
}

static void load_block(const batch_block *b, chunk_consts k[NC], vd T[NC][12])
{
    for (int c = 0; c < NC; c++) {
        for (int d = 0; d < 3; d++) {
            k[c].center[d] = vd_doubles(b->center[d] + c * DW);
            k[c].ref_p[d] = vd_doubles(b->ref_p[d] + c * DW);
            k[c].ref_q[d] = vd_doubles(b->ref_q[d] + c * DW);
        }
        for (int i = 0; i < 12; i++)
            T[c][i] = vd_doubles(b->T[i] + c * DW);
    }
}

/* One iteration's bookkeeping for lane l of chunk c (ptreg_emicp's
 * anneal): the update taken, sigma^2 lowered, the tolerance tested. */
static void advance(batch_block *b, int c, int l, vd T[12], const vd next[12], double *sigma2, int *active)
{
    const int lane = c * DW + l;
    b->iterations[lane]++;
    b->sigma2_last[lane] = *sigma2;
    /* the change is only needed for the tolerance */
    const double change = b->tol > 0 ? pose_change(T, next, l, b->radius[lane]) : 0.0;
    for (int k = 0; k < 12; k++)
        T[k][l] = next[k][l];
    *sigma2 *= b->factor;
    if (b->tol > 0 && change < b->tol) {
        b->converged[lane] = 1;
        b->stop[lane] = PTREG_STOP_CONVERGED;
        *active = 0;
    }
}

/* Lanes that have run out of iterations or reached the final sigma stop
 * before the next; returns whether any lane goes on. */
static int still_running(batch_block *b, const double sigma2[W], int active[W])
{
    int any = 0;
    for (int l = 0; l < W; l++) {
        if (active[l] && b->iterations[l] >= b->max_iter)
            active[l] = 0;
        if (active[l] && sigma2[l] <= b->sigma2_final[l]) {
            b->stop[l] = PTREG_STOP_SIGMA_FINAL;
            active[l] = 0;
        }
        any |= active[l];
    }
    return any;
}

void ISA_FN(batch_block_run)(batch_block *b)
{
    chunk_consts k[NC];
    vd T[NC][12];
    double sigma2[W];
    int active[W];
    load_block(b, k, T);
    for (int l = 0; l < W; l++) {
        sigma2[l] = b->sigma2_init[l];
        active[l] = l < b->lanes;
        b->iterations[l] = 0;
        b->converged[l] = 0;
        b->stop[l] = PTREG_STOP_MAX_ITERATIONS;
        b->sigma2_last[l] = b->sigma2_final[l];
    }
    while (still_running(b, sigma2, active)) {
        chunk_moments m[NC];
        vd next[NC][12];
        vm no_weight[NC];
        e_step(b, k, (const vd(*)[12])T, sigma2, m);
        memcpy(next, T, sizeof next);
        horn(b->rotation_only, k, m, next, no_weight);
        for (int c = 0; c < NC; c++)
            for (int l = 0; l < DW; l++) {
                const int lane = c * DW + l;
                if (!active[lane])
                    continue;
                if (no_weight[c][l]) {
                    b->stop[lane] = PTREG_STOP_TOO_FEW_PAIRS;
                    active[lane] = 0;
                    continue;
                }
                advance(b, c, l, T[c], next[c], &sigma2[lane], &active[lane]);
            }
    }
    for (int c = 0; c < NC; c++)
        for (int i = 0; i < 12; i++)
            memcpy(b->T[i] + c * DW, &T[c][i], sizeof T[c][i]);
}
