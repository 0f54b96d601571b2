// Decoding: ids -> bytes (the ByteLevel decoder's table, added tokens as their content) -> UTF-8 text.
// Invalid or unfinished byte sequences become U+FFFD exactly where Rust's from_utf8_lossy puts them.
#include "core/model/tokenizer_impl.h"

namespace lector::model {

using namespace tokenizer_detail;

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skipSpecialTokens) const
{
    std::string bytes;
    for (int32_t id : ids) m_impl->appendBytes(id, skipSpecialTokens, bytes);
    std::string text;
    utf8::appendLossy(bytes, /*final=*/true, text);
    return text;
}

}  // namespace lector::model
