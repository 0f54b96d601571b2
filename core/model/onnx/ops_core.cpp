// Kernel infrastructure: StepContext, the operator table, shared helpers and post-op application.
#include "core/model/onnx/ops.h"

#include <cmath>
#include <stdexcept>

namespace lector::model::onnx {

// --- StepContext ---

const at::Tensor& StepContext::in(size_t i) const
{
    if (!has(i)) throw std::runtime_error("required input " + std::to_string(i) + " is missing");
    return m_values[static_cast<size_t>(m_io.inputs[i])];
}

at::Tensor StepContext::takeExclusive(size_t i)
{
    if (!has(i) || !m_io.lastUse[i]) return {};
    at::Tensor& slot = m_values[static_cast<size_t>(m_io.inputs[i])];
    if (!slot.defined() || !slot.has_storage()) return {};
    // One owner of the TensorImpl (the slot) and one TensorImpl on the storage: no view aliases it.
    if (slot.use_count() != 1 || slot.storage().use_count() != 1) return {};
    return std::move(slot);
}

void StepContext::setOutput(size_t i, at::Tensor t)
{
    if (!wantsOutput(i)) return;
    m_values[static_cast<size_t>(m_io.outputs[i])] = std::move(t);
}

const at::Tensor& BuildContext::requireConstant(size_t i) const
{
    const at::Tensor* t = constantInput(i);
    if (!t)
        throw ModelError("input " + std::to_string(i) + " of node '" + node.name + "' (" + node.opType +
                         ") must be a constant");
    return *t;
}

// --- helpers ---

int64_t normaliseAxis(int64_t axis, int64_t rank, const char* what)
{
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        throw std::runtime_error(std::string(what) + " axis " + std::to_string(axis) +
                                 " is out of range for rank " + std::to_string(rank));
    return a;
}

std::vector<int64_t> toInt64Vector(const at::Tensor& t)
{
    auto c = t.to(at::kCPU, at::kLong).contiguous();
    const int64_t* p = c.data_ptr<int64_t>();
    return std::vector<int64_t>(p, p + c.numel());
}

at::ScalarType castTarget(int64_t onnxType, at::ScalarType floatType)
{
    if (onnxType == 1) return floatType;
    return scalarTypeFromOnnx(static_cast<int32_t>(onnxType));
}

// --- post-ops ---

namespace {
void applyPostOpAten(at::Tensor& t, const PostOp& op)
{
    switch (op.kind) {
    case PostOpKind::Relu: t.relu_(); break;
    case PostOpKind::Clip: t.clamp_(op.a, op.b); break;
    case PostOpKind::HardSigmoid:
        if (std::abs(op.a - 1.0f / 6.0f) < 1e-7f && op.b == 0.5f) {
            at::hardsigmoid_(t);
        } else {
            t.mul_(op.a).add_(op.b).clamp_(0.0, 1.0);
        }
        break;
    case PostOpKind::HardSwish: at::hardswish_(t); break;
    case PostOpKind::Sigmoid: t.sigmoid_(); break;
    case PostOpKind::Silu: at::silu_(t); break;
    case PostOpKind::Affine:
        if (op.a != 1.0f) t.mul_(op.a);
        if (op.b != 0.0f) t.add_(op.b);
        break;
    }
}
}  // namespace

void applyPostOps(const at::Tensor& src, at::Tensor& dst, const std::vector<PostOp>& ops)
{
    if (postOpsFastPathApplies(src, dst, ops)) {
        applyPostOpsCpu(src.data_ptr<float>(), dst.data_ptr<float>(), src.numel(), ops);
        return;
    }
    if (!dst.is_same(src)) dst.copy_(src);
    // float16 activations are computed by ATen in float internally; no special care needed here.
    for (const auto& op : ops) applyPostOpAten(dst, op);
}

// --- the operator table ---

namespace {
constexpr int kAny = 1 << 20;
const OpSpec kOps[] = {
    // opType, inputs min..max, outputs min..max, foldable, maker
    {"Add", 2, 2, 1, 1, true, makeBinary},
    {"Sub", 2, 2, 1, 1, true, makeBinary},
    {"Mul", 2, 2, 1, 1, true, makeBinary},
    {"Div", 2, 2, 1, 1, true, makeBinary},
    {"Pow", 2, 2, 1, 1, true, makePow},
    {"Relu", 1, 1, 1, 1, true, makeUnary},
    {"Sigmoid", 1, 1, 1, 1, true, makeUnary},
    {"HardSigmoid", 1, 1, 1, 1, true, makeUnary},
    {"Sqrt", 1, 1, 1, 1, true, makeUnary},
    {"Clip", 1, 3, 1, 1, true, makeClip},
    {"MatMul", 2, 2, 1, 1, true, makeMatMul},
    {"Softmax", 1, 1, 1, 1, true, makeSoftmax},
    {"ReduceMean", 1, 2, 1, 1, true, makeReduceMean},
    {"Cast", 1, 1, 1, 1, true, makeCast},
    {"Conv", 2, 3, 1, 1, true, makeConv},
    {"ConvTranspose", 2, 3, 1, 1, true, makeConvTranspose},
    {"BatchNormalization", 5, 5, 1, 1, true, makeBatchNorm},
    {"GlobalAveragePool", 1, 1, 1, 1, true, makeGlobalAveragePool},
    {"AveragePool", 1, 1, 1, 1, true, makeAveragePool},
    {"MaxPool", 1, 1, 1, 1, true, makeMaxPool},
    {"Resize", 1, 4, 1, 1, true, makeResize},
    {"Shape", 1, 1, 1, 1, true, makeShape},
    {"Reshape", 2, 2, 1, 1, true, makeReshape},
    {"Slice", 1, 5, 1, 1, true, makeSlice},
    {"Concat", 1, kAny, 1, 1, true, makeConcat},
    {"Transpose", 1, 1, 1, 1, true, makeTranspose},
    {"Squeeze", 1, 2, 1, 1, true, makeSqueeze},
    {"Unsqueeze", 1, 2, 1, 1, true, makeUnsqueeze},
    {"Identity", 1, 1, 1, 1, true, makeIdentity},
    // Fused operators made by the optimizer (optimize.cpp); never read from a file.
    {"lector.Linear", 2, 3, 1, 1, true, makeLinear},
    {"lector.LayerNorm", 3, 3, 1, 1, true, makeLayerNorm},
    {"lector.Eltwise", 1, 1, 1, 1, true, makeEltwise},
};
}  // namespace

const OpSpec* findOp(const std::string& opType)
{
    for (const auto& spec : kOps)
        if (opType == spec.opType) return &spec;
    return nullptr;
}

}  // namespace lector::model::onnx
