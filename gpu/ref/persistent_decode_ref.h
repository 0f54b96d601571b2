// Plain CPU reference of gpu/kernels/persistent_decode.cuh over the same Params struct (docs/style.md
// §6.6): the kernel chain the persistent kernel replaces, written as calls of the other references
// (rmsNormRef, skinnyGemmRef, qkNormRopeRef with its K/V write, pagedDecodeAttentionRef, siluAndMulRef)
// on scratch buffers — what ModelRunner computes for a decode step of one sequence. Any dtype,
// float32 included. Every pointer is a host pointer (layers is a host table of addresses); workspace,
// counters and numCtas are not used. The new token's slot is expected to be where the block table puts
// token contextLen - 1 (the attention reads the new key and value back from the cache).
// Any thread; callers must not share outputs or caches between concurrent calls.
#pragma once

#include "gpu/kernels/persistent_decode.cuh"

namespace lector::gpu::ref {

void persistentDecodeRef(const PersistentDecodeParams& p);

}  // namespace lector::gpu::ref
