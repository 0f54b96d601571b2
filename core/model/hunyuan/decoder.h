// TextDecoder: HunyuanOCR 1.0's language model (docs/hunyuanocr-spec.md §4.2, §6) on libtorch, the
// numerical reference for the GPU engine. Token embeddings with the vision rows scattered over the image
// placeholders, 24 pre-norm layers (RMSNorm, GQA attention with XD-RoPE then QK-norm, SwiGLU MLP), final
// RMSNorm and the tied LM head.
// Decoding is incremental: forward() runs n new tokens (a whole prompt, or one token per step) against
// what a KvCache already holds. The cache is an interface so the GPU engine's paged cache can replace
// the contiguous one here; it also owns the attention over its storage, since a paged layout needs its
// own kernel.
// Threads: built at model load; forward() and the caches are engine-thread only (the cache is mutated);
// embed() and logits() are const and thread-safe.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

#include "core/common/result.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/hunyuan/xdrope.h"

namespace lector::model::hunyuan {

// --- KV cache ---

// K/V storage of one sequence for every layer, plus the attention over it.
// Protocol of one forward pass over n new tokens: for layer 0..numLayers-1, appendAndAttend(layer, ...)
// exactly once; then advance(n). Keys are stored after RoPE and QK-norm (spec §6).
class KvCache {
public:
    virtual ~KvCache() = default;

    // Tokens every layer holds: the sequence index of the next token.
    virtual int64_t numTokens() const = 0;

    // Stores k, v [n, numKvHeads, headDim] of the n new tokens of layer layerIdx after the numTokens()
    // held ones, and returns the causal attention of q [n, numHeads, headDim] (new token i sits at
    // numTokens() + i and sees every token up to itself) -> [n, numHeads, headDim], dtype of q.
    // Query head h reads KV head h / (numHeads / numKvHeads). scores = q k^T * scale, softmax in float32.
    virtual at::Tensor appendAndAttend(int layerIdx, const at::Tensor& q, const at::Tensor& k,
                                       const at::Tensor& v, double scale) = 0;

    // Commits the n tokens every layer has just appended.
    virtual void advance(int64_t numNewTokens) = 0;

    // Forgets every token (the storage may be kept for reuse).
    virtual void clear() = 0;
};

// One contiguous buffer per layer, [numKvHeads, capacity, headDim], doubled when full. Attention is the
// eager float32 formula (matmul, mask, softmax, matmul), processed in query chunks so a long prefill does
// not need a full [heads, L, L] score matrix at once.
class ContiguousKvCache final : public KvCache {
public:
    ContiguousKvCache(int numLayers, int numKvHeads, int headDim, int64_t reserveTokens = 0,
                      at::ScalarType dtype = at::kFloat, at::Device device = at::kCPU);

    int64_t numTokens() const override { return m_numTokens; }
    at::Tensor appendAndAttend(int layerIdx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               double scale) override;
    void advance(int64_t numNewTokens) override;
    void clear() override { m_numTokens = 0; }

    int64_t capacity() const { return m_capacity; }

private:
    void reserve(int64_t numTokens);

    int m_numKvHeads;
    int m_headDim;
    at::ScalarType m_dtype;
    at::Device m_device;
    int64_t m_numTokens = 0;
    int64_t m_capacity = 0;
    std::vector<at::Tensor> m_keys;    // per layer [numKvHeads, capacity, headDim]
    std::vector<at::Tensor> m_values;  // per layer [numKvHeads, capacity, headDim]
};

// --- decoder ---

class TextDecoder {
public:
    // Reads the "model.*" tensors of spec §10 from store, converted to dtype on device (float32 on the
    // CPU is the reference; other dtypes follow the transformers casts: norms and RoPE in float32).
    // Errors "bad_model": a tensor is missing or has the wrong shape for config (message names it and
    // both shapes), or the config is inconsistent (heads, sections).
    static Result<TextDecoder> load(const WeightStore& store, const TextConfig& config,
                                    at::ScalarType dtype = at::kFloat, at::Device device = at::kCPU);

    const TextConfig& config() const { return m_config; }
    const XdRope& rope() const { return m_rope; }
    at::ScalarType dtype() const { return m_dtype; }
    at::Device device() const { return m_device; }

    // Input embeddings [L, hidden] of ids, with the rows at imageTokenId overwritten in order by
    // imageEmbeds [T, hidden] (undefined or empty when the prompt has no image). Errors "bad_input":
    // the number of placeholders differs from T, imageEmbeds has the wrong width, or an id is out of
    // the vocabulary (message gives the counts / the id).
    Result<at::Tensor> embed(const std::vector<int>& ids, const at::Tensor& imageEmbeds, int imageTokenId) const;

    // Runs n new tokens: embeds [n, hidden], positions [numAxes, n] int64 (prompt: buildPositionIds();
    // decode: sequentialPositionIds(cache.numTokens(), 1)). Appends their K/V to cache and advances it.
    // Returns the final hidden states [n, hidden] after the last RMSNorm.
    at::Tensor forward(const at::Tensor& embeds, const at::Tensor& positions, KvCache& cache) const;

    // LM head: hidden [n, hidden] -> logits [n, vocab] (float32).
    at::Tensor logits(const at::Tensor& hidden) const;

    // A fresh ContiguousKvCache for this decoder with room for reserveTokens.
    std::unique_ptr<KvCache> makeCache(int64_t reserveTokens = 0) const;

    // The weights of one layer, in the decoder's dtype on its device (the GPU model runner reads them).
    struct Layer {
        at::Tensor inputNorm;   // [hidden]
        at::Tensor qkvProj;     // [(numHeads + 2 * numKvHeads) * headDim, hidden]: q, k, v rows stacked
        at::Tensor queryNorm;   // [headDim]
        at::Tensor keyNorm;     // [headDim]
        at::Tensor oProj;       // [hidden, numHeads * headDim]
        at::Tensor postNorm;    // [hidden]
        at::Tensor gateUpProj;  // [2 * intermediate, hidden]: gate rows then up rows
        at::Tensor downProj;    // [hidden, intermediate]
    };
    const std::vector<Layer>& layers() const { return m_layers; }
    const at::Tensor& embedTokens() const { return m_embedTokens; }  // [vocab, hidden]
    const at::Tensor& lmHead() const { return m_lmHead; }            // [vocab, hidden]
    const at::Tensor& finalNorm() const { return m_finalNorm; }      // [hidden]

private:
    TextDecoder(const TextConfig& config, at::ScalarType dtype, at::Device device);
    static Result<Layer> loadLayer(const WeightStore& store, const TextConfig& config, int layerIdx,
                                   at::ScalarType dtype, at::Device device);
    at::Tensor attention(const Layer& layer, int layerIdx, const at::Tensor& x, const at::Tensor& cos,
                         const at::Tensor& sin, KvCache& cache) const;
    at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight) const;

    TextConfig m_config;
    XdRope m_rope;
    at::ScalarType m_dtype;
    at::Device m_device;
    at::Tensor m_embedTokens;  // [vocab, hidden]
    at::Tensor m_lmHead;       // [vocab, hidden]; the same tensor as m_embedTokens when tied
    at::Tensor m_finalNorm;    // [hidden]
    std::vector<Layer> m_layers;
};

}  // namespace lector::model::hunyuan
