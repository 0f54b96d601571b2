// The PP-OCR graphs on onnx::Graph against onnxruntime's outputs (shared/fixtures/ppocr, float16
// stored, so 2e-3 absolute): det probability maps, cls outputs, rec per-step softmax. Plus batching:
// a batch of rec crops padded to one width decodes to the same CTC text as each crop alone, and a
// cls batch equals the single runs.
#include "tests/support/lector_test.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "core/model/onnx/graph.h"
#include "core/model/safetensors.h"
#include "tests/model/tst_onnx_util.h"

using lector::model::SafetensorsFile;
using lector::model::onnx::Graph;
namespace fs = std::filesystem;

namespace {

const char* const kImages[] = {"doc_en", "receipt_zh", "rotated_en"};

const Graph& graph(const std::string& file)
{
    static std::map<std::string, Graph> graphs;
    auto it = graphs.find(file);
    if (it != graphs.end()) return it->second;
    return graphs.emplace(file, lector::test::onnx::loadPpocrGraph(file)).first->second;
}
const Graph& det() { return graph("ch_PP-OCRv4_det_infer.onnx"); }
const Graph& rec() { return graph("ch_PP-OCRv4_rec_infer.onnx"); }
const Graph& cls() { return graph("ch_ppocr_mobile_v2.0_cls_infer.onnx"); }

std::shared_ptr<const SafetensorsFile> fixture(const std::string& image)
{
    auto f = SafetensorsFile::open(lector::test::fixture("fixtures/ppocr/ppocr_" + image + ".safetensors"));
    LECTOR_CHECK_MSG(f.ok(), f.error().message);
    return *f;
}

// [H, W, 3] BGR u8 -> [1, 3, H, W] float32, (u8 / 255 - mean) / std per B, G, R channel
at::Tensor normalise(const at::Tensor& bgr, std::array<float, 3> mean, std::array<float, 3> stdev)
{
    auto x = bgr.to(at::kFloat).div(255.0f);
    auto m = at::tensor(std::vector<float>(mean.begin(), mean.end())), s = at::tensor(std::vector<float>(stdev.begin(), stdev.end()));
    return x.sub(m).div(s).permute({2, 0, 1}).unsqueeze(0).contiguous();
}
at::Tensor detInput(const at::Tensor& bgr) { return normalise(bgr, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}); }
at::Tensor lineInput(const at::Tensor& bgr) { return normalise(bgr, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}); }

double maxDiff(const at::Tensor& a, const at::Tensor& b)
{
    LECTOR_CHECK_MSG(a.sizes().equals(b.sizes()), "shape " << a.sizes() << " != " << b.sizes());
    return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
}

int count(const SafetensorsFile& f, const std::string& prefix)
{
    int n = 0;
    while (f.contains(prefix + std::to_string(n))) ++n;
    return n;
}

// Every rec crop of the fixtures, normalised ([1, 3, 48, W] each), in image then crop order.
std::vector<at::Tensor> allRecInputs()
{
    std::vector<at::Tensor> inputs;
    for (const char* image : kImages) {
        auto f = fixture(image);
        for (int i = 0, n = count(*f, "rec_input_bgr_u8_"); i < n; ++i)
            inputs.push_back(lineInput(f->tensor("rec_input_bgr_u8_" + std::to_string(i))));
    }
    return inputs;
}

// The width a batch of them is padded to: the widest, rounded up to a multiple of 8.
int64_t paddedRecWidth(const std::vector<at::Tensor>& inputs)
{
    int64_t width = 0;
    for (const auto& x : inputs) width = std::max(width, x.size(3));
    return (width + 7) / 8 * 8;
}

// Greedy CTC: argmax per step, repeats collapsed, blank (0) dropped.
std::vector<int64_t> ctcDecode(const at::Tensor& probs)  // [T, C]
{
    auto ids = probs.argmax(-1);
    std::vector<int64_t> out;
    int64_t prev = -1;
    for (int64_t t = 0; t < ids.size(0); ++t) {
        const int64_t id = ids[t].item<int64_t>();
        if (id != prev && id != 0) out.push_back(id);
        prev = id;
    }
    return out;
}

}  // namespace

