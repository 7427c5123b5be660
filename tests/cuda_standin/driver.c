#define _GNU_SOURCE /* vsnprintf, aligned_alloc */
/* libcuda.so.1, the stand-in (README.md): the CUDA driver functions ptreg
 * calls, with the driver's own signatures (cuda.h maps each name to the
 * versioned symbol the real driver exports) and error codes, on one
 * pretend H100 whose kernels run on POCL. What it enforces, and what a
 * real GPU would not tell you but it does, is listed in README.md. Every
 * call holds one lock: the stand-in is simple, not fast.
 *
 * Environment (scripts/with-cuda-standin.sh sets the first two):
 *   CUDA_STANDIN_DIR             records of the images NVRTC made (record.c)
 *   CUDA_STANDIN_DRIVER_VERSION  the driver it pretends to be (13000)
 *   CUDA_STANDIN_MEMORY          device memory in bytes (80 GiB)
 *   CUDA_STANDIN_FAIL            alloc:N, launch:N, copy:N, fault:N (the N-th
 *                                launch faults), timing:N (the N-th
 *                                cuEventElapsedTime is refused) or
 *                                paraminfo:N (the N-th cuFuncGetParamInfo
 *                                answers CUDA_ERROR_NOT_SUPPORTED)
 *   CUDA_STANDIN_STRICT=1        host sources of asynchronous copies read
 *                                when the stream reaches them, and checked
 *   CUDA_STANDIN_ORDER           forward, reverse or shuffle (pocl.c)
 *   CUDA_STANDIN_INCOHERENT      1 or opencl: groups see each other's
 *                                writes late (run_incoherent)
 *   CUDA_STANDIN_KERNEL_MAX_THREADS  every kernel's own limit (below 1024)
 *   CUDA_STANDIN_COUNTS=FILE     calls of each kind, written at exit
 *   CUDA_STANDIN_STRICT_EXIT=0   violations do not change the exit code
 *   CUDA_STANDIN_QUIET=1         no message for each refused call */
#include <cuda.h>

#include <pthread.h>
#include <stdarg.h>
#include <sys/uio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "standin.h"

#define API __attribute__((visibility("default")))

/* ptreg's CUDA backend looks for this symbol: a device behind it is the
 * stand-in, listed as such and never taken for a real GPU. */
API const char ptreg_cuda_standin[] = "ptreg CUDA driver stand-in over POCL (tests/cuda_standin)";

/* ---- the pretend device: an H100 SXM5's limits ---- */

#define DEVICE_NAME "CUDA stand-in (H100 limits, on POCL)"
#define ARCH 90
#define MAX_THREADS 1024
#define MAX_BLOCK_Z 64
#define MAX_GRID_X 2147483647u
#define MAX_GRID_YZ 65535u
#define REGISTERS_PER_BLOCK 65536
#define REGISTER_UNIT 256 /* registers are given to a warp in units of 256 */
#define WARP 32
#define SHARED_PER_BLOCK 49152u
#define SHARED_PER_BLOCK_OPTIN 232448
#define SHARED_PER_SM 233472
#define SM_COUNT 132
#define ALLOC_ALIGN 512
#define ADDRESS_BASE 0x700000000000ull
#define ADDRESS_GAP 65536 /* between allocations: a stray pointer lands in none */

static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static int initialised, quiet, strict, strict_exit = 1;
static unsigned kernel_max_threads; /* CUDA_STANDIN_KERNEL_MAX_THREADS; 0: the registers' and bounds' alone */
static int driver_version = 13000;
static uint64_t device_memory = 80ull << 30;
static unsigned long violations;

typedef enum fail_kind {
    FAIL_NONE,
    FAIL_ALLOC,
    FAIL_LAUNCH,
    FAIL_COPY,
    FAIL_FAULT,
    FAIL_TIMING,
    FAIL_PARAMINFO
} fail_kind;
static fail_kind fail_at_kind;
static unsigned long fail_at_n;
static unsigned long count_alloc, count_launch, count_copy, count_timing, count_graph, count_paraminfo;

static void say(const char *what, const char *fmt, va_list ap)
{
    char text[1024];
    vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "cuda-standin: %s%s\n", what, text);
}

