// Plain scalar CPU reference of gpu/kernels/patchify.cuh over the same Params struct (docs/style.md
// §6.6): the float32 operations of the kernel, one element at a time, rounded once into the dtype.
// It defines what the kernel must compute: the kernel test compares against it, and gpu/ops.cpp runs
// it for CPU tensors. Any thread.
#pragma once

#include "gpu/kernels/patchify.cuh"

namespace lector::gpu::ref {

void patchifyRef(const PatchifyParams& p);

}  // namespace lector::gpu::ref
