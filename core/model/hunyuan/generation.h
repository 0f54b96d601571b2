// generate(): the single-sequence decode loop of HunyuanOCR on a TextDecoder (docs/hunyuanocr-spec.md §8):
// one prefill over the whole prompt (image rows scattered in), then one token per step through the KV
// cache until a stop id (120020 or 120007), max new tokens, a runaway repeat, or the caller cancels.
// It is the CPU reference path and what tests and benchmarks drive; the engine's batched scheduler
// reuses the same pieces (TextDecoder, KvCache, Sampler, RepeatGuard).
// Threads: runs on the calling thread (the engine thread); onToken is called on it, synchronously.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/common/result.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/sampler.h"

namespace lector::model::hunyuan {

// Runaway-repeat guard, the streaming counterpart of Tencent's clean_repeated_substrings() (spec §8):
// it fires when the generated tail is >= minRepeats back-to-back copies of a period of 1..maxPeriod
// tokens (the shortest such period wins) whose copies together span >= minSpanTokens tokens, once
// >= minTokens tokens are out. Generation then stops and the result keeps one copy of the period, as
// Tencent's post-processing keeps text[: n - period * (count - 1)].
// NOTE(hytext): Tencent checks the final text (>= 8000 characters, periods of >= 2 characters) once;
// a streaming check sees every prefix, so minSpanTokens keeps short legitimate repeats (a row of empty
// table cells, a dotted leader) from cutting an output that would have gone on.
struct RepeatGuardConfig {
    bool enabled = true;
    int minRepeats = 10;
    int maxPeriod = 512;
    int minSpanTokens = 256;
    int minTokens = 0;
};

class RepeatGuard {
public:
    explicit RepeatGuard(const RepeatGuardConfig& config) : m_config(config) {}
    // Given the generated ids so far, the number of tail tokens to drop (period * (count - 1)) when the
    // guard fires, else 0.
    int check(const std::vector<int>& generated) const;

private:
    RepeatGuardConfig m_config;
};

struct GenerationConfig {
    SamplingConfig sampling;            // greedy with penalty 1.03 by default (HF + generation_config)
    int maxNewTokens = 4096;
    bool ignoreEos = false;             // benchmarks: stop ids are ordinary tokens, run maxNewTokens
    std::vector<int> stopIds{120020, 120007};
    RepeatGuardConfig repeatGuard;
};

// The model's own defaults: generation_config.json's sampling values (greedy unless do_sample, penalty
// 1.03 for 1.0) and its stop ids.
GenerationConfig defaultGenerationConfig(const HunyuanConfig& config);

enum class FinishReason {
    Stop,        // a stop id was sampled (not included in ids)
    Length,      // maxNewTokens reached
    Repetition,  // the repeat guard fired; ids keep one copy of the repeated tail
    Cancelled,   // onToken returned false
};

struct GenerationTimings {
    double prefillMs = 0;     // embedding + prompt forward + first token's logits and sampling
    double decodeMs = 0;      // every later step (forward of one token, logits, sampling)
    int numPromptTokens = 0;
    int numNewTokens = 0;     // tokens sampled, including a final stop id
    int numDecodeSteps = 0;   // forwards after the prefill
    double msPerDecodeStep() const { return numDecodeSteps > 0 ? decodeMs / numDecodeSteps : 0.0; }
};

struct GenerationResult {
    std::vector<int> ids;     // generated ids, without the stop id, trimmed by the repeat guard
    FinishReason finish = FinishReason::Length;
    int stopId = -1;          // the stop id sampled when finish == Stop
    int trimmedTokens = 0;    // tokens the repeat guard removed (already delivered to onToken)
    GenerationTimings timings;
};

// The prompt of one sequence.
struct PrefillInput {
    std::vector<int> ids;     // buildInputIds()
    at::Tensor positionIds;   // [numAxes, L] int64, buildPositionIds()
    at::Tensor imageEmbeds;   // [T_img total, hidden] rows for the image placeholders; undefined if none
    int imageTokenId = 120120;
};

// Called with each generated id (not with the stop id that ends generation) right after it is sampled;
// return false to cancel (the id is kept in the result).
using TokenCallback = std::function<bool(int id)>;

// The per-token bookkeeping of one sequence, shared by generate() and the engine's batched backend:
// sampling with the repetition penalty over prompt + generated ids, stop ids, the streaming callback,
// the repeat guard and max new tokens, in that order, exactly as generate() applies them.
class TokenLoop {
public:
    TokenLoop(const GenerationConfig& config, const std::vector<int>& promptIds);
    ~TokenLoop();
    TokenLoop(TokenLoop&&) noexcept;
    TokenLoop& operator=(TokenLoop&&) noexcept;

    // The next id for logits [vocab] of the sequence's last position.
    int sample(const at::Tensor& logits);
    // Applies a sampled id; true when generation has ended (result().finish says why; a stop id is not
    // kept, a cancel from onToken keeps the id).
    bool accept(int id, const TokenCallback& onToken = {});
    bool done() const { return m_done; }
    // The last id kept (the next decode's input); -1 before the first.
    int lastId() const { return m_result.ids.empty() ? -1 : m_result.ids.back(); }
    const GenerationResult& result() const { return m_result; }
    GenerationResult& result() { return m_result; }

private:
    struct State;
    GenerationConfig m_config;
    Sampler m_sampler;
    RepeatGuard m_guard;
    std::unique_ptr<State> m_state;
    GenerationResult m_result;
    bool m_done = false;
};

// Runs prefill and decode on an empty cache. Errors "bad_input": empty prompt, positions not
// [numAxes, L], placeholder / image-row mismatch (see TextDecoder::embed), a non-empty cache.
// Exceptions from libtorch propagate.
Result<GenerationResult> generate(const TextDecoder& decoder, const PrefillInput& input,
                                  const GenerationConfig& config, KvCache& cache,
                                  const TokenCallback& onToken = {});
// Same, with a ContiguousKvCache sized for the prompt plus maxNewTokens.
Result<GenerationResult> generate(const TextDecoder& decoder, const PrefillInput& input,
                                  const GenerationConfig& config, const TokenCallback& onToken = {});

}  // namespace lector::model::hunyuan
