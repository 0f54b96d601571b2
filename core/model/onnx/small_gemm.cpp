// Row-at-a-time products for small batched matrices (see small_gemm.h). Each output row is built
// from the rows of B scaled by one element of A: the inner loop runs over N contiguous floats and
// vectorises; the row of C (N floats) stays in L1.
#include "core/model/onnx/small_gemm.h"

namespace lector::model::onnx {

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void smallGemmRows(const float* a, const float* b, float* c, int64_t rowBegin, int64_t rowEnd, int64_t rowsPerBatch,
                   int64_t k, int64_t n)
{
    for (int64_t r = rowBegin; r < rowEnd; ++r) {
        const float* aRow = a + r * k;
        const float* bMat = b + (r / rowsPerBatch) * k * n;
        float* __restrict cRow = c + r * n;
        for (int64_t j = 0; j < n; ++j) cRow[j] = 0.0f;
        for (int64_t i = 0; i < k; ++i) {
            const float s = aRow[i];
            const float* __restrict bRow = bMat + i * n;
            for (int64_t j = 0; j < n; ++j) cRow[j] += s * bRow[j];
        }
    }
}

}  // namespace lector::model::onnx
