// The PP-OCRv4 pipeline end to end on our ONNX runtime: the three fixture images read to their exact
// texts with the reference boxes, odd image shapes, turned pages, recognition batched over several
// images, and model-directory errors. Needs models/ppocr-v4 (skips when not fetched).
#include "tests/support/lector_test.h"

#include <ATen/Parallel.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "core/engine/engine.h"
#include "core/image/decode.h"
#include "core/ocr/pipeline.h"

using namespace lector::pipeline;
using lector::Image;
namespace fs = std::filesystem;

namespace {

const PpOcrPipeline& pipeline()
{
    static PpOcrPipeline* p = [] {
        at::set_num_threads(2);
        auto loaded = PpOcrPipeline::load(lector::test::ppocrModelDir(), {});
        if (!loaded.ok()) lector::test::fail(__FILE__, __LINE__, loaded.error().message);
        return new PpOcrPipeline(std::move(loaded).value());
    }();
    return *p;
}

Image fixtureImage(const std::string& name)
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("no image decoders");
    auto img = lector::image::decodeImageFile(lector::test::fixture("fixtures/ppocr/" + name + ".png"));
    if (!img.ok()) lector::test::fail(__FILE__, __LINE__, img.error().message);
    return std::move(img).value();
}

nlohmann::json reference()
{
    std::ifstream in(lector::test::fixture("fixtures/ppocr/reference.json"));
    return nlohmann::json::parse(in);
}

std::vector<std::string> texts(const lector::doc::OcrResult& r)
{
    std::vector<std::string> out;
    for (const auto& l : r.lines) out.push_back(l.text);
    return out;
}

std::string joined(const std::vector<std::string>& v)
{
    std::string s;
    for (const auto& t : v) s += (s.empty() ? "" : " | ") + t;
    return s;
}

