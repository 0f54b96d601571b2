// HunyuanOCR continuous batching (core/engine/hunyuan_backend + scheduler + paged KV) on the tiny fixture
// model in float32 on the CPU: many requests submitted at once, with a small per-step token budget
// (chunked prefill) and a KV pool too small for all of them (preemption by recompute), must each give
// exactly what the single-sequence reference path (generate(), itself checked against the transformers
// fixtures in tst_hunyuan_text) gives for that request. Plus cancellation and an oversized prompt.
#include "tests/support/lector_test.h"

#include <c10/core/InferenceMode.h>

#include <map>

#include "core/doc/preset.h"
#include "core/engine/hunyuan_backend.h"
#include "core/image/decode.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/tokenizer.h"
#include "tests/support/tiny_hunyuan.h"

using namespace lector;
using lector::test::must;
using namespace lector::engine;
namespace hy = lector::model::hunyuan;

namespace {

const std::filesystem::path& modelDir()
{
    static const std::filesystem::path dir = test::tinyHunyuanFolder();
    return dir;
}

std::shared_ptr<const Image> fixtureImage(const std::string& name)
{
    if (!image::imageDecodingAvailable()) LECTOR_SKIP("no image decoders in this build");
    return std::make_shared<const Image>(must(image::decodeImageFile(test::fixture("fixtures/hunyuan/" + name + ".png"))));
}

// The reference: one request alone through generate() on a contiguous KV cache.
std::vector<int> referenceIds(const Image& img, int maxNewTokens, float penalty)
{
    c10::InferenceMode guard;
    static const hy::HunyuanConfig config = must(hy::loadConfig(modelDir()));
    static const hy::WeightStore weights = must(hy::WeightStore::open(modelDir()));
    static const hy::VisionEncoder vision = must(hy::VisionEncoder::load(weights, config));
    static const hy::TextDecoder decoder = must(hy::TextDecoder::load(weights, config.text));
    static const model::Tokenizer tok = must(model::Tokenizer::load(modelDir() / "tokenizer.json"));
    const auto pre = must(hy::preprocessImage(img, config.preprocess));
    const auto presets = must(doc::loadPresets(doc::defaultPresetsDir()));
    const auto ids32 = tok.encode(doc::buildPrompt(*doc::findPreset(presets, "spotting"), {}));
    auto layout = must(hy::imagePromptLayout(config, std::vector<int>(ids32.begin(), ids32.end()), {pre.gridH, pre.gridW}));
    hy::PrefillInput in;
    in.ids = std::move(layout.ids);
    in.positionIds = std::move(layout.positionIds);
    in.imageEmbeds = vision.encode(pre);
    in.imageTokenId = config.tokens.image;
    hy::GenerationConfig g;
    g.sampling.repetitionPenalty = penalty;
    g.maxNewTokens = maxNewTokens;
    g.stopIds = config.tokens.stop;
    return must(hy::generate(decoder, in, g)).ids;
}

std::string idsText(const std::vector<int>& ids)
{
    std::string s;
    for (int id : ids) {
        s += 't';
        s += std::to_string(id);
    }
    return s;
}

struct Collected {
    std::map<RequestId, doc::OcrResult> results;
    std::map<RequestId, std::string> streamed;  // concatenated onPartial deltas
    std::map<RequestId, int> lastSeq;
    bool seqInOrder = true;
};

RequestPtr makeRequest(RequestId id, std::shared_ptr<const Image> img, int maxNewTokens, float penalty, Collected& out,
                       bool ignoreEos = false)
{
    Request req;
    req.imageName = "img" + std::to_string(id);
    req.image = std::move(img);
    req.preset = "spotting";
    req.sampling.maxNewTokens = maxNewTokens;
    req.sampling.repetitionPenalty = penalty;
    req.sampling.ignoreEos = ignoreEos;
    req.stream = true;
    Callbacks cb;
    cb.onFinished = [&out](RequestId rid, doc::OcrResult r) { out.results[rid] = std::move(r); };
    cb.onPartial = [&out](RequestId rid, const PartialText& p) {
        out.streamed[rid] += p.delta;
        out.seqInOrder = out.seqInOrder && p.seq == out.lastSeq[rid] + 1 && p.textSoFar == out.streamed[rid];
        out.lastSeq[rid] = p.seq;
    };
    return std::make_shared<RequestState>(id, std::move(req), std::move(cb), [] {});
}

std::unique_ptr<HunyuanBackend> makeBackend(int kvTokens, int tokensPerStep, const std::string& runner = "auto",
                                            int warmUpPages = -1, int decodeGraphSteps = EngineConfig{}.decodeGraphSteps)
{
    EngineConfig config;
    config.decodeGraphSteps = decodeGraphSteps;
    config.model = "hunyuan-ocr";
    config.modelDir = modelDir();
    config.kvCacheTokens = kvTokens;
    config.maxTokensPerStep = tokensPerStep;
    config.maxVisionImagesPerStep = 2;
    config.hunyuanRunner = runner;
    config.warmUpPages = warmUpPages;
    auto backend = must(HunyuanBackend::create(config));
    return std::unique_ptr<HunyuanBackend>(static_cast<HunyuanBackend*>(backend.release()));
}

// Six requests at once through the backend with the given decoder runner; each must give exactly what
// the single-sequence reference gives for it.
void checkBatchedAgainstReference(const std::string& runner)
{
    const auto receipt = fixtureImage("receipt_zh"), doc = fixtureImage("doc_en");
    // Prompts are 335 and 306 tokens; 1024 KV tokens hold three at most, so six at once must preempt.
    auto backend = makeBackend(/*kvTokens=*/1024, /*tokensPerStep=*/160, runner);
    Collected out;
    struct Case { std::shared_ptr<const Image> img; int maxNew; float penalty; };
    const std::vector<Case> cases = {{receipt, 40, 1.03f}, {doc, 25, 1.03f}, {receipt, 12, 1.0f},
                                     {doc, 60, 1.03f},     {receipt, 33, 1.03f}, {doc, 5, 1.0f}};
    for (size_t i = 0; i < cases.size(); ++i)
        backend->add(makeRequest(i + 1, cases[i].img, cases[i].maxNew, cases[i].penalty, out));
    int steps = 0;
    while (backend->hasWork() && steps < 5000) {
        backend->step();
        ++steps;
    }
    LECTOR_CHECK(!backend->hasWork());
    LECTOR_CHECK_MSG(backend->stats().preemptions > 0, "the pool was meant to force a preemption");
    // The fused runner queued decode steps ahead of their predecessors' tokens, through preemptions and
    // sequences ending at different steps; the reference runner never does.
    if (runner == "fused") LECTOR_CHECK(backend->stats().overlappedSteps > 0);
    else LECTOR_CHECK_EQ(backend->stats().overlappedSteps, 0LL);
    LECTOR_CHECK_EQ(backend->stats().kvBlocksUsed, 0);
    // Each step is charged to one kind: six pages at two a vision step need three at least; their 1923
    // prompt tokens at 160 a step need 13 steps at least, each with the vision tower or without; the
    // longest request decodes on alone.
    const EngineStats st = backend->stats();
    LECTOR_CHECK(st.visionSteps.steps >= 3 && st.prefillSteps.steps > 0 && st.decodeSteps.steps > 0);
    LECTOR_CHECK(st.visionSteps.steps + st.prefillSteps.steps >= 13);
    LECTOR_CHECK(st.visionSteps.steps + st.prefillSteps.steps + st.decodeSteps.steps <= steps);
    LECTOR_CHECK(st.visionSteps.ms > 0 && st.prefillSteps.ms > 0 && st.decodeSteps.ms > 0);
    LECTOR_CHECK_EQ(out.results.size(), cases.size());
    LECTOR_CHECK(out.seqInOrder);
    for (size_t i = 0; i < cases.size(); ++i) {
        const doc::OcrResult& r = out.results[i + 1];
        LECTOR_CHECK_MSG(!r.failed(), r.error->message);
        const auto want = referenceIds(*cases[i].img, cases[i].maxNew, cases[i].penalty);
        LECTOR_CHECK_MSG(r.raw.value_or("") == idsText(want), "request " << i + 1 << "\n      engine: " << r.raw.value_or("")
                                                              << "\n      reference: " << idsText(want));
        LECTOR_CHECK(r.tokens.has_value() && r.tokens->generated == static_cast<int>(want.size()));
        // Streaming: the deltas add up to the final text, in order, while the batch runs.
        LECTOR_CHECK_EQ(out.streamed[i + 1], idsText(want));
        LECTOR_CHECK(r.timing("vision") > 0 && r.timing("prefill") > 0);
        // Time to first token comes after vision + prefill; per-token time times the decode steps is the
        // decode time (every token after the first is one decode step).
        LECTOR_CHECK(r.timing("first_token") >= r.timing("prefill"));
        if (want.size() > 1)
            LECTOR_CHECK_NEAR(r.timing("per_token") * double(r.tokens->generated - 1), r.timing("decode"), 0.2 + 0.01 * r.timing("decode"));
    }
}

}  // namespace

