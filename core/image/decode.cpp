// Decoding policy, in order: sniff the container, check the header's pixel count, check JPEG
// completeness, decode with IMREAD_UNCHANGED, convert to 8-bit RGB on white, apply EXIF orientation.
//
// NOTE(ocr): EXIF orientation is applied here and only here. OpenCV's imdecode applies the
// orientation itself for some formats unless the flags are exactly IMREAD_UNCHANGED (loadsave.cpp:
// `flags != IMREAD_UNCHANGED`), and which formats it reads EXIF from depends on the OpenCV version.
// Decoding with IMREAD_UNCHANGED turns that off for JPEG, PNG and WebP in every version. The TIFF
// decoder (4.6) applies the file's Orientation tag itself whatever the flags, so for TIFF the tag is
// reset to 1 in a copy of the bytes before decoding. Our own parser (exif.cpp: JPEG APP1, PNG eXIf,
// WebP EXIF, TIFF IFD0) is thus the single source of truth. The tests pin this with crafted files of
// all eight orientations in all four containers.
#include "core/image/decode.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#if defined(LECTOR_HAVE_IMGCODECS)
#include <opencv2/imgcodecs.hpp>
#endif

#include "core/image/exif.h"
#include "core/image/pnm.h"

namespace lector::image {
namespace {

Error fail(const std::string& code, const std::string& name, const std::string& what)
{
    return makeError(code, name + ": " + what);
}

#if defined(LECTOR_HAVE_IMGCODECS)  // what the decoders' output goes through
// Any depth -> CV_8U. 16-bit keeps the high byte (what Pillow does for 16-bit RGB PNGs); float
// images are taken as 0..1.
cv::Mat toDepth8(const cv::Mat& m)
{
    switch (m.depth()) {
    case CV_8U: return m;
    case CV_16U: {
        cv::Mat out(m.size(), CV_MAKETYPE(CV_8U, m.channels()));
        const size_t n = static_cast<size_t>(m.cols) * m.channels();
        for (int y = 0; y < m.rows; ++y) {
            const auto* src = m.ptr<std::uint16_t>(y);
            auto* dst = out.ptr<std::uint8_t>(y);
            for (size_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint8_t>(src[i] >> 8);
        }
        return out;
    }
    case CV_32F:
    case CV_64F: {
        cv::Mat out;
        m.convertTo(out, CV_MAKETYPE(CV_8U, m.channels()), 255.0);
        return out;
    }
    default: {
        cv::Mat out;
        m.convertTo(out, CV_MAKETYPE(CV_8U, m.channels()));
        return out;
    }
    }
}

// 8-bit colour (channels colorChannels) + alpha in the last channel -> colour over white.
cv::Mat compositeOnWhite(const cv::Mat& m, int colorChannels)
{
    cv::Mat out(m.size(), CV_MAKETYPE(CV_8U, colorChannels));
    const int c = m.channels();
    for (int y = 0; y < m.rows; ++y) {
        const std::uint8_t* src = m.ptr<std::uint8_t>(y);
        std::uint8_t* dst = out.ptr<std::uint8_t>(y);
        for (int x = 0; x < m.cols; ++x, src += c, dst += colorChannels) {
            const int a = src[c - 1];
            for (int k = 0; k < colorChannels; ++k)
                dst[k] = static_cast<std::uint8_t>((src[k] * a + 255 * (255 - a) + 127) / 255);
        }
    }
    return out;
}

// Decoded OpenCV matrix (1..4 channels, BGR order, any depth) -> 8-bit BGR.
cv::Mat toBgr8(const cv::Mat& decoded)
{
    cv::Mat m = toDepth8(decoded);
    switch (m.channels()) {
    case 1: {
        cv::Mat out;
        cv::cvtColor(m, out, cv::COLOR_GRAY2BGR);
        return out;
    }
    case 2: {
        cv::Mat gray = compositeOnWhite(m, 1), out;
        cv::cvtColor(gray, out, cv::COLOR_GRAY2BGR);
        return out;
    }
    case 3: return m;
    default: return compositeOnWhite(m, 3);
    }
}

Image bgrToImage(const cv::Mat& bgr)
{
    Image img(bgr.cols, bgr.rows);
    cv::Mat dst(bgr.rows, bgr.cols, CV_8UC3, img.rgb.data());
    cv::cvtColor(bgr, dst, cv::COLOR_BGR2RGB);
    return img;
}

#endif

cv::Mat orient(const cv::Mat& m, int orientation)
{
    cv::Mat out;
    switch (orientation) {
    case 2: cv::flip(m, out, 1); break;
    case 3: cv::rotate(m, out, cv::ROTATE_180); break;
    case 4: cv::flip(m, out, 0); break;
    case 5: cv::transpose(m, out); break;
    case 6: cv::rotate(m, out, cv::ROTATE_90_CLOCKWISE); break;
    case 7:
        cv::transpose(m, out);
        cv::rotate(out, out, cv::ROTATE_180);
        break;
    case 8: cv::rotate(m, out, cv::ROTATE_90_COUNTERCLOCKWISE); break;
    default: return m;
    }
    return out;
}

Result<void> checkHeader(ImageFormat format, std::span<const std::uint8_t> bytes, const std::string& name)
{
    const auto size = readHeaderSize(format, bytes);
    if (!size)
        return fail("decode_failed", name, std::string("truncated or malformed ") + formatName(format) + " header");
    const std::string dims = std::to_string(size->width) + "x" + std::to_string(size->height);
    if (size->width <= 0 || size->height <= 0)
        return fail("decode_failed", name, std::string(formatName(format)) + " header gives an empty size " + dims);
    if (size->width * size->height > kMaxImagePixels)
        return fail("image_too_large", name,
                    dims + " pixels is more than the limit of " + std::to_string(kMaxImagePixels) + " pixels");
    if (size->width > kMaxImageSide || size->height > kMaxImageSide)
        return fail("image_too_large", name,
                    dims + " has a side longer than " + std::to_string(kMaxImageSide) + " pixels");
    if (format == ImageFormat::Jpeg && !jpegHasEndOfImage(bytes))
        return fail("decode_failed", name, "truncated JPEG data (no end-of-image marker)");
    if (format == ImageFormat::Png && !pngHasEnd(bytes))
        return fail("decode_failed", name, "truncated PNG data (no IEND chunk)");
    return {};
}

}  // namespace

bool imageDecodingAvailable()
{
#if defined(LECTOR_HAVE_IMGCODECS)
    return true;
#else
    return false;
#endif
}

Image applyExifOrientation(const Image& image, int orientation)
{
    if (orientation < 2 || orientation > 8 || image.empty()) return image;
    const cv::Mat src(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.rgb.data()));
    const cv::Mat turned = orient(src, orientation);
    Image out(turned.cols, turned.rows);
    turned.copyTo(cv::Mat(out.height, out.width, CV_8UC3, out.rgb.data()));
    return out;
}

Result<Image> decodeImageBytes(std::span<const std::uint8_t> bytes, const std::string& name)
{
    if (bytes.empty()) return fail("empty_file", name, "file is empty (0 bytes)");
    if (looksLikePnm(bytes)) return decodePnm(bytes, name, kMaxImagePixels);
    const ImageFormat format = sniffFormat(bytes);
    if (format == ImageFormat::Unknown)
        return fail("unsupported_format", name, "not a JPEG, PNG, BMP, WebP, TIFF or PPM image");
    if (auto ok = checkHeader(format, bytes, name); !ok) return ok.error();
    const int orientation = readOrientation(format, bytes);

#if defined(LECTOR_HAVE_IMGCODECS)
    cv::Mat decoded;
    std::vector<std::uint8_t> tiffCopy;  // TIFF with its orientation reset (see the note at the top)
    try {
        if (format == ImageFormat::Tiff && orientation != 1) {
            tiffCopy.assign(bytes.begin(), bytes.end());
            resetTiffOrientation(tiffCopy);
            bytes = tiffCopy;
        }
        const cv::Mat buffer(1, static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)), CV_8U,
                             const_cast<std::uint8_t*>(bytes.data()));
        decoded = cv::imdecode(buffer, cv::IMREAD_UNCHANGED);  // exactly UNCHANGED: no EXIF (see top)
    } catch (const cv::Exception& e) {
        return fail("decode_failed", name, std::string(formatName(format)) + " decoder error: " + e.err);
    } catch (const std::bad_alloc&) {
        return fail("image_too_large", name, "not enough memory to decode the image");
    }
    if (decoded.empty())
        return fail("decode_failed", name, std::string("corrupt or truncated ") + formatName(format) + " data");
    try {
        return bgrToImage(orient(toBgr8(decoded), orientation));
    } catch (const cv::Exception& e) {
        return fail("decode_failed", name, std::string("pixel conversion failed: ") + e.err);
    } catch (const std::bad_alloc&) {
        return fail("image_too_large", name, "not enough memory to convert the image");
    }
