// Load-time graph rewriting for onnx::Graph, on the CPU in float32 before weights move to the load
// device and dtype. Central idea: every rewrite is an exact algebraic identity (up to float rounding)
// applied only where the intermediate value has a single reader and is not a graph output, so the
// graph computes the same function with fewer tensors and fewer memory passes:
//   - Constant nodes become constants; nodes whose inputs are all constants are evaluated once;
//   - BatchNormalization and per-channel Mul/Add/Sub/Div after Conv/ConvTranspose fold into weights;
//   - MatMul by a constant matrix (+ bias Add) becomes lector.Linear;
//   - the exported HardSwish (x * clip(x + 3, 0, 6) / 6), SiLU (x * sigmoid(x)) and LayerNorm
//     (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add) subgraphs become one op each;
//   - x + x * s becomes x * (s + 1) (squeeze-and-excitation residuals);
//   - activations and scalar affine ops become post-ops of the node that produces their input.
// Called by Graph::load() / Graph::fromModel() only.
#pragma once

#include "core/model/onnx/model.h"

namespace lector::model::onnx {

// Checks operators, arity and that every input is defined before use. Throws ModelError naming the
// node ("unsupported operator X in node Y", ...).
void validateModel(const ModelDesc& model);

// Moves Constant nodes into model.constants.
void extractConstants(ModelDesc& model);

// Evaluates nodes whose inputs are all constants (Cast of constants, shape arithmetic on constants).
void foldConstants(ModelDesc& model);

// All fusions listed above, then removal of dead nodes and unused constants.
void fuseGraph(ModelDesc& model);

}  // namespace lector::model::onnx
