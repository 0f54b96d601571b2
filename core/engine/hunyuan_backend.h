// HunyuanBackend: HunyuanOCR 1.0 behind the engine with continuous batching. The Scheduler
// (scheduler.h) plans each step; this backend runs it: the vision tower over the newly admitted images
// together (their prompt embeddings are kept until the request ends, so a preempted request recomputes
// only its decoder part), then ONE decoder forward over every scheduled prefill chunk and decode token
// through a paged KV cache (core/runner/paged_kv.h), then sampling, streaming and, for finished
// requests, output parsing into the result schema. On CUDA the decoder runs on the fused runner (gpu/
// kernels, CUDA graphs for decode steps) with sampling on the device; on the CPU it is the libtorch
// reference decoder in float32, which reproduces the single-sequence reference path (generation.h)
// token for token.
// Engine thread only (accepts() and info() from any thread).
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "core/common/worker.h"
#include "core/doc/preset.h"
#include "core/engine/backend.h"
#include "core/engine/scheduler.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/tokenizer.h"
#include "core/runner/device_sampler.h"
#include "core/runner/model_runner.h"
#include "core/runner/paged_kv.h"

namespace lector::engine {

class HunyuanBackend : public Backend {
public:
    // Errors: "model_not_found" naming the missing file of the model folder, "bad_model",
    // "device_unavailable", "bad_config".
    static Result<std::unique_ptr<Backend>> create(const EngineConfig& config);
    ~HunyuanBackend() override;

    EngineInfo info() const override { return m_info; }
    Result<void> accepts(const Request& request) const override;
    // On CUDA (EngineConfig::warmUpPages): blank 1024x1024 pages through every stage at once (the vision
    // tower's batch, prefills of several prompts in one step, batched decodes), then one alone; they and
    // their step counts are forgotten. A failure is only logged: real requests then report their own.
    void warmUp() override;
    void add(RequestPtr request) override;
    bool hasWork() const override { return m_scheduler->hasWork() || m_inflight != nullptr; }
    void step() override;
    std::vector<RequestPtr> takeInFlight() override;
    void cancel(RequestId id) override;
    void cancelAll() override;
    EngineStats stats() const override;

private:
    struct Sequence;
    struct Launched;
    HunyuanBackend() = default;
    void runVision(const std::vector<SeqId>& ids);
    // Queues the forward of `chunks` and the sampling of its tokens. feed: the in-flight decode step
    // whose device-side tokens are this decode-only step's input ids (null: ids from the host).
    Launched launchChunks(const std::vector<StepChunk>& chunks, const Launched* feed);
    // Waits for a launched step's tokens and applies them: streaming, timings, stop conditions. Appends
    // each sampled sequence's outcome to `outcomes`, or, when that is null (a step the scheduler already
    // completed provisionally), finishes the sequences that ended. Sequences gone meanwhile are skipped.
    void acceptTokens(Launched& launched, std::vector<SeqOutcome>* outcomes);
    // Whether `plan` decodes exactly the sequences of the in-flight step, in order, and nothing else:
    // then it can be queued before the in-flight tokens reach the host.
    bool chainsOntoInflight(const StepPlan& plan) const;
    // Completes a launched decode-only step in the scheduler before its tokens are known: one token
    // each, finished where the length limit ends the sequence. ahead: as for launchSample(). A launch of
    // several steps (one sequence: launchSteps) completes as that many scheduler rounds.
    void completeProvisionally(const Launched& launched, int ahead);
    // A lone decoding sequence's next decode steps in one launch (ModelRunner::runSampledSteps), where
    // the runner takes several, nothing waits to join the batch, the sequence has that many tokens left
    // to draw before its length limit and the pool's free blocks hold their slots; else nullopt.
    std::optional<Launched> launchSteps(const StepChunk& chunk, runner::RunnerStep& step, int ahead);
    // A step for the fused runner (deviceTokenIds: its decode ids on the device, or undefined).
    runner::RunnerStep fusedStep(const std::vector<StepChunk>& chunks, const at::Tensor& deviceTokenIds);
    // The forward of a step through the reference decoder and the paged KV view: logits [sampled chunks,
    // vocab] float32 on the model's device, in chunk order.
    at::Tensor forwardReference(const std::vector<StepChunk>& chunks);
    // A sequence's next draw on the device (its presence row acquired, and reset for a fresh prefill), or
    // none where it draws on the host (top-p, or no presence row left). ahead: as for launchSample().
    std::optional<runner::DeviceSampling> deviceSampling(SeqId id, bool freshPrefill, int ahead);
    // Draws the next token of every sampled chunk (in order), on the device where it can be. ahead: tokens
    // of these sequences already drawn but not yet accepted (1 for a step chained onto the in-flight one).
    Launched launchSample(const std::vector<SeqId>& ids, const std::vector<bool>& freshPrefill,
                          const at::Tensor& logits, int ahead);
    std::unique_ptr<Sequence> detach(SeqId id);  // removes it from m_seqs and the scheduler
    void finishSequence(SeqId id);
    void dropSequence(SeqId id, const std::string& code, const std::string& message);

    model::hunyuan::HunyuanConfig m_config;
    std::optional<model::Tokenizer> m_tokenizer;
    model::hunyuan::VisionEncoder m_vision;
    std::unique_ptr<model::hunyuan::TextDecoder> m_decoder;
    std::vector<doc::Preset> m_presets;
    EngineInfo m_info;
    std::unique_ptr<Scheduler> m_scheduler;
    std::unique_ptr<runner::PagedKvStorage> m_kv;
    std::unique_ptr<runner::DeviceSampler> m_sampler;  // with m_runner, which draws with it (declared first: outlives it)
    std::unique_ptr<runner::ModelRunner> m_runner;     // set when the fused runner serves the decoder
    int m_blockSize = 16;
    int m_warmUpPages = 0;         // pages warmUp() still has to run
    std::map<SeqId, std::unique_ptr<Sequence>> m_seqs;
    std::vector<SeqId> m_stepIds;  // sequences of the step being run (failed together if it throws)
    // A decode-only step whose tokens have not been read yet (fused runner, every token drawn on the
    // device). The scheduler has completed it provisionally (one token each, finished only where the
    // length limit says so), so the next step can be planned and queued behind it; its tokens are applied
    // right after that. A sequence that stops early leaves one wasted row in the chained step (and, in a
    // launch of several steps, the steps after its stop: the result is ready when the launch is).
    std::unique_ptr<Launched> m_inflight;
    long long m_overlappedSteps = 0;
    StepTimes m_visionSteps, m_prefillSteps, m_decodeSteps;  // EngineStats' step times
    Worker m_pixelWorker;          // prepares requests' pixels in order while the engine steps
};

}  // namespace lector::engine
