#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
/* The CUDA backend: the driver API (libcuda.so.1) and NVRTC (libnvrtc.so),
 * both loaded with dlopen, so one binary runs with or without them. Kernels
 * are compiled at run time for the device's own architecture and cached on
 * disk (kernel_cache.c); launched with cuLaunchKernel and an argument
 * array, on one stream per device. The headers only give the types and the
 * versioned symbol names (cuMemAlloc is cuMemAlloc_v2 ...). */
#include <cuda.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "device/kernel_cache.h"
#include "device/nvrtc.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

#define CU_FUNCTIONS(X)                                                                                        \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem)  \
    X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)        \
    X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuModuleLoadData) X(cuModuleUnload)          \
    X(cuModuleGetFunction) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)                \
    X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuLaunchKernel) X(cuEventCreate) X(cuEventRecord)               \
    X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) X(cuGetErrorName)

#define NVRTC_FUNCTIONS(X)                                                                                    \
    X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)                    \
    X(nvrtcGetProgramLog) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)             \
    X(nvrtcDestroyProgram) X(nvrtcGetErrorString) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs)

#define DECLARE_POINTER(f) __typeof__(f) *f;
static struct {
    CU_FUNCTIONS(DECLARE_POINTER)
} cu;
static struct {
    NVRTC_FUNCTIONS(DECLARE_POINTER)
} nvrtc;

/* Each symbol by the name its header maps it to (STRINGIFY expands
 * cuMemAlloc to "cuMemAlloc_v2"), else by its plain name: an older driver
 * has cuEventElapsedTime, not CUDA 13's cuEventElapsedTime_v2 of the same
 * signature. */
#define LOAD_POINTER(table, f, plain)                                                               \
    if (!(*(void **)&table.f = dlsym(lib, STRINGIFY(f))) && !(*(void **)&table.f = dlsym(lib, plain))) { \
        snprintf(note, note_size, "%s lacks %s (too old a version)", library, STRINGIFY(f));         \
        return 0;                                                                                   \
    }
/* #f here names the function before the header's macro renames it */
#define LOAD_CU(f) LOAD_POINTER(cu, f, #f)
#define LOAD_NVRTC(f) LOAD_POINTER(nvrtc, f, #f)

static void *open_first(const char *const *names, size_t count, const char **which)
{
    for (size_t i = 0; i < count; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            *which = names[i];
            return lib;
        }
    }
    return NULL;
}

static int load_driver(char *note, size_t note_size)
{
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    const char *library = "libcuda.so.1";
    void *lib = open_first(names, 2, &library);
    if (!lib) {
        snprintf(note, note_size, "no CUDA driver (libcuda.so.1) found");
        return 0;
    }
    CU_FUNCTIONS(LOAD_CU)
    return 1;
}

