// Engine thread, queue and request lifecycle, driven through a scripted fake backend (no model):
// every accepted request finishes exactly once; cancel, shutdown and a throwing step behave as
// engine.h promises.
#include "tests/support/lector_test.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/engine/backend.h"

using namespace lector;
using namespace lector::engine;

namespace {

// Finishes up to kPerStep requests per step with text = image name; an image named "boom" makes the
// step throw. `gate` lets a test hold the engine thread inside step().
class FakeBackend : public Backend {
public:
    static constexpr int kPerStep = 4;
    std::mutex* gateMutex = nullptr;
    std::vector<size_t>* stepSizes = nullptr;
    // warmUp() records its thread and whether it ran before any request arrived; throws if asked to.
    bool warmUpThrows = false;
    std::atomic<bool> warmedUp{false};
    std::thread::id warmUpThread, stepThread;
    bool requestBeforeWarmUp = false;

    void warmUp() override
    {
        warmUpThread = std::this_thread::get_id();
        std::this_thread::sleep_for(std::chrono::milliseconds(30));  // long enough for create() to return early
        if (warmUpThrows) throw std::runtime_error("warm-up failed");
        warmedUp = true;
    }

    EngineInfo info() const override { return {"fake", "cpu", "float32", {"text"}}; }
    Result<void> accepts(const Request& r) const override
    {
        if (r.preset != "text") return makeError("unsupported_preset", r.preset);
        return {};
    }
    void add(RequestPtr r) override
    {
        requestBeforeWarmUp = requestBeforeWarmUp || warmUpThread == std::thread::id{};
        m_waiting.push_back(std::move(r));
    }
    bool hasWork() const override { return !m_waiting.empty(); }
    void step() override
    {
        if (gateMutex) std::lock_guard hold(*gateMutex);
        stepThread = std::this_thread::get_id();
        m_inFlight.clear();
        while (!m_waiting.empty() && m_inFlight.size() < kPerStep) {
            m_inFlight.push_back(m_waiting.front());
            m_waiting.erase(m_waiting.begin());
        }
        if (stepSizes) stepSizes->push_back(m_inFlight.size());
        for (auto& r : m_inFlight)
            if (r->request().imageName == "boom") throw std::runtime_error("kaboom");
        for (auto& r : m_inFlight) {
            r->markStarted();
            doc::OcrResult res;
            res.text = r->request().imageName;
            res.setTiming("rec", 1.0);
            r->finish(std::move(res));
        }
        m_inFlight.clear();
    }
    std::vector<RequestPtr> takeInFlight() override { return std::exchange(m_inFlight, {}); }
    EngineStats stats() const override
    {
        EngineStats s;
        s.waitingSequences = static_cast<int>(m_waiting.size());
        s.kvBlocksTotal = 7;  // a marker that the engine publishes what the backend reports
        return s;
    }
    void cancel(RequestId id) override
    {
        for (auto it = m_waiting.begin(); it != m_waiting.end(); ++it) {
            if ((*it)->id() == id) {
                (*it)->fail("cancelled", "cancelled");
                m_waiting.erase(it);
                return;
            }
        }
    }
    void cancelAll() override
    {
        for (auto& r : m_waiting) r->fail("cancelled", "cancelled");
        m_waiting.clear();
    }

private:
    std::vector<RequestPtr> m_waiting;
    std::vector<RequestPtr> m_inFlight;
};

struct Collector {
    std::mutex mutex;
    std::condition_variable cv;
    std::map<RequestId, std::vector<doc::OcrResult>> results;

    Callbacks callbacks()
    {
        Callbacks cb;
        cb.onFinished = [this](RequestId id, doc::OcrResult r) {
            std::lock_guard lock(mutex);
            results[id].push_back(std::move(r));
            cv.notify_all();
        };
        return cb;
    }
    void waitFor(size_t n)
    {
        std::unique_lock lock(mutex);
        const bool ok = cv.wait_for(lock, std::chrono::seconds(10), [&] { return results.size() >= n; });
        LECTOR_CHECK_MSG(ok, "timed out waiting for " << n << " results, have " << results.size());
    }
};

Request makeRequest(const std::string& name)
{
    Request r;
    r.imageName = name;
    r.image = std::make_shared<const Image>(4, 4);
    return r;
}

}  // namespace

