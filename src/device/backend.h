/* The device layer's inside: one small interface that every GPU backend
 * (CUDA: cuda.c, OpenCL: opencl.c) implements, and the calls the
 * algorithms' device paths make (device.c wraps the backends with the
 * program cache, guard words and error messages). Private to the library
 * and its tests. */
#ifndef PTREG_DEVICE_BACKEND_H
#define PTREG_DEVICE_BACKEND_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ptreg/device.h"

typedef struct dev_handle dev_handle;

/* A kernel argument: a buffer or a scalar, passed by value. */
typedef enum karg_kind {
    PTREG_KARG_BUF = 0,
    PTREG_KARG_U32,
    PTREG_KARG_I32,
    PTREG_KARG_F32,
    PTREG_KARG_F64,
    PTREG_KARG_U64
} karg_kind;

typedef struct dbuf dbuf;
typedef struct dkernel dkernel;

typedef struct karg {
    karg_kind kind;
    union {
        const dbuf *buf;
        uint32_t u32;
        int32_t i32;
        float f32;
        double f64;
        uint64_t u64;
    } v;
} karg;

#define KARG_BUF(b) ((karg){PTREG_KARG_BUF, {.buf = (b)}})
#define KARG_U32(x) ((karg){PTREG_KARG_U32, {.u32 = (uint32_t)(x)}})
#define KARG_I32(x) ((karg){PTREG_KARG_I32, {.i32 = (int32_t)(x)}})
#define KARG_F32(x) ((karg){PTREG_KARG_F32, {.f32 = (float)(x)}})
#define KARG_F64(x) ((karg){PTREG_KARG_F64, {.f64 = (double)(x)}})
#define KARG_U64(x) ((karg){PTREG_KARG_U64, {.u64 = (uint64_t)(x)}})

#define PTREG_GRAPH_MAX_ARGS 32

/* A launch kept for a graph (dev_record_begin): the kernel, its shape and
 * its arguments (buffers by handle: they must outlive the graph). */
typedef struct dlaunch {
    const dkernel *kernel;
    unsigned dims;
    size_t groups[3], local[3];
    size_t nargs;
    karg args[PTREG_GRAPH_MAX_ARGS];
} dlaunch;

/* What a backend implements. Handles are the backend's own (cl_mem,
 * CUdeviceptr, cl_kernel, CUfunction ...) behind void *. Messages name the
 * device, the API call and its code; device.c adds the kernel. */
typedef struct backend_interface {
    ptreg_backend backend;
    /* Fills up to cap descriptions (device.backend/index set), returns how
     * many devices there are; note says why there are none. */
    size_t (*enumerate)(ptreg_device_info *infos, size_t cap, char *note, size_t note_size);
    ptreg_status (*open)(dev_handle *dev, ptreg_error *err);
    void (*close)(dev_handle *dev);
    /* Builds one program from source with the -D options in defines (the
     * backend adds its own flags); label names it in messages. */
    ptreg_status (*build)(dev_handle *dev, const char *source, const char *defines, const char *label, void **program,
                          ptreg_error *err);
    void (*program_free)(dev_handle *dev, void *program);
    /* The kernel, and the most threads a work-group of it can have on
     * this device (its registers and local memory decide: fewer than the
     * device's max_work_group for a heavy kernel). */
    ptreg_status (*kernel)(dev_handle *dev, void *program, const char *name, void **kernel, size_t *max_threads,
                           ptreg_error *err);
    void (*kernel_free)(dev_handle *dev, void *kernel);
    ptreg_status (*alloc)(dev_handle *dev, size_t bytes, void **handle, ptreg_error *err);
    void (*free)(dev_handle *dev, void *handle);
    /* write, fill and copy are queued in order; read waits for its data */
    ptreg_status (*write)(dev_handle *dev, void *handle, size_t offset, const void *src, size_t bytes,
                          ptreg_error *err);
    ptreg_status (*read)(dev_handle *dev, void *handle, size_t offset, void *dst, size_t bytes, ptreg_error *err);
    ptreg_status (*fill)(dev_handle *dev, void *handle, size_t offset, size_t bytes, uint32_t word, ptreg_error *err);
    ptreg_status (*copy)(dev_handle *dev, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes,
                         ptreg_error *err);
    /* groups[d] work-groups of local[d] threads along dimension d < dims */
    ptreg_status (*launch)(dev_handle *dev, void *kernel, const char *name, unsigned dims, const size_t groups[3],
                           const size_t local[3], size_t nargs, const karg *args, ptreg_error *err);
    ptreg_status (*finish)(dev_handle *dev, ptreg_error *err);
    /* A point in the queue, for timing the kernels queued after it. */
    ptreg_status (*event_record)(dev_handle *dev, void **event, ptreg_error *err);
    /* milliseconds between two recorded points; waits for the second. CUDA:
     * between its events; OpenCL: from the start of the first kernel after
     * the first point to the end of the last before the second, from the
     * kernels' own events (0 when none ran between) */
    ptreg_status (*event_elapsed)(dev_handle *dev, void *start, void *end, double *ms, ptreg_error *err);
    void (*event_free)(dev_handle *dev, void *event);
    /* Optional: a graph of launches run in order, launched with one call
     * (*graph NULL: the backend cannot; the layer replays the launches). */
    ptreg_status (*graph_build)(dev_handle *dev, const dlaunch *launches, size_t count, void **graph, ptreg_error *err);
    ptreg_status (*graph_launch)(dev_handle *dev, void *graph, ptreg_error *err);
    void (*graph_free)(dev_handle *dev, void *graph);
} backend_interface;

