// HunyuanBackend: HunyuanOCR 1.0 behind the engine, on the libtorch reference path (CPU float32, or
// libtorch's CUDA ops in float16/bfloat16). One request per step: preprocess, vision encoder, prompt,
// generation with streamed text, output parsing into the result schema. The GPU serving engine
// (paged KV cache, continuous batching) replaces this step loop on CUDA. Engine thread only.
#pragma once

#include <deque>

#include "core/doc/preset.h"
#include "core/engine/backend.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/tokenizer.h"

namespace lector::engine {

class HunyuanBackend : public Backend {
public:
    // Errors: "model_not_found" naming the missing file of the model folder, "bad_model",
    // "device_unavailable", "bad_config".
    static Result<std::unique_ptr<Backend>> create(const EngineConfig& config);

    EngineInfo info() const override { return m_info; }
    Result<void> accepts(const Request& request) const override;
    void add(RequestPtr request) override { m_waiting.push_back(std::move(request)); }
    bool hasWork() const override { return !m_waiting.empty(); }
    void step() override;
    std::vector<RequestPtr> takeInFlight() override { return std::exchange(m_inFlight, {}); }
    void cancel(RequestId id) override;
    void cancelAll() override;

private:
    HunyuanBackend() = default;
    void run(RequestState& state);

    model::hunyuan::HunyuanConfig m_config;
    std::optional<model::Tokenizer> m_tokenizer;
    model::hunyuan::VisionEncoder m_vision;
    std::unique_ptr<model::hunyuan::TextDecoder> m_decoder;
    std::vector<doc::Preset> m_presets;
    EngineInfo m_info;
    std::deque<RequestPtr> m_waiting;
    std::vector<RequestPtr> m_inFlight;
};

}  // namespace lector::engine
