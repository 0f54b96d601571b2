// HunyuanOCR 1.0's own tokenizer.json against the spec's test vectors (hunyuanocr-spec.md §4.1, §7:
// ids from the ncnn port's tests) and the special-token layout of the 1.0 prompt. The file is not
// available on this machine; point LECTOR_HUNYUAN_TOKENIZER at one (e.g. <model dir>/tokenizer.json)
// to run these, otherwise they are skipped.
#include "tests/support/lector_test.h"

#include <cstdlib>

#include "core/model/tokenizer.h"

using lector::model::Tokenizer;
using Ids = std::vector<int32_t>;

namespace {

const Tokenizer& hunyuan()
{
    static const char* env = std::getenv("LECTOR_HUNYUAN_TOKENIZER");
    if (!env || !*env)
        LECTOR_SKIP("LECTOR_HUNYUAN_TOKENIZER is not set: HunyuanOCR's own tokenizer.json is not available here");
    static const Tokenizer tok = [] {
        auto r = Tokenizer::load(env);
        if (!r.ok()) lector::test::fail(__FILE__, __LINE__, r.error().message);
        return std::move(r).value();
    }();
    return tok;
}

const char* kSpotting = "检测并识别图片中的文字，将文本坐标格式化输出。";
const Ids kSpottingIds = {5055, 951, 9977, 12858, 1843, 9738, 270, 934, 8433, 4699, 68216, 8287, 292};

const char* kDocument = "提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，"
                        "文档中公式用latex格式表示，按照阅读顺序组织进行解析。";
const Ids kDocumentIds = {12161, 19177, 12858, 409,  49827, 16317, 1940,  474,   78338, 11971, 2598,
                          270,   2627,  6319,  19684, 332,  6319,  5705,  2218,  19664, 270,   24784,
                          474,   13110, 11971, 4088,  270,  19177, 409,   4605,  474,   36078, 11971,
                          2598,  270,   3802,  6169,  10264, 2297, 1170,  4134,  292};

std::string join(const Ids& ids)
{
    std::string s;
    for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
}

void checkEncodes(const Tokenizer& tok, const std::string& text, const Ids& want, int line)
{
    const Ids got = tok.encode(text);
    if (got != want)
        lector::test::fail(__FILE__, line, "'" + text + "'\n      ours: " + join(got) + "\n      spec: " + join(want));
}

}  // namespace

LECTOR_TEST(encodesSpecTestVectors)
{
    const auto& tok = hunyuan();
    LECTOR_CHECK_EQ(kDocumentIds.size(), size_t(42));
    checkEncodes(tok, "Hello, world!", Ids{16883, 11, 2385, 0}, __LINE__);
    checkEncodes(tok, kSpotting, kSpottingIds, __LINE__);
    checkEncodes(tok, kDocument, kDocumentIds, __LINE__);
    LECTOR_CHECK_EQ(tok.decode(kSpottingIds, true), std::string(kSpotting));
    LECTOR_CHECK_EQ(tok.decode(kDocumentIds, true), std::string(kDocument));
}

LECTOR_TEST(knowsTheSpecialTokenIds)
{
    const auto& tok = hunyuan();
    LECTOR_CHECK_EQ(tok.vocabSize(), 120818);
    const std::pair<const char*, int32_t> specials[] = {
        {"<｜hy_begin▁of▁sentence｜>", 120000}, {"<｜hy_▁pad▁｜>", 120002},
        {"<｜hy_User｜>", 120006},              {"<｜hy_Assistant｜>", 120007},
        {"<｜hy_place▁holder▁no▁2｜>", 120020}, {"<｜hy_place▁holder▁no▁3｜>", 120021},
        {"<｜hy_place▁holder▁no▁100｜>", 120118}, {"<｜hy_place▁holder▁no▁101｜>", 120119},
        {"<｜hy_place▁holder▁no▁102｜>", 120120}, {"<｜hy_place▁holder▁no▁103｜>", 120121},
    };
    for (const auto& [text, id] : specials) {
        LECTOR_CHECK_MSG(tok.tokenId(text).value_or(-1) == id, text << " is not id " << id);
        LECTOR_CHECK_EQ(std::string(tok.token(id)), std::string(text));
    }
}

LECTOR_TEST(encodesTheChatLayoutWithSpecialTokensInline)
{
    const auto& tok = hunyuan();
    // §4.1: BOS, empty system turn, image block, prompt, <｜hy_User｜> (one placeholder before expansion).
    const std::string prompt = std::string("<｜hy_begin▁of▁sentence｜><｜hy_place▁holder▁no▁3｜>") +
                               "<｜hy_place▁holder▁no▁100｜><｜hy_place▁holder▁no▁102｜><｜hy_place▁holder▁no▁101｜>" +
                               kSpotting + "<｜hy_User｜>";
    Ids expect = {120000, 120021, 120118, 120120, 120119};
    expect.insert(expect.end(), kSpottingIds.begin(), kSpottingIds.end());
    expect.push_back(120006);
    checkEncodes(tok, prompt, expect, __LINE__);
    const auto ids = tok.encode(prompt);
    LECTOR_CHECK_EQ(tok.decode(ids, true), std::string(kSpotting));
    LECTOR_CHECK_EQ(tok.decode(ids, false), prompt);
}
