#define _GNU_SOURCE /* strdup, RTLD_* */
/* The stand-in's GPU: POCL, the CPU OpenCL driver, through the ICD loader.
 * A CUDA program is run as the OpenCL build of the very source NVRTC
 * compiled (ptreg's kernels are written in a dialect both compile), with
 * NVRTC's -D options, after a prelude that gives the OpenCL build CUDA's
 * semantics where the two differ (dialect.h asks for them under
 * PTREG_CUDA_STANDIN): __expf's approximation, and the order in which a
 * work-group's threads run between barriers. Every allocation is a POCL
 * buffer with red zones before and after the bytes the kernel sees. */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

#define CL_CALLS(X)              \
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
    X(clGetKernelInfo)           \
    X(clGetKernelArgInfo)        \
    X(clGetKernelWorkGroupInfo)  \
    X(clSetKernelArg)            \
    X(clEnqueueNDRangeKernel)    \
    X(clCreateBuffer)            \
    X(clReleaseMemObject)        \
    X(clEnqueueWriteBuffer)      \
    X(clEnqueueReadBuffer)       \
    X(clEnqueueFillBuffer)       \
    X(clEnqueueCopyBuffer)       \
    X(clFinish)

#define DECLARE(f) __typeof__(f) *f;
static struct {
    CL_CALLS(DECLARE)
} cl;

static cl_context context;
static cl_command_queue queue;
static cl_device_id device;
static size_t front_zone; /* the sub-buffer's origin: the device's base alignment, at least ZONE_CHECKED */
static uint64_t max_alloc;

/* The zone after the bytes is as long as they are (16 MiB at most): a
 * kernel that writes doubles where floats were meant stays inside it
 * instead of corrupting POCL's heap. The first ZONE_CHECKED bytes of each
 * zone are checked after a launch: overruns start there. */
#define ZONE_CHECKED 4096
#define BACK_ZONE_MAX (16u << 20)
#define REDZONE_BYTE 0xfd
/* What a new allocation holds (cuMemAlloc leaves memory undefined): a
 * float or double NaN, an index far out of range, never 0 or NO_NEIGHBOR. */
#define FRESH_WORD 0xfff7deadu

/* CUDA's semantics for the OpenCL build (dialect.h's PTREG_CUDA_STANDIN
 * hooks). __expf(x) is ex2.approx.ftz(x * log2 e) in float: the product's
 * rounding makes the error grow with |x|, subnormals flush to zero, and
 * the CUDA C Programming Guide bounds the whole at 2 + floor(|1.173 x|)
 * ulp. Emulated as the same float product, then 2^p off by up to 1.5 ulp
 * (a deterministic amount drawn from p's bits) before rounding: as far
 * from e^x as the guide allows, the same answer for the same input.
 * STANDIN_ORDER renumbers a group's threads so that, run one after another
 * between barriers, they go forward (0), backward (1) or scattered (2:
 * l * 1031 + 17 mod n, a bijection for n <= 1024). STANDIN_INCOHERENT runs
 * a launch one group at a time (driver.c): group g of G as a launch of one
 * group at offset (g x the group's size, G), which the group's and grid's
 * numbers read back. */
static const char prelude[] =
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#if STANDIN_INCOHERENT\n"
    "static uint standin_group_id_x(void)\n"
    "{\n"
    "    return (uint)get_group_id(0) + (uint)(get_global_offset(0) / get_local_size(0));\n"
    "}\n"
    "static uint standin_groups_x(void) { return (uint)get_global_offset(1); }\n"
    "#else\n"
    "static uint standin_group_id_x(void) { return (uint)get_group_id(0); }\n"
    "static uint standin_groups_x(void) { return (uint)get_num_groups(0); }\n"
    "#endif\n"
    "static uint standin_local_id_x(void)\n"
    "{\n"
    "    const uint l = (uint)get_local_id(0), n = (uint)get_local_size(0);\n"
    "#if STANDIN_ORDER == 1\n"
    "    return n - 1u - l;\n"
    "#elif STANDIN_ORDER == 2\n"
    "    return (l * 1031u + 17u) % n;\n"
    "#else\n"
    "    return l;\n"
    "#endif\n"
    "}\n"
    "static float standin_ftz(float x) { return fabs(x) < 0x1p-126f ? copysign(0.0f, x) : x; }\n"
    "static uint standin_mix(uint x)\n"
    "{\n"
    "    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;\n"
    "    return x;\n"
    "}\n"
    "static float standin_ex2_approx_ftz(float p)\n"
    "{\n"
    "    p = standin_ftz(p);\n"
    "    if (isnan(p) || p >= 128.0f || p < -126.0f)\n"
    "        return isnan(p) ? p : p >= 128.0f ? INFINITY : 0.0f;\n"
    "    const double r = exp2((double)p), ulp = ldexp(1.0, ilogb(r) - 23);\n"
    "    const double off = ((double)(standin_mix(as_uint(p)) >> 8) * (3.0 / 16777216.0) - 1.5) * ulp;\n"
    "    return standin_ftz((float)(r + off));\n"
    "}\n"
    "static float standin_expf_fast(float x) { return standin_ex2_approx_ftz(standin_ftz(x) * 1.44269504f); }\n";

