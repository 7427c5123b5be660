/* ptreg devices: what ptreg can run on here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/json.h"
#include "ptreg/device.h"
#include "ptreg/icp.h"

static const cli_option devices_options[] = {
    CLI_OPT_JSON,
};

const cli_command cli_cmd_devices = CLI_COMMAND(
    "devices", "[options]", "List the devices ptreg finds: the CPU, CUDA GPUs and OpenCL devices.",
    "Each line gives the name to pass to --device (cpu, cuda:N, opencl:N), the device's\n"
    "name, backend, memory, compute units, local (shared) memory per work-group and\n"
    "whether it has double precision. Each GPU device is opened (a context and one tiny\n"
    "kernel) to see whether it fuses a*b+c into one rounding although ptreg's kernels ask\n"
    "it not to (NVIDIA's OpenCL may): such a device gives answers within the device\n"
    "tolerances of the CPU's, not the CPU's bits (--json: fma_contracts and bit_exact).\n"
    "--device auto takes env PTREG_DEVICE when set,\n"
    "else the first CUDA GPU, else the first OpenCL GPU, else the CPU, for commands that\n"
    "have a path on that kind of device; CPU OpenCL drivers (POCL) are listed but never\n"
    "chosen by auto: they are for testing the kernels, and slower than the CPU path.\n"
    "The CUDA backend loads libcuda.so.1 and NVRTC (libnvrtc.so, or env PTREG_NVRTC) at\n"
    "run time and caches compiled kernels in $XDG_CACHE_HOME/ptreg/kernels (env\n"
    "PTREG_KERNEL_CACHE: another folder, or off); the OpenCL backend loads libOpenCL.so.1.",
    devices_options, 0, 0);

static double gib(uint64_t bytes) { return (double)bytes / (1024.0 * 1024.0 * 1024.0); }

/* The device's description as opened (ptreg_device_probe), or the list's
 * with why it could not be opened. */
typedef struct probed_device {
    ptreg_device_info info;
    char error[PTREG_ERROR_MESSAGE_MAX];
} probed_device;

/* PTREG_ERR_NOMEM: this run's failure, not the device's (the command
 * fails, printing nothing); any other refusal is the device's, said. */
static ptreg_status probe_device(const ptreg_device_info *listed, probed_device *p, ptreg_error *err)
{
    p->error[0] = '\0';
    ptreg_status st = ptreg_device_probe(&listed->device, &p->info, err);
    if (st == PTREG_ERR_NOMEM)
        return st;
    if (st) {
        p->info = *listed;
        snprintf(p->error, sizeof p->error, "%s", err->message);
    }
    return PTREG_OK;
}

static void print_device(const probed_device *p)
{
    const ptreg_device_info *d = &p->info;
    char name[32];
    ptreg_device_format(&d->device, name, sizeof name);
    printf("  %-10s %s\n", name, d->name);
    if (d->device.backend == PTREG_BACKEND_CPU) {
        printf("             %s kernels, %u threads, %.1f GiB\n", d->version, d->compute_units, gib(d->memory_bytes));
        return;
    }
    const char *kind = d->is_gpu ? "GPU"
                       : d->standin
                           ? (d->for_testing ? "the CUDA driver stand-in on POCL: for tests, never a real GPU, "
                                               "chosen by auto only under with-cuda-standin.sh --auto"
                                             : "the CUDA driver stand-in on POCL: for tests, never a real GPU")
                       : d->for_testing ? "CPU driver: for tests, never chosen by auto"
                                        : "not a GPU";
    printf("             %s, %s; %s\n", d->platform, d->version, kind);
    printf("             %.1f GiB, %u compute units, %llu KiB local memory, work-groups up to %zu, fp64 %s\n",
           gib(d->memory_bytes), d->compute_units, (unsigned long long)(d->local_memory_bytes / 1024),
           d->max_work_group, d->fp64 ? "yes" : "no");
    if (d->fma_contracts > 0)
        printf("             not bit-exact: it fuses a*b+c into one rounding despite FP_CONTRACT OFF (answers "
               "within tolerance of the CPU's)\n");
    else if (!d->fma_contracts)
        printf("             bit-exact arithmetic: a*b+c not fused\n");
    else
        printf("             not opened: %s\n", p->error);
}

