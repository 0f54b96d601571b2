// Image: an owning 8-bit RGB buffer (interleaved, row-major, no padding). Every model input starts as
// one of these, after decoding and EXIF orientation (core/image/decode.h). Immutable once built, so it
// is shared between threads as std::shared_ptr<const Image>.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lector {

struct Image {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> rgb;  // [height, width, 3], R G B

    Image() = default;
    Image(int w, int h) : width(w), height(h), rgb(static_cast<size_t>(w) * h * 3, 0) {}

    bool empty() const { return width <= 0 || height <= 0; }
    std::uint8_t* row(int y) { return rgb.data() + static_cast<size_t>(y) * width * 3; }
    const std::uint8_t* row(int y) const { return rgb.data() + static_cast<size_t>(y) * width * 3; }
};

}  // namespace lector
