// Internal parts of Tokenizer (core/model/tokenizer.h), one .cpp per job: character classes
// (tokenizer_chars.cpp; UTF-8 itself is core/common/utf8.h), the normalizer (tokenizer_normalizer.cpp), byte-level mapping (tokenizer_bytelevel.cpp), pre-tokenizers
// (tokenizer_pretokenizer.cpp), the BPE model (tokenizer_bpe.cpp), added tokens (tokenizer_added.cpp),
// decoding (tokenizer_decoder.cpp), loading and encode orchestration (tokenizer.cpp).
// Only the tokenizer sources include this header. Everything here is immutable after load and safe to
// use from several threads, except BpeModel's word cache, which locks itself.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/result.h"
#include "core/common/utf8.h"
#include "core/model/tokenizer.h"

namespace lector::model::tokenizer_detail {

// Hash for unordered_map<std::string, ...> lookups by string_view without a temporary string.
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// "<file>: <what>" errors with the tokenizer's error codes.
Error badFile(const std::string& file, const std::string& what);
Error unsupported(const std::string& file, const std::string& what);

// --- reading tokenizer.json (tokenizer_json.cpp) -------------------------------------------------------

struct RawMerge {
    std::string left;   // the whole "a b" when isString
    std::string right;
    bool isString = false;
};
// tokenizer.json split by the SAX reader: model.vocab and model.merges as flat lists (when they have the
// right JSON type; otherwise they stay in `root` for BpeModel::parse to report), the rest as a DOM.
struct TokenizerJson {
    nlohmann::json root;
    bool hasVocab = false;
    std::vector<std::pair<std::string, int32_t>> vocab;
    std::string badVocabKey;  // first vocab entry whose id is not a non-negative int32
    bool hasMerges = false;
    std::vector<RawMerge> merges;
    int64_t badMergeIndex = -1;  // first merges entry that is neither "a b" nor ["a", "b"]
};
// Error "bad_tokenizer" for malformed JSON.
Result<TokenizerJson> parseTokenizerJson(const std::string& text, const std::string& file);

// --- UTF-8 and character classes -------------------------------------------------------------------

// UTF-8 (core/common/utf8.h): the tokenizer's text follows its maximal-subpart repair rule.
using utf8::nextCodePoint;
using utf8::validSequenceLength;
// Unicode White_Space (Rust's char::is_whitespace).
bool isWhitespace(char32_t cp);
// Regex word character (\w of Rust's regex: letters, marks, decimal digits, connector punctuation).
bool isWordChar(char32_t cp);

// --- normalizer --------------------------------------------------------------------------------------

class Normalizer {
public:
    enum class Form { Nfc, Nfd, Nfkc, Nfkd };
    // `j` is the "normalizer" value (null allowed).
    static Result<Normalizer> parse(const nlohmann::json& j, const std::string& file);
    bool isIdentity() const { return m_forms.empty(); }
    // Valid UTF-8 in, valid UTF-8 out.
    std::string apply(std::string_view text) const;

private:
    std::vector<Form> m_forms;
};

// --- byte-level mapping (GPT-2 bytes_to_unicode) ------------------------------------------------------

// The code point each byte is written as inside byte-level vocab entries ('!'->'!', ' '->'Ġ' U+0120 ...).
char32_t byteToCodePoint(uint8_t b);
// The byte a code point stands for, or -1 when the code point is not in the table.
int codePointToByte(char32_t cp);
// Bytes -> their byte-level string ("hi there" -> "hiĠthere").
std::string byteLevelEncode(std::string_view bytes);
// Appends the bytes of a byte-level string. Returns false (out unchanged) when a character is not in the
// table, in which case the decoder uses the token's own UTF-8 bytes, like the HF ByteLevel decoder.
bool byteLevelDecode(std::string_view token, std::string& out);

// --- pre-tokenizer -----------------------------------------------------------------------------------

// A compiled PCRE2 pattern (UTF + UCP, JIT when available). Shared between copies.
class Regex {
public:
    static Result<std::shared_ptr<const Regex>> compile(const std::string& pattern, bool literal,
                                                         const std::string& file);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;
    // Appends the non-empty, non-overlapping matches [begin, end) of `subject` (valid UTF-8) in order.
    void findAll(std::string_view subject, std::vector<std::pair<size_t, size_t>>& matches) const;

private:
    Regex() = default;
    void* m_code = nullptr;  // pcre2_code_8*
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// Pieces of text as spans of one buffer (pre-tokenizers split spans without copying; a prefix space
// appends a new string to the buffer).
struct PieceList {
    std::string buffer;
    std::vector<std::pair<uint32_t, uint32_t>> spans;  // [begin, end) into buffer
    std::string_view view(size_t k) const { return {buffer.data() + spans[k].first, spans[k].second - spans[k].first}; }
};

class PreTokenizer {
public:
    // `j` is the "pre_tokenizer" value (null allowed).
    static Result<PreTokenizer> parse(const nlohmann::json& j, const std::string& file);
    // True when the chain ends with ByteLevel: the model then sees bytes through the GPT-2 table.
    bool byteLevel() const { return m_byteLevel; }
    // Splits `text` (valid UTF-8) into the words the model encodes; `out` is overwritten.
    void apply(std::string_view text, PieceList& out) const;

private:
    struct Step {
        std::shared_ptr<const Regex> regex;  // null: no split (ByteLevel without use_regex)
        SplitBehavior behavior = SplitBehavior::Isolated;
        bool invert = false;
        bool addPrefixSpace = false;  // ByteLevel's add_prefix_space
    };
    Result<void> parseStep(const nlohmann::json& j, const std::string& file);
    std::vector<Step> m_steps;
    bool m_byteLevel = false;
};

// --- BPE model ---------------------------------------------------------------------------------------

class BpeModel {
public:
    // `model` is the "model" object of the DOM, `raw` the vocab and merges the SAX reader took out of it
    // (their strings are moved from).
    static Result<BpeModel> parse(const nlohmann::json& model, TokenizerJson& raw, const std::string& file);
    // Appends the ids of one pre-tokenized word. With byteLevel, `word` is raw bytes and each byte
    // starts as its GPT-2 character; otherwise each UTF-8 character starts as itself.
    void encodeWord(std::string_view word, bool byteLevel, std::vector<int32_t>& out) const;

