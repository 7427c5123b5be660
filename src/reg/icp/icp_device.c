/* Rigid ICP with every step of an iteration on a device (CUDA or OpenCL):
 * the transform of the source (and of its normals), the correspondences
 * (brute force, the k-d tree seeded by the last answer, the Delaunay
 * walks), the filters (max distance, the sigma filter, trimming by a
 * device selection, not a host sort) and what a step needs of the kept
 * pairs by fixed-order two-pass reductions: their moments (Horn's), or
 * each pair linearised and the 21 + 6 sums of the normal equations
 * (Gauss-Newton's: every method and robust kernel). The step is solved on
 * the host, in double, from one small copy per iteration: the iteration's
 * only host synchronisation. The model is uploaded once (ptreg_icp_model)
 * and reused frame after frame, its normals with it once estimated. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_device.h"
#include "nn/searcher.h"
#include "reg/icp/icp_impl.h"
#include "core/numeric.h"

static const char *const icp_files[] = {"device/reduce.cl", "reg/icp/icp.cl", NULL};
const kernel_program icp_kernels = {"ICP", icp_files};

/* icp.cl's layouts */
#define MOMENTS 17   /* w, sp[3], sq[3], spq[9], d2sum */
#define GN_FIELDS 30 /* H[21], g[6], cost, summed squared distances, pairs used */
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
    WS_SOURCE,  /* the source in Morton order, x y z */
    WS_MOVED,   /* under the current transform */
    WS_NEAREST, /* each point's nearest target point: the method's name for it, and the next seed */
    WS_DIST2,
    WS_ORDER,          /* per position: the caller's index (trimming's ties) */
    WS_FIRST_EQUAL,    /* per position: the first of its run of equal points, where its answer is */
    WS_MEMORY,         /* seeded walks: each answer's certificate */
    WS_INFO,           /* each walk's record */
    WS_PARTIALS,       /* per group: the moments */
    WS_SIGMA_PARTIALS, /* per group: the sigma filter's sums */
    WS_FILTER,         /* the sigma filter's limit */
    WS_SELECT,         /* trimming's threshold and selection state */
    WS_HIST,           /* per group: trimming's histogram */
    WS_WALK_PARTIALS,  /* per group: the walks' statistics */
    WS_SUMMARY,        /* what a pass copies back: the sums, then the walks' statistics */
    WS_COUNT
};

typedef struct icp_workspace {
    size_t capacity;
    dbuf *buf[WS_COUNT];
    int first_equal_identity; /* WS_FIRST_EQUAL holds i at i: a source without equal points needs no upload */
    /* GICP and SYMMETRIC: the source's normals in its order there, and
     * turned (grown on first use: point-to-point allocates nothing more) */
    size_t normals_capacity;
    dbuf *source_normals, *moved_normals;
} icp_workspace;

/* The target's normals on the device, in its original order: the model's
 * own (ptreg_icp_model_set_normals: uploaded once), estimated (kept while
 * the options that made them stay) or a registration's (uploaded each
 * time: their contents may change between calls). */
typedef struct icp_target_normals {
    dbuf *buf;
    const float *model_normals; /* ptreg_icp_model_set_normals' */
    int holds_model_normals;    /* buf holds them */
    int estimated_k;            /* > 0: buf holds these options' estimate */
    double estimated_radius;
} icp_target_normals;

/* What the engine keeps of a model (its resident part) on a GPU device. */
typedef struct icp_resident {
    ptreg_device device;
    const ptreg_model_index *index;
    double ref[3]; /* the target's bounding-box centre: the sums' centre */
    dev_handle *dev;
    nn_device_model *nn;
    dkernel *transform, *moments, *gn, *total, *sigma_partials, *sigma_limit, *trim_histogram, *trim_pick;
    size_t acc_size; /* the device's sums: double (8) or float (4) */
    icp_workspace ws;
    icp_target_normals normals;
    double compile_ms, upload_ms;
    /* A registration fills the workspace (its source, pairs and sums):
     * threads sharing the model take their turns on the device. */
    pthread_mutex_t device_turn;
} icp_resident;

/* ---- the model ---- */

