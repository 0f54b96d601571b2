// Plain scalar CPU reference of gpu/kernels/paged_decode_attention.cuh over the same Params struct (docs/style.md
// §6.6). Loops only, float64 sums, results rounded once into the Params dtype; no torch, no CUDA.
// It defines what the kernel must compute: the kernel tests compare against it, and gpu/ops.cpp runs
// it for CPU tensors. Any thread; callers must not share output buffers between concurrent calls.
#pragma once

#include "gpu/kernels/paged_decode_attention.cuh"

namespace lector::gpu::ref {

// One exact softmax over the whole context: partitionSize and workspace are ignored.
void pagedDecodeAttentionRef(const PagedDecodeAttentionParams& p);

}  // namespace lector::gpu::ref
