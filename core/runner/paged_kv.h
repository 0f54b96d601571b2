// Paged K/V storage and the KvCache view the decoder runs one engine step through (core/runner).
// PagedKvStorage holds, per layer, K and V as [numBlocks * blockSize, numKvHeads, headDim] slots; which
// slots belong to which sequence is the scheduler's business (core/kv block tables). StepKvCache serves
// one flattened forward over several sequences' chunks (prefill chunks and decode tokens together): it
// writes each new token's K/V into its slot and computes each sequence's causal attention over its own
// slots (cached + new) with the same float32-softmax formula as ContiguousKvCache, so the batched engine
// reproduces the single-sequence reference path. It is the reference runner's view (libtorch ops on
// any device); the GPU engine's decoder, ModelRunner (model_runner.h), reads the same storage with
// gpu/'s paged kernels instead.
// Threads: engine thread only.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "core/model/hunyuan/decoder.h"

namespace lector::runner {

class PagedKvStorage {
public:
    PagedKvStorage(int numLayers, int numKvHeads, int headDim, int numBlocks, int blockSize, at::ScalarType dtype,
                   at::Device device);

    int numLayers() const { return static_cast<int>(m_keys.size()); }
    int numSlots() const { return m_numSlots; }
    int blockSize() const { return m_blockSize; }
    at::Tensor& keys(int layer) { return m_keys[static_cast<size_t>(layer)]; }
    at::Tensor& values(int layer) { return m_values[static_cast<size_t>(layer)]; }

private:
    int m_numSlots;
    int m_blockSize;
    std::vector<at::Tensor> m_keys;    // per layer [numSlots, numKvHeads, headDim]
    std::vector<at::Tensor> m_values;
};

// One sequence's part of a step: rows [offset, offset + numNew) of the flattened batch are its new tokens,
// at sequence indices past .. past + numNew - 1; slots [past + numNew] are the cache slots of all its
// tokens 0 .. past + numNew - 1, the new ones last (block b holds slots b * blockSize .. + blockSize - 1).
struct StepSequence {
    std::int64_t offset = 0;
    std::int64_t numNew = 0;
    std::int64_t past = 0;
    std::vector<std::int64_t> slots;
};

class StepKvCache final : public model::hunyuan::KvCache {
public:
    StepKvCache(PagedKvStorage& storage, std::vector<StepSequence> sequences);

    // Not meaningful for a batch of sequences; the decoder's forward() does not use it.
    std::int64_t numTokens() const override { return 0; }
    at::Tensor appendAndAttend(int layerIdx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               double scale) override;
    void advance(std::int64_t) override {}
    void clear() override {}

private:
    PagedKvStorage& m_storage;
    std::vector<StepSequence> m_sequences;
    at::Tensor m_newSlots;                   // [total new tokens] int64: each batch row's slot (storage device)
    std::vector<at::Tensor> m_contextSlots;  // per sequence [past + numNew] int64
};

// Causal GQA attention of n queries at sequence indices past .. past+n-1 over keys/values [past+n, kvHeads, d]:
// scores in float32, softmax, -> [n, heads, d] in q's dtype. Query head h reads KV head h / (heads / kvHeads).
at::Tensor causalAttention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, std::int64_t past,
                           double scale);

}  // namespace lector::runner
