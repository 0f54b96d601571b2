// Elementwise, matrix and reduction kernels: Add/Sub/Mul/Div, Relu/Sigmoid/HardSigmoid/Sqrt, Clip,
// Pow, MatMul, Softmax, ReduceMean, Cast, and the fused lector.Linear / lector.LayerNorm /
// lector.Eltwise. float16 graphs compute Softmax, ReduceMean and Pow in float32 (their sums and
// squares overflow or lose too much in float16) and cast the result back. On the CPU, matrix
// products avoid the system BLAS (Debian's is the reference one): small batched MatMuls run our
// loops (small_gemm.h), lector.Linear runs as a oneDNN 1x1 convolution.
#include "core/model/onnx/ops.h"

#include <ATen/Parallel.h>

#include <limits>
#include <optional>

#include "core/model/onnx/small_gemm.h"

namespace lector::model::onnx {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

enum class BinOp { Add, Sub, Mul, Div };

at::Tensor& binaryOut(BinOp op, at::Tensor& out, const at::Tensor& a, const at::Tensor& b)
{
    switch (op) {
    case BinOp::Add: return at::add_out(out, a, b);
    case BinOp::Sub: return at::sub_out(out, a, b);
    case BinOp::Mul: return at::mul_out(out, a, b);
    case BinOp::Div:
        if (!at::isFloatingType(a.scalar_type()) && !at::isFloatingType(b.scalar_type()))
            return at::div_out(out, a, b, "trunc");  // ONNX integer Div truncates, like C++
        return at::div_out(out, a, b);
    }
    return out;
}

at::Tensor binary(BinOp op, const at::Tensor& a, const at::Tensor& b)
{
    switch (op) {
    case BinOp::Add: return at::add(a, b);
    case BinOp::Sub: return at::sub(a, b);
    case BinOp::Mul: return at::mul(a, b);
    case BinOp::Div:
        if (!at::isFloatingType(a.scalar_type()) && !at::isFloatingType(b.scalar_type()))
            return at::div(a, b, "trunc");
        return at::div(a, b);
    }
    return {};
}

// x op s with a scalar right operand, in place when x may be reused.
at::Tensor binaryScalar(BinOp op, at::Tensor x, bool exclusive, const at::Scalar& s)
{
    const bool inPlace = exclusive && at::result_type(x, s) == x.scalar_type() &&
                         (op != BinOp::Div || at::isFloatingType(x.scalar_type()));
    switch (op) {
    case BinOp::Add: return inPlace ? x.add_(s) : at::add(x, s);
    case BinOp::Sub: return inPlace ? x.sub_(s) : at::sub(x, s);
    case BinOp::Mul: return inPlace ? x.mul_(s) : at::mul(x, s);
    case BinOp::Div:
        if (!at::isFloatingType(x.scalar_type()) && !s.isFloatingPoint()) return at::div(x, s, "trunc");
        return inPlace ? x.div_(s) : at::div(x, s);
    }
    return {};
}

struct ScalarConst {
    at::Scalar value;
    int64_t rank = 0;  // the constant's rank: the scalar path applies when the other side has at least it
};

std::optional<ScalarConst> scalarConstant(const BuildContext& ctx, size_t i)
{
    const at::Tensor* c = ctx.constantInput(i);
    if (!c || c->numel() != 1) return std::nullopt;
    return ScalarConst{c->to(at::kCPU).item(), c->dim()};
}

// Takes input i for reuse, or returns a shared handle with exclusive = false.
at::Tensor takeOrRead(StepContext& sc, size_t i, bool& exclusive)
{
    at::Tensor t = sc.takeExclusive(i);
    exclusive = t.defined();
    return exclusive ? t : sc.in(i);
}

}  // namespace

