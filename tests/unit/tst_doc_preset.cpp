// The shipped presets (resources/presets): they load, list the right models, and build exactly the
// official HunyuanOCR 1.0 prompts (docs/hunyuanocr-spec.md §9.1); broken preset files give an error that
// names the file and the problem.
#include "tests/support/lector_test.h"

#include <fstream>

#include "core/doc/preset.h"
#include "tests/unit/tst_doc_support.h"

using namespace lector::doc;
using lector::test::doc::preset;
using lector::test::doc::presets;
namespace fs = std::filesystem;

namespace {

// Writes `json` as <dir>/<id>.json and returns the error of loading it ("" when it loads).
std::string loadError(const std::string& id, const std::string& json)
{
    const auto dir = lector::test::tempDir();
    const auto file = dir / (id + ".json");
    std::ofstream(file) << json;
    auto p = loadPreset(file);
    if (p.ok()) return "";
    LECTOR_CHECK_EQ(p.error().code, std::string("bad_preset"));
    LECTOR_CHECK_MSG(p.error().message.find(file.string()) != std::string::npos, p.error().message);
    return p.error().message;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* kGood = R"({"id": "x", "name": {"en": "X", "zh": "X"}, "models": ["hunyuan-ocr"], "output": "text",
                        "prompt": {"en": "Read.", "zh": "读。"}})";

}  // namespace

LECTOR_TEST(shippedPresetsLoadInGuiOrder)
{
    std::string ids;
    for (const auto& p : presets()) ids += p.id + " ";
    LECTOR_CHECK_EQ(ids, std::string("text spotting card invoice receipt parse translate subtitle custom "));
    std::string ppocr, hunyuan;
    for (const auto& p : presets()) {
        if (p.supportsModel("ppocr-v4")) ppocr += p.id + " ";
        if (p.supportsModel("hunyuan-ocr-1.0") && p.supportsModel("hunyuan-ocr")) hunyuan += p.id + " ";
    }
    LECTOR_CHECK_EQ(ppocr, std::string("text card invoice receipt "));
    LECTOR_CHECK_EQ(hunyuan, ids);
    LECTOR_CHECK(!preset("text").supportsModel("hunyuan"));  // a prefix is not a model name
    LECTOR_CHECK_EQ(preset("card").name.zh, std::string("身份证"));
    LECTOR_CHECK_EQ(preset("invoice").name.en, std::string("Invoice"));
    LECTOR_CHECK(preset("parse").output == OutputKind::Markdown);
    LECTOR_CHECK(preset("text").output == OutputKind::Spotting);
    LECTOR_CHECK(preset("custom").output == OutputKind::Auto);
}

LECTOR_TEST(spottingAndTextBuildTheOfficialSpottingPrompt)
{
    const std::string zh = "检测并识别图片中的文字，将文本坐标格式化输出。";
    const std::string en = "Detect and recognize text in the image, and output the text coordinates in a formatted manner.";
    LECTOR_CHECK_EQ(buildPrompt(preset("spotting"), {}), zh);
    LECTOR_CHECK_EQ(buildPrompt(preset("text"), {}), zh);
    PromptArgs english;
    english.language = "en";
    LECTOR_CHECK_EQ(buildPrompt(preset("text"), english), en);
}

LECTOR_TEST(parseUsesTheSpacelessDocumentPrompt)
{
    LECTOR_CHECK_EQ(buildPrompt(preset("parse"), {}),
                    std::string("提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，"
                                "文档中公式用latex格式表示，按照阅读顺序组织进行解析。"));
    PromptArgs en;
    en.language = "en";
    LECTOR_CHECK_EQ(buildPrompt(preset("parse"), en),
                    std::string("Extract all information from the main body of the document image and represent it in "
                                "markdown format, ignoring headers and footers. Tables should be expressed in HTML format, "
                                "formulas in the document should be represented using LaTeX format, and the parsing "
                                "should be organized according to the reading order."));
}

LECTOR_TEST(extractionPromptsListFieldsLikePython)
{
    PromptArgs en;
    en.language = "en";
    LECTOR_CHECK_EQ(buildPrompt(preset("card"), en),
                    std::string("Extract the content of the fields: ['姓名', '性别', '民族', '出生', '住址', '公民身份号码'] "
                                "from the image and return it in JSON format."));
    PromptArgs zh;
    zh.fields = {"单价", "上车时间"};
    LECTOR_CHECK_EQ(buildPrompt(preset("invoice"), zh),
                    std::string("提取图片中的: ['单价', '上车时间'] 的字段内容，并按照 JSON 格式返回。"));
    LECTOR_CHECK_EQ(buildPrompt(preset("receipt"), en),
                    std::string("Extract the content of the fields: ['company', 'date', 'address', 'total'] from the "
                                "image and return it in JSON format."));
    std::string invoiceFields;
    for (const auto& f : preset("invoice").fieldNames()) invoiceFields += f + " ";
    LECTOR_CHECK_EQ(invoiceFields, std::string("发票代码 发票号码 开票日期 购买方 销售方 合计 价税合计 "));
    LECTOR_CHECK_EQ(pythonListRepr({"it's", "say \"x\"", "both ' \"", "c\\d", "tab\t"}),
                    std::string("[\"it's\", 'say \"x\"', 'both \\' \"', 'c\\\\d', 'tab\\t']"));
    LECTOR_CHECK_EQ(pythonListRepr({}), std::string("[]"));
}