double iou(const std::array<int, 4>& a, const std::array<int, 4>& b)
{
    const double ix = std::max(0, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    const double iy = std::max(0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    const double inter = ix * iy;
    return inter / (double(a[2] - a[0]) * (a[3] - a[1]) + double(b[2] - b[0]) * (b[3] - b[1]) - inter);
}

// The exact texts our pipeline reads from the fixture images: the expected texts of reference.json,
// spaces included (onnxruntime's greedy decoding drops some of them; see ctc_decoder.h).
const std::map<std::string, std::vector<std::string>>& pinnedTexts()
{
    static const std::map<std::string, std::vector<std::string>> t = {
        {"receipt_zh", {"Total 合计：￥128.50", "发票号码 04452371", "开票日期 2026年11月30日", "购买方：深圳市示例科技有限公司"}},
        {"doc_en", {"Quarterly Report 2026", "Revenue grew 14.2% to $3.4 million.", "Contact: ops@example.org, +1 555 0100"}},
        {"rotated_en", {"Upside down label 42"}},
    };
    return t;
}

}  // namespace

LECTOR_TEST(readsFixtureImagesExactly)
{
    const auto ref = reference();
    for (const auto& [name, want] : pinnedTexts()) {
        const Image img = fixtureImage(name);
        const auto r = pipeline().run(img);
        LECTOR_CHECK_MSG(texts(r) == want, name << ": " << joined(texts(r)));
        // The fixture lines stand more than 1.2 line heights apart, so each is its own paragraph: the
        // schema joins paragraphs with a blank line.
        std::string text;
        for (const auto& t : want) text += (text.empty() ? "" : "\n\n") + t;
        LECTOR_CHECK_EQ(r.text, text);
        LECTOR_CHECK_EQ(r.width, img.width);
        const auto& refLines = ref.at(name).at("reference_lines");
        for (size_t i = 0; i < r.lines.size() && i < refLines.size(); ++i) {
            const double o = iou(r.lines[i].box, refLines[i].at("box_in_image").get<std::array<int, 4>>());
            LECTOR_CHECK_MSG(o > 0.8, name << " line " << i << " IoU " << o);
            LECTOR_CHECK(*r.lines[i].confidence > 0.8f);
        }
        LECTOR_CHECK(r.timing("total") > 0);
    }
}

LECTOR_TEST(batchesRecognitionAcrossImages)
{
    const Image a = fixtureImage("receipt_zh"), b = fixtureImage("doc_en");
    const Detection da = pipeline().detect(a), db = pipeline().detect(b);
    std::vector<CropRef> crops;
    for (const auto& l : da.lines) crops.push_back({&a, l.quad});
    for (const auto& l : db.lines) crops.push_back({&b, l.quad});
    StageTimes times;
    const auto lines = pipeline().recognize(crops, &times);
    LECTOR_CHECK_EQ(lines.size(), crops.size());
    LECTOR_CHECK(times.recMs > 0);
    lector::doc::OcrResult ra, rb;
    pipeline().assemble(da, std::span(lines).first(da.lines.size()), ra);
    pipeline().assemble(db, std::span(lines).subspan(da.lines.size()), rb);
    LECTOR_CHECK_EQ(texts(ra), pinnedTexts().at("receipt_zh"));
    LECTOR_CHECK_EQ(texts(rb), pinnedTexts().at("doc_en"));
}

LECTOR_TEST(readsPagesTurnedBy90Degrees)
{
    const Image doc = fixtureImage("doc_en");
    for (const int orientation : {6, 8}) {  // EXIF 6 / 8: the same page turned clockwise / counter-clockwise
        const Image turned = lector::image::applyExifOrientation(doc, orientation);
        const auto r = pipeline().run(turned);
        LECTOR_CHECK_MSG(texts(r) == pinnedTexts().at("doc_en"), orientation << ": " << joined(texts(r)));
    }
}

LECTOR_TEST(shapeBucketsReadLikeExactShapes)
{
    // The CUDA default (detector input padded to multiples of 128 with white, cls/rec batches padded to a
    // power of two), forced here on the CPU: same texts, and boxes within a pixel or two of exact shapes
    // (not identical: the detector's squeeze-excitation layers average over the whole, padded, input).
    PpOcrPipeline& p = const_cast<PpOcrPipeline&>(pipeline());
    const PipelineOptions exact = p.options();
    PipelineOptions bucketed = exact;
    bucketed.shapeBucket = 128;
    for (const auto& [name, want] : pinnedTexts()) {
        const Image img = fixtureImage(name);
        p.setOptions(exact);
        const auto a = p.run(img);
        p.setOptions(bucketed);
        const auto b = p.run(img);
        LECTOR_CHECK_MSG(texts(b) == want, name << ": " << joined(texts(b)));
        LECTOR_CHECK_EQ(b.lines.size(), a.lines.size());
        for (size_t i = 0; i < a.lines.size() && i < b.lines.size(); ++i)
            LECTOR_CHECK_MSG(iou(a.lines[i].box, b.lines[i].box) > 0.85, name << " line " << i);
    }
    p.setOptions(exact);
}

LECTOR_TEST(handlesOddImageSizes)
{
    Image blank(640, 480);
    std::fill(blank.rgb.begin(), blank.rgb.end(), 255);
    LECTOR_CHECK(pipeline().run(blank).lines.empty());

    Image thin(500, 1);
    std::fill(thin.rgb.begin(), thin.rgb.end(), 0);
    const auto t = pipeline().run(thin);
    LECTOR_CHECK(t.lines.empty());
    LECTOR_CHECK_EQ(t.height, 1);

    LECTOR_CHECK(pipeline().run(Image()).lines.empty());

    // An 8000x100 strip: the doc_en title line (y 30..70) repeated 16 times side by side.
    const Image doc = fixtureImage("doc_en");
    Image strip(8000, 100);
    std::fill(strip.rgb.begin(), strip.rgb.end(), 255);
    for (int y = 0; y < 40; ++y)
        for (int k = 0; k < 16; ++k)
            std::copy_n(doc.row(30 + y) + 30 * 3, 440 * 3, strip.row(30 + y) + (k * 500) * 3);
    const auto s = pipeline().run(strip);
    int found = 0;
    for (const auto& l : s.lines) found += l.text.find("Quarterly Report 2026") != std::string::npos;
    LECTOR_CHECK_MSG(found >= 14, "strip: " << joined(texts(s)));
}

LECTOR_TEST(boundsTimeOnHugeScans)
{
    // receipt_zh scaled to 7040 x 5280 (37 megapixels): detection works on ~2 megapixels, crops come
    // from the full-resolution image.
    const Image small = fixtureImage("receipt_zh");
    Image big(small.width * 11, small.height * 11);
    for (int y = 0; y < big.height; ++y)
        for (int x = 0; x < big.width; ++x) std::copy_n(small.row(y / 11) + (x / 11) * 3, 3, big.row(y) + x * 3);
    const auto start = std::chrono::steady_clock::now();
    const auto r = pipeline().run(big);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    LECTOR_CHECK_MSG(seconds < 20, "took " << seconds << " s");
    LECTOR_CHECK_MSG(texts(r).size() == 4, joined(texts(r)));
    LECTOR_CHECK_EQ(texts(r)[1], std::string("发票号码 04452371"));
}

LECTOR_TEST(reportsMissingModelFiles)
{
    const fs::path dir = lector::test::tempDir();
    auto none = PpOcrPipeline::load(dir, {});
    LECTOR_CHECK(!none.ok());
    LECTOR_CHECK_EQ(none.error().code, std::string("model_not_found"));
    LECTOR_CHECK(none.error().message.find(kDetModelFile) != std::string::npos);

    const fs::path models = lector::test::ppocrModelDir();
    for (const char* f : {kDetModelFile, kClsModelFile, kRecModelFile}) fs::copy_file(models / f, dir / f);
    auto noKeys = PpOcrPipeline::load(dir, {});
    LECTOR_CHECK_EQ(noKeys.error().code, std::string("model_not_found"));
    LECTOR_CHECK(noKeys.error().message.find(kKeysFile) != std::string::npos);
}

LECTOR_TEST(detectManyEqualsDetectOneByOne)
{
    // The engine's path: several images' CPU stages in parallel, the networks in turn. Same lines as
    // one image at a time, an empty image among them included.
    std::vector<Image> images;
    for (const auto& [name, want] : pinnedTexts()) images.push_back(fixtureImage(name));
    images.emplace_back();
    std::vector<const Image*> refs;
    for (const Image& img : images) refs.push_back(&img);
    const auto many = pipeline().detectMany(refs);
    LECTOR_CHECK_EQ(many.size(), images.size());
    for (size_t i = 0; i < images.size(); ++i) {
        LECTOR_CHECK_MSG(many[i].ok(), "image " << i << ": " << many[i].error().message);
        const auto one = pipeline().detect(images[i]);
        LECTOR_CHECK_EQ(many[i]->imageWidth, images[i].width);
        LECTOR_CHECK_EQ(many[i]->lines.size(), one.lines.size());
        for (size_t k = 0; k < one.lines.size() && k < many[i]->lines.size(); ++k) {
            LECTOR_CHECK(many[i]->lines[k].score == one.lines[k].score);
            for (int c = 0; c < 4; ++c) {
                LECTOR_CHECK(many[i]->lines[k].quad[c].x == one.lines[k].quad[c].x);
                LECTOR_CHECK(many[i]->lines[k].quad[c].y == one.lines[k].quad[c].y);
            }
        }
    }
    LECTOR_CHECK(many.back()->lines.empty());
    LECTOR_CHECK(!many.front()->lines.empty());
}

// The warm-up page at load (on by default on CUDA; asked for here on the CPU) goes through det, cls and
// rec on the engine thread before Engine::create returns, and the engine then reads the fixtures exactly.
LECTOR_TEST(engineReadsExactlyAfterItsWarmUpPage)
{
    using namespace lector::engine;
    const Image receipt = fixtureImage("receipt_zh"), doc = fixtureImage("doc_en");
    EngineConfig config;
    config.modelDir = lector::test::ppocrModelDir();
    config.threads = 2;
    config.warmUpPages = 1;
    auto engine = Engine::create(config);
    LECTOR_CHECK_MSG(engine.ok(), engine.error().message);
    std::mutex mutex;
    std::condition_variable cv;
    std::map<std::string, lector::doc::OcrResult> results;
    for (const auto& [name, img] : {std::pair{"receipt_zh", &receipt}, std::pair{"doc_en", &doc}}) {
        Request r;
        r.imageName = name;
        r.image = std::make_shared<const Image>(*img);
        Callbacks cb;
        cb.onFinished = [&](RequestId, lector::doc::OcrResult res) {
            std::lock_guard lock(mutex);
            results[res.image] = std::move(res);
            cv.notify_all();
        };
        LECTOR_CHECK((*engine)->submit(std::move(r), std::move(cb)).ok());
    }
    std::unique_lock lock(mutex);
    LECTOR_CHECK(cv.wait_for(lock, std::chrono::seconds(120), [&] { return results.size() == 2; }));
    for (const char* name : {"receipt_zh", "doc_en"})
        LECTOR_CHECK_MSG(texts(results[name]) == pinnedTexts().at(name), name << ": " << joined(texts(results[name])));
}
