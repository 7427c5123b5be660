/* Feature matching's distance scan, compiled once per ISA (cmake/isa.cmake):
 * the distances of a block of columns are summed dimension by dimension,
 * so the inner loop runs along columns in the ISA's vector registers. */
#include <math.h>

#include "device/cpu_isa.h"
#include "reg/global/global_kernels.h"

#define MATCH_BLOCK 512 /* columns whose distances are summed together */

void ISA_FN(desc_scan_rows)(const desc_scan *s)
{
    float d[MATCH_BLOCK];
    for (size_t i = s->r0; i < s->r1; i++) {
        const float *x = s->a + i * (size_t)s->dim;
        uint32_t arg = UINT32_MAX;
        float bd = INFINITY;
        for (size_t j0 = 0; !s->a_nan[i] && j0 < s->nb; j0 += MATCH_BLOCK) {
            const size_t len = s->nb - j0 < MATCH_BLOCK ? s->nb - j0 : MATCH_BLOCK;
            for (size_t j = 0; j < len; j++)
                d[j] = 0.0f;
            for (int k = 0; k < s->dim; k++) {
                const float xk = x[k], *col = s->bt + (size_t)k * s->nb + j0;
                for (size_t j = 0; j < len; j++) {
                    const float diff = xk - col[j];
                    d[j] += diff * diff;
                }
            }
            for (size_t j = 0; j < len; j++) {
                if (d[j] < bd)
                    bd = d[j], arg = (uint32_t)(j0 + j);
                if (s->col_d && d[j] < s->col_d[j0 + j])
                    s->col_d[j0 + j] = d[j], s->col_i[j0 + j] = (uint32_t)i;
            }
        }
        s->row_best[i] = arg;
    }
}
