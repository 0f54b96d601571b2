// PagedKvStorage and StepKvCache (see paged_kv.h).
#include "core/runner/paged_kv.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <limits>

#include "core/common/assert.h"

namespace lector::runner {

PagedKvStorage::PagedKvStorage(int numLayers, int numKvHeads, int headDim, int numBlocks, int blockSize,
                               at::ScalarType dtype, at::Device device)
    : m_numSlots(numBlocks * blockSize), m_blockSize(blockSize)
{
    const auto options = at::TensorOptions().dtype(dtype).device(device);
    for (int l = 0; l < numLayers; ++l) {
        m_keys.push_back(at::zeros({m_numSlots, numKvHeads, headDim}, options));
        m_values.push_back(at::zeros({m_numSlots, numKvHeads, headDim}, options));
    }
}

StepKvCache::StepKvCache(PagedKvStorage& storage, std::vector<StepSequence> sequences)
    : m_storage(storage), m_sequences(std::move(sequences))
{
    const at::Device device = m_storage.keys(0).device();
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    std::vector<std::int64_t> newSlots;
    for (const auto& s : m_sequences) {
        LECTOR_ASSERT(static_cast<std::int64_t>(s.slots.size()) == s.past + s.numNew);
        newSlots.insert(newSlots.end(), s.slots.end() - s.numNew, s.slots.end());
    }
    m_newSlots = at::tensor(newSlots, i64).to(device);
    for (const auto& s : m_sequences) m_contextSlots.push_back(at::tensor(s.slots, i64).to(device));
}

at::Tensor StepKvCache::appendAndAttend(int layerIdx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        double scale)
{
    c10::InferenceMode inference;
    at::Tensor& keys = m_storage.keys(layerIdx);
    at::Tensor& values = m_storage.values(layerIdx);
    LECTOR_ASSERT(m_newSlots.defined() && m_newSlots.size(0) == q.size(0));
    keys.index_copy_(0, m_newSlots, k.to(keys.scalar_type()));
    values.index_copy_(0, m_newSlots, v.to(values.scalar_type()));
    at::Tensor out = at::empty_like(q);
    for (size_t i = 0; i < m_sequences.size(); ++i) {
        const auto& s = m_sequences[i];
        const at::Tensor kc = keys.index_select(0, m_contextSlots[i]);  // [past + n, kvHeads, d]
        const at::Tensor vc = values.index_select(0, m_contextSlots[i]);
        out.narrow(0, s.offset, s.numNew).copy_(causalAttention(q.narrow(0, s.offset, s.numNew), kc, vc, s.past, scale));
    }
    return out;
}

at::Tensor causalAttention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values, std::int64_t past,
                           double scale)
{
    const int64_t n = q.size(0), heads = q.size(1), d = q.size(2), kvHeads = keys.size(1), group = heads / kvHeads;
    const int64_t visible = past + n;
    LECTOR_ASSERT(keys.size(0) == visible && values.size(0) == visible);
    const auto dtype = keys.scalar_type();
    // [kvHeads, group * n, d] x [kvHeads, d, visible]: query head h = kv * group + g reads KV head kv.
    const at::Tensor qh = q.to(dtype).view({n, kvHeads, group, d}).permute({1, 2, 0, 3}).reshape({kvHeads, group * n, d});
    const at::Tensor kt = keys.permute({1, 2, 0});    // [kvHeads, d, visible]
    const at::Tensor vh = values.permute({1, 0, 2});  // [kvHeads, visible, d]
    at::Tensor scores = (at::bmm(qh, kt) * scale).to(at::kFloat);  // [kvHeads, group * n, visible]
    if (n > 1) {
        const auto idx = at::TensorOptions().dtype(at::kLong).device(q.device());
        const at::Tensor future = at::arange(visible, idx).unsqueeze(0) > at::arange(past, visible, idx).unsqueeze(1);
        scores = scores.view({kvHeads, group, n, visible})
                     .masked_fill(future, -std::numeric_limits<float>::infinity())
                     .view({kvHeads, group * n, visible});
    }
    const at::Tensor probs = at::softmax(scores, -1).to(dtype);
    return at::bmm(probs, vh).view({kvHeads, group, n, d}).permute({2, 0, 1, 3}).reshape({n, heads, d}).to(q.scalar_type());
}

}  // namespace lector::runner
