// Resize (opset 11 and later): modes nearest and linear, every coordinate_transformation_mode but
// tf_crop_and_resize, every nearest_mode. The general path resizes one axis at a time with index
// tables computed the way onnxruntime computes them (in float32), so ties round the same way; 2-D
// power-of-two nearest upsampling and 2-D half-pixel / align-corners bilinear use ATen's kernels,
// which give the same values.
#include "core/model/onnx/ops.h"

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

namespace lector::model::onnx {

namespace {

enum class Coord { HalfPixel, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNearest };
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct ResizeParams {
    bool linear = false;
    Coord coord = Coord::HalfPixel;
    Nearest nearest = Nearest::RoundPreferFloor;
};

float sourceCoordinate(Coord mode, int64_t outIdx, float scale, int64_t inLen, int64_t outLen)
{
    const auto x = static_cast<float>(outIdx);
    switch (mode) {
    case Coord::HalfPixel: return (x + 0.5f) / scale - 0.5f;
    case Coord::PytorchHalfPixel: return outLen > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case Coord::AlignCorners:
        return outLen == 1 ? 0.0f : x * static_cast<float>(inLen - 1) / static_cast<float>(outLen - 1);
    case Coord::Asymmetric: return x / scale;
    case Coord::TfHalfPixelForNearest: return (x + 0.5f) / scale;
    }
    return x;
}

int64_t roundNearest(Nearest mode, float x)
{
    switch (mode) {
    case Nearest::RoundPreferFloor:
        if (x == static_cast<float>(static_cast<int64_t>(std::floor(x))) + 0.5f) return static_cast<int64_t>(std::floor(x));
        return static_cast<int64_t>(std::round(x));
    case Nearest::RoundPreferCeil:
        if (x == static_cast<float>(static_cast<int64_t>(std::floor(x))) + 0.5f) return static_cast<int64_t>(std::ceil(x));
        return static_cast<int64_t>(std::round(x));
    case Nearest::Floor: return static_cast<int64_t>(std::floor(x));
    case Nearest::Ceil: return static_cast<int64_t>(std::ceil(x));
    }
    return 0;
}

// Index table (and, for linear, the second index and weight) for one axis.
struct AxisMap {
    std::vector<int64_t> lo, hi;
    std::vector<float> weight;  // of `hi`
    bool identity = true;
};

AxisMap axisMap(const ResizeParams& p, int64_t inLen, int64_t outLen, float scale)
{
    AxisMap m;
    m.lo.resize(static_cast<size_t>(outLen));
    if (p.linear) {
        m.hi.resize(m.lo.size());
        m.weight.resize(m.lo.size());
    }
    for (int64_t i = 0; i < outLen; ++i) {
        float x = sourceCoordinate(p.coord, i, scale, inLen, outLen);
        const auto k = static_cast<size_t>(i);
        if (p.linear) {
            x = std::clamp(x, 0.0f, static_cast<float>(inLen - 1));
            const auto x0 = static_cast<int64_t>(std::floor(x));
            m.lo[k] = x0;
            m.hi[k] = std::min(x0 + 1, inLen - 1);
            m.weight[k] = x - static_cast<float>(x0);
            m.identity = m.identity && outLen == inLen && x0 == i && m.weight[k] == 0.0f;
        } else {
            m.lo[k] = std::clamp<int64_t>(roundNearest(p.nearest, x), 0, inLen - 1);
            m.identity = m.identity && outLen == inLen && m.lo[k] == i;
        }
    }
    return m;
}

// An axis map's tables on the input's device and dtype, made once per (axis, sizes, scale) and kept by
// the node: a CUDA graph capture of the plan cannot upload them from pageable memory, and replays
// reuse them.
struct AxisTables {
    at::Tensor lo, hi, weight;
};
using AxisTableKey = std::tuple<int64_t, int64_t, int64_t, float, int>;  // axis, in, out, scale, dtype
using AxisTableCache = std::map<AxisTableKey, AxisTables>;

const AxisTables& axisTables(AxisTableCache& cache, const AxisMap& m, int64_t axis, int64_t inLen, float scale,
                             const at::Tensor& x)
{
    const AxisTableKey key{axis, inLen, static_cast<int64_t>(m.lo.size()), scale, static_cast<int>(x.scalar_type())};
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    AxisTables t;
    t.lo = at::tensor(m.lo, at::kLong).to(x.device());
    t.hi = at::tensor(m.hi, at::kLong).to(x.device());
    t.weight = at::tensor(m.weight, at::kFloat).to(x.device(), x.scalar_type());
    return cache.emplace(key, std::move(t)).first->second;
}

bool isPowerOfTwoUpsample(const AxisMap& m, int64_t inLen, int64_t outLen)
{
    if (outLen % inLen) return false;
    const int64_t r = outLen / inLen;
    if (r < 1 || (r & (r - 1))) return false;
    for (size_t i = 0; i < m.lo.size(); ++i)
        if (m.lo[i] != static_cast<int64_t>(i) / r) return false;
    return true;
}

at::Tensor resizeGeneral(at::Tensor x, const ResizeParams& p, const std::vector<AxisMap>& maps,
                         const std::vector<float>& scales, AxisTableCache& cache)
{
    for (int64_t d = 0; d < x.dim(); ++d) {
        const AxisMap& m = maps[static_cast<size_t>(d)];
        if (m.identity) continue;
        const AxisTables& t = axisTables(cache, m, d, x.size(d), scales[static_cast<size_t>(d)], x);
        at::Tensor lo = x.index_select(d, t.lo);
        if (!p.linear) {
            x = lo;
            continue;
        }
        at::Tensor hi = x.index_select(d, t.hi);
        std::vector<int64_t> wShape(static_cast<size_t>(x.dim()), 1);
        wShape[static_cast<size_t>(d)] = static_cast<int64_t>(m.weight.size());
        x = lo.add_(hi.sub_(lo).mul_(t.weight.view(wShape)));  // lo + (hi - lo) * w
    }
    return x;
}

at::Tensor resize(const at::Tensor& x, const ResizeParams& p, const std::vector<int64_t>& outSizes,
                  const std::vector<float>& scales, AxisTableCache& cache)
{
    std::vector<AxisMap> maps;
    for (int64_t d = 0; d < x.dim(); ++d)
        maps.push_back(axisMap(p, x.size(d), outSizes[static_cast<size_t>(d)], scales[static_cast<size_t>(d)]));
    const bool spatialOnly = x.dim() == 4 && maps[0].identity && maps[1].identity;
    if (spatialOnly && !p.linear && isPowerOfTwoUpsample(maps[2], x.size(2), outSizes[2]) &&
        isPowerOfTwoUpsample(maps[3], x.size(3), outSizes[3]))
        return at::upsample_nearest2d(x, {outSizes[2], outSizes[3]});
    if (spatialOnly && p.linear && (p.coord == Coord::HalfPixel || p.coord == Coord::AlignCorners)) {
        const bool align = p.coord == Coord::AlignCorners;
        return at::upsample_bilinear2d(x, {outSizes[2], outSizes[3]}, align,
                                       align ? c10::optional<double>() : c10::optional<double>(scales[2]),
                                       align ? c10::optional<double>() : c10::optional<double>(scales[3]));
    }
    return resizeGeneral(x, p, maps, scales, cache);
}

}  // namespace

Kernel makeResize(const BuildContext& ctx)
{
    const Node& node = ctx.node;
    if (ctx.opset < 11) throw ModelError("Resize node '" + node.name + "': opset < 11 is not supported");
    ResizeParams p;
    const std::string mode = node.attrString("mode", "nearest");
    if (mode == "linear") p.linear = true;
    else if (mode != "nearest") throw ModelError("Resize node '" + node.name + "': mode '" + mode + "' is not supported");
    const std::string coord = node.attrString("coordinate_transformation_mode", "half_pixel");
    if (coord == "half_pixel") p.coord = Coord::HalfPixel;
    else if (coord == "pytorch_half_pixel") p.coord = Coord::PytorchHalfPixel;
    else if (coord == "align_corners") p.coord = Coord::AlignCorners;
    else if (coord == "asymmetric") p.coord = Coord::Asymmetric;
    else if (coord == "tf_half_pixel_for_nearest") p.coord = Coord::TfHalfPixelForNearest;
    else throw ModelError("Resize node '" + node.name + "': coordinate_transformation_mode '" + coord + "' is not supported");
    const std::string nearest = node.attrString("nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor") p.nearest = Nearest::RoundPreferFloor;
    else if (nearest == "round_prefer_ceil") p.nearest = Nearest::RoundPreferCeil;
    else if (nearest == "floor") p.nearest = Nearest::Floor;
    else if (nearest == "ceil") p.nearest = Nearest::Ceil;
    else throw ModelError("Resize node '" + node.name + "': nearest_mode '" + nearest + "' is not supported");
    if (node.attrInt("exclude_outside", 0) != 0)
        throw ModelError("Resize node '" + node.name + "': exclude_outside=1 is not supported");
    // Constant scales (float constants live on the graph's device) are read here, once: reading them
    // back on every run would wait for the device, which a CUDA graph capture cannot do.
    auto hostFloats = [](const at::Tensor& t) {
        const at::Tensor c = t.to(at::kCPU, at::kFloat).contiguous();
        return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    };
    std::optional<std::vector<float>> constantScales;
    if (const at::Tensor* c = ctx.constantInput(2)) constantScales = hostFloats(*c);
    return [p, constantScales, hostFloats, cache = std::make_shared<AxisTableCache>()](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        const auto rank = static_cast<size_t>(x.dim());
        std::vector<int64_t> sizes = sc.has(3) ? toInt64Vector(sc.in(3)) : std::vector<int64_t>{};
        std::vector<float> scales;
        if (constantScales) scales = *constantScales;
        else if (sc.has(2)) scales = hostFloats(sc.in(2));
        if (!sizes.empty()) {
            if (sizes.size() != rank) throw std::runtime_error("'sizes' must have one value per input dim");
            scales.assign(rank, 1.0f);
            for (size_t d = 0; d < rank; ++d) {
                if (sizes[d] < 1) throw std::runtime_error("'sizes' must be positive");
                scales[d] = static_cast<float>(sizes[d]) / static_cast<float>(x.size(static_cast<int64_t>(d)));
            }
        } else {
            if (scales.size() != rank) throw std::runtime_error("needs 'scales' or 'sizes' with one value per input dim");
            for (size_t d = 0; d < rank; ++d) {
                if (!(scales[d] > 0.0f)) throw std::runtime_error("'scales' must be positive");
                sizes.push_back(static_cast<int64_t>(std::floor(static_cast<float>(x.size(static_cast<int64_t>(d))) * scales[d])));
                if (sizes.back() < 1) throw std::runtime_error("the output would be empty");
            }
        }
        sc.setOutput(0, resize(x, p, sizes, scales, *cache));
    };
}

}  // namespace lector::model::onnx
