#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
/* The CUDA backend: the driver API (libcuda.so.1) and NVRTC (libnvrtc.so),
 * both loaded with dlopen, so one binary runs with or without them. Kernels
 * are compiled at run time for the device's own architecture by an NVRTC
 * no newer than the driver, and cached on disk once the driver took them
 * (kernel_cache.c); launched with cuLaunchKernel and an argument array
 * whose sizes are checked against the kernel's own, on one stream per
 * device. Every call makes the device's context current and puts back
 * the caller's. A kernel fault is named (PTREG_DEVICE_CHECKED waits after
 * each launch) and marks the device unusable until it is opened afresh.
 * The headers only give the types and the versioned symbol names
 * (cuMemAlloc is cuMemAlloc_v2 ...). Tested without a GPU through the
 * driver stand-in (tests/cuda_standin). */
#include <cuda.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "device/kernel_cache.h"
#include "device/nvrtc.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

#define CU_FUNCTIONS(X)          \
    X(cuInit)                    \
    X(cuDriverGetVersion)        \
    X(cuDeviceGetCount)          \
    X(cuDeviceGet)               \
    X(cuDeviceGetName)           \
    X(cuDeviceTotalMem)          \
    X(cuDeviceGetAttribute)      \
    X(cuDevicePrimaryCtxRetain)  \
    X(cuDevicePrimaryCtxRelease) \
    X(cuDevicePrimaryCtxReset)   \
    X(cuCtxPushCurrent)          \
    X(cuCtxPopCurrent)           \
    X(cuStreamCreate)            \
    X(cuStreamDestroy)           \
    X(cuStreamSynchronize)       \
    X(cuModuleLoadData)          \
    X(cuModuleUnload)            \
    X(cuModuleGetFunction)       \
    X(cuFuncGetAttribute)        \
    X(cuMemAlloc)                \
    X(cuMemFree)                 \
    X(cuMemAllocHost)            \
    X(cuMemFreeHost)             \
    X(cuMemcpyHtoDAsync)         \
    X(cuMemcpyDtoHAsync)         \
    X(cuMemcpyDtoDAsync)         \
    X(cuMemsetD32Async)          \
    X(cuLaunchKernel)            \
    X(cuEventCreate)             \
    X(cuEventRecord)             \
    X(cuEventSynchronize)        \
    X(cuEventElapsedTime)        \
    X(cuEventDestroy)            \
    X(cuGetErrorName)
/* CUDA 12.4's: without it, argument sizes go unchecked. The graphs' (CUDA
 * 12's names): without them, a graph's launches are replayed one by one. */
#define CU_OPTIONAL(X)      \
    X(cuFuncGetParamInfo)   \
    X(cuGraphCreate)        \
    X(cuGraphAddKernelNode) \
    X(cuGraphInstantiate)   \
    X(cuGraphLaunch)        \
    X(cuGraphExecDestroy)   \
    X(cuGraphDestroy)

#define NVRTC_FUNCTIONS(X)       \
    X(nvrtcVersion)              \
    X(nvrtcCreateProgram)        \
    X(nvrtcCompileProgram)       \
    X(nvrtcGetProgramLogSize)    \
    X(nvrtcGetProgramLog)        \
    X(nvrtcGetCUBINSize)         \
    X(nvrtcGetCUBIN)             \
    X(nvrtcGetPTXSize)           \
    X(nvrtcGetPTX)               \
    X(nvrtcDestroyProgram)       \
    X(nvrtcGetErrorString)       \
    X(nvrtcGetNumSupportedArchs) \
    X(nvrtcGetSupportedArchs)

#define DECLARE_POINTER(f) __typeof__(f) *f;
static struct {
    CU_FUNCTIONS(DECLARE_POINTER)
    CU_OPTIONAL(DECLARE_POINTER)
} cu;
static struct {
    NVRTC_FUNCTIONS(DECLARE_POINTER)
} nvrtc;

/* Each symbol by the name its header maps it to (STRINGIFY expands
 * cuMemAlloc to "cuMemAlloc_v2"), else by its plain name: an older driver
 * has cuEventElapsedTime, not CUDA 13's cuEventElapsedTime_v2 of the same
 * signature. */
#define LOAD_POINTER(table, f, plain)                                                                    \
    if (!(*(void **)&table.f = dlsym(lib, STRINGIFY(f))) && !(*(void **)&table.f = dlsym(lib, plain))) { \
        snprintf(note, note_size, "%.120s lacks %s (too old a version)", library, STRINGIFY(f));         \
        return 0;                                                                                        \
    }
