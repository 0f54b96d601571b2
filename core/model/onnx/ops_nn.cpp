// Convolution, normalisation and pooling kernels: Conv, ConvTranspose, BatchNormalization,
// GlobalAveragePool, AveragePool, MaxPool.
//
// CPU float32: 2-D convolutions call oneDNN (at::mkldnn_convolution) directly, activations in
// channels-last layout. Measured on the det graph at 960x960, 2 threads: NCHW activations are 2.3x
// slower (depthwise convolutions ~5x); weights prepacked with mkldnn_reorder_conv2d_weight are also
// 2.3x slower (the packed format does not match the channels-last primitive and is reordered back
// on every call); ATen's own dispatch picks im2col + the system BLAS (Debian's is the reference
// one) for small inputs. ConvTranspose with kernel == stride (the DB head's upsampling) becomes a
// 1x1 convolution plus a pixel shuffle: ATen's transposed convolution is ~20x slower on CPU.
// Tried and dropped: NCHW for tensors of up to 16 / 32 channels and ATen's dispatch (both slower on
// the cls graph as well).
//
// CUDA: cuDNN builds an execution plan the first time it meets a convolution's shape, and the PP-OCR
// graphs have ~150 convolutions: a page of a new size took ~0.9 s of detection and ~1.7 s of recognition
// the first time against 10 and 17 ms warm (docs/perf.md, call 166), and the depthwise ones were most of
// it. So only the full convolutions (10 of them) go to cuDNN; the 1x1 ones (104) are one cuBLAS product
// each over the channels-last activations, bias in its epilogue, and the depthwise ones (39) take ATen's
// own depthwise kernel, which plans nothing (call 168: 20 receipts cold in 4.2 s instead of 60; with the
// depthwise ones left on cuDNN, 62 s).
#include "core/model/onnx/ops.h"

#include <ATen/ops/_conv_depthwise2d.h>

namespace lector::model::onnx {

namespace {

struct ConvGeometry {
    std::vector<int64_t> stride, dilation, padBegin, padEnd;
    int64_t groups = 1;
    enum class AutoPad { NotSet, Valid, SameUpper, SameLower } autoPad = AutoPad::NotSet;

    bool symmetric() const { return padBegin == padEnd; }
};

ConvGeometry readGeometry(const Node& node, size_t spatial)
{
    ConvGeometry g;
    g.stride = node.attrInts("strides", std::vector<int64_t>(spatial, 1));
    g.dilation = node.attrInts("dilations", std::vector<int64_t>(spatial, 1));
    auto pads = node.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
    g.groups = node.attrInt("group", 1);
    const std::string autoPad = node.attrString("auto_pad", "NOTSET");
    if (autoPad == "VALID") g.autoPad = ConvGeometry::AutoPad::Valid;
    else if (autoPad == "SAME_UPPER") g.autoPad = ConvGeometry::AutoPad::SameUpper;
    else if (autoPad == "SAME_LOWER") g.autoPad = ConvGeometry::AutoPad::SameLower;
    else if (autoPad != "NOTSET") throw ModelError("unknown auto_pad '" + autoPad + "' in node '" + node.name + "'");
    if (g.stride.size() != spatial || g.dilation.size() != spatial || pads.size() != 2 * spatial)
        throw ModelError("strides/dilations/pads of node '" + node.name + "' do not match its " +
                         std::to_string(spatial) + " spatial dims");
    if (g.groups < 1) throw ModelError("group of node '" + node.name + "' must be >= 1");
    for (size_t i = 0; i < spatial; ++i) {
        if (g.stride[i] < 1 || g.dilation[i] < 1 || pads[i] < 0 || pads[i + spatial] < 0)
            throw ModelError("bad strides/dilations/pads in node '" + node.name + "'");
    }
    g.padBegin.assign(pads.begin(), pads.begin() + static_cast<long>(spatial));
    g.padEnd.assign(pads.begin() + static_cast<long>(spatial), pads.end());
    if (g.autoPad == ConvGeometry::AutoPad::Valid) {
        std::fill(g.padBegin.begin(), g.padBegin.end(), 0);
        std::fill(g.padEnd.begin(), g.padEnd.end(), 0);
    }
    return g;
}

// SAME_* padding depends on the input size: resolve it per run.
ConvGeometry resolveSamePads(ConvGeometry g, const at::Tensor& x, const std::vector<int64_t>& kernel)
{
    if (g.autoPad != ConvGeometry::AutoPad::SameUpper && g.autoPad != ConvGeometry::AutoPad::SameLower) return g;
    for (size_t i = 0; i < kernel.size(); ++i) {
        const int64_t in = x.size(static_cast<int64_t>(i) + 2);
        const int64_t out = (in + g.stride[i] - 1) / g.stride[i];
        const int64_t total = std::max<int64_t>(0, (out - 1) * g.stride[i] + (kernel[i] - 1) * g.dilation[i] + 1 - in);
        const int64_t small = total / 2;
        g.padBegin[i] = g.autoPad == ConvGeometry::AutoPad::SameUpper ? small : total - small;
        g.padEnd[i] = total - g.padBegin[i];
    }
    return g;
}

// Zero-pads x explicitly (for asymmetric pads), spatial dims in ONNX order.
at::Tensor padExplicit(const at::Tensor& x, const ConvGeometry& g, double value)
{
    std::vector<int64_t> pad;  // constant_pad_nd wants the last dim first
    for (size_t i = g.padBegin.size(); i-- > 0;) {
        pad.push_back(g.padBegin[i]);
        pad.push_back(g.padEnd[i]);
    }
    return at::constant_pad_nd(x, pad, value);
}

std::vector<int64_t> kernelDims(const at::Tensor& w)
{
    return std::vector<int64_t>(w.sizes().begin() + 2, w.sizes().end());
}

bool useChannelsLast(const at::Tensor& x)
{
    return x.dim() == 4 && !x.is_contiguous(at::MemoryFormat::ChannelsLast);
}

// A 2-D convolution with a weight fixed at load.
struct Conv2dPlan {
    // How it runs on CUDA (see the top of the file).
    enum class CudaRoute { Cudnn, Pointwise, Depthwise };

