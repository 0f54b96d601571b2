// One query head attending to the first numKeys tokens of a paged sequence: the shared inner loop of
// the decode and prefill references. Internal to gpu/ref.
#pragma once

#include <cmath>
#include <vector>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref::detail {

struct PagedKv {
    DType dtype;
    const void* keyCache;    // [numBlocks, kKvBlockSize, numKvHeads, headDim]
    const void* valueCache;
    const int32_t* blockRow; // this sequence's block table row
    int numKvHeads;
    int headDim;
    int numBlocks;
};

// out[d] = sum_t softmax_t(scale * q . k_t) v_t[d] over t < numKeys, for KV head kvHead; zeros when
// numKeys <= 0. A block id outside [0, numBlocks) contributes nothing (the kernels skip it too).
inline void attendOne(const PagedKv& kv, int kvHead, const void* query, int64_t qOffset, float scale,
                      int numKeys, void* out, int64_t outOffset, DType outType)
{
    const int D = kv.headDim;
    std::vector<double> logits(numKeys > 0 ? numKeys : 0);
    std::vector<int64_t> rows(logits.size());
    double maxLogit = -INFINITY;
    for (int t = 0; t < numKeys; ++t) {
        const int32_t block = kv.blockRow[t / kKvBlockSize];
        if (block < 0 || block >= kv.numBlocks) {
            rows[t] = -1;
            continue;
        }
        rows[t] = ((int64_t(block) * kKvBlockSize + t % kKvBlockSize) * kv.numKvHeads + kvHead) * D;
        double dot = 0.0;
        for (int d = 0; d < D; ++d)
            dot += double(loadElem(query, qOffset + d, kv.dtype)) * loadElem(kv.keyCache, rows[t] + d, kv.dtype);
        logits[t] = dot * scale;
        maxLogit = std::max(maxLogit, logits[t]);
    }
    double sum = 0.0;
    for (int t = 0; t < numKeys; ++t) {
        logits[t] = rows[t] < 0 ? 0.0 : std::exp(logits[t] - maxLogit);
        sum += logits[t];
    }
    for (int d = 0; d < D; ++d) {
        double acc = 0.0;
        for (int t = 0; t < numKeys; ++t)
            if (rows[t] >= 0) acc += logits[t] * loadElem(kv.valueCache, rows[t] + d, kv.dtype);
        storeElem(out, outOffset + d, outType, sum > 0.0 ? static_cast<float>(acc / sum) : 0.0f);
    }
}

}  // namespace lector::gpu::ref::detail
