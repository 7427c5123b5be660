/* What ptreg lddmm and ptreg warp share: the device that runs the
 * options, and on a GPU the tuned kernels' knobs. */
#include "cli/lddmm_device.h"

#include "cli/device_arg.h"
#include "cli/tune_choice.h"
#include "ptreg/tune.h"

/* --device, which must run the options. */
int cli_lddmm_read_device(const cli_args *a, ptreg_lddmm_options *o)
{
    ptreg_device on;
    ptreg_error err;
    int rc = cli_device(a, &o->device);
    return rc ? rc : cli_device_usable(a, ptreg_lddmm_resolve_device(o, &on, &err), &err);
}

/* Where the options run (their device, resolved as the library does). */
ptreg_device cli_lddmm_device_of(const ptreg_lddmm_options *o)
{
    ptreg_device on = {PTREG_BACKEND_CPU, 0};
    ptreg_lddmm_resolve_device(o, &on, NULL);
    return on;
}

/* On a GPU: the kernels' knobs from `ptreg tune --kernel lddmm --device`
 * for n landmarks (unless --no-tune): what ran, for the JSON; NULL on the
 * CPU. */
cJSON *cli_lddmm_tuned_gpu(const cli_args *a, ptreg_lddmm_options *o, size_t n)
{
    if (cli_lddmm_device_of(o).backend == PTREG_BACKEND_CPU)
        return NULL;
    ptreg_tune_choice c;
    ptreg_error err;
    return cli_tune_adopt(a, ptreg_tune_variant("lddmm", o, n, 0, !cli_has(a, "no-tune"), &c, &err), &c);
}
