#define _DEFAULT_SOURCE /* sysconf(_SC_PHYS_PAGES) */
/* The device registry (the CPU, then every CUDA and OpenCL device found),
 * ptreg_device_resolve, and the layer every device path calls: opened
 * devices kept for the process, programs built once per device and option
 * set, buffers with guard words, launches, events. */
#include "device/backend.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cpu.h"
#include "device/engine.h"
#include "device/nvrtc.h"

#define MAX_DEVICES 64
/* Bytes after every buffer, filled with GUARD_WORD: a kernel that writes
 * past its output is caught when the buffer is freed (check_guards). */
#define GUARD_BYTES 64
#define GUARD_WORD 0xa5a5a5a5u

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ptreg_device_info device_list[MAX_DEVICES];
static size_t device_count;
static int enumerated;
static char backend_notes[4][512];
static dev_handle *opened[MAX_DEVICES];

/* ---- names ---- */

const char *ptreg_backend_name(ptreg_backend backend)
{
    switch (backend) {
    case PTREG_BACKEND_CPU: return "cpu";
    case PTREG_BACKEND_CUDA: return "cuda";
    case PTREG_BACKEND_OPENCL: return "opencl";
    case PTREG_BACKEND_AUTO: break;
    }
    return "auto";
}

static const backend_interface *backend_ops(ptreg_backend backend)
{
#ifdef PTREG_HAVE_CUDA
    if (backend == PTREG_BACKEND_CUDA)
        return &cuda_ops;
#endif
#ifdef PTREG_HAVE_OPENCL
    if (backend == PTREG_BACKEND_OPENCL)
        return &opencl_ops;
#endif
    (void)backend;
    return NULL;
}

int ptreg_backend_built(ptreg_backend backend) { return backend == PTREG_BACKEND_CPU || backend_ops(backend) != NULL; }

int ptreg_device_parse(const char *text, ptreg_device *device)
{
    static const ptreg_backend named[] = {PTREG_BACKEND_AUTO, PTREG_BACKEND_CPU, PTREG_BACKEND_CUDA,
                                          PTREG_BACKEND_OPENCL};
    for (size_t b = 0; b < sizeof named / sizeof named[0]; b++) {
        const char *name = ptreg_backend_name(named[b]);
        size_t len = strlen(name);
        if (strncmp(text, name, len))
            continue;
        const char *rest = text + len;
        int gpu = named[b] == PTREG_BACKEND_CUDA || named[b] == PTREG_BACKEND_OPENCL;
        if (*rest == '\0') {
            *device = (ptreg_device){named[b], 0};
            return 0;
        }
        if (!gpu || *rest != ':' || !isdigit((unsigned char)rest[1]))
            return -1;
        char *end;
        long index = strtol(rest + 1, &end, 10);
        if (*end || index > 1000)
            return -1;
        *device = (ptreg_device){named[b], (int)index};
        return 0;
    }
    return -1;
}

const char *ptreg_device_format(const ptreg_device *device, char *buf, size_t size)
{
    if (device->backend == PTREG_BACKEND_CUDA || device->backend == PTREG_BACKEND_OPENCL)
        snprintf(buf, size, "%s:%d", ptreg_backend_name(device->backend), device->index);
    else
        snprintf(buf, size, "%s", ptreg_backend_name(device->backend));
    return buf;
}

/* ---- the registry ---- */

static void cpu_model_name(char *name, size_t size)
{
    snprintf(name, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(name, size, "%s", colon);
            break;
        }
    }
    fclose(f);
}

static void describe_cpu(ptreg_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->device = (ptreg_device){PTREG_BACKEND_CPU, 0};
    cpu_model_name(info->name, sizeof info->name);
    snprintf(info->vendor, sizeof info->vendor, "host");
    snprintf(info->platform, sizeof info->platform, "ptreg CPU kernels, OpenMP");
    snprintf(info->version, sizeof info->version, "%s", isa_level_name(cpu_isa_level()));
    long procs = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->compute_units = procs > 0 ? (uint32_t)procs : 1;
    info->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    info->max_work_group = 1;
    info->fp64 = 1;
}

static void enumerate_backend(ptreg_backend backend)
{
    const backend_interface *ops = backend_ops(backend);
    char *note = backend_notes[backend];
    if (!ops) {
        snprintf(note, sizeof backend_notes[0], "this build has no %s backend", ptreg_backend_name(backend));
        return;
    }
    size_t cap = MAX_DEVICES - device_count;
    size_t found = ops->enumerate(device_list + device_count, cap, note, sizeof backend_notes[0]);
    found = found < cap ? found : cap;
    for (size_t i = device_count; i < device_count + found; i++)
        device_list[i].fma_contracts = -1; /* known once opened (probe_contraction) */
    device_count += found;
}

static void enumerate_locked(void)
{
    if (enumerated)
        return;
    describe_cpu(&device_list[0]);
    device_count = 1;
    enumerate_backend(PTREG_BACKEND_CUDA);
    enumerate_backend(PTREG_BACKEND_OPENCL);
    enumerated = 1;
}

