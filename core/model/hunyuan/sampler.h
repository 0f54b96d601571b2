// Sampler: picks the next token from one row of logits (docs/hunyuanocr-spec.md §8).
// Order as in Hugging Face generate() and vLLM: repetition penalty -> temperature -> top-k -> top-p ->
// softmax -> draw. Temperature 0 is greedy (argmax, first index on ties), and the penalty applies in
// greedy mode too, as HF does with HunyuanOCR 1.0's generation_config (1.03).
// Penalty semantics (HF RepetitionPenaltyLogitsProcessor): for every distinct id of the whole sequence so
// far (prompt, image placeholders and specials included, plus generated ids) the logit l becomes
// l / p when l > 0, else l * p.
// The random draw uses our own seeded mt19937_64 -> double conversion, so a seed gives the same tokens on
// every platform. One Sampler per sequence; not thread-safe (engine thread).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <random>
#include <vector>

namespace lector::model::hunyuan {

struct SamplingConfig {
    float temperature = 0.0f;         // <= 0: greedy
    int topK = 0;                     // 0: off
    float topP = 1.0f;                // >= 1: off
    float repetitionPenalty = 1.03f;  // 1: off (HunyuanOCR 1.0 ships 1.03)
    std::uint64_t seed = 0;
};

// One candidate of the filtered distribution.
struct TokenProb {
    int id = 0;
    double prob = 0;
};

// HF repetition penalty in place over logits [vocab] (float32, contiguous), for the ids in ids.
// Duplicates in ids are harmless (each distinct id is penalised once). Ids outside [0, vocab) are ignored.
void applyRepetitionPenalty(float* logits, int64_t vocab, const std::vector<int>& ids, float penalty);

// Index of the largest value, the first one on ties (what torch.argmax gives on CPU).
int argmaxFirst(const float* values, int64_t n);

class Sampler {
public:
    explicit Sampler(const SamplingConfig& config);

    const SamplingConfig& config() const { return m_config; }
    bool isGreedy() const { return m_config.temperature <= 0.0f; }
    void reseed(std::uint64_t seed) { m_rng.seed(seed); }

    // The next token for logits [vocab] (any float dtype, CPU or device; copied to CPU float32) given
    // the ids the penalty applies to (the whole sequence so far; duplicates allowed).
    int sample(const at::Tensor& logits, const std::vector<int>& penaltyIds);

    // The candidates and their renormalised probabilities after penalty, temperature, top-k and top-p,
    // most probable first (ties: lower id first). Greedy configs give the argmax alone with probability 1.
    // For tests and for showing alternatives; does not advance the RNG.
    std::vector<TokenProb> distribution(const at::Tensor& logits, const std::vector<int>& penaltyIds) const;

private:
    std::vector<TokenProb> filtered(std::vector<float>& scores) const;
    double uniform();  // [0, 1)

    SamplingConfig m_config;
    std::mt19937_64 m_rng;
};

}  // namespace lector::model::hunyuan