extern const backend_interface cuda_ops, opencl_ops;

typedef struct dprogram dprogram;

/* An opened device, kept for the life of the process (contexts are costly
 * to make). Its commands go to one in-order queue (stream); the program
 * cache and the launches (an OpenCL kernel's arguments are set, then it is
 * queued) hold the lock, so threads may share a device, each waiting for
 * its own results. */
struct dev_handle {
    const backend_interface *ops;
    ptreg_device_info info;
    char label[160]; /* "cuda:0 (NVIDIA H100 80GB HBM3)" for messages */
    void *impl;      /* the backend's state */
    pthread_mutex_t lock;
    dprogram *programs; /* built programs, by name and options */
    int check_guards;   /* buffers' guard words checked when freed */
    uint64_t guard_violations;
    int checked;   /* PTREG_DEVICE_CHECKED: wait after each launch, so a fault names its kernel */
    int no_graphs; /* PTREG_DEVICE_GRAPHS=0: graphs replay their launches (to measure what they save) */
    size_t live_buffers;
    /* Set by the backend when the device stopped working (a kernel
     * faulted: on CUDA every later call fails): why. The device is opened
     * afresh once its buffers are all freed (dev_get). Read and written
     * under fault_lock (dev_fault_mark, dev_faulted): any thread's call
     * may be the one that meets the fault. */
    char fault[PTREG_ERROR_MESSAGE_MAX];
    pthread_mutex_t fault_lock;
};

struct dbuf {
    dev_handle *dev;
    void *handle;
    size_t bytes; /* usable; GUARD bytes follow */
};

/* ---- what algorithms call ---- */

/* The opened device for a resolved GPU device (ptreg_device_resolve). */
ptreg_status dev_get(const ptreg_device *device, dev_handle **dev, ptreg_error *err);

/* A program: the dialect followed by the named embedded kernel files
 * (NULL-terminated, e.g. "nn/kdtree.cl"), built with `defines` ("-DWG=256
 * ..."; the layer adds PTREG_FP64 when the device has double precision).
 * Built once per device, name and defines, then reused. */
typedef struct kernel_program {
    const char *name;
    const char *const *files;
} kernel_program;

/* The program's whole source: the dialect, then its files (the caller
 * frees it). */
ptreg_status kernel_program_source(const kernel_program *program, char **source, ptreg_error *err);

/* The layer's own test kernels (basics.cl; -DWG=...). */
extern const kernel_program basics_kernels;
/* The contraction probe run when a device is opened (probe.cl). */
extern const kernel_program probe_kernels;

ptreg_status dev_program(dev_handle *dev, const kernel_program *program, const char *defines, dprogram **out,
                         ptreg_error *err);

struct dkernel {
    dev_handle *dev;
    void *handle;
    char name[64];
    size_t max_threads; /* in a work-group, on this device */
};

/* A kernel of a built program (looked up once, kept with the program). */
ptreg_status dev_kernel(dprogram *program, const char *name, dkernel **kernel, ptreg_error *err);

/* The most threads a work-group of the kernel may have here: its own
 * limit (CL_KERNEL_WORK_GROUP_SIZE, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
 * which ROCm, Intel and heavy kernels put below the device's, within the
 * device's. Sizes are chosen against it, never against the device's
 * max_work_group alone: dev_kernel_fits refuses a size beyond it
 * (PTREG_ERR_UNSUPPORTED naming the kernel and both limits), as every
 * launch does. */
