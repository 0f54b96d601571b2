// Reference greedy screen: x quantized as the kernel does, each CTA's stretch bounded row by row, the rows
// that reach the threshold recomputed in float32, the best kept in the kernel's order.
#include "gpu/ref/greedy_screen_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void greedyScreenRef(const GreedyScreenParams& p)
{
    const int k = p.k, vocab = p.vocab;
    std::vector<float> x(static_cast<size_t>(k));
    float amax = 0.0f, asum = 0.0f;
    for (int i = 0; i < k; ++i) {
        x[i] = loadElem(p.x, i, p.dtype);
        amax = std::fmax(amax, std::fabs(x[i]));
        asum += std::fabs(x[i]);
    }
    const float sx = screenXScale(amax);
    const float bound = screenBound(asum, sx, k);
    std::vector<int> hi(static_cast<size_t>(k)), lo(static_cast<size_t>(k));
    for (int i = 0; i < k; ++i) screenXSplit(screenXLevel(x[i], sx), hi[i], lo[i]);
    const int64_t presenceRow = p.presenceRow ? *p.presenceRow : 0;
    uint8_t* present = p.presence ? p.presence + presenceRow * p.presenceStride : nullptr;
    const float penalty = p.penalty ? *p.penalty : 1.0f;

    const int ctas = std::max(1, p.numCtas);
    const int rowsPer = (vocab + ctas - 1) / ctas;
    std::vector<float> lower(static_cast<size_t>(rowsPer)), upper(static_cast<size_t>(rowsPer));
    uint32_t published = 0;  // the atomic max: CTAs publish in order here
    unsigned long long best = 0, recomputed = 0;
    for (int cta = 0; cta < ctas; ++cta) {
        const int begin = cta * rowsPer, n = std::max(0, std::min(vocab, begin + rowsPer) - begin);
        float lowest = -INFINITY;
        for (int j = 0; j < n; ++j) {
            const int64_t r = begin + j;
            const int8_t* q = p.q + r * k;
            int64_t sumHi = 0, sumLo = 0;
            for (int i = 0; i < k; ++i) sumHi += q[i] * hi[i], sumLo += q[i] * lo[i];
            const float s = p.scales[r];
            screenRange(s * sx * static_cast<float>(128 * sumHi + sumLo), s * bound, present && present[r], penalty,
                        lower[j], upper[j]);
            lowest = std::fmax(lowest, lower[j]);
        }
        published = std::max(published, orderedKey(lowest));
        const float limit = orderedKeyValue(published);
        for (int j = 0; j < n; ++j) {
            if (!(upper[j] >= limit)) continue;
            const int64_t r = begin + j;
            float acc = 0.0f;
            for (int i = 0; i < k; ++i) acc = std::fma(loadElem(p.weight, r * p.weightStride + i, p.dtype), x[i], acc);
            best = std::max(best, screenCandidateKey(penalizedLogit(acc, present && present[r], penalty), static_cast<int>(r)));
            ++recomputed;
        }
    }
    const int64_t token = screenTokenOf(best);
    *p.outToken = token;
    if (present && p.updatePresence) present[token] = 1;
    if (p.advance.contextLens) advanceDecodeRow(p.advance, 0, token);
    if (p.stats) p.stats[0] += recomputed, p.stats[1] += 1;
}

}  // namespace lector::gpu::ref
