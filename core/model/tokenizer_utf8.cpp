// UTF-8 helpers of the tokenizer: validation, lossy decoding with the "maximal subpart" rule of
// Rust's from_utf8_lossy (so our text equals Hugging Face's byte for byte), code point iteration and
// the two character classes the added-token rules need.
#include <utf8proc.h>

#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

// Bytes of the valid prefix of the sequence at s[i] (0 for a byte that cannot start one) and whether
// that prefix is a whole character. Ranges follow Unicode Table 3-7 (no overlongs, no surrogates).
size_t validPrefix(std::string_view s, size_t i, bool& complete)
{
    complete = false;
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
        complete = true;
        return 1;
    }
    size_t need = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
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
    size_t k = 1;
    for (; k <= need && i + k < s.size(); ++k) {
        const auto b = static_cast<uint8_t>(s[i + k]);
        const uint8_t l = k == 1 ? lo : 0x80;
        const uint8_t h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) return k;
    }
    complete = k == need + 1;
    return k;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

size_t validSequenceLength(std::string_view s, size_t i)
{
    bool complete = false;
    const size_t k = validPrefix(s, i, complete);
    return complete ? k : 0;
}

size_t appendUtf8Lossy(std::string_view bytes, bool final, std::string& out)
{
    size_t i = 0;
    const size_t n = bytes.size();
    out.reserve(out.size() + n);
    while (i < n) {
        // ASCII runs are the common case.
        size_t j = i;
        while (j < n && static_cast<uint8_t>(bytes[j]) < 0x80) ++j;
        out.append(bytes.data() + i, j - i);
        i = j;
        if (i >= n) break;
        bool complete = false;
        const size_t k = validPrefix(bytes, i, complete);
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

std::string sanitizeUtf8(std::string_view s)
{
    size_t i = 0;
    while (i < s.size()) {
        const size_t k = validSequenceLength(s, i);
        if (k == 0) break;
        i += k;
    }
    if (i == s.size()) return std::string(s);
    std::string out(s.substr(0, i));
    appendUtf8Lossy(s.substr(i), true, out);
    return out;
}

char32_t nextCodePoint(std::string_view s, size_t& i)
{
    const auto b0 = static_cast<uint8_t>(s[i]);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    const size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
    char32_t cp = b0 & (0x7F >> len);
    for (size_t k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    i += len;
    return cp;
}

void appendUtf8(char32_t cp, std::string& out)
{
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

bool isWhitespace(char32_t cp)
{
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool isWordChar(char32_t cp)
{
    if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
    if (cp == 0x200C || cp == 0x200D) return true;  // Join_Control
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

}  // namespace lector::model::tokenizer_detail
