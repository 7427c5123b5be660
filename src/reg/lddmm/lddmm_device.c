/* Landmark shooting on a GPU device (lddmm_impl.h; kernels: pair/lddmm.cl
 * and reg/lddmm/lddmm.cl). The trajectory (every time point's state, and RK2's
 * intermediate states) lives on the device; each pair sum is one launch
 * whose last group per row block also combines the sums and updates the
 * state, in the CPU's arithmetic (lddmm.c's shoot, pull_back and
 * evaluate): an evaluation with its gradient is 2 (Euler) or 4 (RK2)
 * launches per time step and two more, recorded once as a graph and run
 * by one call per evaluation (a CUDA graph). On OpenCL each pair sum is
 * two launches, the sum then its combine (reg/lddmm/lddmm.cl says why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair/pair_device.h"
#include "reg/lddmm/lddmm_impl.h"

static const char *const lddmm_files[] = {"device/reduce.cl", "pair/exp.cl", "pair/lddmm.cl", "reg/lddmm/lddmm.cl",
                                          NULL};
const kernel_program lddmm_kernels = {"lddmm", lddmm_files};

#define ADJOINT_OUTPUTS 15 /* pair/lddmm.cl's */

/* reg/lddmm/lddmm.cl's modes */
enum { MODE_AXPY = 1, MODE_RK2, MODE_LIN, MODE_ACC2 };

struct lddmm_device_run {
    dev_handle *dev;
    pair_device_config cfg;
    size_t wg;     /* the configuration's: rows per group, columns per local tile */
    size_t n, len; /* landmarks, and a state's doubles (6n) */
    int steps, rk2;
    double s, h, neg_half_s;
    unsigned forced_splits;
    ptreg_precision precision;
    double lambda, gamma;
    double pair_terms;
    dkernel *flow, *adjoint, *objective, *gradient;
    dkernel *flow_combine, *adjoint_combine; /* NULL: the step's last groups combine (fused) */
    /* x: (steps + 1) states; y: RK2's steps intermediate states; v0, k1,
     * mu, mu2 (Euler's pull-back alternates them), w, g, cot, cot_next
     * (RK2's): one state each; partial: the pair sums' partials;
     * arrivals: a count per row block (zero between launches) */
    dbuf *x, *y, *v0, *k1, *mu, *mu2, *w, *g, *cot, *cot_next, *target, *partial, *arrivals, *group_sums, *grad;
    dgraph *evaluation;      /* an evaluation's launches with the gradient, once recorded */
    double evaluation_terms; /* their pair terms */
    size_t partial_rows;     /* rows the partial and arrivals buffers were sized for */
    /* warp: the points, RK2's midpoints and the two velocities */
    dbuf *points, *mid, *pk1, *pk2;
    size_t points_cap;
};

/* Whether the last group of each row block combines the pair sums in the
 * step's own launch: on CUDA, whose __threadfence orders the partials at
 * device scope; never on OpenCL 1.2 (reg/lddmm/lddmm.cl).
 * PTREG_LDDMM_COMBINE=split takes the second launch on CUDA too (the
 * stand-in's incoherent mode checks both). */
static ptreg_status fused_combine(const dev_handle *dev, int *fused, ptreg_error *err)
{
    const char *env = getenv("PTREG_LDDMM_COMBINE");
    if (env && *env && strcmp(env, "split") && strcmp(env, "auto"))
        return ptreg_error_set(err, PTREG_ERR_ARG, "PTREG_LDDMM_COMBINE='%.32s' is not split or auto", env);
    *fused = dev->info.device.backend == PTREG_BACKEND_CUDA && !(env && !strcmp(env, "split"));
    return PTREG_OK;
}

