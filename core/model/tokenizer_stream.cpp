// StreamingDecoder: the same bytes and the same lossy UTF-8 rule as Tokenizer::decode, applied as ids
// arrive; only a trailing sequence that may still be completed is held back, so the streamed pieces
// always add up to the whole decode.
#include "core/model/tokenizer_impl.h"

namespace lector::model {

using namespace tokenizer_detail;

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens)
    : m_impl(tokenizer.m_impl), m_skipSpecialTokens(skipSpecialTokens)
{
}

std::string StreamingDecoder::push(int32_t id)
{
    m_impl->appendBytes(id, m_skipSpecialTokens, m_pending);
    std::string text;
    const size_t used = utf8::appendLossy(m_pending, /*final=*/false, text);
    m_pending.erase(0, used);
    return text;
}

std::string StreamingDecoder::finish()
{
    std::string text;
    utf8::appendLossy(m_pending, /*final=*/true, text);
    m_pending.clear();
    return text;
}

void StreamingDecoder::reset() { m_pending.clear(); }

}  // namespace lector::model
