// Text assembly: dropped lines (empty, low confidence), rows joined by a space, paragraphs by a blank
// line, boxes and polygons in image pixels.
#include "tests/support/lector_test.h"

#include "core/ocr/assemble.h"

using namespace lector::pipeline;

namespace {

DetectedLine line(float x0, float y0, float x1, float y1)
{
    return {Quad{PointF{x0, y0}, PointF{x1, y0}, PointF{x1, y1}, PointF{x0, y1}}, 0.9f};
}

LineText text(const std::string& t, float confidence) { return {t, confidence, false, false}; }

}  // namespace

LECTOR_TEST(assemblesRowsParagraphsAndDropsWeakLines)
{
    Detection det;
    det.imageWidth = 700;
    det.imageHeight = 500;
    det.lines = {line(40, 160.4f, 300, 180), line(40.6f, 100, 300, 120), line(500, 100, 580, 120), line(40, 130, 300, 150),
                 line(40, 230, 300, 250), line(500, 130, 580, 150)};
    const std::vector<LineText> texts = {text("noise", 0.3f), text("TOTAL", 0.95f), text("9.50", 0.9f),
                                         text("CASH", 0.97f), text("THANK YOU", 0.99f), text("", 0.0f)};
    lector::doc::OcrResult r;
    assembleResult(det, texts, PipelineOptions{}, r);
    LECTOR_CHECK_EQ(r.width, 700);
    LECTOR_CHECK_EQ(r.height, 500);
    LECTOR_CHECK_EQ(r.text, std::string("TOTAL 9.50\nCASH\n\nTHANK YOU"));
    LECTOR_CHECK_EQ(r.lines.size(), size_t(4));
    LECTOR_CHECK_EQ(r.lines[0].text, std::string("TOTAL"));
    LECTOR_CHECK((r.lines[0].box == std::array<int, 4>{40, 100, 300, 120}));
    LECTOR_CHECK_NEAR(r.lines[0].polygon[0].x, 40.6, 1e-5);
    LECTOR_CHECK_NEAR(*r.lines[1].confidence, 0.9, 1e-6);
    LECTOR_CHECK_EQ(r.lines[3].text, std::string("THANK YOU"));
}

LECTOR_TEST(emptyDetectionGivesEmptyText)
{
    Detection det;
    det.imageWidth = 10;
    det.imageHeight = 1;
    lector::doc::OcrResult r;
    r.text = "stale";
    assembleResult(det, {}, PipelineOptions{}, r);
    LECTOR_CHECK(r.lines.empty());
    LECTOR_CHECK_EQ(r.text, std::string());
}

LECTOR_TEST(clipsBoxesToTheImage)
{
    const Quad q{PointF{-3.5f, 2.2f}, PointF{50.5f, 2.2f}, PointF{50.5f, 9.9f}, PointF{-3.5f, 9.9f}};
    LECTOR_CHECK((quadBoundingBox(q, 40, 8) == std::array<int, 4>{0, 2, 40, 8}));
}