static void normals_free(icp_workspace *ws)
{
    dbuf_free(ws->source_normals);
    dbuf_free(ws->moved_normals);
    ws->source_normals = ws->moved_normals = NULL;
    ws->normals_capacity = 0;
}

static void workspace_free(icp_workspace *ws)
{
    for (int i = 0; i < WS_COUNT; i++) {
        dbuf_free(ws->buf[i]);
        ws->buf[i] = NULL;
    }
    ws->capacity = 0;
    normals_free(ws);
}

/* A group's sums: the moments or the normal equations, whichever is longer. */
#define PASS_FIELDS (GN_FIELDS > MOMENTS ? GN_FIELDS : MOMENTS)

/* The walks' statistics follow a pass's sums in the summary (in 8-byte
 * words), so that one copy brings back both. */
static size_t summary_walk_offset(const icp_resident *m, int fields) { return (fields * m->acc_size + 7) / 8; }

static ptreg_status workspace_reserve(icp_resident *m, size_t n, ptreg_error *err)
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
        [WS_FIRST_EQUAL] = n * sizeof(uint32_t),
        [WS_MEMORY] = PTREG_WALK_MEMORY_FLOATS * n * sizeof(float),
        [WS_INFO] = n * sizeof(uint32_t),
        [WS_PARTIALS] = groups * PASS_FIELDS * acc,
        [WS_SIGMA_PARTIALS] = groups * SIGMA_SUMS * acc,
        [WS_FILTER] = acc,
        [WS_SELECT] = SELECT_WORDS * sizeof(uint64_t),
        [WS_HIST] = groups * TRIM_BINS * sizeof(uint32_t),
        [WS_WALK_PARTIALS] = groups * PTREG_WALK_FIELDS * sizeof(uint64_t),
        [WS_SUMMARY] = (summary_walk_offset(m, PASS_FIELDS) + PTREG_WALK_FIELDS) * sizeof(uint64_t),
    };
    for (int i = 0; i < WS_COUNT; i++) {
        ptreg_status st = dbuf_alloc(m->dev, bytes[i], &ws->buf[i], err);
        if (st) {
            workspace_free(ws);
            return st;
        }
    }
    ws->capacity = n;
    ws->first_equal_identity = 0;
    return PTREG_OK;
}

static ptreg_status normals_reserve(icp_resident *m, size_t n, ptreg_error *err)
{
    icp_workspace *ws = &m->ws;
    if (n <= ws->normals_capacity)
        return PTREG_OK;
    normals_free(ws);
    ptreg_status st = dbuf_alloc(m->dev, 3 * n * sizeof(float), &ws->source_normals, err);
    st = st ? st : dbuf_alloc(m->dev, 3 * n * sizeof(float), &ws->moved_normals, err);
    if (st)
        normals_free(ws);
    else
        ws->normals_capacity = n;
    return st;
}

static ptreg_status get_kernels(icp_resident *m, dprogram *p, ptreg_error *err)
{
    ptreg_status st = dev_kernel(p, "ptreg_icp_transform", &m->transform, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_moments", &m->moments, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_gn", &m->gn, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_total", &m->total, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_sigma_partials", &m->sigma_partials, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_sigma_limit", &m->sigma_limit, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_trim_histogram", &m->trim_histogram, err);
    st = st ? st : dev_kernel(p, "ptreg_icp_trim_pick", &m->trim_pick, err);
    return st;
}

/* Kernels first (compile_ms), then the model's arrays (upload_ms). */
static ptreg_status open_on_device(icp_resident *m, ptreg_error *err)
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

static void device_close(void *resident)
{
    icp_resident *m = resident;
    workspace_free(&m->ws);
    dbuf_free(m->normals.buf);
    nn_device_destroy(m->nn);
    pthread_mutex_destroy(&m->device_turn);
    free(m);
}

/* The model on the device: its kernels, its index uploaded. */
static ptreg_status device_open(ptreg_icp_model *model, ptreg_error *err)
{
    icp_resident *m = calloc(1, sizeof *m);
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    pthread_mutex_init(&m->device_turn, NULL);
    m->device = model->device;
    m->index = model->index;
    memcpy(m->ref, model->ref, sizeof m->ref);
    ptreg_status st = open_on_device(m, err);
    if (st) {
        device_close(m);
        return st;
    }
    model->resident = m;
    return PTREG_OK;
}

