// Reference paged decode attention: every query head of every sequence over its whole context.
#include "gpu/ref/paged_decode_attention_ref.h"

#include "gpu/ref/paged_attention_ref_common.h"

namespace lector::gpu::ref {

void pagedDecodeAttentionRef(const PagedDecodeAttentionParams& p)
{
    const int groupSize = p.numQHeads / p.numKvHeads;
    for (int s = 0; s < p.numSeqs; ++s) {
        const detail::PagedKv kv{p.dtype, p.keyCache, p.valueCache, p.blockTable + s * p.blockTableStride,
                                 p.numKvHeads, p.headDim, p.numBlocks};
        for (int h = 0; h < p.numQHeads; ++h)
            detail::attendOne(kv, h / groupSize, p.query, s * p.querySeqStride + int64_t(h) * p.headDim,
                              p.scale, p.contextLens[s], p.out, s * p.outSeqStride + int64_t(h) * p.headDim,
                              p.dtype);
    }
}

}  // namespace lector::gpu::ref