    at::Tensor weight;  // [Cout, Cin/groups, kH, kW]
    at::Tensor bias;    // [Cout] or undefined
    ConvGeometry geometry;
    bool cpuFast = false;  // CPU float32 with oneDNN: call it directly
    CudaRoute cudaRoute = CudaRoute::Cudnn;
    at::Tensor pointwiseWeightT;  // Pointwise: [Cin, Cout], a transposed view of the [Cout, Cin] weight

    // 1x1, stride 1, no padding: y[n, h, w, :] = x[n, h, w, :] W^T + b, one product over the
    // channels-last rows (a view when x is channels-last; otherwise reshape copies it into that layout).
    at::Tensor runPointwise(const at::Tensor& x) const
    {
        const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), cout = pointwiseWeightT.size(1);
        const at::Tensor rows = x.permute({0, 2, 3, 1}).reshape({n * h * w, c});
        const at::Tensor y = bias.defined() ? at::addmm(bias, rows, pointwiseWeightT) : at::mm(rows, pointwiseWeightT);
        return y.view({n, h, w, cout}).permute({0, 3, 1, 2});  // NCHW sizes, channels-last memory
    }

    at::Tensor run(at::Tensor x) const
    {
        if (x.dim() != 4) throw std::runtime_error("expects a 4-D input, got " + std::to_string(x.dim()) + "-D");
        const int64_t cin = weight.size(1) * geometry.groups;
        if (x.size(1) != cin)
            throw std::runtime_error("expects " + std::to_string(cin) + " input channels, got " + std::to_string(x.size(1)));
        ConvGeometry g = resolveSamePads(geometry, x, kernelDims(weight));
        std::vector<int64_t> padding = g.padBegin;
        if (!g.symmetric()) {
            x = padExplicit(x, g, 0.0);
            std::fill(padding.begin(), padding.end(), 0);
        }
        // Three input channels (the image): NCHW is faster for oneDNN there; everything after is
        // channels-last.
        if (x.size(1) > 4 && useChannelsLast(x)) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        if (cpuFast) return at::mkldnn_convolution(x, weight, bias, padding, g.stride, g.dilation, g.groups);
        if (x.is_cuda() && cudaRoute == CudaRoute::Pointwise) return runPointwise(x);
        if (x.is_cuda() && cudaRoute == CudaRoute::Depthwise)
            return at::_conv_depthwise2d(x.contiguous(), weight, kernelDims(weight), bias, g.stride, padding, g.dilation);
        if (x.is_cuda() && useChannelsLast(x)) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        return at::convolution(x, weight, bias, g.stride, padding, g.dilation, false, {0, 0}, g.groups);
    }
};

Conv2dPlan makeConv2dPlan(const BuildContext& ctx, at::Tensor weight, at::Tensor bias, ConvGeometry g)
{
    Conv2dPlan plan;
    plan.weight = weight.contiguous();
    plan.bias = std::move(bias);
    plan.geometry = std::move(g);
    plan.cpuFast = ctx.cpuFast;
    if (!ctx.device.is_cuda()) return plan;
    const ConvGeometry& geo = plan.geometry;
    const int64_t cout = plan.weight.size(0), cinPerGroup = plan.weight.size(1);
    const bool unitStride = geo.stride == std::vector<int64_t>{1, 1};
    const bool unpadded = geo.padBegin == std::vector<int64_t>{0, 0} && geo.padEnd == geo.padBegin &&
                          geo.autoPad != ConvGeometry::AutoPad::SameUpper && geo.autoPad != ConvGeometry::AutoPad::SameLower;
    if (ctx.cudaPointwiseConvs && geo.groups == 1 && kernelDims(plan.weight) == std::vector<int64_t>{1, 1} && unitStride &&
        unpadded) {
        plan.cudaRoute = Conv2dPlan::CudaRoute::Pointwise;
        plan.pointwiseWeightT = plan.weight.view({cout, cinPerGroup}).t();
    } else if (ctx.cudaDepthwiseConvs && geo.groups > 1 && cinPerGroup == 1 && cout == geo.groups) {
        plan.cudaRoute = Conv2dPlan::CudaRoute::Depthwise;  // the weight stays [C, 1, kH, kW], contiguous
    } else {
        plan.weight = plan.weight.contiguous(at::MemoryFormat::ChannelsLast);
    }
    return plan;
}

at::Tensor optionalConstant(const BuildContext& ctx, size_t i)
{
    if (i >= ctx.node.inputs.size() || ctx.node.inputs[i].empty()) return {};
    return ctx.requireConstant(i);
}

}  // namespace

