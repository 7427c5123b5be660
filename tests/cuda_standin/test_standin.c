#define _GNU_SOURCE /* setenv, fork */
/* The stand-in's own test (README.md): each limit it enforces and each
 * fault it injects or finds is reported, the way the driver reports it.
 * Kernels are written in ptreg's dialect and compiled by the real NVRTC
 * through the recorder; what the cubin says (registers, shared memory,
 * parameters) is checked against ptxas's own report. Cases that need a
 * setting read at cuInit run in a child process (this program, given the
 * case's name). Run through scripts/with-cuda-standin.sh; skips (77)
 * without NVRTC or POCL. */
#include <cuda.h>
#include <nvrtc.h>

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "device/backend.h"
#include "device/nvrtc.h"
#include "ptreg/ptreg.h"

unsigned long ptreg_cuda_standin_violations(void);

static const char kernels[] =
    "#ifdef PTREG_DIALECT_CUDA\n"
    "#define BOUNDED __launch_bounds__(128)\n"
    "#else\n"
    "#define BOUNDED\n"
    "#endif\n"
    "KERNEL scale(GLOBAL float *out, GLOBAL const float *in, u32 n, float k, u64 tag, double d)\n"
    "{\n"
    "    const u32 i = GLOBAL_ID_X;\n"
    "    if (i < n)\n"
    "        out[i] = in[i] * k + (float)(tag & 1u) + (float)d;\n"
    "}\n"
    "KERNEL shared_ends(GLOBAL float *out)\n"
    "{\n"
    "    SHARED float s[SHARED_FLOATS];\n"
    "    for (u32 j = LOCAL_ID_X; j < SHARED_FLOATS; j += GROUP_SIZE_X)\n"
    "        s[j] = (float)j;\n"
    "    BARRIER();\n"
    "    if (LOCAL_ID_X == 0)\n"
    "        out[GROUP_ID_X] = s[0] + s[SHARED_FLOATS - 1];\n"
    "}\n"
    "KERNEL shifted(GLOBAL u32 *out, u32 n, i32 shift)\n"
    "{\n"
    "    const u32 i = GLOBAL_ID_X;\n"
    "    if (i < n)\n"
    "        out[(i32)i + shift] = i;\n"
    "}\n"
    "KERNEL turn_of_first(GLOBAL u32 *out)\n"
    "{\n"
    "    SHARED u32 ticket[1];\n"
    "    if (LOCAL_ID_X == 0)\n"
    "        ticket[0] = 0;\n"
    "    BARRIER();\n"
    "    const u32 mine = LOCAL_ATOMIC_INC(&ticket[0]); /* the order the threads ran in */\n"
    "    if (LOCAL_ID_X == 0)\n"
    "        out[GROUP_ID_X] = mine;\n"
    "}\n"
    "KERNEL fast_exp(GLOBAL float *out, GLOBAL const float *in, u32 n)\n"
    "{\n"
    "    const u32 i = GLOBAL_ID_X;\n"
    "    if (i < n)\n"
    "        out[i] = FAST_EXPF(in[i]);\n"
    "}\n"
    "KERNEL BOUNDED bounded(GLOBAL float *out) { out[GLOBAL_ID_X] = 1.0f; }\n"
    "KERNEL heavy(GLOBAL float *out, GLOBAL const float *in, u32 n)\n"
    "{\n"
    "    const u32 i = GLOBAL_ID_X;\n"
    "    float v[HEAVY];\n"
    "    for (u32 k = 0; k < HEAVY; k++)\n"
    "        v[k] = in[(i + 7u * k) % n];\n"
    "    float s = 0.0f;\n"
    "    for (u32 a = 0; a < HEAVY; a++)\n"
    "        for (u32 b = 0; b < HEAVY; b++)\n"
    "            s += v[a] * v[(a + b) % HEAVY] / (1.0f + v[b]);\n"
    "    if (i < n)\n"
    "        out[i] = s;\n"
    "}\n";

#define SHARED_FLOATS 3000
#define HEAVY 40

static CUmodule module;
static char ptxas_log[1 << 16];
static char *image;
static size_t image_size;

static int build_module(void)
{
    size_t size;
    const char *dialect = kernel_source("device/dialect.h", &size);
    char *source = malloc(size + sizeof kernels + 1);
    if (!dialect || !source)
        return -1;
    memcpy(source, dialect, size);
    memcpy(source + size, kernels, sizeof kernels);
    char defines[128];
    snprintf(defines, sizeof defines, "-DPTREG_FP64=1 -DSHARED_FLOATS=%d -DHEAVY=%d", SHARED_FLOATS, HEAVY);
    nvrtc_output out;
    ptreg_error err;
    ptreg_status st = nvrtc_compile(source, defines, "standin-test", 90, 0, 1, &out, &err);
    free(source);
    if (st) {
        fprintf(stderr, "NVRTC: %s\n", err.message);
        return -1;
    }
    snprintf(ptxas_log, sizeof ptxas_log, "%s", out.log ? out.log : "");
    free(image);
    image = out.image, image_size = out.size;
    out.image = NULL;
    nvrtc_output_free(&out);
    return cuModuleLoadData(&module, image) == CUDA_SUCCESS ? 0 : -1;
}

