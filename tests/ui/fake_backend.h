// FakeBackend: a scripted OcrBackend for UI tests that need exact timing (cancel mid-batch, resume,
// event-loop latency under load) independent of how fast the real engine is on a shared CPU. It has
// its own worker thread, like the engine: requests are served in order, each after `delayMs`, and
// answered through the callbacks on that thread. The result has one line per 40 pixels of image
// height ("line <k> of <imageName>"), boxes in image pixels, confidence 0.95.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "ui/ocr_backend.h"

namespace lector::test {

class FakeBackend final : public ui::OcrBackend {
public:
    explicit FakeBackend(int delayMs = 5, std::string model = "ppocr-v4") : m_delayMs(delayMs), m_model(std::move(model))
    {
        m_thread = std::thread([this] { run(); });
    }
    ~FakeBackend() override { shutdown(); }

    Result<engine::RequestId> submit(engine::Request request, engine::Callbacks callbacks) noexcept override
    {
        if (!request.image) return makeError("bad_request", "no image");
        std::lock_guard lock(m_mutex);
        if (m_stopped) return makeError("shut_down", "engine is shut down");
        const engine::RequestId id = ++m_nextId;
        m_queue.push_back(Item{id, std::move(request), std::move(callbacks)});
        ++m_pending;
        m_cv.notify_one();
        return id;
    }
    void cancel(engine::RequestId id) noexcept override
    {
        std::lock_guard lock(m_mutex);
        m_cancelled.insert(id);
    }
    void shutdown() noexcept override
    {
        {
            std::lock_guard lock(m_mutex);
            if (m_stopped) return;
            m_stopped = true;
        }
        m_cv.notify_all();
        if (m_thread.joinable()) m_thread.join();
    }
    engine::EngineInfo info() const override
    {
        return {m_model, "cpu", "float32", {"text", "card", "invoice", "receipt"}};
    }
    std::size_t pendingCount() const noexcept override { return m_pending.load(); }
    std::set<std::string> seenPresets() const
    {
        std::lock_guard lock(m_mutex);
        return m_presets;
    }
    std::vector<engine::Request> served() const
    {
        std::lock_guard lock(m_mutex);
        return m_served;
    }

private:
    struct Item {
        engine::RequestId id;
        engine::Request request;
        engine::Callbacks callbacks;
    };

    void run()
    {
        for (;;) {
            Item item;
            {
                std::unique_lock lock(m_mutex);
                m_cv.wait(lock, [this] { return m_stopped || !m_queue.empty(); });
                if (m_queue.empty()) return;  // stopped and drained
                item = std::move(m_queue.front());
                m_queue.pop_front();
            }
            bool cancelled = false;
            {
                std::unique_lock lock(m_mutex);
                // Wait out the "work", waking early on shutdown or cancel.
                m_cv.wait_for(lock, std::chrono::milliseconds(m_delayMs),
                              [&] { return m_stopped || m_cancelled.count(item.id) > 0; });
                cancelled = m_stopped || m_cancelled.count(item.id) > 0;
                m_presets.insert(item.request.preset);
                if (!cancelled) m_served.push_back(item.request);
            }
            doc::OcrResult r;
            r.image = item.request.imageName;
            if (cancelled) {
                r.error = makeError("cancelled", "cancelled");
            } else {
                r.width = item.request.image->width;
                r.height = item.request.image->height;
                r.model = m_model;
                r.device = "cpu";
                r.dtype = "float32";
                r.preset = item.request.preset;
                const int numLines = std::max(1, r.height / 40);
                for (int k = 0; k < numLines; ++k) {
                    doc::TextLine line;
                    line.text = "line " + std::to_string(k + 1) + " of " + r.image;
                    line.box = {10, k * 40 + 5, std::max(20, r.width - 10), k * 40 + 30};
                    line.polygon = {doc::PointF{10.f, k * 40 + 5.f}, doc::PointF{std::max(20, r.width - 10) * 1.f, k * 40 + 5.f},
                                    doc::PointF{std::max(20, r.width - 10) * 1.f, k * 40 + 30.f}, doc::PointF{10.f, k * 40 + 30.f}};
                    line.confidence = k % 3 == 2 ? 0.6f : 0.95f;
                    r.lines.push_back(line);
                    r.text += (k ? "\n" : "") + line.text;
                }
                r.setTiming("queue", 0.1);
                r.setTiming("det", m_delayMs * 0.4);
                r.setTiming("rec", m_delayMs * 0.6);
                r.setTiming("total", m_delayMs);
            }
            --m_pending;
            item.callbacks.onFinished(item.id, std::move(r));
        }
    }

    const int m_delayMs;
    const std::string m_model;
    mutable std::mutex m_mutex;
    std::condition_variable m_cv;
    std::deque<Item> m_queue;
    std::set<engine::RequestId> m_cancelled;
    std::set<std::string> m_presets;
    std::vector<engine::Request> m_served;
    engine::RequestId m_nextId = 0;
    std::atomic<std::size_t> m_pending{0};
    bool m_stopped = false;
    std::thread m_thread;
};

}  // namespace lector::test
