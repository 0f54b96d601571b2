// CPU float32 post-op chains in one memory pass: the tensor is cut into cache-sized blocks and every
// op of the chain runs over a block before the next block is touched, so a conv's "hardswish then
// x*a+b" costs one read and one write of the activation instead of three of each. Chains with
// Sigmoid / SiLU go to ATen instead: its vectorised exp beats a scalar one.
#include <ATen/Parallel.h>

#include <algorithm>

#include "core/model/onnx/ops.h"

namespace lector::model::onnx {

namespace {
constexpr int64_t kBlock = 2048;  // floats: 8 KiB, stays in L1 across the chain
}  // namespace

bool postOpsFastPathApplies(const at::Tensor& src, const at::Tensor& dst, const std::vector<PostOp>& ops)
{
    if (ops.empty() || !src.device().is_cpu() || src.scalar_type() != at::kFloat || dst.scalar_type() != at::kFloat)
        return false;
    if (!src.sizes().equals(dst.sizes()) || !src.strides().equals(dst.strides()) || !src.is_non_overlapping_and_dense())
        return false;
    return std::none_of(ops.begin(), ops.end(), [](const PostOp& op) {
        return op.kind == PostOpKind::Sigmoid || op.kind == PostOpKind::Silu;
    });
}

void applyPostOpsCpu(const float* src, float* dst, int64_t n, const std::vector<PostOp>& ops)
{
    // Dense tensors with equal strides: element i of one is element i of the other in memory, so the
    // chain can run over the raw storage span whatever the layout.
    at::parallel_for(0, (n + kBlock - 1) / kBlock, 16, [&](int64_t first, int64_t last) {
        for (int64_t blk = first; blk < last; ++blk) {
            const int64_t begin = blk * kBlock, len = std::min(kBlock, n - begin);
            runPostOpChain(src + begin, dst + begin, len, ops.data(), ops.size());
        }
    });
}

}  // namespace lector::model::onnx
