// Engine: the one header ui/ and app/ include to run OCR. It owns one engine thread, which owns the
// model, its device and (for the vision-language model) the KV cache; everything reaches it through a
// thread-safe request queue, and it answers through callbacks.
//
// Usage:
//   EngineConfig cfg;                       // model "ppocr-v4" on the CPU by default
//   auto engine = Engine::create(cfg);      // loads the model; Error names a missing/bad file
//   Callbacks cb;
//   cb.onFinished = [](RequestId id, doc::OcrResult r) { /* copy / post to your thread */ };
//   auto id = (*engine)->submit(Request{.imageName = "a.png", .image = img}, cb);
//   ...
//   (*engine)->shutdown();                  // cancels what is pending, joins the thread
//
// Contract: every accepted request ends with exactly one onFinished call, carrying either a result,
// or an OcrResult with error {"cancelled" | "<stage>_failed" | ...}. A failure of one step fails only
// the requests in it; the engine goes on. Callbacks run on the engine thread: they must only copy
// and post (never block, never call back into the engine's shutdown()).
//
// Thread safety: submit(), cancel(), pendingCount(), info() are safe from any thread. shutdown()
// and the destructor from any thread except the engine thread (i.e. not from a callback).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/common/image.h"
#include "core/common/result.h"
#include "core/doc/ocr_result.h"

