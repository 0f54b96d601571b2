#include "core/doc/text_util.h"

#include <charconv>
#include <cmath>

namespace lector::doc {
namespace {

constexpr char32_t kEscapeBase = 0xDC00;  // + byte value (0x80..0xFF) for undecodable bytes

}  // namespace

std::u32string decodeUtf8Lossless(std::string_view s)
{
    std::u32string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        if (utf8::validSequenceLength(s, i) == 0) {
            out += kEscapeBase + static_cast<unsigned char>(s[i]);
            ++i;
        } else {
            out += utf8::nextCodePoint(s, i);
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
        else utf8::append(out, cp);
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
