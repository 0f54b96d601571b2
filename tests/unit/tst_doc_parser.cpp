// Model-output parsing on realistic HunyuanOCR answers (tests/data/doc, README there), good and
// malformed: spotting boxes computed by hand (X = int(x * W / 1000)), lenient JSON fields, Markdown to
// text, Tencent's repeat cleaner, and applyModelOutput for every preset.
#include "tests/support/lector_test.h"

#include <fstream>
#include <sstream>

#include "core/doc/output_parser.h"
#include "core/doc/preset.h"
#include "tests/unit/tst_doc_support.h"

using namespace lector::doc;
using lector::test::doc::preset;
using lector::test::doc::presets;

namespace {

std::string data(const std::string& name)
{
    std::ifstream in(std::filesystem::path(LECTOR_DOC_TEST_DATA) / name, std::ios::binary);
    if (!in) lector::test::fail(__FILE__, __LINE__, "missing test data " + name);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void checkLine(const TextLine& l, const std::string& text, std::array<int, 4> box)
{
    LECTOR_CHECK_EQ(l.text, text);
    LECTOR_CHECK_MSG(l.box == box, l.text << ": box " << l.box[0] << "," << l.box[1] << "," << l.box[2] << ","
                                          << l.box[3] << " expected " << box[0] << "," << box[1] << "," << box[2]
                                          << "," << box[3]);
    LECTOR_CHECK(!l.confidence.has_value());
}

std::string fieldsOf(const OcrResult& r)
{
    std::string out;
    for (const auto& [k, v] : r.fields) out += k + "=" + v + "\n";
    return out;
}

}  // namespace

// --- spotting ---

LECTOR_TEST(spottingReceiptGivesPixelBoxesAndKeepsParenthesesInText)
{
    OcrResult r;
    const std::string raw = data("spotting_receipt_zh.txt");
    applyModelOutput(preset("spotting"), raw, 800, 1200, r);
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(11));
    checkLine(r.lines[0], "华联超市（朝阳店）", {249, 49, 550, 87});
    checkLine(r.lines[1], "地址：北京市朝阳区建国路88号", {164, 115, 636, 145});
    checkLine(r.lines[2], "单号:20240315-0087", {94, 192, 409, 219});
    checkLine(r.lines[3], "日期:2024-03-15 18:42", {94, 225, 398, 253});
    checkLine(r.lines[4], "可口可乐(330ml)", {94, 314, 304, 343});
    checkLine(r.lines[5], "3.50", {632, 314, 694, 343});
    checkLine(r.lines[6], "农夫山泉 550ml x2", {94, 355, 329, 384});
    checkLine(r.lines[8], "合计(元)", {94, 445, 179, 475});
    checkLine(r.lines[10], "谢谢惠顾，欢迎再来！", {254, 1082, 545, 1116});
    // Polygon: the box corners clockwise from the top-left.
    LECTOR_CHECK_NEAR(r.lines[0].polygon[1].x, 550, 0);
    LECTOR_CHECK_NEAR(r.lines[0].polygon[1].y, 49, 0);
    LECTOR_CHECK_NEAR(r.lines[0].polygon[3].x, 249, 0);
    LECTOR_CHECK_NEAR(r.lines[0].polygon[3].y, 87, 0);
    LECTOR_CHECK_EQ(r.text, std::string("华联超市（朝阳店）\n地址：北京市朝阳区建国路88号\n单号:20240315-0087\n"
                                        "日期:2024-03-15 18:42\n可口可乐(330ml)\n3.50\n农夫山泉 550ml x2\n4.00\n"
                                        "合计(元)\n7.50\n谢谢惠顾，欢迎再来！"));
    LECTOR_CHECK_EQ(*r.raw, raw);
    LECTOR_CHECK(r.fields.empty() && !r.markdown);
}

LECTOR_TEST(textPresetOnHunyuanRunsSpotting)
{
    OcrResult r;
    applyModelOutput(preset("text"), data("spotting_receipt_zh.txt"), 800, 1200, r);
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(11));
    checkLine(r.lines[9], "7.50", {632, 445, 694, 475});
}

