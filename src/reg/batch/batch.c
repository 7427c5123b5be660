/* Many small EM-ICP registrations in one call (batch.h): pairs packed W to
 * a block, one pair per lane of the CPU kernel (batch_kernels_isa.c),
 * blocks spread over threads; and the plain path, one pair at a time, that
 * the tests hold the kernel to. Both are the CPU's engine (batch_impl.h);
 * a call chooses its engine once (this or the device's, batch_device.c)
 * and ptreg_batch_register runs the pairs on it a chunk at a time. */
#include "ptreg/batch.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reg/batch/batch_kernels.h"
#include "ptreg/emicp.h"
#include "reg/batch/batch_impl.h"
#include "reg/emicp/emicp_options.h"
#include "core/numeric.h"

static const ptreg_option batch_rows[] = {EMICP_SCHEDULE_ROWS(ptreg_batch_options)};
OPTION_TABLE(ptreg_batch_option_table, "batch", ptreg_batch_options, ptreg_batch_options_default, batch_rows)

void ptreg_batch_options_default(ptreg_batch_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->translation = 1;
    opt->sigma_factor = 0.9;
    opt->d02 = -1.0;
    opt->max_iter = 1000;
    opt->tol = 1e-7;
}

typedef batch_setup pair_setup;

/* ---- the lanes ---- */

/* The buffers of one block, sized for the block's largest pair. */
typedef struct block_buffers {
    float *src, *smask, *tgt, *tmask, *shared;
    size_t ns, nt;
} block_buffers;

static void buffers_free(block_buffers *bb)
{
    free(bb->src);
    free(bb->smask);
    free(bb->tgt);
    free(bb->tmask);
    memset(bb, 0, sizeof *bb);
}

static int buffers_reserve(block_buffers *bb, size_t ns, size_t nt, int W, int per_lane_target)
{
    if (ns > bb->ns || (per_lane_target && nt > bb->nt)) {
        buffers_free(bb);
        bb->ns = ns, bb->nt = nt;
        bb->src = malloc(3 * ns * (size_t)W * sizeof(float));
        bb->smask = malloc(ns * (size_t)W * sizeof(float));
        if (per_lane_target) {
            bb->tgt = malloc(3 * nt * (size_t)W * sizeof(float));
            bb->tmask = malloc(nt * (size_t)W * sizeof(float));
        }
    }
    return bb->src && bb->smask && (!per_lane_target || (bb->tgt && bb->tmask));
}

/* Lane l's source points, padded with masked copies of its first point. */
static void pack_source(const ptreg_pair_set *p, size_t pair, int l, int W, size_t ns, block_buffers *bb)
{
    const float *s = batch_source_of(p, pair);
    const size_t n = batch_source_points(p, pair);
    for (size_t j = 0; j < ns; j++) {
        const size_t from = j < n ? j : 0;
        for (int c = 0; c < 3; c++)
            bb->src[(3 * j + (size_t)c) * (size_t)W + (size_t)l] = s[3 * from + (size_t)c];
        bb->smask[j * (size_t)W + (size_t)l] = j < n ? 1.0f : 0.0f;
    }
}

/* A target as the pair engine stores it: float(point - centroid). */
static void pack_target_lane(const ptreg_pair_set *p, size_t pair, const double c[3], int l, int W, size_t nt,
                             block_buffers *bb)
{
    const float *t = batch_target_of(p, pair);
    const size_t n = batch_target_points(p, pair);
    for (size_t i = 0; i < nt; i++) {
        const size_t from = i < n ? i : 0;
        for (int k = 0; k < 3; k++)
            bb->tgt[(3 * i + (size_t)k) * (size_t)W + (size_t)l] = (float)(t[3 * from + (size_t)k] - c[k]);
        bb->tmask[i * (size_t)W + (size_t)l] = i < n ? 1.0f : 0.0f;
    }
}

