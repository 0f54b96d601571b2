// Line crops and the classifier / recogniser inputs: perspective crop of known content, the 90-degree
// turn of tall crops, batch inputs (size, scaling, padding, channel order) and width-sorted batching.
#include "tests/unit/tst_ocr_support.h"

#include <numeric>
#include <set>

#include "core/image/decode.h"
#include "core/ocr/crop.h"
#include "core/ocr/line_input.h"

using namespace lector::pipeline;
using lector::Image;
namespace ocr = lector::test::ocr;

namespace {

// Pixel (x, y) = (x, y, x ^ y) so every position is recognisable.
Image coordinateImage(int w, int h)
{
    Image img(w, h);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            auto* p = img.row(y) + x * 3;
            p[0] = static_cast<uint8_t>(x), p[1] = static_cast<uint8_t>(y), p[2] = static_cast<uint8_t>(x ^ y);
        }
    return img;
}

Quad rect(float x0, float y0, float x1, float y1) { return {PointF{x0, y0}, PointF{x1, y0}, PointF{x1, y1}, PointF{x0, y1}}; }

}  // namespace

LECTOR_TEST(cropsAxisAlignedQuadExactly)
{
    const Image img = coordinateImage(100, 60);
    const LineCrop c = cropLine(img, rect(10, 20, 50, 30));
    LECTOR_CHECK(!c.rotated90);
    LECTOR_CHECK_EQ(c.image.width, 40);
    LECTOR_CHECK_EQ(c.image.height, 10);
    for (int y = 0; y < 10; ++y)
        for (int x = 0; x < 40; ++x) {
            const auto* p = c.image.row(y) + x * 3;
            LECTOR_CHECK_MSG(p[0] == 10 + x && p[1] == 20 + y, "at " << x << "," << y);
        }
}

LECTOR_TEST(turnsTallCropsCounterClockwise)
{
    const Image img = coordinateImage(100, 100);
    const LineCrop c = cropLine(img, rect(30, 10, 40, 70));  // 10 wide, 60 tall
    LECTOR_CHECK(c.rotated90);
    LECTOR_CHECK_EQ(c.image.width, 60);
    LECTOR_CHECK_EQ(c.image.height, 10);
    // Counter-clockwise: the crop's top-right corner becomes the top-left.
    LECTOR_CHECK_EQ(int(c.image.row(0)[0]), 39);
    LECTOR_CHECK_EQ(int(c.image.row(0)[1]), 10);
    LECTOR_CHECK_EQ(int(c.image.row(9)[59 * 3 + 0]), 30);
    LECTOR_CHECK_EQ(int(c.image.row(9)[59 * 3 + 1]), 69);
    LECTOR_CHECK(!cropLine(img, rect(30, 10, 40, 24)).rotated90);  // 1.4 times taller: kept

    const Image turned = rotate180(c.image);
    LECTOR_CHECK_EQ(int(turned.row(9)[59 * 3 + 0]), 39);
}

LECTOR_TEST(cropsDegenerateQuadsToAtLeastOnePixel)
{
    const Image img = coordinateImage(20, 20);
    const LineCrop c = cropLine(img, rect(5, 5, 5, 5));
    LECTOR_CHECK(c.image.width >= 1 && c.image.height >= 1);
    const LineCrop outside = cropLine(img, rect(-50, -50, -10, -40));
    LECTOR_CHECK_EQ(outside.image.width, 40);
}

LECTOR_TEST(scalesLinesToHeight48)
{
    Image crop(283, 28);  // the first receipt line: the fixture's recogniser input is 486 wide
    LECTOR_CHECK_EQ(scaledLineWidth(crop), 486);
    LECTOR_CHECK_EQ(scaledLineWidth(Image(1, 100)), 1);
    LECTOR_CHECK_EQ(scaledLineWidth(Image(100000, 10)), kRecMaxWidth);
}