LECTOR_TEST(batchedRequestsMatchTheSingleSequenceReference) { checkBatchedAgainstReference("reference"); }

// The warm-up pages (on by default on CUDA, run by the engine thread before the first request; asked for
// here on the CPU: two 1024x1024 pages at once, then one alone, through the fused runner) leave nothing
// behind: no blocks, no sequences, no step counts, and the requests after them get the reference's tokens. The strong repetition penalty makes
// the tiny model's tokens vary, so presence marks left over from the warm-up pages would change them.
LECTOR_TEST(warmUpAtLoadLeavesNothingBehind)
{
    const auto receipt = fixtureImage("receipt_zh"), doc = fixtureImage("doc_en");
    auto backend = makeBackend(/*kvTokens=*/4096, /*tokensPerStep=*/2048, "fused", /*warmUpPages=*/2);
    backend->warmUp();  // what the engine thread does first
    EngineStats st = backend->stats();
    LECTOR_CHECK(!backend->hasWork());
    LECTOR_CHECK_EQ(st.kvBlocksUsed, 0);
    LECTOR_CHECK_EQ(st.runningSequences + st.waitingSequences, 0);
    LECTOR_CHECK_EQ(st.visionSteps.steps + st.prefillSteps.steps + st.decodeSteps.steps, 0);
    LECTOR_CHECK_EQ(st.overlappedSteps, 0LL);
    Collected out;
    backend->add(makeRequest(1, receipt, 12, 5.0f, out));
    backend->add(makeRequest(2, doc, 9, 5.0f, out));
    for (int steps = 0; backend->hasWork() && steps < 200; ++steps) backend->step();
    LECTOR_CHECK(!backend->hasWork());
    LECTOR_CHECK_EQ(backend->stats().kvBlocksUsed, 0);
    LECTOR_CHECK_EQ(out.results.size(), size_t{2});
    const std::pair<std::shared_ptr<const Image>, int> cases[2] = {{receipt, 12}, {doc, 9}};
    for (RequestId id = 1; id <= 2; ++id) {
        const doc::OcrResult& r = out.results[id];
        LECTOR_CHECK_MSG(!r.failed(), r.error->message);
        LECTOR_CHECK_EQ(r.raw.value_or(""), idsText(referenceIds(*cases[id - 1].first, cases[id - 1].second, 5.0f)));
    }
}