void ptreg_devices(const ptreg_device_info **list, size_t *count)
{
    pthread_mutex_lock(&registry_lock);
    enumerate_locked();
    pthread_mutex_unlock(&registry_lock);
    *list = device_list;
    *count = device_count;
}

const char *ptreg_backend_note(ptreg_backend backend)
{
    if (backend != PTREG_BACKEND_CUDA && backend != PTREG_BACKEND_OPENCL)
        return "";
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    return backend_notes[backend];
}

static const ptreg_device_info *find_device(const ptreg_device *d, size_t *at)
{
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    for (size_t i = 0; i < count; i++)
        if (list[i].device.backend == d->backend &&
            (d->backend == PTREG_BACKEND_CPU || list[i].device.index == d->index)) {
            if (at)
                *at = i;
            return &list[i];
        }
    return NULL;
}

/* AUTO's choice: a CUDA GPU, else an OpenCL GPU (never a CPU driver such
 * as POCL: it is for tests, and slower than the CPU path), else the CPU. */
static ptreg_device auto_device(unsigned supported)
{
    /* a CPU-only operation must not pay for looking: the first look loads
     * the OpenCL ICD and its drivers, 25 ms with POCL */
    if (!(supported & ~PTREG_BACKEND_BIT(PTREG_BACKEND_CPU)))
        return (ptreg_device){PTREG_BACKEND_CPU, 0};
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    static const ptreg_backend order[] = {PTREG_BACKEND_CUDA, PTREG_BACKEND_OPENCL};
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++) {
        if (!(supported & PTREG_BACKEND_BIT(order[o])))
            continue;
        for (size_t i = 0; i < count; i++)
            if (list[i].device.backend == order[o] && (list[i].is_gpu || list[i].standin) && !list[i].for_testing)
                return list[i].device;
    }
    return (ptreg_device){PTREG_BACKEND_CPU, 0};
}

/* The devices a backend has, for messages: "cuda:0 (NVIDIA H100), ...". */
static void list_backend_devices(ptreg_backend backend, char *buf, size_t size)
{
    const ptreg_device_info *list;
    size_t count, used = 0;
    ptreg_devices(&list, &count);
    buf[0] = '\0';
    for (size_t i = 0; i < count && used + 1 < size; i++) {
        if (list[i].device.backend != backend)
            continue;
        char name[32];
        int w = snprintf(buf + used, size - used, "%s%s (%s)", used ? ", " : "",
                         ptreg_device_format(&list[i].device, name, sizeof name), list[i].name);
        used += w > 0 ? (size_t)w : 0;
    }
}

static ptreg_status check_requested(const ptreg_device *d, unsigned supported, const char *operation,
                                    const char *origin, ptreg_error *err)
{
    char name[32], have[256];
    ptreg_device_format(d, name, sizeof name);
    if (!(supported & PTREG_BACKEND_BIT(d->backend)))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s has no %s path%s: it runs on %s", operation, name, origin,
                               supported == PTREG_BACKEND_BIT(PTREG_BACKEND_CPU) ? "the CPU only" : "other devices");
    if (!ptreg_backend_built(d->backend))
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s on %s%s: this build has no %s backend", operation, name, origin,
                               ptreg_backend_name(d->backend));
    if (find_device(d, NULL))
        return PTREG_OK;
    list_backend_devices(d->backend, have, sizeof have);
    return ptreg_error_set(err, PTREG_ERR_ARG, "%s on %s%s: no such device (%s%s)", operation, name, origin,
                           have[0] ? "found: " : "", have[0] ? have : ptreg_backend_note(d->backend));
}

ptreg_status ptreg_device_resolve(const ptreg_device *request, unsigned supported, const char *operation,
                                  ptreg_device *resolved, ptreg_error *err)
{
    ptreg_device d = request ? *request : (ptreg_device){PTREG_BACKEND_AUTO, 0};
    const char *origin = "";
    supported |= PTREG_BACKEND_BIT(PTREG_BACKEND_CPU);
    if (d.backend == PTREG_BACKEND_AUTO) {
        const char *env = getenv("PTREG_DEVICE");
        if (env && *env) {
            if (ptreg_device_parse(env, &d))
                return ptreg_error_set(err, PTREG_ERR_ARG,
                                       "PTREG_DEVICE='%.64s' is not auto, cpu, cuda[:N] or opencl[:N]", env);
            origin = " (from PTREG_DEVICE)";
        }
    }
    if (d.backend == PTREG_BACKEND_AUTO) {
        *resolved = auto_device(supported);
        return PTREG_OK;
    }
    /* PTREG_DEVICE is a preference, as auto is: a step without a path on
     * that kind of device runs on the CPU; a device named in the call must
     * serve it (the error names the step). */
    if (d.backend == PTREG_BACKEND_CPU || (*origin && !(supported & PTREG_BACKEND_BIT(d.backend)))) {
        *resolved = (ptreg_device){PTREG_BACKEND_CPU, 0};
        return PTREG_OK;
    }
    ptreg_status st = check_requested(&d, supported, operation, origin, err);
    if (!st)
        *resolved = d;
    return st;
}

