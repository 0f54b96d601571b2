// Exporters against hand-written expected text: the JSON shape of docs/result-schema.md (key order,
// omitted optional keys, rounding, error objects), reading JSON back, RFC 4180 CSV with BOM and CRLF,
// the fields CSV, plain text and Markdown.
#include "tests/support/lector_test.h"

#include <fstream>

#include "core/doc/export_csv.h"
#include "core/doc/export_json.h"
#include "core/doc/export_text.h"

using namespace lector::doc;

namespace {

const std::string kBom = "\xEF\xBB\xBF";

TextLine line(std::string text, std::array<int, 4> box, std::optional<float> conf)
{
    TextLine l;
    l.text = std::move(text);
    l.box = box;
    l.polygon = {PointF{float(box[0]), float(box[1])}, PointF{float(box[2]), float(box[1])},
                 PointF{float(box[2]), float(box[3])}, PointF{float(box[0]), float(box[3])}};
    l.confidence = conf;
    return l;
}

OcrResult ppocrResult()
{
    OcrResult r;
    r.image = "receipts/0001.jpg";
    r.width = 1240;
    r.height = 1754;
    r.model = "ppocr-v4";
    r.device = "cpu";
    r.dtype = "float32";
    r.preset = "text";
    TextLine l = line("Total 128.50", {10, 20, 200, 48}, 0.98768f);
    l.polygon = {PointF{10.4f, 20.0f}, PointF{200.0f, 20.6f}, PointF{199.5f, 48.0f}, PointF{10.0f, 47.5f}};
    r.lines.push_back(l);
    r.text = "Total 128.50";
    r.setTiming("queue", 0.44);
    r.setTiming("det", 12.04);
    r.setTiming("total", 128.16);
    return r;
}

OcrResult hunyuanFieldsResult()
{
    OcrResult r;
    r.image = "inv.png";
    r.width = 800;
    r.height = 600;
    r.model = "hunyuan-ocr-1.0";
    r.device = "cuda:0";
    r.dtype = "bfloat16";
    r.preset = "receipt";
    r.prompt = "Extract the content of the fields: ['total', 'company'] from the image and return it in JSON format.";
    r.fields = {{"total", "9.00"}, {"company", "7-ELEVEN"}};
    r.text = "total: 9.00\ncompany: 7-ELEVEN";
    r.raw = "```json\n{\"total\": \"9.00\", \"company\": \"7-ELEVEN\"}\n```";
    r.tokens = TokenCounts{1073, 21};
    return r;
}

}  // namespace

// --- JSON ---

LECTOR_TEST(jsonMatchesSchemaShapeAndRounding)
{
    const std::string expected =
        R"({"image":"receipts/0001.jpg","width":1240,"height":1754,"model":"ppocr-v4","device":"cpu",)"
        R"("dtype":"float32","preset":"text","lines":[{"text":"Total 128.50","box":[10,20,200,48],)"
        R"("polygon":[[10,20],[200,21],[200,48],[10,48]],"confidence":0.9877}],"text":"Total 128.50",)"
        R"("timing_ms":{"queue":0.4,"det":12.0,"total":128.2},"error":null})";
    LECTOR_CHECK_EQ(toJson(ppocrResult()).dump(), expected);
}

LECTOR_TEST(jsonKeepsFieldOrderAndOmitsAbsentKeys)
{
    const std::string expected =
        R"({"image":"inv.png","width":800,"height":600,"model":"hunyuan-ocr-1.0","device":"cuda:0","dtype":"bfloat16",)"
        R"("preset":"receipt","prompt":"Extract the content of the fields: ['total', 'company'] from the image and )"
        R"(return it in JSON format.","lines":[],"text":"total: 9.00\ncompany: 7-ELEVEN",)"
        R"("fields":{"total":"9.00","company":"7-ELEVEN"},)"
        R"("raw":"```json\n{\"total\": \"9.00\", \"company\": \"7-ELEVEN\"}\n```",)"
        R"("tokens":{"prompt":1073,"generated":21},"error":null})";
    LECTOR_CHECK_EQ(toJson(hunyuanFieldsResult()).dump(), expected);
}

LECTOR_TEST(jsonOfFailedImageHasErrorAndNoLines)
{
    auto r = makeErrorResult("scans/bad.jpg", lector::makeError("decode_failed", "scans/bad.jpg: truncated JPEG data"));
    r.setTiming("total", 0.25);
    LECTOR_CHECK_EQ(toJson(r).dump(),
                    std::string(R"({"image":"scans/bad.jpg","timing_ms":{"total":0.3},)"
                                R"("error":{"code":"decode_failed","message":"scans/bad.jpg: truncated JPEG data"}})"));
}