static void device_info(const void *resident, ptreg_icp_model_info *info)
{
    const icp_resident *m = resident;
    pthread_mutex_t *turn = (pthread_mutex_t *)&m->device_turn; /* the workspace may be growing */
    pthread_mutex_lock(turn);
    info->compile_ms = m->compile_ms;
    info->upload_ms = m->upload_ms;
    info->device_bytes = m->nn ? nn_device_bytes(m->nn) : 0;
    for (int i = 0; i < WS_COUNT; i++)
        info->device_bytes += m->ws.buf[i] ? m->ws.buf[i]->bytes : 0;
    const dbuf *more[] = {m->ws.source_normals, m->ws.moved_normals, m->normals.buf};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++)
        info->device_bytes += more[i] ? more[i]->bytes : 0;
    pthread_mutex_unlock(turn);
}

/* ---- one registration on the device ---- */

typedef struct device_run {
    icp_resident *m;
    const ptreg_icp_options *opt;
    size_t n, groups;
    ptreg_nn_method nn;
    int pass; /* correspondence passes made */
    float max_d2;
    const dbuf *names; /* the target's points by the method's answers */
    int gauss_newton;  /* the normal equations' sums, not the moments */
    int fields;        /* sums per pass: GN_FIELDS or MOMENTS */
    int turned;        /* the source's normals turned with it (GICP, SYMMETRIC) */
} device_run;

/* A number in the precision of the device's sums (acc_t). */
static karg karg_acc(const icp_resident *m, double v)
{
    return m->acc_size == sizeof(double) ? KARG_F64(v) : KARG_F32(v);
}

static ptreg_status launch_transform(device_run *r, const double T[16], ptreg_error *err)
{
    const icp_resident *m = r->m;
    dbuf *const *b = m->ws.buf;
    karg args[18] = {KARG_BUF(b[WS_SOURCE]), KARG_U32(r->n)};
    for (int row = 0; row < 3; row++)
        for (int c = 0; c < 4; c++)
            args[2 + 4 * row + c] = karg_acc(m, T[4 * row + c]);
    args[14] = KARG_BUF(b[WS_MOVED]);
    args[15] = KARG_U32(r->turned);
    /* without normals the kernel reads and writes neither: any live buffer */
    args[16] = KARG_BUF(r->turned ? m->ws.source_normals : b[WS_SOURCE]);
    args[17] = KARG_BUF(r->turned ? m->ws.moved_normals : b[WS_MOVED]);
    return dev_launch(m->transform, r->n, PTREG_DEVICE_WG, 18, args, err);
}

static int seeded_walk(ptreg_nn_method nn) { return nn == PTREG_NN_DELAUNAY_PNN || nn == PTREG_NN_DELAUNAY_PNNOPT; }

static ptreg_status find_pairs(device_run *r, int want_walk_stats, ptreg_error *err)
{
    const icp_resident *m = r->m;
    dbuf *const *b = m->ws.buf;
    if (r->nn == PTREG_NN_BRUTE)
        return nn_device_brute(m->nn, b[WS_MOVED], r->n, b[WS_NEAREST], b[WS_DIST2], err);
    if (!ptreg_nn_method_is_delaunay(r->nn))
        return nn_device_kdtree(m->nn, b[WS_MOVED], r->n, r->max_d2, b[WS_FIRST_EQUAL], b[WS_NEAREST], b[WS_DIST2],
                                err);
    int start = nn_walk_start(r->nn, r->pass > 0);
    dbuf *memory = seeded_walk(r->nn) ? b[WS_MEMORY] : NULL;
    ptreg_status st = nn_device_walk(m->nn, b[WS_MOVED], r->n, start, b[WS_NEAREST], b[WS_DIST2], memory, b[WS_INFO],
                                     err);
    if (!st && want_walk_stats)
        st = nn_device_walk_stats(m->nn, b[WS_INFO], r->n, b[WS_WALK_PARTIALS], b[WS_SUMMARY],
                                  summary_walk_offset(m, r->fields), err);
    return st;
}

/* The sigma filter's limit for this iteration (+inf when it does not
 * apply yet): filter[0]. */
