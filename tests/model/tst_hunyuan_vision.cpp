// HunyuanOCR vision side on the fixture model (tiny random bf16 weights, real tensor names) against the
// reference tensors of ../shared/fixtures/hunyuan/golden_<image>.safetensors (transformers float32,
// position interpolation aligned with vLLM): smart resize + Pillow bicubic (exact bytes), pixel values,
// grid, patch + position embeddings, ViT output and merger output, each within 1e-4 relative error.
#include "tests/support/lector_test.h"

#include <cstdio>
#include <cstring>
#include <memory>

#include "core/image/decode.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/safetensors.h"

namespace hy = lector::model::hunyuan;
using lector::model::SafetensorsFile;

namespace {

struct Model {
    hy::HunyuanConfig config;
    hy::VisionEncoder encoder;
};

const Model& model()
{
    static const Model m = [] {
        const auto dir = lector::test::fixture("fixtures/hunyuan/tiny_model");
        auto cfg = hy::loadConfig(dir);
        if (!cfg) throw std::runtime_error(cfg.error().message);
        auto ws = hy::WeightStore::open(dir);
        if (!ws) throw std::runtime_error(ws.error().message);
        auto enc = hy::VisionEncoder::load(*ws, *cfg);
        if (!enc) throw std::runtime_error(enc.error().message);
        return Model{*cfg, std::move(*enc)};
    }();
    return m;
}

std::shared_ptr<const SafetensorsFile> golden(const std::string& name)
{
    auto f = SafetensorsFile::open(lector::test::fixture("fixtures/hunyuan/golden_" + name + ".safetensors"));
    LECTOR_CHECK_MSG(f.ok(), f.error().message);
    return *f;
}

lector::Image imageFromTensor(const at::Tensor& rgb)  // [H, W, 3] uint8
{
    const auto t = rgb.contiguous();
    lector::Image img(static_cast<int>(t.size(1)), static_cast<int>(t.size(0)));
    std::memcpy(img.rgb.data(), t.data_ptr<std::uint8_t>(), img.rgb.size());
    return img;
}

// max |ours - ref| / max |ref|, printed with the worst element when above tol.
void checkClose(const char* what, const at::Tensor& ours, const at::Tensor& ref, double tol = 1e-4)
{
    LECTOR_CHECK_MSG(ours.sizes() == ref.sizes(), what << ": shape " << ours.sizes() << " vs " << ref.sizes());
    const auto diff = (ours.to(at::kFloat) - ref.to(at::kFloat)).abs();
    const double scale = std::max(ref.abs().max().item<double>(), 1e-12);
    const double rel = diff.max().item<double>() / scale;
    const auto worst = diff.argmax().item<int64_t>();
    std::printf("  %-30s relative error %.3g\n", what, rel);
    LECTOR_CHECK_MSG(rel <= tol, what << ": relative error " << rel << " at flat index " << worst << " (ours "
                                      << ours.flatten()[worst].item<float>() << ", reference "
                                      << ref.flatten()[worst].item<float>() << ")");
}

// The fixture's definition of pixel_values, written out as loops: (u8 / 255 - mean) / std, 16x16 patches
// in raster order, each flattened as c * 256 + y * 16 + x.
at::Tensor expectedPixelValues(const at::Tensor& rgb, const hy::PreprocessConfig& cfg)  // rgb [H, W, 3] u8
{
    const auto img = rgb.contiguous();
    const auto* px = img.data_ptr<std::uint8_t>();
    const int64_t h = img.size(0), w = img.size(1), p = 16, gh = h / p, gw = w / p;
    auto out = at::empty({gh * gw, 3 * p * p}, at::kFloat);
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < gh; ++r)
        for (int64_t c = 0; c < gw; ++c)
            for (int64_t ch = 0; ch < 3; ++ch)
                for (int64_t y = 0; y < p; ++y)
                    for (int64_t x = 0; x < p; ++x) {
                        const float u = px[((r * p + y) * w + (c * p + x)) * 3 + ch];
                        o[(r * gw + c) * 3 * p * p + ch * p * p + y * p + x] = (u / 255.0f - cfg.mean[ch]) / cfg.std[ch];
                    }
    return out;
}

