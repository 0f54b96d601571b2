// DB post-processing: synthetic probability maps with hand-computed boxes, and the fixture
// probability maps of onnxruntime's detector against the reference pipeline's boxes.
#include "tests/unit/tst_ocr_support.h"

#include <cmath>

#include "core/ocr/db_postprocess.h"

using namespace lector::pipeline;
namespace ocr = lector::test::ocr;

namespace {

// A [h, w] map with value v inside the axis-aligned pixel rectangle [x0, x1] x [y0, y1].
at::Tensor mapWithRect(int h, int w, int x0, int y0, int x1, int y1, float v, at::Tensor base = {})
{
    at::Tensor m = base.defined() ? base : at::zeros({h, w}, at::kFloat);
    m.slice(0, y0, y1 + 1).slice(1, x0, x1 + 1).fill_(v);
    return m;
}

}  // namespace

LECTOR_TEST(findsAxisAlignedBoxAndExpandsIt)
{
    // Text pixels x 20..119, y 30..49: the contour's minimum rectangle runs through the pixel centres,
    // 99 x 19, so the expansion is 99 * 19 * 1.5 / (2 * (99 + 19)) = 11.955 pixels per side, around
    // the pixels' area [20, 120) x [30, 50) in pixel-corner coordinates; then doubled and rounded.
    const at::Tensor prob = mapWithRect(100, 200, 20, 30, 119, 49, 0.9f);
    const auto lines = dbPostprocess(prob, 400, 200, DbOptions{});  // image twice the map size
    LECTOR_CHECK_EQ(lines.size(), size_t(1));
    const double d = 99.0 * 19.0 * 1.5 / (2.0 * 118.0);
    const Quad& q = lines[0].quad;
    LECTOR_CHECK_EQ(q[0].x, std::round(2 * (20 - d)));  // 16
    LECTOR_CHECK_EQ(q[0].y, std::round(2 * (30 - d)));  // 36
    LECTOR_CHECK_EQ(q[2].x, std::round(2 * (120 + d))); // 264
    LECTOR_CHECK_EQ(q[2].y, std::round(2 * (50 + d)));  // 124
    LECTOR_CHECK_EQ(q[1].x, q[2].x);
    LECTOR_CHECK_EQ(q[3].y, q[2].y);
    LECTOR_CHECK(q[1].x > q[0].x && q[1].y < q[2].y && q[3].y > q[0].y && q[3].x < q[2].x);  // tl tr br bl
    LECTOR_CHECK_NEAR(lines[0].score, 0.9, 1e-4);
}

LECTOR_TEST(dropsWeakThinAndEmptyRegions)
{
    at::Tensor prob = mapWithRect(100, 200, 10, 10, 100, 30, 0.45f);          // above 0.3, mean below 0.6
    prob = mapWithRect(100, 200, 10, 50, 100, 51, 0.95f, prob);                // 2 pixels high
    prob = mapWithRect(100, 200, 150, 70, 151, 71, 0.95f, prob);               // a speck
    LECTOR_CHECK(dbPostprocess(prob, 200, 100, DbOptions{}).empty());
    LECTOR_CHECK(dbPostprocess(at::zeros({32, 32}), 32, 32, DbOptions{}).empty());
    DbOptions loose;
    loose.boxThreshold = 0.4f;
    LECTOR_CHECK_EQ(dbPostprocess(prob, 200, 100, loose).size(), size_t(1));
}

LECTOR_TEST(keepsRotatedBoxOrientation)
{
    // A 120 x 16 bar turned by 20 degrees about (100, 80).
    const int h = 160, w = 200;
    at::Tensor prob = at::zeros({h, w});
    auto acc = prob.accessor<float, 2>();
    const double a = 20.0 * M_PI / 180.0, c = std::cos(a), s = std::sin(a);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            const double u = (x - 100) * c + (y - 80) * s, v = -(x - 100) * s + (y - 80) * c;
            if (std::abs(u) <= 60 && std::abs(v) <= 8) acc[y][x] = 0.8f;
        }
    const auto lines = dbPostprocess(prob, w, h, DbOptions{});
    LECTOR_CHECK_EQ(lines.size(), size_t(1));
    const Quad& q = lines[0].quad;
    const double angle = std::atan2(q[1].y - q[0].y, q[1].x - q[0].x) * 180.0 / M_PI;
    LECTOR_CHECK_NEAR(angle, 20.0, 1.5);
    const double len = std::hypot(q[1].x - q[0].x, q[1].y - q[0].y);
    const double thick = std::hypot(q[3].x - q[0].x, q[3].y - q[0].y);
    const double d = 120.0 * 16.0 * 1.5 / (2.0 * 136.0);  // about 10.6
    LECTOR_CHECK_NEAR(len, 120 + 2 * d, 3.0);
    LECTOR_CHECK_NEAR(thick, 16 + 2 * d, 3.0);
}

LECTOR_TEST(ordersCornersLikePaddle)
{
    const Quad q = orderedRectCorners({50, 20}, 40, 10, 0);
    LECTOR_CHECK_NEAR(q[0].x, 30, 1e-4);
    LECTOR_CHECK_NEAR(q[0].y, 15, 1e-4);
    LECTOR_CHECK_NEAR(q[1].x, 70, 1e-4);
    LECTOR_CHECK_NEAR(q[2].y, 25, 1e-4);
    LECTOR_CHECK_NEAR(q[3].x, 30, 1e-4);
    LECTOR_CHECK_NEAR(unclipDistance(40, 10, 1.5f), 40 * 10 * 1.5 / 100.0, 1e-5);
}

LECTOR_TEST(reproducesReferenceBoxesFromFixtureMaps)
{
    const auto ref = ocr::reference();
    for (const auto& name : ocr::fixtureImages()) {
        const auto& r = ref.at(name);
        const auto file = ocr::tensors(name);
        const at::Tensor prob = file->tensor("det_output").to(at::kFloat).contiguous();  // [1, 1, H, W]
        LECTOR_CHECK_EQ(prob.size(2), r.at("det_input_hw")[0].get<int64_t>());
        // The fixture images keep their size up to the rounding to 32: 640x480, 800x360, 600x200.
        const int imageW = name == "doc_en" ? 800 : name == "receipt_zh" ? 640 : 600;
        const int imageH = name == "doc_en" ? 360 : name == "receipt_zh" ? 480 : 200;
        const auto lines = dbPostprocess(prob, imageW, imageH, DbOptions{});
        const auto& refLines = r.at("reference_lines");
        LECTOR_CHECK_MSG(lines.size() == refLines.size(), name << ": " << lines.size() << " boxes");
        for (const auto& refLine : refLines) {
            const auto want = refLine.at("box_in_image").get<std::array<int, 4>>();
            double best = 0;
            for (const auto& line : lines) best = std::max(best, ocr::iou(ocr::quadBox(line.quad), want));
            LECTOR_CHECK_MSG(best > 0.9, name << " box " << refLine.at("box_in_image").dump() << " best IoU " << best);
        }
        for (const auto& line : lines) LECTOR_CHECK(line.score >= 0.6f && line.score <= 1.0f);
        if (name == "receipt_zh") {  // no resize there: the boxes are the reference's to the pixel
            for (const auto& line : lines) {
                const auto b = ocr::quadBox(line.quad);
                bool exact = false;
                for (const auto& refLine : refLines)
                    exact |= refLine.at("box_in_image").get<std::array<float, 4>>() == b;
                LECTOR_CHECK_MSG(exact, "receipt box " << b[0] << "," << b[1] << "," << b[2] << "," << b[3]);
            }
        }
    }
}
