#include "ptreg/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/testing.h"

const char *ptreg_version(void) { return PTREG_VERSION_STRING; }

const char *ptreg_status_string(ptreg_status status)
{
    switch (status) {
    case PTREG_OK: return "ok";
    case PTREG_ERR_ARG: return "invalid argument";
    case PTREG_ERR_IO: return "i/o error";
    case PTREG_ERR_FORMAT: return "bad input";
    case PTREG_ERR_NOMEM: return "out of memory";
    case PTREG_ERR_UNSUPPORTED: return "unsupported";
    case PTREG_ERR_RUNTIME: return "runtime failure";
    }
    return "unknown status";
}

void ptreg_error_clear(ptreg_error *err)
{
    if (!err)
        return;
    err->status = PTREG_OK;
    err->message[0] = '\0';
}

ptreg_status ptreg_error_set(ptreg_error *err, ptreg_status status, const char *fmt, ...)
{
    if (!err)
        return status;
    err->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return status;
}

const char *ptreg_stop_reason_name(ptreg_stop_reason reason)
{
    switch (reason) {
    case PTREG_STOP_CONVERGED: return "converged";
    case PTREG_STOP_MAX_ITERATIONS: return "max_iterations";
    case PTREG_STOP_TOO_FEW_PAIRS: return "too_few_pairs";
    case PTREG_STOP_DEGENERATE: return "degenerate";
    case PTREG_STOP_SIGMA_FINAL: return "sigma_final";
    case PTREG_STOP_RELATIVE_CHANGE: return "relative_change";
    case PTREG_STOP_SMALL_STEP: return "small_step";
    case PTREG_STOP_GRADIENT: return "gradient";
    case PTREG_STOP_OBJECTIVE_CHANGE: return "objective_change";
    case PTREG_STOP_NO_PROGRESS: return "no_progress";
    }
    return "unknown";
}
