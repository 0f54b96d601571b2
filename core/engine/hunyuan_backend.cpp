#include "core/engine/hunyuan_backend.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <future>
#include <limits>
#include <stdexcept>

#include <c10/core/InferenceMode.h>

#include "core/common/assert.h"
#include "core/common/env.h"
#include "core/common/log.h"
#include "core/common/timing.h"
#include "core/doc/output_parser.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/weights.h"
#include "core/kv/block_pool.h"
#include "core/runner/tuning_cache.h"
#include "gpu/device.h"

namespace lector::engine {
namespace hy = model::hunyuan;

namespace {

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

// KV cache size in tokens: the configured one, else 16384 on the CPU, else on CUDA what
// gpuMemoryUtilization of the device leaves after what is already in use (weights, other processes)
// and a reserve for activations (a full step's matmuls, the vision tower over a step's images, logits).
Result<int> kvCacheTokens(const EngineConfig& config, const hy::TextConfig& t, at::ScalarType dtype,
                          const at::Device& device, int blockSize)
{
    if (config.kvCacheTokens > 0) return config.kvCacheTokens;
    if (!device.is_cuda()) return 16384;
    const gpu::DeviceMemory mem = gpu::deviceMemory(device);
    if (mem.totalBytes <= 0) return 131072;
    const std::int64_t activationReserve = std::int64_t(3) << 30;
    const std::int64_t used = mem.totalBytes - mem.freeBytes + activationReserve;
    const std::int64_t blockBytes =
        kv::bytesPerBlock(t.numLayers, t.numKvHeads, t.headDim, blockSize, static_cast<int>(at::elementSize(dtype)));
    const std::int64_t tokens = std::min<std::int64_t>(
        kv::blocksForMemory(mem.totalBytes, used, config.gpuMemoryUtilization, blockBytes) * blockSize, 1 << 22);
    if (tokens < 4096)
        return makeError("bad_config", "--gpu-memory-utilization " + std::to_string(config.gpuMemoryUtilization) +
                                           " leaves room for " + std::to_string(std::max<std::int64_t>(tokens, 0)) +
                                           " KV cache tokens on " + device.str() + " (" +
                                           std::to_string(mem.freeBytes >> 20) + " MiB free of " +
                                           std::to_string(mem.totalBytes >> 20) + " MiB); raise it or pass --kv-cache-tokens");
    return static_cast<int>(tokens);
}

// The fused runner's load-time measurements (tuneLayouts: ~4-5 s of a ~9 s start on an H200), or those an
// earlier start on the same card, driver, libtorch, build and model kept (core/runner/tuning_cache.h).
// A missing, stale or unreadable file is measured over and rewritten, and so is a good one on retune;
// one that cannot be written only costs the next start its measurements.
void tuneRunner(runner::ModelRunner& r, bool retune)
{
    const std::string key = envOff("LECTOR_TUNING_CACHE") ? std::string() : r.tuningKey();
    const std::filesystem::path file = key.empty() ? std::filesystem::path() : runner::tuningCacheFile(key);
    bool cached = false;
    if (!file.empty() && !retune) {
        auto kept = runner::readTuning(file, key);
        cached = kept.ok() && r.applyTuning(*kept);
        if (!kept.ok() && kept.error().code != "not_found")
            LECTOR_LOG_INFO("HunyuanOCR: " << kept.error().message << "; measuring the tuning again");
    }
    const auto t0 = Clock::now();
    if (!cached) r.tuneLayouts();
    for (const std::string& line : r.layoutReport())
        if (line.rfind("decode step", 0) == 0) LECTOR_LOG_INFO("HunyuanOCR: " << line);  // chooseChainRoutes
    if (cached) {
        LECTOR_LOG_INFO("HunyuanOCR: tuning kept from an earlier start: " << file.string()
                                                                          << " (--retune measures it again)");
        return;
    }
    LECTOR_LOG_INFO("HunyuanOCR: tuning measured in " << msSince(t0) << " ms");
    if (file.empty()) return;
    if (auto written = runner::writeTuning(file, key, r.tuning()); !written)
        LECTOR_LOG_WARN("HunyuanOCR: the tuning was not kept for the next start: " << written.error().message);
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

    // Paged KV cache: blocks of 16 tokens for every layer, K and V, in the decoder's dtype.
    const hy::TextConfig& t = backend->m_config.text;
    auto tokens = kvCacheTokens(config, t, dtype, device, backend->m_blockSize);
    if (!tokens.ok()) return tokens.error();
    const int numBlocks = std::max(1, *tokens / backend->m_blockSize);
    SchedulerConfig sc;
    sc.maxTokensPerStep = std::max(1, config.maxTokensPerStep);
    sc.maxImagesPerStep = std::max(1, config.maxVisionImagesPerStep);
    backend->m_scheduler = std::make_unique<Scheduler>(sc, numBlocks, backend->m_blockSize);
    try {
        backend->m_kv = std::make_unique<runner::PagedKvStorage>(t.numLayers, t.numKvHeads, t.headDim, numBlocks,
                                                                 backend->m_blockSize, dtype, device);
    } catch (const std::exception& e) {
        return makeError("bad_config", "KV cache of " + std::to_string(*tokens) + " tokens does not fit: " + e.what());
    }
    if (config.hunyuanRunner != "auto" && config.hunyuanRunner != "fused" && config.hunyuanRunner != "reference")
        return makeError("bad_config", "unknown HunyuanOCR runner '" + config.hunyuanRunner + "' (auto, fused, reference)");
    // The fused kernels exist for head dim 128 and 1, 2, 4 or 8 query heads per KV head on CUDA (the real
    // model); other shapes (the tiny test model) stay on the reference decoder there.
    const int group = t.numHeads / t.numKvHeads;
    const bool kernelsFit = t.headDim == 128 && (group == 1 || group == 2 || group == 4 || group == 8);
    const bool fused = config.hunyuanRunner == "fused" ||
                       (config.hunyuanRunner == "auto" && device.is_cuda() && kernelsFit);
    if (fused) {
        if (device.is_cuda() && !kernelsFit)
            return makeError("bad_config", "the fused runner has no CUDA kernels for head dim " +
                                               std::to_string(t.headDim) + " with " + std::to_string(group) +
                                               " query heads per KV head");
        runner::RunnerOptions ro;
        ro.cudaGraphs = config.cudaGraphs;
        using P = runner::RunnerOptions::Persistent;
        ro.persistentDecode = config.persistentDecode == "on" ? P::Always : config.persistentDecode == "off" ? P::Never : P::Auto;
        ro.decodeGraphSteps = std::max(1, config.decodeGraphSteps);
        backend->m_runner = std::make_unique<runner::ModelRunner>(*backend->m_decoder, *backend->m_kv, ro);
        backend->m_sampler = std::make_unique<runner::DeviceSampler>(t.vocabSize, device);
        // Decode graphs draw their tokens themselves; LECTOR_GRAPH_SAMPLER=0 leaves that to a kernel
        // after each graph (for comparison: the tokens must be the same).
        if (!envOff("LECTOR_GRAPH_SAMPLER"))
            backend->m_runner->attachSampler(*backend->m_sampler);
        tuneRunner(*backend->m_runner, config.retune);
        LECTOR_LOG_INFO("HunyuanOCR: " << backend->m_runner->persistentReport());
        backend->m_runner->captureGraphs();
        if (!backend->m_runner->greedyScreenReport().empty())
            LECTOR_LOG_INFO("HunyuanOCR: " << backend->m_runner->greedyScreenReport());
        // Our kernels were validated on one GPU generation: where they disagree with the reference
        // decoder on this card, serve with the reference instead of producing wrong text.
        const double error = backend->m_runner->selfCheck();
        const double limit = dtype == at::kFloat ? 1e-3 : 5e-2;
        if (!(error <= limit)) {
            LECTOR_LOG_WARN("HunyuanOCR: the fused runner disagrees with the reference decoder on "
                            << device << " (relative error " << error << " > " << limit
                            << "); using the reference decoder");
            if (config.hunyuanRunner == "fused")
                return makeError("device_unavailable", "the fused runner disagrees with the reference decoder on " +
                                                           device.str() + " (relative error " + std::to_string(error) + ")");
            backend->m_runner.reset();
            backend->m_sampler.reset();
        }
    }
    // By default as many pages as a vision step takes, at most 8: the tower runs at most 8 1024x1024 pages
    // a call (kVisionPatchesPerCall), so more would only lengthen the load.
    backend->m_warmUpPages =
        config.warmUpPages >= 0 ? config.warmUpPages : device.is_cuda() ? std::min(sc.maxImagesPerStep, 8) : 0;
    return std::unique_ptr<Backend>(std::move(backend));
}

void HunyuanBackend::warmUp()
{
    // What the first requests after loading would otherwise pay (calls 172 and 173: the first page
    // 275-299 ms against 175 warm, the first 64-page burst 5 % slower): each kernel's module is loaded
    // at its first launch, the caching allocator grows to a burst's activations, cuBLAS meets its first
    // shapes, the pixel worker starts its threads. A burst covers the batched shapes (the tower over
    // several pages, several prompts in one prefill step, batched decodes); one page alone the
    // single-request ones. On the engine thread, because some of it is per thread: libtorch's cuBLAS
    // handles and workspaces, the OpenMP team of the pinned staging copy (call 173 ran the pages on the
    // loading thread, and the first page after them still took 202-207 ms).
    const int pages = m_warmUpPages;
    m_warmUpPages = 0;
    if (pages <= 0) return;
    const doc::Preset* preset = doc::findPreset(m_presets, "text");
    if (!preset && !m_presets.empty()) preset = &m_presets.front();
    if (!preset || preset->userPrompt) return;
    const auto t0 = Clock::now();
    auto page = std::make_shared<Image>(1024, 1024);
    std::fill(page->rgb.begin(), page->rgb.end(), std::uint8_t{255});
    // Ids from the top of the range: the engine numbers real requests from 1.
    RequestId nextId = std::numeric_limits<RequestId>::max();
    auto run = [&](int count) {
        std::vector<RequestPtr> requests;
        for (int i = 0; i < count; ++i) {
            Request r;
            r.imageName = "(warm-up page)";
            r.image = page;
            r.preset = preset->id;
            r.sampling.maxNewTokens = 2;
            r.sampling.ignoreEos = true;
            requests.push_back(std::make_shared<RequestState>(nextId--, std::move(r), Callbacks{}, nullptr));
        }
        for (const auto& r : requests) add(r);
        while (hasWork()) step();
    };
    try {
        run(pages);
        if (pages > 1) run(1);
    } catch (const std::exception& e) {
        LECTOR_LOG_WARN("HunyuanOCR: the warm-up at load failed (" << e.what() << "); the first requests pay for it");
        takeInFlight();
        cancelAll();
    }
    m_overlappedSteps = 0;
    m_visionSteps = m_prefillSteps = m_decodeSteps = {};
    LECTOR_LOG_INFO("HunyuanOCR: warm-up of " << pages << (pages > 1 ? " + 1" : "") << " pages at load in "
                                               << msSince(t0) << " ms");
}

// --- one request inside the backend ---

struct HunyuanBackend::Sequence {
    RequestPtr state;
    const doc::Preset* preset = nullptr;
    std::string prompt;
    std::vector<int> promptIds;                  // the whole prefill: BOS .. image block .. prompt .. user
    at::Tensor positions;                        // [numAxes, L] int64, CPU
    // The vision encoder's input, prepared on a worker thread while the engine steps; with the
    // milliseconds it took. Valid until the vision tower ran.
    std::future<std::pair<hy::PreprocessedImage, double>> image;
    at::Tensor promptEmbeds;                     // [L, hidden] on the model's device, after vision
    std::optional<hy::TokenLoop> loop;
    std::optional<model::StreamingDecoder> stream;
    PartialText partial;
    int presenceRow = -1;  // DeviceSampler row (fused runner), -1 until the first sample
    double preprocessMs = 0, visionMs = 0, prefillMs = 0, decodeMs = 0, firstTokenMs = 0;
    Clock::time_point prefillStart{};
    Clock::time_point lastTokenAt{};  // when the last token was applied (decode time is the sum of the gaps)
};

// A forward and its sampling, queued; the tokens are read by acceptTokens().
struct HunyuanBackend::Launched {
    std::vector<SeqId> ids;            // sampled sequences, in row order
    std::vector<int> hostTokens;       // drawn on the host (top-p), -1 where the device draws
    std::vector<std::int64_t> deviceRows;  // indices into ids drawn on the device, in the sampler's row order
    runner::PendingTokens device;
    bool chainable = false;            // decode-only and every token drawn on the device
    int steps = 1;                     // tokens each sequence draws (several: one sequence, launchSteps)
};

HunyuanBackend::~HunyuanBackend() = default;

Result<void> HunyuanBackend::accepts(const Request& request) const
{
    const doc::Preset* preset = doc::findPreset(m_presets, request.preset);
    if (!preset) return makeError("unsupported_preset", request.imageName + ": unknown preset '" + request.preset + "'");
    if (preset->userPrompt && request.prompt.empty())
        return makeError("bad_request", request.imageName + ": the custom preset needs a prompt");
    return {};
}

void HunyuanBackend::add(RequestPtr request)
{
    const Request& req = request->request();
    if (request->cancelled()) return request->fail("cancelled", req.imageName + ": cancelled");
    auto seq = std::make_unique<Sequence>();
    seq->state = request;
    seq->preset = doc::findPreset(m_presets, req.preset);
    request->markStarted();

    // The prompt is built at admission (the scheduler needs its length to plan blocks): it depends on the
    // patch grid, which the smart-resize arithmetic gives without touching pixels. The pixels themselves
    // (Pillow-bicubic resampling where the size changes; on the CPU the normalisation too, which a CUDA
    // tower does on its device: milliseconds per page) are prepared on the backend's worker thread, so the
    // engine thread goes on stepping; the vision step waits for them.
    const hy::PreprocessConfig& pc = m_config.preprocess;
    const auto size = hy::modelSize(*req.image, pc);
    if (!size) return request->fail(size.error().code, req.imageName + ": " + size.error().message);
    doc::PromptArgs args;
    args.fields = req.fieldNames;
    args.targetLanguage = req.targetLanguage;
    args.userPrompt = req.prompt;
    seq->prompt = doc::buildPrompt(*seq->preset, args);
    const auto ids32 = m_tokenizer->encode(seq->prompt);
    const std::vector<int> promptTextIds(ids32.begin(), ids32.end());
    auto layout = hy::imagePromptLayout(m_config, promptTextIds, {size->height / pc.patchSize, size->width / pc.patchSize});
    if (!layout.ok()) return request->fail("generation_failed", req.imageName + ": " + layout.error().message);
    seq->promptIds = std::move(layout->ids);
    seq->positions = std::move(layout->positionIds);
    seq->image = m_pixelWorker.submit([image = req.image, pc, output = m_vision.pixelOutput()] {
        const auto t0 = Clock::now();
        auto pre = hy::preprocessImage(image, pc, output);
        if (!pre) throw std::runtime_error(pre.error().message);
        return std::make_pair(std::move(pre).value(), msSince(t0));
    });

    hy::GenerationConfig gen;
    gen.sampling.temperature = req.sampling.temperature;
    gen.sampling.topK = req.sampling.topK;
    gen.sampling.topP = req.sampling.topP;
    gen.sampling.repetitionPenalty = req.sampling.repetitionPenalty;
    gen.sampling.seed = req.sampling.seed;
    gen.maxNewTokens = req.sampling.maxNewTokens;
    gen.ignoreEos = req.sampling.ignoreEos;
    gen.repeatGuard.enabled = !req.sampling.ignoreEos;  // benchmarks force exactly maxNewTokens
    gen.stopIds = m_config.tokens.stop;
    seq->loop.emplace(gen, seq->promptIds);
    seq->stream.emplace(*m_tokenizer, /*skipSpecialTokens=*/true);

    const SeqId id = request->id();
    if (auto ok = m_scheduler->add({id, static_cast<std::int64_t>(seq->promptIds.size()),
                                    std::max(1, req.sampling.maxNewTokens), /*needsVision=*/true});
        !ok)
        return request->fail(ok.error().code, req.imageName + ": " + ok.error().message);
    m_seqs.emplace(id, std::move(seq));
}

namespace {

// Charges the wall time from `start` to its end to one kind of step (EngineStats' step times).
class StepCharge {
public:
    StepCharge(StepTimes* kind, Clock::time_point start) : m_kind(kind), m_start(start) {}
    ~StepCharge()
    {
        if (!m_kind) return;
        ++m_kind->steps;
        m_kind->ms += msSince(m_start);
    }
    StepCharge(const StepCharge&) = delete;
    StepCharge& operator=(const StepCharge&) = delete;

private:
    StepTimes* m_kind;
    Clock::time_point m_start;
};

}  // namespace

void HunyuanBackend::step()
{
    const auto start = Clock::now();
    // Cancels noticed between steps free their blocks at once.
    std::vector<SeqId> cancelled;
    for (const auto& [id, seq] : m_seqs)
        if (seq->state->cancelled()) cancelled.push_back(id);
    for (SeqId id : cancelled) dropSequence(id, "cancelled", m_seqs.at(id)->state->request().imageName + ": cancelled");

    StepPlan plan = m_scheduler->schedule();
    const bool prompts = std::any_of(plan.chunks.begin(), plan.chunks.end(), [](const StepChunk& c) { return !c.isDecode; });
    const StepCharge charge(!plan.vision.empty() ? &m_visionSteps
                            : prompts            ? &m_prefillSteps
                            : !plan.chunks.empty() ? &m_decodeSteps
                                                 : nullptr,
                            start);
    m_stepIds.clear();
    for (SeqId id : plan.vision) m_stepIds.push_back(id);
    for (const auto& c : plan.chunks) m_stepIds.push_back(c.id);

    c10::InferenceMode guard;
    if (m_inflight) {
        if (chainsOntoInflight(plan)) {
            // Queue this step behind the in-flight one (its ids come from the device), then apply the
            // in-flight tokens while the GPU runs it: the host's work hides behind the device's.
            auto next = std::make_unique<Launched>(launchChunks(plan.chunks, m_inflight.get()));
            std::unique_ptr<Launched> previous = std::move(m_inflight);
            completeProvisionally(*next, /*ahead=*/previous->steps);
            m_inflight = std::move(next);
            ++m_overlappedSteps;
            acceptTokens(*previous, nullptr);
            m_stepIds.clear();
            return;
        }
        // The plan needs the in-flight tokens on the host (new or changed sequences): apply them first.
        // Sequences that ended with them leave the plan (the scheduler already let them go).
        std::unique_ptr<Launched> previous = std::move(m_inflight);
        acceptTokens(*previous, nullptr);
        std::erase_if(plan.chunks, [&](const StepChunk& c) { return !m_seqs.count(c.id); });
    }
    // Out of KV memory even alone: it ends with what it has (finish reason "length").
    for (SeqId id : plan.outOfMemory)
        if (m_seqs.count(id)) finishSequence(id);

    if (!plan.vision.empty()) runVision(plan.vision);
    m_scheduler->visionDone(plan.vision);
    std::vector<SeqOutcome> outcomes;
    if (!plan.chunks.empty()) {
        auto launched = std::make_unique<Launched>(launchChunks(plan.chunks, nullptr));
        if (launched->chainable) {
            // Leave it in flight: the next step may queue behind it before its tokens are read.
            completeProvisionally(*launched, /*ahead=*/0);
            m_inflight = std::move(launched);
            m_stepIds.clear();
            return;
        }
        acceptTokens(*launched, &outcomes);
        // Chunks that did not sample (a prefill in the middle of the prompt) still report in.
        for (const StepChunk& c : plan.chunks)
            if (!c.isDecode && !c.completesPrefill) outcomes.push_back({c.id, false, false});
    }
    m_scheduler->completeStep(outcomes);
    for (const auto& o : outcomes)
        if (o.finished) finishSequence(o.id);
    m_stepIds.clear();
}

bool HunyuanBackend::chainsOntoInflight(const StepPlan& plan) const
{
    if (!m_inflight || !plan.vision.empty() || !plan.preempted.empty() || !plan.outOfMemory.empty()) return false;
    if (plan.chunks.size() != m_inflight->ids.size()) return false;
    for (size_t i = 0; i < plan.chunks.size(); ++i)
        if (!plan.chunks[i].isDecode || plan.chunks[i].id != m_inflight->ids[i]) return false;
    return true;
}

void HunyuanBackend::completeProvisionally(const Launched& launched, int ahead)
{
    // One token each; finished only where the length limit ends the sequence with this token (a stop id
    // or the repeat guard shows up when the tokens are applied, and that sequence is let go then).
    for (int k = 0; k < launched.steps; ++k) {
        if (k > 0) {
            // The launch's next step, as the scheduler plans it: its slot is among those launchSteps
            // reserved, and nothing else is running or waiting.
            const StepPlan plan = m_scheduler->schedule();
            LECTOR_ASSERT(plan.chunks.size() == 1 && plan.chunks[0].id == launched.ids.at(0) && plan.chunks[0].isDecode &&
                          plan.vision.empty() && plan.preempted.empty() && plan.outOfMemory.empty());
        }
        std::vector<SeqOutcome> outcomes;
        for (SeqId id : launched.ids) {
            const Sequence& seq = *m_seqs.at(id);
            const int maxNew = std::max(1, seq.state->request().sampling.maxNewTokens);
            const auto generated = static_cast<int>(seq.loop->result().ids.size()) + ahead + k + 1;
            outcomes.push_back({id, true, generated >= maxNew});
        }
        m_scheduler->completeStep(outcomes);
    }
}

std::optional<HunyuanBackend::Launched> HunyuanBackend::launchSteps(const StepChunk& chunk, runner::RunnerStep& step,
                                                                     int ahead)
{
    if (m_scheduler->numWaiting() > 0 || m_scheduler->numRunning() != 1 || !chunk.isDecode) return std::nullopt;
    const int steps = m_runner->decodeStepsFor(step);
    if (steps <= 1) return std::nullopt;
    Sequence& seq = *m_seqs.at(chunk.id);
    const int maxNew = std::max(1, seq.state->request().sampling.maxNewTokens);
    // The steps' last token must not pass the length limit (the last few tokens go one step at a time).
    if (static_cast<int>(seq.loop->result().ids.size()) + ahead + steps > maxNew) return std::nullopt;
    const std::optional<runner::DeviceSampling> draw = deviceSampling(chunk.id, /*freshPrefill=*/false, ahead);
    if (!draw || !m_scheduler->reserveAhead(chunk.id, chunk.start + steps)) return std::nullopt;
    step.seqs[0].blocks = m_scheduler->blocks(chunk.id);
    Launched out;
    out.ids = {chunk.id};
    out.hostTokens = {-1};
    out.deviceRows = {0};
    out.device = m_runner->runSampledSteps(step, {*draw});
    out.chainable = true;
    out.steps = steps;
    return out;
}

void HunyuanBackend::runVision(const std::vector<SeqId>& ids)
{
    // The step's images go through the tower together (attention stays per image), in groups of at most
    // kVisionPatchesPerCall patches so the activations stay bounded (a 2048x2048 page has 16384).
    constexpr std::int64_t kVisionPatchesPerCall = 32768;
    std::vector<Sequence*> group;
    std::vector<hy::PreprocessedImage> pixels;
    std::int64_t patches = 0;
    auto flush = [&] {
        if (group.empty()) return;
        const auto t0 = Clock::now();
        std::vector<const hy::PreprocessedImage*> inputs;
        for (const auto& p : pixels) inputs.push_back(&p);
        const std::vector<at::Tensor> imageEmbeds = m_vision.encodeBatch(inputs);
        for (size_t i = 0; i < group.size(); ++i) {
            auto embeds = m_decoder->embed(group[i]->promptIds, imageEmbeds[i], m_config.tokens.image);
            if (!embeds.ok()) throw std::runtime_error(embeds.error().message);
            group[i]->promptEmbeds = std::move(embeds).value();
        }
        // Its uploads do not wait for the device: wait here, so that the pages' vision time is the tower's
        // and their prefill starts after it.
        gpu::StreamEvent encoded;
        encoded.record(m_vision.device());
        encoded.synchronize();
        const double ms = msSince(t0);  // every image of the group is ready when the group is
        for (Sequence* seq : group) seq->visionMs = ms;
        group.clear();
        pixels.clear();
        patches = 0;
    };
    for (SeqId id : ids) {
        Sequence& seq = *m_seqs.at(id);
        // The scheduler asks again after a preemption; the prompt embeddings are kept for the whole request.
        if (seq.promptEmbeds.defined()) continue;
        auto [pre, preprocessMs] = seq.image.get();  // rethrows a failure of the preparation
        seq.preprocessMs = preprocessMs;
        if (patches > 0 && patches + pre.numPatches() > kVisionPatchesPerCall) flush();
        patches += pre.numPatches();
        pixels.push_back(std::move(pre));
        group.push_back(&seq);
    }
    flush();
}

namespace {

// The rows of chunk c of a sequence with L prompt tokens: token i is prompt row i for i < L, else the
// generated id i - L (after a preemption the generated tokens are recomputed like prompt tokens).
struct ChunkRows {
    std::int64_t promptFrom = 0, promptTo = 0;  // [from, to) prompt rows
    std::int64_t genFrom = 0, genTo = 0;        // [from, to) sequence indices of generated tokens
};

ChunkRows chunkRows(const StepChunk& c, std::int64_t promptLength)
{
    ChunkRows r;
    r.promptFrom = c.start;
    r.promptTo = std::max(c.start, std::min(c.start + c.length, promptLength));
    r.genFrom = std::max(c.start, promptLength);
    r.genTo = std::max(r.genFrom, c.start + c.length);
    return r;
}

}  // namespace

runner::RunnerStep HunyuanBackend::fusedStep(const std::vector<StepChunk>& chunks, const at::Tensor& deviceTokenIds)
{
    const int numAxes = m_decoder->rope().numAxes();
    runner::RunnerStep step;
    std::vector<std::vector<std::int64_t>> axes(static_cast<size_t>(numAxes));
    std::vector<at::Tensor> promptParts;
    for (const StepChunk& c : chunks) {
        Sequence& seq = *m_seqs.at(c.id);
        const auto L = static_cast<std::int64_t>(seq.promptIds.size());
        const ChunkRows r = chunkRows(c, L);
        if (r.promptTo > r.promptFrom) {
            promptParts.push_back(seq.promptEmbeds.narrow(0, r.promptFrom, r.promptTo - r.promptFrom));
            const at::Tensor pos = seq.positions.narrow(1, r.promptFrom, r.promptTo - r.promptFrom).contiguous();
            for (int a = 0; a < numAxes; ++a) {
                const std::int64_t* p = pos[a].data_ptr<std::int64_t>();
                axes[static_cast<size_t>(a)].insert(axes[static_cast<size_t>(a)].end(), p, p + pos.size(1));
            }
            step.tokenIds.insert(step.tokenIds.end(), static_cast<size_t>(r.promptTo - r.promptFrom), -1);
        }
        const auto& gen = seq.loop->result().ids;
        for (std::int64_t i = r.genFrom; i < r.genTo; ++i) {
            // Fed from the device: the id is not on the host yet (the runner ignores this one).
            step.tokenIds.push_back(deviceTokenIds.defined() ? 0 : gen.at(static_cast<size_t>(i - L)));
            for (auto& a : axes) a.push_back(i);  // decoding: every axis is the sequence index (spec §5.2)
        }
        runner::RunnerSequence rs;
        rs.numNew = c.length;
        rs.past = c.start;
        rs.blocks = m_scheduler->blocks(c.id);
        rs.sample = c.isDecode || c.completesPrefill;
        step.seqs.push_back(std::move(rs));
    }
    for (const auto& a : axes) step.positions.insert(step.positions.end(), a.begin(), a.end());
    if (!promptParts.empty()) step.promptEmbeds = promptParts.size() == 1 ? promptParts[0] : at::cat(promptParts);
    step.deviceTokenIds = deviceTokenIds;
    return step;
}

at::Tensor HunyuanBackend::forwardReference(const std::vector<StepChunk>& chunks)
{
    const at::Device device = m_decoder->device();
    const int numAxes = m_decoder->rope().numAxes();
    std::vector<at::Tensor> embeds, positions;
    std::vector<runner::StepSequence> stepSeqs;
    std::vector<std::int64_t> sampleRows;  // batch row whose logits give the next token, per sampling chunk
    std::int64_t offset = 0;
    for (const StepChunk& c : chunks) {
        Sequence& seq = *m_seqs.at(c.id);
        const auto L = static_cast<std::int64_t>(seq.promptIds.size());
        const ChunkRows r = chunkRows(c, L);
        if (r.promptTo > r.promptFrom) {
            embeds.push_back(seq.promptEmbeds.narrow(0, r.promptFrom, r.promptTo - r.promptFrom));
            positions.push_back(seq.positions.narrow(1, r.promptFrom, r.promptTo - r.promptFrom));
        }
        if (r.genTo > r.genFrom) {
            const auto& gen = seq.loop->result().ids;
            std::vector<int> ids;
            for (std::int64_t i = r.genFrom; i < r.genTo; ++i) ids.push_back(gen.at(static_cast<size_t>(i - L)));
            auto e = m_decoder->embed(ids, at::Tensor(), /*imageTokenId=*/-1);
            if (!e.ok()) throw std::runtime_error(e.error().message);
            embeds.push_back(*e);
            positions.push_back(hy::sequentialPositionIds(r.genFrom, r.genTo - r.genFrom, numAxes));
        }
        runner::StepSequence s;
        s.offset = offset;
        s.numNew = c.length;
        s.past = c.start;
        s.slots = m_scheduler->slots(c.id, c.start + c.length);
        stepSeqs.push_back(std::move(s));
        offset += c.length;
        if (c.isDecode || c.completesPrefill) sampleRows.push_back(offset - 1);
    }
    runner::StepKvCache cache(*m_kv, std::move(stepSeqs));
    const at::Tensor x = at::cat(embeds).to(device);
    const at::Tensor pos = at::cat(positions, 1).to(device);
    const at::Tensor hidden = m_decoder->forward(x, pos, cache);  // [T, hidden]
    if (sampleRows.empty()) return at::Tensor();
    return m_decoder->logits(
        hidden.index_select(0, at::tensor(sampleRows, at::TensorOptions().dtype(at::kLong)).to(device)));  // [S, vocab]
}

std::optional<runner::DeviceSampling> HunyuanBackend::deviceSampling(SeqId id, bool freshPrefill, int ahead)
{
    Sequence& seq = *m_seqs.at(id);
    const SamplingParams& sp = seq.state->request().sampling;
    // Top-p has no device kernel, and past the sampler's capacity a sequence has no presence row: those
    // draw on the host.
    if (!m_sampler || sp.topP < 1.0f) return std::nullopt;
    if (seq.presenceRow < 0 && (seq.presenceRow = m_sampler->acquireRow()) < 0) return std::nullopt;
    if (freshPrefill) {
        // The penalty's ids: the prompt and whatever was generated before a preemption.
        std::vector<int> history = seq.promptIds;
        const auto& gen = seq.loop->result().ids;
        history.insert(history.end(), gen.begin(), gen.end());
        m_sampler->resetRow(seq.presenceRow, history);
    }
    runner::DeviceSampling d;
    d.row = seq.presenceRow;
    d.temperature = sp.temperature;
    d.topK = sp.topK;
    d.repetitionPenalty = sp.repetitionPenalty;
    d.seed = static_cast<std::int64_t>(sp.seed);
    d.offset = seq.loop->result().timings.numNewTokens + ahead;  // the draw counter of this token
    return d;
}

HunyuanBackend::Launched HunyuanBackend::launchSample(const std::vector<SeqId>& ids,
                                                     const std::vector<bool>& freshPrefill, const at::Tensor& logits,
                                                     int ahead)
{
    Launched out;
    out.ids = ids;
    out.hostTokens.assign(ids.size(), -1);
    std::vector<runner::DeviceSampling> onDevice;
    for (size_t k = 0; k < ids.size(); ++k) {
        if (auto d = deviceSampling(ids[k], freshPrefill[k], ahead)) {
            onDevice.push_back(*d);
            out.deviceRows.push_back(static_cast<std::int64_t>(k));
            continue;
        }
        LECTOR_ASSERT(ahead == 0);  // a step with host draws is never chained
        out.hostTokens[k] = m_seqs.at(ids[k])->loop->sample(logits[static_cast<std::int64_t>(k)]);
    }
    if (!onDevice.empty()) {
        const bool all = onDevice.size() == ids.size();
        const at::Tensor sampled =
            all ? logits
                : logits.index_select(0, at::tensor(out.deviceRows, at::TensorOptions().dtype(at::kLong)).to(logits.device()));
        out.device = m_sampler->sampleAsync(sampled, onDevice);
    }
    return out;
}

HunyuanBackend::Launched HunyuanBackend::launchChunks(const std::vector<StepChunk>& chunks, const Launched* feed)
{
    const auto stepStart = Clock::now();
    std::vector<SeqId> sampleIds;
    std::vector<bool> freshPrefill;
    bool decodeOnly = true;
    for (const StepChunk& c : chunks) {
        Sequence& seq = *m_seqs.at(c.id);
        if (seq.prefillStart == Clock::time_point{}) seq.prefillStart = stepStart;  // its first chunk
        decodeOnly = decodeOnly && c.isDecode;
        if (c.isDecode || c.completesPrefill) {
            sampleIds.push_back(c.id);
            freshPrefill.push_back(!c.isDecode);
        }
    }
    const at::Tensor deviceIds = feed ? feed->device.onDevice() : at::Tensor();
    const int ahead = feed ? feed->steps : 0;
    if (m_runner && decodeOnly) {
        runner::RunnerStep step = fusedStep(chunks, deviceIds);
        if (chunks.size() == 1)
            if (std::optional<Launched> run = launchSteps(chunks[0], step, ahead)) return std::move(*run);
        // A graphed decode step draws its tokens inside the graph when every sequence draws on the device.
        if (m_runner->samplesInGraph(step)) {
            std::vector<runner::DeviceSampling> sampling;
            for (SeqId id : sampleIds)
                if (auto d = deviceSampling(id, /*freshPrefill=*/false, ahead)) sampling.push_back(*d);
            if (sampling.size() == sampleIds.size()) {
                Launched out;
                out.ids = sampleIds;
                out.hostTokens.assign(sampleIds.size(), -1);
                for (size_t k = 0; k < sampleIds.size(); ++k) out.deviceRows.push_back(static_cast<std::int64_t>(k));
                out.device = m_runner->runSampled(step, sampling);
                out.chainable = true;
                return out;
            }
        }
        const at::Tensor logits = m_runner->run(step);
        Launched out = launchSample(sampleIds, freshPrefill, logits, ahead);
        out.chainable = !sampleIds.empty() && out.deviceRows.size() == sampleIds.size();
        return out;
    }
    const at::Tensor logits = m_runner ? m_runner->run(fusedStep(chunks, deviceIds)) : forwardReference(chunks);
    Launched out = sampleIds.empty() ? Launched{} : launchSample(sampleIds, freshPrefill, logits, ahead);
    out.chainable = false;
    return out;
}

void HunyuanBackend::acceptTokens(Launched& launched, std::vector<SeqOutcome>* outcomes)
{
    std::vector<int> next = launched.hostTokens;
    if (!launched.deviceRows.empty()) {
        const std::vector<std::int64_t> tokens = launched.device.get();  // waits for this step alone
        if (launched.steps > 1) next.assign(tokens.begin(), tokens.end());  // one sequence's steps, in order
        else
            for (size_t j = 0; j < tokens.size(); ++j) next[static_cast<size_t>(launched.deviceRows[j])] = static_cast<int>(tokens[j]);
    }
    LECTOR_ASSERT(launched.steps == 1 || (launched.ids.size() == 1 && !outcomes));
    const auto now = Clock::now();
    for (size_t k = 0; k < launched.ids.size(); ++k) {
        const SeqId id = launched.ids[k];
        auto found = m_seqs.find(id);
        if (found == m_seqs.end()) continue;  // cancelled, or ended one step earlier: a wasted row
        Sequence& seq = *found->second;
        RequestState& state = *seq.state;
        const Request& req = state.request();
        auto onToken = [&](int token) {
            if (req.stream && state.callbacks().onPartial) {
                std::string delta = seq.stream->push(token);
                if (!delta.empty()) {
                    seq.partial.seq++;
                    seq.partial.textSoFar += delta;
                    seq.partial.delta = std::move(delta);
                    state.callbacks().onPartial(state.id(), seq.partial);
                }
            }
            return !state.cancelled();
        };
        // A launch of several steps applies its tokens in order; those after a stop are dropped.
        for (int t = 0; t < launched.steps; ++t) {
            if (seq.loop->result().timings.numNewTokens == 0) {  // the first token: the prefill is done
                seq.prefillMs = msBetween(seq.prefillStart, now);
                seq.firstTokenMs = state.totalMsNow();  // time to first token, from the user's request
            } else {
                // Decode time is what the user waits between tokens, scheduling and host work included.
                seq.decodeMs += msBetween(seq.lastTokenAt, now);
                ++seq.loop->result().timings.numDecodeSteps;
            }
            seq.lastTokenAt = now;
            const bool done = seq.loop->accept(next[k + static_cast<size_t>(t)], onToken);
            if (outcomes) outcomes->push_back({id, true, done});
            else if (done) finishSequence(id);
            if (done) break;
        }
    }
}

std::unique_ptr<HunyuanBackend::Sequence> HunyuanBackend::detach(SeqId id)
{
    auto it = m_seqs.find(id);
    if (it == m_seqs.end()) return nullptr;
    std::unique_ptr<Sequence> seq = std::move(it->second);
    m_seqs.erase(it);
    m_scheduler->cancel(id);  // no-op when the scheduler already let it go
    if (m_sampler) m_sampler->releaseRow(seq->presenceRow);
    return seq;
}

void HunyuanBackend::finishSequence(SeqId id)
{
    std::unique_ptr<Sequence> seq = detach(id);
    if (!seq) return;
    RequestState& state = *seq->state;
    const Request& req = state.request();
    const hy::GenerationResult& gen = seq->loop->result();
    if (gen.finish == hy::FinishReason::Cancelled) return state.fail("cancelled", req.imageName + ": cancelled");

    doc::OcrResult result = resultFor(req, m_info);
    result.prompt = seq->prompt;
    result.width = req.image->width;
    result.height = req.image->height;
    result.setTiming("preprocess", seq->preprocessMs);
    result.setTiming("vision", seq->visionMs);
    result.setTiming("prefill", seq->prefillMs);
    result.setTiming("decode", seq->decodeMs);
    // Serving metrics (issue 4): time to first token and time per output token after the first.
    if (gen.timings.numNewTokens > 0) result.setTiming("first_token", seq->firstTokenMs);
    if (gen.timings.numDecodeSteps > 0) result.setTiming("per_token", seq->decodeMs / gen.timings.numDecodeSteps);
    result.tokens = doc::TokenCounts{gen.timings.numPromptTokens, gen.timings.numNewTokens};
    const auto t0 = Clock::now();
    const std::vector<int32_t> ids(gen.ids.begin(), gen.ids.end());
    const std::string raw = doc::normalizeSpecialTokens(m_tokenizer->decode(ids, /*skipSpecialTokens=*/false));
    doc::applyModelOutput(*seq->preset, raw, req.image->width, req.image->height, result);
    result.setTiming("postprocess", msSince(t0));
    state.finish(std::move(result));
}

void HunyuanBackend::dropSequence(SeqId id, const std::string& code, const std::string& message)
{
    if (std::unique_ptr<Sequence> seq = detach(id)) seq->state->fail(code, message);
}

std::vector<RequestPtr> HunyuanBackend::takeInFlight()
{
    // The step threw: the engine fails these requests; forget them here (and free their blocks).
    // A step left in flight goes with them: its tokens would be applied to nobody.
    std::vector<RequestPtr> out;
    if (m_inflight) m_stepIds.insert(m_stepIds.end(), m_inflight->ids.begin(), m_inflight->ids.end());
    m_inflight.reset();
    for (SeqId id : m_stepIds)
        if (std::unique_ptr<Sequence> seq = detach(id)) out.push_back(seq->state);
    m_stepIds.clear();
    return out;
}

void HunyuanBackend::cancel(RequestId id)
{
    if (auto it = m_seqs.find(id); it != m_seqs.end())
        dropSequence(id, "cancelled", it->second->state->request().imageName + ": cancelled");
}

EngineStats HunyuanBackend::stats() const
{
    EngineStats s;
    s.kvBlocksUsed = m_scheduler->pool().numUsed();
    s.kvBlocksTotal = m_scheduler->pool().numBlocks();
    s.kvBlockTokens = m_blockSize;
    s.runningSequences = m_scheduler->numRunning();
    s.waitingSequences = m_scheduler->numWaiting();
    s.preemptions = m_scheduler->numPreemptions();
    s.overlappedSteps = m_overlappedSteps;
    s.visionSteps = m_visionSteps;
    s.prefillSteps = m_prefillSteps;
    s.decodeSteps = m_decodeSteps;
    return s;
}

void HunyuanBackend::cancelAll()
{
    std::vector<SeqId> ids;
    for (const auto& [id, seq] : m_seqs) ids.push_back(id);
    for (SeqId id : ids) dropSequence(id, "cancelled", m_seqs.at(id)->state->request().imageName + ": cancelled");
    m_inflight.reset();  // its tokens belong to cancelled requests
}

}  // namespace lector::engine
