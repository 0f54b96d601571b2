// Plain scalar CPU reference of gpu/kernels/greedy_screen.cuh over the same Params struct (docs/style.md
// §6.6): the same screen in loops (the same CTA stretches and thresholds, the CTAs in order), so that it
// also says how many rows a launch recomputes. Its token must equal the argmax of the penalized full
// logits (the kernel tests check both). Any thread; callers must not share output buffers between calls.
#pragma once

#include "gpu/kernels/greedy_screen.cuh"

namespace lector::gpu::ref {

void greedyScreenRef(const GreedyScreenParams& p);

}  // namespace lector::gpu::ref