LECTOR_TEST(detMatchesOnnxruntime)
{
    at::set_num_threads(2);
    for (const char* image : kImages) {
        auto f = fixture(image);
        auto out = det().run({detInput(f->tensor("det_input_bgr_u8"))});
        const double d = maxDiff(out.at(0), f->tensor("det_output"));
        LECTOR_CHECK_MSG(d <= 2e-3, image << ": det max diff " << d);
    }
}

LECTOR_TEST(clsMatchesOnnxruntimeAndBatchEqualsSingle)
{
    std::vector<at::Tensor> inputs, singles;
    for (const char* image : kImages) {
        auto f = fixture(image);
        for (int i = 0, n = count(*f, "cls_input_bgr_u8_"); i < n; ++i) {
            auto x = lineInput(f->tensor("cls_input_bgr_u8_" + std::to_string(i)));
            auto out = cls().run({x}).at(0);
            const double d = maxDiff(out, f->tensor("cls_output_" + std::to_string(i)));
            LECTOR_CHECK_MSG(d <= 2e-3, image << " cls " << i << ": max diff " << d);
            inputs.push_back(x);
            singles.push_back(out);
        }
    }
    LECTOR_CHECK(inputs.size() >= 4);
    auto batch = cls().run({at::cat(inputs, 0)}).at(0);
    const double d = maxDiff(batch, at::cat(singles, 0));
    LECTOR_CHECK_MSG(d <= 1e-5, "cls batch vs single: max diff " << d);
}

LECTOR_TEST(recMatchesOnnxruntime)
{
    for (const char* image : kImages) {
        auto f = fixture(image);
        for (int i = 0, n = count(*f, "rec_input_bgr_u8_"); i < n; ++i) {
            auto out = rec().run({lineInput(f->tensor("rec_input_bgr_u8_" + std::to_string(i)))}).at(0);
            const double d = maxDiff(out, f->tensor("rec_output_" + std::to_string(i)));
            LECTOR_CHECK_MSG(d <= 2e-3, image << " rec " << i << ": max diff " << d);
        }
    }
}

LECTOR_TEST(recBatchPaddedToOneWidthDecodesLikeSingleRuns)
{
    const std::vector<at::Tensor> inputs = allRecInputs();
    LECTOR_CHECK(inputs.size() >= 3);
    const int64_t width = paddedRecWidth(inputs);
    // PaddleOCR pads the normalised crops with zeros on the right.
    std::vector<at::Tensor> padded;
    for (const auto& x : inputs) padded.push_back(at::constant_pad_nd(x, {0, width - x.size(3)}, 0.0));
    auto batch = rec().run({at::cat(padded, 0)}).at(0);  // [N, T, 6625]
    LECTOR_CHECK_EQ(batch.size(0), static_cast<int64_t>(inputs.size()));
    for (size_t k = 0; k < inputs.size(); ++k) {
        auto single = rec().run({inputs[k]}).at(0)[0];
        auto fromBatch = batch[static_cast<int64_t>(k)];
        LECTOR_CHECK_MSG(ctcDecode(single) == ctcDecode(fromBatch), "crop " << k << " decodes differently in the batch");
        // Per step: the padding reaches every step through the SVTR neck's global attention and can
        // move a class boundary by a step at a character edge (blank <-> repeat, which decodes the
        // same): seen up to 4 of 55 steps for the shortest crop next to one twice as wide.
        const int64_t steps = single.size(0);
        auto same = single.argmax(-1).eq(fromBatch.narrow(0, 0, steps).argmax(-1));
        const double agree = same.to(at::kDouble).mean().item<double>();
        std::ostringstream where;
        where << same.logical_not().nonzero().view(-1).sizes() << " " << same.logical_not().nonzero().view(-1);
        std::printf("  rec crop %zu: %lld steps, %.1f%% with the same argmax in the batch %s\n", k,
                    static_cast<long long>(steps), 100 * agree, agree < 1 ? where.str().c_str() : "");
        LECTOR_CHECK_MSG(agree >= 0.9, "crop " << k << ": only " << agree << " of the steps agree");
    }
}

