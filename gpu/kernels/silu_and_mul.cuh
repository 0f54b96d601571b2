// SwiGLU activation of the decoder MLP: out = silu(gate) * up, where the fused gate/up projection
// writes [gate | up] side by side. Computed in float32, rounded once. Engine thread.
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

struct SiluAndMulParams {
    DType dtype = DType::F16;
    void* out = nullptr;          // [numTokens, d], outStride
    const void* input = nullptr;  // [numTokens, 2 * d], inputStride: gate = [:, :d], up = [:, d:]
    int64_t outStride = 0;        // elements
    int64_t inputStride = 0;
    int numTokens = 0;
    int d = 0;
};

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
cudaError_t launchSiluAndMul(const SiluAndMulParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