Kernel makeBinary(const BuildContext& ctx)
{
    const std::string& type = ctx.node.opType;
    const BinOp op = type == "Add" ? BinOp::Add : type == "Sub" ? BinOp::Sub : type == "Mul" ? BinOp::Mul : BinOp::Div;
    const bool commutative = op == BinOp::Add || op == BinOp::Mul;
    auto right = scalarConstant(ctx, 1);
    auto left = commutative ? scalarConstant(ctx, 0) : std::nullopt;
    return [op, commutative, right, left](StepContext& sc) {
        // x op scalar: no broadcasting tensor, in place when allowed.
        for (int side = 1; side >= 0; --side) {
            const auto& sc0 = side == 1 ? right : left;
            if (!sc0) continue;
            const size_t xi = side == 1 ? 0 : 1;
            if (sc.in(xi).dim() < sc0->rank) continue;
            bool excl = false;
            at::Tensor x = takeOrRead(sc, xi, excl);
            sc.setOutput(0, binaryScalar(op, std::move(x), excl, sc0->value));
            return;
        }
        bool exclA = false, exclB = false;
        at::Tensor a = takeOrRead(sc, 0, exclA);
        at::Tensor b = takeOrRead(sc, 1, exclB);
        const auto dtype = at::result_type(a, b);
        const auto shape = at::infer_size(a.sizes(), b.sizes());
        auto fits = [&](const at::Tensor& t) {
            return t.sizes().equals(shape) && t.scalar_type() == dtype && t.is_non_overlapping_and_dense();
        };
        if (exclA && fits(a)) {
            binaryOut(op, a, a, b);
            sc.setOutput(0, std::move(a));
        } else if (exclB && fits(b) && (commutative || a.device() == b.device())) {
            binaryOut(op, b, a, b);
            sc.setOutput(0, std::move(b));
        } else {
            sc.setOutput(0, binary(op, a, b));
        }
    };
}

namespace {
// Runs `ops` on input 0 into a reused or fresh buffer.
void runPostOpKernel(StepContext& sc, const std::vector<PostOp>& ops)
{
    bool excl = false;
    at::Tensor x = takeOrRead(sc, 0, excl);
    if (!at::isFloatingType(x.scalar_type()))
        throw std::runtime_error("expects a float tensor, got " + std::string(c10::toString(x.scalar_type())));
    at::Tensor out = excl ? x : at::empty_like(x);
    applyPostOps(x, out, ops);
    sc.setOutput(0, std::move(out));
}
}  // namespace

Kernel makeUnary(const BuildContext& ctx)
{
    const std::string& type = ctx.node.opType;
    if (type == "Sqrt") {
        return [](StepContext& sc) {
            bool excl = false;
            at::Tensor x = takeOrRead(sc, 0, excl);
            sc.setOutput(0, excl && at::isFloatingType(x.scalar_type()) ? x.sqrt_() : at::sqrt(x));
        };
    }
    PostOp op;
    if (type == "Relu") {
        op.kind = PostOpKind::Relu;
    } else if (type == "Sigmoid") {
        op.kind = PostOpKind::Sigmoid;
    } else {  // HardSigmoid
        op.kind = PostOpKind::HardSigmoid;
        op.a = ctx.node.attrFloat("alpha", 0.2f);
        op.b = ctx.node.attrFloat("beta", 0.5f);
    }
    if (type == "Relu") {
        // Relu also applies to integer tensors.
        return [op](StepContext& sc) {
            if (!at::isFloatingType(sc.in(0).scalar_type())) {
                sc.setOutput(0, at::relu(sc.in(0)));
                return;
            }
            runPostOpKernel(sc, {op});
        };
    }
    return [op](StepContext& sc) { runPostOpKernel(sc, {op}); };
}

Kernel makeEltwise(const BuildContext& ctx)
{
    return [ops = ctx.node.postOps](StepContext& sc) { runPostOpKernel(sc, ops); };
}

