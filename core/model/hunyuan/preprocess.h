// HunyuanOCR image preprocessing (docs/hunyuanocr-spec.md §2): smart resize to multiples of 32 within
// the pixel budget, Pillow-exact bicubic resampling, CLIP normalisation and cutting into 16x16 patches.
// Called wherever an image is prepared for the vision encoder (the engine thread or a worker: pure
// functions, thread-safe). The output feeds VisionEncoder::encode (vision_tower.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

#include "core/common/image.h"
#include "core/common/result.h"
#include "core/model/hunyuan/config.h"

namespace lector::model::hunyuan {

struct SmartSize {
    int height = 0;
    int width = 0;
};

// The reference smart_resize(h, w, factor, min_pixels, max_pixels): both sides rounded (half to even)
// to multiples of factor, then scaled down/up to fit [minPixels, maxPixels] keeping the aspect ratio.
// Errors: "bad_image" when a side is not positive or the aspect ratio exceeds 200.
Result<SmartSize> smartResize(int height, int width, int factor, int64_t minPixels, int64_t maxPixels);

// What preprocessImage() leaves for the tower. By default normalised patches (pixelValues) of `dtype`:
// float32, or a model's own dtype, the float32 values rounded to it (to nearest even) as a conversion
// after the fact gives. With `bytes` (a CUDA model's engine, VisionEncoder::pixelOutput()) only the resized
// RGB bytes (PreprocessedImage::rgb), which the tower normalises and patchifies on its device
// (gpu::patchify, the same float operations): 3 bytes a pixel to copy instead of 6 in float16, no pass
// over the page on a host core, and a page that needs no resizing is not copied at all (the bytes are a
// view of the caller's image). (Never pinned memory: pages prepared ahead would hold page-locked memory,
// which libtorch's host cache never gives back.)
struct PixelOutput {
    at::ScalarType dtype = at::kFloat;  // kFloat, kHalf or kBFloat16 (pixelValues)
    bool bytes = false;                 // rgb instead of pixelValues
};

// The vision encoder's input for one image.
struct PreprocessedImage {
    at::Tensor pixelValues;  // [gridH * gridW, 3 * patch * patch] CPU, PixelOutput's dtype (float32 by
                             // default); row-major patches, each channel-major (c * patch^2 + y * patch + x)
    at::Tensor rgb;          // instead, with PixelOutput::bytes: [resizedHeight, resizedWidth, 3] uint8 CPU
    int gridH = 0;           // patches per column (resizedHeight / patch)
    int gridW = 0;           // patches per row
    int resizedWidth = 0;
    int resizedHeight = 0;
    int originalWidth = 0;   // before resizing: spotting boxes are mapped back to this size
    int originalHeight = 0;

    int64_t numPatches() const { return static_cast<int64_t>(gridH) * gridW; }
    // Rows the merger emits (= image placeholder tokens): (gh/m) * (gw/m + 1) + 2 (spec §3.4).
    int64_t numImageTokens(int mergeSize) const
    {
        return static_cast<int64_t>(gridH / mergeSize) * (gridW / mergeSize + 1) + 2;
    }
};

// The size `image` is resized to (smartResize with the config's factor and pixel budget). Errors: "bad_image"
// when the image is empty or its buffer does not match its size, and as smartResize.
Result<SmartSize> modelSize(const Image& image, const PreprocessConfig& config);

// Smart resize + Pillow bicubic (skipped when the size is unchanged, as Pillow returns a copy).
// Errors as smartResize(); the message includes the image size.
Result<Image> resizeForModel(const Image& image, const PreprocessConfig& config);

// Normalises and patchifies an image whose sides are multiples of config.factor(); the original size
// is recorded for coordinate mapping. Throws std::invalid_argument on a size that is not a multiple
// (a programming error: call resizeForModel first).
PreprocessedImage patchify(const Image& resized, const PreprocessConfig& config, int originalWidth,
                           int originalHeight, PixelOutput output = {});

// resizeForModel + patchify (with PixelOutput::bytes, resizeForModel alone). Errors: "bad_image" (empty
// image, aspect ratio > 200).
Result<PreprocessedImage> preprocessImage(const Image& image, const PreprocessConfig& config, PixelOutput output = {});
// The same for a shared image: with PixelOutput::bytes and no resizing needed, PreprocessedImage::rgb views
// the image's buffer (and keeps the image alive) instead of copying it.
Result<PreprocessedImage> preprocessImage(std::shared_ptr<const Image> image, const PreprocessConfig& config,
                                          PixelOutput output = {});

}  // namespace lector::model::hunyuan
