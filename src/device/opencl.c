/* The OpenCL 1.2 backend, through the ICD loader (libOpenCL.so.1) loaded
 * with dlopen: one binary runs with or without it, and finds every
 * platform's devices (AMD, Intel and NVIDIA GPUs; POCL, the CPU driver the
 * tests run on). */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"

#define CL_FUNCTIONS(X)          \
    X(clGetPlatformIDs)          \
    X(clGetPlatformInfo)         \
    X(clGetDeviceIDs)            \
    X(clGetDeviceInfo)           \
    X(clCreateContext)           \
    X(clReleaseContext)          \
    X(clCreateCommandQueue)      \
    X(clReleaseCommandQueue)     \
    X(clCreateProgramWithSource) \
    X(clBuildProgram)            \
    X(clGetProgramBuildInfo)     \
    X(clReleaseProgram)          \
    X(clCreateKernel)            \
    X(clReleaseKernel)           \
    X(clGetKernelWorkGroupInfo)  \
    X(clSetKernelArg)            \
    X(clEnqueueNDRangeKernel)    \
    X(clCreateBuffer)            \
    X(clReleaseMemObject)        \
    X(clEnqueueWriteBuffer)      \
    X(clEnqueueReadBuffer)       \
    X(clEnqueueFillBuffer)       \
    X(clEnqueueCopyBuffer)       \
    X(clFinish)                  \
    X(clWaitForEvents)           \
    X(clGetEventProfilingInfo)   \
    X(clRetainEvent)             \
    X(clReleaseEvent)

#define DECLARE_POINTER(f) __typeof__(f) *f;
static struct {
    CL_FUNCTIONS(DECLARE_POINTER)
} cl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_note[200];

static void load_library(void)
{
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    void *lib = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_note, sizeof load_note, "no OpenCL ICD loader (libOpenCL.so.1) found");
        return;
    }
