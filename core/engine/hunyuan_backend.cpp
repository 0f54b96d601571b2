#include "core/engine/hunyuan_backend.h"

#include <chrono>

#include "core/doc/output_parser.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/weights.h"

namespace lector::engine {
namespace hy = model::hunyuan;

namespace {

double msSince(Clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The files a HunyuanOCR folder needs beyond the weights (WeightStore names missing shards itself).
Result<void> checkModelFolder(const std::filesystem::path& dir)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return makeError("model_not_found", dir.string() + ": no such model folder");
    for (const char* f : {"config.json", "tokenizer.json", "preprocessor_config.json"}) {
        if (!std::filesystem::exists(dir / f, ec))
            return makeError("model_not_found", (dir / f).string() + ": missing (not a HunyuanOCR model folder?)");
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<Backend>> HunyuanBackend::create(const EngineConfig& config)
{
    if (auto ok = checkModelFolder(config.modelDir); !ok) return ok.error();
    at::Device device = at::kCPU;
    at::ScalarType dtype = at::kFloat;
    if (config.device == "cuda") {
        if (!at::hasCUDA()) return makeError("device_unavailable", "--device cuda: no CUDA device is available");
        device = at::Device(at::kCUDA, 0);
        dtype = config.dtype == "bfloat16" ? at::kBFloat16 : config.dtype == "float32" ? at::kFloat : at::kHalf;
    } else if (!config.dtype.empty() && config.dtype != "float32") {
        return makeError("bad_config", "HunyuanOCR on the CPU runs in float32 (the reference path), not " + config.dtype);
    }
    auto backend = std::unique_ptr<HunyuanBackend>(new HunyuanBackend());
    auto cfg = hy::loadConfig(config.modelDir);
    if (!cfg.ok()) return cfg.error();
    backend->m_config = std::move(cfg).value();
    auto tokenizer = model::Tokenizer::load(config.modelDir / "tokenizer.json");
    if (!tokenizer.ok()) return tokenizer.error();
    backend->m_tokenizer = std::move(tokenizer).value();
    auto weights = hy::WeightStore::open(config.modelDir);
    if (!weights.ok()) return weights.error();
    auto vision = hy::VisionEncoder::load(*weights, backend->m_config, dtype, device);
    if (!vision.ok()) return vision.error();
    backend->m_vision = std::move(vision).value();
    auto decoder = hy::TextDecoder::load(*weights, backend->m_config.text, dtype, device);
    if (!decoder.ok()) return decoder.error();
    backend->m_decoder = std::make_unique<hy::TextDecoder>(std::move(decoder).value());

    auto presets = doc::loadPresets(doc::defaultPresetsDir());
    if (!presets.ok()) return presets.error();
    for (auto& p : *presets)
        if (p.supportsModel("hunyuan-ocr")) backend->m_presets.push_back(std::move(p));
    backend->m_info.model = "hunyuan-ocr-" + (backend->m_config.version.empty() ? std::string("1.0") : backend->m_config.version);
    backend->m_info.device = device.is_cuda() ? "cuda:0" : "cpu";
    backend->m_info.dtype = dtype == at::kHalf ? "float16" : dtype == at::kBFloat16 ? "bfloat16" : "float32";
    for (const auto& p : backend->m_presets) backend->m_info.presets.push_back(p.id);
    return std::unique_ptr<Backend>(std::move(backend));
}

Result<void> HunyuanBackend::accepts(const Request& request) const
{
    const doc::Preset* preset = doc::findPreset(m_presets, request.preset);
    if (!preset) return makeError("unsupported_preset", request.imageName + ": unknown preset '" + request.preset + "'");
    if (preset->userPrompt && request.prompt.empty())
        return makeError("bad_request", request.imageName + ": the custom preset needs a prompt");
    return {};
}

void HunyuanBackend::step()
{
    m_inFlight.clear();
    RequestPtr r = std::move(m_waiting.front());
    m_waiting.pop_front();
    if (r->cancelled()) {
        r->fail("cancelled", r->request().imageName + ": cancelled");
        return;
    }
    r->markStarted();
    m_inFlight.push_back(r);
    run(*r);
    m_inFlight.clear();
}

void HunyuanBackend::run(RequestState& state)
{
    const Request& req = state.request();
    const doc::Preset& preset = *doc::findPreset(m_presets, req.preset);
    doc::OcrResult result;
    result.image = req.imageName;
    result.model = m_info.model;
    result.device = m_info.device;
    result.dtype = m_info.dtype;
    result.preset = req.preset;
    result.width = req.image->width;
    result.height = req.image->height;

    auto t0 = Clock::now();
    auto pre = hy::preprocessImage(*req.image, m_config.preprocess);
    if (!pre.ok()) return state.fail(pre.error().code, req.imageName + ": " + pre.error().message);
    result.setTiming("preprocess", msSince(t0));

    t0 = Clock::now();
    at::Tensor imageEmbeds;
    {
        c10::InferenceMode guard;
        imageEmbeds = m_vision.encode(*pre);
    }
    result.setTiming("vision", msSince(t0));

    doc::PromptArgs args;
    args.fields = req.fieldNames;
    args.targetLanguage = req.targetLanguage;
    args.userPrompt = req.prompt;
    const std::string prompt = doc::buildPrompt(preset, args);
    result.prompt = prompt;
    const auto promptIds32 = m_tokenizer->encode(prompt);
    const std::vector<int> promptIds(promptIds32.begin(), promptIds32.end());
    const hy::ImageGrid grid{pre->gridH, pre->gridW};
    const int mergeSize = m_config.vision.spatialMergeSize;
    hy::PrefillInput input;
    input.ids = hy::buildInputIds(m_config.tokens, promptIds, {hy::imageTokenCount(grid, mergeSize)});
    auto positions = hy::buildPositionIds(input.ids, m_config.tokens, {grid}, mergeSize);
    if (!positions.ok()) return state.fail("generation_failed", req.imageName + ": " + positions.error().message);
    input.positionIds = std::move(positions).value();
    input.imageEmbeds = imageEmbeds;
    input.imageTokenId = m_config.tokens.image;

    hy::GenerationConfig gen;
    gen.sampling.temperature = req.sampling.temperature;
    gen.sampling.topK = req.sampling.topK;
    gen.sampling.topP = req.sampling.topP;
    gen.sampling.repetitionPenalty = req.sampling.repetitionPenalty;
    gen.sampling.seed = req.sampling.seed;
    gen.maxNewTokens = req.sampling.maxNewTokens;
    gen.ignoreEos = req.sampling.ignoreEos;
    gen.stopIds = m_config.tokens.stop;

    model::StreamingDecoder stream(*m_tokenizer, /*skipSpecialTokens=*/true);
    PartialText partial;
    auto onToken = [&](int id) {
        if (req.stream && state.callbacks().onPartial) {
            std::string delta = stream.push(id);
            if (!delta.empty()) {
                partial.seq++;
                partial.textSoFar += delta;
                partial.delta = std::move(delta);
                state.callbacks().onPartial(state.id(), partial);
            }
        }
        return !state.cancelled();
    };
    Result<hy::GenerationResult> generated = [&] {
        c10::InferenceMode guard;
        return hy::generate(*m_decoder, input, gen, onToken);
    }();
    if (!generated.ok()) return state.fail("generation_failed", req.imageName + ": " + generated.error().message);
    if (generated->finish == hy::FinishReason::Cancelled) return state.fail("cancelled", req.imageName + ": cancelled");
    result.setTiming("prefill", generated->timings.prefillMs);
    result.setTiming("decode", generated->timings.decodeMs);
    result.tokens = doc::TokenCounts{generated->timings.numPromptTokens, generated->timings.numNewTokens};

    t0 = Clock::now();
    const std::vector<int32_t> ids(generated->ids.begin(), generated->ids.end());
    const std::string raw = doc::normalizeSpecialTokens(m_tokenizer->decode(ids, /*skipSpecialTokens=*/false));
    doc::applyModelOutput(preset, raw, req.image->width, req.image->height, result);
    result.setTiming("postprocess", msSince(t0));
    state.finish(std::move(result));
}

void HunyuanBackend::cancel(RequestId id)
{
    for (auto it = m_waiting.begin(); it != m_waiting.end(); ++it) {
        if ((*it)->id() == id) {
            (*it)->fail("cancelled", (*it)->request().imageName + ": cancelled");
            m_waiting.erase(it);
            return;
        }
    }
}

void HunyuanBackend::cancelAll()
{
    for (auto& r : m_waiting) r->fail("cancelled", r->request().imageName + ": cancelled");
    m_waiting.clear();
}

}  // namespace lector::engine
