// UTF-8 validation, decoding, encoding and repair (utf8.h).
#include "core/common/utf8.h"

#include <cstdint>

namespace lector::utf8 {
namespace {

// Bytes of the valid prefix of the sequence at s[i] (0 for a byte that cannot start one) and whether
// that prefix is a whole character. The second byte's range is the lead byte's row of Table 3-7.
std::size_t validPrefix(std::string_view s, std::size_t i, bool& complete)
{
    complete = false;
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
        complete = true;
        return 1;
    }
    std::size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
    } else if (b0 == 0xE0) {
        need = 2, lo = 0xA0;
    } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
        need = 2;
    } else if (b0 == 0xED) {
        need = 2, hi = 0x9F;
    } else if (b0 == 0xF0) {
        need = 3, lo = 0x90;
    } else if (b0 >= 0xF1 && b0 <= 0xF3) {
        need = 3;
    } else if (b0 == 0xF4) {
        need = 3, hi = 0x8F;
    } else {
        return 0;
    }
    std::size_t k = 1;
    for (; k <= need && i + k < s.size(); ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return k;
    }
    complete = k == need + 1;
    return k;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::size_t validSequenceLength(std::string_view s, std::size_t i)
{
    bool complete = false;
    const std::size_t k = validPrefix(s, i, complete);
    return complete ? k : 0;
}

char32_t nextCodePoint(std::string_view s, std::size_t& i)
{
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    const std::size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
    char32_t cp = b0 & (0x7F >> len);
    for (std::size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    i += len;
    return cp;
}

void append(std::string& out, char32_t cp)
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

std::size_t appendLossy(std::string_view bytes, bool final, std::string& out)
{
    std::size_t i = 0;
    const std::size_t n = bytes.size();
    out.reserve(out.size() + n);
    while (i < n) {
        // ASCII runs are the common case.
        std::size_t j = i;
        while (j < n && static_cast<uint8_t>(bytes[j]) < 0x80) ++j;
        out.append(bytes.data() + i, j - i);
        i = j;
        if (i >= n) break;
        bool complete = false;
        const std::size_t k = validPrefix(bytes, i, complete);
        if (complete) {
            out.append(bytes.data() + i, k);
            i += k;
        } else if (k > 0 && i + k == n && !final) {
            break;  // may still be completed by the next bytes
        } else {
            out.append(kReplacement);
            i += k > 0 ? k : 1;
        }
    }
    return i;
}

std::string sanitize(std::string_view s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t k = validSequenceLength(s, i);
        if (k == 0) break;
        i += k;
    }
    if (i == s.size()) return std::string(s);
    std::string out(s.substr(0, i));
    appendLossy(s.substr(i), true, out);
    return out;
}

}  // namespace lector::utf8
