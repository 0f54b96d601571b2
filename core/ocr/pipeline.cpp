#include "core/ocr/pipeline.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/common/timing.h"
#include "core/ocr/assemble.h"
#include "core/ocr/crop.h"
#include "core/ocr/db_postprocess.h"
#include "core/ocr/det_preprocess.h"
#include "core/ocr/line_input.h"

namespace lector::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kClsBatch = 32;

Result<model::onnx::Graph> loadGraph(const std::filesystem::path& path, const model::onnx::LoadOptions& options)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return makeError("model_not_found", path.string() + ": model file not found");
    return model::onnx::Graph::load(path, options);
}

std::string deviceName(const model::onnx::LoadOptions& o)
{
    if (o.device.is_cuda()) return "cuda:" + std::to_string(std::max<int>(0, o.device.index()));
    return "cpu";
}

std::string dtypeName(at::ScalarType t)
{
    switch (t) {
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    default: return "float32";
    }
}

}  // namespace

PpOcrPipeline::PpOcrPipeline(model::onnx::Graph det, model::onnx::Graph cls, model::onnx::Graph rec, CtcDecoder ctc,
                             const PipelineOptions& options)
    : m_det(std::move(det)), m_cls(std::move(cls)), m_rec(std::move(rec)), m_ctc(std::move(ctc)), m_options(options)
{
}

Result<PpOcrPipeline> PpOcrPipeline::load(const std::filesystem::path& modelDir, const model::onnx::LoadOptions& load,
                                          const PipelineOptions& options)
{
    auto det = loadGraph(modelDir / kDetModelFile, load);
    if (!det) return det.error();
    auto cls = loadGraph(modelDir / kClsModelFile, load);
    if (!cls) return cls.error();
    auto rec = loadGraph(modelDir / kRecModelFile, load);
    if (!rec) return rec.error();
    auto ctc = CtcDecoder::load(modelDir / kKeysFile);
    if (!ctc) return ctc.error();
    return PpOcrPipeline(std::move(det).value(), std::move(cls).value(), std::move(rec).value(),
                         std::move(ctc).value(), options);
}

int PpOcrPipeline::shapeBucket() const
{
    if (m_options.shapeBucket >= 0) return m_options.shapeBucket;
    return m_det.options().device.is_cuda() ? 128 : 0;
}

namespace {
// Appends zero rows so the batch size is a power of two (the extra rows' outputs are cut off again).
at::Tensor padBatchToPowerOfTwo(const at::Tensor& input)
{
    int64_t n = 1;
    while (n < input.size(0)) n *= 2;
    if (n == input.size(0)) return input;
    auto sizes = input.sizes().vec();
    sizes[0] = n - input.size(0);
    return at::cat({input, at::zeros(sizes, input.options())}, 0);
}
}  // namespace

at::Tensor PpOcrPipeline::detInput(const Image& image, Detection& det) const
{
    const auto start = Clock::now();
    const DetInputSize size = detInputSize(image.width, image.height, m_options.detMaxPixels);
    det.inputWidth = size.width;
    det.inputHeight = size.height;
    // Shape buckets: padded right and bottom with white (no text there; the map is cut back before
    // post-processing).
    const int bucket = shapeBucket();
    const auto padTo = [bucket](int64_t v) { return bucket > 0 ? (v + bucket - 1) / bucket * bucket : v; };
    at::Tensor input = normalizeDetInput(resizeForDet(image, size), padTo(size.height), padTo(size.width));  // [1, 3, H, W]
    det.preprocessMs = msSince(start);
    return input;
}

at::Tensor PpOcrPipeline::detProbability(const at::Tensor& input, Detection& det) const
{
    const auto start = Clock::now();
    at::Tensor prob;  // [1, 1, H, W] probability map
    {
        c10::InferenceMode guard;
        prob = m_det.run({input}).at(0);
        prob = prob.narrow(2, 0, det.inputHeight).narrow(3, 0, det.inputWidth).to(at::kCPU, at::kFloat).contiguous();
    }
    det.detMs = msSince(start);
    return prob;
}