// The GPU engine's decoder (core/runner/model_runner: fused norm / rotary / SiLU ops, paged K/V write and
// paged prefill + decode attention, device-side sampling with the repetition penalty) run through gpu/'s
// CPU references: same batches, same preemptions, same tokens as the reference.
LECTOR_TEST(fusedRunnerMatchesTheSingleSequenceReference) { checkBatchedAgainstReference("fused"); }

// With the fused runner a decode step is queued behind the previous one before that step's tokens reach
// the host (its input ids come from the device). Two requests of exactly 12 and 7 tokens (stop ids
// ignored), admitted together: token 1 comes from the prefill; token 2's step runs without a predecessor
// in flight; tokens 3..7 chain (5). Token 7 ends request 2, so token 8's step needs the host first; 9..12
// chain again (4): 9 overlapped steps. The reference runner never overlaps, and the tokens must not differ.
// The strong repetition penalty makes the tiny model's tokens vary (it repeats one token otherwise), so a
// step that read a wrong input id would change them (checked by dropping the device id copy).
LECTOR_TEST(decodeStepsOverlapWithoutChangingTokens)
{
    const auto receipt = fixtureImage("receipt_zh");
    std::map<RequestId, doc::OcrResult> results[2];
    long long overlapped[2] = {-1, -1};
    const char* runners[2] = {"fused", "reference"};
    for (int r = 0; r < 2; ++r) {
        auto backend = makeBackend(4096, 2048, runners[r]);
        Collected out;
        backend->add(makeRequest(1, receipt, 12, 5.0f, out, /*ignoreEos=*/true));
        backend->add(makeRequest(2, receipt, 7, 5.0f, out, /*ignoreEos=*/true));
        for (int steps = 0; backend->hasWork() && steps < 100; ++steps) backend->step();
        LECTOR_CHECK(!backend->hasWork());
        LECTOR_CHECK_EQ(backend->stats().kvBlocksUsed, 0);
        overlapped[r] = backend->stats().overlappedSteps;
        results[r] = out.results;
        LECTOR_CHECK(out.seqInOrder);
        for (RequestId id : {1, 2}) LECTOR_CHECK_EQ(out.streamed[id], out.results[id].raw.value_or("?"));
    }
    LECTOR_CHECK_EQ(overlapped[0], 9LL);
    LECTOR_CHECK_EQ(overlapped[1], 0LL);
    for (RequestId id : {1, 2}) {
        LECTOR_CHECK(results[0].count(id) == 1 && results[1].count(id) == 1);
        const doc::OcrResult &fused = results[0][id], &ref = results[1][id];
        LECTOR_CHECK_MSG(!fused.failed() && !ref.failed(), "request " << id);
        LECTOR_CHECK(fused.tokens.has_value() && fused.tokens->generated == (id == 1 ? 12 : 7));
        LECTOR_CHECK_EQ(fused.raw.value_or("fused"), ref.raw.value_or("reference"));
        // Every token after the first is one decode step in the per-token time, overlapped or not.
        LECTOR_CHECK_NEAR(fused.timing("per_token") * double(fused.tokens->generated - 1), fused.timing("decode"),
                          0.2 + 0.01 * fused.timing("decode"));
    }
}

