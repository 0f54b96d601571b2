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

std::vector<std::int64_t> DeviceSampler::sample(const at::Tensor& logits, const std::vector<DeviceSampling>& params)
{
    c10::InferenceMode inference;
    const auto S = static_cast<std::int64_t>(params.size());
    LECTOR_ASSERT(logits.dim() == 2 && logits.size(0) == S && logits.size(1) == m_vocab);
    if (S == 0) return {};
    // One host buffer per type, one copy each: rows | topK as int64 (topK cast on the device), seeds,
    // offsets; temperature | penalty as float32.
    const bool pinned = m_device.is_cuda();
    at::Tensor h64 = at::empty({4 * S}, at::TensorOptions().dtype(at::kLong).pinned_memory(pinned));
    at::Tensor hf = at::empty({2 * S}, at::TensorOptions().dtype(at::kFloat).pinned_memory(pinned));
    std::int64_t* p = h64.data_ptr<std::int64_t>();
    float* f = hf.data_ptr<float>();
    for (std::int64_t i = 0; i < S; ++i) {
        const DeviceSampling& s = params[static_cast<size_t>(i)];
        LECTOR_ASSERT(s.row >= 0 && s.row < m_presence.size(0));
        p[i] = s.row;
        p[S + i] = s.topK;
        p[2 * S + i] = s.seed;
        p[3 * S + i] = s.offset;
        f[i] = s.temperature;
        f[S + i] = s.repetitionPenalty;
    }
    const at::Tensor d64 = h64.to(m_device, /*non_blocking=*/true);
    const at::Tensor df = hf.to(m_device, /*non_blocking=*/true);
    const at::Tensor rows = d64.narrow(0, 0, S);
    const at::Tensor presence = m_presence.index_select(0, rows);  // [S, vocab]
    at::Tensor tokens = at::empty({S}, at::TensorOptions().dtype(at::kLong).device(m_device));
    gpu::sampleTokens(tokens, logits.contiguous(), presence, df.narrow(0, 0, S), d64.narrow(0, S, S).to(at::kInt),
                      df.narrow(0, S, S), d64.narrow(0, 2 * S, S), d64.narrow(0, 3 * S, S), /*updatePresence=*/false);
    m_presence.index_put_({rows, tokens}, at::scalar_tensor(1, m_presence.options()));
    const at::Tensor host = tokens.to(at::kCPU);  // the step's one synchronisation
    const std::int64_t* t = host.data_ptr<std::int64_t>();
    return std::vector<std::int64_t>(t, t + S);
}

}  // namespace lector::runner
