// OcrBackend: what EngineBridge needs from an inference engine. The production implementation wraps
// lector::engine::Engine (createEngineBackend); UI tests may substitute a scripted one to drive exact
// timings. Same contract and threading as engine.h: submit/cancel/pendingCount/info from any thread,
// callbacks on the backend's own thread, exactly one onFinished per accepted request.
#pragma once

#include <memory>

#include "core/common/result.h"
#include "core/engine/engine.h"

namespace lector::ui {

class OcrBackend {
public:
    virtual ~OcrBackend() = default;
    virtual Result<engine::RequestId> submit(engine::Request request, engine::Callbacks callbacks) noexcept = 0;
    virtual void cancel(engine::RequestId id) noexcept = 0;
    // Cancels everything pending and joins the backend's thread. Blocking: never call on the GUI
    // thread while the application runs (EngineBridge retires backends on a worker thread).
    virtual void shutdown() noexcept = 0;
    virtual engine::EngineInfo info() const = 0;
    virtual std::size_t pendingCount() const noexcept = 0;
};

// Loads the model of `config` (blocking, seconds): call on a worker thread.
Result<std::unique_ptr<OcrBackend>> createEngineBackend(const engine::EngineConfig& config);

}  // namespace lector::ui
