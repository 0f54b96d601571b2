// Operator kernels of the ONNX runtime. Each supported operator has an OpSpec with a maker that runs
// once at load (reading attributes and constant inputs, prepacking weights) and returns a Kernel that
// runs once per Graph::run(). Kernels read and write the per-run value table through StepContext,
// which also tells them when an input may be reused in place.
// Called from graph.cpp (plan building at load, execution on the engine thread) and optimize.cpp
// (constant folding at load). Kernels throw (c10::Error / std::runtime_error) on inputs that do not
// fit; the executor adds the node name and operator.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

#include "core/model/onnx/model.h"

namespace lector::model::onnx {

// Slot ids of one step: which values it reads and writes.
struct StepIO {
    std::vector<int> inputs;       // -1 marks an omitted optional input
    std::vector<int> outputs;
    std::vector<uint8_t> lastUse;  // per input: this step is the last reader (never for graph
                                   // inputs, outputs or constants)
};

class StepContext {
public:
    StepContext(std::vector<at::Tensor>& values, const StepIO& io) : m_values(values), m_io(io) {}

    size_t numInputs() const { return m_io.inputs.size(); }
    size_t numOutputs() const { return m_io.outputs.size(); }
    bool has(size_t i) const { return i < m_io.inputs.size() && m_io.inputs[i] >= 0; }
    const at::Tensor& in(size_t i) const;  // throws std::runtime_error when the input is omitted
    // The input's tensor, handed over for reuse as an output buffer: only when this step is its last
    // reader and no other tensor shares its storage (views!). Undefined tensor otherwise.
    at::Tensor takeExclusive(size_t i);
    void setOutput(size_t i, at::Tensor t);
    bool wantsOutput(size_t i) const { return i < m_io.outputs.size() && m_io.outputs[i] >= 0; }

private:
    std::vector<at::Tensor>& m_values;
    const StepIO& m_io;
};

using Kernel = std::function<void(StepContext&)>;

// What a maker knows at load.
struct BuildContext {
    const Node& node;
    int64_t opset = 0;
    at::Device device = at::kCPU;
    at::ScalarType floatType = at::kFloat;  // the graph's float dtype: kFloat, or kHalf on CUDA
    bool cpuFast = false;                   // CPU float32 with oneDNN (mkldnn) available
    bool cudaPointwiseConvs = true;         // LoadOptions::cudaConvRoutes
    bool cudaDepthwiseConvs = true;
    // The constant behind input i (already on `device`, floats in `floatType`), or nullptr.
    std::function<const at::Tensor*(size_t)> constantInput;

    const at::Tensor& requireConstant(size_t i) const;  // ModelError when input i is not a constant
};

struct OpSpec {
    const char* opType;
    int minInputs, maxInputs;
    int minOutputs, maxOutputs;
    bool foldable;  // may run at load when all its inputs are constants
    Kernel (*make)(const BuildContext&);
};

// nullptr for an operator we do not support. Internal fused operators are named "lector.*".
const OpSpec* findOp(const std::string& opType);

// Post-ops (model.h) over `src`, written to `dst` (same sizes; may be the same tensor).
void applyPostOps(const at::Tensor& src, at::Tensor& dst, const std::vector<PostOp>& ops);

// --- helpers shared by the kernel files ---

// Normalises a possibly negative axis for a tensor of `rank` dims; throws std::runtime_error.
int64_t normaliseAxis(int64_t axis, int64_t rank, const char* what);
// Values of a small integer tensor (shapes, axes), read on the CPU.
std::vector<int64_t> toInt64Vector(const at::Tensor& t);
// ONNX Cast 'to' / TensorProto type -> dtype, mapping FLOAT to the graph float dtype.
at::ScalarType castTarget(int64_t onnxType, at::ScalarType floatType);

// Makers, grouped by file (ops_math.cpp, ops_nn.cpp, ops_shape.cpp).
Kernel makeBinary(const BuildContext& ctx);
Kernel makeUnary(const BuildContext& ctx);
Kernel makeClip(const BuildContext& ctx);
Kernel makePow(const BuildContext& ctx);
Kernel makeMatMul(const BuildContext& ctx);
Kernel makeLinear(const BuildContext& ctx);
Kernel makeLayerNorm(const BuildContext& ctx);
Kernel makeSoftmax(const BuildContext& ctx);
Kernel makeReduceMean(const BuildContext& ctx);
Kernel makeCast(const BuildContext& ctx);
Kernel makeEltwise(const BuildContext& ctx);
Kernel makeConv(const BuildContext& ctx);
Kernel makeConvTranspose(const BuildContext& ctx);
Kernel makeBatchNorm(const BuildContext& ctx);
Kernel makeGlobalAveragePool(const BuildContext& ctx);
Kernel makeAveragePool(const BuildContext& ctx);
Kernel makeMaxPool(const BuildContext& ctx);
Kernel makeResize(const BuildContext& ctx);
Kernel makeShape(const BuildContext& ctx);
Kernel makeReshape(const BuildContext& ctx);
Kernel makeSlice(const BuildContext& ctx);
Kernel makeConcat(const BuildContext& ctx);
Kernel makeTranspose(const BuildContext& ctx);
Kernel makeSqueeze(const BuildContext& ctx);
Kernel makeUnsqueeze(const BuildContext& ctx);
Kernel makeIdentity(const BuildContext& ctx);

// CPU float32 fast path (eltwise.cpp): one memory pass for a chain of post-ops.
bool postOpsFastPathApplies(const at::Tensor& src, const at::Tensor& dst, const std::vector<PostOp>& ops);
void applyPostOpsCpu(const float* src, float* dst, int64_t n, const std::vector<PostOp>& ops);

}  // namespace lector::model::onnx
