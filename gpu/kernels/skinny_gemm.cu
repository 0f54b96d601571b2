// Skinny GEMM: one CTA per kCols = 8 output columns. Its threads split K in 16-byte vectors (a thread
// takes vectors t, t + threads, ...); per vector a thread loads the 8 columns' weights and the rows of x
// (small, cache-resident), then does the multiply-adds, keeping the next vector's weights in flight
// (software pipelining: 2 x 128 bytes of weight per thread). Partial sums meet through warp shuffles and
// shared memory. 128 threads when K has at most 128 vectors (the decoder's K = 1024: every thread busy),
// 256 above. Element-wise path when K or a stride is not a multiple of the vector width.
//
// The first weights (and the norm weight) are loaded before gridDependencyWait(): under PDL (common.cuh)
// they stream in while the previous kernel finishes. With siluMulInput the x operand is silu(gate) * up
// of a [rows, 2k] gate/up output, rounded to T like silu_and_mul.cu would store it, so the down
// projection needs no separate activation kernel. With normWeight (kNorm) the CTA first adds the delta x
// to the residual and RMS-normalises the rows into shared memory (every CTA recomputes the norm of its
// few rows from L2; CTA 0 stores the new residual), so the fused add + RMSNorm kernel before the
// projection disappears.
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
            return toFloat(fromFloat<T>(silu(g) * L::elem(b, e)));
        }
    }
};

// The norm weight's vectors of this thread (v = threadIdx.x + i * kThreads), loaded before
// gridDependencyWait(): they are immutable, and loading them after the block's sum of squares put an
// L2 round trip on every step's critical path, twice per layer.
constexpr int kNormWeightRegs = 2;  // covers K up to 2 * kThreads vectors; above, the rest load late

template <class T, int kThreads>
struct NormWeights {
    uint4 v[kNormWeightRegs];
    __device__ void prefetch(const SkinnyGemmParams& p, int numVec)
    {
#pragma unroll
        for (int i = 0; i < kNormWeightRegs; ++i) {
            const int vec = threadIdx.x + i * kThreads;
            if (vec < numVec) v[i] = loadNc16(static_cast<const T*>(p.normWeight) + int64_t(vec) * kVecElems<T>);
        }
    }
    __device__ uint4 at(const SkinnyGemmParams& p, int vec) const
    {
        const int i = (vec - static_cast<int>(threadIdx.x)) / kThreads;
        if (i < kNormWeightRegs) {
            uint4 out = v[0];
#pragma unroll
            for (int j = 1; j < kNormWeightRegs; ++j)
                if (i == j) out = v[j];
            return out;
        }
        return loadNc16(static_cast<const T*>(p.normWeight) + int64_t(vec) * kVecElems<T>);
    }
};

// kNorm prologue: rows of round(normWeight * r / rms(r)), r = round(residualIn + x), into xs
// ([kRows, numVec] vectors); CTA 0 stores r to residualOut. Numerics of rms_norm.cu.
template <class T, int kRows, int kThreads>
__device__ void addRmsNormRows(const SkinnyGemmParams& p, int numVec, uint4* xs, const NormWeights<T, kThreads>& nw)
{
    // Rows go in batches of kBatch whose loads are all issued before any is used, and the batch's sums
    // of squares meet in one block reduction: a row after row loop waited on L2 once per row (about
    // 1.4 us per row on the H200, bench_skinny_gemm call 44).
    constexpr int kBatch = kRows < 4 ? kRows : 4, kWarps = kThreads / 32;
    __shared__ float scratch[kWarps * kBatch];
    const T* x = static_cast<const T*>(p.x);
    const T* resIn = static_cast<const T*>(p.residualIn);
    T* resOut = static_cast<T*>(p.residualOut);
    constexpr int V = kVecElems<T>;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int r0 = 0; r0 < kRows; r0 += kBatch) {
        float sumSq[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) sumSq[b] = 0.0f;
        for (int v = threadIdx.x; v < numVec; v += kThreads) {
            uint4 d[kBatch], res[kBatch];
#pragma unroll
            for (int b = 0; b < kBatch; ++b) {
                const int r = r0 + b < kRows ? r0 + b : kRows - 1;  // a short last batch repeats a row, unused
                d[b] = loadNc16(x + int64_t(r) * p.xStride + int64_t(v) * V);
                res[b] = loadNc16(resIn + int64_t(r) * p.residualStride + int64_t(v) * V);
            }
#pragma unroll
            for (int b = 0; b < kBatch; ++b) {
                const int r = r0 + b;
                if (r >= kRows) break;
                const Vec16<T> dv = unpack16<T>(d[b]), rv = unpack16<T>(res[b]);
                float sv[V];
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    sv[e] = toFloat(fromFloat<T>(dv.v[e] + rv.v[e]));
                    sumSq[b] = fmaf(sv[e], sv[e], sumSq[b]);
                }
                const uint4 packed = pack16<T>(sv);
                xs[r * numVec + v] = packed;
                if (blockIdx.x == 0)
                    *reinterpret_cast<uint4*>(resOut + int64_t(r) * p.residualStride + int64_t(v) * V) = packed;
            }
        }
        __syncthreads();  // scratch may still be read by the previous batch
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            const float w = warpSum(sumSq[b]);
            if (lane == 0) scratch[warp * kBatch + b] = w;
        }
        __syncthreads();
        float inv[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
            float total = 0.0f;
            for (int w = 0; w < kWarps; ++w) total += scratch[w * kBatch + b];
            inv[b] = rsqrtf(total / p.k + p.eps);
        }
        for (int v = threadIdx.x; v < numVec; v += kThreads) {  // the vectors this thread wrote above
            const Vec16<T> wv = unpack16<T>(nw.at(p, v));
#pragma unroll
            for (int b = 0; b < kBatch; ++b) {
                const int r = r0 + b;
                if (r >= kRows) break;
                const Vec16<T> sv = unpack16<T>(xs[r * numVec + v]);
                float h[V];
#pragma unroll
                for (int e = 0; e < V; ++e) h[e] = sv.v[e] * inv[b] * wv.v[e];
                xs[r * numVec + v] = pack16<T>(h);
            }
        }
    }
    __syncthreads();
}

