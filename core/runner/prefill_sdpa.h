// Causal attention of fresh prompts of one length through libtorch's cuDNN attention, the runner's
// route beside its own prefill kernel (gpu::pagedPrefillAttention) for steps that prefill several
// whole prompts of one length at once (a burst of same-size pages).
//
// Why: bench/gpu/probe_prefill_sdpa.py (docs/perf.md, call 207, H100) measured cuDNN's attention with
// grouped query heads 1.6x (one 1076-token prompt) to 2.1x (eight) faster than our kernel on the
// runner's own qkv rows, read in place as strided views. A fresh prompt's K and V are those rows (the
// paged cache holds copies), so the call needs no gather. Prompts with cached context (chunks after the
// first, prefix reuse) keep our kernel, which reads the paged cache.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace lector::runner {

// Whether this libtorch has the call (2.5 or later: grouped query heads) and was built with cuDNN.
bool prefillSdpaAvailable();

// out [count * len, hq, d] (rows of the runner's attention buffer) = causal softmax(q k^T * scale) v of
// `count` prompts of `len` tokens each, whose rows qkv [count * len, (hq + 2 hk) * d] hold q, k and v
// (after QK-norm and RoPE) side by side, prompt after prompt. Float16 or bfloat16 on CUDA. Only cuDNN's
// backend is enabled for the call (the process-wide backend flags are restored after it, also when it
// throws: c10::Error when cuDNN cannot take the inputs).
void prefillSdpa(const at::Tensor& out, const at::Tensor& qkv, std::int64_t count, std::int64_t len, std::int64_t hq,
                 std::int64_t hk, std::int64_t d, double scale);

}  // namespace lector::runner