LECTOR_TEST(buildsPaddedBgrBatches)
{
    Image wide(96, 24), small(12, 24);  // scaled widths 192 and 24
    for (size_t i = 0; i < wide.rgb.size(); i += 3) wide.rgb[i] = 255;     // red
    for (size_t i = 0; i < small.rgb.size(); i += 3) small.rgb[i + 2] = 255;  // blue
    const std::vector<const Image*> crops = {&wide, &small};
    const at::Tensor x = lineBatchInput(crops, 320);
    LECTOR_CHECK_EQ(x.sizes().vec(), (std::vector<int64_t>{2, 3, 48, 320}));
    const auto a = x.accessor<float, 4>();
    LECTOR_CHECK_NEAR(a[0][2][10][100], 1.0, 1e-6);   // R channel (index 2) of the red crop
    LECTOR_CHECK_NEAR(a[0][0][10][100], -1.0, 1e-6);  // B
    LECTOR_CHECK_NEAR(a[0][2][10][200], 0.0, 1e-6);   // padding right of 192
    LECTOR_CHECK_NEAR(a[1][0][47][23], 1.0, 1e-6);    // B of the blue crop, last content column
    LECTOR_CHECK_NEAR(a[1][0][47][24], 0.0, 1e-6);
    const at::Tensor cls = lineBatchInput(crops, kClsWidth);  // squeezed to the classifier's width
    const auto clsA = cls.accessor<float, 4>();
    LECTOR_CHECK_NEAR(clsA[0][2][0][191], 1.0, 1e-6);
}

LECTOR_TEST(batchesSortedByWidthWithinLimits)
{
    const std::vector<int> widths = {900, 100, 400, 120, 2000, 350, 330, 90};
    const auto batches = planRecBatches(widths, 3, int64_t(48) * 1000 * 3);
    std::multiset<int> seen;
    int prevWidth = 0;
    for (const auto& b : batches) {
        LECTOR_CHECK(!b.indices.empty() && b.indices.size() <= 3);
        int widest = 0;
        for (int i : b.indices) {
            seen.insert(i);
            widest = std::max(widest, widths[size_t(i)]);
            LECTOR_CHECK(widths[size_t(i)] >= prevWidth);
            prevWidth = widths[size_t(i)];
        }
        LECTOR_CHECK_EQ(b.width, std::max(kRecMinWidth, widest));
        LECTOR_CHECK(b.indices.size() == 1 || int64_t(b.indices.size()) * b.width * 48 <= int64_t(48) * 1000 * 3);
    }
    LECTOR_CHECK_EQ(seen.size(), widths.size());
    for (int i = 0; i < int(widths.size()); ++i) LECTOR_CHECK_EQ(seen.count(i), size_t(1));
    LECTOR_CHECK_EQ(batches.back().indices, std::vector<int>{4});  // 2000 wide goes alone
}

LECTOR_TEST(cropAndScaleMatchFixtureRecognizerInput)
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("no image decoders");
    // The reference crops come from quads we do not have exactly; cut the reference's box and compare
    // loosely: same width, and mostly the same pixels.
    const auto ref = ocr::reference();
    auto img = lector::image::decodeImageFile(lector::test::fixture("fixtures/ppocr/doc_en.png"));
    LECTOR_CHECK(img.ok());
    const auto file = ocr::tensors("doc_en");
    const auto& lines = ref.at("doc_en").at("reference_lines");
    for (size_t i = 0; i < lines.size(); ++i) {
        const auto b = lines[i].at("box_in_image").get<std::array<float, 4>>();
        const LineCrop c = cropLine(*img, rect(b[0], b[1], b[2], b[3]));
        const at::Tensor want = file->tensor("rec_input_bgr_u8_" + std::to_string(i));  // [48, W, 3]
        LECTOR_CHECK_NEAR(scaledLineWidth(c.image), want.size(1), 2);
        const std::vector<const Image*> one = {&c.image};
        const at::Tensor x = lineBatchInput(one, static_cast<int>(want.size(1)))[0];  // [3, 48, W]
        const at::Tensor wantX = want.permute({2, 0, 1}).to(at::kFloat) / 127.5 - 1.0;
        const double meanDiff = (x - wantX).abs().mean().item<double>();
        LECTOR_CHECK_MSG(meanDiff < 0.08, "line " << i << " mean difference " << meanDiff);
    }
}