static ptreg_status sigma_limit(device_run *r, int iteration, ptreg_error *err)
{
    const icp_resident *m = r->m;
    dbuf *const *b = m->ws.buf;
    int apply = iteration >= r->opt->filter_start;
    ptreg_status st = PTREG_OK;
    if (apply) {
        karg part[] = {KARG_BUF(b[WS_DIST2]), KARG_BUF(b[WS_FIRST_EQUAL]), KARG_U32(r->n), KARG_F32(r->max_d2),
                       KARG_BUF(b[WS_SIGMA_PARTIALS])};
        st = dev_launch(m->sigma_partials, r->groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, 5, part, err);
    }
    karg lim[] = {KARG_BUF(b[WS_SIGMA_PARTIALS]), KARG_U32(r->groups), KARG_U32(apply),
                  karg_acc(m, r->opt->filter_sigma), KARG_BUF(b[WS_FILTER])};
    return st ? st : dev_launch(m->sigma_limit, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 5, lim, err);
}

/* The key of the ceil(trim * used)-th closest pair, digit by digit. */
static ptreg_status trim_select(device_run *r, ptreg_error *err)
{
    const icp_resident *m = r->m;
    dbuf *const *b = m->ws.buf;
    ptreg_status st = PTREG_OK;
    for (uint32_t pass = 0; pass < TRIM_PASSES && !st; pass++) {
        karg hist[] = {KARG_BUF(b[WS_DIST2]), KARG_BUF(b[WS_FIRST_EQUAL]), KARG_BUF(b[WS_ORDER]),  KARG_U32(r->n),
                       KARG_F32(r->max_d2),   KARG_BUF(b[WS_FILTER]),      KARG_BUF(b[WS_SELECT]), KARG_U32(pass),
                       KARG_BUF(b[WS_HIST])};
        karg pick[] = {KARG_BUF(b[WS_HIST]), KARG_U32(r->groups), KARG_U32(pass), karg_acc(m, r->opt->trim),
                       KARG_BUF(b[WS_SELECT])};
        st = dev_launch(m->trim_histogram, r->groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, 9, hist, err);
        st = st ? st : dev_launch(m->trim_pick, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 5, pick, err);
    }
    return st;
}

/* The pass's sums, per group then the groups in order into the summary. */
static ptreg_status launch_sums(device_run *r, const dkernel *k, size_t nargs, const karg *args, uint32_t fields,
                                ptreg_error *err)
{
    dbuf *const *b = r->m->ws.buf;
    karg total[] = {KARG_BUF(b[WS_PARTIALS]), KARG_U32(r->groups), KARG_U32(fields), KARG_BUF(b[WS_SUMMARY])};
    ptreg_status st = dev_launch(k, r->groups * PTREG_DEVICE_WG, PTREG_DEVICE_WG, nargs, args, err);
    return st ? st : dev_launch(r->m->total, PTREG_DEVICE_WG, PTREG_DEVICE_WG, 4, total, err);
}

static ptreg_status launch_moments(device_run *r, ptreg_error *err)
{
    const icp_resident *m = r->m;
    dbuf *const *b = m->ws.buf;
    karg args[] = {KARG_BUF(b[WS_MOVED]),  KARG_BUF(b[WS_NEAREST]), KARG_BUF(b[WS_DIST2]),  KARG_BUF(b[WS_FIRST_EQUAL]),
                   KARG_BUF(b[WS_ORDER]),  KARG_U32(r->n),          KARG_BUF(r->names),     KARG_F32(r->max_d2),
                   KARG_BUF(b[WS_FILTER]), KARG_BUF(b[WS_SELECT]),  karg_acc(m, m->ref[0]), karg_acc(m, m->ref[1]),
                   karg_acc(m, m->ref[2]), KARG_BUF(b[WS_PARTIALS])};
    return launch_sums(r, m->moments, sizeof args / sizeof *args, args, MOMENTS, err);
}

/* icp.cl's GN_* numbers are the enums' */
_Static_assert(PTREG_ICP_POINT == 0 && PTREG_ICP_PLANE == 1 && PTREG_ICP_GICP == 2 && PTREG_ICP_SYMMETRIC == 3,
               "icp.cl's method numbers");
