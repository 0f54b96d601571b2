// Normalise-and-patchify (the vision tower's input): the reference against values written out by hand
// from the definition, and the CUDA kernel against the reference, bit for bit, for HunyuanOCR's patch of
// 16, an odd patch (7) and odd grids, in float32, float16 and bfloat16.
#include <ATen/ATen.h>

#include <array>
#include <cstring>

#include "gpu/ops.h"
#include "tests/kernels/kernel_test_util.h"

namespace kt = lector::test::kernels;

namespace {

constexpr std::array<float, 3> kMean{0.48145466f, 0.4578275f, 0.40821073f};  // OpenAI CLIP, as HunyuanOCR's config
constexpr std::array<float, 3> kStd{0.26862954f, 0.26130258f, 0.27577711f};

at::Tensor randomBytes(int64_t height, int64_t width, uint64_t seed)
{
    return at::randint(0, 256, {height, width, 3}, kt::generator(seed), at::TensorOptions().dtype(at::kLong))
        .to(at::kByte);
}

at::Tensor patchified(const at::Tensor& rgb, int64_t patch, at::ScalarType type)
{
    const at::Tensor out = at::full({(rgb.size(0) / patch) * (rgb.size(1) / patch), 3 * patch * patch}, NAN,
                                    rgb.options().dtype(type));
    lector::gpu::patchify(out, rgb, patch, kMean, kStd);
    return out;
}

}  // namespace

// Every output element checked against its pixel, found by the layout's definition: patch (py, px) in
// raster order, then channel, row and column inside the patch.
LECTOR_TEST(referenceFollowsTheDefinition)
{
    for (int64_t patch : {16, 7}) {
        const int64_t gridH = 3, gridW = 5;
        const at::Tensor rgb = randomBytes(gridH * patch, gridW * patch, 7 + patch);
        const at::Tensor out = patchified(rgb, patch, at::kFloat);
        const auto* px = rgb.data_ptr<uint8_t>();
        const float* o = out.data_ptr<float>();
        int64_t wrong = 0;
        for (int64_t py = 0; py < gridH; ++py)
            for (int64_t pxi = 0; pxi < gridW; ++pxi)
                for (int c = 0; c < 3; ++c)
                    for (int64_t y = 0; y < patch; ++y)
                        for (int64_t x = 0; x < patch; ++x) {
                            const float u = px[((py * patch + y) * gridW * patch + pxi * patch + x) * 3 + c];
                            const float want = (u / 255.0f - kMean[c]) / kStd[c];
                            const float got = o[(py * gridW + pxi) * 3 * patch * patch + (c * patch + y) * patch + x];
                            wrong += std::memcmp(&want, &got, sizeof want) != 0;
                        }
        LECTOR_CHECK_MSG(wrong == 0, "patch " << patch << ": " << wrong << " elements differ from the definition");
    }
    // Known values: black and white in the red channel.
    const at::Tensor rgb = at::zeros({16, 16, 3}, at::kByte);
    rgb[0][1][0] = 255;
    const at::Tensor out = patchified(rgb, 16, at::kFloat);
    LECTOR_CHECK(std::abs(out[0][0].item<float>() - (-0.48145466f / 0.26862954f)) < 1e-6f);
    LECTOR_CHECK(std::abs(out[0][1].item<float>() - ((1.0f - 0.48145466f) / 0.26862954f)) < 1e-6f);
    // A half-precision output is the float32 value rounded once.
    const at::Tensor rgb2 = randomBytes(32, 48, 3);
    LECTOR_CHECK(at::equal(patchified(rgb2, 16, at::kHalf), patchified(rgb2, 16, at::kFloat).to(at::kHalf)));
    LECTOR_CHECK(at::equal(patchified(rgb2, 16, at::kBFloat16), patchified(rgb2, 16, at::kFloat).to(at::kBFloat16)));
}

LECTOR_TEST(rejectsMismatchedShapes)
{
    const at::Tensor rgb = randomBytes(20, 32, 1);  // 20 is not a multiple of 16
    const at::Tensor out = at::empty({2, 768}, at::kHalf);
    bool threw = false;
    try {
        lector::gpu::patchify(out, rgb, 16, kMean, kStd);
    } catch (const c10::Error&) {
        threw = true;
    }
    LECTOR_CHECK_MSG(threw, "a 32x20 image with patch 16 was accepted");
}

#ifdef LECTOR_HAVE_CUDA

LECTOR_TEST(cudaMatchesReference)
{
    kt::requireCuda();
    struct Case {
        int64_t patch, gridH, gridW;
    };
    for (const Case& c : {Case{16, 64, 64}, Case{16, 3, 37}, Case{16, 1, 1}, Case{7, 5, 9}, Case{14, 11, 2}}) {
        const at::Tensor rgb = randomBytes(c.gridH * c.patch, c.gridW * c.patch, 100 + c.gridH * c.gridW);
        for (at::ScalarType type : {at::kFloat, at::kHalf, at::kBFloat16}) {
            const at::Tensor ref = patchified(rgb, c.patch, type);
            const at::Tensor out = patchified(rgb.cuda(), c.patch, type).cpu();
            LECTOR_CHECK_MSG(at::equal(out, ref), kt::typeName(type) << " patch " << c.patch << " grid " << c.gridH
                                                                     << "x" << c.gridW << ": "
                                                                     << out.ne(ref).sum().item<int64_t>()
                                                                     << " elements differ from the reference");
        }
    }
}

#endif  // LECTOR_HAVE_CUDA
