// PpOcrBackend: the default model (PP-OCRv4 det + cls + rec) behind the engine. Each step admits up to
// maxImagesPerStep queued images, detects their lines (the CPU stages of all images in parallel, the
// det network image by image), then classifies and recognises the line crops of all of them together
// in width-sorted batches, and assembles each image's result.
// Engine thread only (see backend.h).
#pragma once

#include <deque>

#include "core/doc/preset.h"
#include "core/engine/backend.h"
#include "core/ocr/pipeline.h"

namespace lector::engine {

class PpOcrBackend : public Backend {
public:
    static Result<std::unique_ptr<Backend>> create(const EngineConfig& config);

    EngineInfo info() const override { return m_info; }
    Result<void> accepts(const Request& request) const override;
    // On CUDA (EngineConfig::warmUpPages): one synthetic page through det, cls and rec, results dropped.
    void warmUp() override;
    void add(RequestPtr request) override { m_waiting.push_back(std::move(request)); }
    bool hasWork() const override { return !m_waiting.empty(); }
    void step() override;
    std::vector<RequestPtr> takeInFlight() override { return std::exchange(m_inFlight, {}); }
    void cancel(RequestId id) override;
    void cancelAll() override;

private:
    PpOcrBackend(pipeline::PpOcrPipeline pipeline, EngineInfo info, int maxImagesPerStep);
    void admit();

    pipeline::PpOcrPipeline m_pipeline;
    EngineInfo m_info;
    int m_maxImagesPerStep;
    bool m_warmUp = false;  // warmUp() still has to run its page
    std::deque<RequestPtr> m_waiting;
    std::vector<RequestPtr> m_inFlight;
    std::vector<doc::Preset> m_presets;  // the presets PP-OCR runs
};

}  // namespace lector::engine