// Every stage for one fixture image; `input` is what the processor received.
void checkImage(const std::string& name, const lector::Image& input)
{
    const auto g = golden(name);
    const auto& m = model();
    auto resized = hy::resizeForModel(input, m.config.preprocess);
    LECTOR_CHECK_MSG(resized.ok(), resized.error().message);
    const auto refRgb = g->tensor("resized_rgb");
    LECTOR_CHECK_EQ(resized->height, static_cast<int>(refRgb.size(0)));
    LECTOR_CHECK_EQ(resized->width, static_cast<int>(refRgb.size(1)));
    LECTOR_CHECK_MSG(resized->rgb == imageFromTensor(refRgb).rgb, name << ": resized pixels differ from Pillow's");

    auto pre = hy::preprocessImage(input, m.config.preprocess);
    LECTOR_CHECK_MSG(pre.ok(), pre.error().message);
    const auto grid = g->tensor("image_grid_thw").to(at::kLong);
    LECTOR_CHECK_EQ(grid[0][0].item<int64_t>(), int64_t{1});
    LECTOR_CHECK_EQ(int64_t{pre->gridH}, grid[0][1].item<int64_t>());
    LECTOR_CHECK_EQ(int64_t{pre->gridW}, grid[0][2].item<int64_t>());
    LECTOR_CHECK_EQ(pre->originalWidth, input.width);
    LECTOR_CHECK_EQ(pre->originalHeight, input.height);
    checkClose("pixel_values", pre->pixelValues, expectedPixelValues(refRgb, m.config.preprocess), 1e-6);
    // A CUDA engine's worker asks for the model's dtype (VisionEncoder::pixelOutput()): the float32
    // values rounded once, as converting them afterwards gives, so the tower sees the same input.
    for (const at::ScalarType dtype : {at::kHalf, at::kBFloat16}) {
        auto narrow = hy::preprocessImage(input, m.config.preprocess, {dtype});
        LECTOR_CHECK_MSG(narrow.ok(), narrow.error().message);
        LECTOR_CHECK(narrow->pixelValues.scalar_type() == dtype);
        LECTOR_CHECK_MSG(at::equal(narrow->pixelValues, pre->pixelValues.to(dtype)),
                         name << ": " << dtype << " pixel values are not the float32 ones rounded");
        const double tolerance = dtype == at::kHalf ? 2e-3 : 1.6e-2;  // half an ulp at |v| ~ 2.2
        const double diff = (narrow->pixelValues.to(at::kFloat) - expectedPixelValues(refRgb, m.config.preprocess)).abs().max().item<double>();
        LECTOR_CHECK_MSG(diff <= tolerance, name << ": " << dtype << " pixel values differ by " << diff);
    }

    // A CUDA engine's worker leaves the resized bytes alone (PixelOutput::bytes) and the tower patchifies
    // them (gpu::patchify; its CPU reference on this float32 CPU encoder): the same values to the bit.
    auto bytes = hy::preprocessImage(std::make_shared<const lector::Image>(input), m.config.preprocess, {at::kFloat, true});
    LECTOR_CHECK_MSG(bytes.ok(), bytes.error().message);
    LECTOR_CHECK(!bytes->pixelValues.defined() && bytes->gridH == pre->gridH && bytes->gridW == pre->gridW);
    LECTOR_CHECK_MSG(at::equal(bytes->rgb, refRgb.to(at::kByte)), name << ": the bytes left for the tower are not Pillow's");
    LECTOR_CHECK_MSG(at::equal(m.encoder.patchPixels(*bytes), pre->pixelValues),
                     name << ": the tower's patches of the bytes differ from the host's pixel values");

    c10::InferenceMode guard;
    const auto emb = m.encoder.embed(pre->pixelValues, pre->gridH, pre->gridW);
    checkClose("vision_embeddings", emb, g->tensor("vision_embeddings"));
    const auto vit = m.encoder.runBlocks(emb);
    checkClose("vision_output", vit, g->tensor("vision_output"));
    // The merger on the reference ViT output isolates it from upstream error.
    checkClose("image_embeds (merger alone)", m.encoder.merge(g->tensor("vision_output").to(at::kFloat), pre->gridH, pre->gridW),
               g->tensor("image_embeds"));
    const auto out = m.encoder.encode(*pre);
    LECTOR_CHECK_EQ(out.size(0), pre->numImageTokens(m.config.vision.spatialMergeSize));
    checkClose("image_embeds", out, g->tensor("image_embeds"));
}

}  // namespace

