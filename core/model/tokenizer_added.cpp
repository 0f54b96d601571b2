// Added tokens ("added_tokens" of tokenizer.json): found in the text before anything else, so special
// tokens such as "<｜hy_User｜>" are never split by BPE. Matching is leftmost-longest over a byte trie
// (HF uses Aho-Corasick with LeftmostLongest), then single_word / lstrip / rstrip are applied as in
// HF's AddedVocabulary::find_matches.
#include <algorithm>

#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

// The code point that ends just before text[pos] (pos > 0) and where it starts.
char32_t codePointBefore(std::string_view text, size_t pos, size_t& begin)
{
    begin = pos - 1;
    while (begin > 0 && (static_cast<uint8_t>(text[begin]) & 0xC0) == 0x80) --begin;
    size_t i = begin;
    return nextCodePoint(text, i);
}

}  // namespace

void AddedTokenMatcher::insert(Trie& trie, std::string_view key, int32_t tokenIdx)
{
    if (key.empty()) return;
    if (trie.nodes.empty()) {
        trie.nodes.emplace_back();  // node 0: the root (its children live in trie.root)
        trie.root.fill(-1);
    }
    int32_t& first = trie.root[uint8_t(key[0])];
    if (first < 0) {
        first = int32_t(trie.nodes.size());
        trie.nodes.emplace_back();
    }
    int32_t cur = first;
    for (size_t k = 1; k < key.size(); ++k) {
        const auto byte = uint8_t(key[k]);
        auto& children = trie.nodes[cur].children;
        auto it = std::lower_bound(children.begin(), children.end(), byte,
                                   [](const std::pair<uint8_t, int32_t>& c, uint8_t b) { return c.first < b; });
        if (it != children.end() && it->first == byte) {
            cur = it->second;
            continue;
        }
        const int32_t node = int32_t(trie.nodes.size());
        children.insert(it, {byte, node});
        trie.nodes.emplace_back();  // may reallocate: `children` is not used after this
        cur = node;
    }
    if (trie.nodes[cur].token < 0) trie.nodes[cur].token = tokenIdx;
}

void AddedTokenMatcher::build(const std::vector<AddedToken>& tokens, const Normalizer& normalizer)
{
    m_tokens = tokens;
    m_raw = Trie{};
    m_normalized = Trie{};
    for (size_t k = 0; k < m_tokens.size(); ++k) {
        const auto& t = m_tokens[k];
        if (t.normalized) insert(m_normalized, normalizer.apply(t.content), int32_t(k));
        else insert(m_raw, t.content, int32_t(k));
    }
}

int32_t AddedTokenMatcher::longestAt(const Trie& trie, std::string_view text, size_t i, size_t& len) const
{
    int32_t cur = trie.root[uint8_t(text[i])];
    int32_t best = -1;
    size_t j = i + 1;
    while (cur >= 0) {
        if (trie.nodes[cur].token >= 0) best = trie.nodes[cur].token, len = j - i;
        if (j >= text.size()) break;
        const auto byte = uint8_t(text[j]);
        const auto& children = trie.nodes[cur].children;
        auto it = std::lower_bound(children.begin(), children.end(), byte,
                                   [](const std::pair<uint8_t, int32_t>& c, uint8_t b) { return c.first < b; });
        cur = it != children.end() && it->first == byte ? it->second : -1;
        ++j;
    }
    return best;
}

void AddedTokenMatcher::split(std::string_view text, bool normalizedSet, bool allowSpecial,
                              std::vector<Segment>& out) const
{
    const Trie& trie = normalizedSet ? m_normalized : m_raw;
    const size_t n = text.size();
    size_t startOffset = 0;  // end of the previous token: lstrip never reaches behind it
    size_t i = 0;
    while (!trie.empty() && i < n) {
        size_t len = 0;
        const int32_t t = longestAt(trie, text, i, len);
        if (t < 0) {
            ++i;
            continue;
        }
        const AddedToken& tok = m_tokens[t];
        size_t start = i, stop = i + len;
        if (tok.special && !allowSpecial) {  // stays text; like HF, the search resumes after it
            i = stop;
            continue;
        }
        if (tok.singleWord) {
            size_t before = 0, at = stop;
            const bool startOk = start == 0 || !isWordChar(codePointBefore(text, start, before));
            const bool stopOk = stop == n || !isWordChar(nextCodePoint(text, at));
            if (!startOk || !stopOk) {  // not a whole word here; HF resumes the search after it
                i = stop;
                continue;
            }
        }
        if (tok.lstrip) {
            size_t before = 0;
            while (start > startOffset && isWhitespace(codePointBefore(text, start, before))) start = before;
        }
        if (tok.rstrip) {
            while (stop < n) {
                size_t at = stop;
                if (!isWhitespace(nextCodePoint(text, at))) break;
                stop = at;
            }
        }
        if (startOffset < start) out.push_back({startOffset, start, -1});
        out.push_back({start, stop, tok.id});
        startOffset = i = stop;
    }
    if (startOffset < n) out.push_back({startOffset, n, -1});
}

}  // namespace lector::model::tokenizer_detail
