// DeviceSampler: the next token of many sequences at once on the logits' device (gpu::sampleTokens:
// repetition penalty, temperature, greedy or top-k), so a step copies [S] token ids to the host instead
// of [S, vocab] logits. Each sequence owns a row of a presence bitmap [rows, vocab] (uint8) marking the
// ids the penalty applies to (prompt + generated); the chosen tokens are marked after each draw.
// Top-p is not done on the device: the backend samples such sequences on the host (Sampler).
// Threads: engine thread only.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "gpu/device.h"

namespace lector::runner {

struct DeviceSampling {
    int row = -1;                  // presence row (acquireRow())
    float temperature = 0.0f;      // <= 0: greedy
    int topK = 0;                  // 0: whole vocabulary
    float repetitionPenalty = 1.0f;
    std::int64_t seed = 0;
    std::int64_t offset = 0;       // tokens this sequence has drawn so far (the draw counter)
};

// The tokens of one sampleAsync() call on their way to the host: the copy is queued right behind the
// sampling kernel, so get() waits for that step alone, not for work queued after it.
class PendingTokens {
public:
    // [S] int64 on the sampler's device: the next decode step can read its input ids from here before
    // the host has them.
    const at::Tensor& onDevice() const { return m_device; }
    // Blocks until the copy has landed; the ids in params order.
    std::vector<std::int64_t> get();

private:
    friend class DeviceSampler;
    at::Tensor m_device;
    at::Tensor m_host;  // pinned on CUDA
    gpu::StreamEvent m_ready;
};

class DeviceSampler {
public:
    DeviceSampler(std::int64_t vocabSize, at::Device device);

    int acquireRow();
    void releaseRow(int row);
    // presence[row] = the distinct ids of `ids` (ids outside the vocabulary are ignored).
    void resetRow(int row, const std::vector<int>& ids);

    // Tokens for logits [S, vocab] (float32, one row per entry of params, same order).
    std::vector<std::int64_t> sample(const at::Tensor& logits, const std::vector<DeviceSampling>& params);
    // The same without waiting: queues the kernel and the copy to the host.
    PendingTokens sampleAsync(const at::Tensor& logits, const std::vector<DeviceSampling>& params);

private:
    std::int64_t m_vocab;
    at::Device m_device;
    at::Tensor m_presence;  // [capacity, vocab] uint8
    at::Tensor m_scratch;   // int64 zeros between calls: the kernel's per-sequence tickets and partials
    std::vector<int> m_freeRows;
};

}  // namespace lector::runner
