// Shape and layout kernels: Shape, Reshape, Slice, Concat, Transpose, Squeeze, Unsqueeze, Identity.
// Shape tensors (int64) always live on the CPU, whatever the graph's device, so reading them never
// waits for the GPU. Transpose, Slice and Reshape return views where ATen can.
#include "core/model/onnx/ops.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace lector::model::onnx {

namespace {
std::optional<std::vector<int64_t>> constantInts(const BuildContext& ctx, size_t i)
{
    if (i >= ctx.node.inputs.size() || ctx.node.inputs[i].empty()) return std::nullopt;
    if (const at::Tensor* c = ctx.constantInput(i)) return toInt64Vector(*c);
    return std::nullopt;
}
}  // namespace

Kernel makeShape(const BuildContext& ctx)
{
    const int64_t startAttr = ctx.node.attrInt("start", 0);
    const auto endAttr = ctx.node.attr("end") ? std::optional<int64_t>(ctx.node.attrInt("end", 0)) : std::nullopt;
    return [startAttr, endAttr](StepContext& sc) {
        const auto sizes = sc.in(0).sizes();
        const auto rank = static_cast<int64_t>(sizes.size());
        auto clampIdx = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
        const int64_t start = clampIdx(startAttr), end = endAttr ? clampIdx(*endAttr) : rank;
        std::vector<int64_t> dims(sizes.begin() + start, sizes.begin() + std::max(start, end));
        sc.setOutput(0, at::tensor(dims, at::kLong));
    };
}

Kernel makeReshape(const BuildContext& ctx)
{
    const bool allowZero = ctx.node.attrInt("allowzero", 0) != 0;
    return [allowZero](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        std::vector<int64_t> shape = toInt64Vector(sc.in(1));
        int64_t inferIdx = -1, known = 1;
        for (size_t i = 0; i < shape.size(); ++i) {
            if (shape[i] == 0 && !allowZero) {
                if (static_cast<int64_t>(i) >= x.dim()) throw std::runtime_error("shape has 0 beyond the input rank");
                shape[i] = x.size(static_cast<int64_t>(i));
            }
            if (shape[i] == -1) {
                if (inferIdx >= 0) throw std::runtime_error("shape has more than one -1");
                inferIdx = static_cast<int64_t>(i);
            } else if (shape[i] < 0) {
                throw std::runtime_error("shape has a negative dimension");
            } else {
                known *= shape[i];
            }
        }
        if (inferIdx >= 0) {
            if (known == 0 || x.numel() % known) throw std::runtime_error("cannot infer the -1 dimension");
            shape[static_cast<size_t>(inferIdx)] = x.numel() / known;
        } else if (known != x.numel()) {
            throw std::runtime_error("shape does not match the number of elements");
        }
        sc.setOutput(0, x.reshape(shape));
    };
}

namespace {
at::Tensor sliceAxis(const at::Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step)
{
    const int64_t dim = x.size(axis);
    if (step == 0) throw std::runtime_error("Slice step must not be 0");
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        return x.slice(axis, start, std::max(start, end), step);
    }
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    std::vector<int64_t> idx;
    for (int64_t i = start; i > end; i += step) idx.push_back(i);
    return x.index_select(axis, at::tensor(idx, at::kLong).to(x.device()));
}
}  // namespace

Kernel makeSlice(const BuildContext& ctx)
{
    std::optional<std::vector<int64_t>> starts, ends, axes, steps;
    if (ctx.opset < 10) {
        starts = ctx.node.attrInts("starts");
        ends = ctx.node.attrInts("ends");
        if (ctx.node.attr("axes")) axes = ctx.node.attrInts("axes");
        if (ctx.node.inputs.size() > 1) throw ModelError("Slice node '" + ctx.node.name + "': opset < 10 takes one input");
    } else {
        if (ctx.node.inputs.size() < 3) throw ModelError("Slice node '" + ctx.node.name + "' needs starts and ends");
        starts = constantInts(ctx, 1);
        ends = constantInts(ctx, 2);
        axes = constantInts(ctx, 3);
        steps = constantInts(ctx, 4);
    }
    const bool inputForm = ctx.opset >= 10;
    return [starts, ends, axes, steps, inputForm](StepContext& sc) {
        at::Tensor x = sc.in(0);
        auto pick = [&](const std::optional<std::vector<int64_t>>& fixed, size_t i) -> std::vector<int64_t> {
            if (fixed) return *fixed;
            if (inputForm && sc.has(i)) return toInt64Vector(sc.in(i));
            return {};
        };
        const auto st = pick(starts, 1), en = pick(ends, 2);
        auto ax = pick(axes, 3), sp = pick(steps, 4);
        if (st.size() != en.size()) throw std::runtime_error("starts and ends differ in length");
        if (ax.empty())
            for (size_t i = 0; i < st.size(); ++i) ax.push_back(static_cast<int64_t>(i));
        if (sp.empty()) sp.assign(st.size(), 1);
        if (ax.size() != st.size() || sp.size() != st.size())
            throw std::runtime_error("axes / steps do not match starts in length");
        for (size_t i = 0; i < st.size(); ++i)
            x = sliceAxis(x, normaliseAxis(ax[i], x.dim(), "Slice"), st[i], en[i], sp[i]);
        sc.setOutput(0, x);
    };
}