LECTOR_TEST(everyRequestFinishesExactlyOnceWithItsResult)
{
    auto engine = startEngine(std::make_unique<FakeBackend>(), EngineConfig{});
    Collector c;
    std::map<RequestId, std::string> names;
    for (int i = 0; i < 10; ++i) {
        auto id = engine->submit(makeRequest("img" + std::to_string(i)), c.callbacks());
        LECTOR_CHECK(id.ok());
        names[*id] = "img" + std::to_string(i);
    }
    c.waitFor(10);
    engine->shutdown();
    for (auto& [id, rs] : c.results) {
        LECTOR_CHECK_EQ(rs.size(), size_t(1));
        LECTOR_CHECK_EQ(rs[0].text, names[id]);
        LECTOR_CHECK_EQ(rs[0].image, names[id]);
        LECTOR_CHECK(!rs[0].failed());
        // queue first, the backend's stages, total last
        LECTOR_CHECK_EQ(rs[0].timingMs.front().first, std::string("queue"));
        LECTOR_CHECK_EQ(rs[0].timingMs.back().first, std::string("total"));
        LECTOR_CHECK(rs[0].timing("total") >= rs[0].timing("queue"));
    }
    LECTOR_CHECK_EQ(engine->pendingCount(), size_t(0));
}

// The backend warms up on the engine thread (some of what it warms is per thread), and create() returns
// only after that, so the first requests do not wait behind it; a failed warm-up leaves a working engine.
LECTOR_TEST(backendWarmsUpOnTheEngineThreadBeforeStartReturns)
{
    for (bool throws : {false, true}) {
        auto backend = std::make_unique<FakeBackend>();
        backend->warmUpThrows = throws;
        FakeBackend* fake = backend.get();
        auto engine = startEngine(std::move(backend), EngineConfig{});
        LECTOR_CHECK(fake->warmUpThread != std::thread::id{});  // it ran before startEngine() returned
        LECTOR_CHECK(fake->warmUpThread != std::this_thread::get_id());
        LECTOR_CHECK_EQ(fake->warmedUp.load(), !throws);
        Collector c;
        LECTOR_CHECK(engine->submit(makeRequest("after"), c.callbacks()).ok());
        c.waitFor(1);
        engine->shutdown();
        LECTOR_CHECK(!fake->requestBeforeWarmUp);
        LECTOR_CHECK(fake->stepThread == fake->warmUpThread);
        LECTOR_CHECK_EQ(c.results.begin()->second.at(0).text, std::string("after"));
    }
}

