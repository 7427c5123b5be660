/* Points in the order of a Morton curve (ptreg_morton_order, numeric.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"

/* 10 bits of x, y and z interleaved (z y x z y x ...). */
static uint32_t morton_code(const float *p, const float lo[3], const float scale[3])
{
    uint32_t code = 0;
    for (int k = 0; k < 3; k++) {
        uint32_t v = (uint32_t)((p[k] - lo[k]) * scale[k]);
        v = v > 1023 ? 1023 : v;
        for (int bit = 0; bit < 10; bit++)
            code |= ((v >> bit) & 1u) << (3 * bit + k);
    }
    return code;
}

/* A stable radix sort of the codes: ties keep the caller's order. */
int ptreg_morton_order(const float *p, size_t n, uint32_t *order)
{
    double dlo[3] = {INFINITY, INFINITY, INFINITY}, dhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    ptreg_points_bounds(p, n, dlo, dhi);
    float lo[3], scale[3];
    for (int k = 0; k < 3; k++) {
        const float hi = (float)dhi[k]; /* the bounds of floats: exact */
        lo[k] = (float)dlo[k];
        scale[k] = hi > lo[k] ? 1024.0f / (hi - lo[k]) : 0.0f;
    }
    uint32_t *code = malloc(2 * n * sizeof *code), *tmp = malloc(n * sizeof *tmp);
    if (!code || !tmp) {
        free(code), free(tmp);
        return -1;
    }
    uint32_t *sorted_code = code + n;
    for (size_t i = 0; i < n; i++)
        code[i] = morton_code(p + 3 * i, lo, scale), order[i] = (uint32_t)i;
    for (int shift = 0; shift < 30; shift += 10) {
        size_t count[1025] = {0};
        for (size_t i = 0; i < n; i++)
            count[((code[i] >> shift) & 1023u) + 1]++;
        for (int d = 0; d < 1024; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++) {
            size_t at = count[(code[i] >> shift) & 1023u]++;
            sorted_code[at] = code[i], tmp[at] = order[i];
        }
        memcpy(code, sorted_code, n * sizeof *code);
        memcpy(order, tmp, n * sizeof *order);
    }
    free(code), free(tmp);
    return 0;
}