static int load_nvrtc(char *note, size_t note_size)
{
    /* PTREG_NVRTC names the library when it is not on the loader's path
     * (a pip wheel's, say) */
    const char *env = getenv("PTREG_NVRTC");
    const char *const names[] = {env && *env ? env : "libnvrtc.so", "libnvrtc.so", "libnvrtc.so.13",
                                 "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
    const char *library = "libnvrtc.so";
    void *lib = open_first(names, sizeof names / sizeof names[0], &library);
    if (!lib) {
        snprintf(note, note_size, "no NVRTC (libnvrtc.so) found; set PTREG_NVRTC to its path");
        return 0;
    }
    NVRTC_FUNCTIONS(LOAD_NVRTC)
    return 1;
}

static pthread_once_t driver_once = PTHREAD_ONCE_INIT, nvrtc_once = PTHREAD_ONCE_INIT;
static int driver_loaded, nvrtc_loaded;
static char driver_note[200], nvrtc_note[200];

static void driver_load_once(void)
{
    driver_loaded = load_driver(driver_note, sizeof driver_note);
    if (driver_loaded) {
        CUresult rc = cu.cuInit(0);
        if (rc != CUDA_SUCCESS) {
            const char *name = "?";
            cu.cuGetErrorName(rc, &name);
            snprintf(driver_note, sizeof driver_note, "cuInit failed: %s (%d)", name, (int)rc);
            driver_loaded = 0;
        }
    }
}

static void nvrtc_load_once(void) { nvrtc_loaded = load_nvrtc(nvrtc_note, sizeof nvrtc_note); }

int ptreg_nvrtc_available(char *note, size_t note_size)
{
    pthread_once(&nvrtc_once, nvrtc_load_once);
    if (!nvrtc_loaded && note)
        snprintf(note, note_size, "%s", nvrtc_note);
    return nvrtc_loaded;
}

static const char *cu_error_name(CUresult rc)
{
    const char *name = NULL;
    if (cu.cuGetErrorName && cu.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    return "CUDA_ERROR";
}

#define CU_FAIL(dev, err, call, what, rc) ptreg_dev_fail(dev, err, call, what, cu_error_name(rc), (long)(rc))

/* ---- NVRTC ---- */

/* "-DA=1 -DB=2" as separate options, after the fixed ones. */
static int split_options(char *defines, const char **options, int count, int cap)
{
    char *save = NULL;
    for (char *tok = strtok_r(defines, " ", &save); tok && count < cap; tok = strtok_r(NULL, " ", &save))
        options[count++] = tok;
    return count;
}

static char *program_log(nvrtcProgram p)
{
    size_t size = 0;
    if (nvrtc.nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size == 0)
        return NULL;
    char *log = malloc(size + 1);
    if (log && nvrtc.nvrtcGetProgramLog(p, log) != NVRTC_SUCCESS)
        log[0] = '\0';
    if (log)
        log[size] = '\0';
    return log;
}

static ptreg_status take_image(nvrtcProgram p, int ptx, ptreg_nvrtc_output *out, ptreg_error *err)
{
    size_t size = 0;
    nvrtcResult rc = ptx ? nvrtc.nvrtcGetPTXSize(p, &size) : nvrtc.nvrtcGetCUBINSize(p, &size);
    if (rc != NVRTC_SUCCESS || size == 0)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "NVRTC gave no %s: %s", ptx ? "PTX" : "cubin",
                               nvrtc.nvrtcGetErrorString(rc));
    out->image = malloc(size);
    if (!out->image)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    rc = ptx ? nvrtc.nvrtcGetPTX(p, out->image) : nvrtc.nvrtcGetCUBIN(p, out->image);
    out->size = size;
    return rc == NVRTC_SUCCESS ? PTREG_OK
                               : ptreg_error_set(err, PTREG_ERR_RUNTIME, "NVRTC: %s", nvrtc.nvrtcGetErrorString(rc));
}

ptreg_status ptreg_nvrtc_compile(const char *source, const char *defines, const char *label, int arch, int ptx,
                                 int verbose, ptreg_nvrtc_output *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    char note[200];
    if (!ptreg_nvrtc_available(note, sizeof note))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s", note);
    char arch_option[48], *defs = strdup(defines ? defines : "");
    if (!defs)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", arch);
    /* --fmad=false: the kernels' distances are the CPU's bits (dialect.h) */
    const char *options[64] = {arch_option, "--fmad=false", "--std=c++14", "-DPTREG_FP64=1"};
    int count = 4;
    if (verbose)
        options[count++] = "--ptxas-options=-v";
    count = split_options(defs, options, count, 64);
    nvrtcProgram p;
    nvrtcResult rc = nvrtc.nvrtcCreateProgram(&p, source, label, 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS) {
        free(defs);
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "NVRTC: nvrtcCreateProgram failed for the %s kernels: %s",
                               label, nvrtc.nvrtcGetErrorString(rc));
    }
    rc = nvrtc.nvrtcCompileProgram(p, count, options);
    free(defs);
    out->log = program_log(p);
    ptreg_status st = PTREG_OK;
    if (rc != NVRTC_SUCCESS)
        st = ptreg_error_set(err, PTREG_ERR_RUNTIME, "NVRTC: compiling the %s kernels for %s_%d failed: %s: %.300s",
                             label, ptx ? "compute" : "sm", arch, nvrtc.nvrtcGetErrorString(rc),
                             out->log ? out->log : "");
    else
        st = take_image(p, ptx, out, err);
    nvrtc.nvrtcDestroyProgram(&p);
    if (st)
        ptreg_nvrtc_output_free(out);
    return st;
}