/* ---- opened devices ---- */

ptreg_status dev_fail(dev_handle *dev, ptreg_error *err, const char *call, const char *what, const char *code_name,
                      long code)
{
    return ptreg_error_set(err, PTREG_ERR_RUNTIME, "%s: %s failed%s%s: %s (%ld)", dev ? dev->label : "device", call,
                           what && *what ? " for " : "", what ? what : "", code_name ? code_name : "?", code);
}

static int env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

const char *ptreg_device_name(const ptreg_device *device)
{
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    for (size_t i = 0; i < count; i++)
        if (list[i].device.backend == device->backend && list[i].device.index == device->index)
            return list[i].name;
    return "device";
}

static void drop_programs(dev_handle *dev);
static ptreg_status probe_contraction(dev_handle *dev, ptreg_error *err);
static ptreg_status program_locked(dev_handle *dev, const kernel_program *program, const char *defines, dprogram **out,
                                   ptreg_error *err);

/* A device whose backend said it stopped working (a kernel faulted) is
 * closed and opened afresh, once nothing of the old one is in use. */
static ptreg_status reopen_if_faulted(dev_handle *dev, ptreg_error *err)
{
    char fault[sizeof dev->fault];
    dev_fault_mark(dev, NULL, fault, sizeof fault);
    if (!fault[0])
        return PTREG_OK;
    if (dev->live_buffers)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME,
                               "%s; it is unusable until the %zu buffers still on it (models, "
                               "indices) are freed",
                               fault, dev->live_buffers);
    drop_programs(dev);
    dev->ops->close(dev);
    pthread_mutex_lock(&dev->fault_lock);
    dev->fault[0] = '\0';
    pthread_mutex_unlock(&dev->fault_lock);
    dev->impl = NULL;
    return dev->ops->open(dev, err);
}

void dev_fault_mark(dev_handle *dev, const char *why, char *out, size_t size)
{
    pthread_mutex_lock(&dev->fault_lock);
    if (why && !dev->fault[0])
        snprintf(dev->fault, sizeof dev->fault, "%s", why);
    if (out)
        snprintf(out, size, "%s", dev->fault);
    pthread_mutex_unlock(&dev->fault_lock);
}

int dev_faulted(dev_handle *dev)
{
    pthread_mutex_lock(&dev->fault_lock);
    const int faulted = dev->fault[0] != '\0';
    pthread_mutex_unlock(&dev->fault_lock);
    return faulted;
}

static void free_handle(dev_handle *dev)
{
    pthread_mutex_destroy(&dev->lock);
    pthread_mutex_destroy(&dev->fault_lock);
    free(dev);
}

ptreg_status dev_get(const ptreg_device *device, dev_handle **out, ptreg_error *err)
{
    size_t at = 0; /* set when info is found */
    const ptreg_device_info *info = find_device(device, &at);
    const backend_interface *ops = backend_ops(device->backend);
    char name[32];
    ptreg_device_format(device, name, sizeof name);
    if (!info || !ops || device->backend == PTREG_BACKEND_CPU)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s is not a device this build can open", name);
    pthread_mutex_lock(&registry_lock);
    ptreg_status st = PTREG_OK;
    if (!opened[at]) {
        dev_handle *dev = calloc(1, sizeof *dev);
        if (!dev) {
            st = ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", name);
        } else {
            dev->ops = ops;
            dev->info = *info;
            pthread_mutex_init(&dev->lock, NULL);
            pthread_mutex_init(&dev->fault_lock, NULL);
            snprintf(dev->label, sizeof dev->label, "%s (%.120s)", name, info->name);
            dev->check_guards = env_flag("PTREG_DEVICE_GUARDS");
            dev->checked = env_flag("PTREG_DEVICE_CHECKED");
            const char *graphs = getenv("PTREG_DEVICE_GRAPHS");
            dev->no_graphs = graphs && !strcmp(graphs, "0");
            /* the tests run the kernels' single-precision variants on
             * devices that have double precision too */
            dev->info.fp64 = dev->info.fp64 && !env_flag("PTREG_DEVICE_NO_FP64");
            st = ops->open(dev, err);
            if (st)
                free_handle(dev);
            else
                opened[at] = dev;
        }
    }
    if (!st && opened[at] && dev_faulted(opened[at])) {
        pthread_mutex_lock(&opened[at]->lock);
        st = reopen_if_faulted(opened[at], err);
        pthread_mutex_unlock(&opened[at]->lock);
        if (st && !opened[at]->impl) { /* closed, not opened again: the next call tries anew */
            free_handle(opened[at]);
            opened[at] = NULL;
        }
    }
    *out = opened[at];
    pthread_mutex_unlock(&registry_lock);
    return st;
}

