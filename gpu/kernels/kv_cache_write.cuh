// Paged KV write: copies the keys and values of this step's new tokens into the paged KV cache at
// the slots the KV cache manager assigned (vLLM reshape_and_cache). Called by the model runner on the
// engine thread, once per layer, before attention reads the cache.
//
// Cache layout (every paged kernel): [numBlocks, kKvBlockSize, numKvHeads, headDim], contiguous, so
// one token's heads are one contiguous run and a block is kKvBlockSize such runs.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

struct KvCacheWriteParams {
    DType dtype = DType::F16;       // of key, value and both caches
    const void* key = nullptr;      // [numTokens, numKvHeads, headDim], strides below, headDim contiguous
    const void* value = nullptr;    // [numTokens, numKvHeads, headDim]
    void* keyCache = nullptr;       // [numBlocks, kKvBlockSize, numKvHeads, headDim] contiguous
    void* valueCache = nullptr;     // [numBlocks, kKvBlockSize, numKvHeads, headDim] contiguous
    const int64_t* slotMapping = nullptr;  // [numTokens]: blockId * kKvBlockSize + offset; < 0 skips (padding)
    int64_t keyTokenStride = 0;     // elements between tokens of key
    int64_t keyHeadStride = 0;      // elements between heads of key
    int64_t valueTokenStride = 0;
    int64_t valueHeadStride = 0;
    int numTokens = 0;
    int numKvHeads = 0;
    int headDim = 0;
    int numBlocks = 0;              // slots >= numBlocks * kKvBlockSize are skipped, never written
};

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Asynchronous on `stream`; returns the launch error (cudaErrorInvalidValue for bad dims).
cudaError_t launchKvCacheWrite(const KvCacheWriteParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