    const StringMap<int32_t>& vocab() const { return m_vocab; }

private:
    struct Merge {
        int32_t rank;
        int32_t newId;
    };
    struct Cache {
        std::mutex mutex;
        StringMap<std::vector<int32_t>> words;
    };
    static uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
    Result<void> parseMerges(std::vector<RawMerge>& merges, const std::string& file);
    // Initial symbols of a word (one per byte or character), after unk/byte-fallback handling.
    void initialSymbols(std::string_view word, bool byteLevel, std::vector<int32_t>& ids,
                        std::vector<uint32_t>& lens) const;
    void mergeAll(std::vector<int32_t>& ids, std::vector<uint32_t>& lens) const;

    StringMap<int32_t> m_vocab;
    std::unordered_map<uint64_t, Merge> m_merges;  // (leftId, rightId) -> rank and merged id
    std::array<int32_t, 256> m_byteIds{};           // id of each byte's GPT-2 character, -1 if absent
    int32_t m_unkId = -1;
    bool m_fuseUnk = false;
    bool m_byteFallback = false;
    bool m_ignoreMerges = false;
    std::shared_ptr<Cache> m_cache = std::make_shared<Cache>();
};

// --- added tokens ------------------------------------------------------------------------------------

struct AddedToken {
    int32_t id = -1;
    std::string content;
    bool singleWord = false;
    bool lstrip = false;
    bool rstrip = false;
    bool normalized = false;
    bool special = false;
    // What id -> token and decode give: the content, normalized when `normalized` is set (as in HF).
    std::string text;
};

// A piece of input: an added token (id >= 0) or plain text to normalize/pre-tokenize (id == -1).
struct Segment {
    size_t begin = 0;
    size_t end = 0;
    int32_t id = -1;
};

// Finds added tokens in text, leftmost-longest first, with the single_word/lstrip/rstrip rules of HF.
// Two sets: tokens with normalized=false are matched in the raw input, normalized=true ones in the
// normalized text (their content normalized the same way).
class AddedTokenMatcher {
public:
    void build(const std::vector<AddedToken>& tokens, const Normalizer& normalizer);
    // Appends the segments covering `text` (empty segments omitted). Without allowSpecial, tokens
    // flagged special are left in the text.
    void split(std::string_view text, bool normalizedSet, bool allowSpecial, std::vector<Segment>& out) const;

private:
    struct Node {
        std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node, sorted
        int32_t token = -1;                                 // index into m_tokens
    };
    struct Trie {
        std::vector<Node> nodes;
        std::array<int32_t, 256> root{};  // first byte -> node, -1 if none
        bool empty() const { return nodes.empty(); }
    };
    void insert(Trie& trie, std::string_view key, int32_t tokenIdx);
    // Longest token starting at text[i]; -1 if none. Sets `len`.
    int32_t longestAt(const Trie& trie, std::string_view text, size_t i, size_t& len) const;

    std::vector<AddedToken> m_tokens;
    Trie m_raw;
    Trie m_normalized;
};

}  // namespace lector::model::tokenizer_detail

namespace lector::model {

struct Tokenizer::Impl {
    std::filesystem::path path;
    tokenizer_detail::Normalizer normalizer;
    tokenizer_detail::PreTokenizer preTokenizer;
    tokenizer_detail::BpeModel bpe;
    tokenizer_detail::AddedTokenMatcher addedMatcher;
    std::vector<tokenizer_detail::AddedToken> added;
    tokenizer_detail::StringMap<int32_t> addedIds;  // added token content -> id
    // Per id: the token string, a view into bpe's vocab keys or `added` (both never move after load;
    // empty = a hole in the id space), and its decoded bytes as bytesBuffer[bytesOffsets[id], [id + 1]).
    std::vector<std::string_view> tokens;  // [vocabSize]
    std::string bytesBuffer;
    std::vector<uint32_t> bytesOffsets;  // [vocabSize + 1]
    std::vector<uint8_t> flags;          // [vocabSize] kAdded | kSpecial
    static constexpr uint8_t kAdded = 1;
    static constexpr uint8_t kSpecial = 2;

    // Appends the bytes of `id` to out unless it is unknown or (skipSpecial and) special.
    void appendBytes(int32_t id, bool skipSpecial, std::string& out) const;
};

}  // namespace lector::model
