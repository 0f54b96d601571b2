// HunyuanBackend: HunyuanOCR 1.0 behind the engine with continuous batching. The Scheduler
// (scheduler.h) plans each step; this backend runs it: the vision tower for newly admitted images (their
// prompt embeddings are kept until the request ends, so a preempted request recomputes only its decoder
// part), then ONE decoder forward over every scheduled prefill chunk and decode token through a paged KV
// cache (core/runner/paged_kv.h), then sampling, streaming and, for finished requests, output parsing
// into the result schema. On the CPU in float32 this reproduces the single-sequence reference path
// (generation.h) token for token; on CUDA it runs libtorch's ops in float16 / bfloat16.
// Engine thread only (accepts() and info() from any thread).
#pragma once

#include <map>
#include <optional>

#include "core/doc/preset.h"
#include "core/engine/backend.h"
#include "core/engine/scheduler.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/tokenizer.h"
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
    void add(RequestPtr request) override;
    bool hasWork() const override { return m_scheduler->hasWork(); }
    void step() override;
    std::vector<RequestPtr> takeInFlight() override;
    void cancel(RequestId id) override;
    void cancelAll() override;

    // Metrics for tests and benchmarks.
    int numPreemptions() const { return m_scheduler->numPreemptions(); }
    int kvBlocksInUse() const { return m_scheduler->pool().numUsed(); }

private:
    struct Sequence;
    HunyuanBackend() = default;
    void runVision(const std::vector<SeqId>& ids);
    void runChunks(const std::vector<StepChunk>& chunks, std::vector<SeqOutcome>& outcomes);
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
    int m_blockSize = 16;
    std::map<SeqId, std::unique_ptr<Sequence>> m_seqs;
    std::vector<SeqId> m_stepIds;  // sequences of the step being run (failed together if it throws)
};

}  // namespace lector::engine
