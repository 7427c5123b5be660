/* Delaunay-graph walks on a device (the aerial-refuelling study's method),
 * one thread per query, over the CPU's walk rows (delaunay_impl.h) uploaded
 * once: from a start point, step to the neighbor q is most beyond the
 * bisector of, until none is; the Voronoi certificate accepts the stop or
 * the k-d tree (kdtree.cl) finishes from it, so every answer is exact. The
 * arithmetic is the CPU's generic path, operation for operation, so the
 * walks (steps, certificates, kept answers) match the CPU's too. Needs
 * device/reduce.cl and kdtree.cl before it in the program. */

#define DT_ROUNDING 4e-7f
#define DT_GAP 1e-5f
#define DT_MAX_STEPS 100000u
/* From the host (nn_device.h): WALK_FIXED, WALK_KDANN and WALK_SEED, the
 * walk's start (walk_start); info[i], a walk's record: steps under
 * WALK_STEPS_MASK, the flags WALK_FALLBACK (the tree finished it) and
 * WALK_KEPT (the last answer kept without a walk); MEM_WORDS per query of
 * memory: dt_memory's q[3], margin, p[3], scale. */

typedef struct dt_graph {
    GLOBAL const u32 *rows;   /* heads of DT_HEAD_WORDS words, then blocks of DT_BLOCK_WORDS */
    GLOBAL const u32 *row_at; /* per slot: its row in DT_HEAD_WORDS units, or NO_NEIGHBOR */
    GLOBAL const u32 *nbr;    /* the neighbors' slots */
} dt_graph;

FN GLOBAL const u32 *dt_row(const dt_graph *g, u32 slot) { return g->rows + (size_t)g->row_at[slot] * DT_HEAD_WORDS; }

typedef struct dt_stop {
    int certain;
    float margin, scale;
} dt_stop;

/* One step's test over the edges of the row, u = q - x_i (dt_next). */
FN u32 dt_next(const dt_graph *g, GLOBAL const u32 *row, const float u[3], dt_stop *stop)
{
    u32 degree = row[DT_HEAD_DEGREE], first = row[DT_HEAD_NBR_FIRST];
    u32 blocks = (degree + DT_LANES - 1) / DT_LANES;
    float ulen = SQRTF((u[0] * u[0] + u[1] * u[1]) + u[2] * u[2]);
    u32 next = NO_NEIGHBOR;
    float best_c = -INF_F, delta = INF_F, half_min = INF_F;
    for (u32 k = 0; k < blocks * DT_LANES; k++) {
        GLOBAL const u32 *b = row + DT_HEAD_WORDS + (k / DT_LANES) * DT_BLOCK_WORDS;
        u32 l = k % DT_LANES;
        float half_len = AS_FLOAT(b[DT_BLOCK_HALF + l]); /* "half" is a type in OpenCL C */
        float c = (u[0] * AS_FLOAT(b[DT_BLOCK_EX + l]) + u[1] * AS_FLOAT(b[DT_BLOCK_EY + l])) +
                  u[2] * AS_FLOAT(b[DT_BLOCK_EZ + l]);
        if (c > half_len && c > best_c) {
            best_c = c;
            next = g->nbr[first + k];
        }
        float gap = (half_len * (1.0f - DT_ROUNDING) - c) - DT_ROUNDING * ulen;
        delta = gap < delta ? gap : delta;
        half_min = half_len < half_min ? half_len : half_min;
    }
    stop->margin = delta;
    stop->scale = 4.0f * half_min;
    stop->certain = next == NO_NEIGHBOR && blocks && delta > 0.0f && stop->scale * delta > DT_GAP * ulen * ulen;
    return next;
}

/* Walks from slot s while a neighbor is closer (its float distance must
 * drop too, so rounding cannot make the walk cycle). */
