// The BPE model of tokenizer.json: vocab, merges (either "a b" strings or ["a","b"] pairs), optional
// ignore_merges / byte_fallback / unk_token, and a bounded cache of encoded words. The merge loop follows
// HF's Word::merge_all: always apply the lowest-ranked pair present, leftmost first, one pair at a time.
#include <cstdio>
#include <queue>

#include "core/model/tokenizer_impl.h"

namespace lector::model::tokenizer_detail {

namespace {

constexpr size_t kCacheMaxWords = 10000;   // HF's default cache capacity
constexpr size_t kCacheMaxWordBytes = 256;  // longer words are rare and not worth keeping

bool boolField(const nlohmann::json& j, const char* key)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

Result<BpeModel> BpeModel::parse(const nlohmann::json& model, TokenizerJson& raw, const std::string& file)
{
    if (!model.is_object()) return badFile(file, "\"model\" is missing");
    if (const auto t = model.find("type"); t != model.end() && (!t->is_string() || t->get<std::string>() != "BPE"))
        return unsupported(file, "model type '" + (t->is_string() ? t->get<std::string>() : t->dump()) +
                                     "' is not supported (only BPE)");
    if (!raw.hasVocab) {
        const auto vocab = model.find("vocab");
        if (vocab == model.end() || vocab->is_null()) return badFile(file, "model.vocab is missing");
        return badFile(file, "model.vocab is not an object of token -> id");
    }
    if (!raw.badVocabKey.empty())
        return badFile(file, "model.vocab entry '" + raw.badVocabKey + "' has no valid integer id");
    if (!raw.hasMerges) {
        const auto merges = model.find("merges");
        if (merges == model.end() || merges->is_null()) return badFile(file, "model.merges is missing");
        return badFile(file, "model.merges is not an array");
    }
    if (raw.badMergeIndex >= 0)
        return badFile(file, "model.merges[" + std::to_string(raw.badMergeIndex) + "] is neither \"a b\" nor [\"a\", \"b\"]");
    if (const auto d = model.find("dropout"); d != model.end() && d->is_number() && d->get<double>() > 0.0)
        return unsupported(file, "model.dropout > 0 is not supported (it makes encoding random)");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const auto it = model.find(key);
        if (it != model.end() && it->is_string() && !it->get<std::string>().empty())
            return unsupported(file, std::string("model.") + key + " is not supported");
    }

