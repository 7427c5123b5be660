/* Batched EM-ICP on a device (batch_device.c drives it): the whole
 * annealing schedule of every pair in one launch. Each pair computes what
 * the CPU's lanes compute for it (batch_kernels_isa.c: the same operations
 * in the same order, less the lanes' FMAs): the source moved by T in
 * double and rounded to float
 * relative to the target's centroid, the E-step's per-point sums over the
 * target in float32 with the pair engine's exp, the weights and moments in
 * double, Horn's solution by horn.c's cyclic Jacobi in double, the schedule
 * of ptreg_emicp (sigma2 lowered by a factor, max_iter, tol, the stop
 * reasons). Needs device/reduce.cl, pair/exp.cl and reg/emicp/emicp_weights.cl
 * before it (acc_t: double where the
 * device has it, float in the variant for devices without).
 *
 * The mapping: a work-group holds BATCH_PAIRS pairs, BATCH_TPP threads
 * per pair. In the E-step the pair's threads split its source points
 * (thread k takes points k, k + TPP, ...), each summing its points'
 * moments in order; the Horn step is done for pair s by thread s of the
 * group (the first BATCH_PAIRS threads, one warp on NVIDIA), which adds
 * its pair's TPP partials in order. Why so: the Jacobi solve is a few
 * thousand double operations per pair and iteration, on one thread per
 * pair; with one pair per group a warp would run it on 1 lane of 32, and
 * it would take twice the E-step's instructions for pairs of 32 points,
 * fifteen times for 12 (bench/NOTES.md, issue 14). With 32
 * pairs per group the Horn step keeps every lane of one warp busy while
 * the group's other warps wait at the barrier and other groups use the
 * SM. Everything is summed in a fixed order: the same bits on every run.
 *
 * -D options: WG = BATCH_PAIRS * BATCH_TPP; BATCH_CAP, the most source
 * or target points of a pair (local arrays are sized by it); BATCH_SHARED
 * 1 when every pair has the same target; the stop reasons' values
 * (STOP_MAX_ITERATIONS, STOP_CONVERGED, STOP_SIGMA_FINAL, STOP_TOO_FEW). */

#define BATCH_MOMENTS EMICP_MOMENTS

/* A target's numbers from the host (acc_t each): target_params[PARAM_WORDS
 * * pair + ...], one row for all pairs with BATCH_SHARED. With translation
 * each pair also has its source's centroid (source_params[3 pair + k]), the
 * moments' other reference point; rotation only, both are zero. */
#define PARAM_CENTER 0 /* the target's centroid (the E-step's origin) */
#define PARAM_REF_Q 3  /* the moments' reference point: the centroid again, or zero */
#define PARAM_SIGMA2_INIT 6
#define PARAM_SIGMA2_FINAL 7
#define PARAM_D02 8
#define PARAM_RADIUS 9
#define PARAM_WORDS 10

/* A pair's slot in local memory: its pose and the E-step's constants,
 * written by its Horn thread, read by its E-step threads. */
#define SLOT_T 0 /* rows 0..2 of the 4x4 */
#define SLOT_CENTER 12
#define SLOT_REF_P 15
#define SLOT_REF_Q 18
#define SLOT_OUTLIER 21 /* exp(-d0^2 / sigma^2) */
#define SLOT_WORDS 22

#if BATCH_SHARED
#define TARGET_STRIDE 0
#define TARGET_FLOATS (3 * BATCH_CAP)
#else
/* one float more than a pair's points: the pairs' rows start in
 * different banks, so a warp reading point i of 8 pairs is not serialised */
#define TARGET_STRIDE (3 * BATCH_CAP + 1)
#define TARGET_FLOATS (BATCH_PAIRS * TARGET_STRIDE)
#endif

#define JACOBI_SWEEPS 100
#if PTREG_FP64
#define JACOBI_TOL 1e-36 /* horn.c's */
#define SCALE_LIMIT 1000
#else
/* float's noise floor: (4 eps)^2; the exponent clamp keeps 2^-e normal */
#define JACOBI_TOL 2.2e-13f
#define SCALE_LIMIT 120
#endif

FN int is_finite(acc_t x) { return x - x == (acc_t)0; }

/* ---- the E-step ---- */

/* One source point's pair with its weighted target point, added to m with
 * ptreg_emicp's weights (emicp_weights.cl). */