LECTOR_TEST(cudaFloat16StaysCloseToOnnxruntime)
{
    if (!at::hasCUDA()) LECTOR_SKIP("no CUDA here");
    lector::model::onnx::LoadOptions options;
    options.device = at::Device(at::kCUDA, 0);
    options.dtype = at::kHalf;
    auto load = [&](const char* file) { return lector::test::onnx::loadPpocrGraph(file, options); };
    Graph detHalf = load("ch_PP-OCRv4_det_infer.onnx"), recHalf = load("ch_PP-OCRv4_rec_infer.onnx"),
          clsHalf = load("ch_ppocr_mobile_v2.0_cls_infer.onnx");
    options.dtype = at::kFloat;  // float32 on the GPU, for reference (cuDNN may use TF32)
    Graph detFloat = load("ch_PP-OCRv4_det_infer.onnx");
    for (const char* image : kImages) {
        auto f = fixture(image);
        auto out = detHalf.run({detInput(f->tensor("det_input_bgr_u8"))}).at(0);
        LECTOR_CHECK(out.is_cuda() && out.scalar_type() == at::kHalf);
        const double d = maxDiff(out.cpu(), f->tensor("det_output"));
        // binarised at 0.3 like the DB post-processing, the maps must agree almost everywhere
        const double flips = out.cpu().to(at::kFloat).gt(0.3).ne(f->tensor("det_output").to(at::kFloat).gt(0.3)).to(at::kDouble).mean().item<double>();
        std::printf("  cuda fp16 det %s: max diff %.4f, mask flips %.5f%%\n", image, d, 100 * flips);
        const double d32 = maxDiff(detFloat.run({detInput(f->tensor("det_input_bgr_u8"))}).at(0).cpu(), f->tensor("det_output"));
        std::printf("  cuda fp32 det %s: max diff %.4f\n", image, d32);
        LECTOR_CHECK_MSG(flips < 1e-3, image << ": det mask differs at " << flips);
        for (int i = 0, n = count(*f, "cls_input_bgr_u8_"); i < n; ++i) {
            auto o = clsHalf.run({lineInput(f->tensor("cls_input_bgr_u8_" + std::to_string(i)))}).at(0).cpu();
            const double dc = maxDiff(o, f->tensor("cls_output_" + std::to_string(i)));
            std::printf("  cuda fp16 cls %s %d: max diff %.4f\n", image, i, dc);
            LECTOR_CHECK(dc <= 2e-2);
        }
        for (int i = 0, n = count(*f, "rec_input_bgr_u8_"); i < n; ++i) {
            auto o = recHalf.run({lineInput(f->tensor("rec_input_bgr_u8_" + std::to_string(i)))}).at(0).cpu();
            auto want = f->tensor("rec_output_" + std::to_string(i));
            const double dr = maxDiff(o, want);
            std::printf("  cuda fp16 rec %s %d: max diff %.4f\n", image, i, dr);
            LECTOR_CHECK_MSG(ctcDecode(o[0].to(at::kFloat)) == ctcDecode(want[0].to(at::kFloat)), image << " rec " << i << " decodes differently");
        }
    }
}

