// Reference paged prefill attention: new token i of sequence s sits at absolute position
// contextLen - queryLen + i and attends causally to keys [0, position].
#include "gpu/ref/paged_prefill_attention_ref.h"

#include "gpu/ref/paged_attention_ref_common.h"

namespace lector::gpu::ref {

void pagedPrefillAttentionRef(const PagedPrefillAttentionParams& p)
{
    const int groupSize = p.numQHeads / p.numKvHeads;
    for (int s = 0; s < p.numSeqs; ++s) {
        const detail::PagedKv kv{p.dtype, p.keyCache, p.valueCache, p.blockTable + s * p.blockTableStride,
                                 p.numKvHeads, p.headDim, p.numBlocks};
        const int first = p.cuSeqlensQ[s];
        const int queryLen = p.cuSeqlensQ[s + 1] - first;
        const int cachedLen = p.contextLens[s] - queryLen;
        for (int i = 0; i < queryLen; ++i) {
            const int64_t token = first + i;
            for (int h = 0; h < p.numQHeads; ++h)
                detail::attendOne(kv, h / groupSize, p.query,
                                  token * p.queryTokenStride + int64_t(h) * p.headDim, p.scale,
                                  cachedLen + i + 1, p.out, token * p.outTokenStride + int64_t(h) * p.headDim,
                                  p.dtype);
        }
    }
}

}  // namespace lector::gpu::ref
