// Skinny GEMM on the tensor cores (SkinnyEngine::TensorCore): out[r, n] = sum_k x[r, k] * weight[n, k]
// for 2..64 decode rows, one pass over the weight.
//
// mma.sync m16n8k16 with the weight as the 16-row A operand (16 output columns) and x as the 8-wide B
// operand (8 rows of x, zero past p.rows). A dot product does not care in which order its k terms are
// summed, so the k order inside each 32-wide block is permuted identically for A and B: lane (g, t) of a
// warp loads 16 contiguous bytes of weight rows g and g + 8 at k = 8t and the same 16 bytes of x row g,
// and those registers are, as they stand, the fragments of two mmas (k 8t..8t+3 and 8t+4..8t+7). No
// ldmatrix, no shuffles, no bank conflicts on the weight (it never touches shared memory).
//
// A CTA is 4 warps = 64 output columns; a thread-block cluster of `split` CTAs splits K. Each CTA stages
// its slice of x (silu(gate) * up, or the add + RMSNorm of the residual stream, computed on the way) in
// shared memory once, with a row stride that is 64 mod 128 bytes so the 8 rows a quarter-warp reads
// fall in different banks. Weights stream through registers, a stage of 8 blocks (16 x 16 bytes per
// lane); the split is chosen so that one stage is usually the CTA's whole slice, loaded before
// gridDependencyWait() (weights are immutable, common.cuh). Where the slice takes a second stage (gate/up
// at splits of 2, down at 8), that one is copied into shared memory by cp.async before the wait as well,
// instead of loading after the first stage's products: on the H200 gate/up at 16 rows took 6.5 us
// (7.7 in call 43), down with SiLU-mul at 8 rows 6.7 (8.5), and the batch-8 step with the tensor
// cores for every projection 1075 us against 1159 before (perf.md, device calls 85-86).
//
// The CTAs of a cluster leave their float32 partial tiles in shared memory and each CTA sums a
// 1/split share of the tile over the cluster (distributed shared memory), in rank order, so results do
// not depend on timing. The RMSNorm's sum of squares meets the same way: each CTA squares its slice,
// the cluster adds the partial sums.
#include <cooperative_groups.h>

#include <type_traits>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/skinny_gemm.cuh"

namespace lector::gpu {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kColsPerCta = kWarps * 16;  // weight rows, i.e. output columns
constexpr int kKBlock = 32;               // k per 4 lanes x 8 elements
constexpr int kStage = 8;  // k blocks per pipeline stage (4 was no faster on the H200)
constexpr int kMaxSplit = 8;              // portable cluster size
constexpr int kMaxSmem = 227 * 1024;      // sm_90 opt-in limit per CTA
constexpr int kSmemBudget = 48 * 1024;    // the split grows until the staged x fits this (4 CTAs per SM)

// A slice of up to this many 32-wide k blocks beyond the first register stage has the rest of its weight
// copied into shared memory before the wait (cp.async, 4 KB per block); longer slices (the LM head's,
// whose grid runs in several waves) load their later stages into registers as they go.
constexpr int kMaxSmemWeightBlocks = kStage;

struct Layout {
    int kSlice = 0;     // K per CTA
    int xStride = 0;    // bytes per staged row of x
    int rows8 = 0;      // rows of x rounded up to the 8-row B tiles
    int auxOffset = 0;  // bytes: the up half (SiLU-mul) or the residual (RMSNorm), staged beside x
    int sumsOffset = 0; // bytes: float[2][64] of RMSNorm partial sums and inverses after the x / C tiles
    int staged = 0;     // bytes of the above (what the split keeps within kSmemBudget)
    int smemBlocks = 0; // k blocks past the first stage whose weight waits in shared memory
    int weightOffset = 0;  // bytes: those blocks, [block][lo, hi][thread] of 16 bytes
    int total = 0;      // dynamic shared memory bytes
};

__host__ __device__ inline Layout layoutOf(int rows, int k, int split, bool twoInputs)
{
    Layout l;
    l.kSlice = k / split;
    const int rowBytes = l.kSlice * 2;
    l.xStride = rowBytes % 128 == 0 ? rowBytes + 64 : rowBytes;  // rowBytes is a multiple of 64
    l.rows8 = (rows + 7) / 8 * 8;
    const int xBytes = l.rows8 * l.xStride * (twoInputs ? 2 : 1), cBytes = l.rows8 * kColsPerCta * 4;
    l.auxOffset = l.rows8 * l.xStride;
    l.sumsOffset = xBytes > cBytes ? xBytes : cBytes;
    l.staged = l.sumsOffset + 2 * kSkinnyTcMaxRows * 4;  // RMSNorm partial sums and inverse rms
    const int extra = l.kSlice / kKBlock - kStage;
    l.smemBlocks = extra > 0 && extra <= kMaxSmemWeightBlocks ? extra : 0;
    l.weightOffset = l.staged;
    l.total = l.staged + l.smemBlocks * 2 * kThreads * 16;
    return l;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters (the kernel below runs only on sm_90+)
__device__ __forceinline__ void copyAsync16(void* smemDst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(smemDst))),
                 "l"(src)
                 : "memory");
}

