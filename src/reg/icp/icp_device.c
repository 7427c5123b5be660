/* Rigid ICP with every step of an iteration on a device (CUDA or OpenCL):
 * the transform of the source, the correspondences (brute force, the k-d
 * tree seeded by the last answer, the Delaunay walks), the filters (max
 * distance, the sigma filter, trimming by a device selection, not a host
 * sort) and the moments of the kept pairs by fixed-order two-pass
 * reductions. Horn's solution runs on the host, in double, from one small
 * copy per iteration: the iteration's only host synchronisation. The model
 * is uploaded once (ptreg_icp_model) and reused frame after frame. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_device.h"
#include "nn/searcher.h"
#include "reg/icp/icp_impl.h"

static const char *const icp_files[] = {"device/reduce.cl", "reg/icp/icp.cl", NULL};
const kernel_program icp_kernels = {"ICP", icp_files};

/* icp.cl's layouts */
#define MOMENTS 17 /* w, sp[3], sq[3], spq[9], d2sum */
#define SIGMA_SUMS 3
#define TRIM_BINS 256
#define TRIM_PASSES 8
#define SELECT_WORDS 5
#define SELECT_KTH 0
/* The kernels index items with 32-bit integers, three per point. */
#define MAX_DEVICE_POINTS ((size_t)1 << 30)
/* -1.0f: a walk memory with no certificate (margin <= 0) */
#define NO_MEMORY 0xbf800000u

/* Buffers of the registrations, grown to the largest source seen. */
enum {
    WS_SOURCE,         /* the source in Morton order, x y z */
    WS_MOVED,          /* under the current transform */
    WS_NEAREST,        /* each point's nearest target point: the method's name for it, and the next seed */
    WS_DIST2,
    WS_ORDER,          /* per position: the caller's index (trimming's ties) */
    WS_MEMORY,         /* seeded walks: each answer's certificate */
    WS_INFO,           /* each walk's record */
    WS_PARTIALS,       /* per group: the moments */
    WS_SIGMA_PARTIALS, /* per group: the sigma filter's sums */
    WS_FILTER,         /* the sigma filter's limit */
    WS_SELECT,         /* trimming's threshold and selection state */
    WS_HIST,           /* per group: trimming's histogram */
    WS_WALK_PARTIALS,  /* per group: the walks' statistics */
    WS_SUMMARY,        /* what a pass copies back: the moments, then the walks' statistics */
    WS_COUNT
};

typedef struct icp_workspace {
    size_t capacity;
    dbuf *buf[WS_COUNT];
} icp_workspace;

struct ptreg_icp_model {
    ptreg_device device;
    const ptreg_model_index *index;
    double ref[3], diag2; /* the target's bounding-box centre and squared diagonal */
    /* on a GPU device */
    dev_handle *dev;
    nn_device_model *nn;
    dkernel *transform, *moments, *total, *sigma_partials, *sigma_limit, *trim_histogram, *trim_pick;
    size_t acc_size; /* the device's sums: double (8) or float (4) */
    icp_workspace ws;
    double compile_ms, upload_ms;
    /* A registration fills the workspace (its source, pairs and sums):
     * threads sharing the model take their turns on the device. */
    pthread_mutex_t device_turn;
};

/* ---- the model ---- */

static void workspace_free(icp_workspace *ws)
{
    for (int i = 0; i < WS_COUNT; i++) {
        dbuf_free(ws->buf[i]);
        ws->buf[i] = NULL;
    }
    ws->capacity = 0;
}

static size_t summary_walk_offset(const ptreg_icp_model *m) { return (MOMENTS * m->acc_size + 7) / 8; }

static ptreg_status workspace_reserve(ptreg_icp_model *m, size_t n, ptreg_error *err)
{
    icp_workspace *ws = &m->ws;
    if (n <= ws->capacity)
        return PTREG_OK;
    workspace_free(ws);
    size_t groups = device_groups(n), acc = m->acc_size;
    const size_t bytes[WS_COUNT] = {
        [WS_SOURCE] = 3 * n * sizeof(float),
        [WS_MOVED] = 3 * n * sizeof(float),
        [WS_NEAREST] = n * sizeof(uint32_t),
        [WS_DIST2] = n * sizeof(float),
        [WS_ORDER] = n * sizeof(uint32_t),
        [WS_MEMORY] = PTREG_WALK_MEMORY_FLOATS * n * sizeof(float),
        [WS_INFO] = n * sizeof(uint32_t),
        [WS_PARTIALS] = groups * MOMENTS * acc,
        [WS_SIGMA_PARTIALS] = groups * SIGMA_SUMS * acc,
        [WS_FILTER] = acc,
        [WS_SELECT] = SELECT_WORDS * sizeof(uint64_t),
        [WS_HIST] = groups * TRIM_BINS * sizeof(uint32_t),
        [WS_WALK_PARTIALS] = groups * PTREG_WALK_FIELDS * sizeof(uint64_t),
        [WS_SUMMARY] = (summary_walk_offset(m) + PTREG_WALK_FIELDS) * sizeof(uint64_t),
    };
    for (int i = 0; i < WS_COUNT; i++) {
        ptreg_status st = dbuf_alloc(m->dev, bytes[i], &ws->buf[i], err);
        if (st) {
            workspace_free(ws);
            return st;
        }
    }
    ws->capacity = n;
    return PTREG_OK;
}