/* A refused call: the driver's code, and (unless quiet) why. */
static CUresult refuse(CUresult rc, const char *fmt, ...)
{
    if (!quiet) {
        va_list ap;
        va_start(ap, fmt);
        say("", fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* A mistake a real GPU might let pass silently: always said, and counted
 * (the exit code becomes 86 unless CUDA_STANDIN_STRICT_EXIT=0). */
static void violation(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("VIOLATION: ", fmt, ap);
    va_end(ap);
    violations++;
}

static CUresult done(CUresult rc)
{
    pthread_mutex_unlock(&big_lock);
    return rc;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* ---- handles ---- */

#define MAGIC_CTX 0x43545831u
#define MAGIC_STREAM 0x5354524du
#define MAGIC_EVENT 0x45564e54u
#define MAGIC_MODULE 0x4d4f4455u
#define MAGIC_FUNC 0x46554e43u
#define MAGIC_GRAPH 0x47524150u
#define MAGIC_EXEC 0x47455845u
#define MAGIC_NODE 0x4e4f4445u

typedef struct op op;

struct CUctx_st {
    uint32_t magic;
    int live, primary, retains;
    CUresult sticky; /* a fault kills the context: every later call answers this */
    struct CUstream_st *null_stream;
};

struct CUstream_st {
    uint32_t magic;
    int live;
    CUcontext ctx;
    op *head, *tail;
    size_t queued;
    struct CUstream_st *next;
};

struct CUevent_st {
    uint32_t magic;
    int live, timing, state; /* state: 0 never recorded, 1 waiting in a stream, 2 reached */
    double at_ms;
    CUstream stream;
    CUcontext ctx;
    struct CUevent_st *next;
};

struct CUfunc_st {
    uint32_t magic;
    int live;
    struct CUmod_st *module;
    const standin_kernel_info *info;
    standin_function *pocl;
    struct CUfunc_st *next;
};

struct CUmod_st {
    uint32_t magic;
    int live;
    CUcontext ctx;
    standin_image image;
    standin_program *program;
    char label[64];
    struct CUfunc_st *functions;
    struct CUmod_st *next;
};

/* A graph: kernel nodes in a chain (each after the one added before it:
 * what the stand-in runs), their launches as ops to copy into a stream. */
struct CUgraphNode_st {
    uint32_t magic;
    struct CUgraph_st *graph;
    size_t index;
    struct CUgraphNode_st *next;
};

struct CUgraph_st {
    uint32_t magic;
    int live;
    CUcontext ctx;
    op *head, *tail;
    size_t count;
    struct CUgraphNode_st *nodes;
    struct CUgraph_st *next;
};

struct CUgraphExec_st {
    uint32_t magic;
    int live;
    CUcontext ctx;
    op *head; /* copied at instantiation: the graph may go */
    size_t count;
    struct CUgraphExec_st *next;
};

/* Handles are never freed (a later use of a destroyed one must be seen,
 * not crash): they are marked dead and stay on these lists. */
static struct CUctx_st primary = {MAGIC_CTX, 0, 1, 0, CUDA_SUCCESS, NULL};
static struct CUstream_st *streams;
static struct CUevent_st *events;
static struct CUmod_st *modules;
static struct CUgraph_st *graphs;
static struct CUgraphExec_st *execs;

typedef struct allocation {
    struct allocation *next;
    CUdeviceptr base;
    size_t bytes;
    unsigned long serial;
    CUcontext ctx;
    standin_buffer *buf; /* NULL once freed */
} allocation;

/* Live allocations, newest first; freed ones move to their own list (kept
 * to name a stale pointer's allocation). */
static allocation *allocations, *freed_allocations;
static unsigned long allocation_serial;
static CUdeviceptr next_address = ADDRESS_BASE;
static uint64_t live_bytes;

typedef struct pinned {
    struct pinned *next;
    void *p;
    size_t bytes;
} pinned;
static pinned *pinned_list;

static __thread CUcontext ctx_stack[16];
static __thread int ctx_depth;

static CUcontext current(void) { return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL; }

/* ---- configuration ---- */

static unsigned long env_number(const char *name, unsigned long fallback)
{
    const char *v = getenv(name);
    char *end;
    unsigned long n = v && *v ? strtoul(v, &end, 10) : fallback;
    return v && *v && *end ? fallback : n;
}

static void read_fail_spec(void)
{
    static const struct {
        const char *name;
        fail_kind kind;
    } kinds[] = {{"alloc:", FAIL_ALLOC}, {"launch:", FAIL_LAUNCH}, {"copy:", FAIL_COPY},
                 {"fault:", FAIL_FAULT}, {"timing:", FAIL_TIMING}, {"paraminfo:", FAIL_PARAMINFO}};
    const char *spec = getenv("CUDA_STANDIN_FAIL");
    for (size_t i = 0; spec && i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strncmp(spec, kinds[i].name, strlen(kinds[i].name))) {
            fail_at_kind = kinds[i].kind;
            fail_at_n = strtoul(spec + strlen(kinds[i].name), NULL, 10);
        }
}

static void report_at_exit(void);

static void configure(void)
{
    driver_version = (int)env_number("CUDA_STANDIN_DRIVER_VERSION", 13000);
    device_memory = env_number("CUDA_STANDIN_MEMORY", device_memory);
    strict = (int)env_number("CUDA_STANDIN_STRICT", 0);
    strict_exit = (int)env_number("CUDA_STANDIN_STRICT_EXIT", 1);
    quiet = (int)env_number("CUDA_STANDIN_QUIET", 0);
    kernel_max_threads = (unsigned)env_number("CUDA_STANDIN_KERNEL_MAX_THREADS", 0);
    read_fail_spec();
    atexit(report_at_exit);
}

/* Whether this call of the kind is the one CUDA_STANDIN_FAIL names. */
static int injected(fail_kind kind, unsigned long count)
{
    if (fail_at_kind != kind || count != fail_at_n)
        return 0;
    static const char *const names[] = {"", "alloc", "launch", "copy", "fault", "timing", "paraminfo"};
    fprintf(stderr, "cuda-standin: injected failure: %s #%lu\n", names[kind], count);
    return 1;
}

/* ---- memory ---- */

static allocation *find_in(allocation *list, CUdeviceptr p)
{
    for (allocation *a = list; a; a = a->next)
        if (p >= a->base && p < a->base + a->bytes)
            return a;
    return NULL;
}

static allocation *find_allocation(CUdeviceptr p)
{
    allocation *a = find_in(allocations, p);
    return a ? a : find_in(freed_allocations, p);
}

static void release_allocation(allocation *a)
{
    for (allocation **at = &allocations; *at; at = &(*at)->next)
        if (*at == a) {
            *at = a->next;
            break;
        }
    standin_buffer_destroy(a->buf);
    a->buf = NULL;
    live_bytes -= a->bytes;
    a->next = freed_allocations;
    freed_allocations = a;
}

static const char *describe_pointer(CUdeviceptr p, char *text, size_t size)
{
    allocation *a = find_allocation(p);
    if (!a)
        snprintf(text, size, "0x%llx, in no allocation ever made", (unsigned long long)p);
    else
        snprintf(text, size, "0x%llx, %llu bytes into allocation #%lu of %zu bytes%s", (unsigned long long)p,
                 (unsigned long long)(p - a->base), a->serial, a->bytes, a->buf ? "" : ", already freed");
    return text;
}

/* The live allocation holding [p, p + bytes), or NULL with a message. */
static allocation *device_range(CUdeviceptr p, size_t bytes, const char *call)
{
    char where[160];
    allocation *a = find_allocation(p);
    if (!a || !a->buf) {
        violation("%s: device address %s", call, describe_pointer(p, where, sizeof where));
        return NULL;
    }
    if (bytes > a->bytes - (p - a->base)) {
        violation("%s: %zu bytes at %s run past its end", call, bytes, describe_pointer(p, where, sizeof where));
        return NULL;
    }
    return a;
}

static int is_pinned(const void *p, size_t bytes)
{
    for (pinned *q = pinned_list; q; q = q->next)
        if ((const char *)p >= (const char *)q->p && (const char *)p + bytes <= (const char *)q->p + q->bytes)
            return 1;
    return 0;
}

/* ---- streams: work waits in order until something waits for it ---- */

typedef enum op_kind { OP_HTOD, OP_DTOH, OP_DTOD, OP_MEMSET, OP_LAUNCH, OP_EVENT } op_kind;

struct op {
    op *next;
    op_kind kind;
    CUdeviceptr dst, src;
    void *host;              /* DTOH: where the bytes go */
    const void *host_src;    /* HTOD: the caller's bytes, read when the stream gets there when pinned or strict */
    unsigned char *snapshot; /* HTOD: the bytes when the call was made */
    size_t bytes;
    uint32_t word;
    struct CUfunc_st *f;
    unsigned grid[3], block[3];
    unsigned char *params; /* each parameter's bytes at the cubin's offsets */
    int fault;             /* CUDA_STANDIN_FAIL=fault:N: this launch faults */
    CUevent event;
    unsigned long serial;
};

static void free_op(op *o)
{
    free(o->snapshot);
    free(o->params);
    free(o);
}

static void kill_context(CUcontext ctx, CUresult rc)
{
    if (ctx->sticky == CUDA_SUCCESS)
        ctx->sticky = rc;
}

/* The host bytes at p now, or -1 when they are gone (unmapped): a freed
 * source must be reported, not crash the stand-in. */
static int read_host(const void *p, void *into, size_t bytes)
{
    struct iovec local = {into, bytes}, remote = {(void *)(uintptr_t)p, bytes};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)bytes ? 0 : -1;
}

/* Strict mode: the caller's bytes as the stream finds them, compared with
 * what they were at the call. */
static const void *strict_source(op *o, unsigned char *now)
{
    if (!o->snapshot) /* pinned in default mode: read at stream time */
        return o->host_src;
    if (read_host(o->host_src, now, o->bytes)) {
        violation("cuMemcpyHtoDAsync #%lu: the host bytes at %p were freed before the stream reached the copy",
                  o->serial, o->host_src);
        return o->snapshot;
    }
    if (memcmp(o->snapshot, now, o->bytes))
        violation("cuMemcpyHtoDAsync #%lu: the host bytes at %p changed between the call and the moment the stream "
                  "reached the copy (a buffer reused or freed before the stream was synchronised)",
                  o->serial, o->host_src);
    return now;
}

static int run_copy(op *o)
{
    allocation *d = o->kind == OP_DTOH ? NULL : find_allocation(o->dst);
    allocation *s = o->kind == OP_DTOH || o->kind == OP_DTOD ? find_allocation(o->src) : NULL;
    switch (o->kind) {
    case OP_HTOD: {
        if (!o->host_src) /* pageable, default mode: staged at the call */
            return standin_buffer_write(d->buf, o->dst - d->base, o->snapshot, o->bytes);
        unsigned char *now = malloc(o->bytes);
        int rc = now ? standin_buffer_write(d->buf, o->dst - d->base, strict_source(o, now), o->bytes) : -1;
        free(now);
        return rc;
    }
    case OP_DTOH: return standin_buffer_read(s->buf, o->src - s->base, o->host, o->bytes);
    case OP_DTOD: return standin_buffer_copy(d->buf, o->dst - d->base, s->buf, o->src - s->base, o->bytes);
    case OP_MEMSET: return standin_buffer_fill32(d->buf, o->dst - d->base, o->word, o->bytes / 4);
    default: return -1;
    }
}

/* A launch's pointer arguments: each must be a live allocation's start
 * when the kernel runs. */
static int bind_arguments(op *o, allocation **bound)
{
    const standin_kernel_info *k = o->f->info;
    for (unsigned i = 0; i < k->nparams; i++) {
        const unsigned char *value = o->params + k->param_offset[i];
        bound[i] = NULL;
        if (!standin_function_param_is_pointer(o->f->pocl, i)) {
            standin_function_set_arg(o->f->pocl, i, NULL, value, k->param_size[i]);
            continue;
        }
        CUdeviceptr p;
        memcpy(&p, value, sizeof p);
        allocation *a = find_allocation(p);
        char where[160];
        if (!a || !a->buf || p != a->base) {
            violation("kernel %s (launch #%lu): argument %u is %s%s: the kernel would fault", k->name, o->serial, i,
                      describe_pointer(p, where, sizeof where),
                      a && a->buf ? " (the stand-in passes only an allocation's start)" : "");
            return -1;
        }
        bound[i] = a;
        standin_function_set_arg(o->f->pocl, i, a->buf, NULL, 0);
    }
    return 0;
}

static int check_red_zones(op *o, allocation **bound)
{
    int hit = 0;
    for (unsigned i = 0; i < o->f->info->nparams; i++) {
        long long at;
        if (bound[i] && standin_buffer_redzone_hit(bound[i]->buf, &at)) {
            violation("kernel %s (launch #%lu) wrote outside argument %u, allocation #%lu of %zu bytes, at byte %lld: "
                      "the next synchronisation answers CUDA_ERROR_ILLEGAL_ADDRESS",
                      o->f->info->name, o->serial, i, bound[i]->serial, bound[i]->bytes, at);
            hit = 1;
        }
    }
    return hit ? -1 : 0;
}

/* CUDA_STANDIN_RERUN=1: each launch runs twice from the same memory, and
 * must leave the same bits: a kernel whose work-groups race (POCL runs
 * them on several threads) is named. */
static unsigned char **snapshot_arguments(op *o, allocation **bound)
{
    unsigned char **saved = calloc(o->f->info->nparams, sizeof *saved);
    for (unsigned i = 0; saved && i < o->f->info->nparams; i++)
        if (bound[i] && (saved[i] = malloc(bound[i]->bytes)))
            standin_buffer_read(bound[i]->buf, 0, saved[i], bound[i]->bytes);
    return saved;
}

static void free_snapshot(unsigned char **saved, unsigned n)
{
    for (unsigned i = 0; saved && i < n; i++)
        free(saved[i]);
    free(saved);
}

static int rerun_same(op *o, allocation **bound, char *why, size_t why_size)
{
    const unsigned n = o->f->info->nparams;
    unsigned char **before = snapshot_arguments(o, bound);
    int rc = standin_function_run(o->f->pocl, o->grid, o->block, why, why_size);
    unsigned char **first = rc ? NULL : snapshot_arguments(o, bound);
    for (unsigned i = 0; before && i < n; i++)
        if (before[i])
            standin_buffer_write(bound[i]->buf, 0, before[i], bound[i]->bytes);
    if (!rc)
        rc = standin_function_run(o->f->pocl, o->grid, o->block, why, why_size);
    unsigned char **second = rc ? NULL : snapshot_arguments(o, bound);
    for (unsigned i = 0; first && second && i < n; i++)
        if (first[i] && second[i] && memcmp(first[i], second[i], bound[i]->bytes))
            violation("kernel %s (launch #%lu) left other bits in argument %u when run again from the same memory: "
                      "its work-groups race",
                      o->f->info->name, o->serial, i);
    free_snapshot(before, n), free_snapshot(first, n), free_snapshot(second, n);
    return rc;
}

/* CUDA_STANDIN_INCOHERENT: a GPU whose caches are not coherent across
 * work-groups (AMD's XCDs, RDNA). A 1-D launch runs one group at a time;
 * each group starts from the published memory (the launch's, plus what
 * groups published), its own writes kept apart and merged into the
 * arguments at the kernel's end. Volatile pointer arguments (the counts
 * atomics work on) stay coherent; a group that changed one counted itself
 * in, and under CUDA's semantics (1: GLOBAL_FENCE is __threadfence, a
 * device-scope release) its writes are published then; under OpenCL 1.2's
 * ("opencl": mem_fence orders a work-item's own accesses only) never
 * before the end. A group reading another's write of the same launch
 * without such a release reads the launch's old bytes. */
typedef struct incoherent_arg {
    allocation *a;
    unsigned char *published, *merged, *coherent_before;
    int coherent;
} incoherent_arg;

static size_t incoherent_args(op *o, allocation **bound, incoherent_arg *args)
{
    size_t n = 0;
    for (unsigned i = 0; i < o->f->info->nparams; i++) {
        if (!bound[i])
            continue;
        size_t j = 0;
        while (j < n && args[j].a != bound[i])
            j++;
        if (j == n)
            args[n++] = (incoherent_arg){bound[i], NULL, NULL, NULL, 0};
        args[j].coherent |= standin_function_param_is_coherent(o->f->pocl, i);
    }
    return n;
}

/* Group g's writes to argument x (bytes that differ from the published
 * ones) into merged, and (publish) into the published bytes; the buffer
 * back to the published bytes either way. */
static void take_writes(incoherent_arg *x, int publish)
{
    unsigned char *now = standin_buffer_bytes(x->a->buf);
    enum { CHUNK = 4096 }; /* compared a chunk at a time: most are untouched */
    for (size_t c = 0; c < x->a->bytes; c += CHUNK) {
        const size_t len = x->a->bytes - c < CHUNK ? x->a->bytes - c : CHUNK;
        if (!memcmp(now + c, x->published + c, len))
            continue;
        for (size_t b = c; b < c + len; b++)
            if (now[b] != x->published[b]) {
                x->merged[b] = now[b];
                if (publish)
                    x->published[b] = now[b];
                now[b] = x->published[b];
            }
    }
}

static int run_incoherent(op *o, allocation **bound, int mode, char *why, size_t why_size)
{
    if (o->grid[1] > 1 || o->grid[2] > 1 || o->block[1] > 1 || o->block[2] > 1)
        return standin_function_run(o->f->pocl, o->grid, o->block, why, why_size);
    incoherent_arg args[STANDIN_MAX_PARAMS];
    const size_t n = incoherent_args(o, bound, args);
    int rc = 0;
    for (size_t j = 0; j < n && !rc; j++) {
        const size_t bytes = args[j].a->bytes;
        const unsigned char *at = standin_buffer_bytes(args[j].a->buf);
        unsigned char **copies[] = {&args[j].published, &args[j].merged, &args[j].coherent_before};
        for (int c = 0; c < 3 && !rc; c++)
            if ((*copies[c] = malloc(bytes)))
                memcpy(*copies[c], at, bytes);
            else
                rc = -1;
    }
    if (rc)
        snprintf(why, why_size, "incoherent mode: out of memory");
    for (unsigned g = 0; g < o->grid[0] && !rc; g++) {
        rc = standin_function_run_group(o->f->pocl, o->grid[0], g, o->block[0], why, why_size);
        int released = 0;
        for (size_t j = 0; j < n; j++)
            if (args[j].coherent) {
                unsigned char *now = standin_buffer_bytes(args[j].a->buf);
                released |= memcmp(now, args[j].coherent_before, args[j].a->bytes) != 0;
                memcpy(args[j].coherent_before, now, args[j].a->bytes);
            }
        for (size_t j = 0; j < n; j++)
            if (!args[j].coherent)
                take_writes(&args[j], released && mode == STANDIN_INCOHERENT_CUDA);
    }
    for (size_t j = 0; j < n; j++) {
        if (!rc && !args[j].coherent)
            memcpy(standin_buffer_bytes(args[j].a->buf), args[j].merged, args[j].a->bytes);
        free(args[j].published), free(args[j].merged), free(args[j].coherent_before);
    }
    return rc;
}

static int run_launch(op *o)
{
    allocation *bound[STANDIN_MAX_PARAMS];
    char why[600];
    if (!o->f->live || !o->f->module->live) {
        violation("launch #%lu: kernel %s's module was unloaded before the launch ran", o->serial, o->f->info->name);
        return -1;
    }
    if (bind_arguments(o, bound))
        return -1;
    const int incoherent = standin_incoherent();
    const int rc = incoherent ? run_incoherent(o, bound, incoherent, why, sizeof why)
                   : env_number("CUDA_STANDIN_RERUN", 0)
                       ? rerun_same(o, bound, why, sizeof why)
                       : standin_function_run(o->f->pocl, o->grid, o->block, why, sizeof why);
    if (rc) {
        fprintf(stderr, "cuda-standin: %s\n", why);
        return -1;
    }
    if (o->fault) {
        fprintf(stderr,
                "cuda-standin: injected fault in kernel %s (launch #%lu): CUDA_ERROR_ILLEGAL_ADDRESS at the "
                "next synchronisation\n",
                o->f->info->name, o->serial);
        return -1;
    }
    return check_red_zones(o, bound);
}

/* Runs what the stream holds, in order. A fault stops the stream, kills
 * the context and is answered by this synchronisation, as on a GPU. */
static void flush(CUstream s)
{
    while (s->head) {
        op *o = s->head;
        s->head = o->next;
        s->queued--;
        int failed = 0;
        if (s->ctx->sticky == CUDA_SUCCESS) {
            if (o->kind == OP_LAUNCH)
                failed = run_launch(o);
            else if (o->kind == OP_EVENT) {
                if (o->event->live)
                    o->event->state = 2, o->event->at_ms = now_ms();
            } else
                failed = run_copy(o);
        }
        if (failed)
            kill_context(s->ctx, CUDA_ERROR_ILLEGAL_ADDRESS);
        free_op(o);
    }
    s->tail = NULL;
}

static void flush_context(CUcontext ctx)
{
    for (CUstream s = streams; s; s = s->next)
        if (s->ctx == ctx && s->live)
            flush(s);
}

/* Very long queues run early: allowed (a GPU starts work when it likes)
 * and it bounds the memory held. */
#define QUEUE_CAP 4096

static void enqueue(CUstream s, op *o)
{
    o->next = NULL;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    if (++s->queued > QUEUE_CAP)
        flush(s);
}

/* ---- the calls' common checks ---- */

static CUresult need_init(void)
{
    return initialised ? CUDA_SUCCESS : refuse(CUDA_ERROR_NOT_INITIALIZED, "a call before cuInit");
}

/* The calling thread's context, alive and unfaulted. */
static CUresult need_context(CUcontext *out)
{
    *out = NULL;
    CUresult rc = need_init();
    if (rc)
        return rc;
    CUcontext ctx = current();
    if (!ctx)
        return refuse(CUDA_ERROR_INVALID_CONTEXT, "a call with no current context on this thread");
    if (!ctx->live) {
        violation("a call in a destroyed context");
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = ctx;
    return ctx->sticky;
}

static CUstream stream_of(CUcontext ctx, CUstream s, CUresult *rc)
{
    if (!s) {
        *rc = CUDA_SUCCESS;
        return ctx->null_stream;
    }
    if (s->magic != MAGIC_STREAM || !s->live || s->ctx != ctx) {
        violation("a stream that is destroyed or of another context");
        *rc = CUDA_ERROR_INVALID_HANDLE;
        return NULL;
    }
    *rc = CUDA_SUCCESS;
    return s;
}

static int valid_event(CUevent e)
{
    if (e && e->magic == MAGIC_EVENT && e->live)
        return 1;
    violation("an event that is destroyed or was never created");
    return 0;
}

static int valid_function(CUfunction f)
{
    if (f && f->magic == MAGIC_FUNC && f->live && f->module->live)
        return 1;
    violation("a function whose module was unloaded, or that never was");
    return 0;
}

/* ---- initialisation, versions, the device ---- */

API CUresult CUDAAPI cuInit(unsigned int Flags)
{
    pthread_mutex_lock(&big_lock);
    if (Flags)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0"));
    if (!initialised) {
        char why[300];
        configure();
        if (standin_pocl_init(why, sizeof why)) {
            fprintf(stderr, "cuda-standin: %s\n", why);
            return done(CUDA_ERROR_NO_DEVICE);
        }
        primary.null_stream = calloc(1, sizeof *primary.null_stream);
        if (!primary.null_stream)
            return done(CUDA_ERROR_OUT_OF_MEMORY);
        *primary.null_stream = (struct CUstream_st){MAGIC_STREAM, 1, &primary, NULL, NULL, 0, streams};
        streams = primary.null_stream;
        initialised = 1;
    }
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = initialised ? driver_version : (int)env_number("CUDA_STANDIN_DRIVER_VERSION", 13000);
    return CUDA_SUCCESS;
}

API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = need_init();
    if (!rc)
        *count = 1;
    return done(rc);
}

static CUresult check_device(CUdevice dev)
{
    CUresult rc = need_init();
    return rc ? rc : dev == 0 ? CUDA_SUCCESS : refuse(CUDA_ERROR_INVALID_DEVICE, "device %d: there is one, 0", dev);
}

API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(ordinal);
    if (!rc)
        *device = 0;
    return done(rc);
}

API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (!rc && (!name || len <= 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        snprintf(name, (size_t)len, "%s", DEVICE_NAME);
    return done(rc);
}

API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (!rc)
        *bytes = device_memory;
    return done(rc);
}

static int attribute_value(CUdevice_attribute a, int *v)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = MAX_THREADS; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = MAX_THREADS; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = MAX_THREADS; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = MAX_BLOCK_Z; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = (int)MAX_GRID_X; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = (int)MAX_GRID_YZ; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = (int)MAX_GRID_YZ; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = (int)SHARED_PER_BLOCK; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = SHARED_PER_BLOCK_OPTIN; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = SHARED_PER_SM; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = REGISTERS_PER_BLOCK; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = REGISTERS_PER_BLOCK; return 1;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = WARP; return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = SM_COUNT; return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = ARCH / 10; return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = ARCH % 10; return 1;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; return 1;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 50 << 20; return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; return 1;
    default: return 0;
    }
}

