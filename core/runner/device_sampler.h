// DeviceSampler: the next token of many sequences at once on the logits' device (gpu::sampleTokens:
// repetition penalty, temperature, greedy or top-k), so a step copies [S] token ids to the host instead
// of [S, vocab] logits. Each sequence owns a row of a presence bitmap [rows, vocab] (uint8) marking the
// ids the penalty applies to (prompt + generated); the chosen tokens are marked after each draw.
// The bitmap is allocated once for `capacity` sequences and never moves, so a CUDA graph can draw
// tokens with it (ModelRunner::attachSampler); past that many sequences acquireRow() says no and the
// backend samples on the host.
// Top-p is not done on the device: the backend samples such sequences on the host (Sampler).
// Threads: engine thread only.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "gpu/device.h"

namespace lector::gpu {
struct SampleAdvance;     // gpu/ops.h
struct GreedyScreenHead;  // gpu/ops.h
}

namespace lector::runner {

struct DeviceSampling {
    int row = -1;                  // presence row (acquireRow())
    float temperature = 0.0f;      // <= 0: greedy
    int topK = 0;                  // 0: whole vocabulary
    float repetitionPenalty = 1.0f;
    std::int64_t seed = 0;
    std::int64_t offset = 0;       // tokens this sequence has drawn so far (the draw counter)

    // The draw is the penalized argmax (what launchGreedy() computes).
    bool greedy() const { return temperature <= 0.0f || topK == 1; }
};

// The tokens of one sampleAsync() call on their way to the host: the copy is queued right behind the
// sampling kernel, so get() waits for that step alone, not for work queued after it.
class PendingTokens {
public:
    // [S] int64 on the sampler's device: the next decode step can read its input ids from here before
    // the host has them (a decode graph of several steps: the last step's ids).
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
    static constexpr int kDefaultCapacity = 512;  // 62 MB of bitmap at HunyuanOCR's 120818 ids
    DeviceSampler(std::int64_t vocabSize, at::Device device, int capacity = kDefaultCapacity);

    // A free presence row, or -1 when all `capacity` are taken.
    int acquireRow();
    void releaseRow(int row);
    // presence[row] = the distinct ids of `ids` (ids outside the vocabulary are ignored).
    void resetRow(int row, const std::vector<int>& ids);

    // Tokens for logits [S, vocab] (float32, one row per entry of params, same order).
    std::vector<std::int64_t> sample(const at::Tensor& logits, const std::vector<DeviceSampling>& params);
    // The same without waiting: queues the kernel and the copy to the host.
    PendingTokens sampleAsync(const at::Tensor& logits, const std::vector<DeviceSampling>& params);

    // --- the same in pieces, for a draw inside a CUDA graph (ModelRunner) ---
    // Bytes of the packed parameters of `rows` sequences: int64 presence rows | seeds | draw offsets,
    // float32 temperatures | penalties, int32 top-k.
    static std::int64_t packedBytes(std::int64_t rows);
    // Packs params into dst (host memory, packedBytes(rows) bytes); rows past params.size() draw greedily
    // from a spare presence row no sequence owns (a graph's padding rows).
    void pack(const std::vector<DeviceSampling>& params, std::int64_t rows, std::uint8_t* dst) const;
    // Queues the kernel: tokens [S] int64 from logits [S, vocab] float32 with packed [packedBytes(S)]
    // uint8 parameters on the device; scratch: int64 zeros of sampleScratchWords(S) words, kept zero.
    // advance: the decode inputs each sequence's draw moves on (gpu::SampleAdvance), or null.
    void launch(const at::Tensor& tokens, const at::Tensor& logits, const at::Tensor& packed,
                const at::Tensor& scratch, const gpu::SampleAdvance* advance = nullptr) const;
    // The same for one greedy sequence (DeviceSampling::greedy()) from the LM head's input row x [1, hidden]
    // instead of its logits: gpu::greedyScreen over weight (the LM head) and its 8-bit copy, with the
    // packed row's presence row and penalty; scratch: greedyScreenScratchWords int64 zeros, kept zero.
    void launchGreedy(const at::Tensor& token, const at::Tensor& x, const at::Tensor& weight,
                      const gpu::GreedyScreenHead& head, const at::Tensor& packed, const at::Tensor& scratch,
                      const gpu::SampleAdvance* advance = nullptr) const;
    // launchGreedy() for one sequence from the host, waiting for its token.
    std::int64_t sampleGreedy(const at::Tensor& x, const at::Tensor& weight, const gpu::GreedyScreenHead& head,
                              const DeviceSampling& params);
    // Queues the copy of tokens (int64, on the device) to the host. onDevice() of the result is `next`
    // where given (the ids the next step reads: a decode graph of several steps copies all its steps'
    // tokens but feeds on the last), else `tokens` itself.
    static PendingTokens copyToHost(const at::Tensor& tokens, const at::Tensor& next = at::Tensor());
    // The scratch words launch() needs for `rows` rows on this sampler's device (0 on the CPU).
    std::int64_t scratchWords(std::int64_t rows) const;

private:
    // Typed views of packed parameters of `rows` sequences (pack()'s layout), on packed's device.
    struct PackedViews {
        at::Tensor presenceRows, seeds, offsets, temperature, penalty, topK;
    };
    static PackedViews views(const at::Tensor& packed, std::int64_t rows);
    // params packed into one pinned host buffer, copied to the device (queued).
    at::Tensor packedOnDevice(const std::vector<DeviceSampling>& params) const;

    std::int64_t m_vocab;
    at::Device m_device;
    int m_capacity;
    at::Tensor m_presence;  // [capacity + 1, vocab] uint8; the last row is the padding rows' spare
    at::Tensor m_scratch;   // int64 zeros between calls: the kernel's per-sequence tickets and partials
    std::vector<int> m_freeRows;
};

}  // namespace lector::runner
