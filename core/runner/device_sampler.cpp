// DeviceSampler (see device_sampler.h).
#include "core/runner/device_sampler.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "core/common/assert.h"
#include "gpu/ops.h"

namespace lector::runner {

DeviceSampler::DeviceSampler(std::int64_t vocabSize, at::Device device, int capacity)
    : m_vocab(vocabSize), m_device(device), m_capacity(std::max(1, capacity))
{
    c10::InferenceMode inference;
    m_presence = at::zeros({m_capacity + 1, m_vocab}, at::TensorOptions().dtype(at::kByte).device(m_device));
    for (int r = m_capacity - 1; r >= 0; --r) m_freeRows.push_back(r);
}

int DeviceSampler::acquireRow()
{
    if (m_freeRows.empty()) return -1;
    const int row = m_freeRows.back();
    m_freeRows.pop_back();
    return row;
}

void DeviceSampler::releaseRow(int row)
{
    if (row >= 0 && row < m_capacity) m_freeRows.push_back(row);
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

std::int64_t DeviceSampler::packedBytes(std::int64_t rows) { return rows * (3 * 8 + 2 * 4 + 4); }

void DeviceSampler::pack(const std::vector<DeviceSampling>& params, std::int64_t rows, std::uint8_t* dst) const
{
    LECTOR_ASSERT(static_cast<std::int64_t>(params.size()) <= rows);
    auto* p = reinterpret_cast<std::int64_t*>(dst);
    auto* f = reinterpret_cast<float*>(p + 3 * rows);
    auto* k = reinterpret_cast<std::int32_t*>(f + 2 * rows);
    for (std::int64_t i = 0; i < rows; ++i) {
        const bool real = i < static_cast<std::int64_t>(params.size());
        const DeviceSampling s = real ? params[static_cast<size_t>(i)] : DeviceSampling{m_capacity};
        LECTOR_ASSERT(s.row >= 0 && s.row <= m_capacity);
        p[i] = s.row;
        p[rows + i] = s.seed;
        p[2 * rows + i] = s.offset;
        f[i] = s.temperature;
        f[rows + i] = s.repetitionPenalty;
        k[i] = s.topK;
    }
}

std::int64_t DeviceSampler::scratchWords(std::int64_t rows) const
{
    return m_device.is_cuda() ? gpu::sampleScratchWords(rows, m_vocab) : 0;
}

DeviceSampler::PackedViews DeviceSampler::views(const at::Tensor& packed, std::int64_t rows)
{
    LECTOR_ASSERT(packed.numel() == packedBytes(rows));
    const std::int64_t S = rows;
    const at::Tensor d64 = packed.narrow(0, 0, 24 * S).view(at::kLong);
    const at::Tensor df = packed.narrow(0, 24 * S, 8 * S).view(at::kFloat);
    return {d64.narrow(0, 0, S), d64.narrow(0, S, S),     d64.narrow(0, 2 * S, S),
            df.narrow(0, 0, S),  df.narrow(0, S, S), packed.narrow(0, 32 * S, 4 * S).view(at::kInt)};
}

at::Tensor DeviceSampler::packedOnDevice(const std::vector<DeviceSampling>& params) const
{
    const auto S = static_cast<std::int64_t>(params.size());
    at::Tensor h = at::empty({packedBytes(S)}, at::TensorOptions().dtype(at::kByte).pinned_memory(m_device.is_cuda()));
    pack(params, S, h.data_ptr<std::uint8_t>());
    return h.to(m_device, /*non_blocking=*/true);
}

void DeviceSampler::launch(const at::Tensor& tokens, const at::Tensor& logits, const at::Tensor& packed,
                           const at::Tensor& scratch, const gpu::SampleAdvance* advance) const
{
    const std::int64_t S = logits.size(0);
    LECTOR_ASSERT(logits.dim() == 2 && logits.size(1) == m_vocab);
    const PackedViews v = views(packed, S);
    gpu::sampleTokens(tokens, logits.contiguous(), m_presence, v.temperature, v.topK, v.penalty, v.seeds, v.offsets,
                      /*updatePresence=*/true, v.presenceRows, scratch, advance);
}

void DeviceSampler::launchGreedy(const at::Tensor& token, const at::Tensor& x, const at::Tensor& weight,
                                 const gpu::GreedyScreenHead& head, const at::Tensor& packed, const at::Tensor& scratch,
                                 const gpu::SampleAdvance* advance) const
{
    LECTOR_ASSERT(weight.size(0) == m_vocab);
    const PackedViews v = views(packed, 1);
    gpu::greedyScreen(token, x, weight, head, m_presence, v.presenceRows, v.penalty, /*updatePresence=*/true, scratch,
                      advance, v.offsets);
}

std::int64_t DeviceSampler::sampleGreedy(const at::Tensor& x, const at::Tensor& weight, const gpu::GreedyScreenHead& head,
                                         const DeviceSampling& params)
{
    c10::InferenceMode inference;
    const at::Tensor token = at::empty({1}, at::TensorOptions().dtype(at::kLong).device(m_device));
    launchGreedy(token, x.contiguous(), weight, head, packedOnDevice({params}), at::Tensor());
    return token.to(at::kCPU).item<std::int64_t>();
}

PendingTokens DeviceSampler::copyToHost(const at::Tensor& tokens, const at::Tensor& next)
{
    PendingTokens out;
    out.m_host = at::empty({tokens.numel()}, at::TensorOptions().dtype(at::kLong).pinned_memory(tokens.is_cuda()));
    out.m_host.copy_(tokens.reshape({-1}), /*non_blocking=*/true);
    out.m_ready.record(tokens.device());
    out.m_device = next.defined() ? next : tokens;
    return out;
}

PendingTokens DeviceSampler::sampleAsync(const at::Tensor& logits, const std::vector<DeviceSampling>& params)
{
    c10::InferenceMode inference;
    const auto S = static_cast<std::int64_t>(params.size());
    LECTOR_ASSERT(logits.dim() == 2 && logits.size(0) == S && logits.size(1) == m_vocab);
    if (S == 0) return {};
    // One pinned host buffer, one copy, viewed by type on the device. The kernel reads and updates each
    // sequence's presence row in place.
    const at::Tensor packed = packedOnDevice(params);
    const std::int64_t words = scratchWords(S);
    if (words > 0 && (!m_scratch.defined() || m_scratch.numel() < words))
        m_scratch = at::zeros({words}, at::TensorOptions().dtype(at::kLong).device(m_device));
    at::Tensor tokens = at::empty({S}, at::TensorOptions().dtype(at::kLong).device(m_device));
    launch(tokens, logits, packed, m_scratch);
    return copyToHost(tokens);
}

}  // namespace lector::runner