ptreg_status lddmm_device_defines(const dev_handle *dev, ptreg_precision precision, const ptreg_pair_gpu *gpu,
                                  char *defines, size_t size, ptreg_error *err)
{
    pair_device_config c;
    pair_device_config_of(gpu, &c);
    ptreg_status st = pair_device_supports(&c, LDDMM_NEEDS_FP64, &dev->info, err);
    int native = c.native_exp, fused = 0;
    st = st || native >= 0 ? st : pair_device_exp(dev, &native, err);
    st = st ? st : fused_combine(dev, &fused, err);
    if (!st)
        snprintf(defines, size, "-DWG=%u -DITEMS=1 -DLDDMM_FP64=%d -DPAIR_EXP_NATIVE=%d -DLDDMM_FUSED=%d", c.wg,
                 precision == PTREG_PRECISION_FP64, native, fused);
    return st;
}

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    pair_device_config c;
    pair_device_config_of(&((const ptreg_lddmm_options *)options)->gpu, &c);
    return pair_device_supports(&c, LDDMM_NEEDS_FP64, device, err);
}

void lddmm_device_close(lddmm_device_run *d)
{
    if (!d)
        return;
    dev_graph_free(d->evaluation);
    dbuf *bufs[] = {d->x,      d->y,   d->v0,       d->k1,     d->mu,        d->mu2,      d->w,
                    d->g,      d->cot, d->cot_next, d->target, d->partial,   d->arrivals, d->grad,
                    d->points, d->mid, d->pk1,      d->pk2,    d->group_sums};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        dbuf_free(bufs[i]);
    free(d);
}

double lddmm_device_pair_terms(const lddmm_device_run *d) { return d->pair_terms; }

static ptreg_status get_kernels(lddmm_device_run *d, dprogram *program, ptreg_error *err)
{
    struct {
        const char *name;
        dkernel **k;
    } want[] = {{"ptreg_lddmm_flow_step", &d->flow},
                {"ptreg_lddmm_adjoint_step", &d->adjoint},
                {"ptreg_lddmm_objective", &d->objective},
                {"ptreg_lddmm_gradient", &d->gradient}};
    ptreg_status st = PTREG_OK;
    for (size_t i = 0; !st && i < sizeof want / sizeof want[0]; i++)
        st = dev_kernel(program, want[i].name, want[i].k, err);
    int fused = 1;
    st = st ? st : fused_combine(d->dev, &fused, err);
    if (!st && !fused) {
        st = dev_kernel(program, "ptreg_lddmm_flow_combine", &d->flow_combine, err);
        st = st ? st : dev_kernel(program, "ptreg_lddmm_adjoint_combine", &d->adjoint_combine, err);
    }
    return st;
}

/* The most threads a group of every kernel may have here. */
static size_t kernels_limit(const lddmm_device_run *d)
{
    const dkernel *const all[] = {d->flow, d->adjoint, d->objective, d->gradient, d->flow_combine, d->adjoint_combine};
    size_t limit = SIZE_MAX;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] && dev_kernel_limit(all[i]) < limit)
            limit = dev_kernel_limit(all[i]);
    return limit;
}

/* The program and its kernels in groups of the options' wg, or where
 * that is ptreg's default and a kernel's own limit is below it (ROCm,
 * Intel), of the largest power of two within the limit; a wg the options
 * ask for beyond a kernel's limit is refused, naming both limits. */
static ptreg_status open_kernels(lddmm_device_run *d, const ptreg_lddmm_options *opt, ptreg_error *err)
{
    ptreg_pair_gpu gpu = opt->gpu;
    for (;;) {
        pair_device_config_of(&gpu, &d->cfg);
        d->wg = d->cfg.wg;
        d->flow_combine = d->adjoint_combine = NULL;
        char defines[256];
        dprogram *program;
        ptreg_status st = lddmm_device_defines(d->dev, opt->precision, &gpu, defines, sizeof defines, err);
        st = st ? st : dev_program(d->dev, &lddmm_kernels, defines, &program, err);
        st = st ? st : get_kernels(d, program, err);
        if (st)
            return st;
        const size_t limit = kernels_limit(d);
        if (d->wg <= limit || opt->gpu.wg || limit < 32)
            break;
        size_t wg = 32;
        while (wg * 2 <= limit)
            wg *= 2;
        gpu.wg = (int)wg;
    }
    const dkernel *const all[] = {d->flow, d->adjoint, d->objective, d->gradient, d->flow_combine, d->adjoint_combine};
    ptreg_status st = PTREG_OK;
    for (size_t i = 0; !st && i < sizeof all / sizeof all[0]; i++)
        st = all[i] ? dev_kernel_fits(all[i], d->wg, err) : PTREG_OK;
    return st;
}

