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

typedef struct ptreg_dev ptreg_dev;

/* A kernel argument: a buffer or a scalar, passed by value. */
typedef enum ptreg_karg_kind {
    PTREG_KARG_BUF = 0,
    PTREG_KARG_U32,
    PTREG_KARG_I32,
    PTREG_KARG_F32,
    PTREG_KARG_F64,
    PTREG_KARG_U64
} ptreg_karg_kind;

typedef struct ptreg_dbuf ptreg_dbuf;

typedef struct ptreg_karg {
    ptreg_karg_kind kind;
    union {
        const ptreg_dbuf *buf;
        uint32_t u32;
        int32_t i32;
        float f32;
        double f64;
        uint64_t u64;
    } v;
} ptreg_karg;

#define KARG_BUF(b) ((ptreg_karg){PTREG_KARG_BUF, {.buf = (b)}})
#define KARG_U32(x) ((ptreg_karg){PTREG_KARG_U32, {.u32 = (uint32_t)(x)}})
#define KARG_I32(x) ((ptreg_karg){PTREG_KARG_I32, {.i32 = (int32_t)(x)}})
#define KARG_F32(x) ((ptreg_karg){PTREG_KARG_F32, {.f32 = (float)(x)}})
#define KARG_F64(x) ((ptreg_karg){PTREG_KARG_F64, {.f64 = (double)(x)}})
#define KARG_U64(x) ((ptreg_karg){PTREG_KARG_U64, {.u64 = (uint64_t)(x)}})

/* What a backend implements. Handles are the backend's own (cl_mem,
 * CUdeviceptr, cl_kernel, CUfunction ...) behind void *. Messages name the
 * device, the API call and its code; device.c adds the kernel. */
typedef struct ptreg_backend_ops {
    ptreg_backend backend;
    /* Fills up to cap descriptions (device.backend/index set), returns how
     * many devices there are; note says why there are none. */
    size_t (*enumerate)(ptreg_device_info *infos, size_t cap, char *note, size_t note_size);
    ptreg_status (*open)(ptreg_dev *dev, ptreg_error *err);
    void (*close)(ptreg_dev *dev);
    /* Builds one program from source with the -D options in defines (the
     * backend adds its own flags); label names it in messages. */
    ptreg_status (*build)(ptreg_dev *dev, const char *source, const char *defines, const char *label, void **program,
                          ptreg_error *err);
    void (*program_free)(ptreg_dev *dev, void *program);
    /* The kernel, and the most threads a work-group of it can have on
     * this device (its registers and local memory decide: fewer than the
     * device's max_work_group for a heavy kernel). */
    ptreg_status (*kernel)(ptreg_dev *dev, void *program, const char *name, void **kernel, size_t *max_threads,
                           ptreg_error *err);
    void (*kernel_free)(ptreg_dev *dev, void *kernel);
    ptreg_status (*alloc)(ptreg_dev *dev, size_t bytes, void **handle, ptreg_error *err);
    void (*free)(ptreg_dev *dev, void *handle);
    /* write, fill and copy are queued in order; read waits for its data */
    ptreg_status (*write)(ptreg_dev *dev, void *handle, size_t offset, const void *src, size_t bytes,
                          ptreg_error *err);
    ptreg_status (*read)(ptreg_dev *dev, void *handle, size_t offset, void *dst, size_t bytes, ptreg_error *err);
    ptreg_status (*fill)(ptreg_dev *dev, void *handle, size_t offset, size_t bytes, uint32_t word, ptreg_error *err);
    ptreg_status (*copy)(ptreg_dev *dev, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes,
                         ptreg_error *err);
    /* groups[d] work-groups of local[d] threads along dimension d < dims */
    ptreg_status (*launch)(ptreg_dev *dev, void *kernel, const char *name, unsigned dims, const size_t groups[3],
                           const size_t local[3], size_t nargs, const ptreg_karg *args, ptreg_error *err);
    ptreg_status (*finish)(ptreg_dev *dev, ptreg_error *err);
    ptreg_status (*event_record)(ptreg_dev *dev, void **event, ptreg_error *err);
    /* milliseconds between two recorded events; waits for the second */
    ptreg_status (*event_elapsed)(ptreg_dev *dev, void *start, void *end, double *ms, ptreg_error *err);
    void (*event_free)(ptreg_dev *dev, void *event);
} ptreg_backend_ops;

extern const ptreg_backend_ops ptreg_cuda_ops, ptreg_opencl_ops;

typedef struct ptreg_dprogram ptreg_dprogram;

/* An opened device, kept for the life of the process (contexts are costly
 * to make). Its commands go to one in-order queue (stream); the program
 * cache and the launches (an OpenCL kernel's arguments are set, then it is
 * queued) hold the lock, so threads may share a device, each waiting for
 * its own results. */