static void set_lane(batch_block *b, int l, const pair_setup *s, int translation)
{
    for (int k = 0; k < 3; k++) {
        b->center[k][l] = s->target_c[k];
        b->ref_p[k][l] = translation ? s->source_c[k] : 0.0;
        b->ref_q[k][l] = translation ? s->target_c[k] : 0.0;
    }
    b->sigma2_init[l] = s->sigma2_init;
    b->sigma2_final[l] = s->sigma2_final;
    b->d02[l] = s->d02;
    b->radius[l] = s->radius;
    for (int k = 0; k < 12; k++)
        b->T[k][l] = k % 5 == 0 ? 1.0 : 0.0;
}

/* The lanes left over in a block run a copy of its first pair. */
typedef struct batch_job {
    const ptreg_pair_set *p;
    size_t first, end; /* the pairs of this run */
    const ptreg_batch_options *o;
    const pair_setup *setup;
    const float *shared_target; /* centred, when the target is shared */
    const batch_cpu_kernel_table *k;
    int W;
    double *transform;
    int *iterations, *stop;
    double *terms; /* per block */
} batch_job;

static int run_block(const batch_job *job, size_t first, block_buffers *bb)
{
    const ptreg_pair_set *p = job->p;
    const int W = job->W;
    const size_t lanes = job->end - first < (size_t)W ? job->end - first : (size_t)W;
    size_t ns = 0, nt = 0;
    for (size_t l = 0; l < lanes; l++) {
        ns = batch_source_points(p, first + l) > ns ? batch_source_points(p, first + l) : ns;
        nt = batch_target_points(p, first + l) > nt ? batch_target_points(p, first + l) : nt;
    }
    const int per_lane = p->target_offset != NULL;
    if (!buffers_reserve(bb, ns, nt, W, per_lane))
        return -1;
    batch_block b;
    memset(&b, 0, sizeof b);
    b.lanes = (int)lanes, b.width = W, b.ns = ns, b.nt = nt;
    b.rotation_only = !job->o->translation;
    b.factor = job->o->sigma_factor, b.tol = job->o->tol, b.max_iter = job->o->max_iter;
    for (int l = 0; l < W; l++) {
        const size_t pair = first + ((size_t)l < lanes ? (size_t)l : 0);
        pack_source(p, pair, l, W, ns, bb);
        if (per_lane)
            pack_target_lane(p, pair, job->setup[pair].target_c, l, W, nt, bb);
        set_lane(&b, l, &job->setup[pair], job->o->translation);
    }
    b.src = bb->src;
    b.smask = bb->smask;
    b.shared_target = !per_lane;
    b.tgt = per_lane ? bb->tgt : job->shared_target;
    b.tmask = per_lane ? bb->tmask : NULL;
    job->k->block(&b);
    double terms = 0.0;
    for (size_t l = 0; l < lanes; l++) {
        double *T = job->transform + 16 * (first + l);
        for (int k = 0; k < 12; k++)
            T[k] = b.T[k][l];
        T[12] = T[13] = T[14] = 0.0, T[15] = 1.0;
        if (job->iterations)
            job->iterations[first + l] = b.iterations[l];
        if (job->stop)
            job->stop[first + l] = b.stop[l];
        terms += (double)batch_source_points(p, first + l) * (double)batch_target_points(p, first + l) *
                 b.iterations[l];
    }
    job->terms[(first - job->first) / (size_t)W] = terms;
    return 0;
}

static int run_blocks(const batch_job *job)
{
    const long blocks = (long)((job->end - job->first + (size_t)job->W - 1) / (size_t)job->W);
    int failed = 0;
#pragma omp parallel num_threads(ptreg_get_num_threads()) reduction(| : failed)
    {
        block_buffers bb = {0};
#pragma omp for schedule(dynamic, 4)
        for (long blk = 0; blk < blocks; blk++)
            failed |= run_block(job, job->first + (size_t)blk * (size_t)job->W, &bb);
        buffers_free(&bb);
    }
    return failed;
}

/* ---- the plain path: one pair at a time ---- */