static int load_library(char *why, size_t why_size)
{
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_size, "no OpenCL ICD loader (libOpenCL.so.1): the stand-in runs kernels on POCL");
        return -1;
    }
#define LOAD(f)                                                 \
    if (!(*(void **)&cl.f = dlsym(lib, #f))) {                  \
        snprintf(why, why_size, "libOpenCL.so.1 lacks %s", #f); \
        return -1;                                              \
    }
    CL_CALLS(LOAD)
    return 0;
}

/* POCL's device: the first platform whose name says so. */
static int find_pocl(cl_platform_id *platform, char *why, size_t why_size)
{
    cl_platform_id ids[16];
    cl_uint n = 0;
    if (cl.clGetPlatformIDs(16, ids, &n) != CL_SUCCESS)
        n = 0;
    for (cl_uint i = 0; i < n && i < 16; i++) {
        char name[256] = "";
        cl.clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        name[sizeof name - 1] = '\0';
        if (strstr(name, "Portable Computing Language") &&
            cl.clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 1, &device, NULL) == CL_SUCCESS) {
            *platform = ids[i];
            return 0;
        }
    }
    snprintf(why, why_size, "no POCL platform (Debian: pocl-opencl-icd): the stand-in runs kernels on POCL");
    return -1;
}

int standin_pocl_init(char *why, size_t why_size)
{
    if (queue)
        return 0;
    cl_platform_id platform;
    if (load_library(why, why_size) || find_pocl(&platform, why, why_size))
        return -1;
    cl_int rc;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    context = cl.clCreateContext(props, 1, &device, NULL, NULL, &rc);
    if (context)
        queue = cl.clCreateCommandQueue(context, device, 0, &rc);
    if (!queue) {
        snprintf(why, why_size, "POCL: no context or queue (%d)", (int)rc);
        return -1;
    }
    cl_uint align_bits = 0;
    cl.clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL);
    front_zone = align_bits / 8 > ZONE_CHECKED ? align_bits / 8 : ZONE_CHECKED;
    cl.clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    return 0;
}

static size_t back_zone(size_t bytes)
{
    return bytes < ZONE_CHECKED ? ZONE_CHECKED : bytes > BACK_ZONE_MAX ? BACK_ZONE_MAX : bytes;
}

void standin_pocl_shutdown(void)
{
    if (!queue)
        return;
    cl.clFinish(queue);
    cl.clReleaseCommandQueue(queue);
    cl.clReleaseContext(context);
    queue = NULL;
    context = NULL;
}

uint64_t standin_pocl_max_alloc(void)
{
    /* bytes + back_zone(bytes) + front_zone within POCL's largest */
    const uint64_t room = max_alloc > front_zone ? max_alloc - front_zone : 0;
    return room / 2 > BACK_ZONE_MAX ? room - BACK_ZONE_MAX : room / 2;
}

/* ---- buffers ---- */

/* One POCL buffer over host memory of the stand-in's own (CL_MEM_USE_HOST_PTR,
 * which the CPU driver runs on in place), with the red zones on either side
 * of it in that same memory: a kernel's stray write lands there, and a check
 * is a look at host memory. No sub-buffers: POCL 3.1 tracks their contents
 * apart from their parent's and may hand a kernel stale bytes (its issue
 * #1969). */
struct standin_buffer {
    cl_mem mem;
    unsigned char *block; /* front zone, the bytes, back zone */
    size_t bytes;
};

static void fill_fresh(unsigned char *p, size_t bytes)
{
    const uint32_t word = FRESH_WORD;
    size_t i = 0;
    for (; i + 4 <= bytes; i += 4)
        memcpy(p + i, &word, 4);
    memset(p + i, 0xff, bytes - i);
}

