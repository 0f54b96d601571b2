// DeviceSampler (see device_sampler.h).
#include "core/runner/device_sampler.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "core/common/assert.h"
#include "gpu/ops.h"

namespace lector::runner {

DeviceSampler::DeviceSampler(std::int64_t vocabSize, at::Device device) : m_vocab(vocabSize), m_device(device) {}

int DeviceSampler::acquireRow()
{
    c10::InferenceMode inference;
    if (m_freeRows.empty()) {
        // Grow by doubling; rows keep their contents.
        const std::int64_t old = m_presence.defined() ? m_presence.size(0) : 0;
        const std::int64_t grown = std::max<std::int64_t>(64, 2 * old);
        at::Tensor bigger = at::zeros({grown, m_vocab}, at::TensorOptions().dtype(at::kByte).device(m_device));
        if (old > 0) bigger.narrow(0, 0, old).copy_(m_presence);
        m_presence = bigger;
        for (std::int64_t r = grown - 1; r >= old; --r) m_freeRows.push_back(static_cast<int>(r));
    }
    const int row = m_freeRows.back();
    m_freeRows.pop_back();
    return row;
}

void DeviceSampler::releaseRow(int row)
{
    if (row >= 0) m_freeRows.push_back(row);
}

void DeviceSampler::resetRow(int row, const std::vector<int>& ids)
{
    c10::InferenceMode inference;
    LECTOR_ASSERT(row >= 0 && row < m_presence.size(0));
    std::vector<std::int64_t> valid;
    valid.reserve(ids.size());
    for (int id : ids)
        if (id >= 0 && id < m_vocab) valid.push_back(id);
    at::Tensor r = m_presence[row];
    r.zero_();
    if (!valid.empty()) r.index_fill_(0, at::tensor(valid, at::kLong).to(m_device), 1);
}

std::vector<std::int64_t> PendingTokens::get()
{
    if (!m_host.defined()) return {};
    m_ready.synchronize();
    const std::int64_t* t = m_host.data_ptr<std::int64_t>();
    return std::vector<std::int64_t>(t, t + m_host.numel());
}

std::vector<std::int64_t> DeviceSampler::sample(const at::Tensor& logits, const std::vector<DeviceSampling>& params)
{
    return sampleAsync(logits, params).get();
}

PendingTokens DeviceSampler::sampleAsync(const at::Tensor& logits, const std::vector<DeviceSampling>& params)
{
    c10::InferenceMode inference;
    const auto S = static_cast<std::int64_t>(params.size());
    LECTOR_ASSERT(logits.dim() == 2 && logits.size(0) == S && logits.size(1) == m_vocab);
    if (S == 0) return {};
    // One pinned host buffer, one copy: int64 rows | seeds | offsets, float32 temperature | penalty,
    // int32 topK (each section aligned for its type), viewed by type on the device. The kernel reads
    // and updates each sequence's presence row in place.
    const bool pinned = m_device.is_cuda();
    const std::int64_t bytes = S * (3 * 8 + 2 * 4 + 4);
    at::Tensor h = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(pinned));
    auto* p = reinterpret_cast<std::int64_t*>(h.data_ptr<std::uint8_t>());
    auto* f = reinterpret_cast<float*>(p + 3 * S);
    auto* k = reinterpret_cast<std::int32_t*>(f + 2 * S);
    for (std::int64_t i = 0; i < S; ++i) {
        const DeviceSampling& s = params[static_cast<size_t>(i)];
        LECTOR_ASSERT(s.row >= 0 && s.row < m_presence.size(0));
        p[i] = s.row;
        p[S + i] = s.seed;
        p[2 * S + i] = s.offset;
        f[i] = s.temperature;
        f[S + i] = s.repetitionPenalty;
        k[i] = s.topK;
    }
    const at::Tensor d = h.to(m_device, /*non_blocking=*/true);
    const at::Tensor d64 = d.narrow(0, 0, 24 * S).view(at::kLong);
    const at::Tensor df = d.narrow(0, 24 * S, 8 * S).view(at::kFloat);
    const at::Tensor topK = d.narrow(0, 32 * S, 4 * S).view(at::kInt);
    at::Tensor tokens = at::empty({S}, at::TensorOptions().dtype(at::kLong).device(m_device));
    const std::int64_t words = m_device.is_cuda() ? gpu::sampleScratchWords(S, m_vocab) : 0;
    if (words > 0 && (!m_scratch.defined() || m_scratch.numel() < words))
        m_scratch = at::zeros({words}, at::TensorOptions().dtype(at::kLong).device(m_device));
    gpu::sampleTokens(tokens, logits.contiguous(), m_presence, df.narrow(0, 0, S), topK, df.narrow(0, S, S),
                      d64.narrow(0, S, S), d64.narrow(0, 2 * S, S), /*updatePresence=*/true, d64.narrow(0, 0, S),
                      m_scratch);
    PendingTokens out;
    out.m_host = at::empty({S}, at::TensorOptions().dtype(at::kLong).pinned_memory(pinned));
    out.m_host.copy_(tokens, /*non_blocking=*/true);
    out.m_ready.record(m_device);
    out.m_device = std::move(tokens);
    return out;
}

}  // namespace lector::runner