#define LOAD_POINTER(f)                                                                      \
    if (!(*(void **)&cl.f = dlsym(lib, #f))) {                                               \
        snprintf(load_note, sizeof load_note, "libOpenCL.so.1 lacks %s (OpenCL < 1.2)", #f); \
        return;                                                                              \
    }
    CL_FUNCTIONS(LOAD_POINTER)
    loaded = 1;
}

static const char *cl_error_name(cl_int code)
{
    switch (code) {
#define NAME(c) \
    case c: return #c;
        NAME(CL_DEVICE_NOT_FOUND)
        NAME(CL_DEVICE_NOT_AVAILABLE)
        NAME(CL_COMPILER_NOT_AVAILABLE)
        NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        NAME(CL_OUT_OF_RESOURCES)
        NAME(CL_OUT_OF_HOST_MEMORY)
        NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
        NAME(CL_BUILD_PROGRAM_FAILURE)
        NAME(CL_INVALID_VALUE)
        NAME(CL_INVALID_DEVICE_TYPE)
        NAME(CL_INVALID_PLATFORM)
        NAME(CL_INVALID_DEVICE)
        NAME(CL_INVALID_CONTEXT)
        NAME(CL_INVALID_COMMAND_QUEUE)
        NAME(CL_INVALID_MEM_OBJECT)
        NAME(CL_INVALID_BUILD_OPTIONS)
        NAME(CL_INVALID_PROGRAM)
        NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        NAME(CL_INVALID_KERNEL_NAME)
        NAME(CL_INVALID_KERNEL)
        NAME(CL_INVALID_ARG_INDEX)
        NAME(CL_INVALID_ARG_VALUE)
        NAME(CL_INVALID_ARG_SIZE)
        NAME(CL_INVALID_KERNEL_ARGS)
        NAME(CL_INVALID_WORK_DIMENSION)
        NAME(CL_INVALID_WORK_GROUP_SIZE)
        NAME(CL_INVALID_WORK_ITEM_SIZE)
        NAME(CL_INVALID_GLOBAL_OFFSET)
        NAME(CL_INVALID_EVENT)
        NAME(CL_INVALID_OPERATION)
        NAME(CL_INVALID_BUFFER_SIZE)
        NAME(CL_INVALID_GLOBAL_WORK_SIZE)
#undef NAME
    }
    return code == -1001 ? "CL_PLATFORM_NOT_FOUND_KHR" : "CL_ERROR";
}

#define CL_FAIL(dev, err, call, what, code) dev_fail(dev, err, call, what, cl_error_name(code), (long)(code))

/* The devices of every platform, in platform order: opencl:N is the N-th. */
#define MAX_CL_DEVICES 64
static cl_device_id device_ids[MAX_CL_DEVICES];
static cl_platform_id device_platforms[MAX_CL_DEVICES];

/* A point in the queue that times kernels (event_record): the time between
 * two marks is from the START of the first kernel queued after the first
 * to the END of the last kernel queued before the second, read from the
 * kernels' own events. A marker command's times would be simpler, but
 * drivers need not give a marker a time of its own (NVIDIA's may stamp it
 * when it is queued), and a marker counts the host's gaps between launches. */
typedef struct ocl_mark {
    cl_event last_before;        /* the last kernel queued before the mark (NULL: none kept) */
    cl_event first_after;        /* the first kernel queued after it (NULL: none yet) */
    unsigned long long launches; /* kernels queued before it */
    struct ocl_mark *next;       /* in the list of marks waiting for their first kernel */
} ocl_mark;

typedef struct ocl_state {
    cl_context context;
    cl_command_queue queue;
    int rounded_sqrt;   /* the device rounds fp32 sqrt and divide correctly when asked */
    cl_ulong max_alloc; /* the largest single buffer (OpenCL: often a quarter of the memory) */
    /* timing (ocl_mark), under timing_lock: a launch keeps its event only
     * while a mark lives, so untimed launches make no events */
    pthread_mutex_t timing_lock;
    size_t live_marks;
    ocl_mark *waiting;
    cl_event last_kernel;
    unsigned long long launches;
} ocl_state;

/* A string property, cut to fit (the call fails outright on a short
 * buffer, so it reads into a large one first). */
static void device_string(cl_device_id id, cl_device_info what, char *buf, size_t size)
{
    char whole[1024] = "";
    if (cl.clGetDeviceInfo(id, what, sizeof whole, whole, NULL) != CL_SUCCESS)
        whole[0] = '\0';
    whole[sizeof whole - 1] = '\0';
    snprintf(buf, size, "%.*s", (int)(size - 1), whole);
}

static void describe(ptreg_device_info *info, int index, cl_platform_id platform, cl_device_id id)
{
    memset(info, 0, sizeof *info);
    info->device = (ptreg_device){PTREG_BACKEND_OPENCL, index};
    device_string(id, CL_DEVICE_NAME, info->name, sizeof info->name);
    device_string(id, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    device_string(id, CL_DEVICE_VERSION, info->version, sizeof info->version);
    char platform_name[1024] = "";
    if (cl.clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof platform_name, platform_name, NULL) != CL_SUCCESS)
        platform_name[0] = '\0';
    platform_name[sizeof platform_name - 1] = '\0';
    snprintf(info->platform, sizeof info->platform, "%.*s", (int)sizeof info->platform - 1, platform_name);
    cl_device_type type = 0;
    cl_ulong mem = 0, local = 0;
    cl_uint units = 0;
    size_t group = 0;
    cl_device_fp_config fp64 = 0;
    cl.clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    cl.clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL);
    cl.clGetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, NULL);
    cl.clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    cl.clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, NULL);
    cl.clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL);
    info->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
    /* a CPU driver (POCL) runs the kernels for the tests; the CPU path is faster */
    info->for_testing = !info->is_gpu;
    info->memory_bytes = mem;
    info->local_memory_bytes = local;
    info->compute_units = units;
    info->max_work_group = group;
    info->fp64 = fp64 != 0;
}

static size_t ocl_enumerate(ptreg_device_info *infos, size_t cap, char *note, size_t note_size)
{
    pthread_once(&load_once, load_library);
    if (!loaded) {
        snprintf(note, note_size, "%s", load_note);
        return 0;
    }
    cl_platform_id platforms[16];
    cl_uint np = 0;
    cl_int rc = cl.clGetPlatformIDs(16, platforms, &np);
    if (rc != CL_SUCCESS || np == 0) {
        snprintf(note, note_size, "no OpenCL platform (%s)", rc == CL_SUCCESS ? "none installed" : cl_error_name(rc));
        return 0;
    }
    size_t count = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id ids[MAX_CL_DEVICES];
        cl_uint nd = 0;
        if (cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_CL_DEVICES, ids, &nd) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < MAX_CL_DEVICES && count < MAX_CL_DEVICES && count < cap; d++) {
            device_ids[count] = ids[d];
            device_platforms[count] = platforms[p];
            describe(&infos[count], (int)count, platforms[p], ids[d]);
            count++;
        }
    }
    if (!count)
        snprintf(note, note_size, "OpenCL platforms found, but no devices");
    return count;
}