// receipt_zh.png is 640x480: smart resize keeps it, so the fixture's resized_rgb is the input itself.
LECTOR_TEST(receiptMatchesReference)
{
    const auto g = golden("receipt_zh");
    checkImage("receipt_zh", imageFromTensor(g->tensor("resized_rgb")));
    LECTOR_CHECK_EQ(g->tensor("image_embeds").size(0), int64_t{317});  // (30/2)*(40/2+1)+2
    // No resizing: the bytes left for the tower are the shared image's own buffer, not a copy.
    const auto image = std::make_shared<const lector::Image>(imageFromTensor(g->tensor("resized_rgb")));
    auto bytes = hy::preprocessImage(image, model().config.preprocess, {at::kHalf, true});
    LECTOR_CHECK_MSG(bytes.ok(), bytes.error().message);
    LECTOR_CHECK(bytes->rgb.data_ptr() == static_cast<const void*>(image->rgb.data()));
}

// doc_en.png is 800x360 and is resized to 800x352 with Pillow bicubic.
LECTOR_TEST(documentMatchesReference)
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("no image decoder in this build");
    auto img = lector::image::decodeImageFile(lector::test::fixture("fixtures/hunyuan/doc_en.png"));
    LECTOR_CHECK_MSG(img.ok(), img.error().message);
    LECTOR_CHECK_EQ(img->width, 800);
    LECTOR_CHECK_EQ(img->height, 360);
    checkImage("doc_en", *img);
}

// The same numbers when attention is split into many small query chunks (the large-image path).
LECTOR_TEST(chunkedAttentionGivesSameOutput)
{
    const auto g = golden("receipt_zh");
    auto pre = hy::preprocessImage(imageFromTensor(g->tensor("resized_rgb")), model().config.preprocess);
    LECTOR_CHECK(pre.ok());
    auto enc = model().encoder;  // a copy shares the weight tensors
    enc.setAttentionScoreBudget(2 * 1200 * 7);  // 7 query rows per chunk, with a ragged tail
    c10::InferenceMode guard;
    checkClose("vision_output (chunked)", enc.runBlocks(enc.embed(pre->pixelValues, pre->gridH, pre->gridW)),
               g->tensor("vision_output"));
}

// Both fixture images through the tower together (patches back to back, attention per image) give each
// image's reference embeddings: the batch must not let one image attend to the other.
LECTOR_TEST(imagesEncodedTogetherMatchTheirReferences)
{
    if (!lector::image::imageDecodingAvailable()) LECTOR_SKIP("no image decoder in this build");
    const auto receipt = golden("receipt_zh"), doc = golden("doc_en");
    auto docImage = lector::image::decodeImageFile(lector::test::fixture("fixtures/hunyuan/doc_en.png"));
    LECTOR_CHECK_MSG(docImage.ok(), docImage.error().message);
    const auto& cfg = model().config.preprocess;
    auto a = hy::preprocessImage(imageFromTensor(receipt->tensor("resized_rgb")), cfg);
    auto b = hy::preprocessImage(*docImage, cfg);
    LECTOR_CHECK(a.ok() && b.ok());
    c10::InferenceMode guard;
    // Two receipts in a row: a run of equal images, which a GPU attends in one batched call.
    const auto out = model().encoder.encodeBatch({&*a, &*a, &*b, &*a});
    LECTOR_CHECK_EQ(out.size(), size_t(4));
    checkClose("image_embeds (batch, receipt)", out[0], receipt->tensor("image_embeds"));
    checkClose("image_embeds (batch, receipt twice)", out[1], receipt->tensor("image_embeds"));
    checkClose("image_embeds (batch, document)", out[2], doc->tensor("image_embeds"));
    checkClose("image_embeds (batch, receipt again)", out[3], receipt->tensor("image_embeds"));
}

