#include "core/image/exif.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace lector::image {
namespace {

using Bytes = std::span<const std::uint8_t>;

std::uint32_t be16(const std::uint8_t* p) { return (std::uint32_t(p[0]) << 8) | p[1]; }
std::uint32_t be32(const std::uint8_t* p) { return (be16(p) << 16) | be16(p + 2); }
std::uint32_t le16(const std::uint8_t* p) { return (std::uint32_t(p[1]) << 8) | p[0]; }
std::uint32_t le32(const std::uint8_t* p) { return (le16(p + 2) << 16) | le16(p); }
std::uint32_t le24(const std::uint8_t* p) { return (std::uint32_t(p[2]) << 16) | le16(p); }

bool startsWith(Bytes b, size_t at, const char* text)
{
    const size_t n = std::strlen(text);
    return b.size() >= at + n && std::memcmp(b.data() + at, text, n) == 0;
}

// A classic (42) or BigTIFF (43) structure in either byte order. All reads are bounds-checked and
// return 0 past the end, which the callers treat as "tag absent".
class TiffReader {
public:
    explicit TiffReader(Bytes b) : m_b(b)
    {
        if (startsWith(b, 0, "II")) m_little = true;
        else if (startsWith(b, 0, "MM")) m_little = false;
        else return;
        const std::uint64_t version = u16(2);
        if (version == 42) {
            m_big = false;
            m_ifd0 = u32(4);
            m_valid = true;
        } else if (version == 43 && u16(4) == 8) {
            m_big = true;
            m_ifd0 = u64(8);
            m_valid = true;
        }
    }

    bool valid() const { return m_valid; }

    struct Entry {
        std::uint64_t type = 0;
        std::uint64_t valueAt = 0;  // offset of the inline value (one value fits inline)
    };

    // The IFD0 entry of a tag, or nullopt.
    std::optional<Entry> entryIfd0(std::uint16_t wanted) const
    {
        if (!m_valid) return std::nullopt;
        const std::uint64_t entrySize = m_big ? 20 : 12;
        const std::uint64_t countSize = m_big ? 8 : 2;
        if (m_ifd0 + countSize > m_b.size()) return std::nullopt;
        const std::uint64_t count = m_big ? u64(m_ifd0) : u16(m_ifd0);
        for (std::uint64_t i = 0; i < count && i < 4096; ++i) {
            const std::uint64_t e = m_ifd0 + countSize + i * entrySize;
            if (e + entrySize > m_b.size()) return std::nullopt;
            if (u16(e) == wanted) return Entry{u16(e + 2), e + (m_big ? 12 : 8)};
        }
        return std::nullopt;
    }

    // First value of a SHORT or LONG tag in IFD0, or nullopt.
    std::optional<std::uint64_t> tagIfd0(std::uint16_t wanted) const
    {
        const auto e = entryIfd0(wanted);
        if (!e) return std::nullopt;
        if (e->type == 3) return u16(e->valueAt);               // SHORT
        if (e->type == 4) return u32(e->valueAt);               // LONG
        if (e->type == 16 && m_big) return u64(e->valueAt);     // LONG8
        return std::nullopt;
    }

    bool littleEndian() const { return m_little; }

private:
    std::uint64_t u16(std::uint64_t at) const
    {
        if (at + 2 > m_b.size()) return 0;
        return m_little ? le16(m_b.data() + at) : be16(m_b.data() + at);
    }
    std::uint64_t u32(std::uint64_t at) const
    {
        if (at + 4 > m_b.size()) return 0;
        return m_little ? le32(m_b.data() + at) : be32(m_b.data() + at);
    }
    std::uint64_t u64(std::uint64_t at) const
    {
        const std::uint64_t lo = u32(at + (m_little ? 0 : 4));
        const std::uint64_t hi = u32(at + (m_little ? 4 : 0));
        return lo | (hi << 32);
    }

