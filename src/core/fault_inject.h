/* Allocation-failure injection (issue 20), for test builds only: with
 * -DPTREG_FAULT_INJECTION=ON CMake force-includes this header into every
 * library and CLI source, so their allocations go through counting wrappers
 * (src/core/fault_inject.c) and the n-th can be made to fail:
 *
 *   PTREG_FAIL_ALLOC=N     the N-th allocation (1-based) returns NULL
 *   PTREG_ALLOC_COUNT=FILE at exit, the number of allocations made
 *   PTREG_FAIL_TRACE=1     print the failing allocation's stack (sanitizer builds)
 *
 * tests/cli/alloc_failures.sh sweeps N over a run of each command. Only
 * <stddef.h> is included here: a system header read before a source's own
 * _POSIX_C_SOURCE would fix the feature macros too early. */
#ifndef PTREG_FAULT_INJECT_H
#define PTREG_FAULT_INJECT_H

#include <stddef.h>

void *fi_malloc(size_t size);
void *fi_calloc(size_t count, size_t size);
void *fi_realloc(void *ptr, size_t size);
void *fi_aligned_alloc(size_t alignment, size_t size);
int fi_posix_memalign(void **ptr, size_t alignment, size_t size);
char *fi_strdup(const char *s);

#define malloc fi_malloc
#define calloc fi_calloc
#define realloc fi_realloc
#define aligned_alloc fi_aligned_alloc
#define posix_memalign fi_posix_memalign
#define strdup fi_strdup

#endif