API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (!rc && !attribute_value(attrib, pi))
        rc = refuse(CUDA_ERROR_NOT_SUPPORTED, "device attribute %d is not one the stand-in knows: add it", (int)attrib);
    return done(rc);
}

/* ---- contexts ---- */

/* What a context still holds when it goes: freed with it. */
static void sweep_context(CUcontext ctx, int leaks_are_violations)
{
    unsigned long live_allocations = 0, live_modules = 0, live_streams = 0, live_events = 0;
    flush_context(ctx);
    for (allocation *a = allocations, *next; a; a = next) {
        next = a->next;
        if (a->ctx == ctx) {
            release_allocation(a);
            live_allocations++;
        }
    }
    for (struct CUmod_st *m = modules; m; m = m->next)
        if (m->ctx == ctx && m->live) {
            for (struct CUfunc_st *f = m->functions; f; f = f->next)
                standin_function_destroy(f->pocl), f->pocl = NULL, f->live = 0;
            standin_program_release(m->program), m->live = 0, live_modules++;
        }
    for (CUstream s = streams; s; s = s->next)
        if (s->ctx == ctx && s->live && s != ctx->null_stream)
            s->live = 0, live_streams++;
    for (CUevent e = events; e; e = e->next)
        if (e->ctx == ctx && e->live)
            e->live = 0, live_events++;
    if (leaks_are_violations && live_allocations + live_modules + live_streams + live_events)
        violation("a context released with %lu allocations, %lu modules, %lu streams and %lu events still in it",
                  live_allocations, live_modules, live_streams, live_events);
}

