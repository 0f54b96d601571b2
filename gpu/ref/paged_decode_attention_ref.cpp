// Reference paged decode attention: every query head of every sequence over its whole context. With the
// rope prologue (p.rope.key) it is the composition the fused kernel replaces: qk_norm_rope's reference
// with its K/V write on copies of the raw query and key, then the attention over the rotated query.
#include "gpu/ref/paged_decode_attention_ref.h"

#include <cstring>
#include <vector>

#include "gpu/ref/paged_attention_ref_common.h"
#include "gpu/ref/qk_norm_rope_ref.h"

namespace lector::gpu::ref {
namespace {

// Rows of `heads * headDim` elements at `stride`, packed densely into a byte buffer.
std::vector<unsigned char> packRows(const void* base, int64_t stride, int rows, int heads, int headDim, DType t)
{
    const size_t elem = t == DType::F32 ? 4 : 2, rowBytes = size_t(heads) * headDim * elem;
    std::vector<unsigned char> out(rowBytes * size_t(rows));
    for (int r = 0; r < rows; ++r)
        std::memcpy(out.data() + rowBytes * size_t(r), static_cast<const unsigned char*>(base) + size_t(r) * stride * elem,
                    rowBytes);
    return out;
}

}  // namespace

void pagedDecodeAttentionRef(const PagedDecodeAttentionParams& p)
{
    const int groupSize = p.numQHeads / p.numKvHeads;
    const void* query = p.query;
    int64_t queryStride = p.querySeqStride;
    std::vector<unsigned char> rotatedQuery, rotatedKey;
    if (p.rope.key) {
        rotatedQuery = packRows(p.query, p.querySeqStride, p.numSeqs, p.numQHeads, p.headDim, p.dtype);
        rotatedKey = packRows(p.rope.key, p.rope.keySeqStride, p.numSeqs, p.numKvHeads, p.headDim, p.dtype);
        QkNormRopeParams r;
        r.dtype = p.dtype;
        r.query = rotatedQuery.data();
        r.key = rotatedKey.data();
        r.positions = p.rope.positions;
        r.positionsInt64 = p.rope.positionsInt64;
        r.cosSinCache = p.rope.cosSinCache;
        r.queryNormWeight = p.rope.queryNormWeight;
        r.keyNormWeight = p.rope.keyNormWeight;
        r.queryTokenStride = int64_t(p.numQHeads) * p.headDim;
        r.keyTokenStride = int64_t(p.numKvHeads) * p.headDim;
        r.positionsAxisStride = p.rope.positionsAxisStride;
        r.numTokens = p.numSeqs;
        r.numQHeads = p.numQHeads;
        r.numKvHeads = p.numKvHeads;
        r.headDim = p.headDim;
        r.maxPosition = p.rope.maxPosition;
        r.numPosAxes = p.rope.numPosAxes;
        for (int a = 0; a < 4; ++a) r.sections[a] = p.rope.sections[a];
        r.eps = p.rope.eps;
        r.keyCache = const_cast<void*>(p.keyCache);
        r.valueCache = const_cast<void*>(p.valueCache);
        r.value = p.rope.value;
        r.valueTokenStride = p.rope.valueSeqStride;
        r.slotMapping = p.rope.slotMapping;
        r.numCacheSlots = p.rope.numCacheSlots;
        qkNormRopeRef(r);
        query = rotatedQuery.data();
        queryStride = r.queryTokenStride;
    }
    for (int s = 0; s < p.numSeqs; ++s) {
        const detail::PagedKv kv{p.dtype, p.keyCache, p.valueCache, p.blockTable + s * p.blockTableStride,
                                 p.numKvHeads, p.headDim, p.numBlocks};
        for (int h = 0; h < p.numQHeads; ++h)
            detail::attendOne(kv, h / groupSize, query, s * queryStride + int64_t(h) * p.headDim, p.scale,
                              p.contextLens[s], p.out, s * p.outSeqStride + int64_t(h) * p.headDim, p.dtype);
    }
}

}  // namespace lector::gpu::ref
