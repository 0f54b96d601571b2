// TextDecoder and ContiguousKvCache (see decoder.h). The arithmetic follows transformers' HunYuanVL /
// vLLM step for step (spec §6): RMSNorm in float32 then cast, RoPE in float32, QK-norm after RoPE,
// softmax in float32, no embedding scale and no logit soft-cap.
#include "core/model/hunyuan/decoder.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>

#include <c10/core/InferenceMode.h>

#include "core/common/assert.h"
#include "core/common/upload.h"

namespace lector::model::hunyuan {

namespace {

// Query rows per attention chunk: bounds the score matrix of a long prefill to
// [numKvHeads, group * kQueryChunk, L] elements.
constexpr int64_t kQueryChunk = 256;

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::ostringstream s;
    s << '[';
    for (size_t i = 0; i < shape.size(); ++i) s << (i ? "," : "") << shape[i];
    s << ']';
    return s.str();
}

// Fetches a tensor after checking that it exists with the expected shape.
Result<at::Tensor> fetch(const WeightStore& store, const std::string& name, const std::vector<int64_t>& shape,
                         at::ScalarType dtype, at::Device device)
{
    if (!store.contains(name))
        return makeError("bad_model", store.modelDir().string() + ": tensor " + name + " is missing");
    const auto actual = store.shape(name);
    if (actual != shape)
        return makeError("bad_model", store.modelDir().string() + ": tensor " + name + " has shape " +
                                          shapeText(actual) + ", expected " + shapeText(shape));
    return store.get(name, dtype, device);
}

Result<void> validate(const TextConfig& c)
{
    auto bad = [](const std::string& what) { return Result<void>(makeError("bad_model", "text config: " + what)); };
    if (c.hiddenSize <= 0 || c.numLayers <= 0 || c.numHeads <= 0 || c.numKvHeads <= 0 || c.headDim <= 0 ||
        c.intermediateSize <= 0 || c.vocabSize <= 0)
        return bad("sizes must be positive");
    if (c.numHeads % c.numKvHeads != 0)
        return bad("num_attention_heads " + std::to_string(c.numHeads) + " is not a multiple of num_key_value_heads " +
                   std::to_string(c.numKvHeads));
    if (c.headDim % 2 != 0 || c.headDim <= 2) return bad("head_dim must be even and > 2");
    if (c.xdropeSection.empty() ||
        std::accumulate(c.xdropeSection.begin(), c.xdropeSection.end(), 0) != c.headDim / 2)
        return bad("xdrope_section must sum to head_dim / 2 = " + std::to_string(c.headDim / 2));
    if (c.xdropeSection.size() < 3) return bad("xdrope_section needs at least 3 axes (w, h, t)");
    if (c.attentionBias || c.mlpBias) return bad("attention_bias / mlp_bias are not supported (HunyuanOCR has none)");
    if (c.hiddenAct != "silu") return bad("hidden_act '" + c.hiddenAct + "' is not supported (silu only)");
    return {};
}

}  // namespace

// --- ContiguousKvCache ---

ContiguousKvCache::ContiguousKvCache(int numLayers, int numKvHeads, int headDim, int64_t reserveTokens,
                                     at::ScalarType dtype, at::Device device)
    : m_numKvHeads(numKvHeads), m_headDim(headDim), m_dtype(dtype), m_device(device),
      m_keys(static_cast<size_t>(numLayers)), m_values(static_cast<size_t>(numLayers))
{
    reserve(std::max<int64_t>(reserveTokens, 16));
}

void ContiguousKvCache::reserve(int64_t numTokens)
{
    if (numTokens <= m_capacity) return;
    int64_t capacity = std::max<int64_t>(m_capacity, 16);
    while (capacity < numTokens) capacity *= 2;
    const auto options = at::TensorOptions().dtype(m_dtype).device(m_device);
    for (size_t l = 0; l < m_keys.size(); ++l) {
        at::Tensor keys = at::empty({m_numKvHeads, capacity, m_headDim}, options);
        at::Tensor values = at::empty({m_numKvHeads, capacity, m_headDim}, options);
        if (m_numTokens > 0) {
            keys.narrow(1, 0, m_numTokens).copy_(m_keys[l].narrow(1, 0, m_numTokens));
            values.narrow(1, 0, m_numTokens).copy_(m_values[l].narrow(1, 0, m_numTokens));
        }
        m_keys[l] = keys;
        m_values[l] = values;
    }
    m_capacity = capacity;
}

