/* Compiled kernels cached on disk (kernel_cache.c). */
#ifndef PTREG_DEVICE_KERNEL_CACHE_H
#define PTREG_DEVICE_KERNEL_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The image stored under the key made of `parts` (all of them decide the
 * binary); kind is the file extension ("cubin"). Returns 1 and a malloc'd
 * image when found and intact, else 0. */
int kernel_cache_load(const char *kind, const char *const parts[], size_t count, void **image, size_t *size);
/* Stores it (atomically; failures are silent: the cache is an optimisation). */
void kernel_cache_store(const char *kind, const char *const parts[], size_t count, const void *image, size_t size);
/* Removes it: an image the driver refused must not be handed back. */
void kernel_cache_forget(const char *kind, const char *const parts[], size_t count);

#endif
