#include "core/model/hunyuan/preprocess.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/image/pillow_resize.h"

namespace lector::model::hunyuan {
namespace {

// Python's round(): ties to even. std::nearbyint honours the current rounding mode, which is
// round-to-nearest-even unless someone changed it; do not rely on that.
int64_t roundHalfEven(double v)
{
    const double fl = std::floor(v);
    const double diff = v - fl;
    if (diff > 0.5) return static_cast<int64_t>(fl) + 1;
    if (diff < 0.5) return static_cast<int64_t>(fl);
    const auto f = static_cast<int64_t>(fl);
    return (f % 2 == 0) ? f : f + 1;
}

}  // namespace

Result<SmartSize> smartResize(int height, int width, int factor, int64_t minPixels, int64_t maxPixels)
{
    if (height <= 0 || width <= 0 || factor <= 0)
        return makeError("bad_image", "image size " + std::to_string(width) + "x" + std::to_string(height) +
                                          " is empty");
    const double ratio = static_cast<double>(std::max(height, width)) / std::min(height, width);
    if (ratio > 200.0)
        return makeError("bad_image", "image size " + std::to_string(width) + "x" + std::to_string(height) +
                                          ": aspect ratio " + std::to_string(ratio) +
                                          " exceeds the model's limit of 200");
    const double h = height, w = width;
    int64_t hBar = roundHalfEven(h / factor) * factor;
    int64_t wBar = roundHalfEven(w / factor) * factor;
    if (hBar * wBar > maxPixels) {
        const double beta = std::sqrt(h * w / static_cast<double>(maxPixels));
        hBar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / factor)) * factor);
        wBar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / factor)) * factor);
    } else if (hBar * wBar < minPixels) {
        const double beta = std::sqrt(static_cast<double>(minPixels) / (h * w));
        hBar = static_cast<int64_t>(std::ceil(h * beta / factor)) * factor;
        wBar = static_cast<int64_t>(std::ceil(w * beta / factor)) * factor;
    }
    // A tiny side may still round to 0 (e.g. 10 px tall): the reference would fail later; we refuse.
    if (hBar <= 0 || wBar <= 0)
        return makeError("bad_image", "image size " + std::to_string(width) + "x" + std::to_string(height) +
                                          " is too small to resize");
    return SmartSize{static_cast<int>(hBar), static_cast<int>(wBar)};
}

Result<SmartSize> modelSize(const Image& image, const PreprocessConfig& config)
{
    if (image.empty() || image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3)
        return makeError("bad_image", "image is empty or its buffer does not match its size");
    return smartResize(image.height, image.width, config.factor(), config.minPixels, config.maxPixels);
}

Result<Image> resizeForModel(const Image& image, const PreprocessConfig& config)
{
    auto size = modelSize(image, config);
    if (!size) return size.error();
    if (size->width == image.width && size->height == image.height) return image;
    return image::resizeBicubicPillow(image, size->width, size->height);
}

namespace {

// Writes the normalised pixels of `resized` in patch order through a table per channel and byte value
// (values of T: the float32 result rounded once to T).
template <typename T>
void writePatches(const Image& resized, const float (&lut)[3][256], int p, int64_t gridH, int64_t gridW, T* dst)
{
    T table[3][256];
    for (int c = 0; c < 3; ++c)
        for (int v = 0; v < 256; ++v) table[c][v] = static_cast<T>(lut[c][v]);
    const int64_t rowValues = 3 * int64_t{p} * p, width = resized.width;
    const std::uint8_t* rgb = resized.rgb.data();
    at::parallel_for(0, gridH, 1, [&](int64_t first, int64_t last) {
        for (int64_t py = first; py < last; ++py)
            for (int64_t px = 0; px < gridW; ++px) {
                T* patch = dst + (py * gridW + px) * rowValues;
                for (int64_t y = 0; y < p; ++y) {
                    const std::uint8_t* src = rgb + ((py * p + y) * width + px * p) * 3;
                    for (int64_t x = 0; x < p; ++x)
                        for (int c = 0; c < 3; ++c) patch[(c * p + y) * p + x] = table[c][src[x * 3 + c]];
                }
            }
    });
}

}  // namespace

