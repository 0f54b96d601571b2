#include "core/runner/paged_kv.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/common/assert.h"

#if defined(LECTOR_HAVE_CUDA)
#include "gpu/ops.h"
#endif

namespace lector::runner {
namespace {
#if defined(LECTOR_HAVE_CUDA)
constexpr bool kHaveKernels = true;
#else
constexpr bool kHaveKernels = false;
#endif
}  // namespace

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
        m_maxQueryLen = std::max(m_maxQueryLen, s.numNew);
        m_maxContextLen = std::max(m_maxContextLen, s.past + s.numNew);
    }
    m_newSlots = at::tensor(newSlots, i64).to(device);
    if (!device.is_cuda() || !kHaveKernels) {
        for (const auto& s : m_sequences) m_contextSlots.push_back(at::tensor(s.slots, i64).to(device));
        return;
    }
    // Block ids of each sequence from its slots (one per blockSize tokens), padded with 0 (never read).
    const int bs = m_storage.blockSize();
    const auto numSeqs = static_cast<std::int64_t>(m_sequences.size());
    const std::int64_t maxBlocks = (m_maxContextLen + bs - 1) / bs;
    std::vector<std::int32_t> table(static_cast<size_t>(numSeqs * maxBlocks), 0), cu{0}, lens;
    for (std::int64_t i = 0; i < numSeqs; ++i) {
        const auto& s = m_sequences[static_cast<size_t>(i)];
        for (size_t t = 0; t < s.slots.size(); t += static_cast<size_t>(bs))
            table[static_cast<size_t>(i * maxBlocks) + t / static_cast<size_t>(bs)] = static_cast<std::int32_t>(s.slots[t] / bs);
        cu.push_back(cu.back() + static_cast<std::int32_t>(s.numNew));
        lens.push_back(static_cast<std::int32_t>(s.past + s.numNew));
    }
    const auto i32 = at::TensorOptions().dtype(at::kInt);
    m_blockTable = at::tensor(table, i32).view({numSeqs, maxBlocks}).to(device);
    m_cuSeqlensQ = at::tensor(cu, i32).to(device);
    m_contextLens = at::tensor(lens, i32).to(device);
}

at::Tensor StepKvCache::appendAndAttend(int layerIdx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                        double scale)
{
    c10::InferenceMode inference;
    at::Tensor& keys = m_storage.keys(layerIdx);
    at::Tensor& values = m_storage.values(layerIdx);
    LECTOR_ASSERT(m_newSlots.defined() && m_newSlots.size(0) == q.size(0));
    if (keys.is_cuda() && kHaveKernels) return attendWithKernels(layerIdx, q, k, v, scale);
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

#if defined(LECTOR_HAVE_CUDA)
at::Tensor StepKvCache::attendWithKernels(int layerIdx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                          double scale)
{
    // NOTE: written after the last GPU run of 2026-11-30; first exercised by the next one
    // (bench/gpu/run_serving.sh, tst_hunyuan_engine on CUDA).
    at::Tensor& keys = m_storage.keys(layerIdx);
    at::Tensor& values = m_storage.values(layerIdx);
    const int bs = m_storage.blockSize();
    const at::Tensor keyCache = keys.view({-1, bs, keys.size(1), keys.size(2)});
    const at::Tensor valueCache = values.view({-1, bs, values.size(1), values.size(2)});
    const auto dtype = keys.scalar_type();
    gpu::writeKvCache(keyCache, valueCache, k.to(dtype), v.to(dtype), m_newSlots);
    const at::Tensor query = q.to(dtype).contiguous();
    at::Tensor out = at::empty_like(query);
    if (m_maxQueryLen == 1) {  // decodes only: one query row per sequence, in sequence order
        gpu::pagedDecodeAttention(out, query, keyCache, valueCache, m_blockTable, m_contextLens, m_maxContextLen, scale);
    } else {
        gpu::pagedPrefillAttention(out, query, keyCache, valueCache, m_blockTable, m_cuSeqlensQ, m_contextLens,
                                   m_maxQueryLen, m_maxContextLen, scale);
    }
    return out.to(q.scalar_type());
}
#else
at::Tensor StepKvCache::attendWithKernels(int, const at::Tensor&, const at::Tensor&, const at::Tensor&, double)
{
    throw std::logic_error("paged CUDA kernels are not built in (LECTOR_CUDA=OFF)");
}
#endif

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
