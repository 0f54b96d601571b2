// Reference sampling: penalty, then greedy argmax (first maximum) or exact top-k with the
// vocabulary-order inverse-CDF draw described in sample_tokens.cuh.
#include "gpu/ref/sample_tokens_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {
namespace {

int64_t chooseTopK(const std::vector<float>& logits, int k, float temperature, float u)
{
    const int n = static_cast<int>(logits.size());
    std::vector<uint32_t> keys(n);
    for (int i = 0; i < n; ++i) keys[i] = orderedKey(logits[i]);
    std::vector<uint32_t> sorted = keys;
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<uint32_t>());
    const uint32_t kth = sorted[k - 1];
    int greater = 0;
    for (uint32_t key : keys) greater += key > kth;
    int tiesLeft = k - greater;
    std::vector<char> selected(n, 0);
    float maxLogit = -INFINITY;
    for (int i = 0; i < n; ++i) {
        selected[i] = keys[i] > kth || (keys[i] == kth && tiesLeft-- > 0);
        if (selected[i]) maxLogit = std::max(maxLogit, logits[i]);
    }
    std::vector<double> weight(n, 0.0);
    double total = 0.0;
    int64_t last = -1;
    for (int i = 0; i < n; ++i) {
        if (!selected[i]) continue;
        // A NaN or -inf logit among the selected weighs nothing.
        const double w = std::exp((double(logits[i]) - maxLogit) / temperature);
        weight[i] = std::isfinite(w) ? w : 0.0;
        total += weight[i];
        last = i;
    }
    const double target = double(u) * total;
    double cumulative = 0.0;
    for (int i = 0; i < n; ++i) {
        if (!selected[i]) continue;
        cumulative += weight[i];
        if (cumulative > target) return i;
    }
    return last;
}

}  // namespace

void sampleTokensRef(const SampleTokensParams& p)
{
    std::vector<float> logits(p.vocabSize);
    for (int s = 0; s < p.numSeqs; ++s) {
        const float penalty = p.repetitionPenalty ? p.repetitionPenalty[s] : 1.0f;
        const int64_t presenceRow = p.presenceRows ? p.presenceRows[s] : s;
        uint8_t* present = p.presence ? p.presence + presenceRow * p.presenceStride : nullptr;
        for (int i = 0; i < p.vocabSize; ++i)
            logits[i] = penalizedLogit(loadElem(p.logits, s * p.logitsStride + i, p.dtype),
                                       present && present[i], penalty);
        const int k = p.topK[s] <= 0 || p.topK[s] >= p.vocabSize ? p.vocabSize : p.topK[s];
        int64_t token = 0;
        if (p.temperature[s] <= 0.0f || k == 1) {
            for (int i = 1; i < p.vocabSize; ++i)
                if (orderedKey(logits[i]) > orderedKey(logits[token])) token = i;
        } else {
            token = chooseTopK(logits, k, p.temperature[s], uniformDraw(p.seeds[s], p.offsets[s]));
        }
        p.outTokens[s] = token;
        if (present && p.updatePresence) present[token] = 1;
        if (p.advance.contextLens) advanceDecodeRow(p.advance, s, token);
    }
}

}  // namespace lector::gpu::ref