static ptreg_status get_kernels(ptreg_icp_model *m, dprogram *p, ptreg_error *err)
{
    ptreg_status st = dev_kernel(p, "ptreg_icp_transform", &m->transform, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_moments", &m->moments, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_total", &m->total, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_sigma_partials", &m->sigma_partials, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_sigma_limit", &m->sigma_limit, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_trim_histogram", &m->trim_histogram, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_trim_pick", &m->trim_pick, err);
    return st;
}

/* Kernels first (compile_ms), then the model's arrays (upload_ms). */
static ptreg_status open_on_device(ptreg_icp_model *m, ptreg_error *err)
{
    ptreg_status st = dev_get(&m->device, &m->dev, err);
    if (st)
        return st;
    m->acc_size = m->dev->info.fp64 ? sizeof(double) : sizeof(float);
    char defines[1024];
    nn_device_layout(m->dev, defines, sizeof defines);
    double t0 = ptreg_time_ms();
    dprogram *p;
    st = dev_program(m->dev, &icp_kernels, defines, &p, err);
    st = st ? st : get_kernels(m, p, err);
    st = st ? st : nn_device_prepare(m->dev, err);
    if (!st)
        st = dev_finish(m->dev, err);
    m->compile_ms = ptreg_time_ms() - t0;
    t0 = ptreg_time_ms();
    st = st ? st : nn_device_create(m->dev, m->index, 1, &m->nn, err);
    st = st ? st : dev_finish(m->dev, err);
    m->upload_ms = ptreg_time_ms() - t0;
    return st;
}

ptreg_status ptreg_icp_model_create(const ptreg_model_index *index, const ptreg_device *device,
                                    ptreg_icp_model **out, ptreg_error *err)
{
    ptreg_device on; /* a model for every option: the engines' backends */
    const unsigned backends = icp_cpu_engine.base.backends | icp_device_engine.base.backends;
    ptreg_status st = ptreg_device_resolve(device, backends, "ICP", &on, err);
    if (st)
        return st;
    ptreg_icp_model *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    pthread_mutex_init(&m->device_turn, NULL);
    m->device = on;
    m->index = index;
    size_t points;
    const float *target = ptreg_model_index_points(index, &points);
    icp_target_extent(target, points, m->ref, &m->diag2);
    if (on.backend != PTREG_BACKEND_CPU && (st = open_on_device(m, err))) {
        ptreg_icp_model_destroy(m);
        return st;
    }
    *out = m;
    return PTREG_OK;
}

void ptreg_icp_model_destroy(ptreg_icp_model *m)
{
    if (!m)
        return;
    workspace_free(&m->ws);
    nn_device_destroy(m->nn);
    pthread_mutex_destroy(&m->device_turn);
    free(m);
}

void ptreg_icp_model_get_info(const ptreg_icp_model *m, ptreg_icp_model_info *info)
{
    pthread_mutex_t *turn = (pthread_mutex_t *)&m->device_turn; /* the workspace may be growing */
    pthread_mutex_lock(turn);
    memset(info, 0, sizeof *info);
    info->device = m->device;
    info->compile_ms = m->compile_ms;
    info->upload_ms = m->upload_ms;
    info->device_bytes = m->nn ? nn_device_bytes(m->nn) : 0;
    for (int i = 0; i < WS_COUNT; i++)
        info->device_bytes += m->ws.buf[i] ? m->ws.buf[i]->bytes : 0;
    pthread_mutex_unlock(turn);
}

/* ---- one registration on the device ---- */

typedef struct device_run {
    ptreg_icp_model *m;
    const ptreg_icp_options *opt;
    size_t n, groups;
    ptreg_nn_method nn;
    int pass;         /* correspondence passes made */
    float max_d2;
    const dbuf *names; /* the target's points by the method's answers */
} device_run;