FN u32 dt_walk(const dt_graph *g, const float q[3], u32 s, float *d, u32 *steps, dt_stop *stop)
{
    GLOBAL const u32 *row = dt_row(g, s);
    *d = kd_dist2(q[0], q[1], q[2], AS_FLOAT(row[DT_HEAD_X]), AS_FLOAT(row[DT_HEAD_Y]), AS_FLOAT(row[DT_HEAD_Z]));
    stop->certain = 0;
    for (*steps = 0; *steps < DT_MAX_STEPS; ++*steps) {
        float u[3] = {q[0] - AS_FLOAT(row[DT_HEAD_X]), q[1] - AS_FLOAT(row[DT_HEAD_Y]),
                      q[2] - AS_FLOAT(row[DT_HEAD_Z])};
        u32 next = dt_next(g, row, u, stop);
        if (next == NO_NEIGHBOR)
            break;
        GLOBAL const u32 *nrow = dt_row(g, next);
        float dn = kd_dist2(q[0], q[1], q[2], AS_FLOAT(nrow[DT_HEAD_X]), AS_FLOAT(nrow[DT_HEAD_Y]),
                            AS_FLOAT(nrow[DT_HEAD_Z]));
        if (!(dn < *d)) {
            stop->certain = 0;
            break;
        }
        s = next;
        row = nrow;
        *d = dn;
    }
    return s;
}

/* The last answer still holds: q moved less than its margin inside the
 * answer's Voronoi cell (dt_still_certain). */
FN int dt_still_certain(GLOBAL const float *mem, const float q[3], float d, float *margin)
{
    float dx = q[0] - mem[0], dy = q[1] - mem[1], dz = q[2] - mem[2];
    float moved = SQRTF((dx * dx + dy * dy) + dz * dz);
    *margin = mem[3] * (1.0f - DT_ROUNDING) - moved * (1.0f + DT_ROUNDING);
    return *margin > 0.0f && mem[7] * *margin > DT_GAP * d * (1.0f + DT_ROUNDING);
}

/* nearest[i]: with WALK_SEED the seed in, the answer (a slot) out. memory
 * (MEM_WORDS per query) is used when use_memory is set: seeded passes
 * reuse an answer whose query moved less than its margin. info: the
 * walk's record (steps and flags). */
KERNEL ptreg_nn_walk(GLOBAL const float *queries, u32 n, u32 start, u32 use_memory, GLOBAL u32 *nearest,
                     GLOBAL float *dist2, GLOBAL float *memory, GLOBAL u32 *info, GLOBAL const u32 *rows,
                     GLOBAL const u32 *row_at, GLOBAL const u32 *nbr, u32 graph_start, GLOBAL const u32 *nodes,
                     GLOBAL const u32 *cells, GLOBAL const u32 *parent, GLOBAL const u32 *leaves,
                     GLOBAL const u32 *chunks, GLOBAL const u32 *index)
{
    u32 i = GLOBAL_ID_X;
    if (i >= n)
        return;
    kd_tree t = {nodes, cells, parent, leaves, chunks, index};
    dt_graph g = {rows, row_at, nbr};
    GLOBAL const float *qi = queries + 3 * (size_t)i;
    float q[3] = {qi[0], qi[1], qi[2]};
    GLOBAL float *mem = memory + (size_t)i * MEM_WORDS;
    u32 seed = nearest[i];
    u32 s = start == WALK_SEED ? seed : NO_NEIGHBOR;
    if (start == WALK_KDANN)
        s = kd_descend_start(&t, q);
    if (s == NO_NEIGHBOR || row_at[s] == NO_NEIGHBOR)
        s = graph_start;
    float d;
    if (use_memory && start == WALK_SEED && s == seed && mem[3] > 0.0f) {
        float margin;
        d = kd_dist2(q[0], q[1], q[2], mem[4], mem[5], mem[6]);
        if (dt_still_certain(mem, q, d, &margin)) {
            mem[0] = q[0], mem[1] = q[1], mem[2] = q[2], mem[3] = margin;
            dist2[i] = d;
            info[i] = WALK_KEPT;
            return;
        }
    }
    u32 steps;
    dt_stop stop;
    s = dt_walk(&g, q, s, &d, &steps, &stop);
    if (!stop.certain)
        kd_nearest(&t, q, s, INF_F, &s, &d);
    if (use_memory && stop.certain) {
        GLOBAL const u32 *row = dt_row(&g, s);
        mem[0] = q[0], mem[1] = q[1], mem[2] = q[2], mem[3] = stop.margin;
        mem[4] = AS_FLOAT(row[DT_HEAD_X]), mem[5] = AS_FLOAT(row[DT_HEAD_Y]), mem[6] = AS_FLOAT(row[DT_HEAD_Z]);
        mem[7] = stop.scale;
    } else if (use_memory) {
        mem[3] = -1.0f;
    }
    nearest[i] = s;
    dist2[i] = d;
    info[i] = steps | (stop.certain ? 0u : WALK_FALLBACK);
}

