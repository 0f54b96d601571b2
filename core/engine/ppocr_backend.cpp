#include "core/engine/ppocr_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "core/common/env.h"
#include "core/common/log.h"
#include "core/common/paths.h"
#include "core/common/timing.h"
#include "core/doc/field_extractor.h"
#include "core/doc/preset.h"

namespace lector::engine {

Result<std::unique_ptr<Backend>> PpOcrBackend::create(const EngineConfig& config)
{
    const auto dir = config.modelDir.empty() ? modelsDir() / "ppocr-v4" : config.modelDir;
    model::onnx::LoadOptions load;
    EngineInfo info;
    info.model = "ppocr-v4";
    if (config.device == "cuda") {
        if (!at::hasCUDA()) return makeError("device_unavailable", "--device cuda: no CUDA device is available");
        load.device = at::Device(at::kCUDA, 0);
        load.dtype = config.dtype == "float32" ? at::kFloat : at::kHalf;
        // For comparison (docs/perf.md): LECTOR_ONNX_CUDA_GRAPHS=0 runs every graph eagerly;
        // LECTOR_ONNX_CUDA_CONV=cudnn sends every convolution to cuDNN, =pointwise all but the 1x1 ones.
        load.cudaGraphs = !envOff("LECTOR_ONNX_CUDA_GRAPHS");
        using Routes = model::onnx::LoadOptions::CudaConvRoutes;
        const std::string conv = envValue("LECTOR_ONNX_CUDA_CONV");
        load.cudaConvRoutes = conv == "cudnn" ? Routes::None : conv == "pointwise" ? Routes::PointwiseOnly : Routes::PointwiseAndDepthwise;
        info.device = "cuda:0";
    } else {
        if (!config.dtype.empty() && config.dtype != "float32")
            return makeError("bad_config", "PP-OCR on the CPU runs in float32 only, not " + config.dtype);
        info.device = "cpu";
    }
    info.dtype = load.dtype == at::kHalf ? "float16" : "float32";
    auto pipeline = pipeline::PpOcrPipeline::load(dir, load);
    if (!pipeline.ok()) return pipeline.error();
    auto presets = doc::loadPresets(doc::defaultPresetsDir());
    if (!presets.ok()) return presets.error();
    auto backend = std::unique_ptr<PpOcrBackend>(
        new PpOcrBackend(std::move(pipeline).value(), std::move(info), config.maxImagesPerStep));
    for (auto& p : *presets)
        if (p.supportsModel("ppocr-v4")) backend->m_presets.push_back(std::move(p));
    for (const auto& p : backend->m_presets) backend->m_info.presets.push_back(p.id);
    backend->m_warmUp = config.warmUpPages > 0 || (config.warmUpPages < 0 && load.device.is_cuda());
    return std::unique_ptr<Backend>(std::move(backend));
}

void PpOcrBackend::warmUp()
{
    // The first receipt after loading on CUDA paid ~0.8 s more than the other first sights of a cold pass
    // (call 170: det 438, cls 113, rec 346 ms against medians of 39, 6 and 48): the libraries' handles,
    // which libtorch keeps per thread (cuDNN, cuBLAS), each kernel's module load, the allocator's first
    // blocks. One synthetic page on the engine thread pays them at load. Its own shapes are first sights
    // too (run eagerly, not captured), so it only moves the shape-independent part.
    if (!m_warmUp) return;
    m_warmUp = false;
    const auto t0 = Clock::now();
    // A white page with four dark lines of glyph-sized blocks: the detector's input, and crops of
    // several widths for the classifier and the recogniser whatever the detector finds.
    Image page(960, 640);
    std::fill(page.rgb.begin(), page.rgb.end(), std::uint8_t{255});
    std::vector<pipeline::CropRef> crops;
    for (int k = 0; k < 4; ++k) {
        const int y0 = 80 + 140 * k, y1 = y0 + 28, x0 = 60, x1 = x0 + 200 + 180 * k;
        for (int x = x0; x < x1; ++x)
            if ((x - x0) % 22 < 16)
                for (int y = y0; y < y1; ++y) std::fill_n(page.row(y) + 3 * x, 3, std::uint8_t{30});
        crops.push_back({&page, {{{float(x0 - 4), float(y0 - 4)}, {float(x1 + 4), float(y0 - 4)},
                                  {float(x1 + 4), float(y1 + 4)}, {float(x0 - 4), float(y1 + 4)}}}});
    }
    try {
        const Image* images[] = {&page};
        (void)m_pipeline.detectMany(images);
        (void)m_pipeline.recognize(crops);
    } catch (const std::exception& e) {
        LECTOR_LOG_WARN("PP-OCR: the warm-up at load failed (" << e.what() << "); the first requests pay for it");
        return;
    }
    LECTOR_LOG_INFO("PP-OCR: warm-up page at load in " << msSince(t0) << " ms");
}

PpOcrBackend::PpOcrBackend(pipeline::PpOcrPipeline pipeline, EngineInfo info, int maxImagesPerStep)
    : m_pipeline(std::move(pipeline)), m_info(std::move(info)), m_maxImagesPerStep(std::max(1, maxImagesPerStep))
{
}

Result<void> PpOcrBackend::accepts(const Request& request) const
{
    if (!doc::findPreset(m_presets, request.preset))
        return makeError("unsupported_preset", request.imageName + ": preset '" + request.preset +
                                                   "' needs the HunyuanOCR model (PP-OCR runs text, card, invoice, receipt)");
    return {};
}

void PpOcrBackend::admit()
{
    m_inFlight.clear();
    while (!m_waiting.empty() && static_cast<int>(m_inFlight.size()) < m_maxImagesPerStep) {
        RequestPtr r = std::move(m_waiting.front());
        m_waiting.pop_front();
        if (r->cancelled()) {
            r->fail("cancelled", r->request().imageName + ": cancelled");
            continue;
        }
        r->markStarted();
        m_inFlight.push_back(std::move(r));
    }
}

void PpOcrBackend::step()
{
    admit();
    // 1. Detection: the images' CPU stages in parallel, the networks one after another. A failure here
    // fails that image only.
    std::vector<const Image*> images;
    for (const auto& r : m_inFlight) images.push_back(r->request().image.get());
    std::vector<Result<pipeline::Detection>> found = m_pipeline.detectMany(images);
    std::vector<pipeline::Detection> detections(m_inFlight.size());
    std::vector<bool> ok(m_inFlight.size(), true);
    std::vector<pipeline::CropRef> crops;
    std::vector<std::size_t> firstCrop(m_inFlight.size() + 1, 0);
    for (std::size_t i = 0; i < m_inFlight.size(); ++i) {
        const auto& req = m_inFlight[i]->request();
        if (found[i].ok()) {
            detections[i] = std::move(found[i]).value();
        } else {
            ok[i] = false;
            m_inFlight[i]->fail(found[i].error().code, req.imageName + ": " + found[i].error().message);
        }
        firstCrop[i] = crops.size();
        if (ok[i])
            for (const auto& line : detections[i].lines) crops.push_back({req.image.get(), line.quad});
    }
    firstCrop[m_inFlight.size()] = crops.size();

    // 2. Classification and recognition of every crop of the step together (width-sorted batches).
    pipeline::StageTimes times;
    const auto texts = m_pipeline.recognize(crops, &times);

    // 3. Assembly per image. The shared cls/rec time is split by each image's share of the crops.
    for (std::size_t i = 0; i < m_inFlight.size(); ++i) {
        if (!ok[i]) continue;
        RequestState& state = *m_inFlight[i];
        const auto& req = state.request();
        const std::size_t n = firstCrop[i + 1] - firstCrop[i];
        const double share = crops.empty() ? 0.0 : static_cast<double>(n) / crops.size();
        const auto t0 = Clock::now();
        doc::OcrResult result = resultFor(req, m_info);
        m_pipeline.assemble(detections[i], std::span(texts).subspan(firstCrop[i], n), result);
        if (const doc::Preset* preset = doc::findPreset(m_presets, req.preset); preset && !preset->fields.empty())
            doc::extractFieldsFromLines(*preset, result, req.fieldNames);
        result.setTiming("preprocess", detections[i].preprocessMs);
        result.setTiming("det", detections[i].detMs + detections[i].postprocessMs);
        result.setTiming("cls", (times.cropMs + times.clsMs) * share);
        result.setTiming("rec", times.recMs * share);
        result.setTiming("postprocess", msSince(t0));
        state.finish(std::move(result));
    }
    m_inFlight.clear();
}

void PpOcrBackend::cancel(RequestId id)
{
    for (auto it = m_waiting.begin(); it != m_waiting.end(); ++it) {
        if ((*it)->id() == id) {
            (*it)->fail("cancelled", (*it)->request().imageName + ": cancelled");
            m_waiting.erase(it);
            return;
        }
    }
}

void PpOcrBackend::cancelAll()
{
    for (auto& r : m_waiting) r->fail("cancelled", r->request().imageName + ": cancelled");
    m_waiting.clear();
}

}  // namespace lector::engine