void PpOcrPipeline::detLines(const at::Tensor& prob, Detection& det) const
{
    const auto start = Clock::now();
    const DbOptions db{m_options.detThreshold, m_options.boxThreshold, m_options.unclipRatio, m_options.minBoxSide,
                       m_options.maxCandidates};
    det.lines = dbPostprocess(prob, det.imageWidth, det.imageHeight, db);
    det.postprocessMs = msSince(start);
}

Detection PpOcrPipeline::detect(const Image& image) const
{
    Detection det;
    det.imageWidth = image.width;
    det.imageHeight = image.height;
    if (image.empty()) return det;
    const at::Tensor input = detInput(image, det);
    detLines(detProbability(input, det), det);
    return det;
}

std::vector<Result<Detection>> PpOcrPipeline::detectMany(std::span<const Image* const> images) const
{
    const auto n = static_cast<int64_t>(images.size());
    std::vector<Detection> dets(images.size());
    std::vector<at::Tensor> inputs(images.size()), probs(images.size());
    std::vector<std::string> errors(images.size());
    // Runs one stage of image i, turning its exception into that image's error.
    auto guarded = [&](int64_t i, auto&& stage) {
        if (!errors[static_cast<size_t>(i)].empty()) return;
        try {
            stage(static_cast<size_t>(i));
        } catch (const std::exception& e) {
            errors[static_cast<size_t>(i)] = e.what();
        }
    };
    for (size_t i = 0; i < images.size(); ++i) {
        dets[i].imageWidth = images[i]->width;
        dets[i].imageHeight = images[i]->height;
    }
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            guarded(i, [&](size_t k) {
                if (!images[k]->empty()) inputs[k] = detInput(*images[k], dets[k]);
            });
    });
    for (int64_t i = 0; i < n; ++i)
        guarded(i, [&](size_t k) {
            if (inputs[k].defined()) probs[k] = detProbability(inputs[k], dets[k]);
            inputs[k] = at::Tensor();
        });
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            guarded(i, [&](size_t k) {
                if (probs[k].defined()) detLines(probs[k], dets[k]);
            });
    });
    std::vector<Result<Detection>> out;
    out.reserve(images.size());
    for (size_t i = 0; i < images.size(); ++i) {
        if (errors[i].empty()) out.emplace_back(std::move(dets[i]));
        else out.emplace_back(makeError("detection_failed", errors[i]));
    }
    return out;
}

std::vector<LineText> PpOcrPipeline::recognize(const std::vector<CropRef>& refs, StageTimes* times) const
{
    std::vector<LineText> out(refs.size());
    if (refs.empty()) return out;

    auto start = Clock::now();
    std::vector<Image> crops;
    crops.reserve(refs.size());
    std::vector<LineCrop> lineCrops = cropLines(refs);
    for (size_t i = 0; i < refs.size(); ++i) {
        out[i].rotated90 = lineCrops[i].rotated90;
        crops.push_back(std::move(lineCrops[i].image));
    }
    if (times) times->cropMs += msSince(start);

    start = Clock::now();
    if (m_options.useAngleClassifier) classify(crops, out);
    if (times) times->clsMs += msSince(start);

    start = Clock::now();
    recognizeBatches(crops, out);
    if (times) times->recMs += msSince(start);
    return out;
}

void PpOcrPipeline::classify(std::vector<Image>& crops, std::vector<LineText>& out) const
{
    c10::InferenceMode guard;
    for (size_t begin = 0; begin < crops.size(); begin += kClsBatch) {
        const size_t end = std::min(crops.size(), begin + kClsBatch);
        std::vector<const Image*> batch;
        for (size_t i = begin; i < end; ++i) batch.push_back(&crops[i]);
        at::Tensor input = lineBatchInput(batch, kClsWidth);
        if (shapeBucket() > 0) input = padBatchToPowerOfTwo(input);
        const at::Tensor probs = m_cls.run({input}).at(0).narrow(0, 0, static_cast<int64_t>(batch.size()))
                                     .to(at::kCPU, at::kFloat).contiguous();
        if (probs.dim() != 2 || probs.size(0) != static_cast<int64_t>(batch.size()) || probs.size(1) != 2)
            throw std::runtime_error("angle classifier: unexpected output shape " + std::to_string(probs.dim()) + "-d");
        const float* p = probs.data_ptr<float>();  // [N, 2]: upright, turned 180 degrees
        for (size_t i = begin; i < end; ++i) {
            if (p[(i - begin) * 2 + 1] > m_options.clsThreshold) {
                crops[i] = rotate180(crops[i]);
                out[i].rotated180 = true;
            }
        }
    }
}