Kernel makeConcat(const BuildContext& ctx)
{
    if (!ctx.node.attr("axis")) throw ModelError("Concat node '" + ctx.node.name + "' has no axis");
    const int64_t axis = ctx.node.attrInt("axis", 0);
    return [axis](StepContext& sc) {
        std::vector<at::Tensor> parts;
        for (size_t i = 0; i < sc.numInputs(); ++i) parts.push_back(sc.in(i));
        sc.setOutput(0, at::cat(parts, normaliseAxis(axis, parts.front().dim(), "Concat")));
    };
}

Kernel makeTranspose(const BuildContext& ctx)
{
    const auto perm = ctx.node.attrInts("perm");
    return [perm](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        std::vector<int64_t> p = perm;
        if (p.empty())
            for (int64_t d = x.dim(); d-- > 0;) p.push_back(d);
        if (static_cast<int64_t>(p.size()) != x.dim()) throw std::runtime_error("perm does not match the input rank");
        sc.setOutput(0, x.permute(p));
    };
}

namespace {
std::vector<int64_t> axesOf(const BuildContext& ctx, bool& fromInput)
{
    fromInput = ctx.opset >= 13;
    if (!fromInput) return ctx.node.attrInts("axes");
    if (auto c = constantInts(ctx, 1)) {
        fromInput = false;
        return *c;
    }
    fromInput = ctx.node.inputs.size() > 1 && !ctx.node.inputs[1].empty();
    return {};
}
}  // namespace

Kernel makeSqueeze(const BuildContext& ctx)
{
    bool fromInput = false;
    const auto fixedAxes = axesOf(ctx, fromInput);
    return [fixedAxes, fromInput](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        std::vector<int64_t> axes = fromInput ? toInt64Vector(sc.in(1)) : fixedAxes;
        std::vector<int64_t> shape;
        std::vector<bool> drop(static_cast<size_t>(x.dim()), axes.empty());
        for (int64_t a : axes) {
            const int64_t d = normaliseAxis(a, x.dim(), "Squeeze");
            if (x.size(d) != 1) throw std::runtime_error("cannot squeeze a dimension of size " + std::to_string(x.size(d)));
            drop[static_cast<size_t>(d)] = true;
        }
        for (int64_t d = 0; d < x.dim(); ++d)
            if (!(drop[static_cast<size_t>(d)] && x.size(d) == 1)) shape.push_back(x.size(d));
        sc.setOutput(0, x.reshape(shape));
    };
}

Kernel makeUnsqueeze(const BuildContext& ctx)
{
    bool fromInput = false;
    const auto fixedAxes = axesOf(ctx, fromInput);
    return [fixedAxes, fromInput](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        std::vector<int64_t> axes = fromInput ? toInt64Vector(sc.in(1)) : fixedAxes;
        const int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
        for (auto& a : axes) a = normaliseAxis(a, rank, "Unsqueeze");
        std::sort(axes.begin(), axes.end());
        if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) throw std::runtime_error("repeated axis");
        std::vector<int64_t> shape;
        int64_t src = 0;
        size_t next = 0;
        for (int64_t d = 0; d < rank; ++d) {
            if (next < axes.size() && axes[next] == d) {
                shape.push_back(1);
                ++next;
            } else {
                shape.push_back(x.size(src++));
            }
        }
        sc.setOutput(0, x.reshape(shape));
    };
}

Kernel makeIdentity(const BuildContext&)
{
    return [](StepContext& sc) { sc.setOutput(0, sc.in(0)); };
}

}  // namespace lector::model::onnx
