/* Batched EM-ICP on a device (CUDA or OpenCL): the pairs packed on the
 * host (their schedules, targets centred on their centroids), then one
 * launch of batch.cl runs every pair's whole annealing schedule, and the
 * poses, iteration counts and stop reasons come back in one copy each.
 * Pairs go in chunks of at most CHUNK_PAIRS per launch, which bounds the
 * device memory and keeps the kernels' 32-bit indices in range. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptreg/icp.h"
#include "reg/batch/batch_device.h"

static const char *const batch_files[] = {"device/reduce.cl", "pair/exp.cl", "reg/emicp/emicp_weights.cl",
                                          "reg/batch/batch.cl", NULL};
const kernel_program batch_kernels = {"batch", batch_files};

/* batch.cl's layouts */
#define PARAM_WORDS 10 /* per target: centre, reference point, sigma2 init and final, d02, radius */
#define PARAM_CENTER 0
#define PARAM_REF_Q 3
#define PARAM_SIGMA2_INIT 6
#define PARAM_SIGMA2_FINAL 7
#define PARAM_D02 8
#define PARAM_RADIUS 9
#define SLOT_WORDS 22
#define MOMENTS 16

/* 2^20 pairs of at most 64 points: 2^26 points, 3 * 2^26 floats, well
 * inside the kernels' u32 indices; at most ~1.7 GB of device memory (64-point
 * pairs with their own targets; 0.5 GB for 10^6 pairs of 32 points and a
 * shared target). */
#define CHUNK_PAIRS ((size_t)1 << 20)

/* ---- the layout ---- */

ptreg_status batch_device_layout(size_t max_points, int shared, batch_layout *l, ptreg_error *err)
{
    /* 8 points per thread in the E-step; groups of at most 128 threads
     * (the partial moments take 128 bytes of local memory per thread);
     * 32 pairs per group, so that the Horn step fills a warp, where that
     * fits. */
    l->cap = max_points <= 16 ? 16 : max_points <= 32 ? 32 : PTREG_BATCH_DEVICE_MAX_POINTS;
    l->threads = l->cap / 8;
    l->pairs = 128 / l->threads < 32 ? 128 / l->threads : 32;
    l->shared = shared;
    const char *env = getenv("PTREG_BATCH_LAYOUT");
    if (!env || !*env)
        return PTREG_OK;
    unsigned pairs = 0, threads = 0;
    char extra;
    if (sscanf(env, "%ux%u%c", &pairs, &threads, &extra) != 2 || pairs < 1 || threads < 1 || pairs > 1024 ||
        threads > 1024 || pairs * threads > 1024)
        return ptreg_error_set(err, PTREG_ERR_ARG,
                               "PTREG_BATCH_LAYOUT='%.32s' is not PAIRSxTHREADS (pairs per group times threads per "
                               "pair at most 1024)",
                               env);
    l->pairs = pairs, l->threads = threads;
    return PTREG_OK;
}

static size_t target_floats(const batch_layout *l)
{
    return l->shared ? 3 * (size_t)l->cap : (size_t)l->pairs * (3 * (size_t)l->cap + 1);
}

size_t batch_device_local_bytes(const batch_layout *l, size_t acc_size)
{
    const size_t wg = (size_t)l->pairs * l->threads;
    return acc_size * (wg * MOMENTS + (size_t)l->pairs * SLOT_WORDS) + 2 * sizeof(uint32_t) * l->pairs +
           sizeof(float) * target_floats(l);
}

void batch_device_defines(const batch_layout *l, char *defines, size_t size)
{
    snprintf(defines, size,
             "-DWG=%u -DITEMS=1 -DBATCH_PAIRS=%u -DBATCH_TPP=%u -DBATCH_CAP=%u -DBATCH_SHARED=%d "
             "-DSTOP_MAX_ITERATIONS=%d -DSTOP_CONVERGED=%d -DSTOP_SIGMA_FINAL=%d -DSTOP_TOO_FEW=%d",
             l->pairs * l->threads, l->pairs, l->threads, l->cap, l->shared ? 1 : 0, PTREG_STOP_MAX_ITERATIONS,
             PTREG_STOP_CONVERGED, PTREG_STOP_SIGMA_FINAL, PTREG_STOP_TOO_FEW_PAIRS);
}

