// RMSNorm, optionally fused with the residual add that precedes it in every decoder layer
// (vLLM fused_add_rms_norm): residual += input; out = weight * normalize(residual). Also the plain
// RMSNorm of the final norm and the vision merger (residual == nullptr). Engine thread.
//
// Numerics: the sum is rounded to the element type and stored in residual first; the norm is then
// computed in float32 from that stored value and rounded once (HF HunYuanVLRMSNorm rounds twice).
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

struct RmsNormParams {
    DType dtype = DType::F16;      // of out, input, residual and weight
    void* out = nullptr;           // [numTokens, hidden], outStride; may alias input
    const void* input = nullptr;   // [numTokens, hidden], inputStride
    void* residual = nullptr;      // [numTokens, hidden], residualStride; in/out; nullptr = plain RMSNorm
    const void* weight = nullptr;  // [hidden]
    int64_t outStride = 0;         // elements between tokens; hidden is contiguous everywhere
    int64_t inputStride = 0;
    int64_t residualStride = 0;
    int numTokens = 0;
    int hidden = 0;
    float eps = 1e-5f;
};

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
cudaError_t launchRmsNorm(const RmsNormParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
