// Tokenizer on small hand-made tokenizer.json files: each feature the Qwen3 file does not exercise
// (merges as "a b" strings, Split behaviours, ByteLevel options, Digits, NFKC, added-token flags,
// byte fallback, unk, ignore_merges) with ids worked out by hand, and broken files that must give
// named errors instead of crashing.
#include "tests/support/lector_test.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/model/tokenizer.h"

using lector::model::Tokenizer;
using nlohmann::json;
namespace fs = std::filesystem;
using Ids = std::vector<int32_t>;

namespace {

// GPT-2's bytes_to_unicode, written out from its definition: printable Latin-1 bytes keep their code
// point, the others get U+0100 + n in byte order.
std::string byteChar(unsigned b)
{
    unsigned n = 0, cp = 0;
    for (unsigned x = 0; x <= b; ++x) {
        const bool printable = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE);
        cp = printable ? x : 0x100 + n++;
    }
    std::string s;
    if (cp < 0x80) s += char(cp);
    else s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    return s;
}

// The 256 byte characters with id = byte value.
json byteVocab()
{
    json v = json::object();
    for (unsigned b = 0; b < 256; ++b) v[byteChar(b)] = b;
    return v;
}

struct Spec {
    json normalizer = nullptr;
    json pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    json vocab = byteVocab();
    json merges = json::array();
    json added = json::array();
    json modelExtra = json::object();
    json decoder = {{"type", "ByteLevel"}};
};