#else
    (void)orientation;
    return fail("decode_failed", name, "this build has no image decoders (OpenCV imgcodecs missing)");
#endif
}

Result<Image> decodeImageFile(const std::filesystem::path& path)
{
    const std::string name = path.string();
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (status.type() == std::filesystem::file_type::not_found)
        return fail("file_not_found", name, "no such file");
    if (ec) return fail("read_failed", name, ec.message());
    if (std::filesystem::is_directory(status)) return fail("read_failed", name, "is a directory, not an image file");

    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(name.c_str(), "rb"), &std::fclose);
    if (!file) return fail("read_failed", name, std::string("cannot open: ") + std::strerror(errno));
    std::vector<std::uint8_t> bytes;
    try {
        const auto fileBytes = std::filesystem::file_size(path, ec);
        if (!ec && fileBytes < (std::uintmax_t(1) << 34)) bytes.reserve(static_cast<size_t>(fileBytes));
        std::uint8_t chunk[1 << 16];
        for (;;) {
            const size_t n = std::fread(chunk, 1, sizeof chunk, file.get());
            bytes.insert(bytes.end(), chunk, chunk + n);
            if (n < sizeof chunk) break;
        }
    } catch (const std::bad_alloc&) {
        return fail("read_failed", name, "file too large to read into memory");
    }
    if (std::ferror(file.get())) return fail("read_failed", name, std::string("read error: ") + std::strerror(errno));
    return decodeImageBytes(bytes, name);
}

}  // namespace lector::image