void ptreg_nvrtc_output_free(ptreg_nvrtc_output *out)
{
    free(out->image);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* The architecture to compile for: the device's own when NVRTC knows it
 * (a cubin), else the newest NVRTC knows below it, as PTX that the driver
 * finishes for the device. */
static int nvrtc_target(int arch, int *ptx)
{
    int count = 0, best = 0;
    *ptx = 0;
    if (nvrtc.nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0 || count > 256)
        return arch;
    int archs[256];
    if (nvrtc.nvrtcGetSupportedArchs(archs) != NVRTC_SUCCESS)
        return arch;
    for (int i = 0; i < count; i++) {
        if (archs[i] == arch)
            return arch;
        if (archs[i] < arch && archs[i] > best)
            best = archs[i];
    }
    *ptx = 1;
    return best ? best : arch;
}

/* ---- the driver ---- */

typedef struct cuda_state {
    CUdevice device;
    CUcontext context;
    CUstream stream;
    int arch; /* 90 for sm_90 */
    int driver_version;
} cuda_state;

static int attribute(CUdevice d, CUdevice_attribute a)
{
    int v = 0;
    return cu.cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : 0;
}

static size_t cuda_enumerate(ptreg_device_info *infos, size_t cap, char *note, size_t note_size)
{
    pthread_once(&driver_once, driver_load_once);
    if (!driver_loaded) {
        snprintf(note, note_size, "%s", driver_note);
        return 0;
    }
    int count = 0, driver = 0;
    CUresult rc = cu.cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS || count == 0) {
        snprintf(note, note_size, "no CUDA device (%s)", rc == CUDA_SUCCESS ? "none present" : cu_error_name(rc));
        return 0;
    }
    cu.cuDriverGetVersion(&driver);
    char nvrtc_state[200] = "";
    int have_nvrtc = ptreg_nvrtc_available(nvrtc_state, sizeof nvrtc_state);
    size_t n = 0;
    for (int i = 0; i < count && n < cap; i++) {
        CUdevice d;
        if (cu.cuDeviceGet(&d, i) != CUDA_SUCCESS)
            continue;
        ptreg_device_info *info = &infos[n++];
        memset(info, 0, sizeof *info);
        info->device = (ptreg_device){PTREG_BACKEND_CUDA, i};
        if (cu.cuDeviceGetName(info->name, sizeof info->name, d) != CUDA_SUCCESS)
            snprintf(info->name, sizeof info->name, "CUDA device %d", i);
        snprintf(info->vendor, sizeof info->vendor, "NVIDIA");
        int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        snprintf(info->version, sizeof info->version, "sm_%d%d", major, minor);
        snprintf(info->platform, sizeof info->platform, "CUDA driver %d.%d, %s", driver / 1000, driver % 1000 / 10,
                 have_nvrtc ? "NVRTC" : "no NVRTC: cannot compile kernels");
        size_t mem = 0;
        cu.cuDeviceTotalMem(&mem, d);
        info->memory_bytes = mem;
        info->compute_units = (uint32_t)attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        info->local_memory_bytes = (uint64_t)attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
        info->max_work_group = (size_t)attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
        info->is_gpu = 1;
        info->fp64 = 1;
    }
    return n;
}