/* #f here names the function before the header's macro renames it */
#define LOAD_CU(f) LOAD_POINTER(cu, f, #f)
#define LOAD_OPTIONAL(f) *(void **)&cu.f = dlsym(lib, STRINGIFY(f));
#define LOAD_NVRTC(f) LOAD_POINTER(nvrtc, f, #f)

static void *driver_lib;
static int driver_version; /* 13000 for CUDA 13.0; 0 without a driver */
static int nvrtc_major, nvrtc_minor;
static char nvrtc_path[PATH_MAX];
static char nvrtc_open_error[300]; /* the loader's words for the last NVRTC it could not open */

static int load_driver(char *note, size_t note_size)
{
    static const char *const names[] = {"libcuda.so.1", "libcuda.so"};
    const char *library = names[0];
    void *lib = NULL;
    for (size_t i = 0; i < 2 && !lib; i++)
        lib = dlopen(library = names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(note, note_size, "no CUDA driver (libcuda.so.1) found");
        return 0;
    }
    CU_FUNCTIONS(LOAD_CU)
    CU_OPTIONAL(LOAD_OPTIONAL)
    driver_lib = lib;
    return 1;
}

static pthread_once_t driver_once = PTHREAD_ONCE_INIT, nvrtc_once = PTHREAD_ONCE_INIT;
static int driver_loaded, nvrtc_loaded;
static char driver_note[200], nvrtc_note[400];

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
        } else if (cu.cuDriverGetVersion(&driver_version) != CUDA_SUCCESS) {
            driver_version = 0;
        }
    }
}

/* A driver runs the cubins of its own CUDA major version and older ones:
 * an NVRTC of a newer major makes images it refuses. */
static int nvrtc_fits_driver(int major) { return !driver_version || major <= driver_version / 1000; }

/* Opens one NVRTC; NULL when absent, or when it is newer than the driver
 * (rejected then says so). */
static void *open_nvrtc(const char *name, char *rejected, size_t rejected_size)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    nvrtcResult (*version)(int *, int *) = NULL;
    if (!lib) {
        const char *why = dlerror();
        snprintf(nvrtc_open_error, sizeof nvrtc_open_error, "%s", why ? why : "dlopen failed");
        return NULL;
    }
    *(void **)&version = dlsym(lib, "nvrtcVersion");
    int major = 0, minor = 0;
    if (!version || version(&major, &minor) != NVRTC_SUCCESS) {
        snprintf(nvrtc_open_error, sizeof nvrtc_open_error, "%s has no working nvrtcVersion", name);
        return NULL; /* left loaded: an NVRTC may have registered exit handlers */
    }
    if (!nvrtc_fits_driver(major)) {
        snprintf(rejected, rejected_size,
                 "%s is NVRTC %d.%d, newer than the CUDA driver (%d.%d), which would refuse "
                 "its kernels",
                 name, major, minor, driver_version / 1000, driver_version % 1000 / 10);
        return NULL;
    }
    nvrtc_major = major, nvrtc_minor = minor;
    snprintf(nvrtc_path, sizeof nvrtc_path, "%s", name);
    return lib;
}

/* PTREG_NVRTC when set (a pip wheel's NVRTC, say: taken or refused, never
 * replaced by another); else the newest on the loader's path that the
 * driver can use. */
static int load_nvrtc(char *note, size_t note_size)
{
    const char *env = getenv("PTREG_NVRTC");
    char versioned[3][24], rejected[300] = "";
    const char *names[6];
    size_t count = 0;
    if (env && *env) {
        if (strlen(env) >= sizeof nvrtc_path) {
            snprintf(note, note_size, "PTREG_NVRTC is longer than %zu characters", sizeof nvrtc_path - 1);
            return 0;
        }
        names[count++] = env;
    } else {
        for (int major = 13; major >= 11; major--) {
            snprintf(versioned[13 - major], sizeof versioned[0], "libnvrtc.so.%d", major);
            names[count++] = versioned[13 - major];
        }
        names[count++] = "libnvrtc.so";
        names[count++] = "/usr/local/cuda/lib64/libnvrtc.so";
    }
    void *lib = NULL;
    for (size_t i = 0; i < count && !lib; i++) {
        char why[300] = "";
        lib = open_nvrtc(names[i], why, sizeof why);
        if (why[0] && !rejected[0])
            snprintf(rejected, sizeof rejected, "%s", why);
    }
    if (!lib && rejected[0]) {
        snprintf(note, note_size,
                 "no usable NVRTC: %s; install the NVRTC of the driver's CUDA version "
                 "(pip: nvidia-cuda-nvrtc-cu%d) and name it in PTREG_NVRTC",
                 rejected, driver_version / 1000);
        return 0;
    }
    if (!lib && env && *env) {
        snprintf(note, note_size, "PTREG_NVRTC (%s) is no NVRTC: %s", env, nvrtc_open_error);
        return 0;
    }
    if (!lib) {
        snprintf(note, note_size, "no NVRTC (libnvrtc.so) found; set PTREG_NVRTC to its path");
        return 0;
    }
    const char *library = nvrtc_path;
    NVRTC_FUNCTIONS(LOAD_NVRTC)
    return 1;
}