ptreg_status ptreg_device_probe(const ptreg_device *device, ptreg_device_info *info, ptreg_error *err)
{
    const ptreg_device_info *listed = find_device(device, NULL);
    char name[32];
    if (!listed)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: no such device",
                               ptreg_device_format(device, name, sizeof name));
    if (device->backend == PTREG_BACKEND_CPU) {
        *info = *listed;
        return PTREG_OK;
    }
    dev_handle *dev;
    ptreg_status st = dev_get(device, &dev, err);
    if (st)
        return st;
    pthread_mutex_lock(&dev->lock);
    st = dev->info.fma_contracts < 0 ? probe_contraction(dev, err) : PTREG_OK;
    *info = dev->info;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

/* ---- programs ---- */

struct dprogram {
    dprogram *next;
    dev_handle *dev;
    const kernel_program *program;
    char *defines;
    void *handle;
    dkernel **kernels;
    size_t kernel_count;
};

static void program_free(dprogram *p)
{
    for (size_t k = 0; k < p->kernel_count; k++) {
        if (p->dev->ops->kernel_free)
            p->dev->ops->kernel_free(p->dev, p->kernels[k]->handle);
        free(p->kernels[k]);
    }
    free(p->kernels);
    if (p->handle)
        p->dev->ops->program_free(p->dev, p->handle);
    free(p->defines);
    free(p);
}


static const char *const basics_files[] = {"device/basics.cl", NULL};
const kernel_program basics_kernels = {"basics", basics_files};


/* The dialect, then each file, each announced by a #line so that compiler
 * messages name the file and line. */
ptreg_status kernel_program_source(const kernel_program *program, char **out, ptreg_error *err)
{
    const char *dialect_name = "device/dialect.h";
    size_t total = 1, size;
    if (!kernel_source(dialect_name, &size))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "kernel source %s is not embedded", dialect_name);
    total += size + 64;
    for (const char *const *f = program->files; *f; f++) {
        if (!kernel_source(*f, &size))
            return ptreg_error_set(err, PTREG_ERR_RUNTIME, "kernel source %s is not embedded", *f);
        total += size + 64 + strlen(*f);
    }
    char *text = malloc(total);
    if (!text)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory for the %s kernels", program->name);
    size_t used = (size_t)snprintf(text, total, "%s\n", kernel_source(dialect_name, &size));
    for (const char *const *f = program->files; *f; f++)
        used += (size_t)snprintf(text + used, total - used, "#line 1 \"%s\"\n%s\n", *f, kernel_source(*f, &size));
    *out = text;
    return PTREG_OK;
}

static char *full_defines(const dev_handle *dev, const char *defines)
{
    const char *fp64 = dev->info.fp64 ? "-DPTREG_FP64=1 " : "";
    size_t size = strlen(fp64) + strlen(defines ? defines : "") + 1;
    char *all = malloc(size);
    if (all)
        snprintf(all, size, "%s%s", fp64, defines ? defines : "");
    return all;
}

static ptreg_status program_locked(dev_handle *dev, const kernel_program *program, const char *defines, dprogram **out,
                                   ptreg_error *err)
{
    /* the first program a device builds is the probe's: its failure is
     * then the computation's, reported as any other of its device calls
     * (a failed opening would be met by callers that pass over a device
     * they cannot open, as the tuner's lookup does, and opened again) */
    if (dev->info.fma_contracts < 0 && program != &probe_kernels) {
        ptreg_status st = probe_contraction(dev, err);
        if (st)
            return st;
    }
    char *all = full_defines(dev, defines);
    if (!all)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    for (dprogram *p = dev->programs; p; p = p->next)
        if (p->program == program && !strcmp(p->defines, all)) {
            free(all);
            *out = p;
            return PTREG_OK;
        }
    dprogram *p = calloc(1, sizeof *p);
    if (!p) {
        free(all);
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    }
    p->dev = dev, p->program = program, p->defines = all;
    char *source = NULL;
    ptreg_status st = kernel_program_source(program, &source, err);
    if (!st)
        st = dev->ops->build(dev, source, all, program->name, &p->handle, err);
    free(source);
    if (st) {
        program_free(p);
        return st;
    }
    p->next = dev->programs;
    dev->programs = p;
    *out = p;
    return PTREG_OK;
}