/* ---- one run ---- */

typedef struct batch_run {
    const ptreg_pair_set *p;
    const ptreg_batch_options *o;
    dev_handle *dev;
    dkernel *kernel;
    batch_layout layout;
    size_t acc; /* the device's sums: double (8) or float (4) */
} batch_run;

/* A chunk's arrays on the host, then on the device. */
enum {
    B_SOURCE,
    B_SOURCE_OFFSET,
    B_TARGET,
    B_TARGET_OFFSET,
    B_TARGET_PARAMS,
    B_SOURCE_PARAMS,
    B_TRANSFORM,
    B_ITERATIONS,
    B_STOP,
    B_COUNT
};

typedef struct chunk {
    size_t first, n;
    uint32_t *source_offset, *target_offset; /* n + 1, from the chunk's first point */
    float *target;                           /* centred: per pair, or the shared one */
    size_t targets;                          /* target rows: n, or 1 when shared */
    size_t target_floats;
    void *target_params; /* PARAM_WORDS acc per target */
    void *source_params; /* with translation: each source's centroid (3 acc) */
    float *transform;    /* float devices: the poses before widening */
    int *iterations;     /* when the caller passed none (the work is counted from them) */
    dbuf *buf[B_COUNT];
} chunk;

static void chunk_free(chunk *c)
{
    free(c->source_offset);
    free(c->target_offset);
    free(c->target);
    free(c->target_params);
    free(c->source_params);
    free(c->transform);
    free(c->iterations);
    for (int b = 0; b < B_COUNT; b++)
        dbuf_free(c->buf[b]);
    memset(c, 0, sizeof *c);
}

static void put(const batch_run *r, void *array, size_t i, double v)
{
    if (r->acc == sizeof(double))
        ((double *)array)[i] = v;
    else
        ((float *)array)[i] = (float)v;
}

/* A target's schedule and reference points (row `row` of the chunk's
 * target parameters) and its points as the CPU path's lanes take them:
 * float(point - centroid). */
static void pack_target(const batch_run *r, chunk *c, size_t row, const float *t, size_t n, const batch_setup *s)
{
    const size_t at = PARAM_WORDS * row;
    for (int k = 0; k < 3; k++) {
        put(r, c->target_params, at + PARAM_CENTER + (size_t)k, s->target_c[k]);
        put(r, c->target_params, at + PARAM_REF_Q + (size_t)k, r->o->translation ? s->target_c[k] : 0.0);
    }
    put(r, c->target_params, at + PARAM_SIGMA2_INIT, s->sigma2_init);
    put(r, c->target_params, at + PARAM_SIGMA2_FINAL, s->sigma2_final);
    put(r, c->target_params, at + PARAM_D02, s->d02);
    put(r, c->target_params, at + PARAM_RADIUS, s->radius);
    float *out = c->target + 3 * (size_t)c->target_offset[row];
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            out[3 * i + (size_t)k] = (float)(t[3 * i + (size_t)k] - s->target_c[k]);
}

/* Pair first + i: its setup (batch_setup_pair), its source's
 * centroid with translation, and its own target. 0 when refused. */
static int pack_pair(const batch_run *r, chunk *c, size_t i)
{
    const ptreg_pair_set *p = r->p;
    const size_t pair = c->first + i;
    batch_setup s;
    if (!batch_setup_pair(p, pair, r->o, &s))
        return 0;
    for (int k = 0; r->o->translation && k < 3; k++)
        put(r, c->source_params, 3 * i + (size_t)k, s.source_c[k]);
    if (p->target_offset)
        pack_target(r, c, i, p->target + 3 * p->target_offset[pair], batch_target_points(p, pair), &s);
    else if (i == 0)
        pack_target(r, c, 0, p->target, p->target_points, &s);
    return 1;
}

/* Every pair's numbers, on all threads; the first pair refused (its index
 * is the same for any thread count), or SIZE_MAX. A shared target without
 * translation needs the first pair's setup only: the others' are the same
 * numbers. */