/* ---- walk statistics: ptreg_walk_stats of a pass ---- */

/* WALK_FIELDS: queries, steps, max_steps, fallbacks, kept, the histogram
 * of WALK_HISTOGRAM bins */

/* Per group: queries, steps, the longest walk, fallbacks, kept answers and
 * the steps' histogram (ptreg_walk_stats) of the walks' records. */
KERNEL ptreg_walk_partials(GLOBAL const u32 *info, u32 n, GLOBAL u64 *partials)
{
    SHARED u64 red[WG];
    SHARED u32 bins[WALK_HISTOGRAM];
    u32 t = LOCAL_ID_X;
    for (u32 b = t; b < WALK_HISTOGRAM; b += WG)
        bins[b] = 0;
    BARRIER();
    u64 queries = 0, steps = 0, longest = 0, fallbacks = 0, kept = 0;
    /* in 64 bits: the last groups' threads start past n, and near 2^32
     * queries a 32-bit start would wrap back below it */
    u64 first = ((u64)GROUP_ID_X * WG + t) * ITEMS;
    for (u32 k = 0; k < ITEMS; k++) {
        u64 i = first + k;
        if (i >= n)
            break;
        u32 w = info[i], s = w & WALK_STEPS_MASK;
        queries++;
        steps += s;
        longest = MAX_U32(longest, (u64)s);
        fallbacks += (w & WALK_FALLBACK) != 0;
        kept += (w & WALK_KEPT) != 0;
        LOCAL_ATOMIC_INC(&bins[MIN_U32(s, WALK_HISTOGRAM - 1)]);
    }
    u64 sums[5];
    sums[0] = group_sum_u64(red, queries, 0);
    sums[1] = group_sum_u64(red, steps, 0);
    sums[2] = group_sum_u64(red, longest, 1);
    sums[3] = group_sum_u64(red, fallbacks, 0);
    sums[4] = group_sum_u64(red, kept, 0);
    GLOBAL u64 *out = partials + (size_t)GROUP_ID_X * WALK_FIELDS;
    if (t == 0)
        for (u32 f = 0; f < 5; f++)
            out[f] = sums[f];
    for (u32 b = t; b < WALK_HISTOGRAM; b += WG)
        out[5 + b] = bins[b];
}

/* The groups' walk statistics added up (the longest walk: the largest),
 * into out[offset ...]. One group. */
KERNEL ptreg_walk_total(GLOBAL const u64 *partials, u32 groups, GLOBAL u64 *out, u32 offset)
{
    SHARED u64 red[WG];
    u32 t = LOCAL_ID_X, run = (groups + WG - 1) / WG;
    for (u32 f = 0; f < WALK_FIELDS; f++) {
        u64 s = 0;
        for (u32 g = t * run; g < (t + 1) * run && g < groups; g++)
            s = f == 2 ? MAX_U32(s, partials[(size_t)g * WALK_FIELDS + f])
                       : s + partials[(size_t)g * WALK_FIELDS + f];
        u64 total = group_sum_u64(red, s, f == 2);
        if (t == 0)
            out[offset + f] = total;
    }
}