LECTOR_TEST(spottingRefQuadFormOnAnA4Page)
{
    OcrResult r;
    applyModelOutput(preset("spotting"), data("spotting_refquad_en.txt"), 1654, 2339, r);
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(3));
    checkLine(r.lines[0], "Invoice No. 0042", {105, 93, 497, 166});
    checkLine(r.lines[1], "Total (USD)", {105, 2058, 396, 2133});
    checkLine(r.lines[2], "$1,204.50", {1161, 2058, 1538, 2133});
    LECTOR_CHECK_EQ(r.text, std::string("Invoice No. 0042\nTotal (USD)\n$1,204.50"));
}

LECTOR_TEST(spottingWithPlaceholderTokenSpellings)
{
    OcrResult r;
    applyModelOutput(preset("spotting"), data("spotting_special_tokens.txt"), 1000, 1000, r);
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(2));
    checkLine(r.lines[0], "MENU", {450, 30, 550, 60});
    checkLine(r.lines[1], "Espresso 3,20 €", {100, 120, 620, 150});
    LECTOR_CHECK_EQ(r.text, std::string("MENU\nEspresso 3,20 €"));
}

LECTOR_TEST(spottingCutInsideCoordinatesKeepsTheTextWithoutBox)
{
    OcrResult r;
    applyModelOutput(preset("spotting"), data("spotting_cutoff_en.txt"), 1000, 1000, r);
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(2));
    checkLine(r.lines[0], "Meeting agenda", {102, 55, 418, 90});
    checkLine(r.lines[1], "1. Budget review (Q3)", {102, 130, 560, 162});
    LECTOR_CHECK_EQ(r.text, std::string("Meeting agenda\n1. Budget review (Q3)\n2. Hiring plan"));
    const auto s = parseSpotting("A(1,2),(3,4)B(5,6),(7", 1000, 1000);
    LECTOR_CHECK_EQ(s.lines.size(), std::size_t(1));
    LECTOR_CHECK_EQ(s.trailingText, std::string("B"));
}

LECTOR_TEST(spottingFourPointQuadKeepsThePolygon)
{
    OcrResult r;
    applyModelOutput(preset("spotting"), data("spotting_quad4.txt"), 2000, 1000, r);
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(1));
    checkLine(r.lines[0], "停车场出口", {500, 100, 1500, 125});
    LECTOR_CHECK_NEAR(r.lines[0].polygon[1].x, 1498, 0);
    LECTOR_CHECK_NEAR(r.lines[0].polygon[1].y, 105, 0);
    LECTOR_CHECK_NEAR(r.lines[0].polygon[3].x, 502, 0);
    LECTOR_CHECK_NEAR(r.lines[0].polygon[3].y, 120, 0);
}

LECTOR_TEST(spottingGarbageEmptyAndOutOfRangeCoordinates)
{
    OcrResult g;
    const std::string garbage = data("spotting_garbage.txt");
    applyModelOutput(preset("spotting"), garbage, 640, 480, g);
    LECTOR_CHECK(g.lines.empty());
    LECTOR_CHECK_EQ(g.text, garbage);
    OcrResult e;
    applyModelOutput(preset("spotting"), "", 640, 480, e);
    LECTOR_CHECK(e.lines.empty() && e.text.empty() && e.raw && e.raw->empty());
    // Swapped corners are ordered, values past 1000 clamp to the image edge.
    const auto s = parseSpotting("edge(900,50),(1200,10)", 500, 100);
    LECTOR_CHECK_EQ(s.lines.size(), std::size_t(1));
    checkLine(s.lines[0], "edge", {450, 1, 500, 5});
    // Six-digit numbers are not coordinates; one point at the end is text, a dangling "," is a cut.
    const auto six = parseSpotting("id(123456,1),(2,3)", 100, 100);
    LECTOR_CHECK(six.lines.empty());
    LECTOR_CHECK_EQ(six.trailingText, std::string("id(123456,1),(2,3)"));
    LECTOR_CHECK_EQ(parseSpotting("see figure (2,3)", 100, 100).trailingText, std::string("see figure (2,3)"));
    LECTOR_CHECK_EQ(parseSpotting("cut(2,3),", 100, 100).trailingText, std::string("cut"));
}