static void nvrtc_load_once(void)
{
    pthread_once(&driver_once, driver_load_once);
    nvrtc_loaded = load_nvrtc(nvrtc_note, sizeof nvrtc_note);
}

int nvrtc_available(char *note, size_t note_size)
{
    pthread_once(&nvrtc_once, nvrtc_load_once);
    if (!nvrtc_loaded && note && note_size)
        snprintf(note, note_size, "%.*s", (int)(note_size - 1), nvrtc_note);
    return nvrtc_loaded;
}

static const char *cu_error_name(CUresult rc)
{
    const char *name = NULL;
    if (cu.cuGetErrorName && cu.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    return "CUDA_ERROR";
}

/* ---- NVRTC ---- */

/* "-DA=1 -DB=2" as separate options after the fixed ones, in an array
 * with room for them all; NULL without memory. */
static const char **split_options(char *defines, const char *const *fixed, int nfixed, int *count)
{
    int words = 1;
    for (const char *c = defines; *c; c++)
        words += *c == ' ';
    const char **options = malloc((size_t)(nfixed + words) * sizeof *options);
    if (!options)
        return NULL;
    memcpy(options, fixed, (size_t)nfixed * sizeof *options);
    *count = nfixed;
    char *save = NULL;
    for (char *tok = strtok_r(defines, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        options[(*count)++] = tok;
    return options;
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

static ptreg_status take_image(nvrtcProgram p, int ptx, nvrtc_output *out, ptreg_error *err)
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

ptreg_status nvrtc_compile(const char *source, const char *defines, const char *label, int arch, int ptx, int verbose,
                           nvrtc_output *out, ptreg_error *err)
{
    memset(out, 0, sizeof *out);
    char note[200];
    if (!nvrtc_available(note, sizeof note))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s", note);
    char arch_option[48], *defs = strdup(defines ? defines : "");
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm", arch);
    /* --fmad=false: the kernels' distances are the CPU's bits (dialect.h);
     * double precision is the program's defines' to say (PTREG_FP64) */
    const char *const fixed[] = {arch_option, "--fmad=false", "--std=c++14", "--ptxas-options=-v"};
    int count = 0;
    const char **options = defs ? split_options(defs, fixed, verbose ? 4 : 3, &count) : NULL;
    if (!options) {
        free(defs);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    }
    nvrtcProgram p;
    nvrtcResult rc = nvrtc.nvrtcCreateProgram(&p, source, label, 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS) {
        free(options);
        free(defs);
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "NVRTC: nvrtcCreateProgram failed for the %s kernels: %s", label,
                               nvrtc.nvrtcGetErrorString(rc));
    }
    rc = nvrtc.nvrtcCompileProgram(p, count, options);
    free(options);
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
        nvrtc_output_free(out);
    return st;
}

void nvrtc_output_free(nvrtc_output *out)
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

#define MAX_ARGS 64
/* Small uploads go through a pinned ring the stream reads from: the
 * caller's memory (a pose on its stack, say) may be gone before the
 * stream gets there. Larger ones wait for their copy. */
#define STAGE_BYTES (1u << 20)
#define STAGE_SMALL (64u << 10)

typedef struct cuda_state {
    CUdevice device;
    CUcontext context;
    CUstream stream;
    int arch; /* 90 for sm_90 */
    pthread_mutex_t stage_lock;
    char *stage; /* pinned; NULL when the driver gave none (uploads then wait) */
    size_t stage_used;
    char last_kernel[64];
} cuda_state;

typedef struct cuda_function {
    CUfunction f;
    int nparams; /* -1: the driver cannot say (cuFuncGetParamInfo is CUDA 12.4's) */
    uint16_t param_size[MAX_ARGS];
} cuda_function;

static int attribute(CUdevice d, CUdevice_attribute a)
{
    int v = 0;
    return cu.cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : 0;
}

/* The driver stand-in of the tests (tests/cuda_standin) says so. */
static int driver_is_standin(void) { return driver_lib && dlsym(driver_lib, "ptreg_cuda_standin"); }

static void describe(ptreg_device_info *info, int i, CUdevice d, int have_nvrtc)
{
    memset(info, 0, sizeof *info);
    info->device = (ptreg_device){PTREG_BACKEND_CUDA, i};
    if (cu.cuDeviceGetName(info->name, sizeof info->name, d) != CUDA_SUCCESS)
        snprintf(info->name, sizeof info->name, "CUDA device %d", i);
    snprintf(info->vendor, sizeof info->vendor, "NVIDIA");
    int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    snprintf(info->version, sizeof info->version, "sm_%d%d", major, minor);
    char nv[64] = "no usable NVRTC"; /* why: the backend's note */
    if (have_nvrtc)
        snprintf(nv, sizeof nv, "NVRTC %d.%d", nvrtc_major, nvrtc_minor);
    snprintf(info->platform, sizeof info->platform, "CUDA driver %d.%d, %s", driver_version / 1000,
             driver_version % 1000 / 10, nv);
    size_t mem = 0;
    cu.cuDeviceTotalMem(&mem, d);
    info->memory_bytes = mem;
    info->compute_units = (uint32_t)attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    info->local_memory_bytes = (uint64_t)attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    info->max_work_group = (size_t)attribute(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    info->fp64 = 1;
    info->is_gpu = 1;
    if (driver_is_standin()) {
        /* never a real GPU: auto takes it only when asked (scripts/with-cuda-standin.sh --auto) */
        const char *asked = getenv("PTREG_CUDA_STANDIN_AUTO");
        info->standin = 1;
        info->is_gpu = 0;
        info->for_testing = !(asked && !strcmp(asked, "1"));
    }
}

static size_t cuda_enumerate(ptreg_device_info *infos, size_t cap, char *note, size_t note_size)
{
    pthread_once(&driver_once, driver_load_once);
    if (!driver_loaded) {
        snprintf(note, note_size, "%s", driver_note);
        return 0;
    }
    int count = 0;
    CUresult rc = cu.cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS || count == 0) {
        snprintf(note, note_size, "no CUDA device (%s)", rc == CUDA_SUCCESS ? "none present" : cu_error_name(rc));
        return 0;
    }
    char nvrtc_state[400] = "";
    int have_nvrtc = nvrtc_available(nvrtc_state, sizeof nvrtc_state);
    size_t n = 0;
    for (int i = 0; i < count && n < cap; i++) {
        CUdevice d;
        if (cu.cuDeviceGet(&d, i) == CUDA_SUCCESS)
            describe(&infos[n++], i, d, have_nvrtc);
    }
    if (!have_nvrtc) /* the devices are there, but nothing can be compiled for them: say why */
        snprintf(note, note_size, "cannot compile kernels: %s", nvrtc_state);
    return n;
}

/* Every call makes the device's context current on the calling thread
 * (it may not be the one that opened it) and puts the caller's back: an
 * application with a context of its own finds it current afterwards. */
static cuda_state *enter(dev_handle *dev)
{
    cuda_state *s = dev->impl;
    cu.cuCtxPushCurrent(s->context);
    return s;
}

static void leave(void)
{
    CUcontext ignored;
    cu.cuCtxPopCurrent(&ignored);
}

/* The codes after which the context is lost: a kernel faulted. */
static int context_lost(CUresult rc)
{
    switch (rc) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE: return 1;
    default: return 0;
    }
}

/* A failed call. After a fault, every call fails with the fault's code,
 * wherever it is first seen: say so, name the last kernel launched, and
 * mark the device (dev_get opens it afresh once its buffers are
 * freed). */
static ptreg_status cu_fail(dev_handle *dev, ptreg_error *err, const char *call, const char *what, CUresult rc)
{
    if (!context_lost(rc))
        return dev_fail(dev, err, call, what, cu_error_name(rc), (long)rc);
    cuda_state *s = dev->impl;
    char last[sizeof s->last_kernel] = "none", why[sizeof dev->fault];
    pthread_mutex_lock(&dev->fault_lock);
    if (s && s->last_kernel[0])
        snprintf(last, sizeof last, "%s", s->last_kernel);
    pthread_mutex_unlock(&dev->fault_lock);
    snprintf(why, sizeof why, "%s: a kernel fault (%s, %d) seen at %s%s%s; the last kernel launched was %s", dev->label,
             cu_error_name(rc), (int)rc, call, what && *what ? " for " : "", what ? what : "", last);
    dev_fault_mark(dev, why, why, sizeof why);
    return ptreg_error_set(err, PTREG_ERR_RUNTIME, "%s%s", why,
                           dev->checked ? ""
                                        : " (PTREG_DEVICE_CHECKED=1 waits after each launch and names the kernel "
                                          "that faulted)");
}

static void free_state(cuda_state *s)
{
    pthread_mutex_destroy(&s->stage_lock);
    free(s);
}

static ptreg_status cuda_open(dev_handle *dev, ptreg_error *err)
{
    char note[400];
    if (!nvrtc_available(note, sizeof note))
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s: cannot compile kernels: %s", dev->label, note);
    cuda_state *s = calloc(1, sizeof *s);
    if (!s)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", dev->label);
    pthread_mutex_init(&s->stage_lock, NULL);
    const char *call = "cuDeviceGet";
    CUresult rc = cu.cuDeviceGet(&s->device, dev->info.device.index);
    if (rc == CUDA_SUCCESS) {
        call = "cuDevicePrimaryCtxRetain";
        rc = cu.cuDevicePrimaryCtxRetain(&s->context, s->device);
    }
    if (rc == CUDA_SUCCESS) {
        dev->impl = s;
        enter(dev);
        call = "cuStreamCreate";
        rc = cu.cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING);
        if (rc == CUDA_SUCCESS && cu.cuMemAllocHost((void **)&s->stage, STAGE_BYTES) != CUDA_SUCCESS)
            s->stage = NULL;
        leave();
        if (rc != CUDA_SUCCESS)
            cu.cuDevicePrimaryCtxRelease(s->device);
    }
    if (rc != CUDA_SUCCESS) {
        dev->impl = NULL;
        free_state(s);
        return cu_fail(dev, err, call, "", rc);
    }
    s->arch = 10 * attribute(s->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
              attribute(s->device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    return PTREG_OK;
}

/* A faulted context is reset on the way out: the next open starts clean. */
static void cuda_close(dev_handle *dev)
{
    cuda_state *s = enter(dev);
    if (s->stage)
        cu.cuMemFreeHost(s->stage);
    cu.cuStreamDestroy(s->stream);
    leave();
    if (dev_faulted(dev))
        cu.cuDevicePrimaryCtxReset(s->device);
    cu.cuDevicePrimaryCtxRelease(s->device);
    free_state(s);
}

/* The cubin (or PTX) for this device: from the disk cache, else compiled.
 * cached says which (a refused cached image is removed, a new one is
 * stored once the driver took it). */
static ptreg_status module_image(const cuda_state *s, const char *source, const char *defines, const char *label,
                                 const char *const parts[4], void **image, size_t *size, int *cached, ptreg_error *err)
{
    int ptx, target = nvrtc_target(s->arch, &ptx);
    const int nvrtc_version = nvrtc_major * 1000 + nvrtc_minor * 10;
    if (ptx && nvrtc_version > driver_version)
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                               "NVRTC %d.%d does not know sm_%d, and its PTX needs a CUDA "
                               "driver of %d.%d or newer (this one is %d.%d)",
                               nvrtc_major, nvrtc_minor, s->arch, nvrtc_major, nvrtc_minor, driver_version / 1000,
                               driver_version % 1000 / 10);
    *cached = kernel_cache_load(ptx ? "ptx" : "cubin", parts, 4, image, size);
    if (*cached)
        return PTREG_OK;
    nvrtc_output out;
    ptreg_status st = nvrtc_compile(source, defines, label, target, ptx, 0, &out, err);
    if (st)
        return st;
    *size = out.size;
    *image = out.image;
    out.image = NULL;
    nvrtc_output_free(&out);
    return PTREG_OK;
}

static ptreg_status cuda_build(dev_handle *dev, const char *source, const char *defines, const char *label,
                               void **program, ptreg_error *err)
{
    cuda_state *s = dev->impl;
    int ptx, target = nvrtc_target(s->arch, &ptx), cached = 0;
    char arch[32], versions[64];
    snprintf(arch, sizeof arch, "%s_%d", ptx ? "compute" : "sm", target);
    snprintf(versions, sizeof versions, "driver %d nvrtc %d.%d", driver_version, nvrtc_major, nvrtc_minor);
    const char *const parts[] = {source, defines, arch, versions};
    const char *kind = ptx ? "ptx" : "cubin";
    void *image = NULL;
    size_t size = 0;
    ptreg_status st = module_image(s, source, defines, label, parts, &image, &size, &cached, err);
    if (st)
        return st;
    enter(dev);
    CUmodule module;
    CUresult rc = cu.cuModuleLoadData(&module, image);
    leave();
    if (rc == CUDA_SUCCESS && !cached)
        kernel_cache_store(kind, parts, 4, image, size);
    if (rc != CUDA_SUCCESS && cached)
        kernel_cache_forget(kind, parts, 4);
    free(image);
    if (rc != CUDA_SUCCESS) {
        char what[480];
        snprintf(what, sizeof what, "the %s kernels (%s by NVRTC %d.%d at %.200s, for a CUDA %d.%d driver)", label,
                 arch, nvrtc_major, nvrtc_minor, nvrtc_path, driver_version / 1000, driver_version % 1000 / 10);
        return cu_fail(dev, err, "cuModuleLoadData", what, rc);
    }
    *program = module;
    return PTREG_OK;
}

static void cuda_program_free(dev_handle *dev, void *program)
{
    enter(dev);
    cu.cuModuleUnload(program);
    leave();
}

/* Each parameter's size, where the driver can say (CUDA 12.4). The list
 * ends where an index is out of range (CUDA_ERROR_INVALID_VALUE); any other
 * failure, or one at the first index (every ptreg kernel takes arguments),
 * means the driver cannot say: the sizes are then not checked (-1), never
 * "no arguments", which would refuse every launch. */
static void read_param_sizes(cuda_function *k)
{
    k->nparams = -1;
    if (!cu.cuFuncGetParamInfo)
        return;
    size_t offset, size;
    int i = 0;
    CUresult rc = CUDA_SUCCESS;
    while (i < MAX_ARGS && (rc = cu.cuFuncGetParamInfo(k->f, (size_t)i, &offset, &size)) == CUDA_SUCCESS)
        k->param_size[i++] = (uint16_t)size;
    if (i == MAX_ARGS || (rc == CUDA_ERROR_INVALID_VALUE && i > 0))
        k->nparams = i;
}

static ptreg_status cuda_kernel(dev_handle *dev, void *program, const char *name, void **kernel, size_t *max_threads,
                                ptreg_error *err)
{
    cuda_function *k = calloc(1, sizeof *k);
    if (!k)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    enter(dev);
    int threads = 0;
    const char *call = "cuModuleGetFunction";
    CUresult rc = cu.cuModuleGetFunction(&k->f, program, name);
    if (rc == CUDA_SUCCESS) {
        call = "cuFuncGetAttribute";
        rc = cu.cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->f);
        read_param_sizes(k);
    }
    leave();
    if (rc != CUDA_SUCCESS) {
        free(k);
        return cu_fail(dev, err, call, name, rc);
    }
    *kernel = k;
    *max_threads = (size_t)threads;
    return PTREG_OK;
}

static void cuda_kernel_free(dev_handle *dev, void *kernel)
{
    (void)dev;
    free(kernel);
}

/* A CUdeviceptr travels in the void * handle. */
static CUdeviceptr dptr(void *handle, size_t offset) { return (CUdeviceptr)(uintptr_t)handle + offset; }

static ptreg_status cuda_alloc(dev_handle *dev, size_t bytes, void **handle, ptreg_error *err)
{
    enter(dev);
    CUdeviceptr p = 0;
    CUresult rc = cu.cuMemAlloc(&p, bytes);
    leave();
    if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of device memory for %zu bytes", dev->label, bytes);
    if (rc != CUDA_SUCCESS)
        return cu_fail(dev, err, "cuMemAlloc", "", rc);
    *handle = (void *)(uintptr_t)p;
    return PTREG_OK;
}

static void cuda_free(dev_handle *dev, void *handle)
{
    enter(dev);
    cu.cuMemFree(dptr(handle, 0));
    leave();
}

/* Through the pinned ring when small (its space is reused only after the
 * stream has passed it), else straight from the caller's memory, waiting
 * for the copy: either way the caller may reuse its bytes at once. */
static ptreg_status cuda_write(dev_handle *dev, void *handle, size_t offset, const void *src, size_t bytes,
                               ptreg_error *err)
{
    cuda_state *s = enter(dev);
    const char *call = "cuMemcpyHtoDAsync";
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&s->stage_lock);
    if (s->stage && bytes <= STAGE_SMALL) {
        if (s->stage_used + bytes > STAGE_BYTES) {
            call = "cuStreamSynchronize";
            rc = cu.cuStreamSynchronize(s->stream);
            s->stage_used = 0;
        }
        char *at = s->stage + s->stage_used;
        if (rc == CUDA_SUCCESS) {
            memcpy(at, src, bytes);
            s->stage_used += (bytes + 255) / 256 * 256;
            call = "cuMemcpyHtoDAsync";
            rc = cu.cuMemcpyHtoDAsync(dptr(handle, offset), at, bytes, s->stream);
        }
    } else {
        rc = cu.cuMemcpyHtoDAsync(dptr(handle, offset), src, bytes, s->stream);
        if (rc == CUDA_SUCCESS)
            call = "cuStreamSynchronize", rc = cu.cuStreamSynchronize(s->stream);
    }
    pthread_mutex_unlock(&s->stage_lock);
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, call, "", rc);
}

