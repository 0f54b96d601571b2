// Paged KV write: one CTA per token copies its K and V heads to the cache slot, 16 bytes per thread
// when every row is 16-byte aligned, element by element otherwise.
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/kv_cache_write.cuh"

namespace lector::gpu {
namespace {

constexpr int kThreads = 128;

template <class T, bool kVector>
__global__ void kvCacheWriteKernel(KvCacheWriteParams p)
{
    gridDependencyWait();
    allowDependentLaunch();
    const int token = blockIdx.x;
    const int64_t slot = p.slotMapping[token];
    if (slot < 0 || slot >= int64_t(p.numBlocks) * kKvBlockSize) return;
    const int64_t tokenElems = int64_t(p.numKvHeads) * p.headDim;
    const T* key = static_cast<const T*>(p.key) + token * p.keyTokenStride;
    const T* value = static_cast<const T*>(p.value) + token * p.valueTokenStride;
    T* keyDst = static_cast<T*>(p.keyCache) + slot * tokenElems;
    T* valueDst = static_cast<T*>(p.valueCache) + slot * tokenElems;
    if constexpr (kVector) {
        constexpr int kVec = kVecElems<T>;
        const int vecsPerHead = p.headDim / kVec;
        for (int i = threadIdx.x; i < p.numKvHeads * vecsPerHead; i += kThreads) {
            const int h = i / vecsPerHead, d = (i % vecsPerHead) * kVec;
            *reinterpret_cast<uint4*>(keyDst + h * p.headDim + d) = loadNc16(key + h * p.keyHeadStride + d);
            *reinterpret_cast<uint4*>(valueDst + h * p.headDim + d) = loadNc16(value + h * p.valueHeadStride + d);
        }
    } else {
        for (int i = threadIdx.x; i < tokenElems; i += kThreads) {
            const int h = i / p.headDim, d = i % p.headDim;
            keyDst[i] = key[h * p.keyHeadStride + d];
            valueDst[i] = value[h * p.valueHeadStride + d];
        }
    }
}

}  // namespace

cudaError_t launchKvCacheWrite(const KvCacheWriteParams& p, cudaStream_t stream)
{
    if (p.numTokens < 0 || p.numKvHeads <= 0 || p.headDim <= 0 || p.numBlocks < 0) return cudaErrorInvalidValue;
    if (p.numTokens == 0) return cudaSuccess;
    return dispatchDType(p.dtype, [&]<class T>() {
        const int64_t vec = kVecElems<T>;
        const bool vector = p.headDim % vec == 0 && p.keyTokenStride % vec == 0 && p.keyHeadStride % vec == 0 &&
                            p.valueTokenStride % vec == 0 && p.valueHeadStride % vec == 0 && aligned16(p.key) &&
                            aligned16(p.value) && aligned16(p.keyCache) && aligned16(p.valueCache);
        return vector ? launchKernel(kvCacheWriteKernel<T, true>, p.numTokens, kThreads, 0, stream, p)
                      : launchKernel(kvCacheWriteKernel<T, false>, p.numTokens, kThreads, 0, stream, p);
    });
}

}  // namespace lector::gpu
