// The tensor-core prefill attention as shipped up to device call 98 (gpu/kernels/
// paged_prefill_attention.cu before the two-warp-group kernel replaced it), kept for bench_prefill as
// the baseline the shipped kernel is measured against in the same run: a CTA of 4 warps owns 64 rows
// of one (sequence, KV head), K/V tiles of 32 keys go through registers one tile ahead, the grid is
// (the longest query's tiles, sequences, KV heads). Same PagedPrefillAttentionParams, same results.
// Header-only device code for the nvcc-built benches; include once per program.
#pragma once

#include <type_traits>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/paged_prefill_attention.cuh"

namespace lector::bench::previous {
namespace detail {

using namespace lector::gpu;

constexpr int kTcRows = 64;     // (token, head) rows per CTA: 16 per warp
constexpr int kTcThreads = 128;
constexpr int kTcKeys = 32;     // keys per shared-memory tile (two KV blocks)
constexpr int kSmemPad = 8;     // elements of padding per row: conflict-free operand reads

// --- mma.sync (sm_80+; ldmatrix and packing: common.cuh) ---

template <class T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (std::is_same_v<T, __half>) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}


// One thread's share of a K/V tile in flight: kTcKeys * D / kVec 16-byte chunks over kTcThreads.
template <class T, int D>
struct TileRegs {
    static constexpr int kChunksPerRow = D / kVecElems<T>;
    static constexpr int kPerThread = kTcKeys * kChunksPerRow / kTcThreads;
    static_assert(kTcKeys * kChunksPerRow % kTcThreads == 0, "tile must split evenly");
    uint4 k[kPerThread];
    uint4 v[kPerThread];
};

// Loads keys [k0, k0 + kTcKeys) of one KV head into registers; keys at or past kvEnd, or in a block
// outside the pool, read as zeros (masked later: zeros keep P V free of garbage NaNs).
template <class T, int D>
__device__ __forceinline__ void loadTile(TileRegs<T, D>& regs, const PagedPrefillAttentionParams& p,
                                         const int32_t* table, int kvHead, int k0, int kvEnd)
{
    constexpr int kVec = kVecElems<T>;
#pragma unroll
    for (int i = 0; i < TileRegs<T, D>::kPerThread; ++i) {
        const int c = threadIdx.x + i * kTcThreads;
        const int key = c / TileRegs<T, D>::kChunksPerRow, chunk = c % TileRegs<T, D>::kChunksPerRow;
        const int kIdx = k0 + key;
        regs.k[i] = regs.v[i] = make_uint4(0, 0, 0, 0);
        if (kIdx < kvEnd) {
            const int32_t block = table[kIdx / kKvBlockSize];
            if (block >= 0 && block < p.numBlocks) {
                const int64_t off =
                    ((int64_t(block) * kKvBlockSize + kIdx % kKvBlockSize) * p.numKvHeads + kvHead) * D + chunk * kVec;
                regs.k[i] = loadNc16(static_cast<const T*>(p.keyCache) + off);
                regs.v[i] = loadNc16(static_cast<const T*>(p.valueCache) + off);
            }
        }
    }
}

template <class T, int D>
__device__ __forceinline__ void storeTile(const TileRegs<T, D>& regs, T* kTile, T* vTile, bool* keyOk,
                                          const int32_t* table, int numBlocks, int k0, int kvEnd)
{
    constexpr int kVec = kVecElems<T>, kStride = D + kSmemPad;
#pragma unroll
    for (int i = 0; i < TileRegs<T, D>::kPerThread; ++i) {
        const int c = threadIdx.x + i * kTcThreads;
        const int key = c / TileRegs<T, D>::kChunksPerRow, chunk = c % TileRegs<T, D>::kChunksPerRow;
        *reinterpret_cast<uint4*>(kTile + key * kStride + chunk * kVec) = regs.k[i];
        *reinterpret_cast<uint4*>(vTile + key * kStride + chunk * kVec) = regs.v[i];
    }
    if (threadIdx.x < kTcKeys) {
        const int kIdx = k0 + threadIdx.x;
        const int32_t block = kIdx < kvEnd ? table[kIdx / kKvBlockSize] : -1;
        keyOk[threadIdx.x] = block >= 0 && block < numBlocks;
    }
}

template <class T, int D, int G>
__global__ void __launch_bounds__(kTcThreads) prefillTensorCoreKernel(PagedPrefillAttentionParams p)
{
    gridDependencyWait();
    allowDependentLaunch();
    constexpr int kStride = D + kSmemPad;
    constexpr int kKSteps = D / 16;      // k-steps of Q K^T
    constexpr int kDimTiles = D / 8;     // n-tiles of O
    constexpr int kKeyTiles = kTcKeys / 8;
    static_assert(D % 16 == 0, "head dim must be a multiple of 16");
    __shared__ alignas(16) T kTile[kTcKeys * kStride];
    __shared__ alignas(16) T vTile[kTcKeys * kStride];
    __shared__ bool keyOk[kTcKeys];

    const int seq = blockIdx.y, kvHead = blockIdx.z;
    const int qStart = p.cuSeqlensQ[seq];
    const int queryLen = p.cuSeqlensQ[seq + 1] - qStart;
    // Last tiles first: under the causal mask they see the most keys, so they should start earliest.
    const int rowBase = (gridDim.x - 1 - blockIdx.x) * kTcRows;
    if (rowBase >= queryLen * G) return;
    const int contextLen = p.contextLens[seq];
    const int cachedLen = contextLen - queryLen;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int gq = lane >> 2, tq = lane & 3;

    // This thread's two rows (fragment rows gq and gq + 8 of the warp's 16).
    const int rowA = rowBase + warp * 16 + gq, rowB = rowA + 8;
    const int tokA = rowA / G, tokB = rowB / G;
    const bool validA = tokA < queryLen, validB = tokB < queryLen;
    const int posA = cachedLen + tokA, posB = cachedLen + tokB;
    const T* qA = static_cast<const T*>(p.query) + (qStart + tokA) * p.queryTokenStride + (kvHead * G + rowA % G) * D;
    const T* qB = static_cast<const T*>(p.query) + (qStart + tokB) * p.queryTokenStride + (kvHead * G + rowB % G) * D;
    uint32_t qFrag[kKSteps][4];
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
        qFrag[ks][0] = validA ? load32(qA + ks * 16 + 2 * tq) : 0u;
        qFrag[ks][1] = validB ? load32(qB + ks * 16 + 2 * tq) : 0u;
        qFrag[ks][2] = validA ? load32(qA + ks * 16 + 8 + 2 * tq) : 0u;
        qFrag[ks][3] = validB ? load32(qB + ks * 16 + 8 + 2 * tq) : 0u;
    }

