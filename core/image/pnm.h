// Binary PPM / PGM (P6 / P5, 8-bit) decoding without OpenCV. These formats are what scanner tools
// (scanimage, SANE front ends) write, and they are the one image format this project reads on a
// build without OpenCV's imgcodecs (the GPU machine: docs/gpu-machine.md). Pure function, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/common/image.h"
#include "core/common/result.h"

namespace lector::image {

// True when the bytes start like a binary PPM or PGM file ("P6" / "P5" + whitespace).
bool looksLikePnm(std::span<const std::uint8_t> bytes);

// Decodes a binary PPM (RGB) or PGM (grey, expanded to RGB) with maxval 255. Errors name `name`:
// "decode_failed" (malformed header, maxval other than 255, truncated pixel data), "image_too_large"
// (more than maxPixels pixels: checked from the header, before any allocation).
Result<Image> decodePnm(std::span<const std::uint8_t> bytes, const std::string& name, std::int64_t maxPixels);

}  // namespace lector::image
