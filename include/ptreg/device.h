/* ptreg devices: where an algorithm runs. The CPU (with its instruction set),
 * each CUDA GPU (the driver API and NVRTC, loaded at run time) and each
 * OpenCL device. Every algorithm takes a ptreg_device in its options and
 * resolves it with ptreg_device_resolve; the CPU path is the reference that
 * every device path is tested against. */
#ifndef PTREG_DEVICE_H
#define PTREG_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ptreg_backend {
    PTREG_BACKEND_AUTO = 0, /* a request only: see ptreg_device_resolve */
    PTREG_BACKEND_CPU,
    PTREG_BACKEND_CUDA,
    PTREG_BACKEND_OPENCL
} ptreg_backend;

/* A device: a backend and the device's number among that backend's
 * (cuda:N, opencl:N; 0 for cpu and auto). Zero-initialised, it is auto. */
typedef struct ptreg_device {
    ptreg_backend backend;
    int index;
} ptreg_device;

/* Which backends an operation has a path for: a mask of PTREG_BACKEND_BIT. */
#define PTREG_BACKEND_BIT(b) (1u << (unsigned)(b))

PTREG_API const char *ptreg_backend_name(ptreg_backend backend);
/* Whether this build has the backend (CUDA and OpenCL are build options). */
PTREG_API int ptreg_backend_built(ptreg_backend backend);

/* "auto", "cpu", "cuda", "cuda:N", "opencl", "opencl:N" ("cuda" is cuda:0).
 * Returns -1 for anything else. */
PTREG_API int ptreg_device_parse(const char *text, ptreg_device *device);
/* "cpu", "cuda:0", ...; returns buf. */
PTREG_API const char *ptreg_device_format(const ptreg_device *device, char *buf, size_t size);

typedef struct ptreg_device_info {
    ptreg_device device;
    char name[128];
    char vendor[64];
    char platform[96]; /* OpenCL platform, or "CUDA driver 13.0, NVRTC 13.0" */
    char version[64];  /* "sm_90", "OpenCL 3.0 ...", or the CPU's ISA */
    int is_gpu;
    int for_testing; /* a CPU OpenCL driver (POCL): never chosen by auto */
    uint64_t memory_bytes;
    uint32_t compute_units;
    uint64_t local_memory_bytes;
    size_t max_work_group;
    int fp64;
    int standin; /* the CUDA driver stand-in of the tests (tests/cuda_standin): never a real GPU */
    /* Whether the device fuses a*b + c into one rounding where ptreg's
     * kernels ask it not to (NVIDIA's OpenCL may ignore FP_CONTRACT OFF):
     * its answers are then within the device tolerances of the CPU's, not
     * the CPU's bits. Probed on the device's first use: -1 (not known) in
     * ptreg_devices' list for a GPU device; see ptreg_device_probe. */
    int fma_contracts;
} ptreg_device_info;

/* Every device found, the CPU first; enumerated once per process (libraries
 * missing mean no devices of that backend, see ptreg_backend_note). The
 * list belongs to the library. */
PTREG_API void ptreg_devices(const ptreg_device_info **list, size_t *count);
/* A device's name ("NVIDIA H100 80GB HBM3", the CPU's model ...) from the
 * list; "device" when it is not there. The string belongs to the library. */
PTREG_API const char *ptreg_device_name(const ptreg_device *device);
/* The instruction set the CPU kernels run on now: "avx512", "avx2" or
 * "generic", the best this CPU has, capped by env PTREG_ISA. */
PTREG_API const char *ptreg_cpu_isa_name(void);
/* Why a backend has no devices, or cannot run on those it has ("" when all
 * is well, or it has not been looked for): the library that was not found,
 * the driver's error, an NVRTC newer than the CUDA driver ... */
PTREG_API const char *ptreg_backend_note(ptreg_backend backend);

/* A device's description with what only an opened device can say
 * (fma_contracts): the device is opened as a computation on it would open
 * it (a context, and one small kernel run) and stays open for later calls
 * (ptreg_devices_release). The CPU needs no opening. An error names the
 * device and the call that failed. */
PTREG_API ptreg_status ptreg_device_probe(const ptreg_device *device, ptreg_device_info *info, ptreg_error *err);

/* The device an operation runs on. `supported` holds the backends the
 * operation has a path for (the CPU is always among them). AUTO takes env
 * PTREG_DEVICE when it is set, else the first CUDA GPU, else the first
 * OpenCL GPU, else the CPU, among the supported backends. A device asked
 * for (here or by PTREG_DEVICE) that the operation cannot use, that this
 * build lacks or that is not present is PTREG_ERR_ARG with a message naming
 * the operation and the device: never a silent run on the CPU. */
PTREG_API ptreg_status ptreg_device_resolve(const ptreg_device *request, unsigned supported, const char *operation,
                                            ptreg_device *resolved, ptreg_error *err);

/* Closes every device ptreg opened (contexts, streams, compiled kernels):
 * for a program that is done with the GPU, or a leak checker. Every model
 * and buffer on them must be gone first. Later use opens them again. */
PTREG_API void ptreg_devices_release(void);

/* What the calling thread has asked of devices since it started: kernel
 * launches, bytes copied from the host to a device and back (copies within
 * a device are not counted), device buffers allocated, and graphs run
 * (recorded sequences of launches started by one call: a CUDA graph, or
 * the launches again where the backend has no graphs; each graph's kernels
 * count as launches too). Each thread
 * counts its own, so the difference of two reads around a call is that
 * call's whatever other threads do. The counts depend on the work alone:
 * POCL, the CUDA driver stand-in and a GPU give the same. */
typedef struct ptreg_device_stats {
    uint64_t launches;
    uint64_t bytes_to, bytes_from;
    uint64_t allocs;
    uint64_t graphs;
} ptreg_device_stats;

PTREG_API void ptreg_device_stats_get(ptreg_device_stats *stats);
/* The counts since `before` (a ptreg_device_stats_get of this thread). */
PTREG_API void ptreg_device_stats_since(const ptreg_device_stats *before, ptreg_device_stats *delta);

#ifdef __cplusplus
}
#endif

#endif