API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (rc)
        return done(rc);
    if (primary.retains++ == 0)
        primary.live = 1, primary.sticky = CUDA_SUCCESS;
    *pctx = &primary;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (rc)
        return done(rc);
    if (primary.retains <= 0) {
        violation("cuDevicePrimaryCtxRelease without a retain");
        return done(CUDA_ERROR_INVALID_CONTEXT);
    }
    if (--primary.retains == 0) {
        sweep_context(&primary, 1);
        primary.live = 0;
    }
    return done(CUDA_SUCCESS);
}

/* Everything in the primary context goes, and its fault with it. */
API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (rc)
        return done(rc);
    sweep_context(&primary, 0);
    primary.sticky = CUDA_SUCCESS;
    primary.live = primary.retains > 0;
    return done(CUDA_SUCCESS);
}

/* An application's own context (the tests make one to see that ptreg
 * leaves it current). */
API CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = check_device(dev);
    if (rc)
        return done(rc);
    if (params || flags)
        return done(refuse(CUDA_ERROR_NOT_SUPPORTED, "cuCtxCreate: the stand-in takes no parameters or flags"));
    CUcontext ctx = calloc(1, sizeof *ctx);
    CUstream null_stream = calloc(1, sizeof *null_stream);
    if (!ctx || !null_stream) {
        free(ctx), free(null_stream);
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    }
    *ctx = (struct CUctx_st){MAGIC_CTX, 1, 0, 0, CUDA_SUCCESS, null_stream};
    *null_stream = (struct CUstream_st){MAGIC_STREAM, 1, ctx, NULL, NULL, 0, streams};
    streams = null_stream;
    if (ctx_depth < 16)
        ctx_stack[ctx_depth++] = ctx;
    *pctx = ctx;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    pthread_mutex_lock(&big_lock);
    if (!ctx || ctx->magic != MAGIC_CTX || !ctx->live || ctx->primary)
        return done(refuse(CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy: not a live context of the application's"));
    sweep_context(ctx, 1);
    ctx->live = 0;
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == ctx)
            memmove(ctx_stack + i, ctx_stack + i + 1, (size_t)(--ctx_depth - i) * sizeof *ctx_stack), i--;
    return done(CUDA_SUCCESS);
}

