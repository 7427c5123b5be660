#define _DEFAULT_SOURCE /* madvise */
#include "core/large_alloc.h"

#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
/* From half a huge page up: a 1.6 MB neighbour table (40,000 points, k 10)
 * then faults once, for at most half a page of memory never used. */
#define LARGE_MIN (HUGE_PAGE / 2)

void *core_alloc_large(size_t bytes)
{
    if (bytes < LARGE_MIN)
        return malloc(bytes ? bytes : 1);
    /* whole huge pages: the advice covers the buffer's last one too */
    const size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (rounded < bytes)
        return NULL;
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, rounded))
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}