standin_buffer *standin_buffer_create(size_t bytes)
{
    if (!bytes || bytes > standin_pocl_max_alloc())
        return NULL;
    standin_buffer *b = calloc(1, sizeof *b);
    const size_t whole = (front_zone + bytes + back_zone(bytes) + front_zone - 1) / front_zone * front_zone;
    if (b)
        b->block = aligned_alloc(front_zone, whole);
    if (!b || !b->block) {
        free(b);
        return NULL;
    }
    b->bytes = bytes;
    memset(b->block, REDZONE_BYTE, front_zone);
    fill_fresh(b->block + front_zone, bytes);
    memset(b->block + front_zone + bytes, REDZONE_BYTE, whole - front_zone - bytes);
    cl_int rc;
    b->mem = cl.clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, b->block + front_zone, &rc);
    if (!b->mem) {
        standin_buffer_destroy(b);
        return NULL;
    }
    return b;
}

void standin_buffer_destroy(standin_buffer *b)
{
    if (!b)
        return;
    if (b->mem)
        cl.clReleaseMemObject(b->mem);
    free(b->block);
    free(b);
}

unsigned char *standin_buffer_bytes(standin_buffer *b) { return b->block + front_zone; }

int standin_buffer_write(standin_buffer *b, size_t offset, const void *src, size_t bytes)
{
    return cl.clEnqueueWriteBuffer(queue, b->mem, CL_TRUE, offset, bytes, src, 0, NULL, NULL) ? -1 : 0;
}

int standin_buffer_read(standin_buffer *b, size_t offset, void *dst, size_t bytes)
{
    return cl.clEnqueueReadBuffer(queue, b->mem, CL_TRUE, offset, bytes, dst, 0, NULL, NULL) ? -1 : 0;
}

int standin_buffer_fill32(standin_buffer *b, size_t offset, uint32_t word, size_t count)
{
    if (!count)
        return 0;
    cl_int rc = cl.clEnqueueFillBuffer(queue, b->mem, &word, 4, offset, 4 * count, 0, NULL, NULL);
    return rc == CL_SUCCESS && cl.clFinish(queue) == CL_SUCCESS ? 0 : -1;
}

int standin_buffer_copy(standin_buffer *dst, size_t dst_offset, standin_buffer *src, size_t src_offset, size_t bytes)
{
    cl_int rc = cl.clEnqueueCopyBuffer(queue, src->mem, dst->mem, src_offset, dst_offset, bytes, 0, NULL, NULL);
    return rc == CL_SUCCESS && cl.clFinish(queue) == CL_SUCCESS ? 0 : -1;
}

static long long first_written(const unsigned char *zone, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (zone[i] != REDZONE_BYTE)
            return (long long)i;
    return -1;
}

int standin_buffer_redzone_hit(standin_buffer *b, long long *at)
{
    long long i = first_written(b->block + front_zone - ZONE_CHECKED, ZONE_CHECKED);
    if (i >= 0) {
        *at = i - (long long)ZONE_CHECKED;
        return 1;
    }
    i = first_written(b->block + front_zone + b->bytes, ZONE_CHECKED);
    if (i >= 0) {
        *at = (long long)b->bytes + i;
        return 1;
    }
    return 0;
}

/* ---- programs ---- */

struct standin_program {
    standin_program *next;
    char *source, *options;
    cl_program program;
    int refs;
};

static standin_program *programs;

/* NVRTC options that change nothing the OpenCL build must copy: the
 * target, the language standard, ptxas's report, and --fmad=false (the
 * dialect turns contraction off on both). Any other option (say
 * --use_fast_math) would change the arithmetic: refused, not ignored. */
static int harmless_option(const char *o)
{
    static const char *const prefixes[] = {"--gpu-architecture=", "-arch=", "--std=", "-std=", "--ptxas-options="};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(o, prefixes[i], strlen(prefixes[i])))
            return 1;
    return !strcmp(o, "--fmad=false") || !strcmp(o, "-fmad=false");
}

int standin_incoherent(void)
{
    const char *v = getenv("CUDA_STANDIN_INCOHERENT");
    return !v || !*v || !strcmp(v, "0") ? 0
           : !strcmp(v, "opencl")       ? STANDIN_INCOHERENT_OPENCL
                                        : STANDIN_INCOHERENT_CUDA;
}

