// PostOp: an elementwise operation the runtime applies in place to a node's first output right after
// the node ran (activations, scalar affine). The optimizer (optimize.cpp) moves single activations
// and the exported HardSwish / SiLU patterns here so they need no tensor and no memory pass of their
// own. Plain data without torch headers: eltwise_kernel.cpp is built apart, with -O3.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lector::model::onnx {

enum class PostOpKind { Relu, Clip, HardSigmoid, HardSwish, Sigmoid, Silu, Affine };

struct PostOp {
    PostOpKind kind = PostOpKind::Relu;
    float a = 0.0f;  // Clip: min; HardSigmoid: alpha; Affine: scale
    float b = 0.0f;  // Clip: max; HardSigmoid: beta;  Affine: shift   (y = x * a + b)
};

// Runs ops[0..numOps) over n floats, src -> dst (dst may equal src). Sigmoid and Silu are not
// handled here (the caller sends chains with them to ATen).
void runPostOpChain(const float* src, float* dst, int64_t n, const PostOp* ops, size_t numOps);

}  // namespace lector::model::onnx
