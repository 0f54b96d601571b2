// Reference XD-RoPE (neox pairing) followed by per-head RMSNorm, in place; then the optional KV write.
#include "gpu/ref/qk_norm_rope_ref.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gpu/ref/element_ref.h"

namespace lector::gpu::ref {
namespace {

int64_t positionOf(const QkNormRopeParams& p, int axis, int token)
{
    const int64_t i = int64_t(axis) * p.positionsAxisStride + token;
    const int64_t pos = p.positionsInt64 ? static_cast<const int64_t*>(p.positions)[i]
                                         : static_cast<const int32_t*>(p.positions)[i];
    return std::clamp<int64_t>(pos, 0, p.maxPosition - 1);
}

void rotateAndNorm(const QkNormRopeParams& p, void* x, int64_t offset, const void* normWeight,
                   const std::vector<int64_t>& freqPos)
{
    const int half = p.headDim / 2;
    std::vector<double> y(p.headDim);
    for (int j = 0; j < half; ++j) {
        const double c = p.cosSinCache[freqPos[j] * p.headDim + j];
        const double s = p.cosSinCache[freqPos[j] * p.headDim + half + j];
        const double x1 = loadElem(x, offset + j, p.dtype);
        const double x2 = loadElem(x, offset + half + j, p.dtype);
        y[j] = x1 * c - x2 * s;
        y[half + j] = x2 * c + x1 * s;
    }
    double inv = 1.0;
    if (normWeight) {
        double sumSq = 0.0;
        for (double v : y) sumSq += v * v;
        inv = 1.0 / std::sqrt(sumSq / p.headDim + p.eps);
    }
    for (int d = 0; d < p.headDim; ++d) {
        const double w = normWeight ? loadElem(normWeight, d, p.dtype) : 1.0;
        storeElem(x, offset + d, p.dtype, static_cast<float>(y[d] * inv * w));
    }
}

}  // namespace

void qkNormRopeRef(const QkNormRopeParams& p)
{
    // Axis of each frequency: the first sections[0] use axis 0, the next sections[1] axis 1, ...
    std::vector<int> freqAxis;
    for (int a = 0; a < p.numPosAxes; ++a) freqAxis.insert(freqAxis.end(), p.sections[a], a);
    freqAxis.resize(p.headDim / 2, p.numPosAxes - 1);
    std::vector<int64_t> freqPos(p.headDim / 2);
    for (int t = 0; t < p.numTokens; ++t) {
        for (int j = 0; j < p.headDim / 2; ++j) freqPos[j] = positionOf(p, freqAxis[j], t);
        for (int h = 0; h < p.numQHeads; ++h)
            rotateAndNorm(p, p.query, t * p.queryTokenStride + int64_t(h) * p.headDim, p.queryNormWeight, freqPos);
        for (int h = 0; h < p.numKvHeads; ++h)
            rotateAndNorm(p, p.key, t * p.keyTokenStride + int64_t(h) * p.headDim, p.keyNormWeight, freqPos);
        if (!p.keyCache) continue;
        const int64_t slot = p.slotMapping[t];
        if (slot < 0 || slot >= p.numCacheSlots) continue;
        for (int h = 0; h < p.numKvHeads; ++h) {
            for (int d = 0; d < p.headDim; ++d) {
                const int64_t dst = (slot * p.numKvHeads + h) * p.headDim + d;
                storeElem(p.keyCache, dst, p.dtype, loadElem(p.key, t * p.keyTokenStride + int64_t(h) * p.headDim + d, p.dtype));
                storeElem(p.valueCache, dst, p.dtype,
                          loadElem(p.value, t * p.valueTokenStride + int64_t(h) * p.headDim + d, p.dtype));
            }
        }
    }
}

}  // namespace lector::gpu::ref
