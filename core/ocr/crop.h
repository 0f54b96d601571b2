// Line crops: the perspective crop of a detected quad out of the full-resolution image, and the
// 180-degree turn the angle classifier asks for. Called by PpOcrPipeline::recognize() on the engine
// thread; pure functions.
#pragma once

#include <span>
#include <vector>

#include "core/common/image.h"
#include "core/ocr/types.h"

namespace lector::pipeline {

struct LineCrop {
    Image image;
    bool rotated90 = false;  // turned 90 degrees counter-clockwise because it was tall
};

// Warps the quad (tl, tr, br, bl) to an upright rectangle of width max(|tl-tr|, |bl-br|) and height
// max(|tl-bl|, |tr-br|) (bicubic, replicated border, as PaddleOCR's get_rotate_crop_image). A crop at
// least 1.5 times taller than wide holds text running top to bottom: it is turned 90 degrees
// counter-clockwise so the text reads left to right. Never empty: at least 1x1.
LineCrop cropLine(const Image& image, const Quad& quad);

// cropLine() of every ref, the crops in parallel on libtorch's intra-op threads (each is independent,
// so the result is the same as one at a time). On a GPU the networks take a few milliseconds a page and
// these warps were most of the rest (docs/perf.md, call 168).
std::vector<LineCrop> cropLines(std::span<const CropRef> refs);

// The image turned by 180 degrees.
Image rotate180(const Image& image);

}  // namespace lector::pipeline
