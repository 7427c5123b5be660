#include "core/threads.h"

#include "ptreg/core.h"

#include <stdatomic.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* 0: the default. Atomic: a caller may set it while other threads' calls read it. */
static atomic_int requested_threads;
static _Thread_local int thread_override; /* 0: none */

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

int core_thread_override(int n)
{
    const int before = thread_override;
    thread_override = n > 0 ? n : 0;
    return before;
}

int ptreg_get_num_threads(void)
{
    if (thread_override)
        return thread_override;
    int n = atomic_load(&requested_threads);
    return n > 0 ? n : default_threads();
}
