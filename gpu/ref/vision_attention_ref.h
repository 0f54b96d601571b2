// Plain scalar CPU reference of gpu/kernels/vision_attention.cuh over the same Params struct (docs/style.md
// §6.6): full softmax attention inside each image, float64 sums, results rounded once into the Params
// dtype; no torch, no CUDA. Any head dim (the kernel takes 72 only). cuSeqlens is a host pointer here.
// Any thread; callers must not share output buffers between concurrent calls.
#pragma once

#include "gpu/kernels/vision_attention.cuh"

namespace lector::gpu::ref {

void visionAttentionRef(const VisionAttentionParams& p);

}  // namespace lector::gpu::ref
