#include "ptreg/core.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int requested_threads; /* 0: the default */

static int default_threads(void)
{
    const char *env = getenv("PTREG_NUM_THREADS");
    if (env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (end != env && *end == '\0' && v > 0 && v < 4096)
            return (int)v;
    }
#ifdef _OPENMP
    return omp_get_num_procs();
#else
    return 1;
#endif
}

void ptreg_set_num_threads(int n) { requested_threads = n > 0 ? n : 0; }

int ptreg_get_num_threads(void)
{
    return requested_threads > 0 ? requested_threads : default_threads();
}