static ptreg_status alloc_state(lddmm_device_run *d, dbuf **buf, size_t states, ptreg_error *err)
{
    return dbuf_alloc(d->dev, states * d->len * sizeof(double), buf, err);
}

/* The partials and the arrivals' counts (zeroed) for launches of up to
 * rows rows (grown for a warp). */
static ptreg_status reserve_partials(lddmm_device_run *d, size_t rows, ptreg_error *err)
{
    if (d->partial && rows <= d->partial_rows)
        return PTREG_OK;
    /* the recorded evaluation holds the old buffers: recorded again on
     * its next use */
    dev_graph_free(d->evaluation);
    d->evaluation = NULL;
    dbuf_free(d->partial);
    dbuf_free(d->arrivals);
    d->partial = d->arrivals = NULL;
    d->partial_rows = 0;
    const size_t planes = pair_device_planes(d->dev, &d->cfg, rows, d->forced_splits);
    const size_t blocks = (rows + d->wg - 1) / d->wg;
    uint32_t *zeros = calloc(blocks, sizeof *zeros);
    ptreg_status st = zeros ? dbuf_alloc(d->dev, ADJOINT_OUTPUTS * planes * sizeof(double), &d->partial, err)
                            : ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory");
    st = st ? st : dbuf_upload(d->dev, zeros, blocks * sizeof *zeros, &d->arrivals, err);
    free(zeros);
    if (!st)
        d->partial_rows = rows;
    return st;
}

ptreg_status lddmm_device_open(const ptreg_device *device, const double *q0, size_t n, const ptreg_lddmm_options *opt,
                               unsigned splits, lddmm_device_run **out, ptreg_error *err)
{
    *out = NULL;
    dev_handle *dev;
    ptreg_status st = dev_get(device, &dev, err);
    if (st)
        return st;
    const size_t states = (size_t)opt->time_points;
    if (n > UINT32_MAX / 6 / states)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "lddmm on %s: %zu landmarks over %zu time points exceed the kernels' 32-bit indices",
                               dev->label, n, states);
    lddmm_device_run *d = calloc(1, sizeof *d);
    if (!d)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory");
    d->dev = dev;
    d->n = n;
    d->len = 6 * n;
    d->steps = opt->time_points - 1;
    d->rk2 = opt->integrator == PTREG_LDDMM_RK2;
    d->s = 1.0 / (opt->sigma * opt->sigma);
    d->h = 1.0 / d->steps;
    d->neg_half_s = -0.5 * d->s;
    d->forced_splits = splits;
    d->precision = opt->precision;
    d->lambda = opt->lambda;
    d->gamma = opt->gamma;
    st = open_kernels(d, opt, err);
    st = st ? st : alloc_state(d, &d->x, states, err);
    if (!st && d->rk2)
        st = alloc_state(d, &d->y, states - 1, err);
    dbuf **one[] = {&d->v0, &d->k1, &d->mu, &d->mu2, &d->w, &d->g, &d->cot, &d->cot_next};
    for (size_t i = 0; !st && i < sizeof one / sizeof one[0]; i++)
        st = alloc_state(d, one[i], 1, err);
    st = st ? st : reserve_partials(d, n, err);
    st = st ? st : dbuf_alloc(dev, 2 * ((n + d->wg - 1) / d->wg) * sizeof(double), &d->group_sums, err);
    st = st ? st : dbuf_write(d->x, 0, q0, 3 * n * sizeof(double), err);
    if (st) {
        lddmm_device_close(d);
        return st;
    }
    *out = d;
    return PTREG_OK;
}

static karg karg_pair(const lddmm_device_run *d, double v)
{
    return d->precision == PTREG_PRECISION_FP64 ? KARG_F64(v) : KARG_F32(v);
}

/* Where a launch's rows and columns come from: a buffer and the element
 * offsets of q and p in it. */
typedef struct points_at {
    const dbuf *buf;
    size_t q, p;
    size_t count;
} points_at;

static points_at state_at(const lddmm_device_run *d, const dbuf *buf, size_t index)
{
    return (points_at){buf, index * d->len, index * d->len + 3 * d->n, d->n};
}