ptreg_status dev_program(dev_handle *dev, const kernel_program *program, const char *defines, dprogram **out,
                         ptreg_error *err)
{
    pthread_mutex_lock(&dev->lock);
    ptreg_status st = program_locked(dev, program, defines, out, err);
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static ptreg_status kernel_locked(dprogram *p, const char *name, dkernel **out, ptreg_error *err)
{
    for (size_t k = 0; k < p->kernel_count; k++)
        if (!strcmp(p->kernels[k]->name, name)) {
            *out = p->kernels[k];
            return PTREG_OK;
        }
    dkernel **grown = realloc(p->kernels, (p->kernel_count + 1) * sizeof *grown);
    dkernel *k = grown ? calloc(1, sizeof *k) : NULL;
    if (grown)
        p->kernels = grown;
    if (!k)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    k->dev = p->dev;
    snprintf(k->name, sizeof k->name, "%s", name);
    ptreg_status st = p->dev->ops->kernel(p->dev, p->handle, name, &k->handle, &k->max_threads, err);
    if (st) {
        free(k);
        return st;
    }
    p->kernels[p->kernel_count++] = k;
    *out = k;
    return PTREG_OK;
}

ptreg_status dev_kernel(dprogram *p, const char *name, dkernel **out, ptreg_error *err)
{
    pthread_mutex_lock(&p->dev->lock);
    ptreg_status st = kernel_locked(p, name, out, err);
    pthread_mutex_unlock(&p->dev->lock);
    return st;
}

/* ---- the contraction probe ---- */

static const char *const probe_files[] = {"device/probe.cl", NULL};
const kernel_program probe_kernels = {"probe", probe_files};

/* One thread's a * b + c of the probe kernel (probe.cl) into *out, the
 * backend called directly: the probe is the device's set-up, not a
 * computation of the caller's (not counted in its device stats). */
static ptreg_status probe_one(dev_handle *dev, dprogram *p, const char *name, const karg *abc, void *out, size_t size,
                              ptreg_error *err)
{
    dkernel *k;
    ptreg_status st = kernel_locked(p, name, &k, err);
    dbuf result = {dev, NULL, size};
    if (!st)
        st = dev->ops->alloc(dev, size, &result.handle, err);
    if (st)
        return st;
    const karg args[] = {abc[0], abc[1], abc[2], KARG_BUF(&result)};
    const size_t one[3] = {1, 1, 1};
    st = dev->ops->launch(dev, k->handle, k->name, 1, one, one, 4, args, err);
    st = st ? st : dev->ops->read(dev, result.handle, 0, out, size, err);
    dev->ops->free(dev, result.handle);
    return st;
}

/* Whether the device fuses a * b + c into one rounding where the kernels
 * ask it not to (dialect.h): NVIDIA's OpenCL may ignore FP_CONTRACT OFF.
 * Such a device's answers are within the parity suite's tolerances of the
 * CPU's, not its bits (info.fma_contracts; ptreg devices says so). Run
 * once per opened device, before its first program is built (or by
 * ptreg_device_probe), under the device's lock; after a failure it is
 * tried again. */
static ptreg_status probe_contraction(dev_handle *dev, ptreg_error *err)
{
    dprogram *p;
    ptreg_status st = program_locked(dev, &probe_kernels,
                                     env_flag("PTREG_DEVICE_PROBE_FUSED") ? "-DPTREG_PROBE_FUSED=1" : "", &p, err);
    /* a = b = 1 + 2^-12, c = -(1 + 2^-11): 0 unfused, 2^-24 fused */
    const float a = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
    const karg abc[] = {KARG_F32(a), KARG_F32(a), KARG_F32(c)};
    float sum = 0.0f;
    st = st ? st : probe_one(dev, p, "ptreg_probe_fma", abc, &sum, sizeof sum, err);
    double sum64 = 0.0;
    if (!st && dev->info.fp64) {
        const double a64 = 1.0 + 0x1p-27, c64 = -(1.0 + 0x1p-26);
        const karg abc64[] = {KARG_F64(a64), KARG_F64(a64), KARG_F64(c64)};
        st = probe_one(dev, p, "ptreg_probe_fma64", abc64, &sum64, sizeof sum64, err);
    }
    if (st)
        return st;
    dev->info.fma_contracts = sum != 0.0f || sum64 != 0.0;
    return PTREG_OK;
}

static void drop_programs(dev_handle *dev)
{
    while (dev->programs) {
        dprogram *next = dev->programs->next;
        program_free(dev->programs);
        dev->programs = next;
    }
}

const engine engine_cpu = {PTREG_BACKEND_BIT(PTREG_BACKEND_CPU), NULL};

ptreg_status engine_cpu_only(const char *what, const ptreg_device_info *device, ptreg_error *err)
{
    char name[32];
    return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s runs on the CPU only, not on %s", what,
                           ptreg_device_format(&device->device, name, sizeof name));
}

static size_t engine_on(const engine *const *engines, size_t count, ptreg_backend backend)
{
    for (size_t i = 0; i < count; i++)
        if (engines[i]->backends & PTREG_BACKEND_BIT(backend))
            return i;
    return count;
}

ptreg_status engine_choose(const engine *const *engines, size_t count, const ptreg_device *request, const void *options,
                           const char *operation, ptreg_device *on, const engine **chosen, ptreg_error *err)
{
    unsigned backends = 0;
    for (size_t i = 0; i < count; i++)
        backends |= engines[i]->backends;
    const ptreg_status st = ptreg_device_resolve(request, backends, operation, on, err);
    if (st)
        return st;
    const size_t e = engine_on(engines, count, on->backend);
    if (e == count) /* the CPU, which resolve adds, without a CPU engine in the list */
        return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "%s has no CPU engine", operation);
    /* only an engine that asks looks the device up: the CPU's never makes a
     * CPU-only operation enumerate the GPUs (25 ms with POCL) */
    const ptreg_device_info *info = engines[e]->supports ? find_device(on, NULL) : NULL;
    if (info && engines[e]->supports(options, info, NULL)) {
        const int named = request && request->backend != PTREG_BACKEND_AUTO;
        if (named || on->backend == PTREG_BACKEND_CPU)
            return engines[e]->supports(options, info, err);
        *on = (ptreg_device){PTREG_BACKEND_CPU, 0};
        return engine_choose(engines, count, on, options, operation, on, chosen, err);
    }
    if (chosen)
        *chosen = engines[e];
    return PTREG_OK;
}

