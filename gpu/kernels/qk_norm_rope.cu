// QK-norm + XD-RoPE: one warp per (token, head), qkNormRopeWarp (qk_norm_rope_warp.cuh).
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/qk_norm_rope.cuh"
#include "gpu/kernels/qk_norm_rope_warp.cuh"

namespace lector::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

template <class T, int D>
__global__ void __launch_bounds__(kThreads) qkNormRopeKernel(QkNormRopeParams p)
{
    constexpr int kHalf = D / 2;
    constexpr int kPairsPerLane = detail::kRopePairsPerLane<D>;
    const int64_t item = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
    const int headsPerToken = p.numQHeads + p.numKvHeads;
    if (item >= int64_t(p.numTokens) * headsPerToken) return;  // warp-uniform; nothing to wait for
    const int64_t token = item / headsPerToken;
    const int head = static_cast<int>(item % headsPerToken);
    const bool isQuery = head < p.numQHeads;
    const int lane = threadIdx.x & 31;
    // Before waiting for the previous kernel (under PDL): everything that is a step input or a constant —
    // positions, the rotation table, the norm weights, the cache slot. Only q, k and v come from it.
    const T* w = static_cast<const T*>(isQuery ? p.queryNormWeight : p.keyNormWeight);
    float c[kPairsPerLane], s[kPairsPerLane], w1[kPairsPerLane], w2[kPairsPerLane];
#pragma unroll
    for (int i = 0; i < kPairsPerLane; ++i) {
        const int j = lane + 32 * i;
        c[i] = s[i] = 0.0f;
        w1[i] = w2[i] = 1.0f;
        if (j >= kHalf) continue;
        const float* cs = p.cosSinCache + detail::ropePosition(p, detail::ropeAxisOf(p, j), token) * D;
        c[i] = cs[j];
        s[i] = cs[kHalf + j];
        if (w) {
            w1[i] = toFloat(w[j]);
            w2[i] = toFloat(w[kHalf + j]);
        }
    }
    T* keyDst = nullptr;  // cache row of this key head (the fused KV write), or null
    T* valueDst = nullptr;
    if (!isQuery && p.keyCache) {
        const int64_t slot = p.slotMapping[token];
        if (slot >= 0 && slot < p.numCacheSlots) {
            const int64_t offset = (slot * p.numKvHeads + (head - p.numQHeads)) * D;
            keyDst = static_cast<T*>(p.keyCache) + offset;
            valueDst = static_cast<T*>(p.valueCache) + offset;
        }
    }
    gridDependencyWait();
    allowDependentLaunch();
    T* x = isQuery ? static_cast<T*>(p.query) + token * p.queryTokenStride + int64_t(head) * D
                   : static_cast<T*>(p.key) + token * p.keyTokenStride + int64_t(head - p.numQHeads) * D;
    if (valueDst) {
        const T* v = static_cast<const T*>(p.value) + token * p.valueTokenStride + int64_t(head - p.numQHeads) * D;
        for (int j = lane; j < D; j += 32) valueDst[j] = v[j];
    }

    T lo[kPairsPerLane], hi[kPairsPerLane];
    detail::qkNormRopeWarp<T, D>(x, c, s, w1, w2, w != nullptr, p.eps, lo, hi);
#pragma unroll
    for (int i = 0; i < kPairsPerLane; ++i) {
        const int j = lane + 32 * i;
        if (j >= kHalf) continue;
        const T a = lo[i], b = hi[i];
        x[j] = a;
        x[kHalf + j] = b;
        if (keyDst) {
            keyDst[j] = a;
            keyDst[kHalf + j] = b;
        }
    }
}

}  // namespace

cudaError_t launchQkNormRope(const QkNormRopeParams& p, cudaStream_t stream)
{
    if (p.numTokens < 0 || p.numQHeads < 0 || p.numKvHeads < 0 || !ropeTableValid(p, p.headDim))
        return cudaErrorInvalidValue;
    if (p.keyCache && (!p.valueCache || !p.value || !p.slotMapping || p.numCacheSlots < 0)) return cudaErrorInvalidValue;
    const int64_t items = int64_t(p.numTokens) * (p.numQHeads + p.numKvHeads);
    if (items == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        return dispatchHeadDim(p.headDim, [&]<int D>() {
            return launchKernel(qkNormRopeKernel<T, D>, static_cast<unsigned>(ceilDiv(items, kWarps)), kThreads, 0,
                                stream, p);
        });
    });
}

}  // namespace lector::gpu