template <class T, int kRows, int kThreads, bool kVector, bool kSilu, bool kNorm = false>
__global__ void __launch_bounds__(kThreads) skinnyGemmKernel(SkinnyGemmParams p)
{
    static_assert(!kNorm || (kVector && !kSilu), "the norm prologue is vector-only and takes a plain delta");
    extern __shared__ uint4 normRows[];  // kNorm: [kRows, numVec]
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
    [[maybe_unused]] NormWeights<T, kThreads> normWeights;
    if constexpr (kNorm) normWeights.prefetch(p, numVec);
    gridDependencyWait();
    allowDependentLaunch();
    if constexpr (kNorm) addRmsNormRows<T, kRows, kThreads>(p, numVec, normRows, normWeights);
    // x of the next vector is loaded with the next weights, so a K of several vectors per thread (the
    // down projection's 3584) costs one round trip for x, not one per vector. Up to 4 rows: at 7-8 rows
    // with the SiLU-mul input the extra registers spilled.
    constexpr bool kPipelineX = kRows <= 4;
    XRow<T, L, kSilu> xNext[kRows];
    auto loadX = [&](XRow<T, L, kSilu> (&dst)[kRows], int v) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            if constexpr (kNorm) dst[r].a = normRows[r * numVec + v];
            else dst[r].load(x + int64_t(r) * p.xStride, p.k, v);
        }
    };
    if (kPipelineX && threadIdx.x < numVec) loadX(xNext, threadIdx.x);
    for (int v = threadIdx.x; v < numVec; v += kThreads) {
        XRow<T, L, kSilu> xv[kRows];
        if constexpr (kPipelineX) {
#pragma unroll
            for (int r = 0; r < kRows; ++r) xv[r] = xNext[r];
        } else {
            loadX(xv, v);
        }
        Raw next[kCols];
        if (v + kThreads < numVec) {
            loadWeights(next, v + kThreads);
            if constexpr (kPipelineX) loadX(xNext, v + kThreads);
        }
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
        if (n0 + c < p.n) {
            const int64_t i = int64_t(r) * p.outStride + n0 + c;
            if (p.outFloat) static_cast<float*>(p.out)[i] = toFloat(fromFloat<T>(s));
            else static_cast<T*>(p.out)[i] = fromFloat<T>(s);
        }
    }
}

template <class T, int kThreads, bool kVector, bool kSilu, bool kNorm = false>
cudaError_t launchRows(const SkinnyGemmParams& p, cudaStream_t stream)
{
    const dim3 grid(static_cast<unsigned>(ceilDiv(p.n, kCols)));
    const size_t smem = kNorm ? static_cast<size_t>(skinnyNormSmemBytes(p.rows, p.k, sizeof(T))) : 0;
    switch (p.rows) {
#define LECTOR_SKINNY_ROWS(R) \
    case R: return launchKernel(skinnyGemmKernel<T, R, kThreads, kVector, kSilu, kNorm>, grid, kThreads, smem, stream, p);
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

template <class T, bool kVector, bool kSilu, bool kNorm = false>
cudaError_t launchThreads(const SkinnyGemmParams& p, cudaStream_t stream)
{
    const int64_t units = kVector ? p.k / kVecElems<T> : p.k;
    return units <= 128 ? launchRows<T, 128, kVector, kSilu, kNorm>(p, stream)
                        : launchRows<T, 256, kVector, kSilu, kNorm>(p, stream);
}

}  // namespace

cudaError_t launchSkinnyGemm(const SkinnyGemmParams& p, cudaStream_t stream)
{
    if (p.engine == SkinnyEngine::TensorCore) return launchSkinnyGemmTc(p, stream);
    if (p.engine == SkinnyEngine::WarpGroup) return launchSkinnyGemmWg(p, stream);
    if (p.rows < 0 || p.rows > kSkinnyMaxRows || p.n < 0 || p.k < 0) return cudaErrorInvalidValue;
    if (p.rows == 0 || p.n == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        const int64_t vec = kVecElems<T>;
        const bool vector = p.k % vec == 0 && p.xStride % vec == 0 && p.weightStride % vec == 0 && aligned16(p.x) &&
                            aligned16(p.weight);
        if (p.normWeight) {
            if (p.siluMulInput || !p.residualIn || !p.residualOut || p.residualIn == p.residualOut || !vector ||
                p.residualStride % vec != 0 || !aligned16(p.residualIn) || !aligned16(p.residualOut) ||
                !aligned16(p.normWeight) || skinnyNormSmemBytes(p.rows, p.k, sizeof(T)) > kSkinnyNormMaxSmemBytes)
                return cudaErrorInvalidValue;
            return launchThreads<T, true, false, true>(p, stream);
        }
        if (p.siluMulInput)
            return vector ? launchThreads<T, true, true>(p, stream) : launchThreads<T, false, true>(p, stream);
        return vector ? launchThreads<T, true, false>(p, stream) : launchThreads<T, false, false>(p, stream);
    });
}

}  // namespace lector::gpu