void ptreg_devices_release(void)
{
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < MAX_DEVICES; i++) {
        dev_handle *dev = opened[i];
        if (!dev)
            continue;
        drop_programs(dev);
        if (dev->impl)
            dev->ops->close(dev);
        free_handle(dev);
        opened[i] = NULL;
    }
    pthread_mutex_unlock(&registry_lock);
}

/* ---- what the calling thread asked of devices ---- */

/* Per thread, so that a call's counts (the difference around it) are its
 * own whatever other threads run, and no counting needs a lock. */
static _Thread_local ptreg_device_stats thread_stats;

void ptreg_device_stats_get(ptreg_device_stats *stats) { *stats = thread_stats; }

void ptreg_device_stats_since(const ptreg_device_stats *before, ptreg_device_stats *delta)
{
    delta->launches = thread_stats.launches - before->launches;
    delta->bytes_to = thread_stats.bytes_to - before->bytes_to;
    delta->bytes_from = thread_stats.bytes_from - before->bytes_from;
    delta->allocs = thread_stats.allocs - before->allocs;
    delta->graphs = thread_stats.graphs - before->graphs;
}

/* ---- graphs: what a thread records ---- */

struct dgraph {
    dev_handle *dev;
    dlaunch *launches;
    size_t count, cap;
    void *native; /* the backend's graph; NULL: replayed */
};

/* The graph the calling thread is recording, if any. */
static _Thread_local dgraph *recording;

static int is_recording(const dev_handle *dev) { return recording && recording->dev == dev; }

static ptreg_status refuse_while_recording(const dev_handle *dev, const char *what, ptreg_error *err)
{
    return ptreg_error_set(err, PTREG_ERR_RUNTIME, "%s: %s while recording a graph (a graph holds launches only)",
                           dev->label, what);
}

/* ---- buffers ---- */

ptreg_status dbuf_alloc(dev_handle *dev, size_t bytes, dbuf **out, ptreg_error *err)
{
    if (is_recording(dev))
        return refuse_while_recording(dev, "an allocation", err);
    /* whole words, so that fills and guards stay aligned */
    size_t padded = (bytes + 3) / 4 * 4;
    dbuf *b = calloc(1, sizeof *b);
    if (!b)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "out of memory");
    b->dev = dev, b->bytes = padded;
    ptreg_status st = dev->ops->alloc(dev, padded + GUARD_BYTES, &b->handle, err);
    if (!st)
        st = dev->ops->fill(dev, b->handle, padded, GUARD_BYTES, GUARD_WORD, err);
    if (st) {
        if (b->handle)
            dev->ops->free(dev, b->handle);
        free(b);
        return st;
    }
    __atomic_add_fetch(&dev->live_buffers, 1, __ATOMIC_RELAXED);
    thread_stats.allocs++;
    *out = b;
    return PTREG_OK;
}

static void check_guard(dbuf *b)
{
    uint32_t words[GUARD_BYTES / 4];
    ptreg_error err;
    if (b->dev->ops->read(b->dev, b->handle, b->bytes, words, sizeof words, &err)) {
        __atomic_add_fetch(&b->dev->guard_violations, 1, __ATOMIC_RELAXED);
        return;
    }
    for (size_t i = 0; i < GUARD_BYTES / 4; i++)
        if (words[i] != GUARD_WORD) {
            __atomic_add_fetch(&b->dev->guard_violations, 1, __ATOMIC_RELAXED);
            return;
        }
}

void dbuf_free(dbuf *b)
{
    if (!b)
        return;
    if (b->dev->check_guards && !dev_faulted(b->dev))
        check_guard(b);
    b->dev->ops->free(b->dev, b->handle);
    __atomic_sub_fetch(&b->dev->live_buffers, 1, __ATOMIC_RELAXED);
    free(b);
}

static ptreg_status out_of_range(const dbuf *b, const char *op, size_t offset, size_t bytes, ptreg_error *err)
{
    return ptreg_error_set(err, PTREG_ERR_ARG, "%s: %s of %zu bytes at %zu outside a buffer of %zu", b->dev->label, op,
                           bytes, offset, b->bytes);
}

ptreg_status dbuf_write(dbuf *b, size_t offset, const void *src, size_t bytes, ptreg_error *err)
{
    if (offset > b->bytes || bytes > b->bytes - offset)
        return out_of_range(b, "write", offset, bytes, err);
    if (is_recording(b->dev))
        return refuse_while_recording(b->dev, "a write", err);
    thread_stats.bytes_to += bytes;
    return bytes ? b->dev->ops->write(b->dev, b->handle, offset, src, bytes, err) : PTREG_OK;
}

