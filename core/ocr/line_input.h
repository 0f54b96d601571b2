// Network inputs built from line crops: the 180-degree classifier's fixed 48x192 input and the
// recogniser's height-48 batches, which are planned by width so that little of a batch is padding.
// Called by PpOcrPipeline::recognize() on the engine thread; pure functions.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/image.h"

namespace lector::pipeline {

inline constexpr int kLineHeight = 48;     // classifier and recogniser input height
inline constexpr int kClsWidth = 192;      // classifier input width
inline constexpr int kRecMinWidth = 320;   // recogniser batches are padded at least to this (training width)
inline constexpr int kRecMaxWidth = 4800;  // longer lines are squeezed (aspect 100:1) to bound memory

// Width of a crop scaled to height 48 with its aspect kept: ceil(48 * w / h), at least 1.
int scaledLineWidth(const Image& crop);

// [N, 3, 48, width] float32 on CPU, B, G, R channel order: each crop resized (bilinear) to height 48
// and min(width, scaledLineWidth) wide, mapped by (u8 / 255 - 0.5) / 0.5 and right-padded with 0.
// Used with width 192 for the classifier and with the batch width for the recogniser.
at::Tensor lineBatchInput(std::span<const Image* const> crops, int width);

struct RecBatch {
    std::vector<int> indices;  // into the crop list, narrowest first
    int width = 0;             // padded input width: max(kRecMinWidth, widest content width)
};

// Groups crops (given their scaledLineWidth) into batches of similar width: sorted by width, a batch
// closes at maxBatch crops or when numCrops * width * 48 would exceed maxBatchPixels (a single crop
// always fits). Every index appears in exactly one batch.
std::vector<RecBatch> planRecBatches(std::span<const int> contentWidths, int maxBatch, std::int64_t maxBatchPixels);

}  // namespace lector::pipeline
