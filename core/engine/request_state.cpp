#include "core/engine/request_state.h"

#include "core/common/log.h"
#include "core/common/timing.h"

namespace lector::engine {

RequestState::RequestState(RequestId id, Request request, Callbacks callbacks, std::function<void()> onDone)
    : m_id(id), m_request(std::move(request)), m_callbacks(std::move(callbacks)), m_onDone(std::move(onDone)),
      m_queuedAt(Clock::now()), m_startedAt(m_queuedAt)
{
}

double RequestState::queueMs() const { return msBetween(m_queuedAt, m_startedAt); }

double RequestState::totalMsNow() const
{
    return msBetween(m_request.createdAt.value_or(m_queuedAt), Clock::now());
}

void RequestState::finish(doc::OcrResult result)
{
    if (m_finished) return;
    m_finished = true;
    if (result.image.empty()) result.image = m_request.imageName;
    if (!result.failed()) {
        // Timings in pipeline order: decode (before submit), queue, the model's stages, then total.
        std::vector<std::pair<std::string, double>> ordered;
        if (m_request.decodeMs > 0) ordered.emplace_back("decode_image", m_request.decodeMs);
        ordered.emplace_back("queue", queueMs());
        for (auto& kv : result.timingMs)
            if (kv.first != "queue" && kv.first != "total" && kv.first != "decode_image") ordered.push_back(kv);
        ordered.emplace_back("total", totalMsNow());
        result.timingMs = std::move(ordered);
    }
    try {
        if (m_callbacks.onFinished) m_callbacks.onFinished(m_id, std::move(result));
    } catch (const std::exception& e) {
        LECTOR_LOG_ERROR("onFinished callback of request " << m_id << " threw: " << e.what());
    }
    if (m_onDone) m_onDone();
}

void RequestState::fail(const std::string& code, const std::string& message)
{
    auto r = doc::makeErrorResult(m_request.imageName, makeError(code, message));
    if (m_request.image) {
        r.width = m_request.image->width;
        r.height = m_request.image->height;
    }
    finish(std::move(r));
}

}  // namespace lector::engine
