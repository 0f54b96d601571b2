// Backend: one model family behind the engine (PP-OCR pipeline, HunyuanOCR generation). The engine
// thread owns it and drives it step by step; new requests join at the next step, so a backend can
// batch work of several requests (PP-OCR batches line crops of several images; HunyuanOCR batches
// prefill chunks and decode tokens — continuous batching).
//
// Threads: accepts() and info() may be called from any thread (they read immutable data); every other
// method is engine-thread only. A backend finishes each request it was given exactly once, through
// RequestState::finish()/fail(), including cancelled ones ("cancelled").
#pragma once

#include <memory>

#include "core/common/result.h"
#include "core/engine/engine.h"
#include "core/engine/request_state.h"

namespace lector::engine {

class Backend {
public:
    virtual ~Backend() = default;

    virtual EngineInfo info() const = 0;
    // Whether this model can run the request (preset known and supported, image present).
    virtual Result<void> accepts(const Request& request) const = 0;

    // --- engine thread only ---
    // Called once before the first request: runs what the first requests would otherwise pay for (the
    // first sights of kernels, shapes and the engine thread's own library handles and threads). Errors
    // are the backend's to log; requests submitted meanwhile wait in the queue.
    virtual void warmUp() {}
    virtual void add(RequestPtr request) = 0;
    virtual bool hasWork() const = 0;
    // Runs one step of work. Exceptions escaping it fail the requests of that step (engine loop).
    virtual void step() = 0;
    // Requests of the step that threw, so the engine can fail exactly those.
    virtual std::vector<RequestPtr> takeInFlight() = 0;
    // Finishes a request with "cancelled" if the backend still holds it.
    virtual void cancel(RequestId id) = 0;
    virtual void cancelAll() = 0;
    // Load figures for Engine::stats() (steps is filled by the engine).
    virtual EngineStats stats() const { return {}; }
};

// A result for `request` with the fields every backend fills the same way: image, model, device,
// dtype, preset.
inline doc::OcrResult resultFor(const Request& request, const EngineInfo& info)
{
    doc::OcrResult result;
    result.image = request.imageName;
    result.model = info.model;
    result.device = info.device;
    result.dtype = info.dtype;
    result.preset = request.preset;
    return result;
}

// Builds the backend of config.model: loads weights on the calling thread. Errors name the file.
Result<std::unique_ptr<Backend>> createBackend(const EngineConfig& config);

}  // namespace lector::engine