static ptreg_status ocl_open(dev_handle *dev, ptreg_error *err)
{
    cl_device_id id = device_ids[dev->info.device.index];
    ocl_state *s = calloc(1, sizeof *s);
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", dev->label);
    cl_int rc;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)device_platforms[dev->info.device.index], 0};
    s->context = cl.clCreateContext(props, 1, &id, NULL, NULL, &rc);
    if (!s->context) {
        free(s);
        return CL_FAIL(dev, err, "clCreateContext", "", rc);
    }
    s->queue = cl.clCreateCommandQueue(s->context, id, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (!s->queue) {
        cl.clReleaseContext(s->context);
        free(s);
        return CL_FAIL(dev, err, "clCreateCommandQueue", "", rc);
    }
    cl_device_fp_config fp32 = 0;
    cl.clGetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp32, &fp32, NULL);
    s->rounded_sqrt = (fp32 & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    if (cl.clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof s->max_alloc, &s->max_alloc, NULL) != CL_SUCCESS)
        s->max_alloc = 0;
    pthread_mutex_init(&s->timing_lock, NULL);
    dev->impl = s;
    return PTREG_OK;
}

static void ocl_close(dev_handle *dev)
{
    ocl_state *s = dev->impl;
    if (s->last_kernel)
        cl.clReleaseEvent(s->last_kernel);
    pthread_mutex_destroy(&s->timing_lock);
    cl.clReleaseCommandQueue(s->queue);
    cl.clReleaseContext(s->context);
    free(s);
}

/* The build log's first lines, into the message (the whole log is read:
 * the call fails on a short buffer). */
static ptreg_status build_failed(dev_handle *dev, cl_program program, const char *label, cl_int rc, ptreg_error *err)
{
    cl_device_id id = device_ids[dev->info.device.index];
    size_t size = 0;
    char *log = NULL;
    if (cl.clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS && size)
        log = calloc(size + 1, 1);
    if (log && cl.clGetProgramBuildInfo(program, id, CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS)
        log[0] = '\0';
    ptreg_status st = ptreg_error_set(err, PTREG_ERR_RUNTIME,
                                      "%s: clBuildProgram failed for the %s kernels: %s (%d): %s", dev->label, label,
                                      cl_error_name(rc), (int)rc, log ? log : "");
    free(log);
    return st;
}

static ptreg_status ocl_build(dev_handle *dev, const char *source, const char *defines, const char *label,
                              void **program, ptreg_error *err)
{
    ocl_state *s = dev->impl;
    cl_device_id id = device_ids[dev->info.device.index];
    cl_int rc;
    cl_program p = cl.clCreateProgramWithSource(s->context, 1, &source, NULL, &rc);
    if (!p)
        return CL_FAIL(dev, err, "clCreateProgramWithSource", label, rc);
    size_t size = strlen(defines) + 96;
    char *options = malloc(size);
    if (!options) {
        cl.clReleaseProgram(p);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    }
    snprintf(options, size, "-cl-std=CL1.2 %s%s", s->rounded_sqrt ? "-cl-fp32-correctly-rounded-divide-sqrt " : "",
             defines);
    rc = cl.clBuildProgram(p, 1, &id, options, NULL, NULL);
    free(options);
    if (rc != CL_SUCCESS) {
        ptreg_status st = build_failed(dev, p, label, rc, err);
        cl.clReleaseProgram(p);
        return st;
    }
    *program = p;
    return PTREG_OK;
}

static void ocl_program_free(dev_handle *dev, void *program)
{
    (void)dev;
    cl.clReleaseProgram(program);
}

static ptreg_status ocl_kernel(dev_handle *dev, void *program, const char *name, void **kernel, size_t *max_threads,
                               ptreg_error *err)
{
    cl_int rc;
    *kernel = cl.clCreateKernel(program, name, &rc);
    if (!*kernel)
        return CL_FAIL(dev, err, "clCreateKernel", name, rc);
    /* the kernel's own limit, below the device's for a heavy kernel */
    size_t group = 0;
    if (cl.clGetKernelWorkGroupInfo(*kernel, device_ids[dev->info.device.index], CL_KERNEL_WORK_GROUP_SIZE,
                                    sizeof group, &group, NULL) != CL_SUCCESS)
        group = 0;
    *max_threads = group;
    return PTREG_OK;
}

static void ocl_kernel_free(dev_handle *dev, void *kernel)
{
    (void)dev;
    cl.clReleaseKernel(kernel);
}

static ptreg_status ocl_alloc(dev_handle *dev, size_t bytes, void **handle, ptreg_error *err)
{
    const cl_ulong largest = ((ocl_state *)dev->impl)->max_alloc;
    if (largest && bytes > largest)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "%s: a buffer of %zu bytes is larger than the device's "
                               "largest allocation (%llu bytes), whatever memory is free",
                               dev->label, bytes, (unsigned long long)largest);
    cl_int rc;
    *handle = cl.clCreateBuffer(((ocl_state *)dev->impl)->context, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    if (*handle)
        return PTREG_OK;
    if (rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_OUT_OF_RESOURCES || rc == CL_INVALID_BUFFER_SIZE)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of device memory for %zu bytes (%s)", dev->label, bytes,
                               cl_error_name(rc));
    return CL_FAIL(dev, err, "clCreateBuffer", "", rc);
}