// --- fields ---

LECTOR_TEST(fieldsFromFencedJsonIdCard)
{
    OcrResult r;
    r.lines.push_back(TextLine{});  // stale data from before must go
    applyModelOutput(preset("card"), data("fields_card_fenced.txt"), 856, 540, r);
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("姓名=张伟\n性别=男\n民族=汉\n出生=1990年3月7日\n"
                                             "住址=北京市海淀区中关村大街27号院3号楼2单元501室\n"
                                             "公民身份号码=11010819900307123X\n"));
    LECTOR_CHECK(r.lines.empty());
    LECTOR_CHECK_EQ(r.text.substr(0, 15), std::string("姓名: 张伟\n"));
}

LECTOR_TEST(fieldsFromPythonStyleDictWithProseAndChinesePunctuation)
{
    OcrResult r;
    applyModelOutput(preset("invoice"), data("fields_invoice_python.txt"), 1200, 780, r);
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("发票代码=011001900211\n发票号码=04452371\n开票日期=2023年11月08日\n"
                                             "购买方=北京星河科技有限公司\n销售方=上海云图信息技术有限公司\n"
                                             "合计=1000.00\n价税合计=¥1130.00\n"));
}

LECTOR_TEST(fieldsWithNestedValuesAndNull)
{
    OcrResult r;
    applyModelOutput(preset("receipt"), data("fields_receipt_nested.txt"), 620, 900, r);
    LECTOR_CHECK_EQ(fieldsOf(r),
                    std::string("company=MR. D.I.Y. (M) SDN BHD\ndate=25/03/2018\n"
                                "address=LOT 1851-A & 1851-B, JALAN KPB 6,\nKAWASAN PERINDUSTRIAN BALAKONG\n"
                                "total=33.90\n"
                                "items=[{\"name\":\"KILAT AUTO ECO WASH & SHINE\",\"qty\":1,\"price\":\"31.90\"},"
                                "{\"name\":\"SET KUNCI\",\"qty\":2,\"price\":\"1.00\"}]\ntax=\n"));
}

LECTOR_TEST(fieldsCutOffFullWidthAndKeyValueAnswers)
{
    OcrResult t;
    applyModelOutput(preset("invoice"), data("fields_truncated.txt"), 1, 1, t);
    LECTOR_CHECK_EQ(fieldsOf(t), std::string("发票号码=04452371\n开票日期=2023年11\n"));
    OcrResult f;
    applyModelOutput(preset("card"), data("fields_fullwidth.txt"), 1, 1, f);
    LECTOR_CHECK_EQ(fieldsOf(f), std::string("姓名=李娜\n性别=女\n民族=回\n"));
    OcrResult k;
    applyModelOutput(preset("receipt"), data("fields_keyvalue.txt"), 1, 1, k);
    LECTOR_CHECK_EQ(fieldsOf(k), std::string("company=7-ELEVEN MALAYSIA SDN BHD\ndate=12/04/2018\ntotal=RM 5.80\n"));
}

