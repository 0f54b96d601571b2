// Paged attention for prefill chunks: the new tokens of several sequences, flattened into one batch
// (cuSeqlensQ), attend causally to their sequence's cached tokens plus the new ones. The runner writes
// the new K/V into the cache first (kv_cache_write.cuh), so every key comes from the paged cache.
// Decode tokens (one new token) can ride in the same batch. Engine thread, once per layer.
//
// Two implementations: a tensor-core kernel (mma.sync, fp16/bf16, sm_80+) whose CTAs of two warp
// groups own 64 or 128 (token, query head) rows of one KV head, and a SIMT kernel (any dtype; float32
// runs only this one) that treats each new token as a decode query with its own causal limit, split-K
// like decode. The runner sends a step's decode tokens to decode attention and the rest here.
// Page table and cache layout as in paged_decode_attention.cuh.
#pragma once

#include "gpu/kernels/paged_decode_attention.cuh"
#include "gpu/kernels/types.h"

namespace lector::gpu {

enum class PrefillImpl : int32_t {
    Auto,        // tensor cores for fp16/bf16, SIMT for fp32
    TensorCore,  // fp16/bf16 only; the two warp groups of a CTA split keys or rows as the batch suits
    Simt,
    // The tensor-core kernel with its warp groups forced one way (tests and benches): both on the keys
    // of the same 64 rows (the choice for few CTAs), or on 64 rows each (many CTAs).
    TensorCoreSplitKeys,
    TensorCoreSplitRows,
};

struct PagedPrefillAttentionParams {
    DType dtype = DType::F16;          // of query, out and the caches
    PrefillImpl impl = PrefillImpl::Auto;
    void* out = nullptr;               // [numTokens, numQHeads, headDim], outTokenStride, heads contiguous
    const void* query = nullptr;       // [numTokens, numQHeads, headDim], queryTokenStride, heads contiguous
    const void* keyCache = nullptr;    // [numBlocks, kKvBlockSize, numKvHeads, headDim] contiguous
    const void* valueCache = nullptr;
    const int32_t* blockTable = nullptr;   // [numSeqs, blockTableStride]
    const int32_t* cuSeqlensQ = nullptr;   // [numSeqs + 1]: sequence s owns tokens [cu[s], cu[s+1])
    const int32_t* contextLens = nullptr;  // [numSeqs]: cached + new tokens of each sequence
    float* workspace = nullptr;        // SIMT path with partitions: pagedPrefillWorkspaceFloats() floats
    int32_t* counters = nullptr;       // ... and [numTokens * numKvHeads] split-K tickets, zero (left zero)
    int64_t queryTokenStride = 0;      // elements
    int64_t outTokenStride = 0;
    int64_t blockTableStride = 0;
    int numTokens = 0;                 // == cuSeqlensQ[numSeqs]
    int numSeqs = 0;
    int numQHeads = 0;
    int numKvHeads = 0;                // numQHeads / numKvHeads in {1, 2, 4, 8}
    int headDim = 0;                   // 128
    int numBlocks = 0;                 // pool size: block ids outside [0, numBlocks) are read as masked
    int maxQueryLen = 0;               // host-side bound on new tokens per sequence: sizes the grid
    int maxContextLen = 0;             // host-side bound on contextLens
    int partitionSize = 0;             // SIMT path split-K tokens (multiple of kKvBlockSize) or 0
    float scale = 1.0f;
};

// Whether `impl` names the tensor-core kernel outright (which takes fp16/bf16 only).
constexpr bool prefillForcesTensorCores(PrefillImpl impl)
{
    return impl != PrefillImpl::Auto && impl != PrefillImpl::Simt;
}

// Whether `p` runs the tensor-core kernel (after resolving Auto).
constexpr bool prefillUsesTensorCores(const PagedPrefillAttentionParams& p)
{
    return p.dtype != DType::F32 && p.impl != PrefillImpl::Simt;
}

// Floats of split-K workspace the SIMT path needs (0 for the tensor-core path or one partition).
inline int64_t pagedPrefillWorkspaceFloats(const PagedPrefillAttentionParams& p)
{
    if (prefillUsesTensorCores(p)) return 0;
    return pagedAttentionWorkspaceFloats(p.numTokens, p.numQHeads, p.headDim,
                                         pagedDecodeNumPartitions(p.maxContextLen, p.partitionSize));
}

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Asynchronous on `stream`. cudaErrorInvalidValue for unsupported head dim / group size / dtype-impl
// pairs (TensorCore with float32) or a missing workspace.
cudaError_t launchPagedPrefillAttention(const PagedPrefillAttentionParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
