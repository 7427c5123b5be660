/* ICP's pair sums, compiled once per ISA (cmake/isa.cmake). The vector path
 * keeps each sum in its own lane and adds pairs in order, with separate
 * multiplies and adds, so it gives the scalar path's bits. */
#if defined(__AVX2__)
#include <immintrin.h>
#endif
#include <string.h>

#include "core/cpu_isa.h"
#include "reg/icp/icp_kernels.h"

void ISA_FN(pair_sums_range)(const float *p, const float *q, const float *d2, const unsigned char *use, size_t n,
                             const double ref[3], pair_sums *out)
{
    double w = 0.0, d2sum = 0.0;
#if defined(__AVX2__)
    const __m256d refv = _mm256_setr_pd(ref[0], ref[1], ref[2], 0.0);
    __m256d sp = _mm256_setzero_pd(), sq = sp, row0 = sp, row1 = sp, row2 = sp, pp = sp;
    for (size_t i = 0; i < n; i++) {
        if (!use[i])
            continue;
        const float *pi = p + 3 * i, *qi = q + 3 * i;
        const __m256d a = _mm256_sub_pd(_mm256_setr_pd(pi[0], pi[1], pi[2], 0.0), refv);
        const __m256d c = _mm256_sub_pd(_mm256_setr_pd(qi[0], qi[1], qi[2], 0.0), refv);
        w += 1.0;
        sp = _mm256_add_pd(sp, a);
        sq = _mm256_add_pd(sq, c);
        row0 = _mm256_add_pd(row0, _mm256_mul_pd(_mm256_permute4x64_pd(a, 0x00), c));
        row1 = _mm256_add_pd(row1, _mm256_mul_pd(_mm256_permute4x64_pd(a, 0x55), c));
        row2 = _mm256_add_pd(row2, _mm256_mul_pd(_mm256_permute4x64_pd(a, 0xaa), c));
        pp = _mm256_add_pd(pp, _mm256_mul_pd(a, a));
        d2sum += d2[i];
    }
    double lanes[6][4];
    _mm256_storeu_pd(lanes[0], sp);
    _mm256_storeu_pd(lanes[1], sq);
    _mm256_storeu_pd(lanes[2], row0);
    _mm256_storeu_pd(lanes[3], row1);
    _mm256_storeu_pd(lanes[4], row2);
    _mm256_storeu_pd(lanes[5], pp);
    for (int k = 0; k < 3; k++) {
        out->sp[k] = lanes[0][k];
        out->sq[k] = lanes[1][k];
        for (int r = 0; r < 3; r++)
            out->spq[3 * r + k] = lanes[2 + r][k];
    }
    out->spp = lanes[5][0] + lanes[5][1] + lanes[5][2];
#else
    double sp[3] = {0, 0, 0}, sq[3] = {0, 0, 0}, spq[9] = {0}, pp[3] = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (!use[i])
            continue;
        const float *pi = p + 3 * i, *qi = q + 3 * i;
        const double a[3] = {pi[0] - ref[0], pi[1] - ref[1], pi[2] - ref[2]};
        const double c[3] = {qi[0] - ref[0], qi[1] - ref[1], qi[2] - ref[2]};
        w += 1.0;
        for (int r = 0; r < 3; r++) {
            pp[r] += a[r] * a[r];
            sp[r] += a[r];
            sq[r] += c[r];
            for (int k = 0; k < 3; k++)
                spq[3 * r + k] += a[r] * c[k];
        }
        d2sum += d2[i];
    }
    memcpy(out->sp, sp, sizeof sp);
    memcpy(out->sq, sq, sizeof sq);
    memcpy(out->spq, spq, sizeof spq);
    out->spp = pp[0] + pp[1] + pp[2];
#endif
    out->w = w;
    out->d2sum = d2sum;
}