static size_t split_cols(const lddmm_device_run *d, size_t cols, unsigned splits)
{
    const size_t tiles = (cols + d->wg - 1) / d->wg;
    return (tiles + splits - 1) / splits * d->wg;
}

/* What the last group of each row block does with its rows' results
 * (reg/lddmm/lddmm.cl's modes). */
typedef struct update {
    int mode;
    const dbuf *out;
    const dbuf *dst;
    size_t dst_off;
    const dbuf *base;
    size_t base_off;
    const dbuf *k1; /* NULL: out (not read) */
    double w1, w2;
} update;

/* The arguments the step and combine kernels end with: s and the update. */
static size_t update_args(const lddmm_device_run *d, const update *u, karg *args)
{
    const karg tail[] = {
        KARG_F64(d->s),       KARG_U32(u->mode), KARG_BUF(u->out),      KARG_BUF(u->dst),
        KARG_U32(u->dst_off), KARG_BUF(u->base), KARG_U32(u->base_off), KARG_BUF(u->k1 ? u->k1 : u->out),
        KARG_F64(u->w1),      KARG_F64(u->w2)};
    memcpy(args, tail, sizeof tail);
    return sizeof tail / sizeof tail[0];
}

/* The second launch where the step's groups only wrote partials: one
 * group per row block adds its splits' partials and applies them. */
static ptreg_status combine(lddmm_device_run *d, const dkernel *k, size_t rows, unsigned splits, int with_f,
                            const update *u, ptreg_error *err)
{
    if (!k)
        return PTREG_OK;
    karg args[32] = {KARG_BUF(d->partial), KARG_U32(splits), KARG_U32(rows), KARG_U32(with_f)};
    const size_t count = 4 + update_args(d, u, args + 4);
    return dev_launch(k, rows, d->wg, count, args, err);
}

/* The flow of rows against cols (with_f: f as well), applied by u. */
static ptreg_status flow_step(lddmm_device_run *d, points_at rows, int with_f, points_at cols, const update *u,
                              ptreg_error *err)
{
    const unsigned splits = pair_device_splits(d->dev, &d->cfg, rows.count, cols.count, d->forced_splits);
    const size_t blocks = (rows.count + d->wg - 1) / d->wg;
    karg args[32] = {KARG_BUF(rows.buf),   KARG_U32(rows.q),
                     KARG_BUF(rows.buf),   KARG_U32(rows.p),
                     KARG_U32(with_f),     KARG_U32(rows.count),
                     KARG_BUF(cols.buf),   KARG_U32(cols.q),
                     KARG_BUF(cols.buf),   KARG_U32(cols.p),
                     KARG_U32(cols.count), karg_pair(d, d->neg_half_s),
                     KARG_U32(blocks),     KARG_U32(split_cols(d, cols.count, splits)),
                     KARG_BUF(d->partial), KARG_BUF(d->arrivals)};
    const size_t count = 16 + update_args(d, u, args + 16);
    d->pair_terms += (double)rows.count * (double)cols.count;
    ptreg_status st = dev_launch(d->flow, blocks * splits * d->wg, d->wg, count, args, err);
    return st ? st : combine(d, d->flow_combine, rows.count, splits, with_f, u, err);
}

/* The adjoint at state x with cotangent cot, applied by u. */
static ptreg_status adjoint_step(lddmm_device_run *d, points_at x, const dbuf *cot, const update *u, ptreg_error *err)
{
    const unsigned splits = pair_device_splits(d->dev, &d->cfg, d->n, d->n, d->forced_splits);
    const size_t blocks = (d->n + d->wg - 1) / d->wg;
    karg args[32] = {KARG_BUF(x.buf),
                     KARG_U32(x.q),
                     KARG_BUF(cot),
                     KARG_U32(d->n),
                     karg_pair(d, d->neg_half_s),
                     KARG_U32(blocks),
                     KARG_U32(split_cols(d, d->n, splits)),
                     KARG_BUF(d->partial),
                     KARG_BUF(d->arrivals)};
    const size_t count = 9 + update_args(d, u, args + 9);
    d->pair_terms += (double)d->n * (double)d->n;
    ptreg_status st = dev_launch(d->adjoint, blocks * splits * d->wg, d->wg, count, args, err);
    return st ? st : combine(d, d->adjoint_combine, d->n, splits, 0, u, err);
}