/* ptxas's "Used N registers, ... M bytes smem" for a kernel. */
static void ptxas_report(const char *kernel, int *registers, int *smem)
{
    char entry[96];
    snprintf(entry, sizeof entry, "entry function '%s'", kernel);
    const char *at = strstr(ptxas_log, entry), *used = at ? strstr(at, "Used ") : NULL;
    *registers = *smem = -1;
    if (!used)
        return;
    sscanf(used, "Used %d registers", registers);
    const char *eol = strchr(used, '\n'), *bytes = strstr(used, " bytes smem");
    *smem = 0;
    if (bytes && (!eol || bytes < eol)) {
        while (bytes > used && bytes[-1] >= '0' && bytes[-1] <= '9')
            bytes--;
        *smem = atoi(bytes);
    }
}

static CUfunction function(const char *name)
{
    CUfunction f = NULL;
    CHECK_MSG(cuModuleGetFunction(&f, module, name) == CUDA_SUCCESS, "%s", name);
    return f;
}

static int attr(CUfunction f, CUfunction_attribute a)
{
    int v = -1;
    CHECK(cuFuncGetAttribute(&v, a, f) == CUDA_SUCCESS);
    return v;
}

/* ---- in this process ---- */

/* What the cubin says is what ptxas said. */
static void test_image(void)
{
    static const char *const names[] = {"scale", "shared_ends", "heavy", "bounded"};
    for (size_t i = 0; i < 4; i++) {
        int registers, smem;
        ptxas_report(names[i], &registers, &smem);
        CUfunction f = function(names[i]);
        CHECK_MSG(registers > 0 && attr(f, CU_FUNC_ATTRIBUTE_NUM_REGS) == registers, "%s: %d registers", names[i],
                  registers);
        CHECK_MSG(attr(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) == smem, "%s: %d bytes of shared memory", names[i],
                  smem);
    }
    CHECK(attr(function("shared_ends"), CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) == 4 * SHARED_FLOATS);
    static const size_t sizes[] = {8, 8, 4, 4, 8, 8};
    size_t offset, size;
    CUfunction scale = function("scale");
    for (size_t i = 0; i < 6; i++) {
        CHECK(cuFuncGetParamInfo(scale, i, &offset, &size) == CUDA_SUCCESS);
        CHECK_MSG(size == sizes[i] && offset % size == 0, "scale parameter %zu: %zu bytes at %zu", i, size, offset);
    }
    CHECK(cuFuncGetParamInfo(scale, 6, &offset, &size) == CUDA_ERROR_INVALID_VALUE);
    CHECK(attr(function("bounded"), CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) == 128);
    const int heavy_regs = attr(function("heavy"), CU_FUNC_ATTRIBUTE_NUM_REGS);
    const int heavy_max = attr(function("heavy"), CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    CHECK_MSG(heavy_regs > 64 && heavy_max < 1024 && heavy_max % 32 == 0, "heavy: %d registers, %d threads", heavy_regs,
              heavy_max);
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, module, "absent") == CUDA_ERROR_NOT_FOUND);
}

static CUdeviceptr alloc_or_zero(size_t bytes)
{
    CUdeviceptr p = 0;
    CHECK(cuMemAlloc(&p, bytes) == CUDA_SUCCESS);
    return p;
}

/* A kernel runs on POCL with the launch's arguments; new memory holds the
 * fresh pattern, not zeros. */
