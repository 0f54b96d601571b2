// Scalar element access for the CPU references: read any DType element as float32 and write float32
// back with round-to-nearest-even, bit-compatible with CUDA's __float2half_rn / __float2bfloat16_rn.
// Plain C++ (no CUDA, no torch); used only by gpu/ref and the kernel tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gpu/kernels/types.h"

namespace lector::gpu::ref {

inline float halfBitsToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {  // zero or subnormal: mant * 2^-24
        const float v = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -v : v;
    }
    uint32_t bits = exp == 0x1f ? (sign | 0x7f800000u | (mant << 13))
                                : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t floatToHalfBits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
    if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
    if (absx < 0x38800000u) {  // below 2^-14: subnormal half, exact scaling then RNE
        float a;
        std::memcpy(&a, &absx, sizeof a);
        return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
    }
    uint32_t h = ((((absx >> 23) - 127 + 15)) << 10) | ((absx & 0x7fffffu) >> 13);
    const uint32_t rem = absx & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry correctly bumps the exponent
    return static_cast<uint16_t>(sign | h);
}

inline float bf16BitsToFloat(uint16_t b)
{
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint16_t floatToBf16Bits(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

// Element i of a DType array.
inline float loadElem(const void* base, int64_t i, DType t)
{
    switch (t) {
    case DType::F32: return static_cast<const float*>(base)[i];
    case DType::F16: return halfBitsToFloat(static_cast<const uint16_t*>(base)[i]);
    case DType::BF16: return bf16BitsToFloat(static_cast<const uint16_t*>(base)[i]);
    }
    return 0.0f;
}

inline void storeElem(void* base, int64_t i, DType t, float v)
{
    switch (t) {
    case DType::F32: static_cast<float*>(base)[i] = v; break;
    case DType::F16: static_cast<uint16_t*>(base)[i] = floatToHalfBits(v); break;
    case DType::BF16: static_cast<uint16_t*>(base)[i] = floatToBf16Bits(v); break;
    }
}

// v rounded to the precision of t (identity for F32).
inline float roundTo(DType t, float v)
{
    if (t == DType::F16) return halfBitsToFloat(floatToHalfBits(v));
    if (t == DType::BF16) return bf16BitsToFloat(floatToBf16Bits(v));
    return v;
}

}  // namespace lector::gpu::ref
