// Reference vision attention: row r of image i attends to every row of image i, nothing else.
#include "gpu/ref/vision_attention_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {

void visionAttentionRef(const VisionAttentionParams& p)
{
    const int64_t hd = int64_t(p.numHeads) * p.headDim;
    std::vector<double> q(static_cast<size_t>(p.headDim)), scores, acc(static_cast<size_t>(p.headDim));
    for (int image = 0; image < p.numImages; ++image) {
        const int64_t first = p.cuSeqlens[image], n = p.cuSeqlens[image + 1] - first;
        scores.resize(static_cast<size_t>(n));
        for (int h = 0; h < p.numHeads; ++h) {
            const int64_t qOff = int64_t(h) * p.headDim, kOff = hd + qOff, vOff = 2 * hd + qOff;
            for (int64_t r = 0; r < n; ++r) {
                const int64_t row = (first + r) * p.qkvRowStride;
                for (int d = 0; d < p.headDim; ++d) q[static_cast<size_t>(d)] = loadElem(p.qkv, row + qOff + d, p.dtype);
                double mx = -INFINITY;
                for (int64_t j = 0; j < n; ++j) {
                    const int64_t keyRow = (first + j) * p.qkvRowStride + kOff;
                    double dot = 0.0;
                    for (int d = 0; d < p.headDim; ++d) dot += q[static_cast<size_t>(d)] * loadElem(p.qkv, keyRow + d, p.dtype);
                    scores[static_cast<size_t>(j)] = dot * p.scale;
                    mx = std::max(mx, scores[static_cast<size_t>(j)]);
                }
                double sum = 0.0;
                std::fill(acc.begin(), acc.end(), 0.0);
                for (int64_t j = 0; j < n; ++j) {
                    const double w = std::exp(scores[static_cast<size_t>(j)] - mx);
                    sum += w;
                    const int64_t valueRow = (first + j) * p.qkvRowStride + vOff;
                    for (int d = 0; d < p.headDim; ++d) acc[static_cast<size_t>(d)] += w * loadElem(p.qkv, valueRow + d, p.dtype);
                }
                const int64_t outRow = (first + r) * p.outRowStride + qOff;
                for (int d = 0; d < p.headDim; ++d)
                    storeElem(p.out, outRow + d, p.dtype, static_cast<float>(acc[static_cast<size_t>(d)] / sum));
            }
        }
    }
}

}  // namespace lector::gpu::ref