static char *opencl_options(const standin_record *rec, char *why, size_t why_size)
{
    const char *order = getenv("CUDA_STANDIN_ORDER");
    int o = !order || !*order || !strcmp(order, "forward") ? 0 : !strcmp(order, "reverse") ? 1 : 2;
    size_t size = 256;
    for (int i = 0; i < rec->noptions; i++)
        size += strlen(rec->options[i]) + 1;
    char *all = malloc(size);
    if (!all)
        return NULL;
    size_t used = (size_t)snprintf(all, size,
                                   "-cl-std=CL1.2 -cl-kernel-arg-info -cl-fp32-correctly-rounded-divide-sqrt "
                                   "-DPTREG_CUDA_STANDIN=1 -DSTANDIN_ORDER=%d -DSTANDIN_INCOHERENT=%d",
                                   o, standin_incoherent());
    for (int i = 0; i < rec->noptions; i++) {
        const char *opt = rec->options[i];
        if (!strncmp(opt, "-D", 2) || !strncmp(opt, "-U", 2))
            used += (size_t)snprintf(all + used, size - used, " %s", opt);
        else if (!harmless_option(opt)) {
            snprintf(why, why_size, "NVRTC option %s has no OpenCL equivalent in the stand-in", opt);
            free(all);
            return NULL;
        }
    }
    return all;
}

static char *build_log(cl_program p)
{
    size_t size = 0;
    char *log = NULL;
    if (cl.clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS && size)
        log = calloc(size + 1, 1);
    if (log && cl.clGetProgramBuildInfo(p, device, CL_PROGRAM_BUILD_LOG, size, log, NULL) != CL_SUCCESS)
        log[0] = '\0';
    return log;
}

static cl_program compile(const char *source, const char *options, const char *label, char *why, size_t why_size)
{
    const char *parts[] = {prelude, source};
    cl_int rc;
    cl_program p = cl.clCreateProgramWithSource(context, 2, parts, NULL, &rc);
    if (!p) {
        snprintf(why, why_size, "POCL refused the %s source (%d)", label, (int)rc);
        return NULL;
    }
    rc = cl.clBuildProgram(p, 1, &device, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char *log = build_log(p);
        snprintf(why, why_size, "POCL could not build the %s kernels as OpenCL (%d): %.400s", label, (int)rc,
                 log ? log : "");
        free(log);
        cl.clReleaseProgram(p);
        return NULL;
    }
    return p;
}

