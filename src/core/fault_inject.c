/* The counting allocators behind src/core/fault_inject.h: each call takes
 * a number from one atomic counter, and the one numbered PTREG_FAIL_ALLOC
 * fails as the C library's would (NULL; realloc leaves the block alone).
 * PTREG_ALLOC_SITES=FILE writes "n site" per allocation, the site a hash of
 * the call stack's return addresses: allocations made in a loop share one,
 * which lets tests/alloc/sweep.sh fail each site a few times, not every
 * turn of every loop. */
#define _GNU_SOURCE /* strdup, posix_memalign, backtrace */
#undef malloc
#undef calloc
#undef realloc
#undef aligned_alloc
#undef posix_memalign
#undef strdup

#include <errno.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long allocations;
static unsigned long fail_at; /* 0: never */
static int trace_failure;
static FILE *sites;

/* Present when the build has a sanitizer: where the failure was injected. */
extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

__attribute__((constructor)) static void read_fail_at(void)
{
    const char *s = getenv("PTREG_FAIL_ALLOC");
    fail_at = s ? strtoul(s, NULL, 10) : 0;
    trace_failure = getenv("PTREG_FAIL_TRACE") != NULL;
    const char *path = getenv("PTREG_ALLOC_SITES");
    sites = path ? fopen(path, "w") : NULL;
}

__attribute__((destructor)) static void report_count(void)
{
    const char *path = getenv("PTREG_ALLOC_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", __atomic_load_n(&allocations, __ATOMIC_RELAXED));
        fclose(f);
    }
    if (sites)
        fclose(sites);
}

/* The allocator (fi_malloc, fi_calloc, ...) and three callers: enough to
 * tell apart the callers of a shared helper (a cloud's or an array's
 * allocation, itself a call or two deep), few enough that a loop's turns are
 * one site. `multiway` on the sweep's inputs: 556 allocations at 187 sites
 * (254 with four callers, 111 with two). */
enum { OWN_FRAMES = 2, CALLER_FRAMES = 3 }; /* record_site, injected_failure */

__attribute__((noinline)) static void record_site(unsigned long n)
{
    void *frames[OWN_FRAMES + 1 + CALLER_FRAMES];
    int depth = backtrace(frames, OWN_FRAMES + 1 + CALLER_FRAMES);
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the addresses */
    for (int i = OWN_FRAMES; i < depth; i++) {
        h ^= (uint64_t)(uintptr_t)frames[i];
        h *= 1099511628211ull;
    }
    fprintf(sites, "%lu %016llx\n", n, (unsigned long long)h);
}

/* Whether this allocation is the one to fail. */
__attribute__((noinline)) static int injected_failure(void)
{
    unsigned long n = __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    if (sites)
        record_site(n);
    if (n == fail_at) {
        if (trace_failure && __sanitizer_print_stack_trace)
            __sanitizer_print_stack_trace();
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *fi_malloc(size_t size) { return injected_failure() ? NULL : malloc(size); }

void *fi_calloc(size_t count, size_t size) { return injected_failure() ? NULL : calloc(count, size); }

void *fi_realloc(void *ptr, size_t size) { return injected_failure() ? NULL : realloc(ptr, size); }

void *fi_aligned_alloc(size_t alignment, size_t size)
{
    return injected_failure() ? NULL : aligned_alloc(alignment, size);
}

int fi_posix_memalign(void **ptr, size_t alignment, size_t size)
{
    return injected_failure() ? ENOMEM : posix_memalign(ptr, alignment, size);
}

char *fi_strdup(const char *s) { return injected_failure() ? NULL : strdup(s); }
