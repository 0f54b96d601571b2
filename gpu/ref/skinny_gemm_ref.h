// Plain scalar CPU reference of gpu/kernels/skinny_gemm.cuh over the same Params struct (docs/style.md
// §6.6): float64 sums, rounded once into the Params dtype; no torch, no CUDA. The kernel tests compare
// against it, and gpu/ops.cpp runs it for CPU tensors. Any thread.
#pragma once

#include "gpu/kernels/skinny_gemm.cuh"

namespace lector::gpu::ref {

void skinnyGemmRef(const SkinnyGemmParams& p);

}  // namespace lector::gpu::ref