static CUresult valid_context(CUcontext ctx)
{
    if (ctx && (ctx->magic != MAGIC_CTX || !ctx->live)) {
        violation("a context that is released or was never made");
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return CUDA_SUCCESS;
}

API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = valid_context(ctx);
    if (rc)
        return done(rc);
    if (!ctx)
        ctx_depth -= ctx_depth > 0;
    else if (ctx_depth)
        ctx_stack[ctx_depth - 1] = ctx;
    else
        ctx_stack[ctx_depth++] = ctx;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    *pctx = current();
    return CUDA_SUCCESS;
}

API CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = ctx ? valid_context(ctx) : CUDA_ERROR_INVALID_CONTEXT;
    if (!rc && ctx_depth == 16)
        rc = refuse(CUDA_ERROR_INVALID_VALUE, "cuCtxPushCurrent: 16 contexts deep (a missing pop?)");
    if (!rc)
        ctx_stack[ctx_depth++] = ctx;
    return done(rc);
}

API CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    if (!ctx_depth)
        return refuse(CUDA_ERROR_INVALID_CONTEXT, "cuCtxPopCurrent with no context on this thread's stack");
    CUcontext ctx = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = ctx;
    return CUDA_SUCCESS;
}

API CUresult CUDAAPI cuCtxSynchronize(void)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc == CUDA_SUCCESS) {
        flush_context(ctx);
        rc = ctx->sticky;
    }
    return done(rc);
}

/* ---- memory ---- */

static CUdeviceptr round_up(CUdeviceptr x, CUdeviceptr to) { return (x + to - 1) / to * to; }

API CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!dptr || !bytesize)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc of %zu bytes", bytesize));
    if (injected(FAIL_ALLOC, ++count_alloc))
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    if (bytesize > device_memory - live_bytes)
        return done(refuse(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of %zu bytes: %llu of %llu in use", bytesize,
                           (unsigned long long)live_bytes, (unsigned long long)device_memory));
    allocation *a = calloc(1, sizeof *a);
    if (a)
        a->buf = standin_buffer_create(bytesize);
    if (!a || !a->buf) {
        free(a);
        return done(refuse(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc of %zu bytes: POCL has no room (its largest: %llu)",
                           bytesize, (unsigned long long)standin_pocl_max_alloc()));
    }
    a->base = next_address;
    a->bytes = bytesize;
    a->ctx = ctx;
    a->serial = ++allocation_serial;
    next_address = round_up(next_address + bytesize + ADDRESS_GAP, ALLOC_ALIGN);
    a->next = allocations;
    allocations = a;
    live_bytes += bytesize;
    *dptr = a->base;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc && rc != CUDA_ERROR_ILLEGAL_ADDRESS)
        return done(rc);
    if (!dptr)
        return done(CUDA_SUCCESS);
    char where[160];
    allocation *a = find_allocation(dptr);
    if (!a || !a->buf || a->base != dptr) {
        violation("cuMemFree of %s", describe_pointer(dptr, where, sizeof where));
        return done(CUDA_ERROR_INVALID_VALUE);
    }
    flush_context(a->ctx); /* the driver's implicit synchronisation */
    release_allocation(a);
    return done(rc);
}

API CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!bytesize)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuMemAllocHost of 0 bytes"));
    pinned *q = calloc(1, sizeof *q);
    if (q)
        q->p = aligned_alloc(4096, (size_t)round_up(bytesize, 4096));
    if (!q || !q->p) {
        free(q);
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    }
    q->bytes = bytesize;
    q->next = pinned_list;
    pinned_list = q;
    *pp = q->p;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuMemFreeHost(void *p)
{
    pthread_mutex_lock(&big_lock);
    for (pinned **q = &pinned_list; *q; q = &(*q)->next)
        if ((*q)->p == p) {
            pinned *gone = *q;
            *q = gone->next;
            /* work still queued may read it: let it, then free */
            for (CUstream s = streams; s; s = s->next)
                if (s->live)
                    flush(s);
            free(gone->p);
            free(gone);
            return done(CUDA_SUCCESS);
        }
    violation("cuMemFreeHost of %p, which cuMemAllocHost did not give", p);
    return done(CUDA_ERROR_INVALID_VALUE);
}

/* A copy's common part: the context, the stream, the injected failure. */
static CUresult begin_copy(CUstream *stream, CUstream hStream)
{
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return rc;
    *stream = stream_of(ctx, hStream, &rc);
    if (rc)
        return rc;
    return injected(FAIL_COPY, ++count_copy) ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS;
}

static op *new_op(op_kind kind)
{
    op *o = calloc(1, sizeof *o);
    if (o) {
        o->kind = kind;
        o->serial = kind == OP_LAUNCH ? count_launch : count_copy;
    }
    return o;
}

API CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUstream s;
    CUresult rc = begin_copy(&s, hStream);
    if (rc || !ByteCount)
        return done(rc);
    if (!srcHost || !device_range(dstDevice, ByteCount, "cuMemcpyHtoDAsync"))
        return done(CUDA_ERROR_INVALID_VALUE);
    op *o = new_op(OP_HTOD);
    const int take_now = !is_pinned(srcHost, ByteCount) || strict;
    if (o && take_now && (o->snapshot = malloc(ByteCount)))
        memcpy(o->snapshot, srcHost, ByteCount);
    if (!o || (take_now && !o->snapshot)) {
        free(o);
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    }
    o->dst = dstDevice, o->host_src = srcHost, o->bytes = ByteCount;
    /* pageable memory is staged when the call is made (the caller may
     * reuse it at once); strict mode reads the caller's bytes at stream
     * time and says whether they changed */
    if (!strict && !is_pinned(srcHost, ByteCount))
        o->host_src = NULL;
    enqueue(s, o);
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUstream s;
    CUresult rc = begin_copy(&s, hStream);
    if (rc || !ByteCount)
        return done(rc);
    if (!dstHost || !device_range(srcDevice, ByteCount, "cuMemcpyDtoHAsync"))
        return done(CUDA_ERROR_INVALID_VALUE);
    op *o = new_op(OP_DTOH);
    if (!o)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->src = srcDevice, o->host = dstHost, o->bytes = ByteCount;
    enqueue(s, o);
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUstream s;
    CUresult rc = begin_copy(&s, hStream);
    if (rc || !ByteCount)
        return done(rc);
    if (!device_range(dstDevice, ByteCount, "cuMemcpyDtoDAsync (destination)") ||
        !device_range(srcDevice, ByteCount, "cuMemcpyDtoDAsync (source)"))
        return done(CUDA_ERROR_INVALID_VALUE);
    op *o = new_op(OP_DTOD);
    if (!o)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->dst = dstDevice, o->src = srcDevice, o->bytes = ByteCount;
    enqueue(s, o);
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUstream s;
    CUresult rc = begin_copy(&s, hStream);
    if (rc || !N)
        return done(rc);
    if (dstDevice % 4) {
        violation("cuMemsetD32Async at 0x%llx: not 4-byte aligned", (unsigned long long)dstDevice);
        return done(CUDA_ERROR_INVALID_VALUE);
    }
    if (N > SIZE_MAX / 4 || !device_range(dstDevice, 4 * N, "cuMemsetD32Async"))
        return done(CUDA_ERROR_INVALID_VALUE);
    op *o = new_op(OP_MEMSET);
    if (!o)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->dst = dstDevice, o->word = ui, o->bytes = 4 * N;
    enqueue(s, o);
    return done(CUDA_SUCCESS);
}

