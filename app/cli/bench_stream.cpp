#include "app/cli/bench_stream.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "core/doc/ocr_result.h"

namespace lector::cli {
namespace {

using engine::Clock;
constexpr auto kSampleEvery = std::chrono::milliseconds(5);

double secondsBetween(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

// One result slot per request, filled on the engine thread; the submitting thread waits on it. The
// notify happens under the lock so the waiter cannot return (and destroy this) mid-notify.
class ResultSlots {
public:
    explicit ResultSlots(size_t n) : m_results(n), m_finishedAt(n) {}

    engine::Callbacks callbacks(size_t slot)
    {
        engine::Callbacks cb;
        cb.onFinished = [this, slot](engine::RequestId, doc::OcrResult r) { store(slot, std::move(r)); };
        return cb;
    }

    void store(size_t slot, doc::OcrResult result)
    {
        std::lock_guard lock(m_mutex);
        m_results[slot] = std::move(result);
        m_finishedAt[slot] = Clock::now();
        ++m_done;
        m_cv.notify_all();
    }

    // True once every slot is filled; false when `until` came first.
    bool waitUntil(Clock::time_point until)
    {
        std::unique_lock lock(m_mutex);
        return m_cv.wait_until(lock, until, [this] { return m_done == m_results.size(); });
    }

    // Only after waitUntil() returned true (no writer is left).
    const std::vector<doc::OcrResult>& results() const { return m_results; }
    Clock::time_point lastFinish() const { return *std::max_element(m_finishedAt.begin(), m_finishedAt.end()); }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<doc::OcrResult> m_results;
    std::vector<Clock::time_point> m_finishedAt;
    size_t m_done = 0;
};

// Samples Engine::stats() at most every kSampleEvery, from the submitting thread.
class LoadSampler {
public:
    explicit LoadSampler(const engine::Engine& engine)
        : m_engine(engine), m_start(engine.stats()), m_next(Clock::now())
    {
    }

    Clock::time_point next() const { return m_next; }

    void sampleIfDue()
    {
        const auto now = Clock::now();
        if (now < m_next) return;
        const engine::EngineStats s = m_engine.stats();
        ++m_summary.samples;
        m_sumUsed += s.kvBlocksUsed;
        m_summary.kvBlocksPeak = std::max(m_summary.kvBlocksPeak, s.kvBlocksUsed);
        m_summary.kvBlocksTotal = s.kvBlocksTotal;
        m_next += kSampleEvery;
        if (m_next <= now) m_next = now + kSampleEvery;  // fell behind (a slow submit): no burst of samples
    }

    // After the last result. The engine publishes stats after the step that delivered it, so wait
    // (briefly) for the snapshot that shows nothing running before reading the preemption count.
    LoadSummary finish()
    {
        const auto deadline = Clock::now() + std::chrono::milliseconds(200);
        engine::EngineStats s = m_engine.stats();
        while ((s.runningSequences > 0 || s.waitingSequences > 0) && Clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            s = m_engine.stats();
        }
        m_summary.preemptions = s.preemptions - m_start.preemptions;
        m_summary.overlappedSteps = s.overlappedSteps - m_start.overlappedSteps;
        auto during = [](const engine::StepTimes& end, const engine::StepTimes& begin) {
            return engine::StepTimes{end.steps - begin.steps, end.ms - begin.ms};
        };
        m_summary.visionSteps = during(s.visionSteps, m_start.visionSteps);
        m_summary.prefillSteps = during(s.prefillSteps, m_start.prefillSteps);
        m_summary.decodeSteps = during(s.decodeSteps, m_start.decodeSteps);
        m_summary.kvBlocksMean = m_summary.samples ? m_sumUsed / m_summary.samples : 0.0;
        if (s.kvBlocksTotal > 0) m_summary.kvBlocksTotal = s.kvBlocksTotal;
        return m_summary;
    }

private:
    const engine::Engine& m_engine;
    engine::EngineStats m_start;  // counters at the start of the run
    Clock::time_point m_next;
    double m_sumUsed = 0;
    LoadSummary m_summary;
};

// Sleeps until `t`, waking every ~5 ms to sample the engine's load.
void sleepUntilSampling(Clock::time_point t, LoadSampler& sampler)
{
    for (;;) {
        sampler.sampleIfDue();
        if (Clock::now() >= t) return;
        std::this_thread::sleep_until(std::min(t, sampler.next()));
    }
}

void waitAllSampling(ResultSlots& slots, LoadSampler& sampler)
{
    for (;;) {
        sampler.sampleIfDue();
        if (slots.waitUntil(sampler.next())) return;
    }
}

// Submits one request into `slot`; "total" then runs from this submit (createdAt = now). A rejected
// submit fills the slot with its error, as the engine would.
void submitInto(engine::Engine& engine, ResultSlots& slots, size_t slot, engine::Request req)
{
    const std::string name = req.imageName;
    req.createdAt = Clock::now();
    auto id = engine.submit(std::move(req), slots.callbacks(slot));
    if (!id.ok()) slots.store(slot, doc::makeErrorResult(name, id.error()));
}

std::optional<double> timingOf(const doc::OcrResult& r, const char* stage)
{
    for (const auto& [name, ms] : r.timingMs)
        if (name == stage) return ms;
    return std::nullopt;
}

ServingReport summarize(const ResultSlots& slots, Clock::time_point t0, LoadSummary load)
{
    ServingReport rep;
    rep.requests = static_cast<int>(slots.results().size());
    rep.load = load;
    for (const doc::OcrResult& r : slots.results()) {
        if (r.failed()) {
            ++rep.failures;
            rep.errors.push_back(r.error->message);
            continue;
        }
        ++rep.finished;
        if (r.tokens) rep.generatedTokens += r.tokens->generated;
        if (auto ms = timingOf(r, "total")) rep.totalMs.push_back(*ms);
        if (auto ms = timingOf(r, "first_token")) rep.firstTokenMs.push_back(*ms);
        if (auto ms = timingOf(r, "per_token")) rep.perTokenMs.push_back(*ms);
    }
    if (rep.requests > 0) rep.spanSeconds = secondsBetween(t0, slots.lastFinish());
    return rep;
}

engine::Request requestFor(const engine::Request& tmpl, const BenchImages& images, size_t k)
{
    engine::Request req = tmpl;
    const auto& [name, image] = images[k % images.size()];
    req.imageName = name;
    req.image = image;
    return req;
}

}  // namespace

double percentile(std::vector<double> values, double q)
{
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const double pos = q * (values.size() - 1);
    const auto lo = static_cast<size_t>(pos);
    const auto hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (values[hi] - values[lo]) * (pos - lo);
}

ServingReport runBurst(engine::Engine& engine, const engine::Request& tmpl, const BenchImages& images,
                       int repeat, int copies)
{
    const size_t perPass = images.size() * static_cast<size_t>(copies);
    ResultSlots slots(perPass * static_cast<size_t>(repeat));
    LoadSampler sampler(engine);
    const auto t0 = Clock::now();
    size_t slot = 0;
    for (int pass = 0; pass < repeat; ++pass)
        for (size_t i = 0; i < images.size(); ++i)
            for (int c = 0; c < copies; ++c) submitInto(engine, slots, slot++, requestFor(tmpl, images, i));
    const auto submitted = Clock::now();
    waitAllSampling(slots, sampler);
    ServingReport rep = summarize(slots, t0, sampler.finish());
    rep.submitSeconds = secondsBetween(t0, submitted);
    return rep;
}

ServingReport runPoisson(engine::Engine& engine, const engine::Request& tmpl, const BenchImages& images,
                         const PoissonOptions& options)
{
    // The whole schedule is drawn first (gap, then new tokens, per request), so a seed names one stream
    // whatever the engine does.
    std::mt19937_64 rng(options.seed);
    std::exponential_distribution<double> gap(options.rate);
    std::uniform_int_distribution<int> newTokens(std::max(1, options.newTokensMin), std::max(1, options.newTokensMax));
    const bool drawTokens = options.newTokensMin > 0;
    std::vector<double> offsetS(options.count);
    std::vector<int> maxNewTokens(options.count, tmpl.sampling.maxNewTokens);
    double t = 0;
    for (int k = 0; k < options.count; ++k) {
        if (k > 0) t += gap(rng);
        offsetS[k] = t;
        if (drawTokens) maxNewTokens[k] = newTokens(rng);
    }

    ResultSlots slots(options.count);
    LoadSampler sampler(engine);
    double maxLagMs = 0;
    const auto t0 = Clock::now();
    for (int k = 0; k < options.count; ++k) {
        const auto at = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(offsetS[k]));
        sleepUntilSampling(at, sampler);
        engine::Request req = requestFor(tmpl, images, k);
        req.sampling.maxNewTokens = maxNewTokens[k];
        maxLagMs = std::max(maxLagMs, std::chrono::duration<double, std::milli>(Clock::now() - at).count());
        submitInto(engine, slots, k, std::move(req));
    }
    const auto submitted = Clock::now();
    waitAllSampling(slots, sampler);
    ServingReport rep = summarize(slots, t0, sampler.finish());
    rep.submitSeconds = secondsBetween(t0, submitted);
    rep.maxSubmitLagMs = maxLagMs;
    return rep;
}

}  // namespace lector::cli