/* Horn's rotation about the origin: the top eigenvector of the matrix of
 * the uncentred cross-covariance. */
static void rotation_about_origin(const ptreg_moments *m, double T[16])
{
    const double *S = m->spq;
    const double xx = S[0], xy = S[1], xz = S[2], yx = S[3], yy = S[4], yz = S[5], zx = S[6], zy = S[7], zz = S[8];
    const double N[16] = {xx + yy + zz, yz - zy, zx - xz,       xy - yx, yz - zy, xx - yy - zz, xy + yx, zx + xz,
                          zx - xz,      xy + yx, -xx + yy - zz, yz + zy, xy - yx, zx + xz,      yz + zy, -xx - yy + zz};
    double eval[4], V[16], R[9];
    ptreg_eigen_symmetric(N, 4, eval, V);
    double q[4] = {V[3], V[7], V[11], V[15]};
    if (fabs(eval[0]) + fabs(eval[3]) == 0.0)
        q[0] = 1.0, q[1] = q[2] = q[3] = 0.0;
    ptreg_quaternion_to_matrix(q, R);
    ptreg_transform_identity(T);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            T[4 * r + c] = R[3 * r + c];
}

/* One E-step and M-step of ptreg_emicp with plain arithmetic: libm's expf,
 * no fused multiply-add. Returns 0 when no point has any weight. */
static int plain_iteration(const float *src, size_t n, const float *tgt, size_t m, const pair_setup *s, double sigma2,
                           int translation, double T[16])
{
    const float neg = (float)-(0.5 / sigma2);
    const double outlier = exp(-s->d02 / sigma2);
    ptreg_moments mom;
    ptreg_moments_init(&mom, translation ? s->source_c : NULL, translation ? s->target_c : NULL);
    for (size_t j = 0; j < n; j++) {
        double moved[3];
        float r[3];
        for (int k = 0; k < 3; k++) {
            moved[k] = T[4 * k] * src[3 * j] + T[4 * k + 1] * src[3 * j + 1] + T[4 * k + 2] * src[3 * j + 2] +
                       T[4 * k + 3];
            r[k] = (float)(moved[k] - s->target_c[k]);
        }
        float se = 0, se2 = 0, sb[3] = {0, 0, 0};
        for (size_t i = 0; i < m; i++) {
            float b[3];
            for (int k = 0; k < 3; k++)
                b[k] = (float)(tgt[3 * i + k] - s->target_c[k]);
            const float dx = r[0] - b[0], dy = r[1] - b[1], dz = r[2] - b[2];
            const float e = expf((dx * dx + dy * dy + dz * dz) * neg);
            se += e, se2 += e * e;
            for (int k = 0; k < 3; k++)
                sb[k] += e * b[k];
        }
        const double c = (double)se2 + outlier, p[3] = {src[3 * j], src[3 * j + 1], src[3 * j + 2]};
        if (c < 1e-6) {
            ptreg_moments_add(&mom, p, s->target_c, 1.0);
        } else if (se > 0) {
            const double q[3] = {(sb[0] + s->target_c[0] * se) / se, (sb[1] + s->target_c[1] * se) / se,
                                 (sb[2] + s->target_c[2] * se) / se};
            ptreg_moments_add(&mom, p, q, se / sqrt(c));
        }
    }
    if (!(mom.w > 0))
        return 0;
    if (!translation)
        rotation_about_origin(&mom, T);
    else if (ptreg_horn_solve(&mom, T, NULL, NULL))
        return 0;
    return 1;
}

