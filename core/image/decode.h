// Image decoding: file or bytes -> lector::Image (8-bit RGB, EXIF orientation applied, alpha
// composited on white). JPEG, PNG, BMP, WebP and TIFF, decoded by OpenCV imdecode from bytes we read
// ourselves, after our own checks on the container header: format from magic bytes (never from the
// file name), pixel count against Pillow's limit before any pixel buffer exists, JPEG completeness.
// Callers: the CLI and the UI decode on worker threads; every function here is safe from any thread.
//
// Errors (Error.code, message starts with the name given): file_not_found, read_failed (unreadable
// path, a directory), empty_file (0 bytes), unsupported_format (not one of the five formats),
// decode_failed (corrupt or truncated data), image_too_large (more than kMaxImagePixels pixels or a
// side beyond OpenCV's reader limit). Nothing here throws or aborts on bad input.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "core/common/image.h"
#include "core/common/result.h"

namespace lector::image {

// Pillow's Image.MAX_IMAGE_PIXELS: larger images are refused before decoding.
inline constexpr std::int64_t kMaxImagePixels = 178956970;
// OpenCV's reader refuses (throws) beyond this side length (CV_IO_MAX_IMAGE_WIDTH/HEIGHT).
inline constexpr std::int64_t kMaxImageSide = 1 << 20;

// Reads the whole file, then decodes it as decodeImageBytes does; errors name path.filename()'s
// full path as given.
Result<Image> decodeImageFile(const std::filesystem::path& path);

// Decodes an encoded image held in memory. nameForErrors prefixes every error message.
Result<Image> decodeImageBytes(std::span<const std::uint8_t> bytes, const std::string& nameForErrors);

// Applies EXIF orientation 1..8 (1 = unchanged; 5..8 swap width and height). Values outside 1..8
// leave the image unchanged.
Image applyExifOrientation(const Image& image, int orientation);

// False on builds without OpenCV imgcodecs (the GPU machine): decode*() then fail with
// "decode_failed" after the header checks.
bool imageDecodingAvailable();

}  // namespace lector::image