    // Keys any row of this CTA may see: up to the last valid row's position.
    const int lastRow = min(rowBase + kTcRows, queryLen * G) - 1;
    const int kvEnd = min(contextLen, cachedLen + lastRow / G + 1);
    const int32_t* table = p.blockTable + int64_t(seq) * p.blockTableStride;
    const float scaleLog2 = p.scale * 1.4426950408889634f;

    float o[kDimTiles][4];
#pragma unroll
    for (int dn = 0; dn < kDimTiles; ++dn) o[dn][0] = o[dn][1] = o[dn][2] = o[dn][3] = 0.0f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f;

    TileRegs<T, D> regs;
    if (kvEnd > 0) loadTile<T, D>(regs, p, table, kvHead, 0, kvEnd);
    for (int k0 = 0; k0 < kvEnd; k0 += kTcKeys) {
        __syncthreads();  // the previous tile is consumed
        storeTile<T, D>(regs, kTile, vTile, keyOk, table, p.numBlocks, k0, kvEnd);
        __syncthreads();
        if (k0 + kTcKeys < kvEnd) loadTile<T, D>(regs, p, table, kvHead, k0 + kTcKeys, kvEnd);

        // S = Q K^T for 4 tiles of 8 keys; B fragment = K row (key gq), dims 2tq.. of the k-step.
        float s[kKeyTiles][4];
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt) {
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
            const T* kRow = kTile + (nt * 8 + gq) * kStride + 2 * tq;
#pragma unroll
            for (int ks = 0; ks < kKSteps; ++ks)
                mma16816<T>(s[nt], qFrag[ks], load32(kRow + ks * 16), load32(kRow + ks * 16 + 8));
        }
        // Causal mask, scale to log2 units, row maxima (rows spread over the 4 threads of a quad).
        float maxA = -INFINITY, maxB = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int keyInTile = nt * 8 + 2 * tq + (e & 1);
                const int key = k0 + keyInTile;
                const bool ok = keyOk[keyInTile] && (e < 2 ? validA && key <= posA : validB && key <= posB);
                s[nt][e] = ok ? s[nt][e] * scaleLog2 : -INFINITY;
            }
            maxA = fmaxf(maxA, fmaxf(s[nt][0], s[nt][1]));
            maxB = fmaxf(maxB, fmaxf(s[nt][2], s[nt][3]));
        }
#pragma unroll
        for (int off = 1; off < 4; off <<= 1) {
            maxA = fmaxf(maxA, __shfl_xor_sync(0xffffffffu, maxA, off));
            maxB = fmaxf(maxB, __shfl_xor_sync(0xffffffffu, maxB, off));
        }
        const float newA = fmaxf(mA, maxA), newB = fmaxf(mB, maxB);
        const float baseA = newA == -INFINITY ? 0.0f : newA, baseB = newB == -INFINITY ? 0.0f : newB;
        const float alphaA = exp2f(mA - baseA), alphaB = exp2f(mB - baseB);
        mA = newA;
        mB = newB;
        lA *= alphaA;
        lB *= alphaB;