// A lone request's decode steps run several to a launch (decodeGraphSteps; on the CPU one after another
// in ModelRunner::runSampledSteps, the steps the CUDA graph replays at once): the same tokens as one step
// a launch, fewer engine steps. Request 1, 40 tokens forced: token 1 comes from the prefill, tokens 2-33
// in four launches of 8 (the first without a predecessor, three chained), 34-40 one a step (seven left,
// fewer than 8): 11 decode steps, 10 of them queued behind the one before (all but the first launch),
// against 39 steps (38) one a launch. Request 2 then runs alone with penalty 1 and its stop conditions:
// the tiny model repeats one id, and the repeat guard ends the request at its 256th token, inside the
// launch of tokens 250-257 (token 257 is dropped), keeping one id of the repeated run: the reference's
// ids, 256 tokens counted, both ways. Its tokens 2-257 take 32 launches, and the one queued behind the
// last runs for nothing: 33, against 255 steps and one wasted one a launch. Nothing is left in the pool.
LECTOR_TEST(decodeStepsInLaunchesOfSeveralGiveTheSameTokens)
{
    const auto receipt = fixtureImage("receipt_zh");
    std::string raw[2][2];
    long long decodeSteps[2] = {-1, -1}, overlapped[2] = {-1, -1}, guardedSteps[2] = {-1, -1};
    const int graphSteps[2] = {1, 8};
    for (int r = 0; r < 2; ++r) {
        auto backend = makeBackend(4096, 2048, "fused", /*warmUpPages=*/-1, graphSteps[r]);
        Collected out;
        backend->add(makeRequest(1, receipt, 40, 5.0f, out, /*ignoreEos=*/true));
        for (int steps = 0; backend->hasWork() && steps < 100; ++steps) backend->step();
        decodeSteps[r] = backend->stats().decodeSteps.steps;
        overlapped[r] = backend->stats().overlappedSteps;
        backend->add(makeRequest(2, receipt, 400, 1.0f, out));
        for (int steps = 0; backend->hasWork() && steps < 1000; ++steps) backend->step();
        guardedSteps[r] = backend->stats().decodeSteps.steps - decodeSteps[r];
        LECTOR_CHECK(!backend->hasWork());
        LECTOR_CHECK_EQ(backend->stats().kvBlocksUsed, 0);
        LECTOR_CHECK(out.seqInOrder);
        for (RequestId id : {1, 2}) {
            const doc::OcrResult& res = out.results[id];
            LECTOR_CHECK_MSG(!res.failed(), "request " << id);
            raw[r][id - 1] = res.raw.value_or("");
            LECTOR_CHECK_NEAR(res.timing("per_token") * double(res.tokens->generated - 1), res.timing("decode"),
                              0.2 + 0.01 * res.timing("decode"));
        }
        // (request 2's stream carries the repeats the guard then takes back from the result)
        LECTOR_CHECK_EQ(out.streamed[1], raw[r][0]);
        LECTOR_CHECK_EQ(out.results[1].tokens->generated, 40);
        LECTOR_CHECK_EQ(out.results[2].tokens->generated, 256);
        LECTOR_CHECK_EQ(raw[r][1], idsText(referenceIds(*receipt, 400, 1.0f)));
    }
    LECTOR_CHECK_EQ(raw[1][0], raw[0][0]);
    LECTOR_CHECK_EQ(decodeSteps[0], 39LL);
    LECTOR_CHECK_EQ(overlapped[0], 38LL);
    LECTOR_CHECK_EQ(decodeSteps[1], 11LL);
    LECTOR_CHECK_EQ(overlapped[1], 10LL);
    LECTOR_CHECK_EQ(guardedSteps[0], 256LL);
    LECTOR_CHECK_EQ(guardedSteps[1], 33LL);
}

