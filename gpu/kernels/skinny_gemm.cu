// Skinny GEMM: one CTA of 256 threads per kCols = 8 output columns. The threads split K in 16-byte
// vectors (a thread takes vectors t, t + 256, ...); per vector it issues the 8 weight loads first, then
// the rows of x (small, cache-resident), then the multiply-adds, so each thread keeps 128 bytes of
// weight in flight. Partial sums meet through warp shuffles and shared memory. Element-wise path when K
// or a stride is not a multiple of the vector width.
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/skinny_gemm.cuh"

#include <type_traits>

namespace lector::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
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

template <class T, int kRows, bool kVector>
__global__ void __launch_bounds__(kThreads) skinnyGemmKernel(SkinnyGemmParams p)
{
    using L = Load<T, kVector>;
    constexpr int V = L::kElems;
    const int n0 = blockIdx.x * kCols;
    const int numVec = p.k / V;
    const T* x = static_cast<const T*>(p.x);
    const T* w = static_cast<const T*>(p.weight);
    float acc[kCols][kRows];
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[c][r] = 0.0f;

    for (int v = threadIdx.x; v < numVec; v += kThreads) {
        typename L::Raw wv[kCols];
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            const int n = min(n0 + c, p.n - 1);  // past the end: re-read the last column, never stored
            wv[c] = L::load(w + int64_t(n) * p.weightStride + int64_t(v) * V);
        }
        typename L::Raw xv[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) xv[r] = L::load(x + int64_t(r) * p.xStride + int64_t(v) * V);
#pragma unroll
        for (int e = 0; e < V; ++e) {
            float xe[kRows];
#pragma unroll
            for (int r = 0; r < kRows; ++r) xe[r] = L::elem(xv[r], e);
#pragma unroll
            for (int c = 0; c < kCols; ++c) {
                const float we = L::elem(wv[c], e);
#pragma unroll
                for (int r = 0; r < kRows; ++r) acc[c][r] = fmaf(we, xe[r], acc[c][r]);
            }
        }
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

template <class T, bool kVector>
cudaError_t launchRows(const SkinnyGemmParams& p, cudaStream_t stream)
{
    const dim3 grid(static_cast<unsigned>(ceilDiv(p.n, kCols)));
    switch (p.rows) {
#define LECTOR_SKINNY_ROWS(R) \
    case R: skinnyGemmKernel<T, R, kVector><<<grid, kThreads, 0, stream>>>(p); break;
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
    return cudaGetLastError();
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
        return vector ? launchRows<T, true>(p, stream) : launchRows<T, false>(p, stream);
    });
}

}  // namespace lector::gpu