// The device path (fused attention on libtorch 2.x) against the same reference; skipped without CUDA.
LECTOR_TEST(cudaMatchesReference)
{
    if (!at::hasCUDA()) LECTOR_SKIP("no CUDA device");
    const auto dir = lector::test::fixture("fixtures/hunyuan/tiny_model");
    auto ws = hy::WeightStore::open(dir);
    LECTOR_CHECK(ws.ok());
    auto enc = hy::VisionEncoder::load(*ws, model().config, at::kFloat, at::Device(at::kCUDA));
    LECTOR_CHECK_MSG(enc.ok(), enc.error().message);
    const auto g = golden("receipt_zh");
    auto pre = hy::preprocessImage(imageFromTensor(g->tensor("resized_rgb")), model().config.preprocess);
    LECTOR_CHECK(pre.ok());
    c10::InferenceMode guard;
    const auto out = enc->encode(*pre);
    LECTOR_CHECK(out.is_cuda());
    checkClose("image_embeds (cuda f32)", out.cpu(), g->tensor("image_embeds"));
    // The engine's way on CUDA: the bytes patchified on the device (gpu::patchify), equal to the host's.
    LECTOR_CHECK(enc->pixelOutput().bytes);
    auto bytes = hy::preprocessImage(imageFromTensor(g->tensor("resized_rgb")), model().config.preprocess, enc->pixelOutput());
    LECTOR_CHECK(bytes.ok() && bytes->rgb.defined());
    LECTOR_CHECK(at::equal(enc->patchPixels(*bytes).cpu(), pre->pixelValues));
    checkClose("image_embeds (cuda f32, bytes patchified on the device)", enc->encode(*bytes).cpu(),
               g->tensor("image_embeds"));
    auto encBf16 = hy::VisionEncoder::load(*ws, model().config, at::kBFloat16, at::Device(at::kCUDA));
    LECTOR_CHECK(encBf16.ok());
    checkClose("image_embeds (cuda bf16)", encBf16->encode(*pre).cpu(), g->tensor("image_embeds"), 3e-2);
    // A run of equal images (one batched fused-attention call): each its own. Needs no image decoder.
    const auto run = enc->encodeBatch({&*pre, &*pre, &*pre});
    LECTOR_CHECK_EQ(run.size(), size_t(3));
    for (const auto& e : run) checkClose("image_embeds (cuda f32, run of 3)", e.cpu(), g->tensor("image_embeds"));
    // And beside an image of another size.
    if (!lector::image::imageDecodingAvailable()) return;
    const auto doc = golden("doc_en");
    auto docImage = lector::image::decodeImageFile(lector::test::fixture("fixtures/hunyuan/doc_en.png"));
    LECTOR_CHECK_MSG(docImage.ok(), docImage.error().message);
    auto docPre = hy::preprocessImage(*docImage, model().config.preprocess);
    LECTOR_CHECK(docPre.ok());
    const auto batch = enc->encodeBatch({&*pre, &*pre, &*docPre});
    for (int i = 0; i < 2; ++i) checkClose("image_embeds (cuda f32, run of 2)", batch[size_t(i)].cpu(), g->tensor("image_embeds"));
    checkClose("image_embeds (cuda f32, after the run)", batch[2].cpu(), doc->tensor("image_embeds"));
}

LECTOR_TEST(encoderLoadNamesMissingTensor)
{
    const auto dir = lector::test::tempDir();
    auto w = lector::model::writeSafetensors(dir / "model.safetensors",
                                             {{"vit.embeddings.patch_embedding.weight", at::zeros({32, 3, 16, 16})}});
    LECTOR_CHECK(w.ok());
    auto ws = hy::WeightStore::open(dir);
    LECTOR_CHECK(ws.ok());
    auto enc = hy::VisionEncoder::load(*ws, model().config);
    LECTOR_CHECK(!enc.ok());
    LECTOR_CHECK_EQ(enc.error().code, std::string("bad_model"));
    LECTOR_CHECK_MSG(enc.error().message.find("vit.embeddings.patch_embedding.bias") != std::string::npos,
                     enc.error().message);
}