at::Tensor ContiguousKvCache::appendAndAttend(int layerIdx, const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v, double scale)
{
    c10::InferenceMode inference;
    LECTOR_ASSERT(layerIdx >= 0 && static_cast<size_t>(layerIdx) < m_keys.size());
    const int64_t n = q.size(0), numHeads = q.size(1), d = q.size(2);
    const int64_t kvHeads = m_numKvHeads, group = numHeads / kvHeads;
    LECTOR_ASSERT(k.size(0) == n && k.size(1) == kvHeads && k.size(2) == m_headDim && d == m_headDim);
    reserve(m_numTokens + n);

    const int64_t past = m_numTokens;
    at::Tensor& keys = m_keys[static_cast<size_t>(layerIdx)];      // [kvHeads, capacity, d]
    at::Tensor& values = m_values[static_cast<size_t>(layerIdx)];  // [kvHeads, capacity, d]
    keys.narrow(1, past, n).copy_(k.transpose(0, 1));
    values.narrow(1, past, n).copy_(v.transpose(0, 1));

    // Query head h = kv * group + g reads KV head kv: [kvHeads, group, n, d].
    const at::Tensor qh = q.to(m_dtype).view({n, kvHeads, group, d}).permute({1, 2, 0, 3});
    at::Tensor out = at::empty({kvHeads, group, n, d}, q.options().dtype(m_dtype));
    for (int64_t start = 0; start < n; start += kQueryChunk) {
        const int64_t rows = std::min(kQueryChunk, n - start);
        const int64_t visible = past + start + rows;  // keys the chunk's last query sees
        const at::Tensor kc = keys.narrow(1, 0, visible);    // [kvHeads, visible, d]
        const at::Tensor vc = values.narrow(1, 0, visible);  // [kvHeads, visible, d]
        const at::Tensor qc = qh.narrow(2, start, rows).reshape({kvHeads, group * rows, d});
        at::Tensor scores = (at::bmm(qc, kc.transpose(1, 2)) * scale).to(at::kFloat);  // [kvHeads, group*rows, visible]
        if (rows > 1) {
            // Query i (sequence index past + start + i) must not see keys after itself.
            const auto idx = at::TensorOptions().dtype(at::kLong).device(m_device);
            const at::Tensor qPos = at::arange(past + start, past + start + rows, idx).unsqueeze(1);
            const at::Tensor kPos = at::arange(visible, idx).unsqueeze(0);
            const at::Tensor future = kPos > qPos;  // [rows, visible]
            scores = scores.view({kvHeads, group, rows, visible})
                         .masked_fill(future, -std::numeric_limits<float>::infinity())
                         .view({kvHeads, group * rows, visible});
        }
        const at::Tensor probs = at::softmax(scores, -1).to(m_dtype);
        out.narrow(2, start, rows).copy_(at::bmm(probs, vc).view({kvHeads, group, rows, d}));
    }
    return out.permute({2, 0, 1, 3}).reshape({n, numHeads, d}).to(q.scalar_type());
}

void ContiguousKvCache::advance(int64_t numNewTokens)
{
    LECTOR_ASSERT(numNewTokens >= 0 && m_numTokens + numNewTokens <= m_capacity);
    m_numTokens += numNewTokens;
}

// --- TextDecoder ---

TextDecoder::TextDecoder(const TextConfig& config, at::ScalarType dtype, at::Device device)
    : m_config(config), m_rope(XdRope::fromConfig(config)), m_dtype(dtype), m_device(device)
{
}

Result<TextDecoder> TextDecoder::load(const WeightStore& store, const TextConfig& config, at::ScalarType dtype,
                                      at::Device device)
{
    if (auto ok = validate(config); !ok) return ok.error();
    TextDecoder decoder(config, dtype, device);
    const int64_t hidden = config.hiddenSize;

    auto embed = fetch(store, "model.embed_tokens.weight", {config.vocabSize, hidden}, dtype, device);
    if (!embed) return embed.error();
    decoder.m_embedTokens = *embed;
    if (config.tieWordEmbeddings) {
        decoder.m_lmHead = decoder.m_embedTokens;  // spec §1.2: lm_head = embed_tokens; a stored lm_head is ignored
    } else {
        auto head = fetch(store, "lm_head.weight", {config.vocabSize, hidden}, dtype, device);
        if (!head) return head.error();
        decoder.m_lmHead = *head;
    }
    auto norm = fetch(store, "model.norm.weight", {hidden}, dtype, device);
    if (!norm) return norm.error();
    decoder.m_finalNorm = *norm;

    for (int i = 0; i < config.numLayers; ++i) {
        auto layer = loadLayer(store, config, i, dtype, device);
        if (!layer) return layer.error();
        decoder.m_layers.push_back(std::move(*layer));
    }
    return decoder;
}