#pragma unroll
        for (int dn = 0; dn < kDimTiles; ++dn) {
            o[dn][0] *= alphaA;
            o[dn][1] *= alphaA;
            o[dn][2] *= alphaB;
            o[dn][3] *= alphaB;
        }
#pragma unroll
        for (int nt = 0; nt < kKeyTiles; ++nt) {
            s[nt][0] = exp2f(s[nt][0] - baseA);
            s[nt][1] = exp2f(s[nt][1] - baseA);
            s[nt][2] = exp2f(s[nt][2] - baseB);
            s[nt][3] = exp2f(s[nt][3] - baseB);
            lA += s[nt][0] + s[nt][1];
            lB += s[nt][2] + s[nt][3];
        }
        // O += P V: the S accumulators of key tiles 2j, 2j+1 are exactly the A fragment of k-step j.
#pragma unroll
        for (int j = 0; j < kTcKeys / 16; ++j) {
            const uint32_t pFrag[4] = {packPair<T>(s[2 * j][0], s[2 * j][1]), packPair<T>(s[2 * j][2], s[2 * j][3]),
                                       packPair<T>(s[2 * j + 1][0], s[2 * j + 1][1]),
                                       packPair<T>(s[2 * j + 1][2], s[2 * j + 1][3])};
            const T* vRow = vTile + (j * 16 + (lane & 15)) * kStride + (lane >> 4) * 8;
#pragma unroll
            for (int dn = 0; dn < kDimTiles; dn += 2) {
                uint32_t b[4];
                ldmatrixX4Trans(b, vRow + dn * 8);
                mma16816<T>(o[dn], pFrag, b[0], b[1]);
                mma16816<T>(o[dn + 1], pFrag, b[2], b[3]);
            }
        }
    }

#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
        lA += __shfl_xor_sync(0xffffffffu, lA, off);
        lB += __shfl_xor_sync(0xffffffffu, lB, off);
    }
    const float invA = lA > 0.0f ? 1.0f / lA : 0.0f, invB = lB > 0.0f ? 1.0f / lB : 0.0f;
    T* outA = static_cast<T*>(p.out) + (qStart + tokA) * p.outTokenStride + (kvHead * G + rowA % G) * D + 2 * tq;
    T* outB = static_cast<T*>(p.out) + (qStart + tokB) * p.outTokenStride + (kvHead * G + rowB % G) * D + 2 * tq;
#pragma unroll
    for (int dn = 0; dn < kDimTiles; ++dn) {
        if (validA) *reinterpret_cast<uint32_t*>(outA + dn * 8) = packPair<T>(o[dn][0] * invA, o[dn][1] * invA);
        if (validB) *reinterpret_cast<uint32_t*>(outB + dn * 8) = packPair<T>(o[dn][2] * invB, o[dn][3] * invB);
    }
}

template <class T>
cudaError_t launchTensorCore(const PagedPrefillAttentionParams& p, cudaStream_t stream)
{
    if constexpr (std::is_same_v<T, float>) {
        return cudaErrorInvalidValue;  // mma.sync f16/bf16 only; float32 takes the SIMT path
    } else {
        return dispatchHeadDim(p.headDim, [&]<int D>() {
            return dispatchGroupSize(p.numQHeads / p.numKvHeads, [&]<int G>() {
                const int64_t tiles = ceilDiv(int64_t(p.maxQueryLen) * G, kTcRows);
                if (tiles > 0x7fffffff || p.numSeqs > 65535 || p.numKvHeads > 65535) return cudaErrorInvalidValue;
                const dim3 grid(static_cast<unsigned>(tiles), p.numSeqs, p.numKvHeads);
                return launchKernel(prefillTensorCoreKernel<T, D, G>, grid, kTcThreads, 0, stream, p);
            });
        });
    }
}

}  // namespace detail

// fp16 / bf16 only (cudaErrorInvalidValue for float32); the parameter checks are the shipped launcher's.
inline cudaError_t launchPrefillAttention(const gpu::PagedPrefillAttentionParams& p, cudaStream_t stream)
{
    if (p.dtype == gpu::DType::F32 || p.numQHeads <= 0 || p.numKvHeads <= 0 || p.numQHeads % p.numKvHeads != 0)
        return cudaErrorInvalidValue;
    if (p.numTokens == 0 || p.numSeqs == 0) return cudaSuccess;
    return gpu::dispatchDType(p.dtype, [&]<class T>() { return detail::launchTensorCore<T>(p, stream); });
}

}  // namespace lector::bench::previous
