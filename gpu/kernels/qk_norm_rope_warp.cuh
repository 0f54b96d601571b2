// QK-norm + XD-RoPE of one head's vector by one warp (and the positions it reads), the arithmetic shared
// by the QK-norm/RoPE kernel (qk_norm_rope.cu) and decode attention's fused rotation
// (paged_attention_simt.cuh, kRope), so both round the same values the same way. Lane L holds the
// rotation pairs (j, j + D/2) for j = L, L + 32, ...: both halves of a pair stay in one thread and the
// RMS is one warp sum (neox pairing, rotate-half).
// Internal to gpu/kernels (include from .cu / .cuh only, after common.cuh).
#pragma once

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/qk_norm_rope.cuh"

namespace lector::gpu::detail {

// The position axis of frequency j (< D/2): the axes own p.sections[a] frequencies each, in order.
__device__ __forceinline__ int ropeAxisOf(const QkNormRopeParams& p, int j)
{
    int axis = 0;
    for (int bound = p.sections[0]; axis + 1 < p.numPosAxes && j >= bound; bound += p.sections[axis + 1]) ++axis;
    return axis;
}

// Token `token`'s position on `axis`, clamped into the rotation table.
__device__ __forceinline__ int64_t ropePosition(const QkNormRopeParams& p, int axis, int64_t token)
{
    const int64_t i = axis * p.positionsAxisStride + token;
    const int64_t pos = p.positionsInt64 ? static_cast<const int64_t*>(p.positions)[i]
                                         : static_cast<const int32_t*>(p.positions)[i];
    return min(max(pos, int64_t(0)), int64_t(p.maxPosition - 1));
}

template <int D>
constexpr int kRopePairsPerLane = (D / 2 + 31) / 32;

// x: the head's D raw values. c / s: cos and sin of each of this lane's frequencies at its axis' position;
// w1 / w2: the norm weights of dims j and j + D/2 (1 without a norm). norm: whether to divide by the RMS.
// lo[i] / hi[i]: the results for dims j and j + D/2, rounded to T (lanes past D/2 get zeros).
template <class T, int D>
__device__ __forceinline__ void qkNormRopeWarp(const T* x, const float (&c)[kRopePairsPerLane<D>],
                                               const float (&s)[kRopePairsPerLane<D>],
                                               const float (&w1)[kRopePairsPerLane<D>],
                                               const float (&w2)[kRopePairsPerLane<D>], bool norm, float eps,
                                               T (&lo)[kRopePairsPerLane<D>], T (&hi)[kRopePairsPerLane<D>])
{
    constexpr int kHalf = D / 2, kPairs = kRopePairsPerLane<D>;
    const int lane = threadIdx.x & 31;
    float y1[kPairs], y2[kPairs];
    float sumSq = 0.0f;
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        const int j = lane + 32 * i;
        y1[i] = y2[i] = 0.0f;
        if (j >= kHalf) continue;
        const float x1 = toFloat(x[j]), x2 = toFloat(x[kHalf + j]);
        y1[i] = x1 * c[i] - x2 * s[i];
        y2[i] = x2 * c[i] + x1 * s[i];
        sumSq += y1[i] * y1[i] + y2[i] * y2[i];
    }
    const float inv = norm ? rsqrtf(warpSum(sumSq) / D + eps) : 1.0f;
#pragma unroll
    for (int i = 0; i < kPairs; ++i) {
        lo[i] = fromFloat<T>(y1[i] * inv * w1[i]);
        hi[i] = fromFloat<T>(y2[i] * inv * w2[i]);
    }
}

}  // namespace lector::gpu::detail
