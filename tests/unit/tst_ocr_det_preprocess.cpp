// Detector preprocessing: input sizes (rounding to 32, the pixel bound, odd shapes), the resize
// against the fixture's det_input_bgr_u8, and the normalisation formula.
#include "tests/unit/tst_ocr_support.h"

#include "core/image/decode.h"
#include "core/ocr/det_preprocess.h"

using namespace lector::pipeline;
namespace ocr = lector::test::ocr;

LECTOR_TEST(roundsSidesToMultiplesOf32)
{
    const auto check = [](int w, int h, std::int64_t bound, int wantW, int wantH) {
        const DetInputSize s = detInputSize(w, h, bound);
        LECTOR_CHECK_MSG(s.width == wantW && s.height == wantH, w << "x" << h << " -> " << s.width << "x" << s.height);
    };
    check(800, 360, 2'000'000, 800, 352);   // the fixtures' sizes
    check(640, 480, 2'000'000, 640, 480);
    check(600, 200, 2'000'000, 608, 192);
    check(1, 1, 2'000'000, 32, 32);
    check(500, 1, 2'000'000, 512, 32);       // 1-pixel-high image
    check(8000, 100, 2'000'000, 8000, 96);   // long strip under the bound keeps its text height
    check(1000, 3000, 0, 992, 3008);         // no bound
}

LECTOR_TEST(boundsLargeImagesByPixelCount)
{
    for (const auto& [w, h] : std::vector<std::pair<int, int>>{{7000, 5000}, {4960, 7016}, {20000, 400}, {1654, 2339}}) {
        const DetInputSize s = detInputSize(w, h, 2'000'000);
        LECTOR_CHECK(s.width % 32 == 0 && s.height % 32 == 0);
        LECTOR_CHECK_MSG(int64_t(s.width) * s.height <= 2'100'000, w << "x" << h << " -> " << s.width << "x" << s.height);
        LECTOR_CHECK_MSG(int64_t(s.width) * s.height >= 1'850'000, w << "x" << h << " -> " << s.width << "x" << s.height);
        const double aspect = double(w) / h, got = double(s.width) / s.height;
        LECTOR_CHECK_NEAR(got / aspect, 1.0, 0.05);
    }
}

LECTOR_TEST(resizesFixtureLikeOpenCvReference)
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("no image decoders");
    for (const auto& name : ocr::fixtureImages()) {
        auto img = lector::image::decodeImageFile(lector::test::fixture("fixtures/ppocr/" + name + ".png"));
        LECTOR_CHECK(img.ok());
        const at::Tensor want = ocr::tensors(name)->tensor("det_input_bgr_u8");  // [H, W, 3] BGR
        const DetInputSize size = detInputSize(img->width, img->height, 2'000'000);
        LECTOR_CHECK_EQ(int64_t(size.height), want.size(0));
        LECTOR_CHECK_EQ(int64_t(size.width), want.size(1));
        const lector::Image resized = resizeForDet(*img, size);
        const at::Tensor got = at::from_blob(const_cast<uint8_t*>(resized.rgb.data()), {size.height, size.width, 3}, at::kByte)
                                   .flip(2)
                                   .to(at::kInt);
        const int maxDiff = (got - want.to(at::kInt)).abs().max().item<int>();
        LECTOR_CHECK_MSG(maxDiff <= 1, name << ": max difference " << maxDiff);
    }
}

LECTOR_TEST(normalisesInBgrOrderWithImagenetStatistics)
{
    lector::Image img(2, 1);
    img.rgb = {10, 20, 30, 255, 0, 128};
    const at::Tensor x = normalizeDetInput(img);  // [1, 3, 1, 2]
    LECTOR_CHECK_EQ(x.sizes().vec(), (std::vector<int64_t>{1, 3, 1, 2}));
    const auto a = x.accessor<float, 4>();
    LECTOR_CHECK_NEAR(a[0][0][0][0], (30 / 255.0 - 0.485) / 0.229, 1e-5);  // B
    LECTOR_CHECK_NEAR(a[0][1][0][0], (20 / 255.0 - 0.456) / 0.224, 1e-5);  // G
    LECTOR_CHECK_NEAR(a[0][2][0][0], (10 / 255.0 - 0.406) / 0.225, 1e-5);  // R
    LECTOR_CHECK_NEAR(a[0][0][0][1], (128 / 255.0 - 0.485) / 0.229, 1e-5);
    LECTOR_CHECK_NEAR(a[0][2][0][1], (255 / 255.0 - 0.406) / 0.225, 1e-5);
}

LECTOR_TEST(padsWithNormalisedWhiteTopLeftAligned)
{
    lector::Image img(2, 1);
    img.rgb = {10, 20, 30, 255, 0, 128};
    const at::Tensor x = normalizeDetInput(img, 3, 4);  // [1, 3, 3, 4]: the image in row 0, columns 0-1
    LECTOR_CHECK_EQ(x.sizes().vec(), (std::vector<int64_t>{1, 3, 3, 4}));
    LECTOR_CHECK(at::equal(x.narrow(2, 0, 1).narrow(3, 0, 2), normalizeDetInput(img)));
    const double white[3] = {(1.0 - 0.485) / 0.229, (1.0 - 0.456) / 0.224, (1.0 - 0.406) / 0.225};  // B, G, R
    const auto a = x.accessor<float, 4>();
    for (int c = 0; c < 3; ++c)
        for (int y = 0; y < 3; ++y)
            for (int px = 0; px < 4; ++px)
                if (y > 0 || px > 1) LECTOR_CHECK_NEAR(a[0][c][y][px], white[c], 1e-5);
    // Padding smaller than the image is no padding.
    LECTOR_CHECK(at::equal(normalizeDetInput(img, 1, 1), normalizeDetInput(img)));
}
