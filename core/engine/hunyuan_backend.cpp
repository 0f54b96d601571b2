#include "core/engine/hunyuan_backend.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include <c10/core/InferenceMode.h>

#include "core/common/timing.h"
#include "core/doc/output_parser.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/weights.h"

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
    const int tokens = config.kvCacheTokens > 0 ? config.kvCacheTokens : device.is_cuda() ? 131072 : 16384;
    const int numBlocks = std::max(1, tokens / backend->m_blockSize);
    SchedulerConfig sc;
    sc.maxTokensPerStep = std::max(1, config.maxTokensPerStep);
    sc.maxImagesPerStep = std::max(1, config.maxVisionImagesPerStep);
    backend->m_scheduler = std::make_unique<Scheduler>(sc, numBlocks, backend->m_blockSize);
    try {
        backend->m_kv = std::make_unique<runner::PagedKvStorage>(t.numLayers, t.numKvHeads, t.headDim, numBlocks,
                                                                 backend->m_blockSize, dtype, device);
    } catch (const std::exception& e) {
        return makeError("bad_config", "KV cache of " + std::to_string(tokens) + " tokens does not fit: " + e.what());
    }
    return std::unique_ptr<Backend>(std::move(backend));
}

// --- one request inside the backend ---

struct HunyuanBackend::Sequence {
    RequestPtr state;
    const doc::Preset* preset = nullptr;
    std::string prompt;
    std::vector<int> promptIds;                  // the whole prefill: BOS .. image block .. prompt .. user
    at::Tensor positions;                        // [numAxes, L] int64, CPU
    std::optional<hy::PreprocessedImage> image;  // until the vision tower ran
    at::Tensor promptEmbeds;                     // [L, hidden] on the model's device, after vision
    std::optional<hy::TokenLoop> loop;
    std::optional<model::StreamingDecoder> stream;
    PartialText partial;
    double preprocessMs = 0, visionMs = 0, prefillMs = 0, decodeMs = 0, firstTokenMs = 0;
    Clock::time_point prefillStart{};
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