Kernel makeConv(const BuildContext& ctx)
{
    const at::Tensor* w = ctx.constantInput(1);
    const bool hasBias = ctx.node.inputs.size() > 2 && !ctx.node.inputs[2].empty();
    if (w && w->dim() == 4 && (!hasBias || ctx.constantInput(2))) {
        auto kernelShape = ctx.node.attrInts("kernel_shape", kernelDims(*w));
        if (kernelShape != kernelDims(*w))
            throw ModelError("kernel_shape of node '" + ctx.node.name + "' does not match its weight");
        Conv2dPlan plan = makeConv2dPlan(ctx, *w, optionalConstant(ctx, 2), readGeometry(ctx.node, 2));
        return [plan](StepContext& sc) { sc.setOutput(0, plan.run(sc.in(0))); };
    }
    // Weights computed at run time, or 1-D / 3-D convolutions: plain ATen.
    const Node node = ctx.node;
    return [node](StepContext& sc) {
        at::Tensor x = sc.in(0);
        const at::Tensor& w = sc.in(1);
        if (w.dim() < 3 || x.dim() != w.dim())
            throw std::runtime_error("input and weight ranks do not fit a convolution");
        ConvGeometry g = resolveSamePads(readGeometry(node, static_cast<size_t>(w.dim() - 2)), x, kernelDims(w));
        std::vector<int64_t> padding = g.padBegin;
        if (!g.symmetric()) {
            x = padExplicit(x, g, 0.0);
            std::fill(padding.begin(), padding.end(), 0);
        }
        at::Tensor b = sc.has(2) ? sc.in(2) : at::Tensor();
        std::vector<int64_t> outputPadding(padding.size(), 0);
        sc.setOutput(0, at::convolution(x, w, b, g.stride, padding, g.dilation, false, outputPadding, g.groups));
    };
}

