// Pillow-exact resampling: Image.resize((w, h)) with Pillow's default BICUBIC filter, bit for bit.
// HunyuanOCR's reference processor resizes with Pillow, so the vision encoder only sees the same pixels
// as the reference when this matches exactly (docs/hunyuanocr-spec.md §2.2). Called by model
// preprocessing (core/model/hunyuan/preprocess) on whichever thread prepares the image; pure functions,
// thread-safe.
//
// The algorithm is Pillow's ImagingResample: a separable convolution, horizontal pass first, then
// vertical; the filter support grows with the downscale factor (antialiasing); weights are normalised
// per output pixel, converted to 22-bit fixed point, and each pass rounds and clips to 8 bits.
#pragma once

#include <cstdint>

#include "core/common/image.h"

namespace lector::image {

// Resizes an interleaved 8-bit image of `channels` (1..4) channels, rows packed (stride = width *
// channels), from srcWidth x srcHeight to dstWidth x dstHeight into dst (dstWidth * dstHeight *
// channels bytes). Sizes must be positive. Same size = plain copy (as Pillow).
void resizeBicubicPillow(const std::uint8_t* src, int srcWidth, int srcHeight, int channels, std::uint8_t* dst,
                         int dstWidth, int dstHeight);

// The same for an RGB Image; returns a new image of width x height (both > 0).
Image resizeBicubicPillow(const Image& src, int width, int height);

}  // namespace lector::image