/* A number in the precision of the device's sums (acc_t). */
static karg karg_acc(const ptreg_icp_model *m, double v)
{
    return m->acc_size == sizeof(double) ? KARG_F64(v) : KARG_F32(v);
}

static ptreg_status launch_transform(device_run *r, const double T[16], ptreg_error *err)
{
    const ptreg_icp_model *m = r->m;
    karg args[15] = {KARG_BUF(m->ws.buf[WS_SOURCE]), KARG_U32(r->n)};
    for (int row = 0; row < 3; row++)
        for (int c = 0; c < 4; c++)
            args[2 + 4 * row + c] = karg_acc(m, T[4 * row + c]);
    args[14] = KARG_BUF(m->ws.buf[WS_MOVED]);
    return dev_launch(m->transform, r->n, PTREG_DEVICE_WG, 15, args, err);
}

static int seeded_walk(ptreg_nn_method nn) { return nn == PTREG_NN_DELAUNAY_PNN || nn == PTREG_NN_DELAUNAY_PNNOPT; }

static ptreg_status find_pairs(device_run *r, int want_walk_stats, ptreg_error *err)
{
    const ptreg_icp_model *m = r->m;
    dbuf *const *b = m->ws.buf;
    if (r->nn == PTREG_NN_BRUTE)
        return nn_device_brute(m->nn, b[WS_MOVED], r->n, b[WS_NEAREST], b[WS_DIST2], err);
    if (!ptreg_nn_method_is_delaunay(r->nn))
        return nn_device_kdtree(m->nn, b[WS_MOVED], r->n, b[WS_NEAREST], b[WS_DIST2], err);
    int start = nn_walk_start(r->nn, r->pass > 0);
    dbuf *memory = seeded_walk(r->nn) ? b[WS_MEMORY] : NULL;
    ptreg_status st =
        nn_device_walk(m->nn, b[WS_MOVED], r->n, start, b[WS_NEAREST], b[WS_DIST2], memory, b[WS_INFO], err);
    if (!st && want_walk_stats)
        st = nn_device_walk_stats(m->nn, b[WS_INFO], r->n, b[WS_WALK_PARTIALS], b[WS_SUMMARY],
                                        summary_walk_offset(m), err);
    return st;
}

/* The sigma filter's limit for this iteration (+inf when it does not
 * apply yet): filter[0]. */
static ptreg_status sigma_limit(device_run *r, int iteration, ptreg_error *err)
{
    const ptreg_icp_model *m = r->m;
    dbuf *const *b = m->ws.buf;
    int apply = iteration >= r->opt->filter_start;
    ptreg_status st = PTREG_OK;
    if (apply) {
        karg part[] = {KARG_BUF(b[WS_DIST2]), KARG_U32(r->n), KARG_F32(r->max_d2),
                             KARG_BUF(b[WS_SIGMA_PARTIALS])};
        st = dev_launch(m->sigma_partials, r->groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, 4, part, err);
    }
    karg lim[] = {KARG_BUF(b[WS_SIGMA_PARTIALS]), KARG_U32(r->groups), KARG_U32(apply),
                        karg_acc(m, r->opt->filter_sigma), KARG_BUF(b[WS_FILTER])};
    return st ? st : dev_launch(m->sigma_limit, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 5, lim, err);
}

/* The key of the ceil(trim * used)-th closest pair, digit by digit. */
static ptreg_status trim_select(device_run *r, ptreg_error *err)
{
    const ptreg_icp_model *m = r->m;
    dbuf *const *b = m->ws.buf;
    ptreg_status st = PTREG_OK;
    for (uint32_t pass = 0; pass < TRIM_PASSES && !st; pass++) {
        karg hist[] = {KARG_BUF(b[WS_DIST2]),  KARG_BUF(b[WS_ORDER]),  KARG_U32(r->n),
                             KARG_F32(r->max_d2),    KARG_BUF(b[WS_FILTER]), KARG_BUF(b[WS_SELECT]),
                             KARG_U32(pass),         KARG_BUF(b[WS_HIST])};
        karg pick[] = {KARG_BUF(b[WS_HIST]), KARG_U32(r->groups), KARG_U32(pass), karg_acc(m, r->opt->trim),
                             KARG_BUF(b[WS_SELECT])};
        st = dev_launch(m->trim_histogram, r->groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, 8, hist, err);
        st = st ? st : dev_launch(m->trim_pick, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 5, pick, err);
    }
    return st;
}

