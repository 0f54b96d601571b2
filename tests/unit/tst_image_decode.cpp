// Image decoding: pixel content per format, alpha / 16-bit / grey conversion, EXIF orientation in all
// four containers that carry it (all 8 values, applied exactly once), and every error code. Test files
// are encoded here with OpenCV from images of known content; EXIF blocks and odd headers are crafted
// byte by byte.
#include "tests/support/lector_test.h"

#include <fstream>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "core/image/decode.h"
#include "core/image/exif.h"

using lector::Image;
using lector::image::decodeImageBytes;
using lector::image::decodeImageFile;
namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes encode(const cv::Mat& bgr, const std::string& ext, std::vector<int> params = {})
{
    std::vector<uchar> out;
    if (!cv::imencode(ext, bgr, out, params)) throw std::runtime_error("imencode failed for " + ext);
    return Bytes(out.begin(), out.end());
}

void writeFile(const fs::path& p, const Bytes& b)
{
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::array<int, 3> rgbAt(const Image& img, int x, int y)
{
    const auto* p = img.row(y) + x * 3;
    return {p[0], p[1], p[2]};
}

bool near(std::array<int, 3> a, std::array<int, 3> b, int tol)
{
    for (int i = 0; i < 3; ++i)
        if (std::abs(a[i] - b[i]) > tol) return false;
    return true;
}

// --- byte builders ---

void put16(Bytes& b, unsigned v, bool little)
{
    if (little) b.insert(b.end(), {std::uint8_t(v), std::uint8_t(v >> 8)});
    else b.insert(b.end(), {std::uint8_t(v >> 8), std::uint8_t(v)});
}
void put32(Bytes& b, std::uint32_t v, bool little)
{
    if (little) b.insert(b.end(), {std::uint8_t(v), std::uint8_t(v >> 8), std::uint8_t(v >> 16), std::uint8_t(v >> 24)});
    else b.insert(b.end(), {std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8), std::uint8_t(v)});
}

// A TIFF-structured EXIF block whose IFD0 holds an unrelated tag and Orientation (274, SHORT).
Bytes exifBlock(int orientation, bool little)
{
    Bytes b;
    b.insert(b.end(), little ? std::initializer_list<std::uint8_t>{'I', 'I'} : std::initializer_list<std::uint8_t>{'M', 'M'});
    put16(b, 42, little);
    put32(b, 8, little);
    put16(b, 2, little);  // two entries
    put16(b, 271, little);  // Make, ASCII, 4 bytes inline
    put16(b, 2, little);
    put32(b, 4, little);
    b.insert(b.end(), {'A', 'B', 'C', 0});
    put16(b, 274, little);
    put16(b, 3, little);
    put32(b, 1, little);
    put16(b, static_cast<unsigned>(orientation), little);
    put16(b, 0, little);
    put32(b, 0, little);  // no next IFD
    return b;
}