static ptreg_status cuda_read(dev_handle *dev, void *handle, size_t offset, void *dst, size_t bytes, ptreg_error *err)
{
    cuda_state *s = enter(dev);
    CUresult rc = cu.cuMemcpyDtoHAsync(dst, dptr(handle, offset), bytes, s->stream);
    const char *call = "cuMemcpyDtoHAsync";
    if (rc == CUDA_SUCCESS)
        call = "cuStreamSynchronize", rc = cu.cuStreamSynchronize(s->stream);
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, call, "", rc);
}

static ptreg_status cuda_fill(dev_handle *dev, void *handle, size_t offset, size_t bytes, uint32_t word,
                              ptreg_error *err)
{
    cuda_state *s = enter(dev);
    CUresult rc = cu.cuMemsetD32Async(dptr(handle, offset), word, bytes / 4, s->stream);
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, "cuMemsetD32Async", "", rc);
}

static ptreg_status cuda_copy(dev_handle *dev, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes,
                              ptreg_error *err)
{
    cuda_state *s = enter(dev);
    CUresult rc = cu.cuMemcpyDtoDAsync(dptr(dst, dst_offset), dptr(src, src_offset), bytes, s->stream);
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, "cuMemcpyDtoDAsync", "", rc);
}

static size_t karg_size(karg_kind kind)
{
    return kind == PTREG_KARG_U32 || kind == PTREG_KARG_I32 || kind == PTREG_KARG_F32 ? 4 : 8;
}