/* One step of the landmarks from state t: the velocity (into v0 at t = 0,
 * for the Hamiltonian), then the integrator (lddmm.c's shoot). */
static ptreg_status shoot_step(lddmm_device_run *d, int t, ptreg_error *err)
{
    const points_at x = state_at(d, d->x, (size_t)t);
    const dbuf *k1 = t == 0 ? d->v0 : d->k1;
    if (!d->rk2) {
        const update u = {MODE_AXPY, k1, d->x, (size_t)(t + 1) * d->len, d->x, x.q, NULL, d->h, 0};
        return flow_step(d, x, 1, x, &u, err);
    }
    const update mid = {MODE_AXPY, k1, d->y, (size_t)t * d->len, d->x, x.q, NULL, 2.0 * d->h / 3.0, 0};
    ptreg_status st = flow_step(d, x, 1, x, &mid, err);
    const points_at y = state_at(d, d->y, (size_t)t);
    const update next = {MODE_RK2, d->g, d->x, (size_t)(t + 1) * d->len, d->x, x.q, k1, d->h, 0};
    return st ? st : flow_step(d, y, 1, y, &next, err);
}

static ptreg_status shoot_launches(lddmm_device_run *d, ptreg_error *err)
{
    ptreg_status st = PTREG_OK;
    for (int t = 0; !st && t < d->steps; t++)
        st = shoot_step(d, t, err);
    return st;
}

static ptreg_status write_p0(lddmm_device_run *d, const double *p0, ptreg_error *err)
{
    return dbuf_write(d->x, 3 * d->n * sizeof(double), p0, 3 * d->n * sizeof(double), err);
}

ptreg_status lddmm_device_shoot(lddmm_device_run *d, const double *p0, ptreg_error *err)
{
    ptreg_status st = write_p0(d, p0, err);
    return st ? st : shoot_launches(d, err);
}

ptreg_status lddmm_device_state(lddmm_device_run *d, int t, double *q, double *p, ptreg_error *err)
{
    const size_t at = (size_t)t * d->len * sizeof(double), bytes = 3 * d->n * sizeof(double);
    ptreg_status st = q ? dbuf_read(d->x, at, q, bytes, err) : PTREG_OK;
    return st || !p ? st : dbuf_read(d->x, at + bytes, p, bytes, err);
}

/* Euler's mu after k steps back: a launch reads its cotangent as columns
 * while its last groups write, so mu moves between mu and mu2. */
static dbuf *euler_mu(const lddmm_device_run *d, int k) { return k % 2 ? d->mu2 : d->mu; }

/* The cotangent the gradient reads: Euler's after every step back. */
static const dbuf *final_mu(const lddmm_device_run *d) { return d->rk2 ? d->mu : euler_mu(d, d->steps); }

/* mu carried back through step t (lddmm.c's pull_back); RK2's cotangents
 * alternate between cot and cot_next for the same reason as Euler's mu. */
static ptreg_status pull_back_step(lddmm_device_run *d, int t, ptreg_error *err)
{
    const points_at x = state_at(d, d->x, (size_t)t);
    if (!d->rk2) {
        /* mu <- mu + h J(x)^T mu */
        const int k = d->steps - 1 - t;
        const update u = {MODE_AXPY, d->g, euler_mu(d, k + 1), 0, euler_mu(d, k), 0, NULL, d->h, 0};
        return adjoint_step(d, x, euler_mu(d, k), &u, err);
    }
    /* cot = 3h/4 mu (the objective's or the last step's); w = J(y)^T cot;
     * cot_next = h/4 mu + 2h/3 w; mu <- mu + (w + J(x)^T cot_next), and
     * cot = 3h/4 mu for the next step */
    const update w = {MODE_LIN, d->w, d->cot_next, 0, d->mu, 0, NULL, 0.25 * d->h, 2.0 * d->h / 3.0};
    ptreg_status st = adjoint_step(d, state_at(d, d->y, (size_t)t), d->cot, &w, err);
    const update acc = {MODE_ACC2, d->cot, d->mu, 0, d->mu, 0, d->w, 0.75 * d->h, 0};
    return st ? st : adjoint_step(d, x, d->cot_next, &acc, err);
}

