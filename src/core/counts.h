/* Counts past 2^31 (docs/DESIGN.md, "64-bit counts"). A cloud's points are
 * named by uint32 indices, but a product or sum of counts (n x k neighbor
 * lists, their offsets, a buffer's bytes, rows of 33 or 125 bins) passes
 * 2^32 long before the points do: it is taken in size_t, and where it could
 * pass SIZE_MAX it is checked. A count that an interface can only name in
 * 32 bits is refused where it enters, before any point is read. Private to
 * the library and its tests. */
#ifndef PTREG_CORE_COUNTS_H
#define PTREG_CORE_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "ptreg/core.h"

/* a * b into *out; 0 (and *out untouched) when the product passes
 * SIZE_MAX. */
static inline int count_mul(size_t a, size_t b, size_t *out)
{
    size_t p;
    if (__builtin_mul_overflow(a, b, &p))
        return 0;
    *out = p;
    return 1;
}

/* a * b * c (an element count times an element size, say); 0 on
 * overflow. */
static inline int count_mul3(size_t a, size_t b, size_t c, size_t *out)
{
    size_t ab;
    return count_mul(a, b, &ab) && count_mul(ab, c, out);
}

/* a + b into *out; 0 when the sum passes SIZE_MAX. */
static inline int count_add(size_t a, size_t b, size_t *out)
{
    size_t s;
    if (__builtin_add_overflow(a, b, &s))
        return 0;
    *out = s;
    return 1;
}

/* Entry j of row i of a table whose rows hold `width` entries (k-NN lists
 * of k, descriptor rows of 33 or 125 bins, xyz triples): in size_t, where
 * i * width of a uint32 i and an int width would wrap at 2^31 or 2^32. */
static inline size_t count_slot(size_t i, size_t width, size_t j) { return i * width + j; }

/* PTREG_ERR_ARG ("WHAT: N points: more than MOST (WHY)") when n > most;
 * called before the points are read, so a count no index can name is
 * refused rather than overflowed. */
ptreg_status count_check_points(const char *what, size_t n, size_t most, const char *why, ptreg_error *err);

#endif