_Static_assert(PTREG_KERNEL_HUBER == 1 && PTREG_KERNEL_CAUCHY == 2 && PTREG_KERNEL_TUKEY == 3 && PTREG_KERNEL_GM == 4,
               "icp.cl's kernel numbers");

static ptreg_status launch_gauss_newton(device_run *r, ptreg_error *err)
{
    const icp_resident *m = r->m;
    const ptreg_icp_options *opt = r->opt;
    dbuf *const *b = m->ws.buf;
    /* buffers a method does not read: any live one */
    const dbuf *target_normals = opt->method != PTREG_ICP_POINT ? m->normals.buf : r->names;
    const dbuf *moved_normals = r->turned ? m->ws.moved_normals : b[WS_MOVED];
    int by_slot = r->names != m->nn->point_xyz;
    const dbuf *slot_index = m->nn->tree.index_of_slot ? m->nn->tree.index_of_slot : b[WS_ORDER];
    karg args[] = {KARG_BUF(b[WS_MOVED]),       KARG_BUF(b[WS_NEAREST]),        KARG_BUF(b[WS_DIST2]),
                   KARG_BUF(b[WS_FIRST_EQUAL]), KARG_BUF(b[WS_ORDER]),          KARG_U32(r->n),
                   KARG_BUF(r->names),          KARG_BUF(target_normals),       KARG_BUF(slot_index),
                   KARG_U32(by_slot),           KARG_BUF(moved_normals),        KARG_F32(r->max_d2),
                   KARG_BUF(b[WS_FILTER]),      KARG_BUF(b[WS_SELECT]),         karg_acc(m, m->ref[0]),
                   karg_acc(m, m->ref[1]),      karg_acc(m, m->ref[2]),         KARG_U32(opt->method),
                   KARG_U32(opt->kernel),       karg_acc(m, opt->kernel_scale), karg_acc(m, opt->gicp_epsilon),
                   KARG_BUF(b[WS_PARTIALS])};
    return launch_sums(r, m->gn, sizeof args / sizeof *args, args, GN_FIELDS, err);
}

/* The pass's one copy back: its sums (the moments or the normal
 * equations, their first `fields` words), and the walks' statistics,
 * only what the pass made: 8 bytes a sum, 4 without double precision. */
static ptreg_status read_summary(const device_run *r, double *s, ptreg_walk_stats *walk, ptreg_error *err)
{
    const icp_resident *m = r->m;
    const int fields = r->fields;
    uint64_t words[(PASS_FIELDS * sizeof(double) + 7) / 8 + PTREG_WALK_FIELDS];
    size_t walk_at = summary_walk_offset(m, fields);
    size_t bytes = walk ? (walk_at + PTREG_WALK_FIELDS) * 8 : fields * m->acc_size;
    ptreg_status st = dbuf_read(m->ws.buf[WS_SUMMARY], 0, words, bytes, err);
    if (st)
        return st;
    for (int c = 0; c < fields; c++) {
        if (m->acc_size == sizeof(double)) {
            memcpy(&s[c], (const char *)words + c * sizeof(double), sizeof(double));
        } else {
            float f;
            memcpy(&f, (const char *)words + c * sizeof(float), sizeof f);
            s[c] = f;
        }
    }
    if (walk)
        walk_stats_from_words(words + walk_at, walk);
    return PTREG_OK;
}

/* A pass from the summary's sums (the moments' or the normal equations'
 * layout in icp.cl). */
static void pass_from_sums(const device_run *r, const double *s, icp_pass *pass)
{
    const icp_resident *m = r->m;
    memset(pass, 0, sizeof *pass);
    ptreg_moments_init(&pass->moments, m->ref, m->ref); /* the step's centre */
    if (r->gauss_newton) {
        memcpy(pass->eq.H, s, sizeof pass->eq.H);
        memcpy(pass->eq.g, s + 21, sizeof pass->eq.g);
        pass->eq.cost = s[27];
        pass->sum_r2 = s[28];
        pass->used = (size_t)s[29];
        return;
    }
    ptreg_moments *total = &pass->moments;
    total->w = s[0];
    memcpy(total->sp, s + 1, sizeof total->sp);
    memcpy(total->sq, s + 4, sizeof total->sq);
    memcpy(total->spq, s + 7, sizeof total->spq);
    pass->sum_r2 = s[16];
    pass->used = (size_t)total->w;
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
    if (!st)
        st = r->gauss_newton ? launch_gauss_newton(r, err) : launch_moments(r, err);
    double sums[PASS_FIELDS];
    st = st ? st : read_summary(r, sums, walk, err);
    if (!st)
        pass_from_sums(r, sums, pass);
    return st;
}

