// Reference paged KV write: element copies (float32 round trip is exact for every DType).
#include "gpu/ref/kv_cache_write_ref.h"

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void kvCacheWriteRef(const KvCacheWriteParams& p)
{
    const int64_t numSlots = int64_t(p.numBlocks) * kKvBlockSize;
    const int64_t tokenElems = int64_t(p.numKvHeads) * p.headDim;
    for (int t = 0; t < p.numTokens; ++t) {
        const int64_t slot = p.slotMapping[t];
        if (slot < 0 || slot >= numSlots) continue;
        for (int h = 0; h < p.numKvHeads; ++h) {
            for (int d = 0; d < p.headDim; ++d) {
                const int64_t dst = slot * tokenElems + int64_t(h) * p.headDim + d;
                storeElem(p.keyCache, dst, p.dtype,
                          loadElem(p.key, t * p.keyTokenStride + h * p.keyHeadStride + d, p.dtype));
                storeElem(p.valueCache, dst, p.dtype,
                          loadElem(p.value, t * p.valueTokenStride + h * p.valueHeadStride + d, p.dtype));
            }
        }
    }
}

}  // namespace lector::gpu::ref