LECTOR_TEST(jsonReplacesInvalidUtf8InsteadOfThrowing)
{
    OcrResult r;
    r.image = "a.png";
    r.raw = std::string("ok \xE4\xB8", 5);  // a generation cut inside a 3-byte character
    // One U+FFFD for the cut character, as Python's bytes.decode("utf-8", "replace") gives.
    LECTOR_CHECK_EQ(toJson(r).dump(), std::string("{\"image\":\"a.png\",\"lines\":[],\"text\":\"\",\"raw\":\"ok \xEF\xBF\xBD\",\"error\":null}"));
    // Each maximal invalid subpart is one U+FFFD: a stray byte, a cut 3-byte character, a surrogate's bytes.
    r.raw = std::string("a\xFF\xE4\xB8" "b\xED\xA0\x80" "c");
    LECTOR_CHECK_EQ(toJson(r)["raw"].get<std::string>(), std::string("a\uFFFD\uFFFDb\uFFFD\uFFFD\uFFFDc"));
}

LECTOR_TEST(jsonRoundTripsThroughFromJson)
{
    const auto a = ppocrResult();
    auto back = fromJson(toJson(a));
    LECTOR_CHECK_MSG(back.ok(), back.error().message);
    LECTOR_CHECK_EQ(back->image, a.image);
    LECTOR_CHECK_EQ(back->width, 1240);
    LECTOR_CHECK_EQ(back->lines.size(), std::size_t(1));
    LECTOR_CHECK(back->lines[0].box == (std::array<int, 4>{10, 20, 200, 48}));
    LECTOR_CHECK_NEAR(back->lines[0].polygon[1].y, 21.0, 1e-6);
    LECTOR_CHECK_NEAR(*back->lines[0].confidence, 0.9877, 1e-6);
    LECTOR_CHECK_EQ(back->timingMs.size(), std::size_t(3));
    LECTOR_CHECK_EQ(back->timingMs[2].first, std::string("total"));
    LECTOR_CHECK_NEAR(back->timing("total"), 128.2, 1e-9);
    LECTOR_CHECK(!back->failed());

    auto h = fromJson(toJson(hunyuanFieldsResult()));
    LECTOR_CHECK(h.ok());
    LECTOR_CHECK_EQ(h->fields.size(), std::size_t(2));
    LECTOR_CHECK_EQ(h->fields[0].first, std::string("total"));  // model order survives
    LECTOR_CHECK_EQ(h->fields[1].second, std::string("7-ELEVEN"));
    LECTOR_CHECK_EQ(h->tokens->prompt, 1073);
    const auto original = hunyuanFieldsResult();
    LECTOR_CHECK_EQ(*h->prompt, *original.prompt);

    auto f = fromJson(toJson(makeErrorResult("x.png", lector::makeError("cancelled", "x.png: cancelled"))));
    LECTOR_CHECK(f.ok() && f->failed());
    LECTOR_CHECK_EQ(f->error->code, std::string("cancelled"));
}

LECTOR_TEST(fromJsonRejectsWrongTypesNamingTheSource)
{
    auto noImage = fromJson(Json::parse(R"({"lines":[]})"), "out.jsonl:3");
    LECTOR_CHECK(!noImage.ok());
    LECTOR_CHECK_EQ(noImage.error().code, std::string("bad_result"));
    LECTOR_CHECK(noImage.error().message.find("out.jsonl:3") != std::string::npos);
    auto badBox = fromJson(Json::parse(R"({"image":"a.png","lines":[{"text":"x","box":[1,2,3]}]})"));
    LECTOR_CHECK(!badBox.ok());
    LECTOR_CHECK(badBox.error().message.find("box") != std::string::npos);
    auto badText = fromJson(Json::parse(R"({"image":"a.png","text":5})"));
    LECTOR_CHECK(!badText.ok());
    // A plain nlohmann::json converts implicitly.
    nlohmann::json plain = {{"image", "b.png"}, {"text", "hi"}, {"error", nullptr}};
    auto ok = fromJson(plain);
    LECTOR_CHECK(ok.ok() && ok->text == "hi" && ok->lines.empty());
}