size_t dev_kernel_limit(const dkernel *kernel);
ptreg_status dev_kernel_fits(const dkernel *kernel, size_t threads, ptreg_error *err);

/* Buffers carry guard words after their bytes; with check_guards set (the
 * parity suite), freeing one checks them and counts violations. */
ptreg_status dbuf_alloc(dev_handle *dev, size_t bytes, dbuf **buf, ptreg_error *err);
void dbuf_free(dbuf *buf);
ptreg_status dbuf_write(dbuf *buf, size_t offset, const void *src, size_t bytes, ptreg_error *err);
ptreg_status dbuf_read(const dbuf *buf, size_t offset, void *dst, size_t bytes, ptreg_error *err);
ptreg_status dbuf_fill(dbuf *buf, size_t offset, size_t bytes, uint32_t word, ptreg_error *err);
ptreg_status dbuf_copy(dbuf *dst, size_t dst_offset, const dbuf *src, size_t src_offset, size_t bytes,
                       ptreg_error *err);
/* Allocates and uploads in one step. */
ptreg_status dbuf_upload(dev_handle *dev, const void *src, size_t bytes, dbuf **buf, ptreg_error *err);

/* The largest grid a launch may have, the same on every backend: CUDA's
 * grids hold at most 2^31 - 1 groups along x, and the kernels' ids
 * (dialect.h's GLOBAL_ID_X) are u32, so groups x threads must stay within
 * 2^32. A launch beyond either is refused (PTREG_ERR_UNSUPPORTED), never
 * truncated or wrapped. */
#define DEV_GRID_GROUPS_MAX 0x7fffffffu
static inline int dev_grid_fits(size_t groups, size_t local)
{
    return groups <= DEV_GRID_GROUPS_MAX && local > 0 && groups <= ((size_t)1 << 32) / local;
}

/* 1-D launch: enough groups of `local` threads to cover `threads` (the
 * kernels bounds-check their data). */
ptreg_status dev_launch(const dkernel *kernel, size_t threads, size_t local, size_t nargs, const karg *args,
                        ptreg_error *err);
/* n-D launch by groups. */
ptreg_status dev_launch_groups(const dkernel *kernel, unsigned dims, const size_t groups[3], const size_t local[3],
                               size_t nargs, const karg *args, ptreg_error *err);
ptreg_status dev_finish(dev_handle *dev, ptreg_error *err);

/* A fixed sequence of launches recorded once and run again and again with
 * one call each time (a CUDA graph; elsewhere the launches are replayed):
 * a time loop's hundred small launches cost one launch's overhead. While a
 * thread records, its launches on that device are kept, not run, and its
 * copies, fills, allocations and waits on it are refused (a graph holds
 * launches only). The arguments are those of the recording: buffers must
 * outlive the graph, and scalars cannot change. */
typedef struct dgraph dgraph;
ptreg_status dev_record_begin(dev_handle *dev, ptreg_error *err);
/* Ends the thread's recording; *graph NULL when nothing was launched. */
ptreg_status dev_record_end(dev_handle *dev, dgraph **graph, ptreg_error *err);
/* Runs the graph: counts one graph, and its kernels as launches. */
ptreg_status dev_graph_launch(const dgraph *graph, ptreg_error *err);
/* How many kernels it runs. */
size_t dev_graph_kernels(const dgraph *graph);
void dev_graph_free(dgraph *graph);

typedef struct devent {
    dev_handle *dev;
    void *handle;
} devent;

ptreg_status dev_event_record(dev_handle *dev, devent *event, ptreg_error *err);
ptreg_status dev_event_elapsed(const devent *start, const devent *end, double *ms, ptreg_error *err);
void dev_event_free(devent *event);

/* The embedded kernel sources (generated at build time from the .cl files
 * and dialect.h). NULL when there is no such file. */
const char *kernel_source(const char *name, size_t *size);
/* The name of embedded source i, NULL past the last. */
const char *kernel_source_name(size_t i);

/* Marks the device stopped for why (a first fault's words stay; NULL: only
 * reads them) and copies the fault's words, "" when none, into out. */
void dev_fault_mark(dev_handle *dev, const char *why, char *out, size_t size);
int dev_faulted(dev_handle *dev);
/* For the backends: "device: call failed: NAME (code)". */
ptreg_status dev_fail(dev_handle *dev, ptreg_error *err, const char *call, const char *what, const char *code_name,
                      long code);

#endif
