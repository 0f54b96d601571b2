// The decode loop (see generation.h). Central idea: the prompt is one forward pass; every later step
// feeds back the sampled token at sequence index L + step, with all four position axes equal (spec §5.2).
#include "core/model/hunyuan/generation.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <unordered_set>

#include <c10/core/InferenceMode.h>

#include "core/common/timing.h"
#include "core/model/hunyuan/prompt.h"

namespace lector::model::hunyuan {

namespace {

using Clock = std::chrono::steady_clock;

// Distinct ids of the sequence, for the repetition penalty; grows by one check per token.
class DistinctIds {
public:
    explicit DistinctIds(const std::vector<int>& ids)
    {
        for (int id : ids) add(id);
    }
    void add(int id)
    {
        if (m_seen.insert(id).second) m_ids.push_back(id);
    }
    const std::vector<int>& ids() const { return m_ids; }

private:
    std::unordered_set<int> m_seen;
    std::vector<int> m_ids;
};

}  // namespace

int RepeatGuard::check(const std::vector<int>& generated) const
{
    if (!m_config.enabled || m_config.minRepeats < 2) return 0;
    const int64_t n = static_cast<int64_t>(generated.size());
    if (n < m_config.minTokens) return 0;
    const int64_t maxPeriod = std::min<int64_t>(m_config.maxPeriod, n / m_config.minRepeats);
    for (int64_t period = 1; period <= maxPeriod; ++period) {
        // Length of the tail that equals itself shifted by one period.
        int64_t run = 0;
        while (run + period < n && generated[static_cast<size_t>(n - 1 - run)] ==
                                       generated[static_cast<size_t>(n - 1 - run - period)])
            ++run;
        const int64_t count = 1 + run / period;  // whole back-to-back copies at the end
        if (count >= m_config.minRepeats && count * period >= m_config.minSpanTokens)
            return static_cast<int>(period * (count - 1));
    }
    return 0;
}

GenerationConfig defaultGenerationConfig(const HunyuanConfig& config)
{
    GenerationConfig g;
    const GenerationDefaults& d = config.generation;
    g.sampling.repetitionPenalty = d.repetitionPenalty;
    g.sampling.temperature = d.doSample ? d.temperature : 0.0f;
    g.sampling.topK = d.topK;
    g.sampling.topP = d.topP;
    if (!config.tokens.stop.empty()) g.stopIds = config.tokens.stop;
    return g;
}

struct TokenLoop::State {
    explicit State(const std::vector<int>& promptIds) : history(promptIds) {}
    DistinctIds history;
};

TokenLoop::TokenLoop(const GenerationConfig& config, const std::vector<int>& promptIds)
    : m_config(config), m_sampler(config.sampling), m_guard(config.repeatGuard),
      m_state(std::make_unique<State>(promptIds))
{
    m_result.timings.numPromptTokens = static_cast<int>(promptIds.size());
}

TokenLoop::~TokenLoop() = default;
TokenLoop::TokenLoop(TokenLoop&&) noexcept = default;
TokenLoop& TokenLoop::operator=(TokenLoop&&) noexcept = default;

int TokenLoop::sample(const at::Tensor& logits) { return m_sampler.sample(logits, m_state->history.ids()); }

bool TokenLoop::accept(int id, const TokenCallback& onToken)
{
    ++m_result.timings.numNewTokens;
    const bool stop = !m_config.ignoreEos &&
                      std::find(m_config.stopIds.begin(), m_config.stopIds.end(), id) != m_config.stopIds.end();
    if (stop) {
        m_result.finish = FinishReason::Stop;
        m_result.stopId = id;
        return m_done = true;
    }
    m_result.ids.push_back(id);
    m_state->history.add(id);
    if (onToken && !onToken(id)) {
        m_result.finish = FinishReason::Cancelled;
        return m_done = true;
    }
    if (const int drop = m_guard.check(m_result.ids); drop > 0) {
        m_result.ids.resize(m_result.ids.size() - static_cast<size_t>(drop));
        m_result.trimmedTokens = drop;
        m_result.finish = FinishReason::Repetition;
        return m_done = true;
    }
    if (static_cast<int>(m_result.ids.size()) >= m_config.maxNewTokens) {
        m_result.finish = FinishReason::Length;
        return m_done = true;
    }
    return false;
}

Result<GenerationResult> generate(const TextDecoder& decoder, const PrefillInput& input,
                                  const GenerationConfig& config, KvCache& cache, const TokenCallback& onToken)
{
    const int64_t length = static_cast<int64_t>(input.ids.size());
    const int numAxes = decoder.rope().numAxes();
    if (length == 0) return makeError("bad_input", "empty prompt");
    if (!input.positionIds.defined() || input.positionIds.dim() != 2 || input.positionIds.size(0) != numAxes ||
        input.positionIds.size(1) != length)
        return makeError("bad_input", "position ids must be [" + std::to_string(numAxes) + ", " +
                                          std::to_string(length) + "]");
    if (cache.numTokens() != 0)
        return makeError("bad_input", "generate() needs an empty KV cache, this one holds " +
                                          std::to_string(cache.numTokens()) + " tokens");

    c10::InferenceMode inference;
    TokenLoop loop(config, input.ids);
    if (config.maxNewTokens <= 0) return loop.result();

    // --- prefill ---
    const auto prefillStart = Clock::now();
    auto embeds = decoder.embed(input.ids, input.imageEmbeds, input.imageTokenId);
    if (!embeds) return embeds.error();
    const at::Tensor hidden = decoder.forward(*embeds, input.positionIds, cache);  // [L, hidden]
    int next = loop.sample(decoder.logits(hidden.narrow(0, length - 1, 1))[0]);
    loop.result().timings.prefillMs = msSince(prefillStart);

    // --- decode ---
    const auto decodeStart = Clock::now();
    while (!loop.accept(next, onToken)) {
        // A generated id is plain text, even if it is the image placeholder id: no image rows (-1).
        auto stepEmbeds = decoder.embed({next}, at::Tensor(), /*imageTokenId=*/-1);
        if (!stepEmbeds) return stepEmbeds.error();
        const at::Tensor positions = sequentialPositionIds(cache.numTokens(), 1, numAxes);
        const at::Tensor stepHidden = decoder.forward(*stepEmbeds, positions, cache);  // [1, hidden]
        next = loop.sample(decoder.logits(stepHidden)[0]);
        ++loop.result().timings.numDecodeSteps;
    }
    loop.result().timings.decodeMs = msSince(decodeStart);
    return loop.result();
}

Result<GenerationResult> generate(const TextDecoder& decoder, const PrefillInput& input,
                                  const GenerationConfig& config, const TokenCallback& onToken)
{
    const auto cache = decoder.makeCache(static_cast<int64_t>(input.ids.size()) + std::max(config.maxNewTokens, 0));
    return generate(decoder, input, config, *cache, onToken);
}

}  // namespace lector::model::hunyuan