static void ocl_free(dev_handle *dev, void *handle)
{
    (void)dev;
    cl.clReleaseMemObject(handle);
}

static ptreg_status ocl_write(dev_handle *dev, void *handle, size_t offset, const void *src, size_t bytes,
                              ptreg_error *err)
{
    cl_int rc = cl.clEnqueueWriteBuffer(((ocl_state *)dev->impl)->queue, handle, CL_TRUE, offset, bytes, src, 0, NULL,
                                        NULL);
    return rc == CL_SUCCESS ? PTREG_OK : CL_FAIL(dev, err, "clEnqueueWriteBuffer", "", rc);
}

static ptreg_status ocl_read(dev_handle *dev, void *handle, size_t offset, void *dst, size_t bytes, ptreg_error *err)
{
    cl_int rc = cl.clEnqueueReadBuffer(((ocl_state *)dev->impl)->queue, handle, CL_TRUE, offset, bytes, dst, 0, NULL,
                                       NULL);
    return rc == CL_SUCCESS ? PTREG_OK : CL_FAIL(dev, err, "clEnqueueReadBuffer", "", rc);
}

static ptreg_status ocl_fill(dev_handle *dev, void *handle, size_t offset, size_t bytes, uint32_t word,
                             ptreg_error *err)
{
    cl_int rc = cl.clEnqueueFillBuffer(((ocl_state *)dev->impl)->queue, handle, &word, sizeof word, offset, bytes, 0,
                                       NULL, NULL);
    return rc == CL_SUCCESS ? PTREG_OK : CL_FAIL(dev, err, "clEnqueueFillBuffer", "", rc);
}

static ptreg_status ocl_copy(dev_handle *dev, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes,
                             ptreg_error *err)
{
    cl_int rc = cl.clEnqueueCopyBuffer(((ocl_state *)dev->impl)->queue, src, dst, src_offset, dst_offset, bytes, 0,
                                       NULL, NULL);
    return rc == CL_SUCCESS ? PTREG_OK : CL_FAIL(dev, err, "clEnqueueCopyBuffer", "", rc);
}

static ptreg_status set_argument(dev_handle *dev, cl_kernel k, const char *name, cl_uint i, const karg *a,
                                 ptreg_error *err)
{
    static const size_t scalar_size[] = {
        [PTREG_KARG_U32] = 4, [PTREG_KARG_I32] = 4, [PTREG_KARG_F32] = 4, [PTREG_KARG_F64] = 8, [PTREG_KARG_U64] = 8};
    cl_int rc = a->kind == PTREG_KARG_BUF ? cl.clSetKernelArg(k, i, sizeof(cl_mem), &a->v.buf->handle)
                                          : cl.clSetKernelArg(k, i, scalar_size[a->kind], &a->v);
    if (rc == CL_SUCCESS)
        return PTREG_OK;
    char what[96];
    snprintf(what, sizeof what, "%s argument %u", name, (unsigned)i);
    return CL_FAIL(dev, err, "clSetKernelArg", what, rc);
}

/* A kernel was queued (its event e, NULL when no mark lives): the marks
 * waiting for their first kernel have it, and it is the last so far.
 * Under timing_lock. */
static void kernel_queued(ocl_state *s, cl_event e)
{
    for (ocl_mark *m = s->waiting; m && e; m = m->next)
        if (cl.clRetainEvent(e) == CL_SUCCESS)
            m->first_after = e;
    if (e)
        s->waiting = NULL;
    if (s->last_kernel)
        cl.clReleaseEvent(s->last_kernel);
    s->last_kernel = e;
    s->launches++;
}