FN void add_point(LOCAL const volatile acc_t *slot, const acc_t p[3], float se, float se2, const float sb[3],
                  acc_t m[BATCH_MOMENTS])
{
    acc_t center[3], ref_p[3], ref_q[3], q[3], lambda;
    const acc_t sums[3] = {sb[0], sb[1], sb[2]};
    for (int r = 0; r < 3; r++) {
        center[r] = slot[SLOT_CENTER + r];
        ref_p[r] = slot[SLOT_REF_P + r];
        ref_q[r] = slot[SLOT_REF_Q + r];
    }
    if (emicp_weight(se, se2, sums, slot[SLOT_OUTLIER], center, &lambda, q))
        moments_add(m, p, q, ref_p, ref_q, lambda);
}

/* The moments of source points first, first + TPP, ... of a pair: each
 * moved by T in double, rounded to float relative to the target's
 * centroid, then summed against every target point in float32. */
FN void e_step(GLOBAL const float *source, u32 first, u32 ns, LOCAL const float *target, u32 nt,
               LOCAL const volatile acc_t *slot, float neg, acc_t m[BATCH_MOMENTS])
{
    for (int c = 0; c < BATCH_MOMENTS; c++)
        m[c] = 0;
    for (u32 j = first; j < ns; j += BATCH_TPP) {
        const acc_t p[3] = {source[3 * j], source[3 * j + 1], source[3 * j + 2]};
        float r[3];
        for (int d = 0; d < 3; d++)
            r[d] = (float)(slot[SLOT_T + 4 * d] * p[0] + slot[SLOT_T + 4 * d + 1] * p[1] +
                           slot[SLOT_T + 4 * d + 2] * p[2] + slot[SLOT_T + 4 * d + 3] - slot[SLOT_CENTER + d]);
        float se = 0.0f, se2 = 0.0f, sb[3] = {0.0f, 0.0f, 0.0f};
        for (u32 i = 0; i < nt; i++) {
            const float bx = target[3 * i], by = target[3 * i + 1], bz = target[3 * i + 2];
            const float dx = r[0] - bx, dy = r[1] - by, dz = r[2] - bz;
            const float e = engine_exp((dx * dx + dy * dy + dz * dz) * neg);
            se += e;
            se2 += e * e;
            sb[0] += e * bx;
            sb[1] += e * by;
            sb[2] += e * bz;
        }
        add_point(slot, p, se, se2, sb, m);
    }
}

/* ---- Horn's solution (horn.c's arithmetic) ---- */

/* horn.c's exact scaling by a power of two: the largest |entry| into
 * [0.5, 1), the exponent clamped so that 2^-e is a normal number. */
FN void jacobi_scale(acc_t A[16])
{
    acc_t amax = 0;
    for (int i = 0; i < 16; i++)
        amax = fabs(A[i]) > amax ? fabs(A[i]) : amax;
    int e = 0;
    if (amax > 0 && is_finite(amax))
        frexp(amax, &e);
    e = e < -SCALE_LIMIT ? -SCALE_LIMIT : e > SCALE_LIMIT ? SCALE_LIMIT : e;
    const acc_t down = ldexp((acc_t)1, -e);
    for (int i = 0; i < 16; i++)
        A[i] *= down;
}

/* One rotation (horn.c's jacobi_rotation: two square roots and one
 * division; its rotate_symmetric: the diagonal pair, the zero, the other
 * rows and columns mirrored). p and q are constants once inlined, so A and
 * V stay in registers. */