Kernel makeConvTranspose(const BuildContext& ctx)
{
    const at::Tensor& w = ctx.requireConstant(1);  // [Cin, Cout/groups, kH, kW]
    if (w.dim() != 4) throw ModelError("ConvTranspose node '" + ctx.node.name + "': only 2-D is supported");
    at::Tensor bias = optionalConstant(ctx, 2);
    ConvGeometry g = readGeometry(ctx.node, 2);
    if (g.autoPad == ConvGeometry::AutoPad::SameUpper || g.autoPad == ConvGeometry::AutoPad::SameLower ||
        ctx.node.attr("output_shape"))
        throw ModelError("ConvTranspose node '" + ctx.node.name + "': auto_pad SAME and output_shape are not supported");
    const auto outputPadding = ctx.node.attrInts("output_padding", {0, 0});
    const int64_t kh = w.size(2), kw = w.size(3), cout = w.size(1) * g.groups;
    const bool shuffle = g.groups == 1 && kh == g.stride[0] && kw == g.stride[1] && g.dilation == std::vector<int64_t>{1, 1} &&
                         g.padBegin == std::vector<int64_t>{0, 0} && g.padEnd == g.padBegin &&
                         outputPadding == std::vector<int64_t>{0, 0};
    if (shuffle) {
        // out[n, o, y*kh+i, x*kw+j] = sum_c x[n, c, y, x] * w[c, o, i, j]: a 1x1 conv to Cout*kh*kw
        // channels ordered (o, i, j), then each pixel's kh x kw block moved into place.
        at::Tensor w1 = w.permute({1, 2, 3, 0}).reshape({cout * kh * kw, w.size(0), 1, 1}).contiguous();
        at::Tensor b1 = bias.defined() ? bias.repeat_interleave(kh * kw) : at::Tensor();
        ConvGeometry g1;
        g1.stride = {1, 1};
        g1.dilation = {1, 1};
        g1.padBegin = g1.padEnd = {0, 0};
        Conv2dPlan plan = makeConv2dPlan(ctx, w1, b1, g1);
        return [plan, cout, kh, kw](StepContext& sc) {
            at::Tensor y = plan.run(sc.in(0));  // [N, Cout*kh*kw, H, W]
            const int64_t n = y.size(0), h = y.size(2), wd = y.size(3);
            at::Tensor out;
            if (y.is_contiguous(at::MemoryFormat::ChannelsLast)) {
                out = at::empty({n, cout, h * kh, wd * kw}, y.options().memory_format(at::MemoryFormat::ChannelsLast));
                auto dst = out.permute({0, 2, 3, 1}).view({n, h, kh, wd, kw, cout});
                dst.copy_(y.permute({0, 2, 3, 1}).view({n, h, wd, cout, kh, kw}).permute({0, 1, 4, 2, 5, 3}));
            } else {
                out = y.view({n, cout, kh, kw, h, wd}).permute({0, 1, 4, 2, 5, 3}).reshape({n, cout, h * kh, wd * kw});
            }
            sc.setOutput(0, std::move(out));
        };
    }
    return [w, bias, g, outputPadding](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        if (x.dim() != 4) throw std::runtime_error("expects a 4-D input");
        // Compute with zero padding, then crop: that also covers asymmetric pads.
        at::Tensor y = at::conv_transpose2d(x, w, bias, g.stride, {0, 0}, outputPadding, g.groups, g.dilation);
        for (int64_t d = 0; d < 2; ++d) {
            const int64_t len = y.size(d + 2) - g.padBegin[d] - g.padEnd[d];
            if (len <= 0) throw std::runtime_error("pads remove the whole output");
            y = y.narrow(d + 2, g.padBegin[d], len);
        }
        sc.setOutput(0, y);
    };
}

Kernel makeBatchNorm(const BuildContext& ctx)
{
    if (ctx.node.attrInt("spatial", 1) != 1)
        throw ModelError("BatchNormalization node '" + ctx.node.name + "': spatial=0 is not supported");
    const double eps = ctx.node.attrFloat("epsilon", 1e-5f);
    return [eps](StepContext& sc) {
        sc.setOutput(0, at::batch_norm(sc.in(0), sc.in(1), sc.in(2), sc.in(3), sc.in(4), false, 0.0, eps, true));
    };
}

