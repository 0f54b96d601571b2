// Tokenizer::load (reads tokenizer.json and builds the tables), encode (added tokens -> normalizer ->
// added tokens in normalized text -> pre-tokenizer -> BPE, the order of HF's TokenizerImpl) and the
// id/token lookups. The parts live in tokenizer_*.cpp; see tokenizer_impl.h.
#include <fstream>

#include "core/model/tokenizer_impl.h"

namespace lector::model {

using namespace tokenizer_detail;

namespace tokenizer_detail {

Error badFile(const std::string& file, const std::string& what) { return makeError("bad_tokenizer", file + ": " + what); }
Error unsupported(const std::string& file, const std::string& what)
{
    return makeError("unsupported_tokenizer", file + ": " + what);
}

}  // namespace tokenizer_detail

namespace {

Result<std::string> readFile(const std::filesystem::path& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return makeError("file_not_found", path.string() + ": no such file");
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return makeError("read_failed", path.string() + ": cannot open for reading");
    const std::streamoff size = in.tellg();
    if (size < 0) return makeError("read_failed", path.string() + ": cannot tell its size");
    std::string text(size_t(size), '\0');
    in.seekg(0);
    if (!in.read(text.data(), size)) return makeError("read_failed", path.string() + ": read error");
    return text;
}

Result<std::vector<AddedToken>> parseAddedTokens(const nlohmann::json& root, const std::string& file)
{
    std::vector<AddedToken> tokens;
    const auto it = root.find("added_tokens");
    if (it == root.end() || it->is_null()) return tokens;
    if (!it->is_array()) return badFile(file, "\"added_tokens\" is not an array");
    for (size_t k = 0; k < it->size(); ++k) {
        const auto& e = (*it)[k];
        const auto id = e.is_object() ? e.find("id") : e.end();
        const auto content = e.is_object() ? e.find("content") : e.end();
        if (!e.is_object() || id == e.end() || !id->is_number_integer() || id->get<int64_t>() < 0 ||
            id->get<int64_t>() > INT32_MAX || content == e.end() || !content->is_string())
            return badFile(file, "added_tokens[" + std::to_string(k) + "] needs an integer \"id\" and a \"content\" string");
        auto flag = [&](const char* key, bool fallback) {
            const auto f = e.find(key);
            return f != e.end() && f->is_boolean() ? f->get<bool>() : fallback;
        };
        AddedToken t;
        t.id = id->get<int32_t>();
        t.content = content->get<std::string>();
        t.special = flag("special", false);
        t.singleWord = flag("single_word", false);
        t.lstrip = flag("lstrip", false);
        t.rstrip = flag("rstrip", false);
        t.normalized = flag("normalized", !t.special);
        tokens.push_back(std::move(t));
    }
    return tokens;
}

Result<void> checkDecoder(const nlohmann::json& root, const std::string& file)
{
    const auto it = root.find("decoder");
    if (it == root.end() || it->is_null())
        return unsupported(file, "\"decoder\" is missing (only the ByteLevel decoder is supported)");
    const std::string type = it->is_object() && it->contains("type") && (*it)["type"].is_string()
                                 ? (*it)["type"].get<std::string>()
                                 : std::string("?");
    if (type != "ByteLevel") return unsupported(file, "decoder type '" + type + "' is not supported (only ByteLevel)");
    return {};
}

// id -> token string, decoded bytes and flags, for the model vocab and the added tokens.
void buildIdTables(Tokenizer::Impl& d)
{
    int64_t maxId = -1;
    for (const auto& [tok, id] : d.bpe.vocab()) maxId = std::max<int64_t>(maxId, id);
    for (const auto& t : d.added) maxId = std::max<int64_t>(maxId, t.id);
    const size_t n = size_t(maxId + 1);
    d.tokens.assign(n, std::string_view());
    d.flags.assign(n, 0);
    for (const auto& [tok, id] : d.bpe.vocab()) d.tokens[id] = tok;
    for (const auto& t : d.added) {
        d.tokens[t.id] = t.text;
        d.flags[t.id] = Tokenizer::Impl::kAdded | (t.special ? Tokenizer::Impl::kSpecial : 0);
        d.addedIds.emplace(t.content, t.id);
    }
    d.bytesOffsets.assign(n + 1, 0);
    d.bytesBuffer.clear();
    for (size_t id = 0; id < n; ++id) {
        d.bytesOffsets[id] = uint32_t(d.bytesBuffer.size());
        // Added tokens decode to their content. So do vocab entries with characters outside the GPT-2
        // table, as in HF's ByteLevel decoder.
        if ((d.flags[id] & Tokenizer::Impl::kAdded) || !byteLevelDecode(d.tokens[id], d.bytesBuffer))
            d.bytesBuffer += d.tokens[id];
    }
    d.bytesOffsets[n] = uint32_t(d.bytesBuffer.size());
}

}  // namespace

void Tokenizer::Impl::appendBytes(int32_t id, bool skipSpecial, std::string& out) const
{
    if (id < 0 || size_t(id) >= tokens.size()) return;
    if (skipSpecial && (flags[id] & kSpecial)) return;
    out.append(bytesBuffer, bytesOffsets[id], bytesOffsets[id + 1] - bytesOffsets[id]);
}

Result<Tokenizer> Tokenizer::load(const std::filesystem::path& tokenizerJson)
{
    const std::string file = tokenizerJson.string();
    auto text = readFile(tokenizerJson);
    if (!text) return text.error();
    auto parsed = parseTokenizerJson(*text, file);
    if (!parsed) return parsed.error();
    text->clear();
    text->shrink_to_fit();
    TokenizerJson& raw = *parsed;
    const nlohmann::json& root = raw.root;
    if (!root.is_object()) return badFile(file, "the top level is not a JSON object");

    auto impl = std::make_shared<Impl>();
    impl->path = tokenizerJson;
    const nlohmann::json null;
    auto normalizer = Normalizer::parse(root.contains("normalizer") ? root["normalizer"] : null, file);
    if (!normalizer) return normalizer.error();
    impl->normalizer = std::move(*normalizer);
    auto pre = PreTokenizer::parse(root.contains("pre_tokenizer") ? root["pre_tokenizer"] : null, file);
    if (!pre) return pre.error();
    impl->preTokenizer = std::move(*pre);
    auto bpe = BpeModel::parse(root.contains("model") ? root["model"] : null, raw, file);
    if (!bpe) return bpe.error();
    impl->bpe = std::move(*bpe);
    if (auto r = checkDecoder(root, file); !r) return r.error();
    auto added = parseAddedTokens(root, file);
    if (!added) return added.error();

    impl->added = std::move(*added);
    for (auto& t : impl->added) t.text = t.normalized ? impl->normalizer.apply(t.content) : t.content;
    buildIdTables(*impl);
    impl->addedMatcher.build(impl->added, impl->normalizer);
    return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view input, bool parseSpecialTokens) const
{
    const Impl& d = *m_impl;
    const std::string text = utf8::sanitize(input);
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    std::vector<Segment> outer, inner;
    PieceList pieces;
    const bool byteLevel = d.preTokenizer.byteLevel();
    d.addedMatcher.split(text, /*normalizedSet=*/false, parseSpecialTokens, outer);
    for (const Segment& seg : outer) {
        if (seg.id >= 0) {
            ids.push_back(seg.id);
            continue;
        }
        const std::string norm = d.normalizer.apply(std::string_view(text).substr(seg.begin, seg.end - seg.begin));
        inner.clear();
        d.addedMatcher.split(norm, /*normalizedSet=*/true, parseSpecialTokens, inner);
        for (const Segment& sub : inner) {
            if (sub.id >= 0) {
                ids.push_back(sub.id);
                continue;
            }
            d.preTokenizer.apply(std::string_view(norm).substr(sub.begin, sub.end - sub.begin), pieces);
            for (size_t k = 0; k < pieces.spans.size(); ++k) d.bpe.encodeWord(pieces.view(k), byteLevel, ids);
        }
    }
    return ids;
}

int32_t Tokenizer::vocabSize() const { return int32_t(m_impl->tokens.size()); }

std::optional<int32_t> Tokenizer::tokenId(std::string_view token) const
{
    if (const auto it = m_impl->addedIds.find(token); it != m_impl->addedIds.end()) return it->second;
    if (const auto it = m_impl->bpe.vocab().find(token); it != m_impl->bpe.vocab().end()) return it->second;
    return std::nullopt;
}

std::string_view Tokenizer::token(int32_t id) const
{
    return id >= 0 && size_t(id) < m_impl->tokens.size() ? m_impl->tokens[id] : std::string_view();
}

std::string_view Tokenizer::tokenBytes(int32_t id) const
{
    const Impl& d = *m_impl;
    if (id < 0 || size_t(id) >= d.tokens.size()) return {};
    return std::string_view(d.bytesBuffer).substr(d.bytesOffsets[id], d.bytesOffsets[id + 1] - d.bytesOffsets[id]);
}

bool Tokenizer::isSpecial(int32_t id) const
{
    return id >= 0 && size_t(id) < m_impl->flags.size() && (m_impl->flags[id] & Impl::kSpecial);
}

bool Tokenizer::isAddedToken(int32_t id) const
{
    return id >= 0 && size_t(id) < m_impl->flags.size() && (m_impl->flags[id] & Impl::kAdded);
}

const std::filesystem::path& Tokenizer::path() const { return m_impl->path; }

}  // namespace lector::model
