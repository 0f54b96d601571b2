// XdRope: HunyuanOCR's rotary position embedding over 4 position axes (docs/hunyuanocr-spec.md §5.3).
// Central idea: inv_freq[j] = base^(-2j/headDim) with the fixed NTK-alpha base theta * alpha^(d/(d-2))
// (11 158 839.9 for the real model); frequency j takes its angle from axis j / section (sections of
// xdrope_section, in order p, w, h, t), and both halves of the neox (rotate-half) layout use the same
// angles, so a rotation pair never mixes axes (vLLM / Tencent layout, not transformers 5.x's).
// Built once per decoder at model load; const methods are thread-safe. Used by TextDecoder on the engine
// thread, and by the GPU path as the reference for its rotary kernel.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "core/model/hunyuan/config.h"

namespace lector::model::hunyuan {

class XdRope {
public:
    // headDim even; section sums to headDim / 2 (one entry per position axis). Asserts on a bad layout
    // (config loading validates it first).
    XdRope(int headDim, double theta, double alpha, std::vector<int> section);
    static XdRope fromConfig(const TextConfig& config);

    int headDim() const { return m_headDim; }
    int numAxes() const { return static_cast<int>(m_section.size()); }
    double base() const { return m_base; }  // the effective base theta * alpha^(d/(d-2))
    const at::Tensor& invFreq() const { return m_invFreq; }  // [headDim/2] float32
    // Axis each frequency reads its position from: [headDim/2] int64 values in [0, numAxes).
    const at::Tensor& axisOfFrequency() const { return m_axisOfFreq; }

    // cos and sin tables [n, headDim] float32 for positions [numAxes, n] (int64), laid out
    // [c_0..c_{d/2-1}, c_0..c_{d/2-1}]. Angles are float32 products pos * inv_freq, as in the references.
    // tableDtype: round the tables through this dtype (e.g. at::kBFloat16 to reproduce vLLM / HF runs in
    // bf16, spec §5.3); at::kFloat leaves them as computed.
    std::pair<at::Tensor, at::Tensor> cosSin(const at::Tensor& positions,
                                             at::ScalarType tableDtype = at::kFloat) const;

    // x [n, numHeads, headDim] -> x * cos + rotateHalf(x) * sin with cos/sin [n, headDim] broadcast over
    // heads; computed in float32, returned in x's dtype.
    static at::Tensor apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

private:
    int m_headDim = 0;
    double m_base = 0;
    std::vector<int> m_section;
    at::Tensor m_invFreq;     // [headDim/2] float32
    at::Tensor m_axisOfFreq;  // [headDim/2] int64
};

}  // namespace lector::model::hunyuan
