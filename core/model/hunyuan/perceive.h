// PerceiveMerger: HunyuanOCR's "adaptive MLP connector" (checkpoint prefix vit.perceive., spec §3.4).
// It turns the ViT output of one image, [gh*gw, 1152], into the rows that replace the image
// placeholder tokens, [(gh/2)*(gw/2+1) + 2, 1024]: RMSNorm, 2x2 stride-2 conv, GELU, 1x1 conv, one
// learned newline column per merged row, linear, begin/end rows, RMSNorm over all rows.
// Owned by VisionEncoder; engine thread only (holds tensors on the model's device).
#pragma once

#include <ATen/ATen.h>

#include "core/common/result.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/weights.h"

namespace lector::model::hunyuan {

// y = w * (x_f32 * rsqrt(mean(x_f32^2) + eps)) cast back to x's dtype (HF HunYuanVLRMSNorm).
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

class PerceiveMerger {
public:
    // Errors: "bad_model" naming the missing or mis-shaped tensor.
    static Result<PerceiveMerger> load(const WeightStore& weights, const VisionConfig& config,
                                       at::ScalarType dtype, at::Device device);

    PerceiveMerger() = default;

    // x: [gridH * gridW, hidden], row-major over the patch grid; gridH, gridW even.
    // Returns [(gridH/m) * (gridW/m + 1) + 2, outHidden].
    at::Tensor forward(const at::Tensor& x, int gridH, int gridW) const;

private:
    int m_merge = 2;
    int m_hidden = 0;
    double m_eps = 1e-5;
    at::Tensor m_beforeRms;  // [hidden]
    at::Tensor m_conv0W;     // [2*hidden, hidden*m*m]: the 2x2 conv as a linear over (c, ky, kx)
    at::Tensor m_conv0B;     // [2*hidden]
    at::Tensor m_conv1W;     // [4*hidden, 2*hidden]: the 1x1 conv
    at::Tensor m_conv1B;     // [4*hidden]
    at::Tensor m_newline;    // [4*hidden]
    at::Tensor m_mlpW;       // [outHidden, 4*hidden]
    at::Tensor m_mlpB;       // [outHidden]
    at::Tensor m_begin;      // [1, outHidden]
    at::Tensor m_end;        // [1, outHidden]
    at::Tensor m_afterRms;   // [outHidden]
};

}  // namespace lector::model::hunyuan
