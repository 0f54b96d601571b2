// Vision-tower attention: full (non-causal) self-attention inside each image of a batch whose patches
// sit back to back (cuSeqlens); no image attends to another. q, k and v are read straight from the
// tower's fused qkv projection ([rows, 3, heads, headDim], q first) and the result is written as
// [rows, heads, headDim], the layout o_proj takes, so no permute or per-image copy is needed.
// HunyuanOCR's tower: 16 heads of 72, 4096 patches for a 1024x1024 page, 27 layers. Engine thread.
//
// Why our own kernel: libtorch's fused attention runs head dim 72 as if it were 128 (docs/perf.md,
// call 100: 5.6 ms a page at 72, 80, 96 and 128 alike), almost half of it padding; a kernel at its rate
// on head dim 80 would take ~3.4 ms.
//
// One kernel, Hopper only (TMA and wgmma, built for sm_90a): a producer warp group streams K/V tiles
// into shared memory by TMA; consumer warp groups run S = QK^T and O += PV on the tensor cores as
// asynchronous wgmma in FlashAttention-3's order, with the online softmax in registers between them.
// QK^T runs five k-steps of 16 (dims 72..79 are zero), PV runs n = 72 directly. Elsewhere
// visionAttentionSupported() is false and the tower keeps libtorch's SDPA. On the H200 4.9 ms a page
// at 8 pages against SDPA's 5.7-6.1 (docs/perf.md, call 110).
#pragma once

#include "gpu/kernels/types.h"

namespace lector::gpu {

constexpr int kVisionAttentionHeadDim = 72;

struct VisionAttentionParams {
    DType dtype = DType::F16;            // of qkv and out: F16 or BF16 on the GPU; the reference takes F32 too
    const void* qkv = nullptr;           // [numRows, qkvRowStride]: q (numHeads x headDim), then k, then v
    void* out = nullptr;                 // [numRows, outRowStride]: numHeads x headDim
    const int32_t* cuSeqlens = nullptr;  // [numImages + 1]: image i owns rows [cu[i], cu[i+1]); cu[0] = 0
    int64_t qkvRowStride = 0;            // elements, >= 3 * numHeads * headDim
    int64_t outRowStride = 0;            // elements, >= numHeads * headDim
    int numRows = 0;                     // == cuSeqlens[numImages]
    int numImages = 0;
    int maxSeqlen = 0;                   // host-side bound on any image's rows: sizes the grid
    int numHeads = 0;
    int headDim = 0;                     // kVisionAttentionHeadDim
    float scale = 1.0f;                  // softmax scale, 1/sqrt(headDim) for the tower
    // The CTA's shape, 0 .. kVisionAttentionShapes - 1 (consumer warp groups x m64 blocks each, keys a
    // tile, K/V stages, ping-pong, lazy rescale): 0 is the default (2 x 2, 64, 4, yes, yes); 1 the same
    // without the lazy rescale, 2 (3 x 1, 128, 3, no, yes). bench_vision_attention times each; the
    // reference ignores it.
    int shape = 0;
};

constexpr int kVisionAttentionShapes = 3;

#ifdef LECTOR_GPU_HAVE_LAUNCHERS
// Whether `device` runs the kernel: compute capability 9.0, and this build has the sm_90a code.
bool visionAttentionSupported(int device);

// Asynchronous on `stream`. cudaErrorInvalidValue for an unsupported head dim or dtype, unaligned
// strides, or a device visionAttentionSupported() rejects.
cudaError_t launchVisionAttention(const VisionAttentionParams& p, cudaStream_t stream);
#endif

}  // namespace lector::gpu