/* The arguments against the kernel's own parameters: the driver reads as
 * many bytes as the kernel says, whatever the caller meant. */
static ptreg_status check_arguments(const dev_handle *dev, const cuda_function *k, const char *name, size_t nargs,
                                    const karg *args, ptreg_error *err)
{
    if (nargs > MAX_ARGS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %s: %zu arguments (at most %d)", dev->label, name, nargs,
                               MAX_ARGS);
    if (k->nparams < 0)
        return PTREG_OK;
    if (nargs != (size_t)k->nparams)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "%s: kernel %s takes %d arguments, %zu were given", dev->label,
                               name, k->nparams, nargs);
    for (size_t i = 0; i < nargs; i++)
        if (karg_size(args[i].kind) != k->param_size[i])
            return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                                   "%s: kernel %s's argument %zu is %u bytes, %zu were given "
                                   "(float and double mixed up?)",
                                   dev->label, name, i, (unsigned)k->param_size[i], karg_size(args[i].kind));
    return PTREG_OK;
}

static ptreg_status cuda_launch(dev_handle *dev, void *kernel, const char *name, unsigned dims, const size_t groups[3],
                                const size_t local[3], size_t nargs, const karg *args, ptreg_error *err)
{
    const cuda_function *k = kernel;
    ptreg_status st = check_arguments(dev, k, name, nargs, args, err);
    if (st)
        return st;
    void *params[MAX_ARGS];
    for (size_t i = 0; i < nargs; i++)
        params[i] = args[i].kind == PTREG_KARG_BUF ? (void *)&args[i].v.buf->handle : (void *)&args[i].v;
    unsigned g[3] = {1, 1, 1}, b[3] = {1, 1, 1};
    for (unsigned d = 0; d < dims && d < 3; d++)
        g[d] = (unsigned)groups[d], b[d] = (unsigned)local[d];
    cuda_state *s = enter(dev);
    pthread_mutex_lock(&dev->fault_lock); /* cu_fail reads it on any thread */
    snprintf(s->last_kernel, sizeof s->last_kernel, "%s", name);
    pthread_mutex_unlock(&dev->fault_lock);
    CUresult rc = cu.cuLaunchKernel(k->f, g[0], g[1], g[2], b[0], b[1], b[2], 0, s->stream, params, NULL);
    const char *call = "cuLaunchKernel";
    if (rc == CUDA_SUCCESS && dev->checked) {
        call = "cuStreamSynchronize after its launch";
        rc = cu.cuStreamSynchronize(s->stream);
        if (context_lost(rc)) { /* checked: this kernel is the one */
            char why[sizeof dev->fault];
            snprintf(why, sizeof why, "%s: kernel %s faulted: %s (%d)", dev->label, name, cu_error_name(rc), (int)rc);
            dev_fault_mark(dev, why, NULL, 0);
        }
    }
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, call, name, rc);
}

