// Sampler (see sampler.h). Works on a CPU float32 copy of one logits row: the vocabulary is 120 818
// wide, so the copy and a sort cost a few milliseconds at most, small beside a decode step.
#include "core/model/hunyuan/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lector::model::hunyuan {

namespace {

std::vector<float> toScores(const at::Tensor& logits)
{
    const at::Tensor row = logits.reshape({-1}).to(at::kCPU, at::kFloat).contiguous();
    const float* data = row.data_ptr<float>();
    return std::vector<float>(data, data + row.numel());
}

// Higher score first; equal scores: lower id first (matches argmaxFirst for the top candidate).
struct ByScoreThenId {
    const std::vector<float>* scores;
    bool operator()(int a, int b) const
    {
        const float sa = (*scores)[static_cast<size_t>(a)], sb = (*scores)[static_cast<size_t>(b)];
        return sa > sb || (sa == sb && a < b);
    }
};

}  // namespace

void applyRepetitionPenalty(float* logits, int64_t vocab, const std::vector<int>& ids, float penalty)
{
    if (penalty == 1.0f) return;
    // Gather every value before writing any, so a duplicated id is penalised once (HF gather + scatter).
    std::vector<float> penalised(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        const int id = ids[i];
        if (id < 0 || id >= vocab) continue;
        const float l = logits[id];
        penalised[i] = l > 0.0f ? l / penalty : l * penalty;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        const int id = ids[i];
        if (id >= 0 && id < vocab) logits[id] = penalised[i];
    }
}

int argmaxFirst(const float* values, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i)
        if (values[i] > values[best]) best = i;
    return static_cast<int>(best);
}

Sampler::Sampler(const SamplingConfig& config) : m_config(config), m_rng(config.seed) {}

std::vector<TokenProb> Sampler::filtered(std::vector<float>& scores) const
{
    const int64_t vocab = static_cast<int64_t>(scores.size());
    if (isGreedy()) return {TokenProb{argmaxFirst(scores.data(), vocab), 1.0}};

    const float invTemperature = 1.0f / m_config.temperature;
    for (float& s : scores) s *= invTemperature;

    // Candidates, most probable first.
    std::vector<int> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    const ByScoreThenId cmp{&scores};
    if (m_config.topK > 0 && m_config.topK < vocab) {
        std::partial_sort(order.begin(), order.begin() + m_config.topK, order.end(), cmp);
        order.resize(static_cast<size_t>(m_config.topK));
    } else {
        std::sort(order.begin(), order.end(), cmp);
    }

    // Softmax over the candidates, in double.
    const double maxScore = scores[static_cast<size_t>(order.front())];
    std::vector<TokenProb> out;
    out.reserve(order.size());
    double total = 0;
    for (int id : order) {
        const double p = std::exp(static_cast<double>(scores[static_cast<size_t>(id)]) - maxScore);
        if (!std::isfinite(p) || p <= 0.0) continue;  // -inf logits (masked) drop out
        out.push_back({id, p});
        total += p;
    }
    for (auto& c : out) c.prob /= total;

    // Top-p (HF TopPLogitsWarper): keep a token while the mass before it is below top_p; keep >= 1.
    if (m_config.topP < 1.0f) {
        double before = 0;
        size_t keep = 0;
        while (keep < out.size() && (keep == 0 || before < m_config.topP)) before += out[keep++].prob;
        out.resize(keep);
        double kept = 0;
        for (const auto& c : out) kept += c.prob;
        for (auto& c : out) c.prob /= kept;
    }
    return out;
}

std::vector<TokenProb> Sampler::distribution(const at::Tensor& logits, const std::vector<int>& penaltyIds) const
{
    std::vector<float> scores = toScores(logits);
    applyRepetitionPenalty(scores.data(), static_cast<int64_t>(scores.size()), penaltyIds,
                           m_config.repetitionPenalty);
    return filtered(scores);
}

int Sampler::sample(const at::Tensor& logits, const std::vector<int>& penaltyIds)
{
    std::vector<float> scores = toScores(logits);
    applyRepetitionPenalty(scores.data(), static_cast<int64_t>(scores.size()), penaltyIds,
                           m_config.repetitionPenalty);
    if (isGreedy()) return argmaxFirst(scores.data(), static_cast<int64_t>(scores.size()));
    const std::vector<TokenProb> candidates = filtered(scores);
    const double u = uniform();
    double cumulative = 0;
    for (const auto& c : candidates) {
        cumulative += c.prob;
        if (u < cumulative) return c.id;
    }
    return candidates.back().id;  // u within rounding of 1
}

double Sampler::uniform()
{
    // 53 random bits -> [0, 1), independent of the standard library's distribution code.
    return static_cast<double>(m_rng() >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace lector::model::hunyuan