/* first[i]: the first position of the run of equal points (bit for bit)
 * that position i of the sorted source belongs to; how many are not the
 * first of theirs. */
static size_t first_equal_of(const float *sorted, size_t n, uint32_t *first)
{
    size_t repeats = 0;
    for (size_t i = 0; i < n; i++) {
        int repeat = i > 0 && !memcmp(sorted + 3 * i, sorted + 3 * (i - 1), 3 * sizeof(float));
        first[i] = repeat ? first[i - 1] : (uint32_t)i;
        repeats += repeat;
    }
    return repeats;
}

/* The source (in the CPU engine's Morton order, icp_sort_source) on the
 * device: its rows, its callers' indices, its runs of equal points and for
 * GICP and SYMMETRIC its normals; and the state a registration starts
 * from. */
static ptreg_status upload_source(device_run *r, const icp_sorted_source *src, ptreg_error *err)
{
    icp_resident *m = r->m;
    size_t n = r->n;
    uint32_t *first = malloc(n * sizeof *first);
    if (!first)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory for %zu points", n);
    int identity = first_equal_of(src->xyz, n, first) == 0;
    dbuf *const *b = m->ws.buf;
    ptreg_status st = dbuf_write(b[WS_SOURCE], 0, src->xyz, 3 * n * sizeof(float), err);
    st = st ? st : dbuf_write(b[WS_ORDER], 0, src->order, n * sizeof(uint32_t), err);
    /* the identity, once written, serves every source without repeats (a
     * prefix of it any shorter one) */
    if (!st && !(identity && m->ws.first_equal_identity)) {
        m->ws.first_equal_identity = 0;
        st = dbuf_write(b[WS_FIRST_EQUAL], 0, first, n * sizeof(uint32_t), err);
        m->ws.first_equal_identity = !st && identity && n == m->ws.capacity;
    }
    free(first);
    st = st || !r->turned ? st : normals_reserve(m, n, err);
    if (!st && r->turned)
        st = dbuf_write(m->ws.source_normals, 0, src->normals, 3 * n * sizeof(float), err);
    double inf = INFINITY;
    float inf_f = INFINITY;
    uint64_t select[SELECT_WORDS] = {[SELECT_KTH] = UINT64_MAX};
    st = st ? st : dbuf_fill(b[WS_NEAREST], 0, n * sizeof(uint32_t), UINT32_MAX, err);
    st = st ? st : dbuf_fill(b[WS_MEMORY], 0, PTREG_WALK_MEMORY_FLOATS * n * sizeof(float), NO_MEMORY, err);
    st = st ? st
            : dbuf_write(b[WS_FILTER], 0, m->acc_size == sizeof inf ? (const void *)&inf : &inf_f, m->acc_size, err);
    st = st ? st : dbuf_write(b[WS_SELECT], 0, select, sizeof select, err);
    return st;
}

/* Whether the device holds the target's normals these options ask for. */
static int target_normals_held(const icp_target_normals *tn, const float *given, const ptreg_icp_options *opt)
{
    if (given)
        return given == tn->model_normals && tn->holds_model_normals;
    return tn->estimated_k == opt->normal_k && tn->estimated_radius == opt->normal_radius;
}

/* PLANE, GICP and SYMMETRIC: the target's normals on the device (the
 * options' target_normals: the registration's, else the model's, else
 * estimated): the model's and estimated ones stay for the next
 * registration; a registration's own are uploaded each time. */