static ptreg_status cuda_finish(dev_handle *dev, ptreg_error *err)
{
    cuda_state *s = enter(dev);
    CUresult rc = cu.cuStreamSynchronize(s->stream);
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, "cuStreamSynchronize", "", rc);
}

static ptreg_status cuda_event_record(dev_handle *dev, void **event, ptreg_error *err)
{
    cuda_state *s = enter(dev);
    CUevent e;
    const char *call = "cuEventCreate";
    CUresult rc = cu.cuEventCreate(&e, CU_EVENT_DEFAULT);
    if (rc == CUDA_SUCCESS && (rc = cu.cuEventRecord(e, s->stream)) != CUDA_SUCCESS) {
        call = "cuEventRecord";
        cu.cuEventDestroy(e);
    }
    leave();
    if (rc != CUDA_SUCCESS)
        return cu_fail(dev, err, call, "", rc);
    *event = e;
    return PTREG_OK;
}

static ptreg_status cuda_event_elapsed(dev_handle *dev, void *start, void *end, double *ms, ptreg_error *err)
{
    enter(dev);
    float t = 0.0f;
    const char *call = "cuEventSynchronize";
    CUresult rc = cu.cuEventSynchronize(end);
    if (rc == CUDA_SUCCESS)
        call = "cuEventElapsedTime", rc = cu.cuEventElapsedTime(&t, start, end);
    leave();
    *ms = t;
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, call, "", rc);
}