std::uint32_t crc32(const std::uint8_t* p, size_t n)
{
    std::uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

Bytes pngChunk(const std::string& type, const Bytes& data)
{
    Bytes c;
    put32(c, static_cast<std::uint32_t>(data.size()), false);
    c.insert(c.end(), type.begin(), type.end());
    c.insert(c.end(), data.begin(), data.end());
    put32(c, crc32(c.data() + 4, c.size() - 4), false);
    return c;
}

Bytes jpegWithExif(const Bytes& jpeg, const Bytes& tiff)
{
    Bytes app1 = {0xFF, 0xE1};
    put16(app1, static_cast<unsigned>(2 + 6 + tiff.size()), false);
    app1.insert(app1.end(), {'E', 'x', 'i', 'f', 0, 0});
    app1.insert(app1.end(), tiff.begin(), tiff.end());
    Bytes out(jpeg.begin(), jpeg.begin() + 2);
    out.insert(out.end(), app1.begin(), app1.end());
    out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
    return out;
}

Bytes pngWithExif(const Bytes& png, const Bytes& tiff)
{
    const size_t afterIhdr = 8 + 25;
    Bytes out(png.begin(), png.begin() + afterIhdr);
    const Bytes chunk = pngChunk("eXIf", tiff);
    out.insert(out.end(), chunk.begin(), chunk.end());
    out.insert(out.end(), png.begin() + afterIhdr, png.end());
    return out;
}

// Simple (VP8/VP8L) WebP -> extended VP8X container with an EXIF chunk after the image.
Bytes webpWithExif(const Bytes& webp, int width, int height, const Bytes& tiff)
{
    Bytes chunks;
    chunks.insert(chunks.end(), {'V', 'P', '8', 'X'});
    put32(chunks, 10, true);
    chunks.insert(chunks.end(), {0x08, 0, 0, 0});  // flags: EXIF present
    const auto put24 = [&](std::uint32_t v) { chunks.insert(chunks.end(), {std::uint8_t(v), std::uint8_t(v >> 8), std::uint8_t(v >> 16)}); };
    put24(static_cast<std::uint32_t>(width - 1));
    put24(static_cast<std::uint32_t>(height - 1));
    chunks.insert(chunks.end(), webp.begin() + 12, webp.end());  // the image chunk as encoded
    chunks.insert(chunks.end(), {'E', 'X', 'I', 'F'});
    put32(chunks, static_cast<std::uint32_t>(tiff.size()), true);
    chunks.insert(chunks.end(), tiff.begin(), tiff.end());
    if (tiff.size() % 2) chunks.push_back(0);
    Bytes out = {'R', 'I', 'F', 'F'};
    put32(out, static_cast<std::uint32_t>(4 + chunks.size()), true);
    out.insert(out.end(), {'W', 'E', 'B', 'P'});
    out.insert(out.end(), chunks.begin(), chunks.end());
    return out;
}

// Uncompressed 8-bit RGB TIFF, one strip, with an Orientation tag.
Bytes tiffRgb(const cv::Mat& bgr, int orientation)
{
    const bool le = true;
    const std::uint32_t w = static_cast<std::uint32_t>(bgr.cols), h = static_cast<std::uint32_t>(bgr.rows);
    struct Entry {
        unsigned tag, type;
        std::uint32_t count, value;
    };
    const std::uint32_t numEntries = 11;
    const std::uint32_t ifdSize = 2 + numEntries * 12 + 4;
    const std::uint32_t bpsAt = 8 + ifdSize, dataAt = bpsAt + 6;
    const std::vector<Entry> entries = {
        {256, 4, 1, w}, {257, 4, 1, h}, {258, 3, 3, bpsAt}, {259, 3, 1, 1}, {262, 3, 1, 2}, {273, 4, 1, dataAt},
        {274, 3, 1, static_cast<std::uint32_t>(orientation)}, {277, 3, 1, 3}, {278, 4, 1, h}, {279, 4, 1, w * h * 3},
        {284, 3, 1, 1}};
    Bytes b = {'I', 'I'};
    put16(b, 42, le);
    put32(b, 8, le);
    put16(b, numEntries, le);
    for (const auto& e : entries) {
        put16(b, e.tag, le);
        put16(b, e.type, le);
        put32(b, e.count, le);
        if (e.type == 3 && e.count == 1) {
            put16(b, e.value, le);
            put16(b, 0, le);
        } else {
            put32(b, e.value, le);
        }
    }
    put32(b, 0, le);
    for (int i = 0; i < 3; ++i) put16(b, 8, le);
    for (int y = 0; y < bgr.rows; ++y)
        for (int x = 0; x < bgr.cols; ++x) {
            const auto& p = bgr.at<cv::Vec3b>(y, x);
            b.insert(b.end(), {p[2], p[1], p[0]});
        }
    return b;
}

// --- the oriented test picture ---

// Display image: four quadrants red, green, blue, yellow (TL, TR, BL, BR), 64x32, 16-pixel aligned.
const std::array<std::array<int, 3>, 4> kQuadrantRgb = {{{220, 30, 30}, {30, 200, 40}, {30, 40, 210}, {230, 220, 40}}};

cv::Mat displayPicture()
{
    cv::Mat m(32, 64, CV_8UC3);
    for (int y = 0; y < m.rows; ++y)
        for (int x = 0; x < m.cols; ++x) {
            const auto& c = kQuadrantRgb[static_cast<size_t>((y >= 16 ? 2 : 0) + (x >= 32 ? 1 : 0))];
            m.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(c[2]), uchar(c[1]), uchar(c[0]));
        }
    return m;
}

