// GPT-2's bytes_to_unicode table: every byte is written as a printable character inside byte-level
// vocab entries. Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the
// other 68 bytes get U+0100, U+0101, ... in byte order (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

constexpr bool isSelfMapped(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct ByteTables {
    std::array<char32_t, 256> toCodePoint{};
    std::array<int16_t, 0x144> toByte{};  // the table's code points are all below U+0144
    std::array<std::string, 256> utf8;    // toCodePoint as UTF-8
    ByteTables()
    {
        toByte.fill(-1);
        char32_t next = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            const char32_t cp = isSelfMapped(b) ? char32_t(b) : next++;
            toCodePoint[b] = cp;
            toByte[cp] = static_cast<int16_t>(b);
            lector::utf8::append(utf8[b], cp);  // the namespace, not the member
        }
    }
};

const ByteTables& tables()
{
    static const ByteTables t;
    return t;
}

}  // namespace

char32_t byteToCodePoint(uint8_t b) { return tables().toCodePoint[b]; }

int codePointToByte(char32_t cp)
{
    const auto& t = tables();
    return cp < t.toByte.size() ? t.toByte[cp] : -1;
}

std::string byteLevelEncode(std::string_view bytes)
{
    const auto& t = tables();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (char c : bytes) out += t.utf8[static_cast<uint8_t>(c)];
    return out;
}

bool byteLevelDecode(std::string_view token, std::string& out)
{
    const size_t mark = out.size();
    size_t i = 0;
    while (i < token.size()) {
        const int b = validSequenceLength(token, i) == 0 ? -1 : codePointToByte(nextCodePoint(token, i));
        if (b < 0) {
            out.resize(mark);
            return false;
        }
        out += static_cast<char>(b);
    }
    return true;
}

}  // namespace lector::model::tokenizer_detail