static void cuda_event_free(dev_handle *dev, void *event)
{
    enter(dev);
    cu.cuEventDestroy(event);
    leave();
}

/* ---- graphs ---- */

static int have_graphs(void)
{
    return cu.cuGraphCreate && cu.cuGraphAddKernelNode && cu.cuGraphInstantiate && cu.cuGraphLaunch &&
           cu.cuGraphExecDestroy && cu.cuGraphDestroy;
}

/* Launch l as a node after *last (NULL: the first) of graph g. */
static CUresult add_launch(CUgraph g, const dlaunch *l, CUgraphNode *last)
{
    const cuda_function *k = l->kernel->handle;
    void *params[PTREG_GRAPH_MAX_ARGS];
    for (size_t i = 0; i < l->nargs; i++)
        params[i] = l->args[i].kind == PTREG_KARG_BUF ? (void *)&l->args[i].v.buf->handle : (void *)&l->args[i].v;
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = k->f;
    p.gridDimX = (unsigned)l->groups[0], p.gridDimY = (unsigned)l->groups[1], p.gridDimZ = (unsigned)l->groups[2];
    p.blockDimX = (unsigned)l->local[0], p.blockDimY = (unsigned)l->local[1], p.blockDimZ = (unsigned)l->local[2];
    p.kernelParams = params;
    CUgraphNode node;
    CUresult rc = cu.cuGraphAddKernelNode(&node, g, *last ? last : NULL, *last ? 1 : 0, &p);
    if (rc == CUDA_SUCCESS)
        *last = node;
    return rc;
}