// The stored picture that EXIF orientation `o` turns into `display` (TIFF/EXIF 2.3 definitions of
// where row 0 and column 0 of the stored image go).
cv::Mat storedFor(const cv::Mat& d, int o)
{
    const int W = d.cols, H = d.rows;
    const bool swap = o >= 5;
    cv::Mat s(swap ? W : H, swap ? H : W, CV_8UC3);
    const int sw = s.cols, sh = s.rows;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            int r = y, c = x;
            switch (o) {
            case 2: c = sw - 1 - x; break;
            case 3: r = sh - 1 - y; c = sw - 1 - x; break;
            case 4: r = sh - 1 - y; break;
            case 5: r = x; c = y; break;
            case 6: r = sh - 1 - x; c = y; break;
            case 7: r = sh - 1 - x; c = sw - 1 - y; break;
            case 8: r = x; c = sw - 1 - y; break;
            default: break;
            }
            s.at<cv::Vec3b>(r, c) = d.at<cv::Vec3b>(y, x);
        }
    return s;
}

void checkDisplayPicture(const lector::Result<Image>& r, int tol, const std::string& what)
{
    LECTOR_CHECK_MSG(r.ok(), what << ": " << r.error().message);
    LECTOR_CHECK_MSG(r->width == 64 && r->height == 32, what << ": size " << r->width << "x" << r->height);
    const int xs[2] = {16, 48}, ys[2] = {8, 24};
    for (int q = 0; q < 4; ++q) {
        const auto got = rgbAt(*r, xs[q % 2], ys[q / 2]);
        LECTOR_CHECK_MSG(near(got, kQuadrantRgb[static_cast<size_t>(q)], tol),
                         what << ": quadrant " << q << " is " << got[0] << "," << got[1] << "," << got[2]);
    }
}

void requireDecoders()
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("built without image decoders");
}

}  // namespace

// --- content per format ---

LECTOR_TEST(decodesLosslessFormatsToExactRgb)
{
    requireDecoders();
    cv::Mat bgr(5, 7, CV_8UC3);
    for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 7; ++x) bgr.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(x * 30), uchar(y * 50), uchar(200 - x * y));
    const std::vector<std::pair<std::string, Bytes>> files = {
        {"png", encode(bgr, ".png")}, {"bmp", encode(bgr, ".bmp")}, {"tiff", encode(bgr, ".tiff")},
        {"webp", encode(bgr, ".webp", {cv::IMWRITE_WEBP_QUALITY, 101})}, {"tiff-handmade", tiffRgb(bgr, 1)}};
    for (const auto& [name, bytes] : files) {
        auto r = decodeImageBytes(bytes, name);
        LECTOR_CHECK_MSG(r.ok(), name << ": " << r.error().message);
        LECTOR_CHECK_EQ(r->width, 7);
        LECTOR_CHECK_EQ(r->height, 5);
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 7; ++x) {
                const auto& p = bgr.at<cv::Vec3b>(y, x);
                LECTOR_CHECK_MSG(rgbAt(*r, x, y) == (std::array<int, 3>{p[2], p[1], p[0]}), name << " at " << x << "," << y);
            }
    }
}

LECTOR_TEST(decodesJpegApproximately)
{
    requireDecoders();
    checkDisplayPicture(decodeImageBytes(encode(displayPicture(), ".jpg", {cv::IMWRITE_JPEG_QUALITY, 95}), "a.jpg"), 40, "jpeg");
}