    Bytes m_b;
    bool m_little = true;
    bool m_big = false;
    bool m_valid = false;
    std::uint64_t m_ifd0 = 0;
};

// --- JPEG segments ---

struct JpegSegment {
    std::uint8_t marker = 0;
    Bytes payload;  // after the 2-byte length
};

// Walks the marker segments before the first scan; calls fn(segment) until it returns true.
template <class Fn>
void forEachJpegHeaderSegment(Bytes b, Fn fn)
{
    if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return;
    size_t i = 2;
    while (i + 4 <= b.size()) {
        if (b[i] != 0xFF) return;
        while (i < b.size() && b[i] == 0xFF) ++i;  // fill bytes
        if (i >= b.size()) return;
        const std::uint8_t marker = b[i++];
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        if (marker == 0xD9 || marker == 0xDA || i + 2 > b.size()) return;
        const size_t len = be16(b.data() + i);
        if (len < 2 || i + len > b.size()) return;
        if (fn(JpegSegment{marker, b.subspan(i + 2, len - 2)})) return;
        i += len;
    }
}

// --- PNG chunks ---

template <class Fn>
void forEachPngChunk(Bytes b, Fn fn)
{
    size_t i = 8;
    while (i + 12 <= b.size()) {
        const std::uint64_t len = be32(b.data() + i);
        if (i + 12 + len > b.size()) return;
        const std::string_view type(reinterpret_cast<const char*>(b.data() + i + 4), 4);
        if (fn(type, b.subspan(i + 8, len))) return;
        if (type == "IEND") return;
        i += 12 + len;
    }
}

// --- RIFF (WebP) chunks ---

template <class Fn>
void forEachWebPChunk(Bytes b, Fn fn)
{
    size_t i = 12;
    while (i + 8 <= b.size()) {
        const std::uint64_t len = le32(b.data() + i + 4);
        const std::string_view type(reinterpret_cast<const char*>(b.data() + i), 4);
        const std::uint64_t avail = std::min<std::uint64_t>(len, b.size() - (i + 8));
        if (fn(type, b.subspan(i + 8, avail), len)) return;
        i += 8 + len + (len & 1);
    }
}

std::optional<HeaderSize> jpegSize(Bytes b)
{
    std::optional<HeaderSize> size;
    forEachJpegHeaderSegment(b, [&](const JpegSegment& s) {
        const bool sof = s.marker >= 0xC0 && s.marker <= 0xCF && s.marker != 0xC4 && s.marker != 0xC8 &&
                         s.marker != 0xCC;
        if (!sof) return false;
        if (s.payload.size() >= 5)
            size = HeaderSize{be16(s.payload.data() + 3), be16(s.payload.data() + 1)};
        return true;
    });
    return size;
}

std::optional<HeaderSize> pngSize(Bytes b)
{
    if (b.size() < 24 || !startsWith(b, 12, "IHDR")) return std::nullopt;
    return HeaderSize{be32(b.data() + 16), be32(b.data() + 20)};
}

std::optional<HeaderSize> bmpSize(Bytes b)
{
    if (b.size() < 26) return std::nullopt;
    const std::uint32_t dibSize = le32(b.data() + 14);
    if (dibSize == 12) return HeaderSize{le16(b.data() + 18), le16(b.data() + 20)};
    const auto w = static_cast<std::int32_t>(le32(b.data() + 18));
    const auto h = static_cast<std::int32_t>(le32(b.data() + 22));
    return HeaderSize{std::abs(std::int64_t(w)), std::abs(std::int64_t(h))};
}

std::optional<HeaderSize> webpSize(Bytes b)
{
    std::optional<HeaderSize> size;
    forEachWebPChunk(b, [&](std::string_view type, Bytes d, std::uint64_t) {
        if (type == "VP8X" && d.size() >= 10) {
            size = HeaderSize{std::int64_t(le24(d.data() + 4)) + 1, std::int64_t(le24(d.data() + 7)) + 1};
        } else if (type == "VP8L" && d.size() >= 5 && d[0] == 0x2F) {
            const std::uint32_t v = le32(d.data() + 1);
            size = HeaderSize{std::int64_t(v & 0x3FFF) + 1, std::int64_t((v >> 14) & 0x3FFF) + 1};
        } else if (type == "VP8 " && d.size() >= 10 && d[3] == 0x9D && d[4] == 0x01 && d[5] == 0x2A) {
            size = HeaderSize{le16(d.data() + 6) & 0x3FFF, le16(d.data() + 8) & 0x3FFF};
        } else {
            return false;
        }
        return true;
    });
    return size;
}

std::optional<HeaderSize> tiffSize(Bytes b)
{
    const TiffReader t(b);
    const auto w = t.tagIfd0(256);
    const auto h = t.tagIfd0(257);
    if (!w || !h) return std::nullopt;
    return HeaderSize{static_cast<std::int64_t>(*w), static_cast<std::int64_t>(*h)};
}

}  // namespace

const char* formatName(ImageFormat format)
{
    switch (format) {
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::WebP: return "WebP";
    case ImageFormat::Tiff: return "TIFF";
    case ImageFormat::Unknown: break;
    }
    return "unknown";
}

ImageFormat sniffFormat(Bytes b)
{
    if (b.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return ImageFormat::Jpeg;
    if (startsWith(b, 0, "\x89PNG\r\n\x1a\n")) return ImageFormat::Png;
    if (startsWith(b, 0, "BM") && b.size() >= 18) return ImageFormat::Bmp;
    if (startsWith(b, 0, "RIFF") && startsWith(b, 8, "WEBP")) return ImageFormat::WebP;
    if (b.size() >= 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                          (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43))))
        return ImageFormat::Tiff;
    return ImageFormat::Unknown;
}

