/* Exact 1-NN by brute force: the target as NaN-padded SoA, blocks of queries
 * spread over threads, each block swept over cache-sized target tiles by
 * the per-ISA kernel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn_kernels.h"
#include "nn/nn_dispatch.h"
#include "ptreg/nn.h"
#include "nn/testing.h"

#define QUERY_CHUNK 256

ptreg_status brute_target_init(brute_target *t, const float *xyz, size_t m, ptreg_error *err)
{
    memset(t, 0, sizeof *t);
    if (m == 0)
        return ptreg_error_set(err, PTREG_ERR_ARG, "brute-force search: empty target");
    if (m >= PTREG_NO_NEIGHBOR)
        return ptreg_error_set(err, PTREG_ERR_ARG, "brute-force search: %zu target points, at most %u", m,
                               PTREG_NO_NEIGHBOR - 1);
    size_t m_pad = (m + PTREG_BRUTE_PAD - 1) / PTREG_BRUTE_PAD * PTREG_BRUTE_PAD;
    float *soa = malloc(3 * m_pad * sizeof(float));
    if (!soa)
        return ptreg_error_set(err, PTREG_ERR_NOMEM, "brute-force search: out of memory");
    for (size_t j = 0; j < m_pad; j++) {
        int real = j < m;
        soa[j] = real ? xyz[3 * j] : NAN;
        soa[m_pad + j] = real ? xyz[3 * j + 1] : NAN;
        soa[2 * m_pad + j] = real ? xyz[3 * j + 2] : NAN;
    }
    *t = (brute_target){soa, soa + m_pad, soa + 2 * m_pad, m, m_pad};
    return PTREG_OK;
}

void brute_target_free(brute_target *t)
{
    free((void *)t->x);
    memset(t, 0, sizeof *t);
}

ptreg_status ptreg_brute_nearest(const float *target, size_t m, const float *queries, size_t nq, uint32_t *index,
                                 float *dist2, ptreg_error *err)
{
    brute_target t;
    ptreg_status st = brute_target_init(&t, target, m, err);
    if (st)
        return st;
    long chunks = (long)((nq + QUERY_CHUNK - 1) / QUERY_CHUNK);
#pragma omp parallel for schedule(dynamic, 1) num_threads(ptreg_get_num_threads())
    for (long c = 0; c < chunks; c++) {
        size_t i0 = (size_t)c * QUERY_CHUNK;
        size_t cnt = nq - i0 < QUERY_CHUNK ? nq - i0 : QUERY_CHUNK;
        nn_cpu_kernels()->brute_range(&t, queries + 3 * i0, cnt, index + i0, dist2 + i0);
    }
    brute_target_free(&t);
    return PTREG_OK;
}