FN void jacobi_rotate(acc_t A[16], acc_t V[16], int p, int q)
{
    const acc_t apq = A[p * 4 + q];
    if (apq * apq == (acc_t)0)
        return;
    const acc_t h = A[q * 5] - A[p * 5], ah = fabs(h);
    const acc_t r = SQRT(h * h + (acc_t)4 * apq * apq);
    const acc_t inv = (acc_t)1 / SQRT((acc_t)2 * r * (r + ah));
    const acc_t c = (ah + r) * inv;
    const acc_t s = (h >= (acc_t)0 ? (acc_t)2 * apq : (acc_t)-2 * apq) * inv;
    const acc_t app = A[p * 5], aqq = A[q * 5];
    const acc_t cc = c * c, ss = s * s, cs2 = (acc_t)2 * c * s;
    A[p * 5] = cc * app - cs2 * apq + ss * aqq;
    A[q * 5] = ss * app + cs2 * apq + cc * aqq;
    A[p * 4 + q] = A[q * 4 + p] = (acc_t)0;
    for (int k = 0; k < 4; k++) {
        if (k == p || k == q)
            continue;
        const acc_t akp = A[k * 4 + p], akq = A[k * 4 + q];
        A[k * 4 + p] = A[p * 4 + k] = c * akp - s * akq;
        A[k * 4 + q] = A[q * 4 + k] = s * akp + c * akq;
    }
    for (int k = 0; k < 4; k++) {
        const acc_t vkp = V[k * 4 + p], vkq = V[k * 4 + q];
        V[k * 4 + p] = c * vkp - s * vkq;
        V[k * 4 + q] = s * vkp + c * vkq;
    }
}

/* ptreg_eigen_symmetric's sweeps on a 4x4 (A comes out scaled: only the
 * order of its eigenvalues is used). */
FN void jacobi4(acc_t A[16], acc_t V[16])
{
    jacobi_scale(A);
    for (int i = 0; i < 16; i++)
        V[i] = i % 5 == 0 ? (acc_t)1 : (acc_t)0;
    for (int sweep = 0; sweep < JACOBI_SWEEPS; sweep++) {
        acc_t off = 0, diag = 0;
        for (int i = 0; i < 4; i++) {
            diag += A[i * 5] * A[i * 5];
            for (int j = i + 1; j < 4; j++)
                off += A[i * 4 + j] * A[i * 4 + j];
        }
        if (off <= (acc_t)JACOBI_TOL * diag || off == (acc_t)0)
            break;
        /* horn.c's round-robin order */
        jacobi_rotate(A, V, 0, 3);
        jacobi_rotate(A, V, 1, 2);
        jacobi_rotate(A, V, 1, 3);
        jacobi_rotate(A, V, 0, 2);
        jacobi_rotate(A, V, 2, 3);
        jacobi_rotate(A, V, 0, 1);
    }
}

/* Step i of ptreg_eigen_symmetric's selection sort of the eigenvalues e
 * (o: their columns): the first smallest of positions i..3 swapped into
 * position i. Scalars only: an array indexed by the chosen position would
 * live in local memory. */
#define SORT_TAKE(i, j)                                                                                               \
    if (e##j < low) {                                                                                                 \
        best = j;                                                                                                     \
        low = e##j;                                                                                                   \
    }
#define SORT_SWAP(i, j)                                                                                               \
    if (best == j) {                                                                                                  \
        const acc_t te = e##i;                                                                                        \
        const int to = o##i;                                                                                          \
        e##i = e##j, o##i = o##j;                                                                                     \
        e##j = te, o##j = to;                                                                                         \
    }

/* The column that ptreg_eigen_symmetric's selection sort puts last (ties
 * broken as it breaks them), its eigenvector the rotation's quaternion;
 * the identity when A is zero. The column is taken as a sum of the four
 * weighted by 1 and 0, which is exact for finite V (compilers turn a
 * choice among V's entries into an indexed load from local memory). */
FN void top_vector(const acc_t A[16], const acc_t V[16], acc_t q[4])
{
    acc_t e0 = A[0], e1 = A[5], e2 = A[10], e3 = A[15], low;
    int o0 = 0, o1 = 1, o2 = 2, o3 = 3, best;
    best = 0, low = e0;
    SORT_TAKE(0, 1) SORT_TAKE(0, 2) SORT_TAKE(0, 3)
    SORT_SWAP(0, 1) SORT_SWAP(0, 2) SORT_SWAP(0, 3)
    best = 1, low = e1;
    SORT_TAKE(1, 2) SORT_TAKE(1, 3)
    SORT_SWAP(1, 2) SORT_SWAP(1, 3)
    best = 2, low = e2;
    SORT_TAKE(2, 3)
    SORT_SWAP(2, 3)
    const int zero = fabs(e0) + fabs(e3) == (acc_t)0;
    const acc_t m0 = o3 == 0, m1 = o3 == 1, m2 = o3 == 2, m3 = o3 == 3;
    for (int k = 0; k < 4; k++) {
        const acc_t v = V[k * 4] * m0 + V[k * 4 + 1] * m1 + V[k * 4 + 2] * m2 + V[k * 4 + 3] * m3;
        q[k] = zero ? (k == 0 ? (acc_t)1 : (acc_t)0) : v;
    }
}

