/* The counting allocators behind src/core/fault_inject.h: each call takes
 * a number from one atomic counter, and the one numbered PTREG_FAIL_ALLOC
 * fails as the C library's would (NULL; realloc leaves the block alone). */
#define _POSIX_C_SOURCE 200809L /* strdup, posix_memalign */
#undef malloc
#undef calloc
#undef realloc
#undef aligned_alloc
#undef posix_memalign
#undef strdup

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long allocations;
static unsigned long fail_at; /* 0: never */
static int trace_failure;

/* Present when the build has a sanitizer: where the failure was injected. */
extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

__attribute__((constructor)) static void read_fail_at(void)
{
    const char *s = getenv("PTREG_FAIL_ALLOC");
    fail_at = s ? strtoul(s, NULL, 10) : 0;
    trace_failure = getenv("PTREG_FAIL_TRACE") != NULL;
}

__attribute__((destructor)) static void report_count(void)
{
    const char *path = getenv("PTREG_ALLOC_COUNT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%lu\n", __atomic_load_n(&allocations, __ATOMIC_RELAXED));
        fclose(f);
    }
}

/* Whether this allocation is the one to fail. */
static int injected_failure(void)
{
    unsigned long n = __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    if (n == fail_at) {
        if (trace_failure && __sanitizer_print_stack_trace)
            __sanitizer_print_stack_trace();
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *fi_malloc(size_t size)
{
    return injected_failure() ? NULL : malloc(size);
}

void *fi_calloc(size_t count, size_t size)
{
    return injected_failure() ? NULL : calloc(count, size);
}

void *fi_realloc(void *ptr, size_t size)
{
    return injected_failure() ? NULL : realloc(ptr, size);
}

void *fi_aligned_alloc(size_t alignment, size_t size)
{
    return injected_failure() ? NULL : aligned_alloc(alignment, size);
}

int fi_posix_memalign(void **ptr, size_t alignment, size_t size)
{
    return injected_failure() ? ENOMEM : posix_memalign(ptr, alignment, size);
}

char *fi_strdup(const char *s)
{
    return injected_failure() ? NULL : strdup(s);
}