    BpeModel m;
    m.m_vocab.reserve(raw.vocab.size());
    for (auto& [token, id] : raw.vocab) m.m_vocab.insert_or_assign(std::move(token), id);
    raw.vocab.clear();
    for (unsigned b = 0; b < 256; ++b) {
        std::string ch;
        utf8::append(ch, byteToCodePoint(uint8_t(b)));
        const auto it = m.m_vocab.find(ch);
        m.m_byteIds[b] = it == m.m_vocab.end() ? -1 : it->second;
    }
    if (const auto u = model.find("unk_token"); u != model.end() && u->is_string()) {
        const auto it = m.m_vocab.find(u->get<std::string>());
        if (it != m.m_vocab.end()) m.m_unkId = it->second;
    }
    m.m_fuseUnk = boolField(model, "fuse_unk");
    m.m_byteFallback = boolField(model, "byte_fallback");
    m.m_ignoreMerges = boolField(model, "ignore_merges");
    auto r = m.parseMerges(raw.merges, file);
    raw.merges.clear();
    if (!r) return r.error();
    return m;
}

Result<void> BpeModel::parseMerges(std::vector<RawMerge>& merges, const std::string& file)
{
    m_merges.reserve(merges.size());
    std::string left, right;
    for (size_t k = 0; k < merges.size(); ++k) {
        auto where = [k] { return "model.merges[" + std::to_string(k) + "]"; };
        RawMerge& e = merges[k];
        if (e.isString) {  // "a b" (older files)
            const std::string& s = e.left;
            const size_t sp = s.find(' ');
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
                return badFile(file, where() + " '" + s + "' is not two tokens separated by one space");
            left.assign(s, 0, sp);
            right.assign(s, sp + 1);
        } else {  // ["a", "b"]
            left.swap(e.left);
            right.swap(e.right);
        }
        const auto a = m_vocab.find(left);
        const auto b = m_vocab.find(right);
        if (a == m_vocab.end() || b == m_vocab.end())
            return badFile(file, where() + " uses token '" + (a == m_vocab.end() ? left : right) + "' that is not in model.vocab");
        left += right;
        const auto merged = m_vocab.find(left);
        if (merged == m_vocab.end()) return badFile(file, where() + " makes token '" + left + "' that is not in model.vocab");
        // Later duplicates win, as in HF (its HashMap is filled in file order).
        m_merges[pairKey(a->second, b->second)] = Merge{int32_t(k), merged->second};
    }
    return {};
}

void BpeModel::initialSymbols(std::string_view word, bool byteLevel, std::vector<int32_t>& ids,
                              std::vector<uint32_t>& lens) const
{
    bool lastWasUnk = false;
    auto unknown = [&](std::string_view ch) {
        if (m_byteFallback) {
            std::vector<int32_t> fallback;
            for (char c : ch) {
                char name[8];
                std::snprintf(name, sizeof(name), "<0x%02X>", unsigned(uint8_t(c)));
                const auto it = m_vocab.find(std::string_view(name));
                if (it == m_vocab.end()) break;
                fallback.push_back(it->second);
            }
            if (fallback.size() == ch.size()) {
                for (int32_t id : fallback) ids.push_back(id), lens.push_back(1);
                lastWasUnk = false;
                return;
            }
        }
        if (m_unkId < 0) return;  // no unk token: the character is dropped, as HF does
        if (m_fuseUnk && lastWasUnk) {
            lens.back() += uint32_t(ch.size());
        } else {
            ids.push_back(m_unkId);
            lens.push_back(uint32_t(ch.size()));
        }
        lastWasUnk = true;
    };
    if (byteLevel) {
        for (char c : word) {
            const int32_t id = m_byteIds[uint8_t(c)];
            if (id >= 0) {
                ids.push_back(id), lens.push_back(1), lastWasUnk = false;
            } else {
                std::string ch;
                utf8::append(ch, byteToCodePoint(uint8_t(c)));
                unknown(ch);
            }
        }
        return;
    }
    size_t i = 0;
    while (i < word.size()) {
        const size_t begin = i;
        nextCodePoint(word, i);
        const std::string_view ch = word.substr(begin, i - begin);
        const auto it = m_vocab.find(ch);
        if (it != m_vocab.end()) {
            ids.push_back(it->second), lens.push_back(uint32_t(ch.size())), lastWasUnk = false;
        } else {
            unknown(ch);
        }
    }
}

void BpeModel::mergeAll(std::vector<int32_t>& ids, std::vector<uint32_t>& lens) const
{
    const int32_t n = int32_t(ids.size());
    if (n < 2) return;
    std::vector<int32_t> prev(n), next(n);
    for (int32_t k = 0; k < n; ++k) prev[k] = k - 1, next[k] = k + 1 < n ? k + 1 : -1;

    struct Candidate {
        int32_t rank;
        int32_t pos;
        int32_t newId;
        bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate> queue;  // top = lowest rank, then leftmost
    auto consider = [&](int32_t pos) {
        if (pos < 0 || next[pos] < 0) return;
        const auto it = m_merges.find(pairKey(ids[pos], ids[next[pos]]));
        if (it != m_merges.end()) queue.push({it->second.rank, pos, it->second.newId});
    };
    for (int32_t k = 0; k + 1 < n; ++k) consider(k);

    while (!queue.empty()) {
        const Candidate top = queue.top();
        queue.pop();
        if (lens[top.pos] == 0 || next[top.pos] < 0) continue;  // merged away, or now last
        const int32_t right = next[top.pos];
        // Stale entry: the pair at this position changed since it was queued.
        const auto it = m_merges.find(pairKey(ids[top.pos], ids[right]));
        if (it == m_merges.end() || it->second.newId != top.newId) continue;
        ids[top.pos] = top.newId;
        lens[top.pos] += lens[right];
        lens[right] = 0;
        next[top.pos] = next[right];
        if (next[right] >= 0) prev[next[right]] = top.pos;
        consider(prev[top.pos]);
        consider(top.pos);
    }
    size_t w = 0;
    for (size_t k = 0; k < ids.size(); ++k)
        if (lens[k] != 0) ids[w++] = ids[k];
    ids.resize(w);
}

void BpeModel::encodeWord(std::string_view word, bool byteLevel, std::vector<int32_t>& out) const
{
    if (word.empty()) return;
    if (m_ignoreMerges) {
        const auto it = byteLevel ? m_vocab.find(byteLevelEncode(word)) : m_vocab.find(word);
        if (it != m_vocab.end()) {
            out.push_back(it->second);
            return;
        }
    }
    const bool cacheable = word.size() <= kCacheMaxWordBytes;
    if (cacheable) {
        std::lock_guard lock(m_cache->mutex);
        const auto it = m_cache->words.find(word);
        if (it != m_cache->words.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> ids;
    std::vector<uint32_t> lens;
    ids.reserve(word.size());
    lens.reserve(word.size());
    initialSymbols(word, byteLevel, ids, lens);
    mergeAll(ids, lens);
    out.insert(out.end(), ids.begin(), ids.end());
    if (cacheable) {
        std::lock_guard lock(m_cache->mutex);
        if (m_cache->words.size() < kCacheMaxWords) m_cache->words.emplace(std::string(word), std::move(ids));
    }
}

}  // namespace lector::model::tokenizer_detail