static size_t pack_pairs(const batch_run *r, chunk *c)
{
    if (!r->p->target_offset && !r->o->translation)
        return pack_pair(r, c, 0) ? SIZE_MAX : c->first;
    const long n = (long)c->n;
    size_t refused = SIZE_MAX;
#pragma omp parallel for num_threads(ptreg_get_num_threads()) schedule(static, 4096) reduction(min : refused)
    for (long i = 0; i < n; i++)
        if (!pack_pair(r, c, (size_t)i))
            refused = c->first + (size_t)i < refused ? c->first + (size_t)i : refused;
    return refused;
}

static ptreg_status chunk_prepare(const batch_run *r, chunk *c, int *iterations, ptreg_error *err)
{
    const ptreg_pair_set *p = r->p;
    const size_t n = c->n;
    c->targets = p->target_offset ? n : 1;
    c->source_offset = malloc((n + 1) * sizeof *c->source_offset);
    c->target_offset = malloc((c->targets + 1) * sizeof *c->target_offset);
    c->target_params = malloc(c->targets * PARAM_WORDS * r->acc);
    c->source_params = malloc((r->o->translation ? n : 1) * 3 * r->acc);
    if (r->acc != sizeof(double))
        c->transform = malloc(16 * n * sizeof *c->transform);
    if (!iterations)
        c->iterations = malloc(n * sizeof *c->iterations);
    if (!c->source_offset || !c->target_offset || !c->target_params || !c->source_params ||
        (r->acc != sizeof(double) && !c->transform) || (!iterations && !c->iterations))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory for %zu pairs", n);
    /* offsets from the chunk's first point (< 2^26: CHUNK_PAIRS pairs of
     * at most 64 points) */
    c->target_offset[0] = c->source_offset[0] = 0;
    for (size_t i = 0; i < n; i++)
        c->source_offset[i + 1] = (uint32_t)(p->source_offset[c->first + i + 1] - p->source_offset[c->first]);
    for (size_t i = 0; i < c->targets; i++)
        c->target_offset[i + 1] = c->target_offset[i] + (uint32_t)batch_target_points(p, c->first + i);
    c->target_floats = 3 * (size_t)c->target_offset[c->targets];
    if (!(c->target = malloc(c->target_floats * sizeof *c->target)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory for %zu target points",
                               c->target_floats / 3);
    const size_t refused = pack_pairs(r, c);
    return refused == SIZE_MAX ? PTREG_OK : batch_no_extent(refused, err);
}

static ptreg_status chunk_upload(const batch_run *r, chunk *c, ptreg_error *err)
{
    const ptreg_pair_set *p = r->p;
    const size_t n = c->n, source_floats = 3 * (size_t)c->source_offset[n];
    const size_t source_params = (r->o->translation ? n : 1) * 3 * r->acc;
    ptreg_status st = dbuf_upload(r->dev, p->source + 3 * p->source_offset[c->first], source_floats * sizeof(float),
                                  &c->buf[B_SOURCE], err);
    st = st ? st : dbuf_upload(r->dev, c->source_offset, (n + 1) * sizeof(uint32_t), &c->buf[B_SOURCE_OFFSET], err);
    st = st ? st : dbuf_upload(r->dev, c->target, c->target_floats * sizeof(float), &c->buf[B_TARGET], err);
    st = st ? st
            : dbuf_upload(r->dev, c->target_offset, (c->targets + 1) * sizeof(uint32_t), &c->buf[B_TARGET_OFFSET], err);
    st = st ? st
            : dbuf_upload(r->dev, c->target_params, c->targets * PARAM_WORDS * r->acc, &c->buf[B_TARGET_PARAMS], err);
    st = st ? st : dbuf_upload(r->dev, c->source_params, source_params, &c->buf[B_SOURCE_PARAMS], err);
    st = st ? st : dbuf_alloc(r->dev, 16 * n * r->acc, &c->buf[B_TRANSFORM], err);
    st = st ? st : dbuf_alloc(r->dev, n * sizeof(int32_t), &c->buf[B_ITERATIONS], err);
    st = st ? st : dbuf_alloc(r->dev, n * sizeof(int32_t), &c->buf[B_STOP], err);
    return st;
}

static karg karg_acc(const batch_run *r, double v) { return r->acc == sizeof(double) ? KARG_F64(v) : KARG_F32(v); }

/* The launch, timed by the device's events (kernel_ms) where the device
 * can: a timing it refuses leaves the time unknown (-1), never the work
 * undone (a fault on the device is still seen by the next read). */
static ptreg_status chunk_launch(const batch_run *r, chunk *c, double *kernel_ms, ptreg_error *err)
{
    const ptreg_batch_options *o = r->o;
    dbuf *const *b = c->buf;
    const karg args[] = {KARG_BUF(b[B_SOURCE]),
                         KARG_BUF(b[B_SOURCE_OFFSET]),
                         KARG_BUF(b[B_TARGET]),
                         KARG_BUF(b[B_TARGET_OFFSET]),
                         KARG_BUF(b[B_TARGET_PARAMS]),
                         KARG_BUF(b[B_SOURCE_PARAMS]),
                         KARG_U32(c->n),
                         KARG_U32(r->p->target_offset ? 0 : r->p->target_points),
                         KARG_U32(o->translation ? 1 : 0),
                         KARG_U32(o->max_iter),
                         karg_acc(r, o->sigma_factor),
                         karg_acc(r, o->tol),
                         KARG_BUF(b[B_TRANSFORM]),
                         KARG_BUF(b[B_ITERATIONS]),
                         KARG_BUF(b[B_STOP])};
    const size_t groups[3] = {(c->n + r->layout.pairs - 1) / r->layout.pairs, 1, 1};
    const size_t local[3] = {(size_t)r->layout.pairs * r->layout.threads, 1, 1};
    devent start = {0}, end = {0};
    ptreg_error timing;
    double ms = 0.0;
    int timed = !dev_event_record(r->dev, &start, &timing);
    ptreg_status st = dev_launch_groups(r->kernel, 1, groups, local, sizeof args / sizeof args[0], args, err);
    timed = timed && !st && !dev_event_record(r->dev, &end, &timing) && !dev_event_elapsed(&start, &end, &ms, &timing);
    dev_event_free(&start);
    dev_event_free(&end);
    *kernel_ms = timed && *kernel_ms >= 0.0 ? *kernel_ms + ms : -1.0;
    return st;
}

/* The answers straight into the caller's arrays (a float device's poses
 * widened on all threads); the work they took, summed in pair order. */
static ptreg_status chunk_results(const batch_run *r, chunk *c, double *transform, int *iterations, int *stop,
                                  double *terms, ptreg_error *err)
{
    const ptreg_pair_set *p = r->p;
    const size_t n = c->n;
    int *its = iterations ? iterations + c->first : c->iterations;
    void *poses = r->acc == sizeof(double) ? (void *)(transform + 16 * c->first) : (void *)c->transform;
    ptreg_status st = dbuf_read(c->buf[B_TRANSFORM], 0, poses, 16 * n * r->acc, err);
    st = st ? st : dbuf_read(c->buf[B_ITERATIONS], 0, its, n * sizeof(int), err);
    if (!st && stop)
        st = dbuf_read(c->buf[B_STOP], 0, stop + c->first, n * sizeof(int), err);
    if (st)
        return st;
    if (r->acc != sizeof(double)) {
        const long words = (long)(16 * n);
#pragma omp parallel for num_threads(ptreg_get_num_threads()) schedule(static, 65536)
        for (long i = 0; i < words; i++)
            transform[16 * c->first + (size_t)i] = c->transform[i];
    }
    for (size_t i = 0; i < n; i++) {
        const size_t pair = c->first + i;
        *terms += (double)(p->source_offset[pair + 1] - p->source_offset[pair]) * (double)batch_target_points(p, pair) *
                  its[i];
    }
    return PTREG_OK;
}

/* ---- the engine ---- */

/* The program for the pairs' layout, and its kernel. */
static ptreg_status open_kernel(batch_run *r, ptreg_error *err)
{
    r->acc = r->dev->info.fp64 ? sizeof(double) : sizeof(float);
    ptreg_status st = batch_device_layout(batch_largest_pair(r->p), r->p->target_offset == NULL, &r->layout, err);
    if (st)
        return st;
    /* fewer pairs per group on a device with less local memory than the
     * layout wants (OpenCL promises only 32 KB) */
    const ptreg_device_info *info = &r->dev->info;
    const char *asked = getenv("PTREG_BATCH_LAYOUT");
    while (!(asked && *asked) && r->layout.pairs > 1 &&
           batch_device_local_bytes(&r->layout, r->acc) > info->local_memory_bytes)
        r->layout.pairs /= 2;
    const size_t wg = (size_t)r->layout.pairs * r->layout.threads;
    const size_t local = batch_device_local_bytes(&r->layout, r->acc);
    if (wg > info->max_work_group || local > info->local_memory_bytes)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "batch on %s: a group of %u pairs x %u threads needs %zu threads and %zu bytes of "
                               "local memory; the device has %zu and %llu",
                               r->dev->label, r->layout.pairs, r->layout.threads, wg, local, info->max_work_group,
                               (unsigned long long)info->local_memory_bytes);
    /* fewer pairs again where the kernel's own limit is below the
     * device's (ROCm, Intel: a layout is asked for by name, else refused) */
    for (;;) {
        char defines[512];
        batch_device_defines(&r->layout, defines, sizeof defines);
        dprogram *program;
        st = dev_program(r->dev, &batch_kernels, defines, &program, err);
        st = st ? st : dev_kernel(program, "ptreg_batch_emicp", &r->kernel, err);
        const size_t threads = (size_t)r->layout.pairs * r->layout.threads;
        if (st || threads <= dev_kernel_limit(r->kernel) || (asked && *asked) || r->layout.pairs == 1)
            return st ? st : dev_kernel_fits(r->kernel, threads, err);
        r->layout.pairs /= 2;
    }
}