LECTOR_TEST(readsJsonObjectArrayAndJsonLines)
{
    auto one = resultsFromJsonText(R"({"image":"a.png","error":null})", "one.json");
    LECTOR_CHECK(one.ok() && one->size() == 1);
    auto arr = resultsFromJsonText(toJsonText({ppocrResult(), hunyuanFieldsResult()}), "two.json");
    LECTOR_CHECK_MSG(arr.ok(), arr.error().message);
    LECTOR_CHECK_EQ(arr->size(), std::size_t(2));
    LECTOR_CHECK_EQ((*arr)[1].image, std::string("inv.png"));
    auto lines = resultsFromJsonText("{\"image\":\"a.png\"}\n\n{\"image\":\"b.png\"}\n", "x.jsonl");
    LECTOR_CHECK(lines.ok() && lines->size() == 2 && (*lines)[1].image == "b.png");
    auto bad = resultsFromJsonText("{\"image\":\"a.png\"}\n{\"image\": broken\n", "x.jsonl");
    LECTOR_CHECK(!bad.ok());
    LECTOR_CHECK(bad.error().message.find("x.jsonl:2") != std::string::npos);
}

LECTOR_TEST(prettyJsonKeepsCoordinatesAndEachLineTogether)
{
    const auto r = ppocrResult();
    const std::string text = toJsonText({r});
    // Same JSON as the compact form, key order included.
    LECTOR_CHECK_EQ(Json::parse(text).dump(), toJson(r).dump());
    // One text line per OCR line, coordinates inline, as the schema's example shows them.
    LECTOR_CHECK(text.find("\"box\": [") != std::string::npos);
    LECTOR_CHECK(text.find("[\n      0") == std::string::npos);
    size_t lineObjects = 0;
    for (size_t at = 0; (at = text.find("\n    {\"text\": ", at)) != std::string::npos; ++at) ++lineObjects;
    LECTOR_CHECK_EQ(lineObjects, r.lines.size());
    LECTOR_CHECK(text.find("\"error\": null") != std::string::npos);
    LECTOR_CHECK(text.back() == '\n');
    // Several results: an array of objects, still the same JSON.
    const std::string two = toJsonText({r, hunyuanFieldsResult()});
    LECTOR_CHECK_EQ(Json::parse(two).dump(), toJsonArray({r, hunyuanFieldsResult()}).dump());
}

// --- CSV ---

LECTOR_TEST(csvFieldQuotingFollowsRfc4180)
{
    LECTOR_CHECK_EQ(csvField("plain text"), std::string("plain text"));
    LECTOR_CHECK_EQ(csvField("1,234.50"), std::string("\"1,234.50\""));
    LECTOR_CHECK_EQ(csvField("say \"hi\""), std::string("\"say \"\"hi\"\"\""));
    LECTOR_CHECK_EQ(csvField("two\nlines"), std::string("\"two\nlines\""));
    LECTOR_CHECK_EQ(csvField("cr\rhere"), std::string("\"cr\rhere\""));
    LECTOR_CHECK_EQ(csvField(""), std::string(""));
    LECTOR_CHECK_EQ(csvField("合计 ¥7.50"), std::string("合计 ¥7.50"));
    LECTOR_CHECK_EQ(csvRecord({"a", "b,c", ""}), std::string("a,\"b,c\",\r\n"));
}

LECTOR_TEST(csvLineModeHasBomHeaderAndOneRowPerLine)
{
    OcrResult a;
    a.image = "dir, with comma/a.png";
    a.lines.push_back(line("合计(元)", {118, 371, 224, 396}, 0.99871f));
    a.lines.push_back(line("He said \"7,50\"", {5, 6, 7, 8}, std::nullopt));
    OcrResult empty;
    empty.image = "blank.png";
    auto failed = makeErrorResult("bad.png", lector::makeError("decode_failed", "bad.png: not an image"));
    const std::string expected = kBom +
                                 "image,line,text,confidence,x0,y0,x1,y1\r\n"
                                 "\"dir, with comma/a.png\",1,合计(元),0.9987,118,371,224,396\r\n"
                                 "\"dir, with comma/a.png\",2,\"He said \"\"7,50\"\"\",,5,6,7,8\r\n"
                                 "blank.png,,,,,,,\r\n"
                                 "bad.png,,error: decode_failed: bad.png: not an image,,,,,\r\n";
    LECTOR_CHECK_EQ(toCsv({a, empty, failed}), expected);
}

