// Batched small matrix products on the CPU in float32, for MatMul between activations (the SVTR
// attention in the rec graph: [N, heads, T, 15] x [N, heads, 15, T]). ATen sends these to the system
// BLAS one matrix at a time, and Debian's BLAS is the reference one: 6x slower than these loops.
// No torch headers: small_gemm.cpp is built with -O3 and an AVX2 clone. Called by ops_math.cpp.
#pragma once

#include <cstdint>

namespace lector::model::onnx {

// C[r, :] = A[r, :] @ B[r / rowsPerBatch] for rows r in [rowBegin, rowEnd). All row-major and
// contiguous: A [batch * rowsPerBatch, K], B [batch, K, N], C [batch * rowsPerBatch, N].
void smallGemmRows(const float* a, const float* b, float* c, int64_t rowBegin, int64_t rowEnd, int64_t rowsPerBatch,
                   int64_t k, int64_t n);

}  // namespace lector::model::onnx
