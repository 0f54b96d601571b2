#include "app/cli/batch_runner.h"

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/image/decode.h"

namespace lector::cli {
namespace {

// State shared by the decode workers, the engine callbacks and the caller's thread.
struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t nextToDecode = 0;       // next item index a worker takes
    std::size_t inFlight = 0;           // decoded or being decoded, not yet delivered
    std::map<std::size_t, doc::OcrResult> done;  // finished, waiting for their turn
    std::map<std::size_t, engine::RequestId> submitted;  // in the engine, not yet finished
    bool stopping = false;
};

}  // namespace

std::size_t BatchRunner::run(const std::vector<BatchItem>& items, const Sink& sink, const std::atomic<bool>* stop)
{
    Shared sh;
    const std::size_t maxInFlight = static_cast<std::size_t>(std::max(1, m_options.maxInFlight));
    auto stopRequested = [&] { return stop && stop->load(); };

    auto complete = [&sh](std::size_t idx, doc::OcrResult r) {
        {
            std::lock_guard lock(sh.mutex);
            sh.submitted.erase(idx);
            sh.done.emplace(idx, std::move(r));
        }
        sh.cv.notify_all();
    };

    auto worker = [&] {
        while (true) {
            std::size_t idx;
            {
                std::unique_lock lock(sh.mutex);
                sh.cv.wait(lock, [&] { return sh.stopping || sh.inFlight < maxInFlight || sh.nextToDecode >= items.size(); });
                if (sh.stopping || sh.nextToDecode >= items.size()) return;
                idx = sh.nextToDecode++;
                ++sh.inFlight;
            }
            const auto& item = items[idx];
            const auto createdAt = engine::Clock::now();
            auto image = image::decodeImageFile(item.path);
            const double decodeMs =
                std::chrono::duration<double, std::milli>(engine::Clock::now() - createdAt).count();
            if (!image.ok()) {
                complete(idx, doc::makeErrorResult(item.name, image.error()));
                continue;
            }
            engine::Request req = m_options.requestTemplate;
            req.imageName = item.name;
            req.image = std::make_shared<const Image>(std::move(image).value());
            req.createdAt = createdAt;
            req.decodeMs = decodeMs;
            engine::Callbacks cb;
            cb.onFinished = [complete, idx](engine::RequestId, doc::OcrResult r) { complete(idx, std::move(r)); };
            auto id = m_engine.submit(std::move(req), std::move(cb));
            if (!id.ok()) {
                complete(idx, doc::makeErrorResult(item.name, id.error()));
                continue;
            }
            bool cancelNow = false;
            {
                std::lock_guard lock(sh.mutex);
                if (!sh.done.count(idx)) sh.submitted.emplace(idx, *id);
                cancelNow = sh.stopping;  // the stop came while this image was being decoded
            }
            if (cancelNow) m_engine.cancel(*id);
        }
    };

    std::vector<std::thread> workers;
    for (int i = 0; i < std::max(1, m_options.decodeThreads); ++i) workers.emplace_back(worker);

    std::size_t delivered = 0, written = 0;
    {
        std::unique_lock lock(sh.mutex);
        while (delivered < items.size()) {
            if (stopRequested() && !sh.stopping) {
                // No new decodes; images still queued in the engine are cancelled (a later --resume
                // does them), the ones in the running step finish and are written.
                sh.stopping = true;
                sh.cv.notify_all();
                const auto queued = sh.submitted;
                lock.unlock();
                for (const auto& [idx, id] : queued) m_engine.cancel(id);
                lock.lock();
            }
            const bool noMore = sh.stopping && delivered >= sh.nextToDecode;
            if (noMore) break;
            sh.cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return sh.done.count(delivered) > 0; });
            while (sh.done.count(delivered)) {
                auto node = sh.done.extract(delivered);
                --sh.inFlight;
                lock.unlock();
                sh.cv.notify_all();
                const doc::OcrResult& r = node.mapped();
                const bool cancelledByStop = sh.stopping && r.error && r.error->code == "cancelled";
                if (!cancelledByStop) {
                    sink(delivered, std::move(node.mapped()));
                    ++written;
                }
                lock.lock();
                ++delivered;
            }
        }
        sh.stopping = true;
    }
    sh.cv.notify_all();
    for (auto& w : workers) w.join();
    return written;
}

}  // namespace lector::cli