// LoadOptions::cudaGraphs: a shape's first run is eager, its second is captured and replayed, later
// ones replay. Every run must still match onnxruntime, with the shapes interleaved (all captures of a
// Graph share one memory pool) and with new content in a shape already captured.
LECTOR_TEST(cudaGraphReplaysMatchOnnxruntime)
{
    if (!at::hasCUDA()) LECTOR_SKIP("no CUDA here");
    lector::model::onnx::LoadOptions options;
    options.device = at::Device(at::kCUDA, 0);
    options.dtype = at::kHalf;
    Graph detHalf = lector::test::onnx::loadPpocrGraph("ch_PP-OCRv4_det_infer.onnx", options);
    Graph recHalf = lector::test::onnx::loadPpocrGraph("ch_PP-OCRv4_rec_infer.onnx", options);
    options.cudaGraphs = false;
    Graph detEager = lector::test::onnx::loadPpocrGraph("ch_PP-OCRv4_det_infer.onnx", options);

    // Three rounds over the three pages (each its own det shape), the last in reverse order.
    std::vector<std::string> order(std::begin(kImages), std::end(kImages));
    for (int round = 0; round < 3; ++round) {
        if (round == 2) std::reverse(order.begin(), order.end());
        for (const std::string& image : order) {
            auto f = fixture(image);
            const at::Tensor x = detInput(f->tensor("det_input_bgr_u8"));
            const at::Tensor out = detHalf.run({x}).at(0).cpu();
            const at::Tensor want = f->tensor("det_output");
            const double flips = out.to(at::kFloat).gt(0.3).ne(want.to(at::kFloat).gt(0.3)).to(at::kDouble).mean().item<double>();
            const double vsEager = maxDiff(out, detEager.run({x}).at(0).cpu());
            std::printf("  round %d det %s: mask flips %.5f%%, max diff from the eager run %.4f\n", round, image.c_str(),
                        100 * flips, vsEager);
            LECTOR_CHECK_MSG(flips < 1e-3, image << " round " << round << ": det mask differs at " << flips);
            LECTOR_CHECK_MSG(vsEager <= 2e-3, image << " round " << round << ": replay differs from the eager run by " << vsEager);
        }
    }
    LECTOR_CHECK_EQ(detHalf.numCapturedShapes(), std::size(kImages));

    // Every rec crop padded to one width: one shape, so from the third crop on each run replays the
    // captured plan with new pixels, and must give what the eager plan gives for that crop (the
    // eager plan is held to onnxruntime's outputs above).
    Graph recEager = lector::test::onnx::loadPpocrGraph("ch_PP-OCRv4_rec_infer.onnx", options);
    const std::vector<at::Tensor> inputs = allRecInputs();
    LECTOR_CHECK(inputs.size() >= 4);
    const int64_t width = paddedRecWidth(inputs);
    for (int round = 0; round < 2; ++round) {
        for (size_t k = 0; k < inputs.size(); ++k) {
            const at::Tensor x = at::constant_pad_nd(inputs[k], {0, width - inputs[k].size(3)}, 0.0);
            const at::Tensor o = recHalf.run({x}).at(0).cpu()[0].to(at::kFloat);
            const at::Tensor want = recEager.run({x}).at(0).cpu()[0].to(at::kFloat);
            const double d = maxDiff(o, want);
            LECTOR_CHECK_MSG(d <= 2e-3, "round " << round << " rec crop " << k << ": replay differs from the eager run by " << d);
            LECTOR_CHECK_MSG(ctcDecode(o) == ctcDecode(want), "round " << round << " rec crop " << k << " decodes differently");
        }
    }
    LECTOR_CHECK_EQ(recHalf.numCapturedShapes(), size_t{1});
}

LECTOR_TEST(detTakesAnyBatchAndMultipleOf32)
{
    auto f = fixture("rotated_en");
    auto x = detInput(f->tensor("det_input_bgr_u8"));  // [1, 3, 192, 608]
    auto two = det().run({at::cat({x, x.flip(3)}, 0)}).at(0);
    LECTOR_CHECK_EQ(two.sizes().vec(), (std::vector<int64_t>{2, 1, 192, 608}));
    LECTOR_CHECK(maxDiff(two[0].unsqueeze(0), f->tensor("det_output")) <= 2e-3);
    auto crop = det().run({x.narrow(2, 0, 96).narrow(3, 0, 320).contiguous()}).at(0);
    LECTOR_CHECK_EQ(crop.sizes().vec(), (std::vector<int64_t>{1, 1, 96, 320}));
    LECTOR_CHECK(crop.min().item<float>() >= 0.0f && crop.max().item<float>() <= 1.0f);
}