// x's slice [rows8, kSlice] into shared memory as T: x itself, silu(gate) * up rounded to T, or
// round(normWeight * r / rms(r)) with r = round(residualIn + x) (rms over the whole row: the cluster's
// partial sums). Rows past p.rows are zero. Every 16-byte piece goes out as one cp.async before the
// first wait, so the slice costs one L2 round trip however many rows it has (loads through registers
// cost one per batch: at 64 rows the staging took most of the kernel). The second input (up half, or
// residual) lands beside x; the element-wise part then runs in shared memory.
template <class T, bool kSilu, bool kNorm>
__device__ void stageX(const SkinnyGemmParams& p, unsigned char* smem, const Layout& l, int k0,
                       const cg::cluster_group& cluster)
{
    constexpr int V = kVecElems<T>;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int vecs = l.kSlice / V, items = l.rows8 * vecs;
    const T* x = static_cast<const T*>(p.x);
    const T* resIn = static_cast<const T*>(p.residualIn);
    unsigned char* aux = smem + l.auxOffset;
    for (int i = threadIdx.x; i < items; i += kThreads) {
        const int r = i / vecs, v = i % vecs;
        unsigned char* dst = smem + r * l.xStride + v * 16;
        if (r < p.rows) {
            const int64_t kk = k0 + int64_t(v) * V;
            copyAsync16(dst, x + r * p.xStride + kk);
            if constexpr (kSilu) copyAsync16(aux + r * l.xStride + v * 16, x + r * p.xStride + p.k + kk);
            if constexpr (kNorm) copyAsync16(aux + r * l.xStride + v * 16, resIn + r * p.residualStride + kk);
        } else {
            *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
        }
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    if constexpr (kSilu || kNorm) {
        // Each thread combines the pieces it copied itself (its own cp.async writes are visible to it).
        for (int i = threadIdx.x; i < p.rows * vecs; i += kThreads) {
            const int r = i / vecs, v = i % vecs;
            uint4* slot = reinterpret_cast<uint4*>(smem + r * l.xStride + v * 16);
            const Vec16<T> e0 = unpack16<T>(*slot);
            const Vec16<T> e1 = unpack16<T>(*reinterpret_cast<const uint4*>(aux + r * l.xStride + v * 16));
            float f[V];
#pragma unroll
            for (int e = 0; e < V; ++e) f[e] = kSilu ? silu(e0.v[e]) * e1.v[e] : toFloat(fromFloat<T>(e0.v[e] + e1.v[e]));
            const uint4 out = pack16<T>(f);
            *slot = out;
            if constexpr (kNorm)
                if (blockIdx.y == 0)  // the first column block's cluster writes the new residual
                    *reinterpret_cast<uint4*>(static_cast<T*>(p.residualOut) + r * p.residualStride + k0 +
                                              int64_t(v) * V) = out;
        }
    }
    if constexpr (kNorm) {
        // Sum of squares of this slice per row (warp per row, from shared memory), then over the cluster.
        float* sums = reinterpret_cast<float*>(smem + l.sumsOffset);
        float* invs = sums + kSkinnyTcMaxRows;
        __syncthreads();
        for (int r = warp; r < p.rows; r += kWarps) {
            const uint4* row = reinterpret_cast<const uint4*>(smem + r * l.xStride);
            float sumSq = 0.0f;
            for (int v = lane; v < vecs; v += 32) {
                const Vec16<T> s = unpack16<T>(row[v]);
#pragma unroll
                for (int e = 0; e < V; ++e) sumSq = fmaf(s.v[e], s.v[e], sumSq);
            }
            sumSq = warpSum(sumSq);
            if (lane == 0) sums[r] = sumSq;
        }
        cluster.sync();  // every CTA's partial sums are written
        for (int r = threadIdx.x; r < p.rows; r += kThreads) {
            float total = 0.0f;
            for (unsigned q = 0; q < cluster.num_blocks(); ++q) total += cluster.map_shared_rank(sums, q)[r];
            invs[r] = rsqrtf(total / p.k + p.eps);
        }
        __syncthreads();
        const T* nw = static_cast<const T*>(p.normWeight);
        // Where the slice's vectors divide the CTA, a thread always meets the same vector of the weight.
        const bool fixedV = kThreads % vecs == 0;
        const Vec16<T> wFixed = unpack16<T>(loadNc16(nw + k0 + int64_t(threadIdx.x % vecs) * V));
        for (int i = threadIdx.x; i < p.rows * vecs; i += kThreads) {
            const int r = i / vecs, v = i % vecs;
            uint4* slot = reinterpret_cast<uint4*>(smem + r * l.xStride + v * 16);
            const Vec16<T> s = unpack16<T>(*slot);
            const Vec16<T> wv = fixedV ? wFixed : unpack16<T>(loadNc16(nw + k0 + int64_t(v) * V));
            float h[V];
#pragma unroll
            for (int e = 0; e < V; ++e) h[e] = s.v[e] * invs[r] * wv.v[e];
            *slot = pack16<T>(h);
        }
    }
    __syncthreads();
}

#endif

template <class T, int kTiles, bool kSilu, bool kNorm>
__global__ void __launch_bounds__(kThreads, 3) skinnyTcKernel(SkinnyGemmParams p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char smem[];
    const cg::cluster_group cluster = cg::this_cluster();
    const int split = static_cast<int>(cluster.num_blocks()), rank = static_cast<int>(cluster.block_rank());
    const Layout l = layoutOf(p.rows, p.k, split, kSilu || kNorm);
    const int k0 = rank * l.kSlice, numBlocks = l.kSlice / kKBlock;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int col0 = blockIdx.y * kColsPerCta + warp * 16;
    const T* w = static_cast<const T*>(p.weight);
    // Past the last column: re-read the last row, never stored.
    const T* wLo = w + int64_t(min(col0 + g, p.n - 1)) * p.weightStride + k0 + t * 8;
    const T* wHi = w + int64_t(min(col0 + g + 8, p.n - 1)) * p.weightStride + k0 + t * 8;

    // A stage of kStage blocks per lane in registers; the split keeps most slices to one stage, so every
    // weight load of the CTA is in flight before the wait. A second stage waits in shared memory (below);
    // longer slices (the LM head's) take further stages, each loaded after the previous one is multiplied
    // (the other CTAs on the multiprocessor cover that latency).
    uint4 wv[kStage][2];
    auto loadStage = [&](int b0) {
#pragma unroll
        for (int u = 0; u < kStage; ++u) {
            if (b0 + u < numBlocks) {
                wv[u][0] = loadNc16(wLo + (b0 + u) * kKBlock);
                wv[u][1] = loadNc16(wHi + (b0 + u) * kKBlock);
            }
        }
    };
    loadStage(0);
    // The rest of a slice of up to two stages goes to shared memory now, so that no weight load waits
    // for the previous kernel (stageX's cp.async.wait_all covers these copies too).
    uint4* wSmem = reinterpret_cast<uint4*>(smem + l.weightOffset);
    for (int b = 0; b < l.smemBlocks; ++b) {
        uint4* dst = wSmem + b * 2 * kThreads + threadIdx.x;
        copyAsync16(dst, wLo + (kStage + b) * kKBlock);
        copyAsync16(dst + kThreads, wHi + (kStage + b) * kKBlock);
    }
    gridDependencyWait();
    allowDependentLaunch();
    stageX<T, kSilu, kNorm>(p, smem, l, k0, cluster);

    float acc[kTiles][4];
#pragma unroll
    for (int j = 0; j < kTiles; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    const unsigned char* xLane = smem + g * l.xStride + t * 16;
    for (int b0 = 0; b0 < numBlocks; b0 += kStage) {
        if (b0 > 0 && l.smemBlocks > 0) {  // the second and last stage, from shared memory
#pragma unroll
            for (int u = 0; u < kStage; ++u) {
                if (b0 + u < numBlocks) {
                    wv[u][0] = wSmem[(b0 + u - kStage) * 2 * kThreads + threadIdx.x];
                    wv[u][1] = wSmem[((b0 + u - kStage) * 2 + 1) * kThreads + threadIdx.x];
                }
            }
        } else if (b0 > 0) {
            loadStage(b0);
        }
#pragma unroll
        for (int u = 0; u < kStage; ++u) {
            if (b0 + u < numBlocks) {
                const uint4 lo = wv[u][0], hi = wv[u][1];
#pragma unroll
                for (int j = 0; j < kTiles; ++j) {
                    const uint4 xb = *reinterpret_cast<const uint4*>(xLane + j * 8 * l.xStride + (b0 + u) * kKBlock * 2);
                    mmaM16N8K16<T>(acc[j], lo.x, hi.x, lo.y, hi.y, xb.x, xb.y);
                    mmaM16N8K16<T>(acc[j], lo.z, hi.z, lo.w, hi.w, xb.z, xb.w);
                }
            }
        }
    }

    // Partial tile [rows8, 64] in float32, over the staged x (every warp is past its last read of it).
    __syncthreads();
    float* tile = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
        const int r = j * 8 + 2 * t, c = warp * 16 + g;
        tile[r * kColsPerCta + c] = acc[j][0];
        tile[(r + 1) * kColsPerCta + c] = acc[j][1];
        tile[r * kColsPerCta + c + 8] = acc[j][2];
        tile[(r + 1) * kColsPerCta + c + 8] = acc[j][3];
    }
    cluster.sync();
    // This CTA's share of the sum over the cluster, stored row by row (64 consecutive columns). The
    // remote loads of kEpi elements go out together before any sum: one DSMEM round trip per batch.
    constexpr int kEpi = 4;
    const float* tiles[kMaxSplit];
#pragma unroll
    for (int q = 0; q < kMaxSplit; ++q) tiles[q] = q < split ? cluster.map_shared_rank(tile, q) : tile;
    const int elems = p.rows * kColsPerCta, step = split * kThreads;
    for (int e0 = rank * kThreads + threadIdx.x; e0 < elems; e0 += step * kEpi) {
        float part[kEpi][kMaxSplit];
#pragma unroll
        for (int u = 0; u < kEpi; ++u)
#pragma unroll
            for (int q = 0; q < kMaxSplit; ++q)
                part[u][q] = q < split && e0 + u * step < elems ? tiles[q][e0 + u * step] : 0.0f;
#pragma unroll
        for (int u = 0; u < kEpi; ++u) {
            const int e = e0 + u * step;
            float s = 0.0f;
#pragma unroll
            for (int q = 0; q < kMaxSplit; ++q) s += part[u][q];  // rank order; zeros past the split
            const int r = e / kColsPerCta, n = blockIdx.y * kColsPerCta + e % kColsPerCta;
            if (e < elems && n < p.n) {
                const int64_t i = int64_t(r) * p.outStride + n;
                if (p.outFloat) static_cast<float*>(p.out)[i] = toFloat(fromFloat<T>(s));
                else static_cast<T*>(p.out)[i] = fromFloat<T>(s);
            }
        }
    }
    cluster.sync();  // no CTA leaves while another still reads its tile
#else
    (void)p;
    __trap();
#endif
}

bool deviceIsSm90()
{
    static const bool ok = currentDeviceAttribute(cudaDevAttrComputeCapabilityMajor) >= 9;
    return ok;
}

// The split: the smallest power of two that gives about 1.5 CTAs per multiprocessor and staged x within
// kSmemBudget, as far as K divides into 32-wide blocks and clusters go (8). On the H200 (bench_skinny_gemm)
// that is the fastest split for every decoder projection, or within 3 % of it.
int chooseSplit(const SkinnyGemmParams& p)
{
    if (p.splitK > 0) return p.splitK;
    const int64_t colBlocks = ceilDiv(p.n, kColsPerCta);
    int split = 1;
    while (split < kMaxSplit && p.k % (kKBlock * split * 2) == 0 &&
           (2 * colBlocks * split < 3 * skinnySmCount() ||
            layoutOf(p.rows, p.k, split, p.siluMulInput || p.normWeight).staged > kSmemBudget))
        split *= 2;
    return split;
}

template <class T, int kTiles, bool kSilu, bool kNorm>
cudaError_t launchTiles(const SkinnyGemmParams& p, int split, cudaStream_t stream)
{
    auto* kernel = skinnyTcKernel<T, kTiles, kSilu, kNorm>;
    static const cudaError_t attr = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem);
    if (attr != cudaSuccess) return attr;
    const Layout l = layoutOf(p.rows, p.k, split, kSilu || kNorm);
    const dim3 grid(static_cast<unsigned>(split), static_cast<unsigned>(ceilDiv(p.n, kColsPerCta)));
    return launchKernelInClusters(kernel, grid, kThreads, static_cast<size_t>(l.total), stream,
                                  dim3(static_cast<unsigned>(split), 1, 1), p);
}

