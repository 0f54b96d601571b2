// VisionEncoder: HunyuanOCR's vision side (spec §3): patch embedding, the learned position table
// interpolated to the image grid, N pre-norm ViT blocks with full attention inside each image, then the
// perceive merger (perceive.h). Several images go through the blocks together (their patches back to
// back; attention stays per image). Output rows replace the image placeholder
// tokens of the prompt in order (begin row, grid rows each ended by a newline row, end row).
// Built once at model load; encode() runs on the engine thread (tensors live on the model's device).
// Reference path: CPU float32; other dtypes/devices work through the same ATen ops.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/common/result.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/perceive.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/weights.h"

namespace lector::model::hunyuan {

// The 1.0 position-embedding resampling: F.interpolate(table, scale_factor=((gh+0.1)/G, (gw+0.1)/G),
// mode="bilinear", align_corners=False) with PyTorch's source-coordinate maths for a given scale
// (src = (dst + 0.5) / scale - 0.5, clamped at 0; float32 like PyTorch 2.x's CPU kernel).
// plusTenth=false gives 1.5's F.interpolate(table, size=(gh, gw)) instead (ratio G / grid).
// table: [G, G, C] (row-major grid); returns [gridH * gridW, C].
at::Tensor interpolatePositionTable(const at::Tensor& table, int gridH, int gridW, bool plusTenth = true);

class VisionEncoder {
public:
    // Reads every vit.* tensor (spec §10) converted to dtype on device.
    // Errors: "bad_model" naming a missing or mis-shaped tensor.
    static Result<VisionEncoder> load(const WeightStore& weights, const HunyuanConfig& config,
                                      at::ScalarType dtype = at::kFloat, at::Device device = at::kCPU);

    VisionEncoder() = default;

    // The whole vision side: [T_img, outHidden] with T_img = image.numImageTokens(merge), on the
    // model's device and dtype. Throws std::invalid_argument when the image does not fit the config.
    at::Tensor encode(const PreprocessedImage& image) const;
    // Several images at once, one output per image as encode() gives it. The token-wise work (norms,
    // matmuls, GELU) runs once over all patches; attention stays inside each image.
    std::vector<at::Tensor> encodeBatch(const std::vector<const PreprocessedImage*>& images) const;
    // What preprocessImage() should leave for this encoder (its output option): on CUDA the bytes alone
    // (normalised and patchified on the device; the model's dtype where this build has no CUDA kernels),
    // elsewhere float32 pixel values. Thread-safe.
    PixelOutput pixelOutput() const;
    // The image's pixel values [N, 3*p*p]: its pixelValues, or its bytes normalised and patchified on the
    // model's device in the model's dtype (gpu::patchify). Throws std::invalid_argument when it has neither
    // or they do not match its grid.
    at::Tensor patchPixels(const PreprocessedImage& image) const;

    // --- stages (for tests and benchmarks) ---
    // pixelValues [N, 3*p*p] (any device/dtype) -> patch embedding + position embedding [N, hidden].
    at::Tensor embed(const at::Tensor& pixelValues, int gridH, int gridW) const;
    // The ViT blocks: [N, hidden] -> [N, hidden]; with lengths, x holds several images' patches back
    // to back (lengths sum to N) and attention stays inside each.
    at::Tensor runBlocks(at::Tensor x) const;
    at::Tensor runBlocks(at::Tensor x, const std::vector<int64_t>& lengths) const;
    // The merger: [N, hidden] -> [T_img, outHidden].
    at::Tensor merge(const at::Tensor& x, int gridH, int gridW) const { return m_merger.forward(x, gridH, gridW); }

    const VisionConfig& config() const { return m_config; }
    at::ScalarType dtype() const { return m_dtype; }
    at::Device device() const { return m_device; }
    // Query rows per attention chunk: bounds the [heads, rows, N] score matrix to about this many
    // elements (default 32M, 128 MB in float32).
    void setAttentionScoreBudget(int64_t elements) { m_scoreBudget = elements; }
    // On a Hopper GPU the blocks' attention runs gpu::visionAttention (all images in one launch, head dim
    // 72 without padding; 4.9-5.1 ms a page on the H200 against 6.3-7.2 for libtorch's SDPA as the tower
    // ran it, docs/perf.md call 110). Off here or with LECTOR_VISION_ATTENTION=sdpa in the environment at
    // load, the tower takes libtorch's fused attention (as on every other GPU).
    void setOwnAttentionKernel(bool on) { m_ownAttention = on; }

private:
    struct Block {
        at::Tensor ln1W, ln1B, ln2W, ln2B;  // [hidden]
        at::Tensor qkvW;                    // [3*hidden, hidden]: q, k, v stacked
        at::Tensor qkvB;                    // [3*hidden]
        at::Tensor oW;                      // [hidden, hidden]
        at::Tensor oB;                      // [hidden]
        at::Tensor fc1W;                    // [intermediate, hidden]
        at::Tensor fc1B;                    // [intermediate]
        at::Tensor fc2W;                    // [hidden, intermediate]
        at::Tensor fc2B;                    // [hidden]
    };
    // The images of one runBlocks() call: rows of each, and for gpu::visionAttention their row offsets on
    // the device (undefined where libtorch's attention runs).
    struct ImageRows {
        const std::vector<int64_t>& lengths;
        at::Tensor cuSeqlens;  // [images + 1] int32
        int64_t maxLength = 0;
    };
    // [sum N, hidden] -> [sum N, hidden], attention inside each image.
    at::Tensor attention(const at::Tensor& h, const Block& b, const ImageRows& rows) const;
    // The interpolated position table for a grid, [gridH * gridW, hidden] in the model dtype (cached).
    at::Tensor positionEmbedding(int gridH, int gridW) const;
    // One image's q, k, v rows [N, 3 * hidden] -> attention output [N, hidden] (before the O projection),
    // explicitly: softmax(QK^T) V in query chunks (the CPU, and GPUs without libtorch's fused attention).
    at::Tensor attendOneImage(const at::Tensor& qkvRows) const;
    // `count` images of n rows each, back to back [count * n, 3 * hidden] -> [count * n, hidden]: one
    // batched fused-attention call on GPUs (pages of a burst mostly share a size), attendOneImage() per
    // image elsewhere.
    at::Tensor attendEqualImages(const at::Tensor& qkvRows, int64_t count, int64_t n) const;

    VisionConfig m_config;
    PreprocessConfig m_normalisation;  // mean and std of patchPixels()
    at::ScalarType m_dtype = at::kFloat;
    at::Device m_device = at::kCPU;
    int64_t m_scoreBudget = int64_t{32} << 20;
    bool m_ownAttention = true;
    at::Tensor m_patchW;    // [hidden, 3*p*p]: the stride-p conv as a linear over (c, y, x)
    at::Tensor m_patchB;    // [hidden] (zeros when add_patchemb_bias is false)
    at::Tensor m_posTable;  // [G, G, hidden] float32: the learned table without its extra (CLS) rows
    std::vector<Block> m_blocks;
    PerceiveMerger m_merger;
    // positionEmbedding()'s recent grids, oldest first; copies of the encoder (same weights) share it.
    struct PositionCache {
        std::mutex mutex;
        std::vector<std::pair<std::pair<int, int>, at::Tensor>> grids;
    };
    std::shared_ptr<PositionCache> m_positions = std::make_shared<PositionCache>();
};

}  // namespace lector::model::hunyuan