static ptreg_status cuda_open(ptreg_dev *dev, ptreg_error *err)
{
    char note[200];
    if (!ptreg_nvrtc_available(note, sizeof note))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: cannot compile kernels: %s", dev->label, note);
    cuda_state *s = calloc(1, sizeof *s);
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", dev->label);
    const char *call = "cuDeviceGet";
    CUresult rc = cu.cuDeviceGet(&s->device, dev->info.device.index);
    if (rc == CUDA_SUCCESS) {
        call = "cuDevicePrimaryCtxRetain";
        rc = cu.cuDevicePrimaryCtxRetain(&s->context, s->device);
    }
    if (rc == CUDA_SUCCESS) {
        call = "cuCtxSetCurrent";
        rc = cu.cuCtxSetCurrent(s->context);
        if (rc == CUDA_SUCCESS) {
            call = "cuStreamCreate";
            rc = cu.cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING);
        }
        if (rc != CUDA_SUCCESS)
            cu.cuDevicePrimaryCtxRelease(s->device);
    }
    if (rc != CUDA_SUCCESS) {
        free(s);
        return CU_FAIL(dev, err, call, "", rc);
    }
    s->arch = 10 * attribute(s->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
              attribute(s->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    cu.cuDriverGetVersion(&s->driver_version);
    dev->impl = s;
    return PTREG_OK;
}

/* Every call first makes the device's context current: the calling thread
 * may not be the one that opened it. */
static cuda_state *current(ptreg_dev *dev)
{
    cuda_state *s = dev->impl;
    cu.cuCtxSetCurrent(s->context);
    return s;
}

static void cuda_close(ptreg_dev *dev)
{
    cuda_state *s = current(dev);
    cu.cuStreamDestroy(s->stream);
    cu.cuDevicePrimaryCtxRelease(s->device);
    free(s);
}

/* The cubin (or PTX) for this device: from the disk cache, else compiled
 * and stored there. */
static ptreg_status module_image(cuda_state *s, const char *source, const char *defines, const char *label,
                                 void **image, size_t *size, ptreg_error *err)
{
    int ptx, target = nvrtc_target(s->arch, &ptx), major = 0, minor = 0;
    nvrtc.nvrtcVersion(&major, &minor);
    char arch[32], versions[64];
    snprintf(arch, sizeof arch, "%s_%d", ptx ? "compute" : "sm", target);
    snprintf(versions, sizeof versions, "driver %d nvrtc %d.%d", s->driver_version, major, minor);
    const char *parts[] = {source, defines, arch, versions};
    const char *kind = ptx ? "ptx" : "cubin";
    if (ptreg_kernel_cache_load(kind, parts, 4, image, size))
        return PTREG_OK;
    ptreg_nvrtc_output out;
    ptreg_status st = ptreg_nvrtc_compile(source, defines, label, target, ptx, 0, &out, err);
    if (st)
        return st;
    ptreg_kernel_cache_store(kind, parts, 4, out.image, out.size);
    *image = out.image;
    *size = out.size;
    out.image = NULL;
    ptreg_nvrtc_output_free(&out);
    return PTREG_OK;
}

static ptreg_status cuda_build(ptreg_dev *dev, const char *source, const char *defines, const char *label,
                               void **program, ptreg_error *err)
{
    cuda_state *s = current(dev);
    void *image;
    size_t size;
    ptreg_status st = module_image(s, source, defines, label, &image, &size, err);
    if (st)
        return st;
    CUmodule module;
    CUresult rc = cu.cuModuleLoadData(&module, image);
    free(image);
    if (rc != CUDA_SUCCESS)
        return CU_FAIL(dev, err, "cuModuleLoadData", label, rc);
    *program = module;
    return PTREG_OK;
}

static void cuda_program_free(ptreg_dev *dev, void *program)
{
    current(dev);
    cu.cuModuleUnload(program);
}

static ptreg_status cuda_kernel(ptreg_dev *dev, void *program, const char *name, void **kernel, ptreg_error *err)
{
    current(dev);
    CUfunction f;
    CUresult rc = cu.cuModuleGetFunction(&f, program, name);
    *kernel = f;
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuModuleGetFunction", name, rc);
}

/* A CUdeviceptr travels in the void * handle. */
static CUdeviceptr dptr(void *handle, size_t offset) { return (CUdeviceptr)(uintptr_t)handle + offset; }

static ptreg_status cuda_alloc(ptreg_dev *dev, size_t bytes, void **handle, ptreg_error *err)
{
    current(dev);
    CUdeviceptr p = 0;
    CUresult rc = cu.cuMemAlloc(&p, bytes);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of device memory for %zu bytes", dev->label, bytes);
    if (rc != CUDA_SUCCESS)
        return CU_FAIL(dev, err, "cuMemAlloc", "", rc);
    *handle = (void *)(uintptr_t)p;
    return PTREG_OK;
}

static void cuda_free(ptreg_dev *dev, void *handle)
{
    current(dev);
    cu.cuMemFree(dptr(handle, 0));
}

/* From pageable memory the copy has left the caller's buffer when the call
 * returns, so the caller may reuse it at once. */
static ptreg_status cuda_write(ptreg_dev *dev, void *handle, size_t offset, const void *src, size_t bytes,
                               ptreg_error *err)
{
    cuda_state *s = current(dev);
    CUresult rc = cu.cuMemcpyHtoDAsync(dptr(handle, offset), src, bytes, s->stream);
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuMemcpyHtoDAsync", "", rc);
}

static ptreg_status cuda_read(ptreg_dev *dev, void *handle, size_t offset, void *dst, size_t bytes, ptreg_error *err)
{
    cuda_state *s = current(dev);
    CUresult rc = cu.cuMemcpyDtoHAsync(dst, dptr(handle, offset), bytes, s->stream);
    const char *call = "cuMemcpyDtoHAsync";
    if (rc == CUDA_SUCCESS)
        call = "cuStreamSynchronize", rc = cu.cuStreamSynchronize(s->stream);
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, call, "", rc);
}

