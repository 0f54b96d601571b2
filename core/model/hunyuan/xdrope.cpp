// XD-RoPE tables and rotation (see xdrope.h).
#include "core/model/hunyuan/xdrope.h"

#include <cmath>
#include <numeric>

#include "core/common/assert.h"

namespace lector::model::hunyuan {

XdRope::XdRope(int headDim, double theta, double alpha, std::vector<int> section)
    : m_headDim(headDim), m_section(std::move(section))
{
    LECTOR_ASSERT(headDim > 2 && headDim % 2 == 0);
    LECTOR_ASSERT(!m_section.empty());
    LECTOR_ASSERT(std::accumulate(m_section.begin(), m_section.end(), 0) == headDim / 2);
    const int half = headDim / 2;
    // Effective NTK-alpha base, in double as the Python references compute it.
    m_base = theta * std::pow(alpha, static_cast<double>(headDim) / (headDim - 2));

    // inv_freq in float32 like `1 / (base ** (arange(0, d, 2).float() / d))`: the exponent is a float32
    // quotient and the power is taken in float32 with the base rounded to float32.
    m_invFreq = at::empty({half}, at::kFloat);
    float* inv = m_invFreq.data_ptr<float>();
    const float baseF = static_cast<float>(m_base);
    for (int j = 0; j < half; ++j) {
        const float exponent = static_cast<float>(2 * j) / static_cast<float>(headDim);
        inv[j] = 1.0f / std::pow(baseF, exponent);
    }

    m_axisOfFreq = at::empty({half}, at::kLong);
    int64_t* axis = m_axisOfFreq.data_ptr<int64_t>();
    int j = 0;
    for (size_t a = 0; a < m_section.size(); ++a)
        for (int s = 0; s < m_section[a]; ++s) axis[j++] = static_cast<int64_t>(a);
}

XdRope XdRope::fromConfig(const TextConfig& config)
{
    return XdRope(config.headDim, config.ropeTheta, config.ropeAlpha, config.xdropeSection);
}

std::pair<at::Tensor, at::Tensor> XdRope::cosSin(const at::Tensor& positions, at::ScalarType tableDtype) const
{
    LECTOR_ASSERT(positions.dim() == 2 && positions.size(0) == numAxes());
    // [half, n] -> [n, half]: the position each frequency rotates by, per token.
    const at::Tensor posPerFreq =
        positions.to(at::kLong).index_select(0, m_axisOfFreq).to(at::kFloat).t();
    const at::Tensor freqs = posPerFreq * m_invFreq.unsqueeze(0);  // [n, half]
    const at::Tensor angles = at::cat({freqs, freqs}, -1);         // [n, headDim]
    at::Tensor cos = angles.cos();
    at::Tensor sin = angles.sin();
    if (tableDtype != at::kFloat) {
        cos = cos.to(tableDtype).to(at::kFloat);
        sin = sin.to(tableDtype).to(at::kFloat);
    }
    return {cos.contiguous(), sin.contiguous()};
}

at::Tensor XdRope::apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin)
{
    // x [n, heads, d]; cos, sin [n, d] -> [n, 1, d]
    const int64_t half = x.size(-1) / 2;
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor rotated = at::cat({-xf.narrow(-1, half, half), xf.narrow(-1, 0, half)}, -1);
    const at::Tensor out = xf * cos.unsqueeze(1) + rotated * sin.unsqueeze(1);
    return out.to(x.scalar_type());
}

}  // namespace lector::model::hunyuan
