// Field extraction from PP-OCR lines (card / invoice / receipt presets) on hand-made line sets with
// realistic layouts (tests/data/doc/ppocr_*.json): labels merged with their value in one line, labels and
// values in separate boxes, values to the right and below, multi-line addresses, several "TOTAL" hits.
#include "tests/support/lector_test.h"

#include <fstream>
#include <sstream>

#include "core/doc/export_json.h"
#include "core/doc/field_extractor.h"
#include "core/doc/preset.h"
#include "tests/unit/tst_doc_support.h"

using namespace lector::doc;
using lector::test::doc::preset;

namespace {

OcrResult linesFixture(const std::string& name)
{
    std::ifstream in(std::filesystem::path(LECTOR_DOC_TEST_DATA) / name, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    auto r = resultsFromJsonText(ss.str(), name);
    if (!r.ok() || r->size() != 1) lector::test::fail(__FILE__, __LINE__, "cannot read " + name);
    return (*r)[0];
}

std::string fieldsOf(const OcrResult& r)
{
    std::string out;
    for (const auto& [k, v] : r.fields) out += k + "=" + v + "\n";
    return out;
}

TextLine textLine(const std::string& text, std::array<int, 4> box)
{
    TextLine l;
    l.text = text;
    l.box = box;
    return l;
}

}  // namespace

LECTOR_TEST(idCardWithLabelsMergedIntoTheValueLines)
{
    OcrResult r = linesFixture("ppocr_idcard_merged.json");
    const std::string textBefore = r.text;
    extractFieldsFromLines(preset("card"), r);
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("姓名=张伟\n性别=男\n民族=汉\n出生=1990年3月7日\n"
                                             "住址=北京市海淀区中关村大街27号院3号楼2单元501室\n"
                                             "公民身份号码=11010819900307123X\n"));
    LECTOR_CHECK_EQ(r.text, textBefore);  // only fields change
    LECTOR_CHECK_EQ(r.lines.size(), std::size_t(7));
}

LECTOR_TEST(idCardWithLabelsAndValuesInSeparateBoxes)
{
    OcrResult r = linesFixture("ppocr_idcard_split.json");
    extractFieldsFromLines(preset("card"), r);
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("姓名=张伟\n性别=男\n民族=汉\n出生=1990 年 3 月 7 日\n"
                                             "住址=北京市海淀区中关村大街27号院3号楼2单元501室\n"
                                             "公民身份号码=11010819900307123X\n"));
}

LECTOR_TEST(vatInvoiceFields)
{
    OcrResult r = linesFixture("ppocr_invoice_zh.json");
    extractFieldsFromLines(preset("invoice"), r);
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("发票代码=011001900211\n发票号码=04452371\n开票日期=2023年11月08日\n"
                                             "购买方=北京星河科技有限公司\n销售方=上海云图信息技术有限公司\n"
                                             "合计=1000.00\n价税合计=1130.00\n"));
}

LECTOR_TEST(receiptFieldsPickTheLargestTotalAndSkipSubtotal)
{
    OcrResult r = linesFixture("ppocr_receipt_en.json");
    extractFieldsFromLines(preset("receipt"), r);
    // No "address" label on this receipt: the field is left out rather than guessed.
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("company=MR. D.I.Y. (M) SDN BHD\ndate=25/03/2018\ntotal=33.90\n"));
}

LECTOR_TEST(requestedFieldsOverrideThePresetDefaults)
{
    OcrResult r = linesFixture("ppocr_receipt_en.json");
    extractFieldsFromLines(preset("receipt"), r, {"total", "Cash", "CO-REG"});
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("total=33.90\nCash=50.00\nCO-REG=750441-W\n"));
}

LECTOR_TEST(valueBelowTheLabelAndDateFoundByPatternAlone)
{
    OcrResult r;
    r.lines = {textLine("7-ELEVEN MALAYSIA SDN BHD", {40, 20, 400, 50}),
               textLine("12/04/2018 21:05", {40, 60, 260, 85}),
               textLine("Address:", {40, 100, 160, 125}),
               textLine("No. 5, Jalan Ampang", {40, 130, 330, 155}),
               textLine("50450 Kuala Lumpur", {40, 160, 300, 185}),
               textLine("Total Amount", {40, 400, 220, 425}),
               textLine("RM 5.80", {40, 430, 150, 455})};
    extractFieldsFromLines(preset("receipt"), r);
    LECTOR_CHECK_EQ(fieldsOf(r), std::string("company=7-ELEVEN MALAYSIA SDN BHD\ndate=12/04/2018\n"
                                             "address=No. 5, Jalan Ampang 50450 Kuala Lumpur\ntotal=5.80\n"));
}

LECTOR_TEST(noLinesNoFields)
{
    OcrResult r;
    r.fields = {{"stale", "x"}};
    extractFieldsFromLines(preset("invoice"), r);
    LECTOR_CHECK(r.fields.empty());
}