/* The launches as a chain of kernel nodes, instantiated (the driver takes
 * the arguments' values as the nodes are added). */
static ptreg_status cuda_graph_build(dev_handle *dev, const dlaunch *launches, size_t count, void **graph,
                                     ptreg_error *err)
{
    *graph = NULL;
    if (!have_graphs())
        return PTREG_OK;
    for (size_t i = 0; i < count; i++) {
        ptreg_status st = check_arguments(dev, launches[i].kernel->handle, launches[i].kernel->name, launches[i].nargs,
                                          launches[i].args, err);
        if (st)
            return st;
    }
    enter(dev);
    CUgraph g = NULL;
    CUgraphNode last = NULL;
    CUgraphExec exec = NULL;
    const char *call = "cuGraphCreate", *name = "";
    CUresult rc = cu.cuGraphCreate(&g, 0);
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        call = "cuGraphAddKernelNode", name = launches[i].kernel->name, rc = add_launch(g, &launches[i], &last);
    if (rc == CUDA_SUCCESS)
        call = "cuGraphInstantiate", name = "", rc = cu.cuGraphInstantiate(&exec, g, 0);
    if (g)
        cu.cuGraphDestroy(g);
    leave();
    if (rc != CUDA_SUCCESS)
        return cu_fail(dev, err, call, name, rc);
    *graph = exec;
    return PTREG_OK;
}

static ptreg_status cuda_graph_launch(dev_handle *dev, void *graph, ptreg_error *err)
{
    cuda_state *s = enter(dev);
    pthread_mutex_lock(&dev->fault_lock);
    snprintf(s->last_kernel, sizeof s->last_kernel, "a graph");
    pthread_mutex_unlock(&dev->fault_lock);
    CUresult rc = cu.cuGraphLaunch(graph, s->stream);
    leave();
    return rc == CUDA_SUCCESS ? PTREG_OK : cu_fail(dev, err, "cuGraphLaunch", "", rc);
}

static void cuda_graph_free(dev_handle *dev, void *graph)
{
    enter(dev);
    cu.cuGraphExecDestroy(graph);
    leave();
}

const backend_interface cuda_ops = {
    .backend = PTREG_BACKEND_CUDA,
    .enumerate = cuda_enumerate,
    .open = cuda_open,
    .close = cuda_close,
    .build = cuda_build,
    .program_free = cuda_program_free,
    .kernel = cuda_kernel,
    .kernel_free = cuda_kernel_free,
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
    .graph_build = cuda_graph_build,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
};
