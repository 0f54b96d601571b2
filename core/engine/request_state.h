// RequestState: one accepted request inside the engine — the request, its callbacks, its cancel flag
// and its timestamps. Created by Engine::submit() (any thread), then owned by the engine thread, which
// alone calls finish(). finish() delivers onFinished exactly once; later calls are ignored.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "core/engine/engine.h"

namespace lector::engine {

class RequestState {
public:
    RequestState(RequestId id, Request request, Callbacks callbacks, std::function<void()> onDone);

    RequestId id() const { return m_id; }
    const Request& request() const { return m_request; }
    Request& request() { return m_request; }
    const Callbacks& callbacks() const { return m_callbacks; }

    // Any thread: mark cancelled; the engine thread notices between steps / at the next token.
    void requestCancel() { m_cancelled.store(true, std::memory_order_relaxed); }
    bool cancelled() const { return m_cancelled.load(std::memory_order_relaxed); }
    bool finished() const { return m_finished; }

    Clock::time_point queuedAt() const { return m_queuedAt; }
    Clock::time_point startedAt() const { return m_startedAt; }
    void markStarted() { m_startedAt = Clock::now(); }
    // Milliseconds spent waiting in the queue (queued -> started).
    double queueMs() const;
    // Milliseconds from the user's request (createdAt, else queuedAt) until now.
    double totalMsNow() const;

    // Engine thread only. Fills "queue" and "total" timings if absent, then calls onFinished once.
    void finish(doc::OcrResult result);
    // Engine thread only: finish with an error result naming the image.
    void fail(const std::string& code, const std::string& message);

private:
    RequestId m_id;
    Request m_request;
    Callbacks m_callbacks;
    std::function<void()> m_onDone;
    std::atomic<bool> m_cancelled{false};
    bool m_finished = false;
    Clock::time_point m_queuedAt;
    Clock::time_point m_startedAt;
};

using RequestPtr = std::shared_ptr<RequestState>;

}  // namespace lector::engine
