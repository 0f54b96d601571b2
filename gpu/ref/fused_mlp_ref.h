// Plain CPU reference of gpu/kernels/fused_mlp.cuh over the same Params struct (docs/style.md §6.6): the
// kernel chain it replaces, as calls of the other references (rmsNormRef's fused add, skinnyGemmRef for
// gate/up and down, siluAndMulRef) on scratch buffers. Host pointers; the workspace is not used. Any
// thread.
#pragma once

#include "gpu/kernels/fused_mlp.cuh"

namespace lector::gpu::ref {

void fusedMlpRef(const FusedMlpParams& p);

}  // namespace lector::gpu::ref