LECTOR_TEST(convertsGreyAnd16BitAndAlpha)
{
    requireDecoders();
    cv::Mat grey(2, 3, CV_8UC1);
    grey.at<uchar>(0, 0) = 0;
    grey.at<uchar>(1, 2) = 77;
    auto g = decodeImageBytes(encode(grey, ".png"), "grey.png");
    LECTOR_CHECK(g.ok());
    LECTOR_CHECK((rgbAt(*g, 2, 1) == std::array<int, 3>{77, 77, 77}));

    cv::Mat deep(1, 2, CV_16UC3);
    deep.at<cv::Vec3w>(0, 0) = cv::Vec3w(0x1234, 0xABCD, 0xFFFF);  // B, G, R
    deep.at<cv::Vec3w>(0, 1) = cv::Vec3w(0x00FF, 0x0100, 0x8000);
    auto d = decodeImageBytes(encode(deep, ".png"), "deep.png");
    LECTOR_CHECK(d.ok());
    LECTOR_CHECK((rgbAt(*d, 0, 0) == std::array<int, 3>{0xFF, 0xAB, 0x12}));  // high bytes
    LECTOR_CHECK((rgbAt(*d, 1, 0) == std::array<int, 3>{0x80, 0x01, 0x00}));

    cv::Mat rgba(1, 3, CV_8UC4);
    rgba.at<cv::Vec4b>(0, 0) = cv::Vec4b(0, 0, 255, 0);      // transparent red -> white
    rgba.at<cv::Vec4b>(0, 1) = cv::Vec4b(0, 0, 255, 255);    // opaque red
    rgba.at<cv::Vec4b>(0, 2) = cv::Vec4b(0, 0, 0, 102);      // 40% black -> 153
    for (const char* ext : {".png", ".webp"}) {
        auto a = decodeImageBytes(encode(rgba, ext, {cv::IMWRITE_WEBP_QUALITY, 101}), std::string("alpha") + ext);
        LECTOR_CHECK_MSG(a.ok(), ext);
        LECTOR_CHECK_MSG((rgbAt(*a, 0, 0) == std::array<int, 3>{255, 255, 255}), ext);
        LECTOR_CHECK_MSG((rgbAt(*a, 1, 0) == std::array<int, 3>{255, 0, 0}), ext);
        LECTOR_CHECK_MSG((rgbAt(*a, 2, 0) == std::array<int, 3>{153, 153, 153}), ext);
    }
}

// --- EXIF orientation ---

LECTOR_TEST(parsesOrientationTagInBothByteOrders)
{
    for (int o = 1; o <= 8; ++o) {
        LECTOR_CHECK_EQ(lector::image::orientationFromTiffBlock(exifBlock(o, true)), o);
        LECTOR_CHECK_EQ(lector::image::orientationFromTiffBlock(exifBlock(o, false)), o);
    }
    LECTOR_CHECK_EQ(lector::image::orientationFromTiffBlock(exifBlock(9, true)), 1);
    LECTOR_CHECK_EQ(lector::image::orientationFromTiffBlock(Bytes{'I', 'I', 42}), 1);
}

LECTOR_TEST(appliesAllEightOrientationsOnceInEveryContainer)
{
    requireDecoders();
    const cv::Mat display = displayPicture();
    for (int o = 1; o <= 8; ++o) {
        const cv::Mat stored = storedFor(display, o);
        const std::string tag = " orientation " + std::to_string(o);
        const Bytes tiff = exifBlock(o, o % 2 == 0);
        checkDisplayPicture(decodeImageBytes(jpegWithExif(encode(stored, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 95}), tiff), "x.jpg"),
                            40, "jpeg" + tag);
        checkDisplayPicture(decodeImageBytes(pngWithExif(encode(stored, ".png"), tiff), "x.png"), 0, "png" + tag);
        checkDisplayPicture(decodeImageBytes(webpWithExif(encode(stored, ".webp", {cv::IMWRITE_WEBP_QUALITY, 101}),
                                                          stored.cols, stored.rows, tiff),
                                             "x.webp"),
                            0, "webp" + tag);
        checkDisplayPicture(decodeImageBytes(tiffRgb(stored, o), "x.tiff"), 0, "tiff" + tag);
    }
}

LECTOR_TEST(applyExifOrientationSwapsSides)
{
    Image img(3, 2);
    img.row(0)[0] = 9;  // R of the top-left pixel
    const Image turned = lector::image::applyExifOrientation(img, 6);  // 90 degrees clockwise
    LECTOR_CHECK_EQ(turned.width, 2);
    LECTOR_CHECK_EQ(turned.height, 3);
    LECTOR_CHECK_EQ(int(turned.row(0)[3]), 9);  // top-left went to the top-right corner
    LECTOR_CHECK_EQ(lector::image::applyExifOrientation(img, 0).width, 3);
}

// --- errors ---

