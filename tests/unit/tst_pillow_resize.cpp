// Pillow-exact bicubic resize: hand-computed Pillow fixed-point results for tiny images (up- and
// down-scaling), plain copies and constants, and the HunyuanOCR fixture doc_en.png 800x360 -> 800x352,
// which must equal the reference Pillow output byte for byte.
#include "tests/support/lector_test.h"

#include <cstdint>
#include <vector>

#include "core/image/decode.h"
#include "core/image/pillow_resize.h"
#include "core/model/safetensors.h"

using lector::image::resizeBicubicPillow;

namespace {
std::vector<std::uint8_t> resizeGray(const std::vector<std::uint8_t>& src, int w, int h, int ow, int oh)
{
    std::vector<std::uint8_t> out(static_cast<size_t>(ow) * oh);
    resizeBicubicPillow(src.data(), w, h, 1, out.data(), ow, oh);
    return out;
}
}  // namespace

// Upscale 2 -> 4 (filter support 2, no antialiasing). By hand, Keys a=-0.5: output 0 has centre 0.25 and
// taps {0, 1} with weights {0.8671875, -0.0703125} / 0.796875; output 1 has centre 0.75 and taps
// {0.8671875, 0.2265625} / 1.09375. In 22-bit fixed point [100, 200] -> 91.18, 120.71, 179.29, 208.82.
LECTOR_TEST(upscalesTwoPixelsLikePillow)
{
    LECTOR_CHECK_EQ(resizeGray({100, 200}, 2, 1, 4, 1), (std::vector<std::uint8_t>{91, 121, 179, 209}));
    // Overshoot is clipped to 0..255 after the pass: [0, 255] -> -22.5, 52.82, 202.18, 277.5.
    LECTOR_CHECK_EQ(resizeGray({0, 255}, 2, 1, 4, 1), (std::vector<std::uint8_t>{0, 53, 202, 255}));
    // The same along the vertical axis (the vertical pass alone).
    LECTOR_CHECK_EQ(resizeGray({100, 200}, 1, 2, 1, 4), (std::vector<std::uint8_t>{91, 121, 179, 209}));
}

// Downscale 4 -> 2: the support doubles (antialiasing). Output 0 has centre 1.0, taps x = 0..3 at
// filter arguments -0.25, 0.25, 0.75, 1.25: weights 0.8671875, 0.8671875, 0.2265625, -0.0703125
// (sum 1.890625). [100, 200, 50, 10] -> 143.22; output 1 (centre 3.0) mirrors the taps:
// (-0.0703125*100 + 0.2265625*200 + 0.8671875*(50 + 10)) / 1.890625 = 47.77. Each pass rounds to nearest.
LECTOR_TEST(downscalesWithWiderSupport)
{
    const auto out = resizeGray({100, 200, 50, 10}, 4, 1, 2, 1);
    LECTOR_CHECK_EQ(static_cast<int>(out[0]), 143);
    LECTOR_CHECK_EQ(static_cast<int>(out[1]), 48);
}

LECTOR_TEST(keepsConstantImagesAndCopiesSameSize)
{
    lector::Image img(37, 23);
    for (size_t i = 0; i < img.rgb.size(); i += 3) {
        img.rgb[i] = 10;
        img.rgb[i + 1] = 128;
        img.rgb[i + 2] = 250;
    }
    for (auto [w, h] : {std::pair{64, 64}, std::pair{5, 3}, std::pair{37, 11}, std::pair{100, 23}}) {
        const auto out = resizeBicubicPillow(img, w, h);
        LECTOR_CHECK_EQ(out.width, w);
        LECTOR_CHECK_EQ(out.height, h);
        for (size_t i = 0; i < out.rgb.size(); i += 3)
            LECTOR_CHECK(out.rgb[i] == 10 && out.rgb[i + 1] == 128 && out.rgb[i + 2] == 250);
    }
    lector::Image ramp(7, 5);
    for (size_t i = 0; i < ramp.rgb.size(); ++i) ramp.rgb[i] = static_cast<std::uint8_t>(i * 7);
    LECTOR_CHECK(resizeBicubicPillow(ramp, 7, 5).rgb == ramp.rgb);
}

// The reference processor resized doc_en.png (800x360) to 800x352 with Pillow: byte-exact.
LECTOR_TEST(matchesPillowOnHunyuanFixture)
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("no image decoder in this build");
    const auto png = lector::test::fixture("fixtures/hunyuan/doc_en.png");
    auto img = lector::image::decodeImageFile(png);
    LECTOR_CHECK_MSG(img.ok(), img.error().message);
    LECTOR_CHECK_EQ(img->width, 800);
    LECTOR_CHECK_EQ(img->height, 360);
    auto golden = lector::model::SafetensorsFile::open(lector::test::fixture("fixtures/hunyuan/golden_doc_en.safetensors"));
    LECTOR_CHECK_MSG(golden.ok(), golden.error().message);
    const auto ref = (*golden)->tensor("resized_rgb").contiguous();  // [352, 800, 3] uint8
    LECTOR_CHECK_EQ(ref.sizes().vec(), (std::vector<int64_t>{352, 800, 3}));
    const auto out = resizeBicubicPillow(*img, 800, 352);
    const auto* r = ref.data_ptr<std::uint8_t>();
    size_t numDiff = 0, first = 0;
    for (size_t i = 0; i < out.rgb.size(); ++i)
        if (out.rgb[i] != r[i] && numDiff++ == 0) first = i;
    LECTOR_CHECK_MSG(numDiff == 0, numDiff << " bytes differ; first at byte " << first << " (row " << first / 2400
                                           << ", col " << (first % 2400) / 3 << "): ours "
                                           << int(out.rgb[first]) << ", Pillow " << int(r[first]));
}