static ptreg_status launch_moments(device_run *r, ptreg_error *err)
{
    const ptreg_icp_model *m = r->m;
    dbuf *const *b = m->ws.buf;
    karg args[] = {KARG_BUF(b[WS_MOVED]),   KARG_BUF(b[WS_NEAREST]), KARG_BUF(b[WS_DIST2]),
                         KARG_BUF(b[WS_ORDER]),   KARG_U32(r->n),          KARG_BUF(r->names),
                         KARG_F32(r->max_d2),     KARG_BUF(b[WS_FILTER]),  KARG_BUF(b[WS_SELECT]),
                         karg_acc(m, m->ref[0]),  karg_acc(m, m->ref[1]),  karg_acc(m, m->ref[2]),
                         KARG_BUF(b[WS_PARTIALS])};
    karg total[] = {KARG_BUF(b[WS_PARTIALS]), KARG_U32(r->groups), KARG_U32(MOMENTS),
                          KARG_BUF(b[WS_SUMMARY])};
    ptreg_status st = dev_launch(m->moments, r->groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, 13, args, err);
    return st ? st : dev_launch(m->total, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 4, total, err);
}

/* The pass's one copy back: the moments, and the walks' statistics. */
static ptreg_status read_summary(device_run *r, ptreg_moments *total, double *sum_d2, ptreg_walk_stats *walk,
                                 ptreg_error *err)
{
    const ptreg_icp_model *m = r->m;
    uint64_t words[(MOMENTS * sizeof(double) + 7) / 8 + PTREG_WALK_FIELDS];
    size_t walk_at = summary_walk_offset(m), bytes = (walk ? walk_at + PTREG_WALK_FIELDS : walk_at) * 8;
    ptreg_status st = dbuf_read(m->ws.buf[WS_SUMMARY], 0, words, bytes, err);
    if (st)
        return st;
    double s[MOMENTS];
    for (int c = 0; c < MOMENTS; c++) {
        if (m->acc_size == sizeof(double)) {
            memcpy(&s[c], (const char *)words + c * sizeof(double), sizeof(double));
        } else {
            float f;
            memcpy(&f, (const char *)words + c * sizeof(float), sizeof f);
            s[c] = f;
        }
    }
    ptreg_moments_init(total, m->ref, m->ref);
    total->w = s[0];
    memcpy(total->sp, s + 1, sizeof total->sp);
    memcpy(total->sq, s + 4, sizeof total->sq);
    memcpy(total->spq, s + 7, sizeof total->spq);
    *sum_d2 = s[16];
    if (walk)
        walk_stats_from_words(words + walk_at, walk);
    return PTREG_OK;
}

static ptreg_status device_correspond(void *ctx, const double T[16], int iteration, icp_pass *pass,
                                      ptreg_walk_stats *walk, ptreg_error *err)
{
    device_run *r = ctx;
    ptreg_status st = launch_transform(r, T, err);
    st = st ? st : find_pairs(r, walk != NULL, err);
    r->pass++;
    if (!st && r->opt->filter_sigma > 0.0)
        st = sigma_limit(r, iteration, err);
    if (!st && r->opt->trim < 1.0)
        st = trim_select(r, err);
    st = st ? st : launch_moments(r, err);
    memset(pass, 0, sizeof *pass);
    st = st ? st : read_summary(r, &pass->moments, &pass->sum_r2, walk, err);
    if (!st)
        pass->used = (size_t)pass->moments.w;
    return st;
}

/* The source in the CPU path's (Morton) order, its callers' indices, and
 * the state a registration starts from. */
static ptreg_status upload_source(device_run *r, const float *source, ptreg_error *err)
{
    ptreg_icp_model *m = r->m;
    size_t n = r->n;
    uint32_t *order = malloc(n * sizeof *order);
    float *sorted = malloc(3 * n * sizeof *sorted);
    if (!order || !sorted || icp_morton_order(source, n, order)) {
        free(order), free(sorted);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    }
    for (size_t i = 0; i < n; i++)
        memcpy(sorted + 3 * i, source + 3 * (size_t)order[i], 3 * sizeof(float));
    dbuf *const *b = m->ws.buf;
    ptreg_status st = dbuf_write(b[WS_SOURCE], 0, sorted, 3 * n * sizeof(float), err);
    st = st ? st : dbuf_write(b[WS_ORDER], 0, order, n * sizeof(uint32_t), err);
    free(order), free(sorted);
    double inf = INFINITY;
    float inf_f = INFINITY;
    uint64_t select[SELECT_WORDS] = {[SELECT_KTH] = UINT64_MAX};
    st = st ? st : dbuf_fill(b[WS_NEAREST], 0, n * sizeof(uint32_t), UINT32_MAX, err);
    st = st ? st : dbuf_fill(b[WS_MEMORY], 0, PTREG_WALK_MEMORY_FLOATS * n * sizeof(float), NO_MEMORY, err);
    st = st ? st : dbuf_write(b[WS_FILTER], 0, m->acc_size == sizeof inf ? (const void *)&inf : &inf_f,
                                    m->acc_size, err);
    st = st ? st : dbuf_write(b[WS_SELECT], 0, select, sizeof select, err);
    return st;
}