Kernel makeGlobalAveragePool(const BuildContext&)
{
    return [](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        if (x.dim() < 3) throw std::runtime_error("expects at least 3 dims");
        if (x.dim() == 4) {  // has a channels-last kernel; mean() over (2, 3) is slower there
            sc.setOutput(0, at::adaptive_avg_pool2d(x, {1, 1}));
            return;
        }
        std::vector<int64_t> dims;
        for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
        sc.setOutput(0, x.mean(dims, true));
    };
}

namespace {
struct PoolParams {
    std::vector<int64_t> kernel;
    ConvGeometry geometry;
    bool ceilMode = false;
    bool countIncludePad = false;
    bool nativePadding = false;  // symmetric pads within ATen's limit (pad <= kernel / 2)
};

PoolParams readPool(const Node& node)
{
    PoolParams p;
    p.kernel = node.attrInts("kernel_shape");
    if (p.kernel.size() != 2)
        throw ModelError(node.opType + " node '" + node.name + "': only 2-D pooling is supported");
    p.geometry = readGeometry(node, 2);
    if (p.geometry.autoPad == ConvGeometry::AutoPad::SameUpper || p.geometry.autoPad == ConvGeometry::AutoPad::SameLower)
        throw ModelError(node.opType + " node '" + node.name + "': auto_pad SAME is not supported");
    p.ceilMode = node.attrInt("ceil_mode", 0) != 0;
    p.countIncludePad = node.attrInt("count_include_pad", 0) != 0;
    p.nativePadding = p.geometry.symmetric() && p.geometry.padBegin[0] * 2 <= p.kernel[0] &&
                      p.geometry.padBegin[1] * 2 <= p.kernel[1];
    if (!p.nativePadding && p.ceilMode)
        throw ModelError(node.opType + " node '" + node.name + "': ceil_mode with asymmetric pads is not supported");
    return p;
}
}  // namespace

Kernel makeAveragePool(const BuildContext& ctx)
{
    const PoolParams p = readPool(ctx.node);
    if (p.geometry.dilation != std::vector<int64_t>{1, 1})
        throw ModelError("AveragePool node '" + ctx.node.name + "': dilations are not supported");
    return [p](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        if (x.dim() != 4) throw std::runtime_error("expects a 4-D input");
        const auto& g = p.geometry;
        if (p.nativePadding) {
            sc.setOutput(0, at::avg_pool2d(x, p.kernel, g.stride, g.padBegin, p.ceilMode, p.countIncludePad));
            return;
        }
        // Asymmetric pads: sum over explicitly zero-padded windows, divided by the window area or by
        // the number of real (unpadded) elements in each window.
        at::Tensor sum = at::avg_pool2d(padExplicit(x, g, 0.0), p.kernel, g.stride, {0, 0}, false, true, 1);
        if (p.countIncludePad) {
            sc.setOutput(0, sum.div_(static_cast<double>(p.kernel[0] * p.kernel[1])));
            return;
        }
        at::Tensor ones = at::ones({1, 1, x.size(2), x.size(3)}, x.options());
        at::Tensor count = at::avg_pool2d(padExplicit(ones, g, 0.0), p.kernel, g.stride, {0, 0}, false, true, 1);
        sc.setOutput(0, sum.div_(count));
    };
}

Kernel makeMaxPool(const BuildContext& ctx)
{
    const PoolParams p = readPool(ctx.node);
    if (ctx.node.attrInt("storage_order", 0) != 0)
        throw ModelError("MaxPool node '" + ctx.node.name + "': storage_order=1 is not supported");
    return [p](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        if (x.dim() != 4) throw std::runtime_error("expects a 4-D input");
        const auto& g = p.geometry;
        if (p.nativePadding) {
            sc.setOutput(0, at::max_pool2d(x, p.kernel, g.stride, g.padBegin, g.dilation, p.ceilMode));
            return;
        }
        const double lowest = -std::numeric_limits<double>::infinity();
        sc.setOutput(0, at::max_pool2d(padExplicit(x, g, lowest), p.kernel, g.stride, {0, 0}, g.dilation, false));
    };
}

}  // namespace lector::model::onnx
