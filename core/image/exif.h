// EXIF orientation and container-header probing for the image decoder (core/image/decode.cpp). Pure
// byte parsing, no decoding: it finds the container format from magic bytes, the pixel size the header
// announces (so oversized images are refused before any pixel buffer exists), and the EXIF Orientation
// tag (274) wherever the format keeps it: JPEG APP1, PNG eXIf, WebP EXIF chunk, TIFF IFD0.
// Stateless functions; safe from any thread. Malformed bytes never throw: they yield "unknown".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace lector::image {

enum class ImageFormat { Unknown, Jpeg, Png, Bmp, WebP, Tiff };

const char* formatName(ImageFormat format);

// The format named by the file's leading bytes, or Unknown.
ImageFormat sniffFormat(std::span<const std::uint8_t> bytes);

struct HeaderSize {
    std::int64_t width = 0;
    std::int64_t height = 0;
};

// Width and height as the container header states them (before decoding, before EXIF rotation).
// nullopt when the header is cut short or malformed.
std::optional<HeaderSize> readHeaderSize(ImageFormat format, std::span<const std::uint8_t> bytes);

// EXIF orientation 1..8 from a TIFF-structured EXIF block ("II*\0" / "MM\0*" header, optionally
// preceded by "Exif\0\0"). 1 when the tag is absent or its value is out of range.
int orientationFromTiffBlock(std::span<const std::uint8_t> tiff);

// EXIF orientation 1..8 stored in the container (1 = none, also for BMP and malformed data).
int readOrientation(ImageFormat format, std::span<const std::uint8_t> bytes);

// Rewrites the Orientation tag of a TIFF file's IFD0 to 1 (top-left) in place. OpenCV's TIFF decoder
// applies the tag itself whatever the imdecode flags, so decode.cpp resets it and applies the
// orientation on its own, like for every other format. False when there was no SHORT tag to reset.
bool resetTiffOrientation(std::vector<std::uint8_t>& tiff);

// True when a JPEG stream is complete: its markers parse and an EOI marker follows the scan data.
// libjpeg pads a truncated stream with grey and reports success, so truncation is checked here.
bool jpegHasEndOfImage(std::span<const std::uint8_t> bytes);

// True when a PNG stream's chunks are whole up to its IEND chunk. OpenCV's decoder reads to IEND and fails
// on any cut (after libpng has printed its own complaint to stderr), so truncation is caught here first,
// with a message of ours and nothing on stderr.
bool pngHasEnd(std::span<const std::uint8_t> bytes);

}  // namespace lector::image