Result<TextDecoder::Layer> TextDecoder::loadLayer(const WeightStore& store, const TextConfig& config, int i,
                                                  at::ScalarType dtype, at::Device device)
{
    const std::string p = "model.layers." + std::to_string(i) + ".";
    const int64_t hidden = config.hiddenSize, hd = config.headDim, inter = config.intermediateSize;
    const int64_t qRows = config.numHeads * hd, kvRows = config.numKvHeads * hd;
    struct Want {
        const char* name;
        std::vector<int64_t> shape;
        bool qkNorm = false;  // only read when use_qk_norm
    };
    const Want wants[] = {
        {"input_layernorm.weight", {hidden}},
        {"self_attn.q_proj.weight", {qRows, hidden}},
        {"self_attn.k_proj.weight", {kvRows, hidden}},
        {"self_attn.v_proj.weight", {kvRows, hidden}},
        {"self_attn.o_proj.weight", {hidden, qRows}},
        {"self_attn.query_layernorm.weight", {hd}, true},
        {"self_attn.key_layernorm.weight", {hd}, true},
        {"post_attention_layernorm.weight", {hidden}},
        {"mlp.gate_proj.weight", {inter, hidden}},
        {"mlp.up_proj.weight", {inter, hidden}},
        {"mlp.down_proj.weight", {hidden, inter}},
    };
    std::vector<at::Tensor> t;
    for (const auto& w : wants) {
        if (w.qkNorm && !config.useQkNorm) {
            t.emplace_back();
            continue;
        }
        auto r = fetch(store, p + w.name, w.shape, dtype, device);
        if (!r) return r.error();
        t.push_back(*r);
    }
    Layer layer;
    layer.inputNorm = t[0];
    layer.qkvProj = at::cat({t[1], t[2], t[3]}, 0).contiguous();
    layer.oProj = t[4];
    layer.queryNorm = t[5];
    layer.keyNorm = t[6];
    layer.postNorm = t[7];
    layer.gateUpProj = at::cat({t[8], t[9]}, 0).contiguous();
    layer.downProj = t[10];
    return layer;
}

at::Tensor TextDecoder::rmsNorm(const at::Tensor& x, const at::Tensor& weight) const
{
    // HF HunYuanVLRMSNorm: normalise in float32, cast back to the input dtype, then scale.
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + m_config.rmsNormEps);
    return weight * normed.to(x.scalar_type());
}

Result<at::Tensor> TextDecoder::embed(const std::vector<int>& ids, const at::Tensor& imageEmbeds, int imageTokenId) const
{
    c10::InferenceMode inference;
    const int64_t length = static_cast<int64_t>(ids.size());
    at::Tensor idTensor = at::empty({length}, at::kLong);
    int64_t* idData = idTensor.data_ptr<int64_t>();
    std::vector<int64_t> imageRows;
    for (int64_t i = 0; i < length; ++i) {
        const int id = ids[static_cast<size_t>(i)];
        if (id < 0 || id >= m_config.vocabSize)
            return makeError("bad_input", "token id " + std::to_string(id) + " at index " + std::to_string(i) +
                                              " is outside the vocabulary of " + std::to_string(m_config.vocabSize));
        idData[i] = id;
        if (id == imageTokenId) imageRows.push_back(i);
    }
    const int64_t numImageRows = imageEmbeds.defined() ? imageEmbeds.size(0) : 0;
    if (static_cast<int64_t>(imageRows.size()) != numImageRows)
        return makeError("bad_input", "prompt has " + std::to_string(imageRows.size()) +
                                          " image placeholder tokens but " + std::to_string(numImageRows) +
                                          " image embedding rows were given");
    // The ids and rows go up without the host waiting for the device (the vision tower's stream, where this
    // runs when the tower has one, may hold a whole batch of pages before them).
    at::Tensor embeds = at::embedding(m_embedTokens, uploadAsync(idTensor, m_device));  // [L, hidden]
    if (numImageRows > 0) {
        if (imageEmbeds.dim() != 2 || imageEmbeds.size(1) != m_config.hiddenSize)
            return makeError("bad_input", "image embeddings must be [T, " + std::to_string(m_config.hiddenSize) +
                                              "], got " + shapeText(imageEmbeds.sizes().vec()));
        const at::Tensor rows = uploadAsync(at::from_blob(imageRows.data(), {numImageRows}, at::kLong), m_device);
        embeds.index_copy_(0, rows, imageEmbeds.to(m_device, m_dtype));
    }
    return embeds;
}

