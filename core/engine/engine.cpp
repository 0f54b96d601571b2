// The engine loop. Central idea: one thread owns the backend (model, device, caches). It drains the
// request queue (blocking only when idle), hands new requests to the backend, applies cancels, and runs
// one backend step; new requests join the next step, so work of many requests is batched. A step that
// throws fails only the requests in it, and the loop goes on (docs/style.md §6.4).
#include "core/engine/engine.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <future>
#include <thread>
#include <unordered_map>

#include "core/common/log.h"
#include "core/engine/backend.h"
#include "core/engine/request_queue.h"

namespace lector::engine {

struct Engine::Impl {
    EngineConfig config;
    std::unique_ptr<Backend> backend;
    EngineInfo info;
    RequestQueue queue;
    std::atomic<RequestId> nextId{1};
    std::atomic<std::size_t> pending{0};
    std::atomic<bool> stopped{false};
    std::mutex liveMutex;  // guards `live`: id -> state, for cancel() from other threads
    std::unordered_map<RequestId, std::weak_ptr<RequestState>> live;
    std::thread thread;
    std::promise<void> warm;        // set by the engine thread once the backend warmed up
    mutable std::mutex statsMutex;  // guards stats: written by the engine thread, read by any
    EngineStats stats;

    void run();
    void handle(EngineCommand& command, bool& shutdown);
    void forget(RequestId id);
};

void Engine::Impl::forget(RequestId id)
{
    std::lock_guard lock(liveMutex);
    live.erase(id);
}

void Engine::Impl::handle(EngineCommand& command, bool& shutdown)
{
    if (auto* submit = std::get_if<SubmitCommand>(&command)) {
        if (shutdown || submit->request->cancelled()) {
            submit->request->fail("cancelled", submit->request->request().imageName + ": cancelled");
            return;
        }
        backend->add(std::move(submit->request));
    } else if (auto* cancel = std::get_if<CancelCommand>(&command)) {
        backend->cancel(cancel->id);
    } else {
        shutdown = true;
    }
}

void Engine::Impl::run()
{
    if (config.threads > 0) at::set_num_threads(config.threads);
    at::init_num_threads();
    // On this thread: part of what it warms is per thread (library handles, the OpenMP team).
    try {
        backend->warmUp();
    } catch (const std::exception& e) {
        LECTOR_LOG_WARN("engine warm-up failed: " << e.what());
    }
    warm.set_value();
    bool shutdown = false;
    while (true) {
        auto commands = queue.drain(/*wait=*/!backend->hasWork() && !shutdown);
        for (auto& c : commands) handle(c, shutdown);
        if (shutdown) {
            backend->cancelAll();
            // Requests submitted after shutdown began are failed by handle(); drain them once more.
            for (auto& c : queue.drain(false)) handle(c, shutdown);
            break;
        }
        if (!backend->hasWork()) continue;
        try {
            backend->step();
        } catch (const std::exception& e) {
            LECTOR_LOG_ERROR("engine step failed: " << e.what());
            for (auto& r : backend->takeInFlight())
                r->fail("recognition_failed", r->request().imageName + ": " + e.what());
        }
        EngineStats now = backend->stats();
        std::lock_guard lock(statsMutex);
        now.steps = stats.steps + 1;
        stats = now;
    }
}

Engine::Engine(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config)
{
    if (config.device != "cpu" && config.device != "cuda")
        return makeError("bad_config", "unknown device '" + config.device + "' (expected cpu or cuda)");
    Result<std::unique_ptr<Backend>> backend = [&]() -> Result<std::unique_ptr<Backend>> {
        try {
            return createBackend(config);
        } catch (const std::exception& e) {
            return makeError("bad_model", std::string("loading ") + config.model + " failed: " + e.what());
        }
    }();
    if (!backend.ok()) return backend.error();
    return startEngine(std::move(backend).value(), config);
}

std::unique_ptr<Engine> startEngine(std::unique_ptr<Backend> backend, const EngineConfig& config)
{
    auto impl = std::make_unique<Engine::Impl>();
    impl->config = config;
    impl->backend = std::move(backend);
    impl->info = impl->backend->info();
    Engine::Impl* raw = impl.get();
    std::future<void> warm = impl->warm.get_future();
    impl->thread = std::thread([raw] { raw->run(); });
    // The engine is ready when create() returns: the first requests do not wait behind the warm-up.
    warm.wait();
    return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Engine::~Engine() { shutdown(); }

Result<RequestId> Engine::submit(Request request, Callbacks callbacks) noexcept
{
    try {
        if (m_impl->stopped.load()) return makeError("shut_down", "the engine has been shut down");
        if (!request.image || request.image->empty())
            return makeError("bad_request", request.imageName + ": no image data");
        if (auto ok = m_impl->backend->accepts(request); !ok) return ok.error();
        if (m_impl->config.maxQueued > 0 &&
            m_impl->pending.load() >= static_cast<std::size_t>(m_impl->config.maxQueued))
            return makeError("queue_full", request.imageName + ": the engine queue is full");
        const RequestId id = m_impl->nextId.fetch_add(1);
        Impl* impl = m_impl.get();
        auto state = std::make_shared<RequestState>(id, std::move(request), std::move(callbacks), [impl, id] {
            impl->forget(id);
            impl->pending.fetch_sub(1);
        });
        {
            std::lock_guard lock(m_impl->liveMutex);
            m_impl->live[id] = state;
        }
        m_impl->pending.fetch_add(1);
        m_impl->queue.push(SubmitCommand{std::move(state)});
        return id;
    } catch (const std::exception& e) {
        return makeError("bad_request", std::string("submit failed: ") + e.what());
    }
}

void Engine::cancel(RequestId id) noexcept
{
    try {
        {
            std::lock_guard lock(m_impl->liveMutex);
            auto it = m_impl->live.find(id);
            if (it == m_impl->live.end()) return;
            if (auto s = it->second.lock()) s->requestCancel();
        }
        m_impl->queue.push(CancelCommand{id});
    } catch (...) {
    }
}

void Engine::shutdown() noexcept
{
    if (!m_impl || m_impl->stopped.exchange(true)) return;
    try {
        {
            std::lock_guard lock(m_impl->liveMutex);
            for (auto& [id, weak] : m_impl->live)
                if (auto s = weak.lock()) s->requestCancel();
        }
        m_impl->queue.push(ShutdownCommand{});
        if (m_impl->thread.joinable()) m_impl->thread.join();
        m_impl->backend.reset();
    } catch (...) {
    }
}

EngineInfo Engine::info() const { return m_impl->info; }

std::size_t Engine::pendingCount() const noexcept { return m_impl->pending.load(); }

EngineStats Engine::stats() const
{
    std::lock_guard lock(m_impl->statsMutex);
    return m_impl->stats;
}

}  // namespace lector::engine