static cJSON *json_device(const probed_device *p)
{
    const ptreg_device_info *d = &p->info;
    cJSON *o = cJSON_CreateObject();
    cli_json_result(o, ptreg_result_table_find("device_info"), d);
    cli_json_bool(o, "standin", d->standin);
    /* null: the device could not be opened to probe it (open_error says why) */
    if (d->fma_contracts < 0) {
        cli_json_null(o, "fma_contracts");
        cli_json_null(o, "bit_exact");
        cli_json_string(o, "open_error", p->error);
    } else {
        cli_json_bool(o, "fma_contracts", d->fma_contracts);
        cli_json_bool(o, "bit_exact", !d->fma_contracts);
    }
    return o;
}

/* What auto picks for a command with a path on every backend (icp,
 * emicp, lddmm, warp, harris3d, normals, pfh, fpfh), or
 * why it cannot pick (a PTREG_DEVICE naming a missing device). */
static void auto_choice(char *text, size_t size)
{
    ptreg_device any = {PTREG_BACKEND_AUTO, 0}, on;
    ptreg_error err;
    if (ptreg_device_resolve(&any, ~0u /* every backend */, "a GPU command", &on, &err))
        snprintf(text, size, "none: %s", err.message);
    else
        ptreg_device_format(&on, text, size);
}

static int print_json(const probed_device *list, size_t count, const char *choice)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_string(o, "command", "devices");
    cJSON *arr = cli_json_array(o, "devices");
    for (size_t i = 0; i < count; i++)
        cli_json_push(arr, json_device(&list[i]));
    cJSON *backends = cli_json_object(o, "backends");
    for (ptreg_backend b = PTREG_BACKEND_CPU; b <= PTREG_BACKEND_OPENCL; b++) {
        cJSON *bo = cli_json_object(backends, ptreg_backend_name(b));
        cli_json_bool(bo, "built", ptreg_backend_built(b));
        cli_json_string(bo, "note", ptreg_backend_note(b));
    }
    cli_json_string(o, "auto", choice);
    cli_json_string(o, "version", ptreg_version());
    return cli_json_print(o);
}

static int has_devices(const ptreg_device_info *list, size_t count, ptreg_backend backend)
{
    for (size_t i = 0; i < count; i++)
        if (list[i].device.backend == backend)
            return 1;
    return 0;
}

int cli_run_devices(int argc, char **argv)
{
    cli_args a;
    int rc;
    if (!cli_begin(&cli_cmd_devices, argc, argv, &a, &rc))
        return rc;
    const ptreg_device_info *list;
    size_t count;
    ptreg_devices(&list, &count);
    char choice[PTREG_ERROR_MESSAGE_MAX + 8];
    auto_choice(choice, sizeof choice);
    probed_device *probed = calloc(count, sizeof *probed);
    if (!probed) {
        cli_error("devices", "out of memory");
        return EXIT_RUNTIME;
    }
    ptreg_error err;
    for (size_t i = 0; i < count; i++)
        if (probe_device(&list[i], &probed[i], &err)) {
            cli_error("devices", "%s", err.message);
            free(probed);
            return EXIT_RUNTIME;
        }
    if (cli_has(&a, "json")) {
        rc = print_json(probed, count, choice);
        free(probed);
        return rc;
    }
    printf("ptreg devices: %zu found\n", count);
    for (size_t i = 0; i < count; i++)
        print_device(&probed[i]);
    free(probed);
    for (ptreg_backend b = PTREG_BACKEND_CUDA; b <= PTREG_BACKEND_OPENCL; b++)
        if (ptreg_backend_note(b)[0])
            printf("  %-10s %s: %s\n", ptreg_backend_name(b), has_devices(list, count, b) ? "but" : "none",
                   ptreg_backend_note(b));
    printf(
        "auto picks %s for a command with a GPU path (icp, emicp, lddmm, warp, harris3d, normals, pfh, fpfh), the CPU "
        "for the others\n",
        choice);
    return EXIT_OK;
}