/* ---- streams and events ---- */

API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuStreamCreate: flags %#x", Flags));
    CUstream s = calloc(1, sizeof *s);
    if (!s)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    *s = (struct CUstream_st){MAGIC_STREAM, 1, ctx, NULL, NULL, 0, streams};
    streams = s;
    *phStream = s;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = need_init();
    if (rc)
        return done(rc);
    if (!hStream || hStream->magic != MAGIC_STREAM || !hStream->live || hStream == hStream->ctx->null_stream) {
        violation("cuStreamDestroy of a stream that is destroyed, the null stream, or none");
        return done(CUDA_ERROR_INVALID_HANDLE);
    }
    flush(hStream); /* its work still completes */
    hStream->live = 0;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    CUstream s = stream_of(ctx, hStream, &rc);
    if (rc)
        return done(rc);
    flush(s);
    return done(ctx->sticky);
}

API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (Flags & ~(unsigned)(CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC))
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuEventCreate: flags %#x", Flags));
    CUevent e = calloc(1, sizeof *e);
    if (!e)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    *e = (struct CUevent_st){MAGIC_EVENT, 1, !(Flags & CU_EVENT_DISABLE_TIMING), 0, 0.0, NULL, ctx, events};
    events = e;
    *phEvent = e;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!valid_event(hEvent))
        return done(CUDA_ERROR_INVALID_HANDLE);
    CUstream s = stream_of(ctx, hStream, &rc);
    if (rc)
        return done(rc);
    op *o = new_op(OP_EVENT);
    if (!o)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    o->event = hEvent;
    hEvent->state = 1;
    hEvent->stream = s;
    enqueue(s, o);
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!valid_event(hEvent))
        return done(CUDA_ERROR_INVALID_HANDLE);
    if (hEvent->state == 1 && hEvent->stream->live)
        flush(hEvent->stream);
    return done(ctx->sticky);
}

API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!valid_event(hStart) || !valid_event(hEnd))
        return done(CUDA_ERROR_INVALID_HANDLE);
    if (!hStart->timing || !hEnd->timing || !hStart->state || !hEnd->state)
        return done(
            refuse(CUDA_ERROR_INVALID_HANDLE, "cuEventElapsedTime: an event never recorded, or without timing"));
    if (injected(FAIL_TIMING, ++count_timing))
        return done(CUDA_ERROR_INVALID_HANDLE);
    if (hStart->state != 2 || hEnd->state != 2)
        return done(CUDA_ERROR_NOT_READY);
    *pMilliseconds = (float)(hEnd->at_ms - hStart->at_ms);
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = need_init();
    if (rc)
        return done(rc);
    if (!valid_event(hEvent))
        return done(CUDA_ERROR_INVALID_HANDLE);
    hEvent->live = 0;
    return done(CUDA_SUCCESS);
}

/* ---- modules and functions ---- */

static CUresult check_version(const standin_image *image)
{
    if (image->arch != ARCH)
        return refuse(CUDA_ERROR_NO_BINARY_FOR_GPU, "a cubin for sm_%d on an sm_%d device", image->arch, ARCH);
    if (image->cuda_version / 1000 > driver_version / 1000)
        return refuse(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                      "a cubin made by CUDA %d.%d, newer than this driver (CUDA %d.%d): the provided PTX was compiled "
                      "with an unsupported toolchain",
                      image->cuda_version / 1000, image->cuda_version % 1000 / 10, driver_version / 1000,
                      driver_version % 1000 / 10);
    return CUDA_SUCCESS;
}

static CUresult load_module(CUcontext ctx, const void *image, CUmodule *out)
{
    char why[700], key[33];
    struct CUmod_st *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (standin_image_read(image, &m->image, why, sizeof why)) {
        free(m);
        return refuse(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %s", why);
    }
    CUresult rc = check_version(&m->image);
    standin_record rec;
    standin_image_key(image, m->image.size, key);
    if (!rc && standin_record_read(key, &rec, why, sizeof why))
        rc = refuse(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %s", why);
    if (!rc) {
        snprintf(m->label, sizeof m->label, "%s", rec.name);
        m->program = standin_program_build(&rec, why, sizeof why);
        standin_record_free(&rec);
        if (!m->program)
            rc = refuse(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %s", why);
    }
    if (rc) {
        standin_image_free(&m->image);
        free(m);
        return rc;
    }
    m->magic = MAGIC_MODULE, m->live = 1, m->ctx = ctx;
    m->next = modules;
    modules = m;
    *out = m;
    return CUDA_SUCCESS;
}

API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (!rc && (!module || !image))
        rc = CUDA_ERROR_INVALID_VALUE;
    return done(rc ? rc : load_module(ctx, image, module));
}

API CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = need_init();
    if (rc)
        return done(rc);
    if (!hmod || hmod->magic != MAGIC_MODULE || !hmod->live) {
        violation("cuModuleUnload of a module unloaded already, or never loaded");
        return done(CUDA_ERROR_INVALID_HANDLE);
    }
    flush_context(hmod->ctx);
    for (struct CUfunc_st *f = hmod->functions; f; f = f->next)
        standin_function_destroy(f->pocl), f->pocl = NULL, f->live = 0;
    standin_program_release(hmod->program);
    hmod->program = NULL;
    hmod->live = 0;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!hmod || hmod->magic != MAGIC_MODULE || !hmod->live || !name) {
        violation("cuModuleGetFunction in a module unloaded already, or never loaded");
        return done(CUDA_ERROR_INVALID_HANDLE);
    }
    for (struct CUfunc_st *f = hmod->functions; f; f = f->next)
        if (!strcmp(f->info->name, name)) {
            *hfunc = f;
            return done(CUDA_SUCCESS);
        }
    const standin_kernel_info *info = standin_image_kernel(&hmod->image, name);
    if (!info)
        return done(refuse(CUDA_ERROR_NOT_FOUND, "no kernel %s in the %s image", name, hmod->label));
    char why[600];
    struct CUfunc_st *f = calloc(1, sizeof *f);
    if (f)
        f->pocl = standin_function_create(hmod->program, info, why, sizeof why);
    if (!f || !f->pocl) {
        free(f);
        return done(refuse(CUDA_ERROR_INVALID_IMAGE, "cuModuleGetFunction: %s", f ? why : "out of memory"));
    }
    f->magic = MAGIC_FUNC, f->live = 1, f->module = hmod, f->info = info;
    f->next = hmod->functions;
    hmod->functions = f;
    *hfunc = f;
    return done(CUDA_SUCCESS);
}

/* Registers go to a warp in units of 256: the threads a block can have
 * with this many registers each, and within its launch bounds. */
static unsigned max_threads_for(const standin_kernel_info *k)
{
    const unsigned per_warp = (k->registers * WARP + REGISTER_UNIT - 1) / REGISTER_UNIT * REGISTER_UNIT;
    unsigned threads = per_warp ? REGISTERS_PER_BLOCK / per_warp * WARP : MAX_THREADS;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    const unsigned bound = k->max_threads[0] * (k->max_threads[1] ? k->max_threads[1] : 1) *
                           (k->max_threads[2] ? k->max_threads[2] : 1);
    threads = bound && bound < threads ? bound : threads;
    /* CUDA_STANDIN_KERNEL_MAX_THREADS: every kernel's own limit below the
     * device's, as ROCm and Intel's drivers give for a heavy kernel */
    return kernel_max_threads && kernel_max_threads < threads ? kernel_max_threads : threads;
}

