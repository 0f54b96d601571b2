// SiLU-and-multiply: CTAs of 256 threads over (token, column chunk); 16-byte accesses when d and the
// strides allow, element by element otherwise (odd d such as 769).
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/silu_and_mul.cuh"

namespace lector::gpu {
namespace {

constexpr int kThreads = 256;


template <class T, bool kVector>
__global__ void siluAndMulKernel(SiluAndMulParams p)
{
    gridDependencyWait();
    allowDependentLaunch();
    constexpr int kVec = kVector ? kVecElems<T> : 1;
    const int64_t token = blockIdx.x;
    const T* gate = static_cast<const T*>(p.input) + token * p.inputStride;
    const T* up = gate + p.d;
    T* out = static_cast<T*>(p.out) + token * p.outStride;
    const int i = (blockIdx.y * kThreads + threadIdx.x) * kVec;
    if (i >= p.d) return;
    if constexpr (kVector) {
        const Vec16<T> g = unpack16<T>(loadNc16(gate + i)), u = unpack16<T>(loadNc16(up + i));
        float y[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) y[e] = silu(g.v[e]) * u.v[e];
        *reinterpret_cast<uint4*>(out + i) = pack16<T>(y);
    } else {
        out[i] = fromFloat<T>(silu(toFloat(gate[i])) * toFloat(up[i]));
    }
}

}  // namespace

cudaError_t launchSiluAndMul(const SiluAndMulParams& p, cudaStream_t stream)
{
    if (p.numTokens < 0 || p.d <= 0) return cudaErrorInvalidValue;
    if (p.numTokens == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        const int64_t vec = kVecElems<T>;
        const bool vector = p.d % vec == 0 && p.inputStride % vec == 0 && p.outStride % vec == 0 &&
                            aligned16(p.input) && aligned16(p.out);
        const int64_t units = vector ? p.d / vec : p.d;
        const dim3 grid(p.numTokens, static_cast<unsigned>(ceilDiv(units, kThreads)));
        return vector ? launchKernel(siluAndMulKernel<T, true>, grid, kThreads, 0, stream, p)
                      : launchKernel(siluAndMulKernel<T, false>, grid, kThreads, 0, stream, p);
    });
}

}  // namespace lector::gpu