template <class T, bool kSilu, bool kNorm>
cudaError_t launchVariant(const SkinnyGemmParams& p, int split, cudaStream_t stream)
{
    switch ((p.rows + 7) / 8) {
#define LECTOR_TC_TILES(N) \
    case N: return launchTiles<T, N, kSilu, kNorm>(p, split, stream);
        LECTOR_TC_TILES(1)
        LECTOR_TC_TILES(2)
        LECTOR_TC_TILES(3)
        LECTOR_TC_TILES(4)
        LECTOR_TC_TILES(5)
        LECTOR_TC_TILES(6)
        LECTOR_TC_TILES(7)
        LECTOR_TC_TILES(8)
#undef LECTOR_TC_TILES
    default: return cudaErrorInvalidValue;
    }
}

}  // namespace

cudaError_t launchSkinnyGemmTc(const SkinnyGemmParams& p, cudaStream_t stream)
{
    if (p.rows < 0 || p.rows > kSkinnyTcMaxRows || p.n < 0 || p.k < 0) return cudaErrorInvalidValue;
    if (p.rows == 0 || p.n == 0) return cudaSuccess;
    if (p.dtype == DType::F32 || !deviceIsSm90()) return cudaErrorNotSupported;
    const bool norm = p.normWeight != nullptr;
    if (p.k % kKBlock != 0 || p.xStride % 8 != 0 || p.weightStride % 8 != 0 || !aligned16(p.x) ||
        !aligned16(p.weight) || (norm && (p.siluMulInput || !p.residualIn || !p.residualOut ||
                                          p.residualIn == p.residualOut || p.residualStride % 8 != 0 ||
                                          !aligned16(p.residualIn) || !aligned16(p.residualOut) ||
                                          !aligned16(p.normWeight))))
        return cudaErrorNotSupported;
    const int split = chooseSplit(p);
    if (split < 1 || split > kMaxSplit || (split & (split - 1)) != 0 || p.k % (kKBlock * split) != 0 ||
        layoutOf(p.rows, p.k, split, p.siluMulInput || norm).total > kMaxSmem)
        return cudaErrorNotSupported;
    auto run = [&]<class T>() -> cudaError_t {
        if (norm) return launchVariant<T, false, true>(p, split, stream);
        if (p.siluMulInput) return launchVariant<T, true, false>(p, split, stream);
        return launchVariant<T, false, false>(p, split, stream);
    };
    return p.dtype == DType::F16 ? run.template operator()<__half>() : run.template operator()<__nv_bfloat16>();
}

}  // namespace lector::gpu