/* H and the data term's per-group sums (the final cotangent with them). */
static ptreg_status objective_launch(lddmm_device_run *d, ptreg_error *err)
{
    const karg args[] = {KARG_BUF(d->x),         KARG_BUF(d->v0),       KARG_U32((size_t)d->steps * d->len),
                         KARG_BUF(d->target),    KARG_F64(d->lambda),   KARG_U32(d->n),
                         KARG_BUF(d->mu),        KARG_F64(0.75 * d->h), KARG_BUF(d->cot),
                         KARG_BUF(d->group_sums)};
    return dev_launch(d->objective, d->n, d->wg, sizeof args / sizeof args[0], args, err);
}

/* The groups' sums added in group order. */
static ptreg_status objective_sums(lddmm_device_run *d, double *pv, double *data, ptreg_error *err)
{
    const size_t groups = (d->n + d->wg - 1) / d->wg;
    double *sums = malloc(2 * groups * sizeof *sums);
    ptreg_status st = sums ? dbuf_read(d->group_sums, 0, sums, 2 * groups * sizeof *sums, err)
                           : ptreg_error_set(err, PTREG_ERR_NOMEM, "lddmm: out of memory");
    *pv = *data = 0.0;
    for (size_t g = 0; !st && g < groups; g++) {
        *pv += sums[2 * g];
        *data += sums[2 * g + 1];
    }
    free(sums);
    return st;
}

/* An evaluation with its gradient, after p0: shoot, objective, pull back,
 * gradient. */
static ptreg_status evaluation_launches(lddmm_device_run *d, ptreg_error *err)
{
    ptreg_status st = shoot_launches(d, err);
    st = st ? st : objective_launch(d, err);
    for (int t = d->steps - 1; !st && t >= 0; t--)
        st = pull_back_step(d, t, err);
    const karg args[] = {KARG_BUF(d->v0), KARG_BUF(final_mu(d)), KARG_F64(d->gamma), KARG_U32(d->n), KARG_BUF(d->grad)};
    return st ? st : dev_launch(d->gradient, 3 * d->n, d->wg, sizeof args / sizeof args[0], args, err);
}

/* The evaluation's launches as a graph, recorded on first use. */
static ptreg_status record_evaluation(lddmm_device_run *d, ptreg_error *err)
{
    if (d->evaluation)
        return PTREG_OK;
    const double terms = d->pair_terms;
    ptreg_status st = dev_record_begin(d->dev, err);
    if (st)
        return st;
    st = evaluation_launches(d, err);
    ptreg_error end_err;
    ptreg_status ended = dev_record_end(d->dev, &d->evaluation, st ? &end_err : err);
    d->evaluation_terms = d->pair_terms - terms;
    d->pair_terms = terms;
    if (st || ended) {
        dev_graph_free(d->evaluation);
        d->evaluation = NULL;
    }
    return st ? st : ended;
}

ptreg_status lddmm_device_evaluate(lddmm_device_run *d, const double *target, const double *p0, double *f, double *grad,
                                   double *hamiltonian, ptreg_error *err)
{
    ptreg_status st = PTREG_OK;
    if (!d->target) {
        st = dbuf_upload(d->dev, target, 3 * d->n * sizeof(double), &d->target, err);
        st = st ? st : dbuf_alloc(d->dev, 3 * d->n * sizeof(double), &d->grad, err);
    }
    st = st ? st : write_p0(d, p0, err);
    if (grad) {
        st = st ? st : record_evaluation(d, err);
        st = st ? st : dev_graph_launch(d->evaluation, err);
        if (!st)
            d->pair_terms += d->evaluation_terms;
    } else {
        st = st ? st : shoot_launches(d, err);
        st = st ? st : objective_launch(d, err);
    }
    double pv, data;
    st = st ? st : objective_sums(d, &pv, &data, err);
    st = st || !grad ? st : dbuf_read(d->grad, 0, grad, 3 * d->n * sizeof(double), err);
    if (st)
        return st;
    const double H = 0.5 * pv;
    *f = d->gamma * H + 0.5 * d->lambda * data;
    if (hamiltonian)
        *hamiltonian = H;
    return PTREG_OK;
}