at::Tensor TextDecoder::attention(const Layer& layer, int layerIdx, const at::Tensor& x, const at::Tensor& cos,
                                  const at::Tensor& sin, KvCache& cache) const
{
    const int64_t n = x.size(0), hd = m_config.headDim;
    const int64_t numHeads = m_config.numHeads, kvHeads = m_config.numKvHeads;
    const at::Tensor qkv = at::linear(x, layer.qkvProj);  // [n, (numHeads + 2 kvHeads) * hd]
    at::Tensor q = qkv.narrow(1, 0, numHeads * hd).reshape({n, numHeads, hd});
    at::Tensor k = qkv.narrow(1, numHeads * hd, kvHeads * hd).reshape({n, kvHeads, hd});
    const at::Tensor v = qkv.narrow(1, (numHeads + kvHeads) * hd, kvHeads * hd).reshape({n, kvHeads, hd});
    // RoPE first, then QK-norm: the two do not commute (spec §6).
    q = XdRope::apply(q, cos, sin);
    k = XdRope::apply(k, cos, sin);
    if (m_config.useQkNorm) {
        q = rmsNorm(q, layer.queryNorm);
        k = rmsNorm(k, layer.keyNorm);
    }
    const at::Tensor o = cache.appendAndAttend(layerIdx, q, k, v, 1.0 / std::sqrt(static_cast<double>(hd)));
    return at::linear(o.reshape({n, numHeads * hd}), layer.oProj);  // [n, hidden]
}

at::Tensor TextDecoder::forward(const at::Tensor& embeds, const at::Tensor& positions, KvCache& cache) const
{
    c10::InferenceMode inference;
    LECTOR_ASSERT(embeds.dim() == 2 && embeds.size(1) == m_config.hiddenSize);
    LECTOR_ASSERT(positions.dim() == 2 && positions.size(1) == embeds.size(0));
    const int64_t n = embeds.size(0), inter = m_config.intermediateSize;
    // One cos/sin table per pass, shared by every layer: [n, headDim] float32. Like transformers and
    // vLLM, the tables pass through the model dtype (a no-op in float32; bf16 runs round them, spec §5.3).
    auto [cos, sin] = m_rope.cosSin(positions.to(at::kCPU), m_dtype);
    cos = cos.to(m_device);
    sin = sin.to(m_device);

    at::Tensor x = embeds.to(m_device, m_dtype);  // [n, hidden]
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const Layer& layer = m_layers[i];
        x = x + attention(layer, static_cast<int>(i), rmsNorm(x, layer.inputNorm), cos, sin, cache);
        const at::Tensor gateUp = at::linear(rmsNorm(x, layer.postNorm), layer.gateUpProj);  // [n, 2 * inter]
        const at::Tensor act = at::silu(gateUp.narrow(1, 0, inter)) * gateUp.narrow(1, inter, inter);
        x = x + at::linear(act, layer.downProj);
    }
    cache.advance(n);
    return rmsNorm(x, m_finalNorm);
}

at::Tensor TextDecoder::logits(const at::Tensor& hidden) const
{
    c10::InferenceMode inference;
    return at::linear(hidden.to(m_device, m_dtype), m_lmHead).to(at::kFloat);  // [n, vocab]
}

std::unique_ptr<KvCache> TextDecoder::makeCache(int64_t reserveTokens) const
{
    return std::make_unique<ContiguousKvCache>(m_config.numLayers, m_config.numKvHeads, m_config.headDim,
                                               reserveTokens, m_dtype, m_device);
}

}  // namespace lector::model::hunyuan