static void plain_pair(const ptreg_pair_set *p, size_t i, const pair_setup *s, const ptreg_batch_options *o,
                       double T[16], int *iterations, int *stop)
{
    double sigma2 = s->sigma2_init;
    ptreg_transform_identity(T);
    *iterations = 0;
    *stop = PTREG_STOP_MAX_ITERATIONS;
    while (*iterations < o->max_iter) {
        if (sigma2 <= s->sigma2_final) {
            *stop = PTREG_STOP_SIGMA_FINAL;
            return;
        }
        double next[16], angle_deg, trans;
        memcpy(next, T, sizeof next);
        if (!plain_iteration(batch_source_of(p, i), batch_source_points(p, i), batch_target_of(p, i),
                             batch_target_points(p, i), s, sigma2, o->translation, next)) {
            *stop = PTREG_STOP_TOO_FEW_PAIRS;
            return;
        }
        ++*iterations;
        ptreg_transform_difference(T, next, &angle_deg, &trans);
        memcpy(T, next, sizeof next);
        sigma2 *= o->sigma_factor;
        if (o->tol > 0 && angle_deg * (3.14159265358979323846 / 180.0) + trans / s->radius < o->tol) {
            *stop = PTREG_STOP_CONVERGED;
            return;
        }
    }
}

/* ---- the CPU's engine ---- */

static ptreg_status setup_all(const ptreg_pair_set *p, const ptreg_batch_options *o, pair_setup *setup,
                              ptreg_error *err)
{
    for (size_t i = 0; i < p->count; i++)
        if (!batch_setup_pair(p, i, o, &setup[i]))
            return batch_no_extent(i, err);
    return PTREG_OK;
}

/* The CPU's run: this CPU's kernels, every pair's setup, a shared target
 * centred once. */
typedef struct cpu_run {
    const ptreg_pair_set *p;
    const ptreg_batch_options *o;
    const batch_cpu_kernel_table *k;
    int W;
    pair_setup *setup;
    double *terms; /* per block */
    float *shared;
} cpu_run;

static void cpu_close(void *ctx)
{
    cpu_run *c = ctx;
    free(c->setup);
    free(c->terms);
    free(c->shared);
    free(c);
}

static ptreg_status cpu_open(const ptreg_pair_set *p, const ptreg_batch_options *o, const ptreg_device *on, void **ctx,
                             const char **isa, ptreg_error *err)
{
    (void)on;
    const isa_level level = cpu_isa_level();
    cpu_run *c = calloc(1, sizeof *c);
    if (!c)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory for %zu pairs", p->count);
    c->p = p, c->o = o;
    c->k = batch_cpu_kernels_for(level);
    c->W = c->k->lanes();
    c->setup = malloc((p->count ? p->count : 1) * sizeof *c->setup);
    c->terms = calloc(p->count / (size_t)c->W + 1, sizeof *c->terms);
    ptreg_status st = PTREG_OK;
    if (!c->setup || !c->terms)
        st = ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory for %zu pairs", p->count);
    st = st ? st : setup_all(p, o, c->setup, err);
    if (!st && p->count && !p->target_offset) {
        if (!(c->shared = malloc(3 * p->target_points * sizeof *c->shared)))
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory");
        for (size_t i = 0; c->shared && i < 3 * p->target_points; i++)
            c->shared[i] = (float)(p->target[i] - c->setup[0].target_c[i % 3]);
    }
    if (st) {
        cpu_close(c);
        return st;
    }
    *isa = o->reference ? "reference" : isa_level_name(level);
    *ctx = c;
    return PTREG_OK;
}

/* Pairs first .. first + n - 1: the reference loop one pair at a time, or
 * their blocks over the threads; the work summed in pair (block) order. */
static ptreg_status cpu_pairs(void *ctx, size_t first, size_t n, double *transform, int *iterations, int *stop,
                              double *terms, double *kernel_ms, ptreg_error *err)
{
    const cpu_run *c = ctx;
    const ptreg_pair_set *p = c->p;
    (void)kernel_ms;
    if (c->o->reference) {
        for (size_t i = first; i < first + n; i++) {
            int it, why;
            plain_pair(p, i, &c->setup[i], c->o, transform + 16 * i, &it, &why);
            if (iterations)
                iterations[i] = it;
            if (stop)
                stop[i] = why;
            *terms += (double)batch_source_points(p, i) * (double)batch_target_points(p, i) * it;
        }
        return PTREG_OK;
    }
    batch_job job = {p, first, first + n, c->o, c->setup, c->shared, c->k, c->W, transform, iterations, stop, c->terms};
    if (run_blocks(&job))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory for a block of pairs");
    for (size_t b = 0; b < (n + (size_t)c->W - 1) / (size_t)c->W; b++)
        *terms += c->terms[b];
    return PTREG_OK;
}