static ptreg_status ocl_launch(dev_handle *dev, void *kernel, const char *name, unsigned dims, const size_t groups[3],
                               const size_t local[3], size_t nargs, const karg *args, ptreg_error *err)
{
    for (size_t i = 0; i < nargs; i++) {
        ptreg_status st = set_argument(dev, kernel, name, (cl_uint)i, &args[i], err);
        if (st)
            return st;
    }
    size_t global[3];
    for (unsigned d = 0; d < dims; d++)
        global[d] = groups[d] * local[d];
    ocl_state *s = dev->impl;
    pthread_mutex_lock(&s->timing_lock);
    cl_event e = NULL;
    cl_int rc = cl.clEnqueueNDRangeKernel(s->queue, kernel, dims, NULL, global, local, 0, NULL,
                                          s->live_marks ? &e : NULL);
    if (rc == CL_SUCCESS)
        kernel_queued(s, e);
    pthread_mutex_unlock(&s->timing_lock);
    return rc == CL_SUCCESS ? PTREG_OK : CL_FAIL(dev, err, "clEnqueueNDRangeKernel", name, rc);
}

static ptreg_status ocl_finish(dev_handle *dev, ptreg_error *err)
{
    cl_int rc = cl.clFinish(((ocl_state *)dev->impl)->queue);
    return rc == CL_SUCCESS ? PTREG_OK : CL_FAIL(dev, err, "clFinish", "", rc);
}

static ptreg_status ocl_event_record(dev_handle *dev, void **event, ptreg_error *err)
{
    ocl_state *s = dev->impl;
    ocl_mark *m = calloc(1, sizeof *m);
    *event = m;
    if (!m)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", dev->label);
    pthread_mutex_lock(&s->timing_lock);
    if (s->last_kernel && cl.clRetainEvent(s->last_kernel) == CL_SUCCESS)
        m->last_before = s->last_kernel;
    m->launches = s->launches;
    m->next = s->waiting;
    s->waiting = m;
    s->live_marks++;
    pthread_mutex_unlock(&s->timing_lock);
    return PTREG_OK;
}

static ptreg_status ocl_event_elapsed(dev_handle *dev, void *start, void *end, double *ms, ptreg_error *err)
{
    const ocl_mark *a = start, *b = end;
    *ms = 0.0;
    ocl_state *s = dev->impl;
    pthread_mutex_lock(&s->timing_lock);
    /* kernels queued between the marks: the first has come (it woke the
     * first mark) and the last was kept (a mark lived) */
    cl_event first = b->launches > a->launches ? a->first_after : NULL, last = first ? b->last_before : NULL;
    pthread_mutex_unlock(&s->timing_lock);
    if (!first || !last)
        return PTREG_OK; /* no kernel between them */
    cl_ulong t0 = 0, t1 = 0;
    cl_int rc = cl.clWaitForEvents(1, &last);
    if (rc == CL_SUCCESS)
        rc = cl.clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (rc != CL_SUCCESS)
        return CL_FAIL(dev, err, "clGetEventProfilingInfo", "", rc);
    /* the counters are unsigned: an end before the start must not wrap */
    *ms = ((double)t1 - (double)t0) * 1e-6;
    return PTREG_OK;
}

static void ocl_event_free(dev_handle *dev, void *event)
{
    ocl_state *s = dev->impl;
    ocl_mark *m = event;
    pthread_mutex_lock(&s->timing_lock);
    for (ocl_mark **at = &s->waiting; *at; at = &(*at)->next)
        if (*at == m) {
            *at = m->next;
            break;
        }
    s->live_marks--;
    pthread_mutex_unlock(&s->timing_lock);
    if (m->last_before)
        cl.clReleaseEvent(m->last_before);
    if (m->first_after)
        cl.clReleaseEvent(m->first_after);
    free(m);
}

const backend_interface opencl_ops = {
    .backend = PTREG_BACKEND_OPENCL,
    .enumerate = ocl_enumerate,
    .open = ocl_open,
    .close = ocl_close,
    .build = ocl_build,
    .program_free = ocl_program_free,
    .kernel = ocl_kernel,
    .kernel_free = ocl_kernel_free,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .write = ocl_write,
    .read = ocl_read,
    .fill = ocl_fill,
    .copy = ocl_copy,
    .launch = ocl_launch,
    .finish = ocl_finish,
    .event_record = ocl_event_record,
    .event_elapsed = ocl_event_elapsed,
    .event_free = ocl_event_free,
};