PreprocessedImage patchify(const Image& resized, const PreprocessConfig& config, int originalWidth,
                           int originalHeight, PixelOutput output)
{
    const int p = config.patchSize;
    if (resized.empty() || resized.width % config.factor() != 0 || resized.height % config.factor() != 0)
        throw std::invalid_argument("patchify: image " + std::to_string(resized.width) + "x" +
                                    std::to_string(resized.height) + " is not a multiple of " +
                                    std::to_string(config.factor()));
    if (output.dtype != at::kFloat && output.dtype != at::kHalf && output.dtype != at::kBFloat16)
        throw std::invalid_argument("patchify: pixel values are float32, float16 or bfloat16");
    PreprocessedImage out;
    out.gridH = resized.height / p;
    out.gridW = resized.width / p;
    out.resizedWidth = resized.width;
    out.resizedHeight = resized.height;
    out.originalWidth = originalWidth;
    out.originalHeight = originalHeight;

    // torchvision ToTensor + Normalize in float32, (u8 / 255 - mean) / std, as a table per channel and
    // byte value: the same float operations, once each. Written straight in patch order ([gh, gw, 3, p,
    // p]: raster order of patches, channel-major inside a patch) by all cores (this file is built with
    // OpenMP for at::parallel_for): one pass over one buffer, where ATen's operations took five.
    float lut[3][256];
    for (int c = 0; c < 3; ++c)
        for (int v = 0; v < 256; ++v)
            lut[c][v] = (static_cast<float>(v) / 255.0f - config.mean[static_cast<size_t>(c)]) /
                        config.std[static_cast<size_t>(c)];
    out.pixelValues = at::empty({out.numPatches(), 3 * int64_t{p} * p}, output.dtype);
    switch (output.dtype) {
    case at::kHalf: writePatches(resized, lut, p, out.gridH, out.gridW, out.pixelValues.data_ptr<at::Half>()); break;
    case at::kBFloat16:
        writePatches(resized, lut, p, out.gridH, out.gridW, out.pixelValues.data_ptr<at::BFloat16>());
        break;
    default: writePatches(resized, lut, p, out.gridH, out.gridW, out.pixelValues.data_ptr<float>()); break;
    }
    return out;
}

namespace {

// The bytes of `image` as a [height, width, 3] uint8 tensor that keeps the image alive.
at::Tensor bytesOf(std::shared_ptr<const Image> image)
{
    auto* data = const_cast<std::uint8_t*>(image->rgb.data());  // never written through: the tower only reads
    const int64_t height = image->height, width = image->width;
    return at::from_blob(data, {height, width, 3}, [keep = std::move(image)](void*) mutable { keep.reset(); },
                         at::TensorOptions().dtype(at::kByte));
}

PreprocessedImage bytesOnly(std::shared_ptr<const Image> resized, int originalWidth, int originalHeight, int patch)
{
    PreprocessedImage out;
    out.gridH = resized->height / patch;
    out.gridW = resized->width / patch;
    out.resizedWidth = resized->width;
    out.resizedHeight = resized->height;
    out.originalWidth = originalWidth;
    out.originalHeight = originalHeight;
    out.rgb = bytesOf(std::move(resized));
    return out;
}

}  // namespace

Result<PreprocessedImage> preprocessImage(const Image& image, const PreprocessConfig& config, PixelOutput output)
{
    auto resized = resizeForModel(image, config);
    if (!resized) return resized.error();
    if (output.bytes)
        return bytesOnly(std::make_shared<const Image>(std::move(resized).value()), image.width, image.height,
                         config.patchSize);
    return patchify(*resized, config, image.width, image.height, output);
}

Result<PreprocessedImage> preprocessImage(std::shared_ptr<const Image> image, const PreprocessConfig& config,
                                          PixelOutput output)
{
    if (!image) return makeError("bad_image", "no image");
    if (!output.bytes) return preprocessImage(*image, config, output);
    auto size = modelSize(*image, config);
    if (!size) return size.error();
    const int width = image->width, height = image->height;
    if (size->width == width && size->height == height)
        return bytesOnly(std::move(image), width, height, config.patchSize);
    return bytesOnly(std::make_shared<const Image>(image::resizeBicubicPillow(*image, size->width, size->height)), width,
                     height, config.patchSize);
}

}  // namespace lector::model::hunyuan