fs::path writeFile(const std::string& name, const std::string& text)
{
    const auto p = lector::test::tempDir() / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

json toJson(const Spec& s)
{
    json model = {{"type", "BPE"}, {"vocab", s.vocab}, {"merges", s.merges}};
    model.update(s.modelExtra);
    return {{"version", "1.0"}, {"added_tokens", s.added}, {"normalizer", s.normalizer}, {"pre_tokenizer", s.pre},
            {"model", model}, {"decoder", s.decoder}};
}

Tokenizer load(const Spec& s)
{
    auto r = Tokenizer::load(writeFile("tokenizer.json", toJson(s).dump()));
    if (!r.ok()) lector::test::fail(__FILE__, __LINE__, r.error().message);
    return std::move(r).value();
}

json addedToken(const std::string& content, int id, bool special, const char* flag = nullptr)
{
    json t = {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
              {"normalized", false}, {"special", special}};
    if (flag) t[flag] = true;
    return t;
}

std::string str(const Ids& ids)
{
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

void checkIds(const Ids& got, const Ids& want, int line)
{
    if (got != want) lector::test::fail(__FILE__, line, "ids " + str(got) + ", want " + str(want));
}

}  // namespace

LECTOR_TEST(readsMergesInBothFileFormats)
{
    Spec s;
    s.vocab["ab"] = 256, s.vocab["abc"] = 257, s.vocab["Ġab"] = 258;
    s.merges = {"a b", "ab c", "Ġ ab"};
    checkIds(load(s).encode("abc ab"), Ids{257, 258}, __LINE__);
    s.merges = json::array({json::array({"a", "b"}), json::array({"ab", "c"}), json::array({"Ġ", "ab"})});
    checkIds(load(s).encode("abc ab"), Ids{257, 258}, __LINE__);
}

LECTOR_TEST(appliesLowestRankedMergeFirst)
{
    Spec s;
    s.vocab["bc"] = 256, s.vocab["ab"] = 257;
    s.merges = {"b c", "a b"};
    checkIds(load(s).encode("abc"), Ids{97, 256}, __LINE__);
    s.merges = {"a b", "b c"};
    checkIds(load(s).encode("abc"), Ids{257, 99}, __LINE__);
    // Equal pairs merge left to right: "aaa" -> "aa" + "a".
    s.vocab["aa"] = 258;
    s.merges = {"a a"};
    checkIds(load(s).encode("aaa"), Ids{258, 97}, __LINE__);
}

LECTOR_TEST(ignoreMergesTakesWholeWordsFromTheVocab)
{
    Spec s;
    s.vocab["ab"] = 256, s.vocab["abc"] = 257;
    s.merges = {"a b"};
    checkIds(load(s).encode("abc"), Ids{256, 99}, __LINE__);
    s.modelExtra["ignore_merges"] = true;
    checkIds(load(s).encode("abc"), Ids{257}, __LINE__);
}

LECTOR_TEST(splitsWithEachBehaviour)
{
    Spec s;
    s.vocab = {{"a", 0}, {"b", 1}, {"-", 2}, {"a-", 3}, {"-b", 4}, {"--", 5}};
    s.merges = {"a -", "- b", "- -"};
    struct Case {
        const char* behavior;
        bool invert;
        const char* text;
        Ids expect;
    };
    const Case cases[] = {
        {"Isolated", false, "a-b", {0, 2, 1}},           {"Removed", false, "a-b", {0, 1}},
        {"MergedWithPrevious", false, "a-b", {3, 1}},    {"MergedWithNext", false, "a-b", {0, 4}},
        {"Contiguous", false, "a-b", {0, 2, 1}},         {"Isolated", false, "a--b", {0, 2, 2, 1}},
        {"Contiguous", false, "a--b", {0, 5, 1}},        {"MergedWithPrevious", false, "a--b", {3, 2, 1}},
        {"MergedWithNext", false, "a--b", {0, 2, 4}},    {"Removed", true, "a-b", {2}},
    };
    for (const auto& c : cases) {
        for (const char* kind : {"String", "Regex"}) {
            s.pre = {{"type", "Split"}, {"pattern", {{kind, "-"}}}, {"behavior", c.behavior}, {"invert", c.invert}};
            const auto ids = load(s).encode(c.text);
            LECTOR_CHECK_MSG(ids == c.expect, c.behavior << (c.invert ? " inverted" : "") << " " << kind << " on '"
                                                          << c.text << "': got " << str(ids) << ", want " << str(c.expect));
        }
    }
}

LECTOR_TEST(byteLevelAddsPrefixSpaceAndSplitsWithGpt2Regex)
{
    Spec s;
    s.pre = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
    checkIds(load(s).encode("hi"), Ids{32, 104, 105}, __LINE__);
    checkIds(load(s).encode(" hi"), Ids{32, 104, 105}, __LINE__);
    s.pre["add_prefix_space"] = false;
    checkIds(load(s).encode("hi"), Ids{104, 105}, __LINE__);
    s.vocab["iĠ"] = 256, s.vocab["Ġh"] = 257;
    s.merges = {"i Ġ", "Ġ h"};
    checkIds(load(s).encode("hi hi"), Ids{104, 105, 257, 105}, __LINE__);  // words "hi", " hi"
    s.pre["use_regex"] = false;
    checkIds(load(s).encode("hi hi"), Ids{104, 256, 104, 105}, __LINE__);  // one word "hiĠhi"
}

LECTOR_TEST(digitsPreTokenizerSplitsNumbers)
{
    Spec s;
    s.vocab["a1"] = 256, s.vocab["12"] = 257;
    s.merges = {"a 1", "1 2"};
    const json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
    s.pre = byteLevel;
    checkIds(load(s).encode("a123"), Ids{256, 50, 51}, __LINE__);
    s.pre = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", false}}, byteLevel}}};
    checkIds(load(s).encode("a123"), Ids{97, 257, 51}, __LINE__);
    s.pre["pretokenizers"][0]["individual_digits"] = true;
    checkIds(load(s).encode("a123"), Ids{97, 49, 50, 51}, __LINE__);
}

LECTOR_TEST(normalizesBeforeBpe)
{
    Spec s;
    const std::string decomposed = "e\xCC\x81";  // e + U+0301
    checkIds(load(s).encode(decomposed), Ids{101, 0xCC, 0x81}, __LINE__);
    s.normalizer = {{"type", "NFC"}};
    checkIds(load(s).encode(decomposed), Ids{0xC3, 0xA9}, __LINE__);  // é = C3 A9
    s.normalizer = {{"type", "Sequence"}, {"normalizers", json::array()}};
    checkIds(load(s).encode(decomposed), Ids{101, 0xCC, 0x81}, __LINE__);
    s.normalizer = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKC"}}}}};
    checkIds(load(s).encode("\xEF\xBD\x86"), Ids{102}, __LINE__);  // fullwidth f -> f
    s.normalizer = {{"type", "NFD"}};
    checkIds(load(s).encode("\xC3\xA9"), Ids{101, 0xCC, 0x81}, __LINE__);
}

LECTOR_TEST(matchesAddedTokensWithTheirFlags)
{
    Spec s;
    s.normalizer = {{"type", "NFC"}};
    s.pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
    s.added = {addedToken("<s>", 300, true),           addedToken("<s>x", 301, true),
               addedToken("<m>", 302, false, "lstrip"), addedToken("<r>", 303, false, "rstrip"),
               addedToken("ab", 304, false, "single_word"), addedToken("\xC3\xA9", 305, false, "normalized"),
               addedToken("<n>", 306, false)};
    const auto tok = load(s);
    checkIds(tok.encode("a<s>b"), Ids{97, 300, 98}, __LINE__);
    checkIds(tok.encode("<s>xy"), Ids{301, 121}, __LINE__);  // longest match first
    checkIds(tok.encode("a  <m>b"), Ids{97, 302, 98}, __LINE__);
    checkIds(tok.encode("a  <n>b"), Ids{97, 32, 32, 306, 98}, __LINE__);
    checkIds(tok.encode("<r>  b"), Ids{303, 98}, __LINE__);
    checkIds(tok.encode("ab cab ab"), Ids{304, 32, 99, 97, 98, 32, 304}, __LINE__);
    checkIds(tok.encode("e\xCC\x81"), Ids{305}, __LINE__);  // matched after NFC
    checkIds(tok.encode("\xC3\xA9"), Ids{305}, __LINE__);
    LECTOR_CHECK_EQ(tok.decode(Ids{97, 300, 98, 306}, true), std::string("ab<n>"));
    LECTOR_CHECK_EQ(tok.decode(Ids{97, 300, 98, 306}, false), std::string("a<s>b<n>"));
    LECTOR_CHECK_EQ(tok.tokenId("<s>x").value_or(-1), 301);
    LECTOR_CHECK_EQ(tok.vocabSize(), 307);
    LECTOR_CHECK(tok.isSpecial(300) && !tok.isSpecial(306) && tok.isAddedToken(306) && !tok.isAddedToken(97));
    LECTOR_CHECK(tok.token(299).empty());  // a hole in the id space
}

LECTOR_TEST(regexClassesMeanWhatTheyMeanInOniguruma)
{
    Spec s;
    auto removing = [&](const char* regex) {
        s.pre = {{"type", "Sequence"},
                 {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Removed"}},
                                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
        return load(s);
    };
    // U+180E (E1 A0 8E) is no white space since Unicode 6.3; PCRE2's own \s would still remove it.
    checkIds(removing(R"(\s+)").encode("a b\u180E"), Ids{97, 98, 0xE1, 0xA0, 0x8E}, __LINE__);
    // \p{Han} is the Han script, not its extensions: "。" (E3 80 82) is Common and stays.
    checkIds(removing(R"(\p{Han}+)").encode("\u4E2D\u3002\u6587"), Ids{0xE3, 0x80, 0x82}, __LINE__);
    // \w includes combining marks (U+0301 = CC 81) and excludes No (½ = C2 BD).
    checkIds(removing(R"(\w+)").encode("a\u0301\u00BD"), Ids{0xC2, 0xBD}, __LINE__);
}

LECTOR_TEST(normalizedAddedTokensReadBackNormalized)
{
    Spec s;  // as HF: a normalized added token is matched after normalizing and decodes normalized
    s.normalizer = {{"type", "NFKC"}};
    s.added = {addedToken("\uFF58", 300, false, "normalized")};  // fullwidth x
    const auto tok = load(s);
    checkIds(tok.encode("\uFF58"), Ids{300}, __LINE__);
    checkIds(tok.encode("x"), Ids{300}, __LINE__);
    LECTOR_CHECK_EQ(tok.tokenId("\uFF58").value_or(-1), 300);
    LECTOR_CHECK_EQ(std::string(tok.token(300)), std::string("x"));
    LECTOR_CHECK_EQ(tok.decode(Ids{300}, false), std::string("x"));
}

LECTOR_TEST(fallsBackToBytesOrUnk)
{
    Spec s;
    s.pre = nullptr;  // characters, not bytes, are the initial symbols
    s.vocab = {{"a", 0}, {"<unk>", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}};
    s.modelExtra = {{"byte_fallback", true}};
    checkIds(load(s).encode("a\xC3\xA9"), Ids{0, 2, 3}, __LINE__);
    s.modelExtra = {{"unk_token", "<unk>"}, {"fuse_unk", true}};
    checkIds(load(s).encode("a\xC3\xA9\xC3\xA9"), Ids{0, 1}, __LINE__);
    s.modelExtra["fuse_unk"] = false;
    checkIds(load(s).encode("a\xC3\xA9\xC3\xA9"), Ids{0, 1, 1}, __LINE__);
    s.modelExtra = json::object();
    checkIds(load(s).encode("a\xC3\xA9\xC3\xA9"), Ids{0}, __LINE__);  // no unk token: dropped, as in HF
}

LECTOR_TEST(rejectsBrokenFilesWithNamedErrors)
{
    const Spec good;
    auto with = [&](const std::function<void(json&)>& edit) {
        json j = toJson(good);
        edit(j);
        return j.dump();
    };
    struct Case {
        const char* name;
        std::string text;
        const char* code;
        const char* expect;
    };
    const Case cases[] = {
        {"empty.json", "", "bad_tokenizer", "not valid JSON"},
        {"not_json.json", "{\"model\": {", "bad_tokenizer", "not valid JSON"},
        {"array.json", "[1, 2]", "bad_tokenizer", "not a JSON object"},
        {"no_model.json", with([](json& j) { j.erase("model"); }), "bad_tokenizer", "\"model\" is missing"},
        {"no_vocab.json", with([](json& j) { j["model"].erase("vocab"); }), "bad_tokenizer", "model.vocab is missing"},
        {"no_merges.json", with([](json& j) { j["model"].erase("merges"); }), "bad_tokenizer", "model.merges is missing"},
        {"vocab_list.json", with([](json& j) { j["model"]["vocab"] = json::array({"a"}); }), "bad_tokenizer", "not an object"},
        {"bad_id.json", with([](json& j) { j["model"]["vocab"]["a"] = "x"; }), "bad_tokenizer", "valid integer id"},
        {"merge_oov.json", with([](json& j) { j["model"]["merges"] = {"a zz"}; }), "bad_tokenizer", "'zz' that is not in model.vocab"},
        {"merge_result_oov.json", with([](json& j) { j["model"]["merges"] = {"q q"}; }), "bad_tokenizer", "makes token 'qq'"},
        {"merge_shape.json", with([](json& j) { j["model"]["merges"] = {42}; }), "bad_tokenizer", "model.merges[0]"},
        {"merge_spaces.json", with([](json& j) { j["model"]["merges"] = {"a b c"}; }), "bad_tokenizer", "separated by one space"},
        {"wordpiece.json", with([](json& j) { j["model"]["type"] = "WordPiece"; }), "unsupported_tokenizer", "'WordPiece'"},
        {"lowercase.json", with([](json& j) { j["normalizer"] = {{"type", "Lowercase"}}; }), "unsupported_tokenizer", "normalizer type 'Lowercase'"},
        {"nested_norm.json", with([](json& j) { j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Strip"}}}}}; }),
         "unsupported_tokenizer", "'Strip'"},
        {"whitespace.json", with([](json& j) { j["pre_tokenizer"] = {{"type", "Whitespace"}}; }), "unsupported_tokenizer", "pre_tokenizer type 'Whitespace'"},
        {"bad_regex.json", with([](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}}; }),
         "bad_tokenizer", "does not compile"},
        {"bad_behavior.json", with([](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Sideways"}}; }),
         "unsupported_tokenizer", "'Sideways'"},
        {"no_pattern.json", with([](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"behavior", "Isolated"}}; }), "bad_tokenizer", "pattern"},
        {"after_bytelevel.json", with([](json& j) { j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "ByteLevel"}}, {{"type", "Digits"}}}}}; }),
         "unsupported_tokenizer", "after ByteLevel"},
        {"no_decoder.json", with([](json& j) { j.erase("decoder"); }), "unsupported_tokenizer", "\"decoder\" is missing"},
        {"wp_decoder.json", with([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }), "unsupported_tokenizer", "decoder type 'WordPiece'"},
        {"dropout.json", with([](json& j) { j["model"]["dropout"] = 0.1; }), "unsupported_tokenizer", "dropout"},
        {"added_no_id.json", with([](json& j) { j["added_tokens"] = {{{"content", "<x>"}}}; }), "bad_tokenizer", "added_tokens[0]"},
    };
    for (const auto& c : cases) {
        const auto p = writeFile(c.name, c.text);
        auto r = Tokenizer::load(p);
        LECTOR_CHECK_MSG(!r.ok(), c.name << " was accepted");
        LECTOR_CHECK_MSG(r.error().code == c.code, c.name << ": code " << r.error().code << ", want " << c.code);
        LECTOR_CHECK_MSG(r.error().message.find(p.string()) != std::string::npos, c.name << ": " << r.error().message);
        LECTOR_CHECK_MSG(r.error().message.find(c.expect) != std::string::npos,
                         c.name << ": '" << r.error().message << "' lacks '" << c.expect << "'");
    }
    auto missing = Tokenizer::load(lector::test::tempDir() / "nope.json");
    LECTOR_CHECK(!missing.ok());
    LECTOR_CHECK_EQ(missing.error().code, std::string("file_not_found"));
    LECTOR_CHECK(missing.error().message.find("nope.json") != std::string::npos);
}
