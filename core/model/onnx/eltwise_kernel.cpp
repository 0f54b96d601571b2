// The post-op chain loops (post_op.h). Built with -O3 and without the ATen precompiled header (see
// CMakeLists.txt), with an AVX2 clone chosen at run time, so the loops vectorise; they are
// memory-bound, and one pass over a cache-sized block per op keeps the data in L1.
#include "core/model/onnx/post_op.h"

namespace lector::model::onnx {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define LECTOR_ELTWISE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LECTOR_ELTWISE_CLONES
#endif

LECTOR_ELTWISE_CLONES
void runPostOpChain(const float* src, float* dst, int64_t n, const PostOp* ops, size_t numOps)
{
    for (size_t k = 0; k < numOps; ++k) {
        const float* in = k == 0 ? src : dst;
        const float a = ops[k].a, b = ops[k].b;
        switch (ops[k].kind) {
        case PostOpKind::Relu:
            for (int64_t i = 0; i < n; ++i) dst[i] = in[i] > 0.0f ? in[i] : 0.0f;
            break;
        case PostOpKind::Clip:
            for (int64_t i = 0; i < n; ++i) {
                const float v = in[i] < a ? a : in[i];
                dst[i] = v > b ? b : v;
            }
            break;
        case PostOpKind::HardSigmoid:
            for (int64_t i = 0; i < n; ++i) {
                float v = in[i] * a + b;
                v = v < 0.0f ? 0.0f : v;
                dst[i] = v > 1.0f ? 1.0f : v;
            }
            break;
        case PostOpKind::HardSwish:
            for (int64_t i = 0; i < n; ++i) {
                float v = in[i] + 3.0f;
                v = v < 0.0f ? 0.0f : v;
                v = v > 6.0f ? 6.0f : v;
                dst[i] = in[i] * v / 6.0f;
            }
            break;
        case PostOpKind::Affine:
            for (int64_t i = 0; i < n; ++i) dst[i] = in[i] * a + b;
            break;
        case PostOpKind::Sigmoid:
        case PostOpKind::Silu:
            break;  // the caller sends these chains to ATen
        }
    }
}

}  // namespace lector::model::onnx