LECTOR_TEST(lenientJsonEdgeCases)
{
    auto q = parseLenientJsonFields(R"({"company": "McDonald's "Express" Kiosk", "total": "12.00"})");
    LECTOR_CHECK(q.has_value());
    LECTOR_CHECK_EQ((*q)[0].second, std::string("McDonald's \"Express\" Kiosk"));
    LECTOR_CHECK_EQ((*q)[1].second, std::string("12.00"));
    auto s = parseLenientJsonFields(R"({'shop': 'Lee's Café', 'amount': 1,234.50, 'paid': True})");
    LECTOR_CHECK(s.has_value());
    LECTOR_CHECK_EQ((*s)[0].second, std::string("Lee's Café"));
    LECTOR_CHECK_EQ((*s)[1].second, std::string("1,234.50"));
    LECTOR_CHECK_EQ((*s)[2].second, std::string("true"));
    auto u = parseLenientJsonFields(R"(Result: [1] then {"name": "\u5f20\u4f1f", "emoji": "\ud83d\ude00", "n": -0.5e3})");
    LECTOR_CHECK(u.has_value());
    LECTOR_CHECK_EQ((*u)[0].second, std::string("张伟"));
    LECTOR_CHECK_EQ((*u)[1].second, std::string("\xF0\x9F\x98\x80"));
    LECTOR_CHECK_EQ((*u)[2].second, std::string("-0.5e3"));
    auto arr = parseLenientJsonFields(R"([{"item": "A"}, {"item": "B", "qty": "2"}])");
    LECTOR_CHECK(arr.has_value());
    LECTOR_CHECK_EQ((*arr)[0].second, std::string("A; B"));
    LECTOR_CHECK(!parseLenientJsonFields("no json here").has_value());
    LECTOR_CHECK(!parseLenientJsonFields("{}").has_value());
    LECTOR_CHECK(!parseLenientJsonFields(std::string(5000, '[')).has_value());  // deep nesting: no crash
    OcrResult none;
    applyModelOutput(preset("card"), "抱歉，图片中没有身份证。", 1, 1, none);
    LECTOR_CHECK(none.fields.empty());
    LECTOR_CHECK_EQ(none.text, std::string("抱歉，图片中没有身份证。"));
}

// --- Markdown, translation, subtitles ---

LECTOR_TEST(parsePresetKeepsMarkdownAndDerivesText)
{
    OcrResult r;
    const std::string md = data("parse_document_zh.md");
    applyModelOutput(preset("parse"), md, 1240, 1754, r);
    LECTOR_CHECK(r.markdown.has_value());
    LECTOR_CHECK_EQ(*r.markdown, md.substr(0, md.size() - 1));  // the final newline trimmed
    LECTOR_CHECK_EQ(r.text, std::string("第三章 数据分析\n\n3.1 销售概况\n\n"
                                        "2023年公司实现营业收入12.8亿元，同比增长15.3%。主要产品销量如下表所示：\n\n"
                                        "产品\t销量（万件）\t同比\nA型\t35.2\t+12%\nB型\t18.7\t-3%\n\n"
                                        "增长率计算公式为：\n\n$$\ng = \\frac{R_t - R_{t-1}}{R_{t-1}} \\times 100\\%\n$$\n\n"
                                        "图3-1 月度销售趋势"));
    LECTOR_CHECK(r.lines.empty());
}

LECTOR_TEST(markdownToTextHandlesPipeTablesLinksAndEntities)
{
    LECTOR_CHECK_EQ(markdownToText("| 项目 | 金额 |\n|---|:---:|\n| 房租 | 3,000 |\n\n![logo](a.png) see [site](http://x.y) &amp; a&lt;b"),
                    std::string("项目\t金额\n房租\t3,000\n\nlogo see site & a<b"));
    LECTOR_CHECK_EQ(markdownToText("```markdown\n# T\n```"), std::string("```markdown\nT\n```"));
    LECTOR_CHECK_EQ(markdownToText("if $a<b$ and $c>d$ then<br>next"), std::string("if $a<b$ and $c>d$ then\nnext"));
}

LECTOR_TEST(markdownAnswerWrappedInAFenceIsUnwrapped)
{
    OcrResult r;
    applyModelOutput(preset("parse"), "```markdown\n# 标题\n\n正文\n```", 1, 1, r);
    LECTOR_CHECK_EQ(*r.markdown, std::string("# 标题\n\n正文"));
    LECTOR_CHECK_EQ(r.text, std::string("标题\n\n正文"));
}

LECTOR_TEST(translateAndSubtitleAreTextAsIs)
{
    OcrResult t;
    const std::string tr = data("translate_en.txt");
    applyModelOutput(preset("translate"), tr, 800, 1200, t);
    LECTOR_CHECK_EQ(t.text, tr.substr(0, tr.size() - 1));
    LECTOR_CHECK(t.lines.empty() && t.fields.empty() && !t.markdown);
    OcrResult s;
    applyModelOutput(preset("subtitle"), data("subtitle_zh.txt"), 1920, 1080, s);
    LECTOR_CHECK_EQ(s.text, std::string("我们明天早上八点在车站见面，别迟到了。"));
}

LECTOR_TEST(customPromptAnswersAreRecognisedByForm)
{
    const Preset& custom = preset("custom");
    OcrResult a, b, c, d;
    applyModelOutput(custom, data("spotting_refquad_en.txt"), 1000, 1000, a);
    LECTOR_CHECK_EQ(a.lines.size(), std::size_t(3));
    applyModelOutput(custom, data("fields_card_fenced.txt"), 1, 1, b);
    LECTOR_CHECK_EQ(b.fields.size(), std::size_t(6));
    applyModelOutput(custom, data("parse_document_zh.md"), 1, 1, c);
    LECTOR_CHECK(c.markdown.has_value());
    applyModelOutput(custom, data("translate_en.txt"), 1, 1, d);
    LECTOR_CHECK(d.lines.empty() && d.fields.empty() && !d.markdown);
    LECTOR_CHECK_EQ(d.text.substr(0, 8), std::string("Hualian "));
    LECTOR_CHECK(detectOutputKind("") == OutputKind::Text);
}

// --- Tencent's repeat cleaner ---

LECTOR_TEST(repeatCleanerCutsRunawayTableRows)
{
    const std::string prefix = "<table><tr><td>日期</td><td>金额</td></tr>";
    const std::string row = "<tr><td>2024-01-01</td><td>0.00</td></tr>";
    std::string runaway = prefix;
    for (int i = 0; i < 200; ++i) runaway += row;  // 38 + 200 * 41 = 8238 characters
    LECTOR_CHECK_EQ(cleanRepeatedSubstrings(runaway), prefix + row);
    OcrResult r;
    applyModelOutput(preset("parse"), runaway, 100, 100, r);
    LECTOR_CHECK_EQ(*r.markdown, prefix + row);
    LECTOR_CHECK_EQ(*r.raw, runaway);  // raw stays what the model said
}

LECTOR_TEST(repeatCleanerCountsCharactersNotBytesAndNeedsTenCopies)
{
    std::string zh;
    for (int i = 0; i < 3000; ++i) zh += "重复";  // 6000 characters, 18000 bytes: too short
    LECTOR_CHECK_EQ(cleanRepeatedSubstrings(zh), zh);
    std::string zh8000;
    for (int i = 0; i < 4000; ++i) zh8000 += "重复";
    LECTOR_CHECK_EQ(cleanRepeatedSubstrings(zh8000), std::string("重复"));

    std::string numbers;
    for (int i = 0; numbers.size() < 8000; ++i) numbers += std::to_string(i) + ",";
    std::string nine = numbers, ten = numbers;
    for (int i = 0; i < 9; ++i) nine += "ab#";
    for (int i = 0; i < 10; ++i) ten += "ab#";
    LECTOR_CHECK_EQ(cleanRepeatedSubstrings(nine), nine);
    LECTOR_CHECK_EQ(cleanRepeatedSubstrings(ten), numbers + "ab#");

    std::string bad = "\xFF\xFE好";
    for (int i = 0; i < 4000; ++i) bad += "ab";
    LECTOR_CHECK_EQ(cleanRepeatedSubstrings(bad), std::string("\xFF\xFE好ab"));
}

LECTOR_TEST(specialTokensAreMappedOrDropped)
{
    const std::string in = "<\xEF\xBD\x9Chy_place\xE2\x96\x81holder\xE2\x96\x81no\xE2\x96\x81" "114\xEF\xBD\x9C>Fig"
                           "<\xEF\xBD\x9Chy_place\xE2\x96\x81holder\xE2\x96\x81no\xE2\x96\x81" "115\xEF\xBD\x9C>"
                           "<\xEF\xBD\x9Chy_Assistant\xEF\xBD\x9C> tail";
    LECTOR_CHECK_EQ(normalizeSpecialTokens(in), std::string("<pFig>Fig</pFig> tail"));
}