Kernel makeClip(const BuildContext& ctx)
{
    std::optional<float> lo, hi;
    bool dynamic = false;
    if (ctx.opset < 11) {
        lo = ctx.node.attrFloat("min", -kInf);
        hi = ctx.node.attrFloat("max", kInf);
    } else {
        for (size_t i = 1; i <= 2; ++i) {
            if (i >= ctx.node.inputs.size() || ctx.node.inputs[i].empty()) {
                (i == 1 ? lo : hi) = i == 1 ? -kInf : kInf;
            } else if (const at::Tensor* c = ctx.constantInput(i)) {
                if (c->numel() != 1) throw ModelError("Clip bounds of node '" + ctx.node.name + "' must be scalars");
                (i == 1 ? lo : hi) = c->to(at::kCPU, at::kFloat).item<float>();
            } else {
                dynamic = true;
            }
        }
    }
    return [lo, hi, dynamic](StepContext& sc) {
        float l = lo.value_or(-kInf), h = hi.value_or(kInf);
        if (dynamic) {
            if (!lo && sc.has(1)) l = sc.in(1).to(at::kCPU, at::kFloat).item<float>();
            if (!hi && sc.has(2)) h = sc.in(2).to(at::kCPU, at::kFloat).item<float>();
        }
        const at::Tensor& x = sc.in(0);
        if (!at::isFloatingType(x.scalar_type())) {
            const bool lowInf = std::isinf(l), highInf = std::isinf(h);
            const c10::optional<at::Scalar> low = lowInf ? c10::optional<at::Scalar>() : at::Scalar(static_cast<int64_t>(l));
            const c10::optional<at::Scalar> high = highInf ? c10::optional<at::Scalar>() : at::Scalar(static_cast<int64_t>(h));
            sc.setOutput(0, at::clamp(x, low, high));
            return;
        }
        runPostOpKernel(sc, {PostOp{PostOpKind::Clip, l, h}});
    };
}

Kernel makePow(const BuildContext& ctx)
{
    std::optional<double> exponent;
    if (const at::Tensor* c = ctx.constantInput(1); c && c->numel() == 1)
        exponent = c->to(at::kCPU, at::kDouble).item<double>();
    return [exponent](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        const bool half = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
        const at::Tensor xf = half ? x.to(at::kFloat) : x;
        at::Tensor y;
        if (exponent && *exponent == 2.0)
            y = at::square(xf);
        else if (exponent && *exponent == 0.5)
            y = at::sqrt(xf);
        else if (exponent && at::isFloatingType(x.scalar_type()))
            y = at::pow(xf, *exponent);
        else
            y = at::pow(xf, sc.in(1).to(xf.device()));
        sc.setOutput(0, half ? y.to(x.scalar_type()) : y);
    };
}

namespace {
// a [..., M, K] @ b [..., K, N] with equal batch dims, CPU float32, small matrices: our loops.
bool smallGemmApplies(const at::Tensor& a, const at::Tensor& b)
{
    if (!a.device().is_cpu() || a.scalar_type() != at::kFloat || b.scalar_type() != at::kFloat || !b.device().is_cpu())
        return false;
    if (a.dim() < 3 || a.dim() != b.dim() || a.size(-1) != b.size(-2)) return false;
    for (int64_t d = 0; d < a.dim() - 2; ++d)
        if (a.size(d) != b.size(d)) return false;
    const int64_t flopsPerMatrix = a.size(-2) * a.size(-1) * b.size(-1);
    return flopsPerMatrix <= (int64_t{1} << 21);
}

at::Tensor smallGemm(const at::Tensor& a, const at::Tensor& b)
{
    const auto ac = a.contiguous(), bc = b.contiguous();
    const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
    auto shape = a.sizes().vec();
    shape.back() = n;
    at::Tensor c = at::empty(shape, a.options());
    const int64_t rows = ac.numel() / std::max<int64_t>(k, 1);
    if (k == 0) return c.zero_();
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* pc = c.data_ptr<float>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, k * n));
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) { smallGemmRows(pa, pb, pc, begin, end, m, k, n); });
    return c;
}
}  // namespace

Kernel makeMatMul(const BuildContext& ctx)
{
    return [](StepContext& sc) {
        const at::Tensor &a = sc.in(0), &b = sc.in(1);
        sc.setOutput(0, smallGemmApplies(a, b) ? smallGemm(a, b) : at::matmul(a, b));
    };
}

