// Detector preprocessing: bounded resize to multiples of 32 and normalisation to the PP-OCRv4 det
// network's input. Called by PpOcrPipeline::detect() on the engine thread; pure functions.
//
// Resolution bound: the detector's cost grows with input pixels (a 35-megapixel scan at full size
// costs ~20 s and ~16 GB in the onnxruntime pipeline), so inputs above maxPixels are scaled down with
// the aspect ratio kept. The bound is a pixel budget rather than a longest-side limit so that tall
// receipts and long strips keep their text height (a 960-pixel longest side, PaddleOCR's default,
// shrinks a 900x2800 receipt to 8-pixel text). Default: PipelineOptions::detMaxPixels.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "core/common/image.h"

namespace lector::pipeline {

struct DetInputSize {
    int width = 0;
    int height = 0;
};

// Input size for an image: scaled to at most maxPixels (<= 0: no bound), then each side rounded to
// the nearest multiple of 32 (at least 32), as PaddleOCR's DetResizeForTest does.
DetInputSize detInputSize(int width, int height, std::int64_t maxPixels);

// The image resized to `size` with OpenCV bilinear interpolation (RGB kept).
Image resizeForDet(const Image& image, DetInputSize size);

// [1, 3, H, W] float32 on CPU, channels in B, G, R order: (u8 / 255 - mean) / std with ImageNet
// mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225) per B, G, R (the network was trained on
// OpenCV BGR images). With paddedHeight / paddedWidth larger than the image, the tensor has that size
// and the image sits top left, the rest white (the value a white pixel normalises to): the shape
// buckets of the CUDA path, written in the same pass.
at::Tensor normalizeDetInput(const Image& resized, int64_t paddedHeight = 0, int64_t paddedWidth = 0);

}  // namespace lector::pipeline
