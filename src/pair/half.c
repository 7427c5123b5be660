/* IEEE binary16 <-> binary32 without F16C, rounding to nearest even as the
 * F16C instructions do, so every ISA stores the same half bits. */
#include <string.h>

#include "pair/pair_kernels.h"

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t half_from_float(float f)
{
    const uint32_t u = float_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) /* inf stays inf, NaN stays a quiet NaN */
        return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) /* rounds to 65536 or more */
        return (uint16_t)(sign | 0x7c00u);
    if (abs < 0x38800000u) {   /* below 2^-14: a subnormal half, or zero */
        if (abs < 0x33000000u) /* below half the smallest subnormal */
            return sign;
        const uint32_t mant = (abs & 0x007fffffu) | 0x00800000u;
        const int shift = 126 - (int)(abs >> 23); /* 14..24 */
        uint32_t h = mant >> shift;
        const uint32_t rest = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((abs >> 13) - ((127u - 15u) << 10));
    const uint32_t rest = abs & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is the right rounding */
    return (uint16_t)(sign | h);
}

float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1fu)
        return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 is exact in float */
        const float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}