LECTOR_TEST(reportsMissingUnreadableAndEmptyFiles)
{
    const fs::path dir = lector::test::tempDir();
    auto missing = decodeImageFile(dir / "nope.jpg");
    LECTOR_CHECK(!missing.ok());
    LECTOR_CHECK_EQ(missing.error().code, std::string("file_not_found"));
    LECTOR_CHECK(missing.error().message.find("nope.jpg") != std::string::npos);

    auto folder = decodeImageFile(dir);
    LECTOR_CHECK_EQ(folder.error().code, std::string("read_failed"));
    LECTOR_CHECK(folder.error().message.find(dir.string()) != std::string::npos);

    writeFile(dir / "empty.png", {});
    auto empty = decodeImageFile(dir / "empty.png");
    LECTOR_CHECK_EQ(empty.error().code, std::string("empty_file"));
    LECTOR_CHECK(empty.error().message.find("empty.png") != std::string::npos);
}

LECTOR_TEST(rejectsTextNamedPngAsUnsupported)
{
    const fs::path p = lector::test::tempDir() / "notes.png";
    const std::string text = "P3 this is a text file, not an image\n";
    writeFile(p, Bytes(text.begin(), text.end()));
    auto r = decodeImageFile(p);
    LECTOR_CHECK_EQ(r.error().code, std::string("unsupported_format"));
    LECTOR_CHECK(r.error().message.find("notes.png") != std::string::npos);
}

LECTOR_TEST(rejectsTruncatedJpegAndPng)
{
    requireDecoders();
    const fs::path dir = lector::test::tempDir();
    const Bytes jpeg = encode(displayPicture(), ".jpg");
    for (const size_t keep : {jpeg.size() - 2, jpeg.size() / 2, size_t(300), size_t(20)}) {
        writeFile(dir / "cut.jpg", Bytes(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(keep)));
        auto r = decodeImageFile(dir / "cut.jpg");
        LECTOR_CHECK_MSG(!r.ok(), "kept " << keep);
        LECTOR_CHECK_EQ(r.error().code, std::string("decode_failed"));
        LECTOR_CHECK(r.error().message.find("cut.jpg") != std::string::npos);
    }
    // A PNG cut anywhere past its header, even inside the IEND chunk's checksum, is named truncated (by
    // our own check: libpng would also have printed its complaint on stderr).
    const Bytes png = encode(displayPicture(), ".png");
    for (const size_t keep : {png.size() - 1, png.size() - 12, png.size() / 2, size_t(40)}) {
        auto r = decodeImageBytes(Bytes(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(keep)), "cut.png");
        LECTOR_CHECK_MSG(!r.ok(), "kept " << keep);
        LECTOR_CHECK_EQ(r.error().code, std::string("decode_failed"));
        LECTOR_CHECK_MSG(r.error().message == "cut.png: truncated PNG data (no IEND chunk)", r.error().message);
    }
    // A JPEG or a PNG with trailing bytes after its end is fine.
    Bytes padded = jpeg;
    padded.insert(padded.end(), 100, 0);
    LECTOR_CHECK(decodeImageBytes(padded, "padded.jpg").ok());
    Bytes paddedPng = png;
    paddedPng.insert(paddedPng.end(), 100, 0);
    LECTOR_CHECK(decodeImageBytes(paddedPng, "padded.png").ok());
}

LECTOR_TEST(refusesHugeImagesBeforeDecoding)
{
    // A PNG whose header says 20000 x 20000 (400 megapixels), followed by a tiny bogus IDAT.
    Bytes png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    Bytes ihdr;
    put32(ihdr, 20000, false);
    put32(ihdr, 20000, false);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
    for (const Bytes& c : {pngChunk("IHDR", ihdr), pngChunk("IDAT", Bytes{0x78, 0x9c, 0x03, 0x00}), pngChunk("IEND", {})})
        png.insert(png.end(), c.begin(), c.end());
    auto r = decodeImageBytes(png, "huge.png");
    LECTOR_CHECK_EQ(r.error().code, std::string("image_too_large"));
    LECTOR_CHECK(r.error().message.find("huge.png") != std::string::npos);
    LECTOR_CHECK(r.error().message.find("20000x20000") != std::string::npos);

    // Under the pixel limit but wider than OpenCV reads (it would throw): refused the same way.
    Bytes strip = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    Bytes ihdr2;
    put32(ihdr2, 3'000'000, false);
    put32(ihdr2, 1, false);
    ihdr2.insert(ihdr2.end(), {8, 2, 0, 0, 0});
    for (const Bytes& c : {pngChunk("IHDR", ihdr2), pngChunk("IEND", {})}) strip.insert(strip.end(), c.begin(), c.end());
    LECTOR_CHECK_EQ(decodeImageBytes(strip, "strip.png").error().code, std::string("image_too_large"));

    // JPEG: SOF0 says 65000 x 65000.
    requireDecoders();
    Bytes jpeg = encode(displayPicture(), ".jpg");
    for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
        if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
            jpeg[i + 5] = 0xFD, jpeg[i + 6] = 0xE8, jpeg[i + 7] = 0xFD, jpeg[i + 8] = 0xE8;
            break;
        }
    }
    LECTOR_CHECK_EQ(decodeImageBytes(jpeg, "huge.jpg").error().code, std::string("image_too_large"));
}