// The greedy screen (RunnerOptions::greedyScreen, forced on by LECTOR_GREEDY_SCREEN=1): on the CPU a lone
// request's greedy steps draw through the screen's reference, from the decoder's final row with the
// presence row and penalty packed as the screened graphs read them, instead of the sampler over the full
// logits. The same tokens both ways: 40 forced tokens at penalty 5 (so they vary, and the penalty decides
// some of them), then a request at penalty 1 that the repeat guard ends (the reference's ids).
LECTOR_TEST(greedyScreenDrawsTheSamplersTokens)
{
    const auto receipt = fixtureImage("receipt_zh");
    std::string raw[2][2];
    for (int screen = 0; screen < 2; ++screen) {
        ::setenv("LECTOR_GREEDY_SCREEN", screen ? "1" : "0", 1);
        auto backend = makeBackend(4096, 2048, "fused");
        ::unsetenv("LECTOR_GREEDY_SCREEN");
        Collected out;
        backend->add(makeRequest(1, receipt, 40, 5.0f, out, /*ignoreEos=*/true));
        for (int steps = 0; backend->hasWork() && steps < 100; ++steps) backend->step();
        backend->add(makeRequest(2, receipt, 400, 1.0f, out));
        for (int steps = 0; backend->hasWork() && steps < 1000; ++steps) backend->step();
        LECTOR_CHECK(!backend->hasWork());
        LECTOR_CHECK_EQ(backend->stats().kvBlocksUsed, 0);
        for (RequestId id : {1, 2}) {
            LECTOR_CHECK_MSG(!out.results[id].failed(), "request " << id);
            raw[screen][id - 1] = out.results[id].raw.value_or("");
        }
        LECTOR_CHECK_EQ(out.results[1].tokens->generated, 40);
    }
    LECTOR_CHECK(!raw[1][0].empty());
    LECTOR_CHECK_EQ(raw[1][0], raw[0][0]);
    LECTOR_CHECK_EQ(raw[1][1], idsText(referenceIds(*receipt, 400, 1.0f)));
}

namespace {

void checkCancelFreesBlocks(const std::string& runner)
{
    const auto receipt = fixtureImage("receipt_zh");
    auto backend = makeBackend(4096, 2048, runner);
    Collected out;
    backend->add(makeRequest(1, receipt, 200, 1.03f, out));
    backend->add(makeRequest(2, receipt, 200, 1.03f, out));
    for (int i = 0; i < 4; ++i) backend->step();  // vision, prefill, a few decodes
    const int before = backend->stats().kvBlocksUsed;
    LECTOR_CHECK(before > 0);
    // The pool: 4096 tokens / 16 = 256 blocks.
    LECTOR_CHECK_EQ(backend->stats().kvBlocksTotal, 256);
    LECTOR_CHECK_EQ(backend->stats().runningSequences, 2);
    backend->cancel(1);
    LECTOR_CHECK(backend->stats().kvBlocksUsed < before);
    LECTOR_CHECK(out.results.count(1) == 1 && out.results[1].failed() && out.results[1].error->code == "cancelled");
    backend->cancelAll();
    LECTOR_CHECK_EQ(backend->stats().kvBlocksUsed, 0);
    LECTOR_CHECK(!backend->hasWork());
    LECTOR_CHECK(out.results.count(2) == 1 && out.results[2].error->code == "cancelled");
}

}  // namespace

LECTOR_TEST(cancellingFreesBlocksAtOnce) { checkCancelFreesBlocks("reference"); }
// The same through the fused runner (gpu/'s CPU references) and its device-side sampler.
LECTOR_TEST(cancellingFreesBlocksAtOnceWithTheFusedRunner) { checkCancelFreesBlocks("fused"); }

LECTOR_TEST(promptLargerThanThePoolIsAClearError)
{
    const auto receipt = fixtureImage("receipt_zh");
    auto backend = makeBackend(/*kvTokens=*/256, 2048);  // the prompt alone is 335 tokens
    Collected out;
    backend->add(makeRequest(7, receipt, 10, 1.03f, out));
    LECTOR_CHECK(out.results.count(7) == 1);
    const auto& r = out.results[7];
    LECTOR_CHECK(r.failed());
    LECTOR_CHECK_EQ(r.error->code, std::string("prompt_too_long"));
    LECTOR_CHECK_MSG(r.error->message.find("335") != std::string::npos, r.error->message);
    LECTOR_CHECK(!backend->hasWork());
}