API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = need_init();
    if (rc)
        return done(rc);
    if (!valid_function(hfunc))
        return done(CUDA_ERROR_INVALID_HANDLE);
    const standin_kernel_info *k = hfunc->info;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = (int)max_threads_for(k); break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = (int)k->shared_bytes; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = (int)k->frame_bytes; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = (int)k->registers; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = ARCH; break;
    default:
        return done(refuse(CUDA_ERROR_NOT_SUPPORTED, "function attribute %d is not one the stand-in knows: add it",
                           (int)attrib));
    }
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    pthread_mutex_lock(&big_lock);
    CUresult rc = need_init();
    if (rc)
        return done(rc);
    if (!valid_function(func))
        return done(CUDA_ERROR_INVALID_HANDLE);
    /* a driver that cannot say (CUDA_STANDIN_FAIL=paraminfo:N) */
    if (injected(FAIL_PARAMINFO, ++count_paraminfo))
        return done(CUDA_ERROR_NOT_SUPPORTED);
    if (paramIndex >= func->info->nparams)
        return done(CUDA_ERROR_INVALID_VALUE);
    if (paramOffset)
        *paramOffset = func->info->param_offset[paramIndex];
    if (paramSize)
        *paramSize = func->info->param_size[paramIndex];
    return done(CUDA_SUCCESS);
}

/* ---- launches ---- */

static CUresult check_geometry(const standin_kernel_info *k, const unsigned g[3], const unsigned b[3],
                               unsigned sharedMemBytes)
{
    const unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
    if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] || g[0] > MAX_GRID_X || g[1] > MAX_GRID_YZ ||
        g[2] > MAX_GRID_YZ)
        return refuse(CUDA_ERROR_INVALID_VALUE, "%s: a grid of %ux%ux%u blocks (at most %ux%ux%u, none empty)", k->name,
                      g[0], g[1], g[2], MAX_GRID_X, MAX_GRID_YZ, MAX_GRID_YZ);
    if (b[0] > MAX_THREADS || b[1] > MAX_THREADS || b[2] > MAX_BLOCK_Z || threads > MAX_THREADS)
        return refuse(CUDA_ERROR_INVALID_VALUE, "%s: blocks of %ux%ux%u threads (at most %d in all)", k->name, b[0],
                      b[1], b[2], MAX_THREADS);
    if (k->shared_bytes + (unsigned long long)sharedMemBytes > SHARED_PER_BLOCK)
        return refuse(CUDA_ERROR_INVALID_VALUE, "%s: %u bytes of static and %u of dynamic shared memory (at most %u)",
                      k->name, k->shared_bytes, sharedMemBytes, SHARED_PER_BLOCK);
    if (threads > max_threads_for(k))
        return refuse(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                      "%s: blocks of %llu threads at %u registers each (the kernel can have %u: 65536 registers a "
                      "block%s%s)",
                      k->name, threads, k->registers, max_threads_for(k),
                      k->max_threads[0] ? ", and its launch bounds" : "",
                      kernel_max_threads ? ", and CUDA_STANDIN_KERNEL_MAX_THREADS" : "");
    return CUDA_SUCCESS;
}

/* The arguments' bytes, taken now as the driver does. */
static size_t params_bytes(const standin_kernel_info *k)
{
    size_t total = 0;
    for (unsigned i = 0; i < k->nparams; i++)
        if ((size_t)k->param_offset[i] + k->param_size[i] > total)
            total = (size_t)k->param_offset[i] + k->param_size[i];
    return total;
}

static unsigned char *capture_params(const standin_kernel_info *k, void **kernelParams)
{
    unsigned char *bytes = calloc(params_bytes(k) + 1, 1);
    for (unsigned i = 0; bytes && i < k->nparams; i++)
        memcpy(bytes + k->param_offset[i], kernelParams[i], k->param_size[i]);
    return bytes;
}

/* What cuLaunchKernel and a graph's kernel node check alike: the geometry
 * a real H100 takes, the arguments' form, what POCL can run. */
static CUresult check_launch(CUfunction f, const unsigned g[3], const unsigned b[3], unsigned sharedMemBytes,
                             void **kernelParams, void **extra)
{
    if (!valid_function(f))
        return CUDA_ERROR_INVALID_HANDLE;
    const standin_kernel_info *k = f->info;
    CUresult rc = check_geometry(k, g, b, sharedMemBytes);
    if (rc) {
        violation("a launch of %s that a real H100 refuses", k->name);
        return rc;
    }
    if (extra)
        return refuse(CUDA_ERROR_NOT_SUPPORTED, "%s: the stand-in takes arguments as kernelParams only", k->name);
    if (k->nparams && !kernelParams)
        return refuse(CUDA_ERROR_INVALID_VALUE, "%s: %u parameters and no kernelParams", k->name, k->nparams);
    const size_t pocl_max = standin_function_pocl_max_group(f->pocl);
    if ((size_t)b[0] * b[1] * b[2] > pocl_max)
        return refuse(CUDA_ERROR_NOT_SUPPORTED,
                      "%s: POCL runs this kernel in groups of at most %zu threads "
                      "(a limit of the stand-in, not of the GPU)",
                      k->name, pocl_max);
    return CUDA_SUCCESS;
}

/* A launch op of f, its arguments' bytes taken now (NULL: out of memory). */
static op *launch_op(CUfunction f, const unsigned g[3], const unsigned b[3], const unsigned char *params, size_t bytes)
{
    op *o = new_op(OP_LAUNCH);
    if (o && (o->params = malloc(bytes + 1)))
        memcpy(o->params, params, bytes);
    if (!o || !o->params) {
        free(o);
        return NULL;
    }
    o->f = f;
    memcpy(o->grid, g, 3 * sizeof *g);
    memcpy(o->block, b, 3 * sizeof *b);
    o->fault = injected(FAIL_FAULT, count_launch);
    return o;
}

API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    CUstream s = stream_of(ctx, hStream, &rc);
    if (rc)
        return done(rc);
    const unsigned g[3] = {gridDimX, gridDimY, gridDimZ}, b[3] = {blockDimX, blockDimY, blockDimZ};
    ++count_launch;
    if ((rc = check_launch(f, g, b, sharedMemBytes, kernelParams, extra)))
        return done(rc);
    if (injected(FAIL_LAUNCH, count_launch))
        return done(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    unsigned char *params = capture_params(f->info, kernelParams);
    op *o = params ? launch_op(f, g, b, params, params_bytes(f->info)) : NULL;
    free(params);
    if (!o)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    enqueue(s, o);
    return done(CUDA_SUCCESS);
}

/* ---- graphs (chains of kernel nodes) ---- */

static void free_ops(op *head)
{
    while (head) {
        op *next = head->next;
        free_op(head);
        head = next;
    }
}

API CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!phGraph || flags)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphCreate: no handle, or flags (must be 0)"));
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    g->magic = MAGIC_GRAPH, g->live = 1, g->ctx = ctx, g->next = graphs;
    graphs = g;
    *phGraph = g;
    return done(CUDA_SUCCESS);
}

static int valid_graph(CUgraph g)
{
    if (g && g->magic == MAGIC_GRAPH && g->live)
        return 1;
    violation("a graph that is destroyed or was never created");
    return 0;
}

/* The stand-in runs a graph's nodes in the order they were added, so it
 * takes chains only: each node after the one added just before it. */
static CUresult check_chain(CUgraph g, const CUgraphNode *dependencies, size_t n)
{
    const int first = g->count == 0;
    if (first ? n == 0
              : n == 1 && dependencies && dependencies[0] && dependencies[0]->magic == MAGIC_NODE &&
                    dependencies[0]->graph == g && dependencies[0]->index == g->count - 1)
        return CUDA_SUCCESS;
    return refuse(CUDA_ERROR_NOT_SUPPORTED, "cuGraphAddKernelNode: the stand-in takes chains only (each node after "
                                            "the last one added)");
}

API CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!valid_graph(hGraph) || hGraph->ctx != ctx)
        return done(CUDA_ERROR_INVALID_HANDLE);
    if (!phGraphNode || !nodeParams || !nodeParams->func)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphAddKernelNode: no node, parameters or function"));
    if ((rc = check_chain(hGraph, dependencies, numDependencies)))
        return done(rc);
    const CUDA_KERNEL_NODE_PARAMS *p = nodeParams;
    const unsigned g[3] = {p->gridDimX, p->gridDimY, p->gridDimZ}, b[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    if ((rc = check_launch(p->func, g, b, p->sharedMemBytes, p->kernelParams, p->extra)))
        return done(rc);
    unsigned char *params = capture_params(p->func->info, p->kernelParams);
    op *o = params ? launch_op(p->func, g, b, params, params_bytes(p->func->info)) : NULL;
    struct CUgraphNode_st *node = o ? calloc(1, sizeof *node) : NULL;
    free(params);
    if (!node) {
        if (o)
            free_op(o);
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    }
    o->fault = 0; /* faults are injected when the graph is launched */
    o->next = NULL;
    if (hGraph->tail)
        hGraph->tail->next = o;
    else
        hGraph->head = o;
    hGraph->tail = o;
    node->magic = MAGIC_NODE, node->graph = hGraph, node->index = hGraph->count++, node->next = hGraph->nodes;
    hGraph->nodes = node;
    *phGraphNode = node;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!valid_graph(hGraph) || hGraph->ctx != ctx)
        return done(CUDA_ERROR_INVALID_HANDLE);
    if (!phGraphExec || flags)
        return done(refuse(CUDA_ERROR_INVALID_VALUE, "cuGraphInstantiate: no handle, or flags (the stand-in takes 0)"));
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (!e)
        return done(CUDA_ERROR_OUT_OF_MEMORY);
    op **tail = &e->head;
    for (op *o = hGraph->head; o; o = o->next) {
        op *copy = launch_op(o->f, o->grid, o->block, o->params, params_bytes(o->f->info));
        if (!copy) {
            free_ops(e->head);
            free(e);
            return done(CUDA_ERROR_OUT_OF_MEMORY);
        }
        copy->fault = 0;
        copy->next = NULL;
        *tail = copy, tail = &copy->next;
    }
    e->magic = MAGIC_EXEC, e->live = 1, e->ctx = ctx, e->count = hGraph->count, e->next = execs;
    execs = e;
    *phGraphExec = e;
    return done(CUDA_SUCCESS);
}

static int valid_exec(CUgraphExec e)
{
    if (e && e->magic == MAGIC_EXEC && e->live)
        return 1;
    violation("an instantiated graph that is destroyed or never was");
    return 0;
}

/* Each node's launch joins the stream in order, counted as a launch (so
 * CUDA_STANDIN_FAIL=launch:N refuses the graph's launch, as the driver
 * refuses a graph it cannot launch, and fault:N makes that node fault). */
API CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    pthread_mutex_lock(&big_lock);
    CUcontext ctx;
    CUresult rc = need_context(&ctx);
    if (rc)
        return done(rc);
    if (!valid_exec(hGraphExec) || hGraphExec->ctx != ctx)
        return done(CUDA_ERROR_INVALID_HANDLE);
    CUstream s = stream_of(ctx, hStream, &rc);
    if (rc)
        return done(rc);
    ++count_graph;
    for (size_t k = 1; k <= hGraphExec->count; k++)
        if (injected(FAIL_LAUNCH, count_launch + k)) {
            count_launch += k;
            return done(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
        }
    for (op *o = hGraphExec->head; o; o = o->next) {
        if (!valid_function(o->f))
            return done(CUDA_ERROR_INVALID_HANDLE);
        ++count_launch;
        op *copy = launch_op(o->f, o->grid, o->block, o->params, params_bytes(o->f->info));
        if (!copy)
            return done(CUDA_ERROR_OUT_OF_MEMORY);
        enqueue(s, copy);
    }
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    pthread_mutex_lock(&big_lock);
    if (!valid_exec(hGraphExec))
        return done(CUDA_ERROR_INVALID_HANDLE);
    hGraphExec->live = 0;
    free_ops(hGraphExec->head);
    hGraphExec->head = NULL;
    return done(CUDA_SUCCESS);
}

API CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    pthread_mutex_lock(&big_lock);
    if (!valid_graph(hGraph))
        return done(CUDA_ERROR_INVALID_HANDLE);
    hGraph->live = 0;
    free_ops(hGraph->head);
    hGraph->head = hGraph->tail = NULL;
    for (struct CUgraphNode_st *n = hGraph->nodes; n; n = n->next)
        n->magic = 0; /* a stale node is no longer this graph's */
    return done(CUDA_SUCCESS);
}

/* NVRTC opens the driver too and asks it for its private tables: the
 * stand-in has none, which NVRTC takes as a driver that cannot help (as
 * when there is no driver at all). */
API CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    (void)pExportTableId;
    if (ppExportTable)
        *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- error names ---- */

static const struct {
    CUresult code;
    const char *name, *text;
} error_table[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on "
     "the device"},
    {CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for "
     "launch"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult rc)
{
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++)
        if (error_table[i].code == rc)
            return (int)i;
    return -1;
}

API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    int i = error_index(error);
    *pStr = i < 0 ? NULL : error_table[i].name;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    int i = error_index(error);
    *pStr = i < 0 ? NULL : error_table[i].text;
    return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ---- the report at exit ---- */

static void write_counts(void)
{
    const char *path = getenv("CUDA_STANDIN_COUNTS");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "alloc %lu\nlaunch %lu\ncopy %lu\ngraph %lu\nviolations %lu\n", count_alloc, count_launch, count_copy,
            count_graph, violations);
    fclose(f);
}

/* Everything not released by the end is a leak. */
static void report_leaks(void)
{
    unsigned long n = 0;
    for (allocation *a = allocations; a; a = a->next)
        if (a->buf)
            violation("at exit: allocation #%lu (%zu bytes) was never freed", a->serial, a->bytes), n++;
    for (struct CUmod_st *m = modules; m; m = m->next)
        if (m->live)
            violation("at exit: the %s module was never unloaded", m->label), n++;
    for (CUstream s = streams; s; s = s->next)
        if (s->live && s != s->ctx->null_stream)
            violation("at exit: a stream was never destroyed"), n++;
    for (CUevent e = events; e; e = e->next)
        if (e->live)
            violation("at exit: an event was never destroyed"), n++;
    for (pinned *q = pinned_list; q; q = q->next)
        violation("at exit: %zu bytes of pinned host memory were never freed", q->bytes), n++;
    for (struct CUgraph_st *g = graphs; g; g = g->next)
        if (g->live)
            violation("at exit: a graph was never destroyed"), n++;
    for (struct CUgraphExec_st *e = execs; e; e = e->next)
        if (e->live)
            violation("at exit: an instantiated graph was never destroyed"), n++;
    if (primary.retains > 0)
        violation("at exit: the primary context is still retained (%d)", primary.retains), n++;
}

static void report_at_exit(void)
{
    pthread_mutex_lock(&big_lock);
    report_leaks();
    write_counts();
    const unsigned long total = violations;
    if (!allocations && !primary.retains)
        standin_pocl_shutdown();
    pthread_mutex_unlock(&big_lock);
    if (total && strict_exit) {
        fprintf(stderr, "cuda-standin: %lu violation%s: exit code 86\n", total, total == 1 ? "" : "s");
        fflush(NULL);
        _exit(86);
    }
}

/* For the stand-in's own tests. */
API unsigned long ptreg_cuda_standin_violations(void)
{
    pthread_mutex_lock(&big_lock);
    const unsigned long n = violations;
    violations = 0;
    pthread_mutex_unlock(&big_lock);
    return n;
}