namespace lector::engine {

class Backend;
class Engine;
struct EngineConfig;
// Starts an engine over an already loaded backend and returns once the engine thread ran the backend's
// warmUp(); Engine::create() uses it, tests pass a fake backend.
std::unique_ptr<Engine> startEngine(std::unique_ptr<Backend> backend, const EngineConfig& config);

using RequestId = std::uint64_t;
using Clock = std::chrono::steady_clock;

// Decoding parameters of prompt-driven models; PP-OCR ignores them.
struct SamplingParams {
    float temperature = 0.0f;          // 0 = greedy
    int topK = 0;                      // 0 = off
    float topP = 1.0f;                 // 1 = off
    float repetitionPenalty = 1.03f;   // HunyuanOCR 1.0's generation_config; 1.0 = off
    int maxNewTokens = 4096;
    bool ignoreEos = false;            // benchmarks force a fixed number of new tokens
    std::uint64_t seed = 0;
};

struct Request {
    std::string imageName;                     // what the result's "image" field says
    std::shared_ptr<const Image> image;        // decoded RGB, EXIF orientation applied
    std::string preset = "text";               // id of a preset in resources/presets/
    std::string prompt;                        // non-empty: overrides the preset's prompt
    std::vector<std::string> fieldNames;       // extraction presets: the fields to extract
    std::string targetLanguage;                // translate preset, e.g. "English"
    SamplingParams sampling;
    bool stream = false;                       // deliver onPartial text (prompt-driven models)
    std::optional<Clock::time_point> createdAt;  // when the user asked (before decoding); for "total"
    double decodeMs = 0;                       // image decoding time spent before submit, reported
};

// Streaming text of a prompt-driven model, numbered so a UI can drop stale ones.
struct PartialText {
    int seq = 0;
    std::string delta;       // new, valid UTF-8 since the previous partial
    std::string textSoFar;
};

struct Callbacks {
    std::function<void(RequestId, const PartialText&)> onPartial;  // optional
    std::function<void(RequestId, doc::OcrResult)> onFinished;      // exactly once per accepted request
};

struct EngineConfig {
    std::string model = "ppocr-v4";        // "ppocr-v4" | "hunyuan-ocr"
    std::filesystem::path modelDir;        // empty: <models>/ppocr-v4 for PP-OCR; required for hunyuan
    std::string device = "cpu";            // "cpu" | "cuda"
    std::string dtype;                     // empty: float32 on CPU, float16 on CUDA
    int threads = 0;                       // CPU intra-op threads; 0 = all cores
    int maxImagesPerStep = 8;              // PP-OCR: images whose line crops are recognised together
    int maxQueued = 0;                     // 0 = unbounded; else submit() fails with "queue_full"
    double gpuMemoryUtilization = 0.90;    // fraction of the device's memory this process may fill (weights,
                                           // activations, KV cache); sizes the KV pool when kvCacheTokens is 0
    // HunyuanOCR continuous batching (core/engine/scheduler.h): KV cache size in tokens (0 = the
    // default: 16384 on the CPU; on CUDA what gpuMemoryUtilization leaves after the weights and an
    // activation reserve), tokens per forward step, images per vision step.
    int kvCacheTokens = 0;
    int maxTokensPerStep = 8192;           // bursts: fewer, larger prefill products (docs/perf.md, call 171)
    int maxVisionImagesPerStep = 8;
    // HunyuanOCR decoder implementation: "auto" (the fused runner with CUDA graphs on CUDA, the libtorch
    // reference on the CPU), "fused" (core/runner/model_runner.h; on the CPU through gpu/'s scalar
    // references, for tests) or "reference" (core/model/hunyuan/decoder.h through the paged KV view).
    std::string hunyuanRunner = "auto";
    bool cudaGraphs = true;                // the fused runner replays captured graphs for decode steps
    // Single-sequence decode steps of the fused runner as one persistent kernel (sm_90): "auto" where it
    // measures faster than the kernel chain at load, "on", "off" (core/runner/model_runner.h).
    std::string persistentDecode = "auto";
    // Decode steps of a lone sequence one CUDA graph replay runs back to back, its inputs moved on by the
    // sampler on the device (runner::RunnerOptions::decodeGraphSteps); 1: a replay a step. Taken when no
    // other request is running or waiting and the length limit is that many tokens away; a stop token
    // inside a launch drops the steps after it (the result waits for them: at most this many steps).
    int decodeGraphSteps = 8;
    // The fused runner's load-time measurements (HunyuanOCR on CUDA, ~4-5 s on an H200) are kept in the
    // user's cache folder and taken again by the next start on the same card, driver, libtorch, build and
    // model (core/runner/tuning_cache.h). retune measures them again and keeps the new ones (a tuning
    // measured while the card was busy stays until then); LECTOR_TUNING_CACHE=0 neither takes nor keeps.
    bool retune = false;
    // Pages run through the backend on the engine thread before the first request, so that the first
    // requests do not pay the first sights of the kernels, the libraries' per-thread handles and the
    // allocator (on the H200 HunyuanOCR's first page after loading took 255-299 ms without, 175 with, as a
    // warm page; PP-OCR's first receipt 954 against 364 ms: docs/perf.md, calls 172-176). HunyuanOCR: a
    // burst of this many blank pages, 2 tokens each, then one alone; PP-OCR:
    // one synthetic page. -1: on CUDA maxVisionImagesPerStep pages (at most 8; PP-OCR one), none on the
    // CPU; 0: none.
    int warmUpPages = -1;
};

struct EngineInfo {
    std::string model;    // "ppocr-v4" / "hunyuan-ocr-1.0"
    std::string device;   // "cpu" / "cuda:0"
    std::string dtype;    // "float32" / "float16" / "bfloat16"
    std::vector<std::string> presets;  // presets this model can run
};

// Steps of one kind and the engine thread's wall time in them (HunyuanOCR).
struct StepTimes {
    long long steps = 0;
    double ms = 0;
};

// Load of the engine, sampled after each step (HunyuanOCR's paged KV cache; zeros for PP-OCR).
struct EngineStats {
    int kvBlocksUsed = 0;      // KV blocks held by running sequences
    int kvBlocksTotal = 0;     // blocks in the pool
    int kvBlockTokens = 0;     // tokens per block
    int runningSequences = 0;  // admitted and not finished (prefilling or decoding)
    int waitingSequences = 0;  // accepted, waiting for blocks or vision
    int preemptions = 0;       // since the engine started
    long long overlappedSteps = 0;  // steps queued before the previous step's tokens reached the host
    long long steps = 0;       // backend steps run
    // Where the engine thread's time went, by what a step held: the vision tower over new pages (and
    // whatever tokens rode along), prompt tokens (with the decodes beside them), decodes only. A decode
    // step queued behind the one in flight waits there for its predecessor's tokens, so each kind is
    // charged about one step late; the sum is the time the engine thread spent stepping.
    StepTimes visionSteps, prefillSteps, decodeSteps;
};

class Engine {
public:
    // Loads the model, starts the engine thread and lets it warm the backend up. Errors:
    // "model_not_found" (names the missing file), "bad_model", "device_unavailable", "bad_config".
    static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);

    ~Engine();  // = shutdown()
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a request. Errors (request not accepted, no callback will come): "bad_request" (no
    // image), "unsupported_preset", "queue_full", "shut_down".
    Result<RequestId> submit(Request request, Callbacks callbacks) noexcept;
    // Cancels a queued or running request: it finishes with error "cancelled" (unless already done).
    void cancel(RequestId id) noexcept;
    // Cancels everything pending, waits for the engine thread to finish its current step, joins.
    void shutdown() noexcept;

    EngineInfo info() const;
    // Requests accepted and not yet finished.
    std::size_t pendingCount() const noexcept;
    // The latest snapshot of the engine's load (any thread; updated after every step).
    EngineStats stats() const;

    struct Impl;

private:
    friend std::unique_ptr<Engine> startEngine(std::unique_ptr<Backend> backend, const EngineConfig& config);
    explicit Engine(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace lector::engine
