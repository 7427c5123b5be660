/* The device list's table (ptreg/results.h): what ptreg devices --json
 * and ptreg.devices() say of each device, declared once (a device's probe,
 * fma_contracts, is the command line's: Python's list is not probed). */
#include "core/results_table.h"
#include "ptreg/device.h"

static const char *backend_name(int value) { return ptreg_backend_name((ptreg_backend)value); }

#define R ptreg_device_info
static const ptreg_result_field device_rows[] = {
    RESULT_FIELD(R, device, DEVICE, "", "the name device options take: cpu, cuda:0, opencl:1"),
    RESULT_ENUM(R, device.backend, "backend", backend_name, "cpu, cuda or opencl"),
    RESULT_FIELD(R, name, TEXT, "", "the device's name"),
    RESULT_FIELD(R, vendor, TEXT, "", "its vendor"),
    RESULT_FIELD(R, platform, TEXT, "", "the OpenCL platform, or the CUDA driver and NVRTC"),
    RESULT_FIELD(R, version, TEXT, "", "sm_90, the OpenCL version, or the CPU's instruction set"),
    RESULT_AT(R, is_gpu, "gpu", BOOL, "", "a GPU"),
    RESULT_FIELD(R, for_testing, BOOL, "", "a CPU OpenCL driver (POCL): never chosen by auto"),
    RESULT_FIELD(R, memory_bytes, U64, "bytes", "its memory"),
    RESULT_FIELD(R, compute_units, U32, "", "its compute units (multiprocessors)"),
    RESULT_FIELD(R, local_memory_bytes, U64, "bytes", "local (shared) memory per work group"),
    RESULT_FIELD(R, max_work_group, SIZE, "", "the largest work group"),
    RESULT_FIELD(R, fp64, BOOL, "", "double precision")};
#undef R
RESULT_TABLE(ptreg_device_info_table, "device", ptreg_device_info, device_rows)
