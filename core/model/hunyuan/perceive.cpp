#include "core/model/hunyuan/perceive.h"

#include <stdexcept>
#include <string>

namespace lector::model::hunyuan {

at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps)
{
    const auto xf = x.to(at::kFloat);
    const auto normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
    return weight * normed.to(x.scalar_type());
}

Result<PerceiveMerger> PerceiveMerger::load(const WeightStore& weights, const VisionConfig& config,
                                            at::ScalarType dtype, at::Device device)
{
    const int64_t c = config.hiddenSize, m = config.spatialMergeSize, out = config.outHiddenSize;
    PerceiveMerger pm;
    pm.m_merge = config.spatialMergeSize;
    pm.m_hidden = config.hiddenSize;
    pm.m_eps = config.layerNormEps;
    struct Want {
        at::Tensor* dst;
        const char* name;
        std::vector<int64_t> shape;
    };
    const Want wants[] = {
        {&pm.m_beforeRms, "vit.perceive.before_rms.weight", {c}},
        {&pm.m_conv0W, "vit.perceive.proj.0.weight", {2 * c, c, m, m}},
        {&pm.m_conv0B, "vit.perceive.proj.0.bias", {2 * c}},
        {&pm.m_conv1W, "vit.perceive.proj.2.weight", {4 * c, 2 * c, 1, 1}},
        {&pm.m_conv1B, "vit.perceive.proj.2.bias", {4 * c}},
        {&pm.m_newline, "vit.perceive.image_newline", {4 * c}},
        {&pm.m_mlpW, "vit.perceive.mlp.weight", {out, 4 * c}},
        {&pm.m_mlpB, "vit.perceive.mlp.bias", {out}},
        {&pm.m_begin, "vit.perceive.image_begin", {out}},
        {&pm.m_end, "vit.perceive.image_end", {out}},
        {&pm.m_afterRms, "vit.perceive.after_rms.weight", {out}},
    };
    for (const auto& w : wants) {
        auto t = weights.load(w.name, w.shape, dtype, device);
        if (!t) return t.error();
        *w.dst = std::move(*t);
    }
    // Convolutions as linears: a stride-m m x m conv over non-overlapping cells is a matmul over the
    // flattened (c, ky, kx) cell, and a 1x1 conv is a plain matmul.
    pm.m_conv0W = pm.m_conv0W.reshape({2 * c, c * m * m}).contiguous();
    pm.m_conv1W = pm.m_conv1W.reshape({4 * c, 2 * c}).contiguous();
    pm.m_begin = pm.m_begin.view({1, out});
    pm.m_end = pm.m_end.view({1, out});
    return pm;
}

at::Tensor PerceiveMerger::forward(const at::Tensor& x, int gridH, int gridW) const
{
    const int m = m_merge;
    if (gridH % m != 0 || gridW % m != 0 || x.dim() != 2 || x.size(0) != int64_t{gridH} * gridW ||
        x.size(1) != m_hidden)
        throw std::invalid_argument("PerceiveMerger: input does not match grid " + std::to_string(gridH) + "x" +
                                    std::to_string(gridW));
    const int64_t mh = gridH / m, mw = gridW / m;
    auto h = rmsNorm(x, m_beforeRms, m_eps);  // [gh*gw, C]
    // [gh, gw, C] -> [mh, m, mw, m, C] -> [mh, mw, C, m(ky), m(kx)] -> one (c, ky, kx) vector per cell.
    h = h.view({mh, m, mw, m, m_hidden}).permute({0, 2, 4, 1, 3}).reshape({mh * mw, int64_t{m_hidden} * m * m});
    h = at::gelu(at::linear(h, m_conv0W, m_conv0B));   // [mh*mw, 2C]
    h = at::linear(h, m_conv1W, m_conv1B);             // [mh*mw, 4C]
    // Append the newline vector after each merged row: [mh, mw + 1, 4C].
    const int64_t wide = h.size(1);
    auto rows = at::cat({h.view({mh, mw, wide}), m_newline.view({1, 1, wide}).expand({mh, 1, wide})}, 1);
    auto tokens = at::linear(rows.reshape({mh * (mw + 1), wide}), m_mlpW, m_mlpB);  // [mh*(mw+1), out]
    // Normalise after adding begin/end: normalising before the concat breaks generation (spec §3.4.8).
    return rmsNorm(at::cat({m_begin, tokens, m_end}, 0), m_afterRms, m_eps);
}

}  // namespace lector::model::hunyuan