LECTOR_TEST(reportsCorruptDataWithoutCrashing)
{
    requireDecoders();
    Bytes png = encode(displayPicture(), ".png");
    for (size_t i = 40; i < png.size() - 12; ++i) png[i] = static_cast<std::uint8_t>(i * 7);  // scramble IDAT
    auto r = decodeImageBytes(png, "scrambled.png");
    LECTOR_CHECK(!r.ok());
    LECTOR_CHECK_EQ(r.error().code, std::string("decode_failed"));
    Bytes bmp = {'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 10, 0, 0, 0, 10, 0, 0, 0};
    LECTOR_CHECK_EQ(decodeImageBytes(bmp, "short.bmp").error().code, std::string("decode_failed"));
    LECTOR_CHECK_EQ(decodeImageBytes(Bytes{'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'}, "x.webp").error().code,
                    std::string("decode_failed"));
}

LECTOR_TEST(decodesFixturePngFromFile)
{
    requireDecoders();
    auto r = decodeImageFile(lector::test::fixture("fixtures/ppocr/doc_en.png"));
    LECTOR_CHECK_MSG(r.ok(), r.error().message);
    LECTOR_CHECK_EQ(r->width, 800);
    LECTOR_CHECK_EQ(r->height, 360);
}

LECTOR_TEST(decodesBinaryPpmAndPgmExactly)
{
    // A 3x2 PPM with a comment in the header, and the same grey values as PGM.
    std::string ppm = "P6\n# scanner output\n3 2\n255\n";
    const std::uint8_t px[18] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 40, 50, 60, 70, 80, 90};
    ppm.append(reinterpret_cast<const char*>(px), sizeof px);
    auto bytes = std::vector<std::uint8_t>(ppm.begin(), ppm.end());
    auto img = lector::image::decodeImageBytes(bytes, "scan.ppm");
    LECTOR_CHECK_MSG(img.ok(), img.error().message);
    LECTOR_CHECK_EQ(img->width, 3);
    LECTOR_CHECK_EQ(img->height, 2);
    LECTOR_CHECK(std::equal(img->rgb.begin(), img->rgb.end(), px));

    std::string pgm = "P5 2 1 255\n";
    pgm += '\x07';
    pgm += '\xF0';
    bytes.assign(pgm.begin(), pgm.end());
    auto grey = lector::image::decodeImageBytes(bytes, "g.pgm");
    LECTOR_CHECK_MSG(grey.ok(), grey.error().message);
    LECTOR_CHECK(grey->rgb == std::vector<std::uint8_t>({7, 7, 7, 240, 240, 240}));

    // Truncated pixels, a 16-bit maxval, and a header claiming 30000x30000 are errors naming the file.
    bytes.assign(ppm.begin(), ppm.end() - 1);
    auto cut = lector::image::decodeImageBytes(bytes, "cut.ppm");
    LECTOR_CHECK(!cut.ok() && cut.error().code == "decode_failed" && cut.error().message.find("cut.ppm") == 0);
    const std::string deep = "P6 1 1 65535\n123456";
    bytes.assign(deep.begin(), deep.end());
    LECTOR_CHECK_EQ(lector::image::decodeImageBytes(bytes, "d.ppm").error().code, std::string("decode_failed"));
    const std::string huge = "P6 30000 30000 255\n";
    bytes.assign(huge.begin(), huge.end());
    LECTOR_CHECK_EQ(lector::image::decodeImageBytes(bytes, "h.ppm").error().code, std::string("image_too_large"));
}