/* Every option, pairs of any size, all in one run (its blocks spread over
 * the threads). */
static const batch_engine batch_cpu_engine = {
    .base = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL},
    .max_points = 0,
    .chunk = SIZE_MAX,
    .open = cpu_open,
    .pairs = cpu_pairs,
    .close = cpu_close,
};

/* ---- the entry point ---- */

static void fill_stats(const ptreg_pair_set *p, double t0, double pair_terms, const char *isa, double kernel_ms,
                       ptreg_batch_stats *stats)
{
    stats->kernel_ms = kernel_ms;
    stats->pairs = p->count;
    stats->pair_terms = pair_terms;
    stats->time_ms = ptreg_time_ms() - t0;
    stats->pairs_per_s = stats->time_ms > 0 ? (double)p->count / (stats->time_ms * 1e-3) : 0.0;
    stats->gpts = stats->time_ms > 0 ? pair_terms / (stats->time_ms * 1e-3) / 1e9 : 0.0;
    stats->isa = isa;
}

/* Whether a GPU the device resolved to takes these pairs (at most max
 * points a side). Pairs over its cap are an error when a device was asked
 * for (in the options or by PTREG_DEVICE); auto then means the CPU. */
static ptreg_status device_takes(const ptreg_pair_set *p, const ptreg_batch_options *o, size_t max,
                                 const ptreg_device *on, int *takes, ptreg_error *err)
{
    const size_t largest = batch_largest_pair(p);
    const char *env = getenv("PTREG_DEVICE");
    *takes = largest <= max;
    if (*takes || (o->device.backend == PTREG_BACKEND_AUTO && !(env && *env)))
        return PTREG_OK;
    size_t pair = 0;
    while (batch_source_points(p, pair) != largest && batch_target_points(p, pair) != largest)
        pair++;
    char name[32];
    return ptreg_error_set(err, PTREG_ERR_ARG,
                           "batch on %s: pair %zu has %zu source and %zu target points; the device path takes at "
                           "most %zu per pair (PTREG_BATCH_DEVICE_MAX_POINTS): run it on the CPU",
                           ptreg_device_format(on, name, sizeof name), pair, batch_source_points(p, pair),
                           batch_target_points(p, pair), max);
}

static const engine *const batch_engines[] = {&batch_cpu_engine.base, &batch_device_engine.base};

/* The device the options name and the engine that runs them there. */
static ptreg_status batch_choose(const ptreg_batch_options *o, ptreg_device *on, const batch_engine **chosen,
                                 ptreg_error *err)
{
    const engine *e = NULL;
    const ptreg_status st = engine_choose(batch_engines, 2, &o->device, o, "batch", on, &e, err);
    /* every engine in the list is a batch_engine, its base first */
    *chosen = (const batch_engine *)e;
    return st;
}

ptreg_status ptreg_batch_resolve_device(const ptreg_batch_options *o, ptreg_device *on, ptreg_error *err)
{
    const batch_engine *unused;
    return batch_choose(o, on, &unused, err);
}

/* The one choice a call makes: the engine for the options, then whether
 * it takes these pairs. An engine with a cap (a device's) takes some pairs
 * of at most max_points a side; no pairs, or pairs over the cap on a
 * device that auto chose, run on the CPU's. */