/* ---- other points along the flow ---- */

static ptreg_status reserve_points(lddmm_device_run *d, size_t m, ptreg_error *err)
{
    if (m > UINT32_MAX / 3)
        return ptreg_error_set(err, PTREG_ERR_ARG, "lddmm warp on %s: %zu points is more than %u", d->dev->label, m,
                               UINT32_MAX / 3);
    ptreg_status st = reserve_partials(d, m > d->n ? m : d->n, err);
    if (st || m <= d->points_cap)
        return st;
    dbuf **bufs[] = {&d->points, &d->mid, &d->pk1, &d->pk2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        dbuf_free(*bufs[i]);
        *bufs[i] = NULL;
    }
    for (size_t i = 0; !st && i < sizeof bufs / sizeof bufs[0]; i++)
        st = dbuf_alloc(d->dev, 3 * m * sizeof(double), bufs[i], err);
    d->points_cap = st ? 0 : m;
    return st;
}

/* The points' step t along the landmarks' flow (lddmm.c's warp). */
static ptreg_status warp_step(lddmm_device_run *d, int t, size_t m, ptreg_error *err)
{
    const points_at pts = {d->points, 0, 0, m}, x = state_at(d, d->x, (size_t)t);
    if (!d->rk2) {
        const update u = {MODE_AXPY, d->pk1, d->points, 0, d->points, 0, NULL, d->h, 0};
        return flow_step(d, pts, 0, x, &u, err);
    }
    const update mid = {MODE_AXPY, d->pk1, d->mid, 0, d->points, 0, NULL, 2.0 * d->h / 3.0, 0};
    ptreg_status st = flow_step(d, pts, 0, x, &mid, err);
    const points_at mids = {d->mid, 0, 0, m};
    const update next = {MODE_RK2, d->pk2, d->points, 0, d->points, 0, d->pk1, d->h, 0};
    return st ? st : flow_step(d, mids, 0, state_at(d, d->y, (size_t)t), &next, err);
}

ptreg_status lddmm_device_warp(lddmm_device_run *d, const double *p0, const double *x, size_t m, double *out,
                               ptreg_error *err)
{
    ptreg_status st = reserve_points(d, m, err);
    st = st ? st : dbuf_write(d->points, 0, x, 3 * m * sizeof(double), err);
    st = st ? st : lddmm_device_shoot(d, p0, err);
    for (int t = 0; !st && t < d->steps; t++)
        st = warp_step(d, t, m, err);
    return st ? st : dbuf_read(d->points, 0, out, 3 * m * sizeof(double), err);
}

/* ---- the engine (lddmm_impl.h): the session above behind its operations ---- */

static ptreg_status device_open(const ptreg_device *on, const double *q0, size_t n, const ptreg_lddmm_options *opt,
                                void **run, ptreg_error *err)
{
    lddmm_device_run *d = NULL;
    ptreg_status st = lddmm_device_open(on, q0, n, opt, 0, &d, err);
    *run = d;
    return st;
}

static ptreg_status device_evaluate(void *run, const double *target, const double *p0, double *f, double *grad,
                                    double *hamiltonian, ptreg_error *err)
{
    return lddmm_device_evaluate(run, target, p0, f, grad, hamiltonian, err);
}

static ptreg_status device_shoot(void *run, const double *p0, ptreg_error *err)
{
    return lddmm_device_shoot(run, p0, err);
}

static ptreg_status device_state(void *run, int t, double *q, double *p, ptreg_error *err)
{
    return lddmm_device_state(run, t, q, p, err);
}

static ptreg_status device_warp(void *run, const double *p0, const double *x, size_t m, double *out, ptreg_error *err)
{
    return lddmm_device_warp(run, p0, x, m, out, err);
}

static double device_pair_terms(const void *run) { return lddmm_device_pair_terms(run); }

static void device_close(void *run) { lddmm_device_close(run); }

const lddmm_engine lddmm_device_engine = {
    .base = {ENGINE_GPU_BACKENDS, device_supports},
    .open = device_open,
    .evaluate = device_evaluate,
    .shoot = device_shoot,
    .state = device_state,
    .warp = device_warp,
    .pair_terms = device_pair_terms,
    .close = device_close,
};
