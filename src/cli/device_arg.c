/* --threads and --device (device_arg.h). */
#include "cli/device_arg.h"
#include "ptreg/device.h"

int cli_apply_threads(const cli_args *args)
{
    int threads = 0;
    int rc = cli_int(args, "threads", 0, 4096, &threads);
    if (!rc && threads > 0)
        ptreg_set_num_threads(threads);
    return rc;
}

int cli_device(const cli_args *args, ptreg_device *device)
{
    const char *v = cli_string(args, "device", "auto");
    if (ptreg_device_parse(v, device)) {
        cli_error(args->cmd->name, "--device: '%s' is not auto, cpu, cuda[:N] or opencl[:N] (see 'ptreg devices')", v);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

int cli_device_usable(const cli_args *args, ptreg_status resolved, const ptreg_error *err)
{
    if (!resolved)
        return EXIT_OK;
    cli_error(args->cmd->name, "%s (see 'ptreg devices')", err->message);
    return EXIT_USAGE;
}

int cli_device_cpu_only(const cli_args *args, const char *operation)
{
    ptreg_device asked, on;
    ptreg_error err;
    int rc = cli_device(args, &asked);
    return rc ? rc : cli_device_usable(args, ptreg_device_resolve(&asked, 0, operation, &on, &err), &err);
}