static ptreg_status device_register(ptreg_icp_model *m, const float *source, size_t n, const ptreg_icp_options *opt,
                                    ptreg_icp_result *r, ptreg_error *err)
{
    size_t points;
    ptreg_model_index_points(m->index, &points);
    if (n > MAX_DEVICE_POINTS || points > MAX_DEVICE_POINTS)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "ICP on %s: at most 2^30 points per cloud", m->dev->label);
    device_run run = {.m = m, .opt = opt, .n = n, .groups = device_groups(n)};
    /* the index's measured method was timed on the CPU; on a device auto keeps the rule */
    run.nn = icp_choose_nn(opt, n, m->index, 0, r);
    run.max_d2 = opt->max_dist > 0.0 ? (float)(opt->max_dist * opt->max_dist) : INFINITY;
    run.names = run.nn == PTREG_NN_BRUTE ? m->nn->point_xyz : m->nn->slot_xyz;
    r->nn = run.nn;
    r->device = m->device;
    int walks = ptreg_nn_method_is_delaunay(run.nn);
    ptreg_status st = icp_result_alloc(r, opt->max_iter, walks, err);
    st = st ? st : workspace_reserve(m, n, err);
    st = st ? st : upload_source(&run, source, err);
    st = st ? st : icp_iterate(device_correspond, &run, n, opt, icp_tolerance(opt, m->diag2), r, err);
    return st;
}

/* Point-to-point without a robust kernel: the device path has Horn's
 * steps only. */
ptreg_status icp_device_supports(const ptreg_icp_options *opt, ptreg_error *err)
{
    if (!ptreg_icp_uses_gauss_newton(opt))
        return PTREG_OK;
    return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                           "ICP on a GPU: point-to-point without a robust kernel only (%s%s%s asked for); use "
                           "the CPU",
                           ptreg_icp_method_name(opt->method), opt->kernel ? " with the kernel " : "",
                           opt->kernel ? ptreg_robust_kernel_name(opt->kernel) : "");
}

/* A registration on a resident model (the inputs checked, r empty but its
 * device); t0 as the engine's run. */
static ptreg_status model_run(ptreg_icp_model *m, const float *source, size_t n, const ptreg_icp_options *opt,
                              double t0, ptreg_icp_result *r, ptreg_error *err)
{
    if (m->device.backend == PTREG_BACKEND_CPU)
        return icp_cpu_engine.run(&m->device, source, n, m->index, opt, t0, r, err);
    ptreg_status st = icp_device_supports(opt, err);
    if (!st) {
        pthread_mutex_lock(&m->device_turn);
        st = device_register(m, source, n, opt, r, err);
        pthread_mutex_unlock(&m->device_turn);
    }
    if (st) {
        ptreg_icp_result_free(r);
        return st;
    }
    r->time_ms = ptreg_time_ms() - t0;
    return PTREG_OK;
}

ptreg_status ptreg_icp_model_register(ptreg_icp_model *m, const float *source, size_t n,
                                      const ptreg_icp_options *opt, ptreg_icp_result *r, ptreg_error *err)
{
    double t0 = ptreg_time_ms();
    ptreg_icp_options defaults;
    size_t points;
    const float *target = ptreg_model_index_points(m->index, &points);
    ptreg_status st = icp_begin(source, n, target, points, &opt, &defaults, r, err);
    r->device = m->device;
    return st ? st : model_run(m, source, n, opt, t0, r, err);
}

/* One registration (the entry point has checked the inputs): the model
 * uploaded, used once, given back. */
static ptreg_status device_once(const ptreg_device *on, const float *source, size_t n, const ptreg_model_index *idx,
                                const ptreg_icp_options *opt, double t0, ptreg_icp_result *r, ptreg_error *err)
{
    ptreg_icp_model *m;
    ptreg_status st = ptreg_icp_model_create(idx, on, &m, err);
    if (st)
        return st;
    st = model_run(m, source, n, opt, t0, r, err);
    if (!st)
        r->upload_ms = m->upload_ms;
    ptreg_icp_model_destroy(m);
    return st;
}

static ptreg_status supports(const void *opt, const ptreg_device_info *device, ptreg_error *err)
{
    (void)device;
    return icp_device_supports(opt, err);
}

const icp_engine icp_device_engine = {{ENGINE_GPU_BACKENDS, supports}, device_once};