standin_program *standin_program_build(const standin_record *rec, char *why, size_t why_size)
{
    char *options = opencl_options(rec, why, why_size);
    if (!options)
        return NULL;
    for (standin_program *p = programs; p; p = p->next)
        if (!strcmp(p->options, options) && !strcmp(p->source, rec->source)) {
            free(options);
            p->refs++;
            return p;
        }
    standin_program *p = calloc(1, sizeof *p);
    if (p)
        p->source = strdup(rec->source);
    if (!p || !p->source) {
        free(p);
        free(options);
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    p->options = options;
    p->program = compile(rec->source, options, rec->name, why, why_size);
    if (!p->program) {
        free(p->source);
        free(p->options);
        free(p);
        return NULL;
    }
    p->refs = 1;
    p->next = programs;
    programs = p;
    return p;
}

void standin_program_release(standin_program *p)
{
    if (!p || --p->refs > 0)
        return;
    for (standin_program **at = &programs; *at; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            break;
        }
    cl.clReleaseProgram(p->program);
    free(p->source);
    free(p->options);
    free(p);
}

/* ---- kernels ---- */

struct standin_function {
    cl_kernel kernel;
    unsigned nargs;
    unsigned char pointer[STANDIN_MAX_PARAMS];
    unsigned char coherent[STANDIN_MAX_PARAMS]; /* a volatile pointer: what atomics count in */
    char name[128];
};

static int check_argument(standin_function *f, unsigned i, const standin_kernel_info *info, char *why, size_t why_size)
{
    cl_kernel_arg_address_qualifier space = 0;
    char type[128] = "";
    if (cl.clGetKernelArgInfo(f->kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof space, &space, NULL) !=
            CL_SUCCESS ||
        cl.clGetKernelArgInfo(f->kernel, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type, type, NULL) != CL_SUCCESS) {
        snprintf(why, why_size, "%s: POCL gives no information on argument %u", f->name, i);
        return -1;
    }
    type[sizeof type - 1] = '\0';
    f->pointer[i] = space == CL_KERNEL_ARG_ADDRESS_GLOBAL || space == CL_KERNEL_ARG_ADDRESS_CONSTANT;
    cl_kernel_arg_type_qualifier qualifier = 0;
    if (cl.clGetKernelArgInfo(f->kernel, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof qualifier, &qualifier, NULL) !=
        CL_SUCCESS)
        qualifier = 0;
    f->coherent[i] = f->pointer[i] && (qualifier & CL_KERNEL_ARG_TYPE_VOLATILE);
    if (space == CL_KERNEL_ARG_ADDRESS_LOCAL) {
        snprintf(why, why_size, "%s: argument %u is a local pointer: ptreg's kernels have none", f->name, i);
        return -1;
    }
    /* a scalar's size: POCL refuses a value of any other (typedefs such
     * as acc_t hide it from the type's name) */
    const unsigned char zeros[16] = {0};
    const int same = f->pointer[i] ? info->param_size[i] == 8
                                   : info->param_size[i] <= sizeof zeros &&
                                         cl.clSetKernelArg(f->kernel, i, info->param_size[i], zeros) == CL_SUCCESS;
    if (!same)
        snprintf(why, why_size, "%s: argument %u (%s) is not %u bytes in the OpenCL build, as in the cubin", f->name, i,
                 type, (unsigned)info->param_size[i]);
    return same ? 0 : -1;
}

standin_function *standin_function_create(standin_program *p, const standin_kernel_info *info, char *why,
                                          size_t why_size)
{
    standin_function *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    snprintf(f->name, sizeof f->name, "%s", info->name);
    cl_int rc;
    cl_uint nargs = 0;
    f->kernel = cl.clCreateKernel(p->program, info->name, &rc);
    if (!f->kernel) {
        snprintf(why, why_size, "the OpenCL build has no kernel %s (%d)", info->name, (int)rc);
        free(f);
        return NULL;
    }
    f->nargs = info->nparams;
    int bad = cl.clGetKernelInfo(f->kernel, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) != CL_SUCCESS ||
              nargs != info->nparams;
    if (bad)
        snprintf(why, why_size, "%s: %u parameters in the cubin, %u in the OpenCL build", info->name, info->nparams,
                 (unsigned)nargs);
    for (unsigned i = 0; i < f->nargs && !bad; i++)
        bad = check_argument(f, i, info, why, why_size);
    if (bad) {
        standin_function_destroy(f);
        return NULL;
    }
    return f;
}

void standin_function_destroy(standin_function *f)
{
    if (!f)
        return;
    if (f->kernel)
        cl.clReleaseKernel(f->kernel);
    free(f);
}

int standin_function_param_is_pointer(const standin_function *f, unsigned i) { return i < f->nargs && f->pointer[i]; }

int standin_function_param_is_coherent(const standin_function *f, unsigned i) { return i < f->nargs && f->coherent[i]; }

size_t standin_function_pocl_max_group(const standin_function *f)
{
    size_t n = 0;
    return cl.clGetKernelWorkGroupInfo(f->kernel, device, CL_KERNEL_WORK_GROUP_SIZE, sizeof n, &n, NULL) == CL_SUCCESS
               ? n
               : 0;
}

int standin_function_set_arg(standin_function *f, unsigned i, standin_buffer *b, const void *value, size_t size)
{
    cl_int rc = b ? cl.clSetKernelArg(f->kernel, i, sizeof(cl_mem), &b->mem)
                  : cl.clSetKernelArg(f->kernel, i, size, value);
    return rc == CL_SUCCESS ? 0 : -1;
}

int standin_function_run(standin_function *f, const unsigned grid[3], const unsigned block[3], char *why,
                         size_t why_size)
{
    size_t global[3], local[3];
    for (int d = 0; d < 3; d++)
        global[d] = (size_t)grid[d] * block[d], local[d] = block[d];
    const cl_uint dims = grid[2] > 1 || block[2] > 1 ? 3 : grid[1] > 1 || block[1] > 1 ? 2 : 1;
    cl_int rc = cl.clEnqueueNDRangeKernel(queue, f->kernel, dims, NULL, global, local, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clFinish(queue);
    if (rc != CL_SUCCESS)
        snprintf(why, why_size, "POCL could not run %s with %ux%ux%u groups of %ux%ux%u (%d)", f->name, grid[0],
                 grid[1], grid[2], block[0], block[1], block[2], (int)rc);
    return rc == CL_SUCCESS ? 0 : -1;
}

int standin_function_run_group(standin_function *f, unsigned groups, unsigned group, unsigned block, char *why,
                               size_t why_size)
{
    const size_t global[2] = {block, 1}, local[2] = {block, 1}, offset[2] = {(size_t)group * block, groups};
    cl_int rc = cl.clEnqueueNDRangeKernel(queue, f->kernel, 2, offset, global, local, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = cl.clFinish(queue);
    if (rc != CL_SUCCESS)
        snprintf(why, why_size, "POCL could not run group %u of %u of %s (%d)", group, groups, f->name, (int)rc);
    return rc == CL_SUCCESS ? 0 : -1;
}