void PpOcrPipeline::recognizeBatches(const std::vector<Image>& crops, std::vector<LineText>& out) const
{
    std::vector<int> widths;
    widths.reserve(crops.size());
    for (const auto& c : crops) widths.push_back(scaledLineWidth(c));
    const CtcOptions ctc{m_options.recoverSpaces, m_options.spaceProbThreshold, m_options.cjkGapFactor};

    // Shape buckets (PipelineOptions::shapeBucket): batch widths rounded up to a multiple of 64 and batch
    // sizes to a power of two, so a few dozen shapes serve every page.
    const bool bucketShapes = shapeBucket() > 0;
    c10::InferenceMode guard;
    for (const RecBatch& batch : planRecBatches(widths, m_options.recMaxBatch, m_options.recMaxBatchPixels)) {
        std::vector<const Image*> images;
        for (int idx : batch.indices) images.push_back(&crops[static_cast<size_t>(idx)]);
        at::Tensor input = lineBatchInput(images, bucketShapes ? (batch.width + 63) / 64 * 64 : batch.width);
        if (bucketShapes) input = padBatchToPowerOfTwo(input);
        at::Tensor probs = m_rec.run({input}).at(0);  // [N, T, C] softmax
        if (probs.dim() == 3 && probs.size(0) > static_cast<int64_t>(images.size()))
            probs = probs.slice(0, 0, static_cast<int64_t>(images.size()));
        if (probs.dim() != 3 || probs.size(0) != static_cast<int64_t>(images.size()) ||
            probs.size(2) != m_ctc.numClasses())
            throw std::runtime_error("recogniser: output classes do not match the keys file (" +
                                     std::to_string(probs.size(-1)) + " vs " + std::to_string(m_ctc.numClasses()) + ")");
        // Reduce on the graph's device; only [N, T] values travel to the CPU.
        const auto [maxProb, argmax] = probs.max(2);
        const at::Tensor ids = argmax.to(at::kCPU, at::kLong).contiguous();                  // [N, T]
        const at::Tensor best = maxProb.to(at::kCPU, at::kFloat).contiguous();               // [N, T]
        const at::Tensor space = probs.select(2, m_ctc.spaceId()).to(at::kCPU, at::kFloat).contiguous();  // [N, T]
        const int64_t numFrames = ids.size(1);
        for (size_t k = 0; k < batch.indices.size(); ++k) {
            const int64_t off = static_cast<int64_t>(k) * numFrames;
            const auto n = static_cast<size_t>(numFrames);
            DecodedText d = m_ctc.decode({ids.data_ptr<int64_t>() + off, n}, {best.data_ptr<float>() + off, n},
                                         {space.data_ptr<float>() + off, n}, ctc);
            LineText& line = out[static_cast<size_t>(batch.indices[k])];
            line.text = std::move(d.text);
            line.confidence = d.confidence;
        }
    }
}

void PpOcrPipeline::assemble(const Detection& detection, std::span<const LineText> texts, doc::OcrResult& result) const
{
    assembleResult(detection, texts, m_options, result);
}

doc::OcrResult PpOcrPipeline::run(const Image& image) const
{
    const auto start = Clock::now();
    doc::OcrResult result;
    result.model = "ppocr-v4";
    result.device = deviceName(m_det.options());
    result.dtype = dtypeName(m_det.options().dtype);

    const Detection det = detect(image);
    std::vector<CropRef> crops;
    crops.reserve(det.lines.size());
    for (const auto& line : det.lines) crops.push_back({&image, line.quad});
    StageTimes times;
    const std::vector<LineText> texts = recognize(crops, &times);
    const auto assembleStart = Clock::now();
    assemble(det, texts, result);

    result.setTiming("preprocess", det.preprocessMs);
    result.setTiming("det", det.detMs);
    result.setTiming("crop", times.cropMs);
    result.setTiming("cls", times.clsMs);
    result.setTiming("rec", times.recMs);
    result.setTiming("postprocess", det.postprocessMs + msSince(assembleStart));
    result.setTiming("total", msSince(start));
    return result;
}

}  // namespace lector::pipeline