// lector.Linear(x [..., K], weight [N, K], bias [N]?) = x @ weight^T + bias. On CPU float32 the
// product runs as a 1x1 oneDNN convolution over a channels-last view of x: ATen's matmul goes
// through the system BLAS, and Debian's is the reference one (16x slower for the rec classifier).
Kernel makeLinear(const BuildContext& ctx)
{
    at::Tensor weight = ctx.requireConstant(1);
    at::Tensor bias = ctx.node.inputs.size() > 2 && !ctx.node.inputs[2].empty() ? ctx.requireConstant(2) : at::Tensor();
    if (weight.dim() != 2) throw ModelError("lector.Linear weight must be 2-D");
    const int64_t numOut = weight.size(0), numIn = weight.size(1);
    if (ctx.cpuFast) {
        at::Tensor w4 = weight.view({numOut, numIn, 1, 1}).contiguous();  // [N, K, 1, 1]
        return [w4, bias, numOut, numIn](StepContext& sc) {
            const at::Tensor& x = sc.in(0);
            if (x.dim() < 1 || x.size(-1) != numIn)
                throw std::runtime_error("last dimension must be " + std::to_string(numIn));
            const int64_t rows = x.numel() / numIn;
            auto x4 = x.reshape({1, rows, 1, numIn}).permute({0, 3, 1, 2});  // channels-last [1,K,rows,1]
            auto y4 = at::mkldnn_convolution(x4, w4, bias, {0, 0}, {1, 1}, {1, 1}, 1);  // [1,N,rows,1]
            auto outShape = x.sizes().vec();
            outShape.back() = numOut;
            sc.setOutput(0, y4.permute({0, 2, 3, 1}).reshape(outShape));
        };
    }
    return [weight, bias](StepContext& sc) { sc.setOutput(0, at::linear(sc.in(0), weight, bias)); };
}

Kernel makeLayerNorm(const BuildContext& ctx)
{
    at::Tensor gamma = ctx.requireConstant(1), beta = ctx.requireConstant(2);
    const double eps = ctx.node.attrFloat("epsilon", 1e-5f);
    return [gamma, beta, eps](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        sc.setOutput(0, at::layer_norm(x, {gamma.numel()}, gamma, beta, eps, false));
    };
}

Kernel makeSoftmax(const BuildContext& ctx)
{
    const bool coerce2d = ctx.opset < 13;
    const int64_t axisAttr = ctx.node.attrInt("axis", coerce2d ? 1 : -1);
    return [coerce2d, axisAttr](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        const bool half = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
        const int64_t rank = std::max<int64_t>(x.dim(), 1);
        const int64_t axis = normaliseAxis(axisAttr, rank, "Softmax");
        const at::ScalarType accType = half ? at::kFloat : x.scalar_type();
        at::Tensor y;
        if (!coerce2d || axis == rank - 1) {
            y = at::softmax(x, axis, accType);
        } else {
            // Opset < 13: the input is seen as 2-D [prod(dims < axis), prod(dims >= axis)].
            int64_t rows = 1;
            for (int64_t d = 0; d < axis; ++d) rows *= x.size(d);
            y = at::softmax(x.reshape({rows, -1}), 1, accType).view(x.sizes());
        }
        sc.setOutput(0, half ? y.to(x.scalar_type()) : y);
    };
}

Kernel makeReduceMean(const BuildContext& ctx)
{
    const bool keepDims = ctx.node.attrInt("keepdims", 1) != 0;
    std::optional<std::vector<int64_t>> axes;
    if (ctx.node.attr("axes")) axes = ctx.node.attrInts("axes");
    const bool noopWithEmptyAxes = ctx.node.attrInt("noop_with_empty_axes", 0) != 0;
    return [keepDims, axes, noopWithEmptyAxes](StepContext& sc) {
        const at::Tensor& x = sc.in(0);
        std::vector<int64_t> dims = axes.value_or(std::vector<int64_t>{});
        if (!axes && sc.has(1)) dims = toInt64Vector(sc.in(1));
        if (dims.empty() && noopWithEmptyAxes) {
            sc.setOutput(0, x);
            return;
        }
        if (dims.empty())
            for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
        for (auto& d : dims) d = normaliseAxis(d, x.dim(), "ReduceMean");
        const bool half = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
        const c10::optional<at::ScalarType> accType = half ? c10::optional<at::ScalarType>(at::kFloat) : c10::nullopt;
        at::Tensor y = at::mean(x, dims, keepDims, accType);
        sc.setOutput(0, half ? y.to(x.scalar_type()) : y);
    };
}

Kernel makeCast(const BuildContext& ctx)
{
    const at::ScalarType target = castTarget(ctx.node.attrInt("to", 0), ctx.floatType);
    return [target](StepContext& sc) { sc.setOutput(0, sc.in(0).to(target)); };
}

}  // namespace lector::model::onnx
