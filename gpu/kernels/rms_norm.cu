// (Fused residual add +) RMSNorm: one CTA per token, 16-byte accesses when the rows allow it. Pass 1
// forms the (rounded, stored) sum and its sum of squares; pass 2 takes a thread's first vector from
// registers and re-reads any further ones it wrote or read (L1/L2 hits), and writes the normalised output.
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/rms_norm.cuh"

namespace lector::gpu {
namespace {

template <class T, bool kVector>
__global__ void rmsNormKernel(RmsNormParams p)
{
    __shared__ float scratch[32];
    constexpr int kVec = kVector ? kVecElems<T> : 1;
    const int64_t token = blockIdx.x;
    const T* in = static_cast<const T*>(p.input) + token * p.inputStride;
    T* res = p.residual ? static_cast<T*>(p.residual) + token * p.residualStride : nullptr;
    T* out = static_cast<T*>(p.out) + token * p.outStride;
    const T* w = static_cast<const T*>(p.weight);
    const int n = p.hidden / kVec;

    // Plain loads, not __ldg: out may alias input.
    auto load = [](const T* src, float (&x)[kVec]) {
        if constexpr (kVector) {
            const Vec16<T> v = unpack16<T>(*reinterpret_cast<const uint4*>(src));
#pragma unroll
            for (int e = 0; e < kVec; ++e) x[e] = v.v[e];
        } else {
            x[0] = toFloat(*src);
        }
    };
    auto store = [](T* dst, const float (&x)[kVec]) {
        if constexpr (kVector) *reinterpret_cast<uint4*>(dst) = pack16<T>(x);
        else *dst = fromFloat<T>(x[0]);
    };

    // A thread's first vector stays in registers between the passes, and its weight is loaded before
    // the wait (immutable): pass 2 then has no load on the critical path at hidden <= 8 x blockDim.
    float x0[kVec], w0[kVec];
    if (threadIdx.x < n) load(w + threadIdx.x * kVec, w0);
    gridDependencyWait();
    allowDependentLaunch();
    float sumSq = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float x[kVec];
        load(in + i * kVec, x);
        if (res) {
            float r[kVec];
            load(res + i * kVec, r);
#pragma unroll
            for (int e = 0; e < kVec; ++e) x[e] = roundTo<T>(x[e] + r[e]);
            store(res + i * kVec, x);
        }
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
            sumSq = fmaf(x[e], x[e], sumSq);
            if (i == static_cast<int>(threadIdx.x)) x0[e] = x[e];
        }
    }
    const float inv = rsqrtf(blockSum(sumSq, scratch) / p.hidden + p.eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float x[kVec], wv[kVec];
        if (i == static_cast<int>(threadIdx.x)) {
#pragma unroll
            for (int e = 0; e < kVec; ++e) x[e] = x0[e], wv[e] = w0[e];
        } else {
            load((res ? res : in) + i * kVec, x);
            load(w + i * kVec, wv);
        }
#pragma unroll
        for (int e = 0; e < kVec; ++e) x[e] = x[e] * inv * wv[e];
        store(out + i * kVec, x);
    }
}

}  // namespace

cudaError_t launchRmsNorm(const RmsNormParams& p, cudaStream_t stream)
{
    if (p.numTokens < 0 || p.hidden <= 0) return cudaErrorInvalidValue;
    if (p.numTokens == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        const int64_t vec = kVecElems<T>;
        const bool vector = p.hidden % vec == 0 && p.inputStride % vec == 0 && p.outStride % vec == 0 &&
                            aligned16(p.input) && aligned16(p.out) && aligned16(p.weight) &&
                            (!p.residual || (p.residualStride % vec == 0 && aligned16(p.residual)));
        const int64_t units = vector ? p.hidden / vec : p.hidden;
        const int threads = static_cast<int>(std::min<int64_t>(1024, std::max<int64_t>(32, ceilDiv(units, 32) * 32)));
        return vector ? launchKernel(rmsNormKernel<T, true>, p.numTokens, threads, 0, stream, p)
                      : launchKernel(rmsNormKernel<T, false>, p.numTokens, threads, 0, stream, p);
    });
}

}  // namespace lector::gpu