LECTOR_TEST(statsArePublishedAfterEachStep)
{
    auto engine = startEngine(std::make_unique<FakeBackend>(), EngineConfig{});
    LECTOR_CHECK_EQ(engine->stats().steps, 0LL);  // nothing ran yet
    Collector c;
    for (int i = 0; i < 9; ++i) LECTOR_CHECK(engine->submit(makeRequest("s" + std::to_string(i)), c.callbacks()).ok());
    c.waitFor(9);
    // Nine requests at four per step: at least three steps (more where the first step started before
    // all nine were queued). The snapshot follows each step, after its callbacks, so wait briefly for
    // one that shows both (a step count alone can come from an earlier step's snapshot, with requests
    // still waiting).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto settled = [](const EngineStats& s) { return s.steps >= 3 && s.waitingSequences == 0; };
    while (!settled(engine->stats()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const EngineStats s = engine->stats();
    LECTOR_CHECK(s.steps >= 3);
    LECTOR_CHECK_EQ(s.kvBlocksTotal, 7);
    LECTOR_CHECK_EQ(s.waitingSequences, 0);
    engine->shutdown();
}

LECTOR_TEST(requestsQueuedTogetherShareASteps)
{
    std::mutex gate;
    std::vector<size_t> sizes;
    auto backend = std::make_unique<FakeBackend>();
    backend->gateMutex = &gate;
    backend->stepSizes = &sizes;
    Collector c;
    std::unique_ptr<Engine> engine;
    {
        std::unique_lock hold(gate);  // first step blocks until all 9 are queued
        engine = startEngine(std::move(backend), EngineConfig{});
        for (int i = 0; i < 9; ++i) LECTOR_CHECK(engine->submit(makeRequest("x"), c.callbacks()).ok());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    c.waitFor(9);
    engine->shutdown();
    // The first step may have started with 1..4; afterwards steps are full batches of the backlog.
    size_t total = 0;
    for (size_t s : sizes) total += s;
    LECTOR_CHECK_EQ(total, size_t(9));
    LECTOR_CHECK_MSG(sizes.size() <= 4, "9 requests took " << sizes.size() << " steps");
}

LECTOR_TEST(aThrowingStepFailsOnlyItsRequests)
{
    Collector c;
    auto engine = startEngine(std::make_unique<FakeBackend>(), EngineConfig{});
    auto bad = engine->submit(makeRequest("boom"), c.callbacks());
    c.waitFor(1);
    auto good = engine->submit(makeRequest("fine"), c.callbacks());
    c.waitFor(2);
    engine->shutdown();
    LECTOR_CHECK(c.results[*bad][0].failed());
    LECTOR_CHECK_EQ(c.results[*bad][0].error->code, std::string("recognition_failed"));
    LECTOR_CHECK(c.results[*bad][0].error->message.find("boom") != std::string::npos);
    LECTOR_CHECK(!c.results[*good][0].failed());
}

LECTOR_TEST(cancelAndShutdownFinishPendingRequestsAsCancelled)
{
    std::mutex gate;
    auto backend = std::make_unique<FakeBackend>();
    backend->gateMutex = &gate;
    Collector c;
    std::vector<RequestId> ids;
    std::unique_ptr<Engine> engine;
    {
        std::unique_lock hold(gate);
        engine = startEngine(std::move(backend), EngineConfig{});
        for (int i = 0; i < 12; ++i) ids.push_back(*engine->submit(makeRequest("r" + std::to_string(i)), c.callbacks()));
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        engine->cancel(ids.back());
    }
    std::thread stopper([&] { engine->shutdown(); });
    stopper.join();
    LECTOR_CHECK_EQ(c.results.size(), size_t(12));
    for (auto& [id, rs] : c.results) LECTOR_CHECK_EQ(rs.size(), size_t(1));
    LECTOR_CHECK(c.results[ids.back()][0].failed());
    LECTOR_CHECK_EQ(c.results[ids.back()][0].error->code, std::string("cancelled"));
    auto late = engine->submit(makeRequest("late"), c.callbacks());
    LECTOR_CHECK(!late.ok());
    LECTOR_CHECK_EQ(late.error().code, std::string("shut_down"));
}

LECTOR_TEST(rejectsBadRequestsWithoutCallback)
{
    EngineConfig cfg;
    cfg.maxQueued = 2;
    std::mutex gate;
    auto backend = std::make_unique<FakeBackend>();
    backend->gateMutex = &gate;
    Collector c;
    std::unique_ptr<Engine> engine;
    {
        std::unique_lock hold(gate);
        engine = startEngine(std::move(backend), cfg);
        Request noImage;
        noImage.imageName = "none.png";
        auto r1 = engine->submit(noImage, c.callbacks());
        LECTOR_CHECK_EQ(r1.error().code, std::string("bad_request"));
        LECTOR_CHECK(r1.error().message.find("none.png") != std::string::npos);
        auto wrong = makeRequest("a");
        wrong.preset = "nonsense";
        LECTOR_CHECK_EQ(engine->submit(wrong, c.callbacks()).error().code, std::string("unsupported_preset"));
        LECTOR_CHECK(engine->submit(makeRequest("1"), c.callbacks()).ok());
        LECTOR_CHECK(engine->submit(makeRequest("2"), c.callbacks()).ok());
        auto full = engine->submit(makeRequest("3"), c.callbacks());
        LECTOR_CHECK_EQ(full.error().code, std::string("queue_full"));
    }
    c.waitFor(2);
    engine->shutdown();
    LECTOR_CHECK_EQ(c.results.size(), size_t(2));
}
