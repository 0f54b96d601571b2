// Skinny GEMM: one CTA per kCols = 8 output columns. Its threads split K in 16-byte vectors (a thread
// takes vectors t, t + threads, ...); per vector a thread loads the 8 columns' weights and the rows of x
// (small, cache-resident), then does the multiply-adds, keeping the next vector's weights in flight
// (software pipelining: 2 x 128 bytes of weight per thread). Partial sums meet through warp shuffles and
// shared memory. 128 threads when K has at most 128 vectors (the decoder's K = 1024: every thread busy),
// 256 above. Element-wise path when K or a stride is not a multiple of the vector width.
//
// The first weights are loaded before gridDependencyWait(): under PDL (common.cuh) they stream in while
// the previous kernel finishes. With siluMulInput the x operand is silu(gate) * up of a [rows, 2k]
// gate/up output, rounded to T like silu_and_mul.cu would store it, so the down projection needs no
// separate activation kernel.
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/skinny_gemm.cuh"

#include <type_traits>

namespace lector::gpu {
namespace {

constexpr int kCols = 8;

template <class T, bool kVector>
struct Load {
    static constexpr int kElems = kVector ? kVecElems<T> : 1;
    using Raw = std::conditional_t<kVector, uint4, T>;
    __device__ static Raw load(const T* p)
    {
        if constexpr (kVector) return loadNc16(p);
        else return *p;
    }
    __device__ static float elem(const Raw& raw, int e)
    {
        if constexpr (kVector) return toFloat(reinterpret_cast<const T*>(&raw)[e]);
        else return toFloat(raw);
    }
};

// Element e of x's row r at vector v: x itself, or silu(gate) * up rounded to T.
template <class T, class L, bool kSilu>
struct XRow {
    typename L::Raw a, b;
    __device__ void load(const T* row, int64_t k, int v)
    {
        a = L::load(row + int64_t(v) * L::kElems);
        if constexpr (kSilu) b = L::load(row + k + int64_t(v) * L::kElems);
    }
    __device__ float elem(int e) const
    {
        const float g = L::elem(a, e);
        if constexpr (!kSilu) {
            return g;
        } else {
            const float y = g / (1.0f + expf(-g)) * L::elem(b, e);
            return toFloat(fromFloat<T>(y));
        }
    }
};

template <class T, int kRows, int kThreads, bool kVector, bool kSilu>
__global__ void __launch_bounds__(kThreads) skinnyGemmKernel(SkinnyGemmParams p)
{
    using L = Load<T, kVector>;
    using Raw = typename L::Raw;
    constexpr int kWarps = kThreads / 32;
    const int n0 = blockIdx.x * kCols;
    const int numVec = p.k / L::kElems;
    const T* x = static_cast<const T*>(p.x);
    const T* w = static_cast<const T*>(p.weight);
    auto loadWeights = [&](Raw (&dst)[kCols], int v) {
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const int n = min(n0 + c, p.n - 1);  // past the end: re-read the last column, never stored
            dst[c] = L::load(w + int64_t(n) * p.weightStride + int64_t(v) * L::kElems);
        }
    };
    float acc[kCols][kRows];
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[c][r] = 0.0f;

    Raw wv[kCols];
    if (threadIdx.x < numVec) loadWeights(wv, threadIdx.x);  // weights are immutable: before the wait
    gridDependencyWait();
    allowDependentLaunch();
    for (int v = threadIdx.x; v < numVec; v += kThreads) {
        XRow<T, L, kSilu> xv[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) xv[r].load(x + int64_t(r) * p.xStride, p.k, v);
        Raw next[kCols];
        if (v + kThreads < numVec) loadWeights(next, v + kThreads);
#pragma unroll
        for (int e = 0; e < L::kElems; ++e) {
            float xe[kRows];
#pragma unroll
            for (int r = 0; r < kRows; ++r) xe[r] = xv[r].elem(e);
#pragma unroll
            for (int c = 0; c < kCols; ++c) {
                const float we = L::elem(wv[c], e);
#pragma unroll
                for (int r = 0; r < kRows; ++r) acc[c][r] = fmaf(we, xe[r], acc[c][r]);
            }
        }
#pragma unroll
        for (int c = 0; c < kCols; ++c) wv[c] = next[c];
    }

    __shared__ float partial[kWarps][kCols * kRows];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            const float s = warpSum(acc[c][r]);
            if (lane == 0) partial[warp][c * kRows + r] = s;
        }
    __syncthreads();
    if (threadIdx.x < kCols * kRows) {
        const int c = threadIdx.x / kRows, r = threadIdx.x % kRows;
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < kWarps; ++i) s += partial[i][threadIdx.x];
        if (n0 + c < p.n) static_cast<T*>(p.out)[int64_t(r) * p.outStride + n0 + c] = fromFloat<T>(s);
    }
}

template <class T, int kThreads, bool kVector, bool kSilu>
cudaError_t launchRows(const SkinnyGemmParams& p, cudaStream_t stream)
{
    const dim3 grid(static_cast<unsigned>(ceilDiv(p.n, kCols)));
    switch (p.rows) {
#define LECTOR_SKINNY_ROWS(R) \
    case R: return launchKernel(skinnyGemmKernel<T, R, kThreads, kVector, kSilu>, grid, kThreads, 0, stream, p);
        LECTOR_SKINNY_ROWS(1)
        LECTOR_SKINNY_ROWS(2)
        LECTOR_SKINNY_ROWS(3)
        LECTOR_SKINNY_ROWS(4)
        LECTOR_SKINNY_ROWS(5)
        LECTOR_SKINNY_ROWS(6)
        LECTOR_SKINNY_ROWS(7)
        LECTOR_SKINNY_ROWS(8)
#undef LECTOR_SKINNY_ROWS
    default: return cudaErrorInvalidValue;
    }
}

template <class T, bool kVector, bool kSilu>
cudaError_t launchThreads(const SkinnyGemmParams& p, cudaStream_t stream)
{
    const int64_t units = kVector ? p.k / kVecElems<T> : p.k;
    return units <= 128 ? launchRows<T, 128, kVector, kSilu>(p, stream) : launchRows<T, 256, kVector, kSilu>(p, stream);
}

}  // namespace

cudaError_t launchSkinnyGemm(const SkinnyGemmParams& p, cudaStream_t stream)
{
    if (p.rows < 0 || p.rows > kSkinnyMaxRows || p.n < 0 || p.k < 0) return cudaErrorInvalidValue;
    if (p.rows == 0 || p.n == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        const int64_t vec = kVecElems<T>;
        const bool vector = p.k % vec == 0 && p.xStride % vec == 0 && p.weightStride % vec == 0 && aligned16(p.x) &&
                            aligned16(p.weight);
        if (p.siluMulInput)
            return vector ? launchThreads<T, true, true>(p, stream) : launchThreads<T, false, true>(p, stream);
        return vector ? launchThreads<T, true, false>(p, stream) : launchThreads<T, false, false>(p, stream);
    });
}

}  // namespace lector::gpu
