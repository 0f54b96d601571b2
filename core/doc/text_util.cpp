#include "core/doc/text_util.h"

#include <charconv>
#include <cmath>

namespace lector::doc {
namespace {

constexpr char32_t kEscapeBase = 0xDC00;  // + byte value (0x80..0xFF) for undecodable bytes

// Length of the valid UTF-8 sequence starting at s[i] and its code point; 0 when invalid.
std::size_t decodeOne(std::string_view s, std::size_t i, char32_t& cp)
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    std::size_t len = 0;
    char32_t minCp = 0;
    if ((b0 & 0xE0) == 0xC0) {
        len = 2;
        cp = b0 & 0x1F;
        minCp = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        len = 3;
        cp = b0 & 0x0F;
        minCp = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        len = 4;
        cp = b0 & 0x07;
        minCp = 0x10000;
    } else {
        return 0;
    }
    if (i + len > s.size()) return 0;
    for (std::size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not valid UTF-8.
    if (cp < minCp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

}  // namespace

void appendUtf8(std::string& out, char32_t cp)
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::u32string decodeUtf8Lossless(std::string_view s)
{
    std::u32string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        char32_t cp = 0;
        const std::size_t len = decodeOne(s, i, cp);
        if (len == 0) {
            out += kEscapeBase + static_cast<unsigned char>(s[i]);
            ++i;
        } else {
            out += cp;
            i += len;
        }
    }
    return out;
}

std::string encodeUtf8Lossless(std::u32string_view s)
{
    std::string out;
    out.reserve(s.size());
    for (char32_t cp : s) {
        if (cp >= kEscapeBase + 0x80 && cp <= kEscapeBase + 0xFF) out += static_cast<char>(cp - kEscapeBase);
        else appendUtf8(out, cp);
    }
    return out;
}

std::string sanitizeUtf8(std::string_view s)
{
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        char32_t cp = 0;
        const std::size_t len = decodeOne(s, i, cp);
        if (len == 0) {
            appendUtf8(out, 0xFFFD);
            ++i;
        } else {
            out.append(s.substr(i, len));
            i += len;
        }
    }
    return out;
}

std::string_view trimText(std::string_view s)
{
    auto startsWithSpace = [](std::string_view t) -> std::size_t {
        if (t.empty()) return 0;
        const auto c = static_cast<unsigned char>(t[0]);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') return 1;
        if (t.substr(0, 2) == "\xC2\xA0") return 2;
        if (t.substr(0, 3) == "\xE3\x80\x80") return 3;
        return 0;
    };
    auto endsWithSpace = [](std::string_view t) -> std::size_t {
        if (t.empty()) return 0;
        const auto c = static_cast<unsigned char>(t.back());
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') return 1;
        if (t.size() >= 2 && t.substr(t.size() - 2) == "\xC2\xA0") return 2;
        if (t.size() >= 3 && t.substr(t.size() - 3) == "\xE3\x80\x80") return 3;
        return 0;
    };
    while (std::size_t n = startsWithSpace(s)) s.remove_prefix(n);
    while (std::size_t n = endsWithSpace(s)) s.remove_suffix(n);
    return s;
}

std::string asciiLower(std::string_view s)
{
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

bool isAsciiAlnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

std::string formatNumber(double v)
{
    if (!std::isfinite(v)) return "0";
    if (v == 0) return "0";  // also turns -0 into 0
    char buf[512];  // fixed notation of the largest double has 309 digits
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    return std::string(buf, res.ptr);
}

double roundTo(double v, int decimals)
{
    if (!std::isfinite(v)) return 0;
    const double scale = std::pow(10.0, decimals);
    return std::round(v * scale) / scale;
}

}  // namespace lector::doc