ptreg_status dbuf_read(const dbuf *b, size_t offset, void *dst, size_t bytes, ptreg_error *err)
{
    if (offset > b->bytes || bytes > b->bytes - offset)
        return out_of_range(b, "read", offset, bytes, err);
    if (is_recording(b->dev))
        return refuse_while_recording(b->dev, "a read", err);
    thread_stats.bytes_from += bytes;
    return bytes ? b->dev->ops->read(b->dev, b->handle, offset, dst, bytes, err) : PTREG_OK;
}

ptreg_status dbuf_fill(dbuf *b, size_t offset, size_t bytes, uint32_t word, ptreg_error *err)
{
    if (offset > b->bytes || bytes > b->bytes - offset || offset % 4 || bytes % 4)
        return out_of_range(b, "fill", offset, bytes, err);
    if (is_recording(b->dev))
        return refuse_while_recording(b->dev, "a fill", err);
    return bytes ? b->dev->ops->fill(b->dev, b->handle, offset, bytes, word, err) : PTREG_OK;
}

ptreg_status dbuf_copy(dbuf *dst, size_t dst_offset, const dbuf *src, size_t src_offset, size_t bytes, ptreg_error *err)
{
    if (dst_offset > dst->bytes || bytes > dst->bytes - dst_offset)
        return out_of_range(dst, "copy", dst_offset, bytes, err);
    if (src_offset > src->bytes || bytes > src->bytes - src_offset)
        return out_of_range(src, "copy", src_offset, bytes, err);
    if (is_recording(dst->dev))
        return refuse_while_recording(dst->dev, "a copy", err);
    return bytes ? dst->dev->ops->copy(dst->dev, dst->handle, dst_offset, src->handle, src_offset, bytes, err)
                 : PTREG_OK;
}

ptreg_status dbuf_upload(dev_handle *dev, const void *src, size_t bytes, dbuf **out, ptreg_error *err)
{
    ptreg_status st = dbuf_alloc(dev, bytes, out, err);
    if (!st && (st = dbuf_write(*out, 0, src, bytes, err))) {
        dbuf_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- launches and events ---- */

static ptreg_status record_launch(const dkernel *k, unsigned dims, const size_t groups[3], const size_t local[3],
                                  size_t nargs, const karg *args, ptreg_error *err)
{
    dgraph *g = recording;
    if (nargs > PTREG_GRAPH_MAX_ARGS)
        return ptreg_error_set(err, PTREG_ERR_ARG, "%s: kernel %s: %zu arguments, a graph keeps %d", k->dev->label,
                               k->name, nargs, PTREG_GRAPH_MAX_ARGS);
    if (g->count == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        dlaunch *grown = realloc(g->launches, cap * sizeof *grown);
        if (!grown)
            return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory recording a graph", k->dev->label);
        g->launches = grown, g->cap = cap;
    }
    dlaunch *l = &g->launches[g->count++];
    memset(l, 0, sizeof *l);
    l->kernel = k, l->dims = dims, l->nargs = nargs;
    for (unsigned d = 0; d < 3; d++)
        l->groups[d] = d < dims ? groups[d] : 1, l->local[d] = d < dims ? local[d] : 1;
    memcpy(l->args, args, nargs * sizeof *args);
    return PTREG_OK;
}

ptreg_status dev_record_begin(dev_handle *dev, ptreg_error *err)
{
    if (recording)
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "%s: a graph is being recorded on this thread already",
                               dev->label);
    if (!(recording = calloc(1, sizeof *recording)))
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "%s: out of memory", dev->label);
    recording->dev = dev;
    return PTREG_OK;
}

void dev_graph_free(dgraph *g)
{
    if (!g)
        return;
    if (g->native) {
        pthread_mutex_lock(&g->dev->lock);
        g->dev->ops->graph_free(g->dev, g->native);
        pthread_mutex_unlock(&g->dev->lock);
    }
    free(g->launches);
    free(g);
}

/* A checked device (PTREG_DEVICE_CHECKED) replays: each launch is waited
 * for, so a fault names its kernel; PTREG_DEVICE_GRAPHS=0 replays too. */
ptreg_status dev_record_end(dev_handle *dev, dgraph **out, ptreg_error *err)
{
    *out = NULL;
    dgraph *g = recording;
    if (!is_recording(dev))
        return ptreg_error_set(err, PTREG_ERR_RUNTIME, "%s: no graph is being recorded on this thread", dev->label);
    recording = NULL;
    if (!g->count) {
        dev_graph_free(g);
        return PTREG_OK;
    }
    ptreg_status st = PTREG_OK;
    if (dev->ops->graph_build && !dev->checked && !dev->no_graphs) {
        pthread_mutex_lock(&dev->lock);
        st = dev->ops->graph_build(dev, g->launches, g->count, &g->native, err);
        pthread_mutex_unlock(&dev->lock);
    }
    if (st) {
        dev_graph_free(g);
        return st;
    }
    *out = g;
    return PTREG_OK;
}