/* Horn's N from the moments: the centred cross-covariance, or for rotation
 * only the plain one (about the origin). Returns 0 when the moments carry
 * no weight or are not finite. */
FN int horn_matrix(u32 translation, const acc_t m[BATCH_MOMENTS], acc_t N[16], acc_t cp[3], acc_t cq[3])
{
    const acc_t w = m[0];
    acc_t S[9];
    for (int c = 0; c < 3; c++) {
        cp[c] = translation ? m[1 + c] / w : (acc_t)0;
        cq[c] = translation ? m[4 + c] / w : (acc_t)0;
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            S[3 * r + c] = translation ? m[7 + 3 * r + c] - w * cp[r] * cq[c] : m[7 + 3 * r + c];
    const acc_t xx = S[0], xy = S[1], xz = S[2], yx = S[3], yy = S[4], yz = S[5], zx = S[6], zy = S[7], zz = S[8];
    N[0] = xx + yy + zz, N[1] = yz - zy, N[2] = zx - xz, N[3] = xy - yx;
    N[4] = yz - zy, N[5] = xx - yy - zz, N[6] = xy + yx, N[7] = zx + xz;
    N[8] = zx - xz, N[9] = xy + yx, N[10] = -xx + yy - zz, N[11] = yz + zy;
    N[12] = xy - yx, N[13] = zx + xz, N[14] = yz + zy, N[15] = -xx - yy + zz;
    int ok = w > (acc_t)0 && is_finite(w);
    for (int i = 0; i < 16; i++)
        ok = ok && is_finite(N[i]);
    return ok;
}

/* The next pose from the moments (R from the top eigenvector, then t), as
 * ptreg_horn_solve / rotation_about_origin. Returns 0 (T not written) when
 * the moments carry no weight. */
FN int horn(u32 translation, LOCAL const acc_t *slot, const acc_t m[BATCH_MOMENTS], acc_t T[12])
{
    acc_t N[16], V[16], cp[3], cq[3], q[4];
    if (!horn_matrix(translation, m, N, cp, cq))
        return 0;
    jacobi4(N, V);
    top_vector(N, V, q);
    const acc_t n = SQRT(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    const acc_t w = q[0] / n, x = q[1] / n, y = q[2] / n, z = q[3] / n;
    const acc_t R[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                        2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                        2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
    for (int r = 0; r < 3; r++) {
        acc_t rp = 0;
        for (int c = 0; c < 3; c++) {
            T[4 * r + c] = R[3 * r + c];
            rp += R[3 * r + c] * (slot[SLOT_REF_P + c] + cp[c]);
        }
        T[4 * r + 3] = translation ? slot[SLOT_REF_Q + r] + cq[r] - rp : (acc_t)0;
    }
    return 1;
}

/* How far an update moved the pose (ptreg_emicp's measure, through
 * ptreg_transform_difference's arithmetic): the angle of A^-1 B in radians
 * plus its translation over r. */
FN acc_t pose_change(LOCAL const acc_t *A, const acc_t B[12], acc_t radius)
{
    acc_t M[12], D[12];
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            M[4 * r + c] = A[4 * c + r];
        M[4 * r + 3] = -(A[r] * A[3] + A[4 + r] * A[7] + A[8 + r] * A[11]);
    }
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) {
            /* the 4x4 product, B's last row (0 0 0 1) included */
            acc_t s = 0;
            for (int k = 0; k < 3; k++)
                s += M[4 * r + k] * B[4 * k + c];
            D[4 * r + c] = s + M[4 * r + 3] * (c == 3 ? (acc_t)1 : (acc_t)0);
        }
    const acc_t cosine = (acc_t)0.5 * (D[0] + D[5] + D[10] - (acc_t)1);
    const acc_t sx = D[9] - D[6], sy = D[2] - D[8], sz = D[4] - D[1];
    const acc_t sine = (acc_t)0.5 * SQRT(sx * sx + sy * sy + sz * sz);
    const acc_t angle_deg = atan2(sine, cosine) * (acc_t)(180.0 / 3.14159265358979323846);
    const acc_t trans = SQRT(D[3] * D[3] + D[7] * D[7] + D[11] * D[11]);
    return angle_deg * (acc_t)(3.14159265358979323846 / 180.0) + trans / radius;
}

/* ---- the schedule, kept by each pair's Horn thread ---- */

typedef struct pair_state {
    acc_t sigma2, sigma2_final, d02, radius;
    i32 iterations, stop;
    u32 live;
} pair_state;

/* Whether the pair runs another iteration (ptreg_emicp's checks before
 * each one); if so, the E-step's constants for the new sigma^2. */
FN void next_iteration(pair_state *s, u32 max_iter, LOCAL acc_t *slot, LOCAL float *neg)
{
    if (s->live && (u32)s->iterations >= max_iter)
        s->live = 0;
    if (s->live && s->sigma2 <= s->sigma2_final) {
        s->stop = STOP_SIGMA_FINAL;
        s->live = 0;
    }
    if (s->live) {
        *neg = (float)-((acc_t)0.5 / s->sigma2);
        slot[SLOT_OUTLIER] = exp(-s->d02 / s->sigma2);
    }
}

FN void begin_pair(GLOBAL const acc_t *target_params, GLOBAL const acc_t *source_params, u32 translation, u32 pair,
                   u32 count, u32 max_iter, pair_state *s, LOCAL acc_t *slot, LOCAL float *neg)
{
    const u32 at = pair < count ? pair : 0;
    GLOBAL const acc_t *pp = target_params + (BATCH_SHARED ? 0 : (size_t)PARAM_WORDS * at);
    for (int k = 0; k < 12; k++)
        slot[SLOT_T + k] = k % 5 == 0 ? (acc_t)1 : (acc_t)0;
    for (int k = 0; k < 3; k++) {
        slot[SLOT_CENTER + k] = pp[PARAM_CENTER + k];
        slot[SLOT_REF_P + k] = translation ? source_params[3 * (size_t)at + k] : (acc_t)0;
        slot[SLOT_REF_Q + k] = pp[PARAM_REF_Q + k];
    }
    s->sigma2 = pp[PARAM_SIGMA2_INIT];
    s->sigma2_final = pp[PARAM_SIGMA2_FINAL];
    s->d02 = pp[PARAM_D02];
    s->radius = pp[PARAM_RADIUS];
    s->iterations = 0;
    s->stop = STOP_MAX_ITERATIONS;
    s->live = pair < count;
    next_iteration(s, max_iter, slot, neg);
}

/* After an E-step: the pair's moments (its threads' partials in order),
 * Horn, the stop tests (ptreg_emicp's anneal). */
FN void finish_iteration(LOCAL const acc_t *partials, u32 translation, u32 max_iter, acc_t factor, acc_t tol,
                         pair_state *s, LOCAL acc_t *slot, LOCAL float *neg)
{
    acc_t m[BATCH_MOMENTS], next[12];
    for (int c = 0; c < BATCH_MOMENTS; c++)
        m[c] = 0;
    for (u32 k = 0; k < BATCH_TPP; k++)
        for (int c = 0; c < BATCH_MOMENTS; c++)
            m[c] += partials[k * BATCH_MOMENTS + c];
    if (!horn(translation, slot, m, next)) {
        s->stop = STOP_TOO_FEW;
        s->live = 0;
        return;
    }
    s->iterations++;
    /* the pose before the update is still in the slot */
    const acc_t change = tol > (acc_t)0 ? pose_change(slot + SLOT_T, next, s->radius) : (acc_t)0;
    for (int k = 0; k < 12; k++)
        slot[SLOT_T + k] = next[k];
    s->sigma2 *= factor;
    if (tol > (acc_t)0 && change < tol) {
        s->stop = STOP_CONVERGED;
        s->live = 0;
        return;
    }
    next_iteration(s, max_iter, slot, neg);
}

/* ---- the kernel ---- */

/* The pairs' targets into local memory, centred on their centroids
 * (float(point - centroid), packed by the host). */
FN void load_targets(GLOBAL const float *target, GLOBAL const u32 *target_offset, u32 count, u32 shared_points,
                     LOCAL float *local_target)
{
#if BATCH_SHARED
    (void)target_offset, (void)count;
    for (u32 w = LOCAL_ID_X; w < 3 * shared_points; w += WG)
        local_target[w] = target[w];
#else
    (void)shared_points;
    const u32 slot = LOCAL_ID_X / BATCH_TPP, pair = GROUP_ID_X * BATCH_PAIRS + slot;
    if (pair < count) {
        const u32 first = target_offset[pair], floats = 3 * (target_offset[pair + 1] - first);
        for (u32 w = LOCAL_ID_X % BATCH_TPP; w < floats; w += BATCH_TPP)
            local_target[slot * TARGET_STRIDE + w] = target[3 * first + w];
    }
#endif
}

/* One group registers pairs GROUP_ID_X * BATCH_PAIRS ...: transform[16
 * pair ...] (the 4x4, row-major: the caller's layout), iterations[pair],
 * stop[pair]. Offsets count points; with BATCH_SHARED the target has
 * shared_points points and target_offset is not read; source_params is
 * read with translation only. */
KERNEL ptreg_batch_emicp(GLOBAL const float *source, GLOBAL const u32 *source_offset, GLOBAL const float *target,
                         GLOBAL const u32 *target_offset, GLOBAL const acc_t *target_params,
                         GLOBAL const acc_t *source_params, u32 count, u32 shared_points, u32 translation,
                         u32 max_iter, acc_t factor, acc_t tol, GLOBAL acc_t *transform, GLOBAL i32 *iterations,
                         GLOBAL i32 *stop)
{
    SHARED acc_t partials[WG * BATCH_MOMENTS];
    SHARED acc_t slots[BATCH_PAIRS * SLOT_WORDS];
    SHARED float negs[BATCH_PAIRS];
    SHARED u32 live[BATCH_PAIRS];
    SHARED float targets[TARGET_FLOATS];
    const u32 t = LOCAL_ID_X, slot = t / BATCH_TPP, pair = GROUP_ID_X * BATCH_PAIRS + slot;
    /* the pair this thread's E-step serves, and its points */
    const u32 mine = pair < count;
    const u32 s0 = mine ? source_offset[pair] : 0, ns = mine ? source_offset[pair + 1] - s0 : 0;
#if BATCH_SHARED
    const u32 nt = shared_points;
#else
    const u32 nt = mine ? target_offset[pair + 1] - target_offset[pair] : 0;
#endif
    load_targets(target, target_offset, count, shared_points, targets);
    /* thread s < BATCH_PAIRS keeps pair s's schedule */
    const u32 horn_pair = GROUP_ID_X * BATCH_PAIRS + t;
    pair_state state;
    if (t < BATCH_PAIRS) {
        begin_pair(target_params, source_params, translation, horn_pair, count, max_iter, &state,
                   slots + t * SLOT_WORDS, &negs[t]);
        live[t] = state.live;
    }
    BARRIER();
    for (;;) {
        /* Every thread reads the same flags between the same two barriers,
         * so the loop ends for the whole group at once: no barrier is
         * skipped by some threads and reached by others. */
        u32 any = 0;
        for (u32 s = 0; s < BATCH_PAIRS; s++)
            any |= live[s];
        if (!any)
            break;
        if (live[slot]) {
            acc_t m[BATCH_MOMENTS];
            e_step(source + 3 * (size_t)s0, t % BATCH_TPP, ns, targets + slot * TARGET_STRIDE, nt,
                   slots + slot * SLOT_WORDS, negs[slot], m);
            for (int c = 0; c < BATCH_MOMENTS; c++)
                partials[t * BATCH_MOMENTS + c] = m[c];
        }
        BARRIER();
        if (t < BATCH_PAIRS && state.live) {
            finish_iteration(partials + t * BATCH_TPP * BATCH_MOMENTS, translation, max_iter, factor, tol, &state,
                             slots + t * SLOT_WORDS, &negs[t]);
            live[t] = state.live;
        }
        BARRIER();
    }
    if (t < BATCH_PAIRS && horn_pair < count) {
        for (int k = 0; k < 16; k++)
            transform[16 * (size_t)horn_pair + k] =
                k < 12 ? slots[t * SLOT_WORDS + SLOT_T + k] : k == 15 ? (acc_t)1 : (acc_t)0;
        iterations[horn_pair] = state.iterations;
        stop[horn_pair] = state.stop;
    }
}