std::optional<HeaderSize> readHeaderSize(ImageFormat format, Bytes bytes)
{
    switch (format) {
    case ImageFormat::Jpeg: return jpegSize(bytes);
    case ImageFormat::Png: return pngSize(bytes);
    case ImageFormat::Bmp: return bmpSize(bytes);
    case ImageFormat::WebP: return webpSize(bytes);
    case ImageFormat::Tiff: return tiffSize(bytes);
    case ImageFormat::Unknown: break;
    }
    return std::nullopt;
}

int orientationFromTiffBlock(Bytes tiff)
{
    if (tiff.size() >= 6 && std::memcmp(tiff.data(), "Exif\0\0", 6) == 0) tiff = tiff.subspan(6);
    const auto v = TiffReader(tiff).tagIfd0(274);
    if (!v || *v < 1 || *v > 8) return 1;
    return static_cast<int>(*v);
}

int readOrientation(ImageFormat format, Bytes b)
{
    int orientation = 1;
    switch (format) {
    case ImageFormat::Jpeg:
        forEachJpegHeaderSegment(b, [&](const JpegSegment& s) {
            const Bytes p = s.payload;
            if (s.marker != 0xE1 || p.size() < 14 || std::memcmp(p.data(), "Exif\0\0", 6) != 0) return false;
            orientation = orientationFromTiffBlock(p.subspan(6));
            return true;
        });
        break;
    case ImageFormat::Png:
        forEachPngChunk(b, [&](std::string_view type, Bytes d) {
            if (type != "eXIf") return false;
            orientation = orientationFromTiffBlock(d);
            return true;
        });
        break;
    case ImageFormat::WebP:
        forEachWebPChunk(b, [&](std::string_view type, Bytes d, std::uint64_t) {
            if (type != "EXIF") return false;
            orientation = orientationFromTiffBlock(d);
            return true;
        });
        break;
    case ImageFormat::Tiff: orientation = orientationFromTiffBlock(b); break;
    case ImageFormat::Bmp:
    case ImageFormat::Unknown: break;
    }
    return orientation;
}

bool resetTiffOrientation(std::vector<std::uint8_t>& tiff)
{
    const TiffReader reader(tiff);
    const auto e = reader.entryIfd0(274);
    if (!e || e->type != 3 || e->valueAt + 2 > tiff.size()) return false;
    const bool little = reader.littleEndian();
    tiff[e->valueAt] = little ? 1 : 0;
    tiff[e->valueAt + 1] = little ? 0 : 1;
    return true;
}

bool pngHasEnd(Bytes b)
{
    constexpr size_t kSignature = 8, kChunkOverhead = 12;  // length, type, CRC
    for (size_t i = kSignature; i + kChunkOverhead <= b.size();) {
        const size_t len = be32(b.data() + i);
        if (len > b.size() - i - kChunkOverhead) return false;  // this chunk runs past the end
        if (std::memcmp(b.data() + i + 4, "IEND", 4) == 0) return true;
        i += kChunkOverhead + len;
    }
    return false;
}

bool jpegHasEndOfImage(Bytes b)
{
    if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return false;
    const std::uint8_t* data = b.data();
    const size_t n = b.size();
    size_t i = 2;
    while (i < n) {
        if (data[i] != 0xFF) {
            // Stray bytes between segments: libjpeg skips them with a warning, so do we.
            const void* next = std::memchr(data + i, 0xFF, n - i);
            if (!next) return false;
            i = static_cast<size_t>(static_cast<const std::uint8_t*>(next) - data);
        }
        while (i < n && data[i] == 0xFF) ++i;
        if (i >= n) return false;
        const std::uint8_t marker = data[i++];
        if (marker == 0xD9) return true;
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
        if (i + 2 > n) return false;
        const size_t len = be16(data + i);
        if (len < 2 || i + len > n) return false;
        i += len;
        if (marker != 0xDA) continue;
        // Entropy-coded data: runs until a marker other than a stuffed 0xFF00 or a restart marker.
        for (;;) {
            const void* ff = std::memchr(data + i, 0xFF, n - i);
            if (!ff) return false;
            i = static_cast<size_t>(static_cast<const std::uint8_t*>(ff) - data);
            if (i + 1 >= n) return false;
            const std::uint8_t next = data[i + 1];
            if (next == 0x00 || (next >= 0xD0 && next <= 0xD7)) {
                i += 2;
                continue;
            }
            if (next == 0xFF) {
                ++i;
                continue;
            }
            break;  // a real marker: back to the segment loop
        }
    }
    return false;
}

}  // namespace lector::image