struct ptreg_dev {
    const ptreg_backend_ops *ops;
    ptreg_device_info info;
    char label[160];          /* "cuda:0 (NVIDIA H100 80GB HBM3)" for messages */
    void *impl;               /* the backend's state */
    pthread_mutex_t lock;
    ptreg_dprogram *programs; /* built programs, by name and options */
    int check_guards;         /* buffers' guard words checked when freed */
    uint64_t guard_violations;
    int checked;              /* PTREG_DEVICE_CHECKED: wait after each launch, so a fault names its kernel */
    size_t live_buffers;
    /* Set by the backend when the device stopped working (a kernel
     * faulted: on CUDA every later call fails): why. The device is opened
     * afresh once its buffers are all freed (ptreg_dev_get). */
    char fault[PTREG_ERROR_MESSAGE_MAX];
};

struct ptreg_dbuf {
    ptreg_dev *dev;
    void *handle;
    size_t bytes; /* usable; GUARD bytes follow */
};

/* ---- what algorithms call ---- */

/* The opened device for a resolved GPU device (ptreg_device_resolve). */
ptreg_status ptreg_dev_get(const ptreg_device *device, ptreg_dev **dev, ptreg_error *err);

/* A program: the dialect followed by the named embedded kernel files
 * (NULL-terminated, e.g. "nn/kdtree.cl"), built with `defines` ("-DWG=256
 * ..."; the layer adds PTREG_FP64 when the device has double precision).
 * Built once per device, name and defines, then reused. */
typedef struct ptreg_kernel_program {
    const char *name;
    const char *const *files;
} ptreg_kernel_program;

/* The program's whole source: the dialect, then its files (the caller
 * frees it). */
ptreg_status ptreg_kernel_program_source(const ptreg_kernel_program *program, char **source, ptreg_error *err);

/* The layer's own test kernels (basics.cl; -DWG=...). */
extern const ptreg_kernel_program ptreg_basics_kernels;

ptreg_status ptreg_dev_program(ptreg_dev *dev, const ptreg_kernel_program *program, const char *defines,
                               ptreg_dprogram **out, ptreg_error *err);

typedef struct ptreg_dkernel {
    ptreg_dev *dev;
    void *handle;
    char name[64];
    size_t max_threads; /* in a work-group, on this device */
} ptreg_dkernel;

/* A kernel of a built program (looked up once, kept with the program). */
ptreg_status ptreg_dev_kernel(ptreg_dprogram *program, const char *name, ptreg_dkernel **kernel, ptreg_error *err);

/* Buffers carry guard words after their bytes; with check_guards set (the
 * parity suite), freeing one checks them and counts violations. */
ptreg_status ptreg_dbuf_alloc(ptreg_dev *dev, size_t bytes, ptreg_dbuf **buf, ptreg_error *err);
void ptreg_dbuf_free(ptreg_dbuf *buf);
ptreg_status ptreg_dbuf_write(ptreg_dbuf *buf, size_t offset, const void *src, size_t bytes, ptreg_error *err);
ptreg_status ptreg_dbuf_read(const ptreg_dbuf *buf, size_t offset, void *dst, size_t bytes, ptreg_error *err);
ptreg_status ptreg_dbuf_fill(ptreg_dbuf *buf, size_t offset, size_t bytes, uint32_t word, ptreg_error *err);
ptreg_status ptreg_dbuf_copy(ptreg_dbuf *dst, size_t dst_offset, const ptreg_dbuf *src, size_t src_offset,
                             size_t bytes, ptreg_error *err);
/* Allocates and uploads in one step. */
ptreg_status ptreg_dbuf_upload(ptreg_dev *dev, const void *src, size_t bytes, ptreg_dbuf **buf, ptreg_error *err);

/* 1-D launch: enough groups of `local` threads to cover `threads` (the
 * kernels bounds-check their data). */
ptreg_status ptreg_dev_launch(const ptreg_dkernel *kernel, size_t threads, size_t local, size_t nargs,
                              const ptreg_karg *args, ptreg_error *err);
/* n-D launch by groups. */
ptreg_status ptreg_dev_launch_groups(const ptreg_dkernel *kernel, unsigned dims, const size_t groups[3],
                                     const size_t local[3], size_t nargs, const ptreg_karg *args, ptreg_error *err);
ptreg_status ptreg_dev_finish(ptreg_dev *dev, ptreg_error *err);

typedef struct ptreg_devent {
    ptreg_dev *dev;
    void *handle;
} ptreg_devent;

ptreg_status ptreg_dev_event_record(ptreg_dev *dev, ptreg_devent *event, ptreg_error *err);
ptreg_status ptreg_dev_event_elapsed(const ptreg_devent *start, const ptreg_devent *end, double *ms,
                                     ptreg_error *err);
void ptreg_dev_event_free(ptreg_devent *event);

/* The embedded kernel sources (generated at build time from the .cl files
 * and dialect.h). NULL when there is no such file. */
const char *ptreg_kernel_source(const char *name, size_t *size);
/* The name of embedded source i, NULL past the last. */
const char *ptreg_kernel_source_name(size_t i);

/* For the backends: "device: call failed: NAME (code)". */
ptreg_status ptreg_dev_fail(ptreg_dev *dev, ptreg_error *err, const char *call, const char *what, const char *code_name,
                            long code);

#endif