size_t dev_graph_kernels(const dgraph *g) { return g ? g->count : 0; }

ptreg_status dev_graph_launch(const dgraph *g, ptreg_error *err)
{
    if (is_recording(g->dev))
        return refuse_while_recording(g->dev, "a graph's launch", err);
    thread_stats.graphs++;
    thread_stats.launches += g->count;
    ptreg_status st = PTREG_OK;
    if (g->native) {
        pthread_mutex_lock(&g->dev->lock);
        st = g->dev->ops->graph_launch(g->dev, g->native, err);
        pthread_mutex_unlock(&g->dev->lock);
        return st;
    }
    for (size_t i = 0; !st && i < g->count; i++) {
        const dlaunch *l = &g->launches[i];
        pthread_mutex_lock(&g->dev->lock);
        st = g->dev->ops->launch(g->dev, l->kernel->handle, l->kernel->name, l->dims, l->groups, l->local, l->nargs,
                                 l->args, err);
        pthread_mutex_unlock(&g->dev->lock);
    }
    return st;
}

size_t dev_kernel_limit(const dkernel *k)
{
    const size_t device = k->dev->info.max_work_group;
    return k->max_threads && (!device || k->max_threads < device) ? k->max_threads : device;
}

ptreg_status dev_kernel_fits(const dkernel *k, size_t threads, ptreg_error *err)
{
    if (threads <= dev_kernel_limit(k))
        return PTREG_OK;
    return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                           "%s: kernel %s in work-groups of %zu threads: it runs at most %zu here (the kernel's own "
                           "limit, which its registers and local memory decide: %zu; the device's: %zu)",
                           k->dev->label, k->name, threads, dev_kernel_limit(k), k->max_threads,
                           k->dev->info.max_work_group);
}

ptreg_status dev_launch_groups(const dkernel *k, unsigned dims, const size_t groups[3], const size_t local[3],
                               size_t nargs, const karg *args, ptreg_error *err)
{
    size_t threads = 1;
    for (unsigned d = 0; d < dims; d++) {
        if (groups[d] == 0)
            return PTREG_OK; /* nothing to do */
        threads *= local[d];
    }
    for (unsigned d = 0; d < dims; d++)
        if (!dev_grid_fits(groups[d], local[d]))
            return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED,
                                   "%s: kernel %s: %zu work-groups of %zu threads: more than a launch takes (at most "
                                   "%u groups, 2^32 threads: the kernels' ids are 32-bit)",
                                   k->dev->label, k->name, groups[d], local[d], DEV_GRID_GROUPS_MAX);
    ptreg_status st = dev_kernel_fits(k, threads, err);
    if (st)
        return st;
    if (is_recording(k->dev))
        return record_launch(k, dims, groups, local, nargs, args, err);
    thread_stats.launches++;
    pthread_mutex_lock(&k->dev->lock);
    st = k->dev->ops->launch(k->dev, k->handle, k->name, dims, groups, local, nargs, args, err);
    pthread_mutex_unlock(&k->dev->lock);
    return st;
}

ptreg_status dev_launch(const dkernel *k, size_t threads, size_t local, size_t nargs, const karg *args,
                        ptreg_error *err)
{
    const size_t groups[3] = {(threads + local - 1) / local, 1, 1}, sizes[3] = {local, 1, 1};
    return dev_launch_groups(k, 1, groups, sizes, nargs, args, err);
}

ptreg_status dev_finish(dev_handle *dev, ptreg_error *err)
{
    return is_recording(dev) ? refuse_while_recording(dev, "a wait", err) : dev->ops->finish(dev, err);
}

ptreg_status dev_event_record(dev_handle *dev, devent *event, ptreg_error *err)
{
    event->dev = dev;
    event->handle = NULL;
    return dev->ops->event_record(dev, &event->handle, err);
}

ptreg_status dev_event_elapsed(const devent *start, const devent *end, double *ms, ptreg_error *err)
{
    return start->dev->ops->event_elapsed(start->dev, start->handle, end->handle, ms, err);
}

void dev_event_free(devent *event)
{
    if (event->handle)
        event->dev->ops->event_free(event->dev, event->handle);
    event->handle = NULL;
}

#ifndef PTREG_HAVE_CUDA
/* Without the CUDA backend there is no NVRTC to load. */
int nvrtc_available(char *note, size_t note_size)
{
    if (note)
        snprintf(note, note_size, "this build has no CUDA backend");
    return 0;
}

ptreg_status nvrtc_compile(const char *source, const char *defines, const char *label, int arch, int ptx, int verbose,
                           nvrtc_output *out, ptreg_error *err)
{
    (void)source, (void)defines, (void)label, (void)arch, (void)ptx, (void)verbose;
    memset(out, 0, sizeof *out);
    return ptreg_error_set(err, PTREG_ERR_UNSUPPORTED, "this build has no CUDA backend");
}

void nvrtc_output_free(nvrtc_output *out) { memset(out, 0, sizeof *out); }
#endif