LECTOR_TEST(csvFieldsModeUnionsColumnsInFirstSeenOrder)
{
    OcrResult a, b;
    a.image = "a.jpg";
    a.fields = {{"发票号码", "04452371"}, {"合计", "1,000.00"}};
    b.image = "b.jpg";
    b.fields = {{"合计", "88.00"}, {"开票日期", "2023年11月08日"}};
    auto c = makeErrorResult("c.jpg", lector::makeError("decode_failed", "c.jpg: empty file"));
    const std::string expected = kBom +
                                 "image,发票号码,合计,开票日期\r\n"
                                 "a.jpg,04452371,\"1,000.00\",\r\n"
                                 "b.jpg,,88.00,2023年11月08日\r\n"
                                 "c.jpg,,,\r\n";
    LECTOR_CHECK_EQ(toFieldsCsv({a, b, c}), expected);

    const auto p = lector::test::tempDir() / "fields.csv";
    {
        std::ofstream(p, std::ios::binary) << expected;
    }
    auto loaded = CsvFieldTable::load(p);
    LECTOR_CHECK_MSG(loaded.ok(), loaded.error().message);
    OcrResult d;
    d.image = "d.jpg";
    d.fields = {{"销售方", "上海云图"}};
    loaded->add(d);
    LECTOR_CHECK_EQ(loaded->toCsv(), kBom +
                                         "image,发票号码,合计,开票日期,销售方\r\n"
                                         "a.jpg,04452371,\"1,000.00\",,\r\n"
                                         "b.jpg,,88.00,2023年11月08日,\r\n"
                                         "c.jpg,,,,\r\n"
                                         "d.jpg,,,,上海云图\r\n");
}

LECTOR_TEST(csvParserReadsQuotedRecordsAndSpotsACutTail)
{
    const std::string text = kBom + "image,line,text\r\na.png,1,\"multi\r\nline, \"\"quoted\"\"\"\r\nb.png,1,ok\r\nc.png,1,\"cut";
    const CsvParsed p = parseCsv(text);
    LECTOR_CHECK_EQ(p.records.size(), std::size_t(3));
    LECTOR_CHECK_EQ(p.records[1][2], std::string("multi\r\nline, \"quoted\""));
    LECTOR_CHECK_EQ(p.records[2][0], std::string("b.png"));
    LECTOR_CHECK(p.partialTail);
    LECTOR_CHECK_EQ(p.completeBytes, text.find("c.png"));
    LECTOR_CHECK_EQ(p.recordStarts[2], text.find("b.png"));
    const CsvParsed lf = parseCsv("x,y\nz,w\n");
    LECTOR_CHECK(!lf.partialTail && lf.records.size() == 2 && lf.records[1][1] == "w");
}

// --- plain text and Markdown ---

LECTOR_TEST(plainTextOfEachKindOfResult)
{
    LECTOR_CHECK_EQ(toPlainText(ppocrResult()), std::string("Total 128.50\n"));
    OcrResult f;
    f.fields = {{"姓名", "张伟"}, {"性别", "男"}};
    LECTOR_CHECK_EQ(toPlainText(f), std::string("姓名: 张伟\n性别: 男\n"));
    LECTOR_CHECK_EQ(toPlainText(makeErrorResult("a", lector::makeError("x", "y"))), std::string());
}

LECTOR_TEST(markdownEscapesOcrTextAndTabulatesFields)
{
    OcrResult r;
    r.text = "# 1 not a heading\n2. item *starred* [x]\n\nnext paragraph | pipe";
    LECTOR_CHECK_EQ(toMarkdown(r), std::string("\\# 1 not a heading  \n2\\. item \\*starred\\* \\[x\\]\n\n"
                                               "next paragraph \\| pipe\n"));
    OcrResult f;
    f.fields = {{"company", "A|B Ltd"}, {"address", "LOT 1851-A,\nBALAKONG"}};
    f.text = "company: A|B Ltd";
    LECTOR_CHECK_EQ(toMarkdown(f), std::string("| Field | Value |\n|---|---|\n| company | A\\|B Ltd |\n"
                                               "| address | LOT 1851-A,<br>BALAKONG |\n"));
    OcrResult md;
    md.markdown = "# Title\n\n<table><tr><td>1</td></tr></table>";
    md.text = "Title";
    LECTOR_CHECK_EQ(toMarkdown(md), std::string("# Title\n\n<table><tr><td>1</td></tr></table>\n"));
    LECTOR_CHECK_EQ(toMarkdown(makeErrorResult("a", lector::makeError("decode_failed", "a: bad"))),
                    std::string("*error decode\\_failed: a: bad*\n"));
}