static ptreg_status ensure_target_normals(icp_resident *m, const ptreg_icp_options *opt, ptreg_icp_result *res,
                                          ptreg_error *err)
{
    icp_target_normals *tn = &m->normals;
    const float *given = opt->target_normals;
    if (opt->method == PTREG_ICP_POINT || target_normals_held(tn, given, opt))
        return PTREG_OK;
    size_t points;
    const float *target = ptreg_model_index_points(m->index, &points);
    const float *normals;
    float *owned;
    tn->estimated_k = 0, tn->holds_model_normals = 0; /* until the new ones are up */
    ptreg_status st = icp_cloud_normals(target, points, nn_index_tree(m->index), given, opt, &normals, &owned, res,
                                        err);
    if (!st && !tn->buf)
        st = dbuf_alloc(m->dev, 3 * points * sizeof(float), &tn->buf, err);
    st = st ? st : dbuf_write(tn->buf, 0, normals, 3 * points * sizeof(float), err);
    if (!st && owned) {
        tn->estimated_k = opt->normal_k;
        tn->estimated_radius = opt->normal_radius;
    }
    tn->holds_model_normals = !st && given && given == tn->model_normals;
    free(owned);
    return st;
}

/* The model's normals (model->normals) up once, not with every
 * registration. */
static ptreg_status device_set_normals(ptreg_icp_model *model, ptreg_error *err)
{
    icp_resident *m = model->resident;
    pthread_mutex_lock(&m->device_turn);
    icp_target_normals *tn = &m->normals;
    tn->model_normals = model->normals;
    tn->holds_model_normals = 0;
    ptreg_icp_options opt;
    ptreg_icp_options_default(&opt);
    opt.method = PTREG_ICP_PLANE;
    opt.target_normals = model->normals;
    ptreg_icp_result unused = {0};
    ptreg_status st = ensure_target_normals(m, &opt, &unused, err);
    pthread_mutex_unlock(&m->device_turn);
    return st;
}

/* A registration's set-up on the device, which is its own until
 * device_end: the workspace, the target's normals, the source. */
static ptreg_status device_begin(const icp_setup *setup, void **ctx, ptreg_icp_result *r, ptreg_error *err)
{
    icp_resident *m = setup->model->resident;
    const ptreg_icp_options *opt = setup->opt;
    const size_t n = setup->n;
    device_run *run = calloc(1, sizeof *run);
    if (!run)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "ICP: out of memory");
    pthread_mutex_lock(&m->device_turn);
    *ctx = run;
    run->m = m;
    size_t points;
    ptreg_model_index_points(m->index, &points);
    if (n > MAX_DEVICE_POINTS || points > MAX_DEVICE_POINTS)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "ICP on %s: at most 2^30 points per cloud", m->dev->label);
    *run = (device_run){.m = m,
                        .opt = opt,
                        .n = n,
                        .groups = device_groups(n),
                        .nn = setup->nn,
                        .max_d2 = setup->max_d2,
                        .gauss_newton = setup->gauss_newton};
    run->names = run->nn == PTREG_NN_BRUTE ? m->nn->point_xyz : m->nn->slot_xyz;
    run->fields = run->gauss_newton ? GN_FIELDS : MOMENTS;
    run->turned = icp_uses_source_normals(opt);
    ptreg_status st = workspace_reserve(m, n, err);
    st = st ? st : ensure_target_normals(m, opt, r, err);
    icp_sorted_source sorted = {NULL, NULL, NULL};
    st = st ? st : icp_sort_source(setup->source, n, opt, run->turned, &sorted, r, err);
    st = st ? st : upload_source(run, &sorted, err);
    icp_sorted_source_free(&sorted);
    return st;
}

static void device_end(void *ctx)
{
    device_run *run = ctx;
    pthread_mutex_unlock(&run->m->device_turn);
    free(run);
}

/* A similarity's step needs sum |p|^2, which the device's moments leave
 * out: the CPU fits it. */
static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    (void)device;
    const ptreg_icp_options *o = options;
    if (o && o->scale)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "ICP: a fitted scale (similarity) runs on the CPU only");
    return PTREG_OK;
}

/* Every method, kernel, filter and optimiser; a scale on the CPU. The
 * index's measured method was timed on the CPU: on a device auto keeps
 * the rule. */
const icp_engine icp_device_engine = {
    .base = {ENGINE_GPU_BACKENDS, device_supports},
    .measured_nn = 0,
    .open = device_open,
    .close = device_close,
    .info = device_info,
    .set_normals = device_set_normals,
    .begin = device_begin,
    .correspond = device_correspond,
    .end = device_end,
};