static ptreg_status device_supports(const void *options, const ptreg_device_info *device, ptreg_error *err)
{
    if (!((const ptreg_batch_options *)options)->reference)
        return PTREG_OK;
    return engine_cpu_only("batch: the reference loop", device, err);
}

/* The device and the kernel for the pairs' layout; *isa: the device's
 * name. */
static ptreg_status device_open(const ptreg_pair_set *p, const ptreg_batch_options *o, const ptreg_device *on,
                                void **ctx, const char **isa, ptreg_error *err)
{
    batch_run *r = calloc(1, sizeof *r);
    if (!r)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "batch: out of memory");
    *r = (batch_run){.p = p, .o = o};
    *isa = ptreg_device_name(on);
    ptreg_status st = dev_get(on, &r->dev, err);
    st = st ? st : open_kernel(r, err);
    if (st) {
        free(r);
        return st;
    }
    *ctx = r;
    return PTREG_OK;
}

/* One chunk of pairs: packed, uploaded, run in one launch, read back. */
static ptreg_status device_pairs(void *ctx, size_t first, size_t n, double *transform, int *iterations, int *stop,
                                 double *terms, double *kernel_ms, ptreg_error *err)
{
    const batch_run *r = ctx;
    chunk c = {.first = first, .n = n};
    ptreg_status st = chunk_prepare(r, &c, iterations, err);
    st = st ? st : chunk_upload(r, &c, err);
    st = st ? st : chunk_launch(r, &c, kernel_ms, err);
    st = st ? st : chunk_results(r, &c, transform, iterations, stop, terms, err);
    chunk_free(&c);
    return st;
}

/* The device and its programs stay open (dev_get's, for the next call). */
static void device_close(void *ctx) { free(ctx); }

const batch_engine batch_device_engine = {
    .base = {ENGINE_GPU_BACKENDS, device_supports},
    .max_points = PTREG_BATCH_DEVICE_MAX_POINTS,
    .chunk = CHUNK_PAIRS,
    .open = device_open,
    .pairs = device_pairs,
    .close = device_close,
};