static ptreg_status cuda_fill(ptreg_dev *dev, void *handle, size_t offset, size_t bytes, uint32_t word,
                              ptreg_error *err)
{
    cuda_state *s = current(dev);
    CUresult rc = cu.cuMemsetD32Async(dptr(handle, offset), word, bytes / 4, s->stream);
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuMemsetD32Async", "", rc);
}

static ptreg_status cuda_copy(ptreg_dev *dev, void *dst, size_t dst_offset, void *src, size_t src_offset,
                              size_t bytes, ptreg_error *err)
{
    cuda_state *s = current(dev);
    CUresult rc = cu.cuMemcpyDtoDAsync(dptr(dst, dst_offset), dptr(src, src_offset), bytes, s->stream);
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuMemcpyDtoDAsync", "", rc);
}

static ptreg_status cuda_launch(ptreg_dev *dev, void *kernel, const char *name, unsigned dims, const size_t groups[3],
                                const size_t local[3], size_t nargs, const ptreg_karg *args, ptreg_error *err)
{
    cuda_state *s = current(dev);
    void *params[64];
    if (nargs > 64)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %s: %zu arguments (at most 64)", dev->label, name, nargs);
    for (size_t i = 0; i < nargs; i++)
        params[i] = args[i].kind == PTREG_KARG_BUF ? (void *)&args[i].v.buf->handle : (void *)&args[i].v;
    unsigned g[3] = {1, 1, 1}, b[3] = {1, 1, 1};
    for (unsigned d = 0; d < dims && d < 3; d++)
        g[d] = (unsigned)groups[d], b[d] = (unsigned)local[d];
    CUresult rc = cu.cuLaunchKernel(kernel, g[0], g[1], g[2], b[0], b[1], b[2], 0, s->stream, params, NULL);
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuLaunchKernel", name, rc);
}

static ptreg_status cuda_finish(ptreg_dev *dev, ptreg_error *err)
{
    cuda_state *s = current(dev);
    CUresult rc = cu.cuStreamSynchronize(s->stream);
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuStreamSynchronize", "", rc);
}

static ptreg_status cuda_event_record(ptreg_dev *dev, void **event, ptreg_error *err)
{
    cuda_state *s = current(dev);
    CUevent e;
    CUresult rc = cu.cuEventCreate(&e, CU_EVENT_DEFAULT);
    if (rc != CUDA_SUCCESS)
        return CU_FAIL(dev, err, "cuEventCreate", "", rc);
    if ((rc = cu.cuEventRecord(e, s->stream)) != CUDA_SUCCESS) {
        cu.cuEventDestroy(e);
        return CU_FAIL(dev, err, "cuEventRecord", "", rc);
    }
    *event = e;
    return PTREG_OK;
}

static ptreg_status cuda_event_elapsed(ptreg_dev *dev, void *start, void *end, double *ms, ptreg_error *err)
{
    current(dev);
    float t = 0.0f;
    CUresult rc = cu.cuEventSynchronize(end);
    if (rc == CUDA_SUCCESS)
        rc = cu.cuEventElapsedTime(&t, start, end);
    *ms = t;
    return rc == CUDA_SUCCESS ? PTREG_OK : CU_FAIL(dev, err, "cuEventElapsedTime", "", rc);
}

static void cuda_event_free(ptreg_dev *dev, void *event)
{
    current(dev);
    cu.cuEventDestroy(event);
}

const ptreg_backend_ops ptreg_cuda_ops = {
    .backend = PTREG_BACKEND_CUDA,
    .enumerate = cuda_enumerate,
    .open = cuda_open,
    .close = cuda_close,
    .build = cuda_build,
    .program_free = cuda_program_free,
    .kernel = cuda_kernel,
    .kernel_free = NULL,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .write = cuda_write,
    .read = cuda_read,
    .fill = cuda_fill,
    .copy = cuda_copy,
    .launch = cuda_launch,
    .finish = cuda_finish,
    .event_record = cuda_event_record,
    .event_elapsed = cuda_event_elapsed,
    .event_free = cuda_event_free,
};