LECTOR_TEST(translateSubstitutesTheTargetLanguage)
{
    const std::string enTail = " If it is a document, ignore the header and footer. Formulas should be represented in "
                               "LaTeX format, and tables should be represented in HTML format.";
    PromptArgs en;
    en.language = "en";
    LECTOR_CHECK_EQ(buildPrompt(preset("translate"), en),
                    "First extract the text, then translate the text content into English." + enTail);
    en.targetLanguage = "zh";
    LECTOR_CHECK_EQ(buildPrompt(preset("translate"), en),
                    "First extract the text, then translate the text content into Chinese." + enTail);
    PromptArgs zh;
    LECTOR_CHECK_EQ(buildPrompt(preset("translate"), zh),
                    std::string("先提取文字，再将文字内容翻译为英文。若是文档，则其中页眉、页脚忽略。公式用latex格式表示，表格用html格式表示。"));
    zh.targetLanguage = "Chinese";
    const std::string toChinese = "先提取文字，再将文字内容翻译为中文。";
    LECTOR_CHECK_EQ(buildPrompt(preset("translate"), zh).substr(0, toChinese.size()), toChinese);
    zh.targetLanguage = "日语";  // not in the list: put in as given
    const std::string toJapanese = "先提取文字，再将文字内容翻译为日语。";
    LECTOR_CHECK_EQ(buildPrompt(preset("translate"), zh).substr(0, toJapanese.size()), toJapanese);
}

LECTOR_TEST(subtitleAndCustomPrompts)
{
    LECTOR_CHECK_EQ(buildPrompt(preset("subtitle"), {}), std::string("提取图片中的字幕。"));
    PromptArgs en;
    en.language = "en";
    LECTOR_CHECK_EQ(buildPrompt(preset("subtitle"), en), std::string("Extract the subtitles from the image."));
    LECTOR_CHECK_EQ(buildPrompt(preset("custom"), {}), std::string());
    PromptArgs user;
    user.userPrompt = "输出 发票号码 的值。";
    LECTOR_CHECK_EQ(buildPrompt(preset("custom"), user), user.userPrompt);
    LECTOR_CHECK_EQ(buildPrompt(preset("card"), user), user.userPrompt);  // an explicit prompt overrides
}

LECTOR_TEST(badPresetFilesNameTheFileAndTheProblem)
{
    LECTOR_CHECK_EQ(loadError("x", kGood), std::string());
    LECTOR_CHECK(contains(loadError("x", "{\"id\": \"x\", "), "invalid JSON"));
    LECTOR_CHECK(contains(loadError("y", kGood), "must equal the file name"));
    std::string s = kGood;
    LECTOR_CHECK(contains(loadError("x", std::string(s).replace(s.find("hunyuan-ocr"), 11, "tesseract")),
                          "unknown model \"tesseract\""));
    LECTOR_CHECK(contains(loadError("x", std::string(s).replace(s.find("\"text\""), 6, "\"table\"")),
                          "unknown kind \"table\""));
    LECTOR_CHECK(contains(loadError("x", std::string(s).replace(s.find("\"prompt\""), 8, "\"promt\"")),
                          "unknown key \"promt\""));
    LECTOR_CHECK(contains(loadError("x", std::string(s).replace(s.find("Read."), 5, "Read {lang}.")),
                          "unknown placeholder {lang}"));
    LECTOR_CHECK(contains(loadError("x", std::string(s).replace(s.find("\"text\""), 6, "\"fields\"")),
                          "needs \"fields\""));
    LECTOR_CHECK(contains(loadError("x", R"({"id": "x", "name": {"en": "X", "zh": "X"}, "models": ["hunyuan-ocr"],
        "output": "fields", "prompt": {"en": "Fields {fields}", "zh": "字段"}, "fields": [{"name": "a"}]})"),
                          "needs {fields}"));
    LECTOR_CHECK(contains(loadError("x", R"({"id": "x", "name": {"en": "X", "zh": "X"}, "models": ["ppocr-v4"],
        "output": "fields", "fields": [{"name": "a", "labels": ["A"], "pattern": "([0-9]"}]})"),
                          "not a valid regex"));
    LECTOR_CHECK(contains(loadError("x", R"({"id": "x", "name": {"en": "X", "zh": "X"}, "models": ["hunyuan-ocr"],
        "output": "text"})"),
                          "exactly one of"));
    LECTOR_CHECK(contains(loadError("x", R"({"id": "x", "name": {"en": "X"}, "models": ["hunyuan-ocr"],
        "output": "text", "userPrompt": true})"),
                          "missing \"zh\""));
}

LECTOR_TEST(presetFolderErrors)
{
    auto none = loadPresets(lector::test::tempDir() / "missing");
    LECTOR_CHECK(!none.ok());
    LECTOR_CHECK_EQ(none.error().code, std::string("file_not_found"));
    const auto empty = lector::test::tempDir();
    LECTOR_CHECK(!loadPresets(empty).ok());
    // promptFrom must name a preset that has its own prompt.
    const auto dir = lector::test::tempDir();
    std::ofstream(dir / "t.json") << R"({"id": "t", "name": {"en": "T", "zh": "T"}, "models": ["hunyuan-ocr"],
        "output": "spotting", "promptFrom": "spot"})";
    auto bad = loadPresets(dir);
    LECTOR_CHECK(!bad.ok());
    LECTOR_CHECK(contains(bad.error().message, (dir / "t.json").string()));
    LECTOR_CHECK(contains(bad.error().message, "promptFrom"));
    std::ofstream(dir / "spot.json") << R"({"id": "spot", "name": {"en": "S", "zh": "S"}, "models": ["hunyuan-ocr"],
        "output": "spotting", "prompt": {"en": "Spot.", "zh": "检测。"}})";
    auto good = loadPresets(dir);
    LECTOR_CHECK_MSG(good.ok(), good.error().message);
    LECTOR_CHECK_EQ(buildPrompt(*findPreset(*good, "t"), {}), std::string("检测。"));
}