static ptreg_status batch_choose_for(const ptreg_pair_set *p, const ptreg_batch_options *o, ptreg_device *on,
                                     const batch_engine **chosen, ptreg_error *err)
{
    ptreg_status st = batch_choose(o, on, chosen, err);
    if (st || !(*chosen)->max_points)
        return st;
    int takes = 0;
    if (p->count)
        st = device_takes(p, o, (*chosen)->max_points, on, &takes, err);
    if (!st && !takes)
        *chosen = &batch_cpu_engine;
    return st;
}

/* The run on the engine chosen: its set-up, the pairs a chunk at a time,
 * its end; stats' pair_terms, isa and kernel_ms. */
static ptreg_status batch_on(const batch_engine *e, const ptreg_device *on, const ptreg_pair_set *p,
                             const ptreg_batch_options *o, double *transform, int *iterations, int *stop,
                             ptreg_batch_stats *s, ptreg_error *err)
{
    void *ctx = NULL;
    ptreg_status st = e->open(p, o, on, &ctx, &s->isa, err);
    if (st)
        return st;
    for (size_t first = 0, n; !st && first < p->count; first += n) {
        n = p->count - first < e->chunk ? p->count - first : e->chunk;
        st = e->pairs(ctx, first, n, transform, iterations, stop, &s->pair_terms, &s->kernel_ms, err);
    }
    e->close(ctx);
    return st;
}

/* The single-call baseline (options' loop): one ptreg_emicp per pair, in order. */
static ptreg_status loop_emicp(const ptreg_pair_set *p, const ptreg_batch_options *b, double *T, int *iterations,
                               int *stop, ptreg_batch_stats *stats, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    ptreg_emicp_options o;
    ptreg_emicp_options_default(&o);
    o.sigma2_init = b->sigma2_init, o.sigma2_final = b->sigma2_final, o.sigma_factor = b->sigma_factor;
    o.d02 = b->d02, o.max_iter = b->max_iter, o.tol = b->tol;
    ptreg_batch_stats s;
    memset(&s, 0, sizeof s);
    for (size_t i = 0; i < p->count; i++) {
        const size_t s0 = p->source_offset[i], s1 = p->source_offset[i + 1];
        const size_t t0i = p->target_offset ? p->target_offset[i] : 0;
        const size_t t1i = p->target_offset ? p->target_offset[i + 1] : p->target_points;
        ptreg_emicp_result res;
        ptreg_status st = ptreg_emicp(p->source + 3 * s0, s1 - s0, p->target + 3 * t0i, t1i - t0i, &o, &res, err);
        if (st)
            return st;
        memcpy(T + 16 * i, res.transformation, sizeof res.transformation);
        iterations[i] = res.iterations;
        stop[i] = res.stop_reason;
        s.pair_terms += res.pair_terms;
        s.isa = res.isa;
    }
    s.pairs = p->count;
    s.time_ms = ptreg_time_ms() - t0;
    if (stats)
        *stats = s;
    return PTREG_OK;
}

ptreg_status ptreg_batch_register(const ptreg_pair_set *p, const ptreg_batch_options *o_in, double *transform,
                                  int *iterations, int *stop, ptreg_batch_stats *stats, ptreg_error *err)
{
    const double t0 = ptreg_time_ms();
    ptreg_batch_options defaults;
    if (!o_in)
        ptreg_batch_options_default(&defaults);
    const ptreg_batch_options *o = o_in ? o_in : &defaults;
    if (o->loop)
        return loop_emicp(p, o, transform, iterations, stop, stats, err);
    ptreg_device on;
    const batch_engine *e = NULL;
    ptreg_status st = batch_check_pairs(p, o, err);
    st = st ? st : batch_choose_for(p, o, &on, &e, err);
    if (st)
        return st;
    ptreg_batch_stats s;
    memset(&s, 0, sizeof s);
    st = batch_on(e, &on, p, o, transform, iterations, stop, &s, err);
    if (!st && stats)
        fill_stats(p, t0, s.pair_terms, s.isa, s.kernel_ms, stats);
    return st;
}

PTREG_ISA_TABLE(batch_cpu_kernel_table, batch_cpu_kernels, BATCH_CPU_KERNELS)