static void test_launch(CUstream s)
{
    enum { N = 1000 };
    float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i * 0.5f;
    CUdeviceptr din = alloc_or_zero(sizeof in), dout = alloc_or_zero(sizeof out);
    uint32_t fresh[4];
    CHECK(cuMemcpyDtoHAsync(fresh, dout, sizeof fresh, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHECK(fresh[0] == 0xfff7deadu && fresh[3] == 0xfff7deadu);
    CHECK(cuMemcpyHtoDAsync(din, in, sizeof in, s) == CUDA_SUCCESS);
    uint32_t n = N;
    float k = 3.0f;
    uint64_t tag = 5;
    double d = 0.25;
    void *params[] = {&dout, &din, &n, &k, &tag, &d};
    CHECK(cuLaunchKernel(function("scale"), (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, params, NULL) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoHAsync(out, dout, sizeof out, s) == CUDA_SUCCESS);
    CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    int same = 1;
    for (int i = 0; i < N; i++)
        same &= out[i] == in[i] * 3.0f + 1.0f + 0.25f;
    CHECK(same);
    CHECK(cuLaunchKernel(function("scale"), 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(din) == CUDA_SUCCESS && cuMemFree(dout) == CUDA_SUCCESS);
}

/* A graph: a chain of kernel nodes whose arguments are taken as the nodes
 * are added, instantiated, launched twice (the graph destroyed after its
 * instantiation); a node off the chain is refused, a destroyed graph is a
 * violation. */
static void test_graphs(CUstream s)
{
    enum { N = 300 };
    float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i;
    CUdeviceptr din = alloc_or_zero(sizeof in), dmid = alloc_or_zero(sizeof in), dout = alloc_or_zero(sizeof out);
    CHECK(cuMemcpyHtoDAsync(din, in, sizeof in, s) == CUDA_SUCCESS);
    uint32_t n = N;
    float k = 2.0f;
    uint64_t tag = 0;
    double d = 1.0;
    void *first[] = {&dmid, &din, &n, &k, &tag, &d}, *second[] = {&dout, &dmid, &n, &k, &tag, &d};
    CUgraph g;
    CUgraphNode a, b, c;
    CUgraphExec exec;
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = function("scale");
    p.gridDimX = (N + 127) / 128, p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 128, p.blockDimY = p.blockDimZ = 1;
    CHECK(cuGraphCreate(&g, 0) == CUDA_SUCCESS);
    p.kernelParams = first;
    CHECK(cuGraphAddKernelNode(&a, g, NULL, 0, &p) == CUDA_SUCCESS);
    k = 10.0f; /* the first node keeps 2 */
    p.kernelParams = second;
    CHECK(cuGraphAddKernelNode(&c, g, NULL, 0, &p) == CUDA_ERROR_NOT_SUPPORTED); /* off the chain */
    CHECK(cuGraphAddKernelNode(&b, g, &a, 1, &p) == CUDA_SUCCESS);
    CHECK(cuGraphInstantiate(&exec, g, 0) == CUDA_SUCCESS);
    CHECK(cuGraphDestroy(g) == CUDA_SUCCESS);
    for (int run = 0; run < 2; run++) {
        CHECK(cuMemsetD32Async(dout, 0, N, s) == CUDA_SUCCESS);
        CHECK(cuGraphLaunch(exec, s) == CUDA_SUCCESS);
        CHECK(cuMemcpyDtoHAsync(out, dout, sizeof out, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);
        int same = 1;
        for (int i = 0; i < N; i++)
            same &= out[i] == ((float)i * 2.0f + 1.0f) * 10.0f + 1.0f;
        CHECK_MSG(same, "graph run %d", run);
    }
    CHECK(cuGraphExecDestroy(exec) == CUDA_SUCCESS);
    CHECK(cuGraphLaunch(exec, s) == CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuGraphAddKernelNode(&c, g, &b, 1, &p) == CUDA_ERROR_INVALID_HANDLE);
    CHECK(ptreg_cuda_standin_violations() ==
          2); /* the destroyed exec and graph (off the chain: the stand-in's limit) */
    CHECK(cuMemFree(din) == CUDA_SUCCESS && cuMemFree(dmid) == CUDA_SUCCESS && cuMemFree(dout) == CUDA_SUCCESS);
}

/* Each launch limit of an H100, refused with the driver's code. */
static void test_limits(CUstream s)
{
    CUdeviceptr out = alloc_or_zero(1 << 20);
    uint32_t n = 1;
    void *one[] = {&out}, *three[] = {&out, &out, &n};
    CUfunction bounded = function("bounded"), heavy = function("heavy"), ends = function("shared_ends");
    CHECK(cuLaunchKernel(bounded, 1, 1, 1, 1025, 1, 1, 0, s, one, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(bounded, 1, 1, 1, 1, 1, 65, 0, s, one, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(bounded, 1, 65536, 1, 1, 1, 1, 0, s, one, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(bounded, 0, 1, 1, 1, 1, 1, 0, s, one, NULL) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(bounded, 1, 1, 1, 256, 1, 1, 0, s, one, NULL) == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    CHECK(cuLaunchKernel(bounded, 1, 1, 1, 128, 1, 1, 0, s, one, NULL) == CUDA_SUCCESS);
    const int heavy_max = attr(heavy, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    CHECK(cuLaunchKernel(heavy, 1, 1, 1, 1024, 1, 1, 0, s, three, NULL) == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    CHECK(cuLaunchKernel(heavy, 1, 1, 1, (unsigned)heavy_max, 1, 1, 0, s, three, NULL) == CUDA_SUCCESS);
    /* static shared memory and dynamic together past 48 KiB */
    CHECK(cuLaunchKernel(ends, 1, 1, 1, 64, 1, 1, 49152 - 4 * SHARED_FLOATS + 4, s, one, NULL) ==
          CUDA_ERROR_INVALID_VALUE);
    CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHECK(ptreg_cuda_standin_violations() == 7); /* every refused launch is ptreg's mistake */
    CHECK(cuMemFree(out) == CUDA_SUCCESS);
}

/* Copies stay inside their allocation; fills are whole words. */
static void test_copies(CUstream s)
{
    char host[64] = {0};
    CUdeviceptr a = alloc_or_zero(48), b = alloc_or_zero(64);
    CHECK(cuMemcpyHtoDAsync(a, host, 49, s) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemcpyHtoDAsync(a + 40, host, 16, s) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemcpyDtoHAsync(host, b + 1, 64, s) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemcpyDtoDAsync(a, b, 64, s) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemsetD32Async(a + 2, 0, 4, s) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemsetD32Async(a, 0, 13, s) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemsetD32Async(a, 7, 12, s) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoDAsync(b + 16, a, 48, s) == CUDA_SUCCESS);
    uint32_t words[16];
    CHECK(cuMemcpyDtoHAsync(words, b, sizeof words, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHECK(words[3] == 0xfff7deadu && words[4] == 7 && words[15] == 7);
    CHECK(ptreg_cuda_standin_violations() == 6);
    CHECK(cuMemFree(a) == CUDA_SUCCESS && cuMemFree(b) == CUDA_SUCCESS);
    CHECK(cuMemFree(a) == CUDA_ERROR_INVALID_VALUE); /* freed already */
    CHECK(ptreg_cuda_standin_violations() == 1);
}

/* Work waits in the stream: events are not ready, and device-to-host
 * copies have not landed, until something waits for them. */
static void test_stream_order(CUstream s)
{
    CUevent e0, e1;
    float ms = -1.0f;
    uint32_t word = 0;
    CUdeviceptr a = alloc_or_zero(4);
    CHECK(cuEventCreate(&e0, 0) == CUDA_SUCCESS && cuEventCreate(&e1, 0) == CUDA_SUCCESS);
    CHECK(cuEventElapsedTime(&ms, e0, e1) == CUDA_ERROR_INVALID_HANDLE); /* never recorded */
    CHECK(cuEventRecord(e0, s) == CUDA_SUCCESS);
    CHECK(cuMemsetD32Async(a, 42, 1, s) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoHAsync(&word, a, 4, s) == CUDA_SUCCESS);
    CHECK(cuEventRecord(e1, s) == CUDA_SUCCESS);
    CHECK(word == 0);
    CHECK(cuEventElapsedTime(&ms, e0, e1) == CUDA_ERROR_NOT_READY);
    CHECK(cuEventSynchronize(e1) == CUDA_SUCCESS);
    CHECK(word == 42);
    CHECK(cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS && ms >= 0.0f);
    CHECK(cuEventDestroy(e0) == CUDA_SUCCESS && cuEventDestroy(e1) == CUDA_SUCCESS);
    CHECK(cuEventDestroy(e1) == CUDA_ERROR_INVALID_HANDLE);
    CHECK(ptreg_cuda_standin_violations() == 1);
    CHECK(cuMemFree(a) == CUDA_SUCCESS);
}

/* A write outside an allocation, and a freed allocation passed to a
 * kernel: the launch succeeds, the next synchronisation answers
 * CUDA_ERROR_ILLEGAL_ADDRESS, and so does every call after it until the
 * context is reset. */
static void test_faults(CUstream *s)
{
    CUdeviceptr out = alloc_or_zero(64 * 4);
    uint32_t n = 64;
    int32_t shift = 1;
    void *params[] = {&out, &n, &shift};
    CUfunction shifted = function("shifted");
    CHECK(cuLaunchKernel(shifted, 1, 1, 1, 64, 1, 1, 0, *s, params, NULL) == CUDA_SUCCESS);
    CHECK(cuStreamSynchronize(*s) == CUDA_ERROR_ILLEGAL_ADDRESS);
    CUdeviceptr more = 0;
    CHECK(cuMemAlloc(&more, 16) == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(ptreg_cuda_standin_violations() == 1);
    CHECK(cuDevicePrimaryCtxReset(0) == CUDA_SUCCESS);
    CHECK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CHECK(build_module() == 0);
    shifted = function("shifted");
    out = alloc_or_zero(64 * 4);
    shift = 0;
    CHECK(cuLaunchKernel(shifted, 1, 1, 1, 64, 1, 1, 0, *s, params, NULL) == CUDA_SUCCESS);
    CHECK(cuStreamSynchronize(*s) == CUDA_SUCCESS);
    CHECK(cuMemFree(out) == CUDA_SUCCESS);
    CHECK(cuLaunchKernel(shifted, 1, 1, 1, 64, 1, 1, 0, *s, params, NULL) == CUDA_SUCCESS);
    CHECK(cuStreamSynchronize(*s) == CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(ptreg_cuda_standin_violations() == 1);
    CHECK(cuDevicePrimaryCtxReset(0) == CUDA_SUCCESS);
    CHECK(cuStreamCreate(s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
    CHECK(build_module() == 0);
}

/* CUDA's __expf: within 2 + floor(|1.173 x|) ulp of e^x, subnormal
 * results flushed to zero, and not always the correctly rounded value. */
static void test_fast_exp(CUstream s)
{
    enum { N = 4096 };
    static float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = -100.0f + 180.0f * (float)i / N;
    CUdeviceptr din = alloc_or_zero(sizeof in), dout = alloc_or_zero(sizeof out);
    uint32_t n = N;
    void *params[] = {&dout, &din, &n};
    CHECK(cuMemcpyHtoDAsync(din, in, sizeof in, s) == CUDA_SUCCESS);
    CHECK(cuLaunchKernel(function("fast_exp"), N / 256, 1, 1, 256, 1, 1, 0, s, params, NULL) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoHAsync(out, dout, sizeof out, s) == CUDA_SUCCESS && cuStreamSynchronize(s) == CUDA_SUCCESS);
    int within = 1, flushed = 1, inexact = 0;
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        const double e = exp((double)in[i]);
        if (e < 0x1p-126) {
            flushed &= out[i] == 0.0f;
            continue;
        }
        const double ulp = ldexp(1.0, ilogb(e) - 23), bound = 2.0 + floor(fabs(1.173 * in[i]));
        within &= fabs(out[i] - e) <= bound * ulp;
        worst = check_worse(worst, fabs(out[i] - e) / ulp / bound);
        inexact += out[i] != expf(in[i]);
    }
    CHECK_MSG(within && flushed && inexact > N / 10, "worst %.3g of the bound, flushed %d, %d of %d not expf's", worst,
              flushed, inexact, N);
    CHECK(cuMemFree(din) == CUDA_SUCCESS && cuMemFree(dout) == CUDA_SUCCESS);
}

/* ---- ptreg on the stand-in ---- */

static const ptreg_device standin_device = {PTREG_BACKEND_CUDA, 0};

/* ICP of a scan of the blob onto its model on the stand-in. */
static ptreg_status icp_on_standin(ptreg_error *err)
{
    ptreg_cloud model, scan;
    ptreg_synth_options so;
    ptreg_synth_options_default(&so);
    so.points = 400;
    so.seed = 5;
    double truth[16];
    if (ptreg_synth_model(PTREG_SHAPE_BLOB, 600, 5, &model, err) ||
        ptreg_synth_scan(PTREG_SHAPE_BLOB, &so, &scan, truth, err))
        return PTREG_ERR_RUNTIME;
    ptreg_icp_options o;
    ptreg_icp_options_default(&o);
    o.device = standin_device;
    o.max_iter = 5;
    ptreg_icp_result r;
    ptreg_status st = ptreg_icp(scan.xyz, scan.n, model.xyz, model.n, &o, &r, err);
    if (!st)
        ptreg_icp_result_free(&r);
    ptreg_cloud_free(&model);
    ptreg_cloud_free(&scan);
    return st;
}

/* An application's own context is current again after ptreg's calls. */
static void test_context_kept(void)
{
    CUcontext own = NULL, now = NULL;
    ptreg_error err;
    CHECK(cuCtxCreate(&own, NULL, 0, 0) == CUDA_SUCCESS);
    CHECK_MSG(icp_on_standin(&err) == PTREG_OK, "%s", err.message);
    CHECK(cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == own);
    ptreg_devices_release();
    CHECK(cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == own);
    CHECK(cuCtxDestroy(own) == CUDA_SUCCESS);
}

/* ptreg after a kernel fault (CUDA_STANDIN_FAIL=fault:1): the failing
 * call says a kernel faulted and which (checked: the one; else the last
 * launched), and the next call opens the device afresh. */
static int run_ptreg_fault(void)
{
    ptreg_error err;
    const ptreg_status first = icp_on_standin(&err);
    printf("first %d: %s\n", (int)first, err.message);
    const ptreg_status second = icp_on_standin(&err);
    printf("second %d\n", (int)second);
    ptreg_devices_release();
    return 0;
}

/* A driver that cannot give a kernel's parameters (CUDA_STANDIN_FAIL=
 * paraminfo:N) leaves the arguments unchecked, never "no arguments": the
 * launches still run. */
static int run_ptreg_paraminfo(void)
{
    ptreg_error err;
    const ptreg_status st = icp_on_standin(&err);
    printf("icp %d%s%s\n", (int)st, st ? ": " : "", st ? err.message : "");
    ptreg_devices_release();
    return 0;
}

/* A refused timing (CUDA_STANDIN_FAIL=timing:1) leaves the batch done and
 * its kernel time unknown. */
static int run_ptreg_timing(void)
{
    enum { PAIRS = 2, POINTS = 12 };
    float src[3 * PAIRS * POINTS], tgt[3 * POINTS];
    size_t off[PAIRS + 1] = {0, POINTS, 2 * POINTS};
    for (int i = 0; i < POINTS; i++)
        for (int k = 0; k < 3; k++) {
            tgt[3 * i + k] = (float)((i * (k + 3)) % 7) * 0.3f;
            for (int p = 0; p < PAIRS; p++)
                src[3 * (p * POINTS + i) + k] = tgt[3 * i + k] + 0.01f * (float)(p + 1);
        }
    const ptreg_pair_set set = {PAIRS, src, off, tgt, NULL, POINTS};
    ptreg_batch_options o;
    ptreg_batch_options_default(&o);
    o.device = standin_device;
    double T[16 * PAIRS];
    ptreg_batch_stats stats;
    ptreg_error err;
    const ptreg_status st = ptreg_batch_register(&set, &o, T, NULL, NULL, &stats, &err);
    printf("batch %d kernel_ms %g%s%s\n", (int)st, stats.kernel_ms, st ? ": " : "", st ? err.message : "");
    ptreg_devices_release();
    return 0;
}

/* ---- in a child process ---- */

/* Runs this program with one case and extra environment; its exit code. */
static int child(const char *self, const char *mode, const char *const *env)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        for (; env && *env; env += 2)
            setenv(env[0], env[1], 1);
        execl(self, self, mode, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int open_device(CUcontext *ctx, CUstream *s)
{
    CUdevice dev;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(ctx, dev) || cuCtxSetCurrent(*ctx) ||
        cuStreamCreate(s, CU_STREAM_NON_BLOCKING) || build_module())
        return -1;
    return 0;
}

/* The child cases: each exits 0 when the stand-in behaved as expected.
 * "leak" leaves an allocation (the stand-in then exits 86). */
static int run_case(const char *mode)
{
    CUcontext ctx;
    CUstream s;
    if (!strcmp(mode, "ptreg-fault"))
        return run_ptreg_fault();
    if (!strcmp(mode, "ptreg-timing"))
        return run_ptreg_timing();
    if (!strcmp(mode, "ptreg-paraminfo"))
        return run_ptreg_paraminfo();
    if (!strcmp(mode, "too-new")) {
        /* the parent's CUDA 13 cubin, on a driver that says it is 12.8 */
        CUdevice dev;
        FILE *f = fopen(getenv("STANDIN_TEST_IMAGE"), "rb");
        char *bytes = malloc(1 << 22);
        size_t n = f && bytes ? fread(bytes, 1, 1 << 22, f) : 0;
        if (f)
            fclose(f);
        if (!n || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
            return 1;
        printf("load %d\n", (int)cuModuleLoadData(&module, bytes));
        free(bytes);
        cuDevicePrimaryCtxRelease(0);
        return 0;
    }
    if (open_device(&ctx, &s))
        return 2;
    CUdeviceptr p = 0;
    if (!strcmp(mode, "leak"))
        return cuMemAlloc(&p, 100) == CUDA_SUCCESS ? 0 : 1;
    if (!strcmp(mode, "inject")) {
        /* CUDA_STANDIN_FAIL=alloc:2, copy:1, launch:1 or fault:1 */
        CUdeviceptr q = 0;
        uint32_t word = 1;
        void *one[] = {&p};
        CUresult a = cuMemAlloc(&p, 64), b = cuMemAlloc(&q, 64), c = cuMemcpyHtoDAsync(p, &word, 4, s);
        CUresult d = cuLaunchKernel(function("bounded"), 1, 1, 1, 16, 1, 1, 0, s, one, NULL);
        CUresult e = cuStreamSynchronize(s);
        printf("alloc %d %d copy %d launch %d sync %d\n", a, b, c, d, e);
        return 0;
    }
    if (!strcmp(mode, "strict")) {
        /* a pageable source changed before the stream reached the copy */
        uint32_t word = 1;
        if (cuMemAlloc(&p, 4) || cuMemcpyHtoDAsync(p, &word, 4, s))
            return 1;
        word = 2;
        cuStreamSynchronize(s);
        cuMemcpyDtoHAsync(&word, p, 4, s);
        cuStreamSynchronize(s);
        printf("device word %u\n", word);
        cuMemFree(p);
        cuStreamDestroy(s);
        cuModuleUnload(module);
        cuDevicePrimaryCtxRelease(0);
        return 0;
    }
    if (!strcmp(mode, "order")) {
        uint32_t last[4] = {0};
        cuMemAlloc(&p, sizeof last);
        void *one[] = {&p};
        cuLaunchKernel(function("turn_of_first"), 4, 1, 1, 256, 1, 1, 0, s, one, NULL);
        cuMemcpyDtoHAsync(last, p, sizeof last, s);
        cuStreamSynchronize(s);
        printf("last %u\n", last[0]);
        cuMemFree(p);
        cuStreamDestroy(s);
        cuModuleUnload(module);
        cuDevicePrimaryCtxRelease(0);
        return 0;
    }
    return 3;
}

/* A child's exit code and first line of output containing `key`. */
static int child_output(const char *self, const char *mode, const char *const *env, const char *key, char *line,
                        size_t size)
{
    char path[] = "/tmp/standin-child-XXXXXX";
    int fd = mkstemp(path);
    fflush(NULL);
    int saved = dup(1);
    dup2(fd, 1);
    int rc = child(self, mode, env);
    fflush(NULL);
    dup2(saved, 1);
    close(saved);
    FILE *f = fdopen(fd, "r");
    rewind(f);
    line[0] = '\0';
    char buf[512];
    while (fgets(buf, sizeof buf, f))
        if (strstr(buf, key)) {
            snprintf(line, size, "%s", buf);
            break;
        }
    fclose(f);
    unlink(path);
    return rc;
}

static void test_children(const char *self)
{
    char line[512];
    const char *const leak_env[] = {"CUDA_STANDIN_QUIET", "1", NULL};
    CHECK_MSG(child(self, "leak", leak_env) == 86, "a leak changes the exit code to 86");
    char path[] = "/tmp/standin-image-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, image, image_size) == (ssize_t)image_size);
    close(fd);
    const char *const too_new[] = {"CUDA_STANDIN_DRIVER_VERSION", "12080", "STANDIN_TEST_IMAGE", path, NULL};
    CHECK(child_output(self, "too-new", too_new, "load", line, sizeof line) == 0);
    CHECK_MSG(!strcmp(line, "load 222\n"), "a CUDA 13 cubin on a 12.8 driver: %s", line);
    unlink(path);
    static const struct {
        const char *spec, *expect;
    } injections[] = {{"alloc:2", "alloc 0 2 copy 0 launch 0 sync 0"},
                      {"copy:1", "alloc 0 0 copy 999 launch 0 sync 0"},
                      {"launch:1", "alloc 0 0 copy 0 launch 701 sync 0"},
                      {"fault:1", "alloc 0 0 copy 0 launch 0 sync 700"}};
    for (size_t i = 0; i < 4; i++) {
        const char *const env[] = {"CUDA_STANDIN_FAIL", injections[i].spec, "CUDA_STANDIN_STRICT_EXIT", "0", NULL};
        child_output(self, "inject", env, "alloc ", line, sizeof line);
        CHECK_MSG(!strncmp(line, injections[i].expect, strlen(injections[i].expect)), "%s: %s", injections[i].spec,
                  line);
    }
    const char *const pageable[] = {NULL};
    CHECK(child_output(self, "strict", pageable, "device word", line, sizeof line) == 0 &&
          !strcmp(line, "device word 1\n"));
    const char *const strict[] = {"CUDA_STANDIN_STRICT", "1", NULL};
    CHECK(child_output(self, "strict", strict, "device word", line, sizeof line) == 86 &&
          !strcmp(line, "device word 2\n"));
    unsigned forward = 0, reverse = 0, shuffle = 0;
    const char *const orders[3][5] = {{"CUDA_STANDIN_ORDER", "forward", "POCL_WORK_GROUP_METHOD", "loops", NULL},
                                      {"CUDA_STANDIN_ORDER", "reverse", "POCL_WORK_GROUP_METHOD", "loops", NULL},
                                      {"CUDA_STANDIN_ORDER", "shuffle", "POCL_WORK_GROUP_METHOD", "loops", NULL}};
    unsigned *got[3] = {&forward, &reverse, &shuffle};
    for (int o = 0; o < 3; o++) {
        CHECK(child_output(self, "order", orders[o], "last", line, sizeof line) == 0);
        CHECK(sscanf(line, "last %u", got[o]) == 1);
    }
    /* thread 0 runs first, last, or 217th: (217 * 1031 + 17) % 256 == 0 */
    CHECK_MSG(forward == 0 && reverse == 255 && shuffle == 217,
              "the turn thread 0 had: %u forward, %u reverse, %u shuffled", forward, reverse, shuffle);
    /* ptreg names a fault and opens the device afresh afterwards; a
     * refused timing is no failure */
    const char *const fault[] = {"CUDA_STANDIN_FAIL", "fault:1", NULL};
    CHECK(child_output(self, "ptreg-fault", fault, "first", line, sizeof line) == 0);
    CHECK_MSG(strstr(line, "first 6: ") && strstr(line, "a kernel fault (CUDA_ERROR_ILLEGAL_ADDRESS") &&
                  strstr(line, "the last kernel launched was ptreg_") && strstr(line, "PTREG_DEVICE_CHECKED"),
              "%s", line);
    CHECK(child_output(self, "ptreg-fault", fault, "second", line, sizeof line) == 0 && !strcmp(line, "second 0\n"));
    const char *const checked[] = {"CUDA_STANDIN_FAIL", "fault:1", "PTREG_DEVICE_CHECKED", "1", NULL};
    CHECK(child_output(self, "ptreg-fault", checked, "first", line, sizeof line) == 0);
    CHECK_MSG(strstr(line, "first 6: ") && strstr(line, ": kernel ptreg_") &&
                  strstr(line, " faulted: "
                               "CUDA_ERROR_ILLEGAL_ADDRESS"),
              "%s", line);
    const char *const timing[] = {"CUDA_STANDIN_FAIL", "timing:1", NULL};
    CHECK(child_output(self, "ptreg-timing", timing, "batch", line, sizeof line) == 0);
    CHECK_MSG(!strcmp(line, "batch 0 kernel_ms -1\n"), "%s", line);
    /* cuFuncGetParamInfo failing at a kernel's first parameter, and past
     * it: the sizes go unchecked, and ICP runs */
    for (int n = 1; n <= 2; n++) {
        const char *const paraminfo[] = {"CUDA_STANDIN_FAIL", n == 1 ? "paraminfo:1" : "paraminfo:2", NULL};
        CHECK(child_output(self, "ptreg-paraminfo", paraminfo, "icp", line, sizeof line) == 0);
        CHECK_MSG(!strcmp(line, "icp 0\n"), "paraminfo:%d: %s", n, line);
    }
}

/* ptreg takes PTREG_NVRTC whole, however long (a 65-character checkout
 * path was once cut at 63, and every CUDA test there skipped), and names
 * the loader's reason for a path that is no library. */
static void test_nvrtc_paths(const char *self)
{
    const char *recorder = getenv("PTREG_NVRTC");
    char dir[] = "/tmp/standin-nvrtc-XXXXXX", deep[300], link[PATH_MAX], line[512];
    CHECK(recorder && recorder[0] == '/' && mkdtemp(dir));
    snprintf(deep, sizeof deep, "%s/%0200d", dir, 0);
    snprintf(link, sizeof link, "%s/libnvrtc-standin.so", deep);
    CHECK(mkdir(deep, 0700) == 0 && symlink(recorder, link) == 0);
    const char *const long_path[] = {"PTREG_NVRTC", link, NULL};
    CHECK(child_output(self, "nvrtc-path", long_path, "nvrtc", line, sizeof line) == 0);
    CHECK_MSG(!strcmp(line, "nvrtc 1\n"), "a %zu-character PTREG_NVRTC: %s", strlen(link), line);
    const char *const no_library[] = {"PTREG_NVRTC", deep, NULL};
    CHECK(child_output(self, "nvrtc-path", no_library, "nvrtc", line, sizeof line) == 0);
    CHECK_MSG(!strncmp(line, "nvrtc 0 PTREG_NVRTC (", 21) && strstr(line, ") is no NVRTC: "), "%s", line);
    unlink(link);
    rmdir(deep);
    rmdir(dir);
}

/* Skipped only where no real NVRTC is installed: the recorder itself, built
 * beside this test, must load. */
static int nvrtc_or_skip(void)
{
    char note[400];
    if (nvrtc_available(note, sizeof note))
        return 1;
    const char *recorder = getenv("PTREG_NVRTC");
    void *lib = recorder ? dlopen(recorder, RTLD_NOW | RTLD_LOCAL) : NULL;
    nvrtcResult (*version)(int *, int *) = NULL;
    if (lib)
        *(void **)&version = dlsym(lib, "nvrtcVersion");
    int major, minor;
    CHECK_MSG(lib && version, "the NVRTC recorder %s does not load: %s", recorder ? recorder : "(PTREG_NVRTC unset)",
              lib ? "no nvrtcVersion" : dlerror());
    if (lib && version && version(&major, &minor) == NVRTC_SUCCESS)
        CHECK_MSG(0, "the recorder loads here but not in ptreg: %s", note);
    else if (lib && version)
        printf("skipped: %s\n", note);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "too-new")) /* no NVRTC fits a 12.8 driver here: none is needed */
        return run_case(argv[1]);
    if (argc > 1 && !strcmp(argv[1], "nvrtc-path")) {
        char note[400];
        int found = nvrtc_available(note, sizeof note);
        printf("nvrtc %d%s%s\n", found, found ? "" : " ", found ? "" : note);
        return 0;
    }
    if (!nvrtc_or_skip())
        return check_failures ? check_exit() : CHECK_EXIT_SKIP;
    if (argc > 1)
        return run_case(argv[1]);
    CUcontext ctx;
    CUstream s;
    if (cuInit(0) != CUDA_SUCCESS) {
        printf("skipped: the stand-in found no POCL\n");
        return CHECK_EXIT_SKIP;
    }
    CHECK(open_device(&ctx, &s) == 0);
    test_image();
    test_launch(s);
    test_limits(s);
    test_copies(s);
    test_stream_order(s);
    test_faults(&s);
    test_fast_exp(s);
    test_graphs(s);
    CHECK(ptreg_cuda_standin_violations() == 0);
    CHECK(cuStreamDestroy(s) == CUDA_SUCCESS && cuModuleUnload(module) == CUDA_SUCCESS);
    CHECK(cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
    test_context_kept();
    CHECK(ptreg_cuda_standin_violations() == 0);
    test_children(argv[0]);
    test_nvrtc_paths(argv[0]);
    free(image);
    return check_exit();
}
