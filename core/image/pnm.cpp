#include "core/image/pnm.h"

#include <algorithm>
#include <cctype>

namespace lector::image {
namespace {

// Reads the next header number, skipping whitespace and '#' comments (Netpbm's header grammar).
std::optional<std::int64_t> nextNumber(std::span<const std::uint8_t> b, size_t& at)
{
    for (;;) {
        while (at < b.size() && std::isspace(b[at])) ++at;
        if (at < b.size() && b[at] == '#') {
            while (at < b.size() && b[at] != '\n') ++at;
            continue;
        }
        break;
    }
    std::int64_t v = 0;
    const size_t start = at;
    while (at < b.size() && std::isdigit(b[at]) && at - start < 10) v = v * 10 + (b[at++] - '0');
    if (at == start || (at < b.size() && std::isdigit(b[at]))) return std::nullopt;
    return v;
}

Error failure(const char* code, const std::string& name, const std::string& what)
{
    return Error{code, name + ": " + what};
}

}  // namespace

bool looksLikePnm(std::span<const std::uint8_t> bytes)
{
    return bytes.size() >= 3 && bytes[0] == 'P' && (bytes[1] == '6' || bytes[1] == '5') && std::isspace(bytes[2]);
}

Result<Image> decodePnm(std::span<const std::uint8_t> bytes, const std::string& name, std::int64_t maxPixels)
{
    if (!looksLikePnm(bytes)) return failure("decode_failed", name, "not a binary PPM/PGM file");
    const int channels = bytes[1] == '6' ? 3 : 1;
    size_t at = 2;
    const auto w = nextNumber(bytes, at), h = nextNumber(bytes, at), maxval = nextNumber(bytes, at);
    if (!w || !h || !maxval || at >= bytes.size() || !std::isspace(bytes[at]))
        return failure("decode_failed", name, "malformed PPM/PGM header");
    ++at;  // the single whitespace byte before the pixels
    if (*w <= 0 || *h <= 0) return failure("decode_failed", name, "PPM/PGM header gives an empty size");
    if (*maxval != 255) return failure("decode_failed", name, "only 8-bit PPM/PGM (maxval 255) is supported");
    if (*w * *h > maxPixels)
        return failure("image_too_large", name, std::to_string(*w) + "x" + std::to_string(*h) +
                                                    " pixels is more than the limit of " + std::to_string(maxPixels) + " pixels");
    const auto need = static_cast<size_t>(*w * *h * channels);
    if (bytes.size() - at < need) return failure("decode_failed", name, "truncated PPM/PGM pixel data");
    Image img(static_cast<int>(*w), static_cast<int>(*h));
    const std::uint8_t* src = bytes.data() + at;
    if (channels == 3) {
        std::copy_n(src, need, img.rgb.begin());
    } else {
        for (size_t i = 0; i < need; ++i) img.rgb[3 * i] = img.rgb[3 * i + 1] = img.rgb[3 * i + 2] = src[i];
    }
    return img;
}

}  // namespace lector::image
