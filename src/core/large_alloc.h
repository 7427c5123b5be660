/* Buffers of megabytes that a kernel fills once (neighbour tables,
 * descriptors, score volumes, a k-d tree's build scratch): aligned to 2 MiB and
 * advised for Linux's transparent huge pages (enabled on request on most
 * systems), so that their first touch faults once per 2 MiB instead of
 * once per 4 KiB. Each fault costs microseconds on a busy virtual machine:
 * normals spent 13% of their time in them (bench/NOTES.md change 120),
 * Harris's score volume 8 of 40 ms before it took huge pages.
 * Buffers under 1 MiB come from malloc. Free either with free(). */
#ifndef PTREG_CORE_LARGE_ALLOC_H
#define PTREG_CORE_LARGE_ALLOC_H

#include <stddef.h>

void *core_alloc_large(size_t bytes);

#endif