    // Preprocessing and the prompt happen at admission (CPU work, no model): the scheduler needs the
    // prompt length to plan blocks.
    const auto t0 = Clock::now();
    auto pre = hy::preprocessImage(*req.image, m_config.preprocess);
    if (!pre.ok()) return request->fail(pre.error().code, req.imageName + ": " + pre.error().message);
    doc::PromptArgs args;
    args.fields = req.fieldNames;
    args.targetLanguage = req.targetLanguage;
    args.userPrompt = req.prompt;
    seq->prompt = doc::buildPrompt(*seq->preset, args);
    const auto ids32 = m_tokenizer->encode(seq->prompt);
    const std::vector<int> promptTextIds(ids32.begin(), ids32.end());
    auto layout = hy::imagePromptLayout(m_config, promptTextIds, {pre->gridH, pre->gridW});
    if (!layout.ok()) return request->fail("generation_failed", req.imageName + ": " + layout.error().message);
    seq->promptIds = std::move(layout->ids);
    seq->positions = std::move(layout->positionIds);
    seq->image = std::move(pre).value();
    seq->preprocessMs = msSince(t0);

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

void HunyuanBackend::step()
{
    // Cancels noticed between steps free their blocks at once.
    std::vector<SeqId> cancelled;
    for (const auto& [id, seq] : m_seqs)
        if (seq->state->cancelled()) cancelled.push_back(id);
    for (SeqId id : cancelled) dropSequence(id, "cancelled", m_seqs.at(id)->state->request().imageName + ": cancelled");

    const StepPlan plan = m_scheduler->schedule();
    m_stepIds.clear();
    for (SeqId id : plan.vision) m_stepIds.push_back(id);
    for (const auto& c : plan.chunks) m_stepIds.push_back(c.id);
    // Out of KV memory even alone: it ends with what it has (finish reason "length").
    for (SeqId id : plan.outOfMemory)
        if (m_seqs.count(id)) finishSequence(id);

    c10::InferenceMode guard;
    if (!plan.vision.empty()) runVision(plan.vision);
    m_scheduler->visionDone(plan.vision);
    std::vector<SeqOutcome> outcomes;
    if (!plan.chunks.empty()) runChunks(plan.chunks, outcomes);
    m_scheduler->completeStep(outcomes);
    for (const auto& o : outcomes)
        if (o.finished) finishSequence(o.id);
    m_stepIds.clear();
}

void HunyuanBackend::runVision(const std::vector<SeqId>& ids)
{
    for (SeqId id : ids) {
        Sequence& seq = *m_seqs.at(id);
        // The scheduler asks again after a preemption; the prompt embeddings are kept for the whole request.
        if (seq.promptEmbeds.defined()) continue;
        const auto t0 = Clock::now();
        const at::Tensor imageEmbeds = m_vision.encode(*seq.image);
        auto embeds = m_decoder->embed(seq.promptIds, imageEmbeds, m_config.tokens.image);
        if (!embeds.ok()) throw std::runtime_error(embeds.error().message);
        seq.promptEmbeds = std::move(embeds).value();
        seq.image.reset();  // the pixels are not needed any more
        seq.visionMs = msSince(t0);
    }
}

void HunyuanBackend::runChunks(const std::vector<StepChunk>& chunks, std::vector<SeqOutcome>& outcomes)
{
    const auto stepStart = Clock::now();
    const at::Device device = m_decoder->device();
    const int numAxes = m_decoder->rope().numAxes();
    std::vector<at::Tensor> embeds, positions;
    std::vector<runner::StepSequence> stepSeqs;
    std::vector<std::int64_t> sampleRows;  // batch row whose logits give the next token, per sampling chunk
    std::vector<SeqId> sampleIds;
    std::int64_t offset = 0;
    for (const StepChunk& c : chunks) {
        Sequence& seq = *m_seqs.at(c.id);
        if (seq.prefillStart == Clock::time_point{}) seq.prefillStart = stepStart;  // its first chunk
        const auto L = static_cast<std::int64_t>(seq.promptIds.size());
        // Token i of the sequence: a prompt row for i < L, else generated id i - L (after a preemption
        // the generated tokens are recomputed like prompt tokens).
        const std::int64_t promptEnd = std::min(c.start + c.length, L);
        if (c.start < promptEnd) {
            embeds.push_back(seq.promptEmbeds.narrow(0, c.start, promptEnd - c.start));
            positions.push_back(seq.positions.narrow(1, c.start, promptEnd - c.start));
        }
        if (c.start + c.length > L) {
            const std::int64_t from = std::max(c.start, L);
            const auto& gen = seq.loop->result().ids;
            std::vector<int> ids;
            for (std::int64_t i = from; i < c.start + c.length; ++i) ids.push_back(gen.at(static_cast<size_t>(i - L)));
            auto e = m_decoder->embed(ids, at::Tensor(), /*imageTokenId=*/-1);
            if (!e.ok()) throw std::runtime_error(e.error().message);
            embeds.push_back(*e);
            positions.push_back(hy::sequentialPositionIds(from, c.start + c.length - from, numAxes));
        }
        runner::StepSequence s;
        s.offset = offset;
        s.numNew = c.length;
        s.past = c.start;
        s.slots = m_scheduler->slots(c.id, c.start + c.length);
        stepSeqs.push_back(std::move(s));
        offset += c.length;
        if (c.isDecode || c.completesPrefill) {
            sampleRows.push_back(offset - 1);
            sampleIds.push_back(c.id);
        }
    }
    runner::StepKvCache cache(*m_kv, std::move(stepSeqs));
    const at::Tensor x = at::cat(embeds).to(device);
    const at::Tensor pos = at::cat(positions, 1).to(device);
    const at::Tensor hidden = m_decoder->forward(x, pos, cache);  // [T, hidden]
    at::Tensor logits;
    if (!sampleRows.empty())
        logits = m_decoder->logits(hidden.index_select(
            0, at::tensor(sampleRows, at::TensorOptions().dtype(at::kLong)).to(device)));  // [S, vocab]
    const double stepMs = msSince(stepStart);

    for (size_t k = 0; k < sampleIds.size(); ++k) {
        Sequence& seq = *m_seqs.at(sampleIds[k]);
        RequestState& state = *seq.state;
        const Request& req = state.request();
        const int next = seq.loop->sample(logits[static_cast<int64_t>(k)]);
        auto onToken = [&](int id) {
            if (req.stream && state.callbacks().onPartial) {
                std::string delta = seq.stream->push(id);
                if (!delta.empty()) {
                    seq.partial.seq++;
                    seq.partial.textSoFar += delta;
                    seq.partial.delta = std::move(delta);
                    state.callbacks().onPartial(state.id(), seq.partial);
                }
            }
            return !state.cancelled();
        };
        if (seq.loop->result().timings.numNewTokens == 0) {  // the first token: the prefill is done
            seq.prefillMs = msSince(seq.prefillStart);
            seq.firstTokenMs = state.totalMsNow();  // time to first token, from the user's request
        } else {
            seq.decodeMs += stepMs;
            ++seq.loop->result().timings.numDecodeSteps;
        }
        const bool done = seq.loop->accept(next, onToken);
        outcomes.push_back({sampleIds[k], true, done});
    }
    // Chunks that did not sample (a prefill in the middle of the prompt) still report in.
    for (const StepChunk& c : chunks)
        if (!c.isDecode && !c.completesPrefill) outcomes.push_back({c.id, false, false});
}

void HunyuanBackend::finishSequence(SeqId id)
{
    auto it = m_seqs.find(id);
    if (it == m_seqs.end()) return;
    std::unique_ptr<Sequence> seq = std::move(it->second);
    m_seqs.erase(it);
    m_scheduler->cancel(id);  // no-op when the scheduler already let it go
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
    auto it = m_seqs.find(id);
    if (it == m_seqs.end()) return;
    RequestPtr state = it->second->state;
    m_seqs.erase(it);
    m_scheduler->cancel(id);
    state->fail(code, message);
}

std::vector<RequestPtr> HunyuanBackend::takeInFlight()
{
    // The step threw: the engine fails these requests; forget them here (and free their blocks).
    std::vector<RequestPtr> out;
    for (SeqId id : m_stepIds) {
        auto it = m_seqs.find(id);
        if (it == m_seqs.end()) continue;
        out.push_back(it->second->state);
        m_seqs.erase(it);
        m_scheduler->cancel(id);
    }
    m_stepIds.clear();
    return out;
}

void HunyuanBackend::cancel(RequestId id)
{
    if (auto it = m_seqs.find(id); it != m_seqs.end())
        dropSequence(id, "cancelled", it->second->state->request().imageName + ": cancelled");
}

void HunyuanBackend::cancelAll()
{
    std::vector<SeqId> ids;
    for (const auto& [id, seq] : m_seqs) ids.push_back(id);
    for (SeqId id : ids) dropSequence(id, "cancelled", m_seqs.at(id)->state->request().imageName + ": cancelled");
}

}  // namespace lector::engine
