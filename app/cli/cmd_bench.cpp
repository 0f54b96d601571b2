// lector-cli bench [FILE|DIR]... : per-stage latency over a set of images, one request at a time
// (latency), then all at once (throughput; --copies N submits each image N times), then optionally an
// open-loop Poisson arrival stream (--poisson RATE). Warm-up runs are excluded. Prints a table; --json
// prints the same figures as JSON for scripts under bench/. The serving runs live in bench_stream.h.
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/cli/batch_runner.h"
#include "app/cli/bench_stream.h"
#include "app/cli/commands.h"
#include "app/cli/engine_options.h"
#include "app/cli/folder_scan.h"
#include "core/common/paths.h"
#include "core/doc/export_json.h"
#include "core/image/decode.h"

namespace lector::cli {
namespace {

constexpr int kMaxNewTokens = 32768;  // as --max-new-tokens

struct Stats {
    double median = 0, p90 = 0, mean = 0, max = 0;
};

Stats statsOf(const std::vector<double>& v)
{
    Stats s;
    if (v.empty()) return s;
    s.median = percentile(v, 0.5);
    s.p90 = percentile(v, 0.9);
    for (double x : v) s.mean += x;
    s.mean /= v.size();
    s.max = percentile(v, 1.0);
    return s;
}

doc::OcrResult recognizeOne(engine::Engine& engine, engine::Request req)
{
    std::promise<doc::OcrResult> done;
    auto future = done.get_future();
    engine::Callbacks cb;
    cb.onFinished = [&done](engine::RequestId, doc::OcrResult r) { done.set_value(std::move(r)); };
    req.createdAt = engine::Clock::now();
    auto id = engine.submit(std::move(req), std::move(cb));
    if (!id.ok()) return doc::makeErrorResult("", id.error());
    return future.get();
}

struct ServingArgs {
    int copies = 1;
    std::optional<PoissonOptions> poisson;
};

// --poisson RATE, --count N, --new-tokens-range A:B, --arrival-seed S, --copies N. Usage errors name the option.
std::optional<std::string> servingArgsFrom(const Args& args, ServingArgs& out)
{
    if (auto e = args.intValue("copies", 1, 1, 100000, out.copies)) return e;
    if (args.has("copies") && args.has("no-throughput")) return std::string("--copies needs the throughput run (drop --no-throughput)");
    if (!args.has("poisson")) {
        for (const char* name : {"count", "new-tokens-range", "arrival-seed"})
            if (args.has(name)) return "--" + std::string(name) + " needs --poisson RATE";
        return std::nullopt;
    }
    PoissonOptions p;
    const std::string rate = args.value("poisson");
    char* end = nullptr;
    p.rate = std::strtod(rate.c_str(), &end);
    if (rate.empty() || *end != '\0' || !std::isfinite(p.rate) || p.rate <= 0 || p.rate > 1e6)
        return "--poisson expects a rate in requests per second, > 0 and <= 1e6, got '" + rate + "'";
    if (auto e = args.intValue("count", 64, 1, 1000000, p.count)) return e;
    if (args.has("new-tokens-range")) {
        const std::string s = args.value("new-tokens-range");
        const auto colon = s.find(':');
        int a = 0, b = 0;
        bool ok = colon != std::string::npos;
        if (ok) {
            auto ra = std::from_chars(s.data(), s.data() + colon, a);
            auto rb = std::from_chars(s.data() + colon + 1, s.data() + s.size(), b);
            ok = ra.ec == std::errc() && ra.ptr == s.data() + colon && rb.ec == std::errc() &&
                 rb.ptr == s.data() + s.size() && 1 <= a && a <= b && b <= kMaxNewTokens;
        }
        if (!ok)
            return "--new-tokens-range expects A:B with 1 <= A <= B <= " + std::to_string(kMaxNewTokens) + ", got '" + s + "'";
        p.newTokensMin = a;
        p.newTokensMax = b;
    }
    if (args.has("arrival-seed")) {
        const std::string s = args.value("arrival-seed");
        auto r = std::from_chars(s.data(), s.data() + s.size(), p.seed);
        if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size())
            return "--arrival-seed expects a non-negative integer, got '" + s + "'";
    }
    out.poisson = p;
    return std::nullopt;
}

// Files and folders -> decoded images. Returns the exit code on failure (message printed).
std::optional<int> loadImages(const std::vector<std::string>& inputs, BenchImages& images)
{
    std::vector<BatchItem> items;
    for (const auto& in : inputs) {
        std::error_code ec;
        if (std::filesystem::is_directory(in, ec)) {
            auto scanned = scanFolder(in, true, defaultImageExtensions());
            if (!scanned.ok()) return std::fprintf(stderr, "lector-cli bench: %s\n", scanned.error().message.c_str()), 2;
            items.insert(items.end(), scanned->begin(), scanned->end());
        } else {
            items.push_back({in, in});
        }
    }
    for (const auto& it : items) {
        auto img = image::decodeImageFile(it.path);
        if (!img.ok()) return std::fprintf(stderr, "lector-cli bench: %s\n", img.error().message.c_str()), 1;
        images.emplace_back(it.name, std::make_shared<const Image>(std::move(img).value()));
    }
    if (images.empty()) return std::fprintf(stderr, "lector-cli bench: no images\n"), 2;
    return std::nullopt;
}

struct LatencyRun {
    std::vector<std::string> stageOrder;
    std::map<std::string, std::vector<double>> stages;
    std::vector<doc::OcrResult> lastPass;  // for --results: accuracy of exactly the runs timed here
    int failures = 0;
};

// `warmup` unmeasured passes, then `measured` passes, one request at a time.
LatencyRun runLatency(engine::Engine& engine, const engine::Request& tmpl, const BenchImages& images, int warmup,
                      int measured)
{
    LatencyRun run;
    for (int pass = 0; pass < warmup + measured; ++pass) {
        run.lastPass.clear();
        for (const auto& [name, img] : images) {
            engine::Request req = tmpl;
            req.imageName = name;
            req.image = img;
            auto r = recognizeOne(engine, std::move(req));
            if (pass >= warmup) run.lastPass.push_back(r);
            if (r.failed()) {
                ++run.failures;
                std::fprintf(stderr, "lector-cli bench: %s\n", r.error->message.c_str());
                continue;
            }
            if (pass < warmup) continue;
            for (const auto& [stage, ms] : r.timingMs) {
                if (!run.stages.count(stage)) run.stageOrder.push_back(stage);
                run.stages[stage].push_back(ms);
            }
        }
    }
    return run;
}

void printErrors(const ServingReport& rep)
{
    const size_t shown = std::min<size_t>(rep.errors.size(), 5);
    for (size_t i = 0; i < shown; ++i) std::fprintf(stderr, "lector-cli bench: %s\n", rep.errors[i].c_str());
    if (rep.errors.size() > shown) std::fprintf(stderr, "lector-cli bench: ... and %zu more failures\n", rep.errors.size() - shown);
}

double perSecond(double n, double seconds) { return n / std::max(seconds, 1e-9); }

nlohmann::json percentOf(double used, int total)
{
    return total > 0 ? nlohmann::json(100.0 * used / total) : nlohmann::json(nullptr);
}

std::string percentText(double used, int total)
{
    if (total <= 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * used / total);
    return buf;
}

// "12.3" or "-" when there is nothing to summarise.
std::string msText(const std::vector<double>& v, double q)
{
    if (v.empty()) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", percentile(v, q));
    return buf;
}

nlohmann::json quantilesJson(const std::vector<double>& v, std::initializer_list<std::pair<const char*, double>> qs)
{
    if (v.empty()) return nullptr;
    nlohmann::json j;
    for (const auto& [name, q] : qs) j[name] = percentile(v, q);
    return j;
}

// Arrival rate of the drawn schedule (n requests, n - 1 gaps); a short stream strays from RATE.
double realizedRate(const ServingReport& rep)
{
    return rep.requests > 1 ? perSecond(rep.requests - 1, rep.submitSeconds) : 0.0;
}

// The engine thread's steps by kind during a run: count and wall milliseconds of each.
nlohmann::json engineStepsJson(const LoadSummary& load)
{
    auto kind = [](const engine::StepTimes& t) { return nlohmann::json{{"steps", t.steps}, {"ms", t.ms}}; };
    return {{"vision", kind(load.visionSteps)}, {"prefill", kind(load.prefillSteps)}, {"decode", kind(load.decodeSteps)}};
}

// Whether the run had engine steps to report (HunyuanOCR; PP-OCR has none).
bool hasEngineSteps(const LoadSummary& load)
{
    return load.visionSteps.steps + load.prefillSteps.steps + load.decodeSteps.steps > 0;
}

// "vision 8 steps 1122 ms, prefill 28 steps 201 ms, decode only 255 steps 739 ms".
std::string engineStepsText(const LoadSummary& load)
{
    char buf[200];
    std::snprintf(buf, sizeof buf, "vision %lld steps %.0f ms, prefill %lld steps %.0f ms, decode only %lld steps %.0f ms",
                  load.visionSteps.steps, load.visionSteps.ms, load.prefillSteps.steps, load.prefillSteps.ms,
                  load.decodeSteps.steps, load.decodeSteps.ms);
    return buf;
}

nlohmann::json burstJson(const ServingReport& rep, int copies)
{
    return {{"requests", rep.requests},
            {"copies", copies},
            {"finished", rep.finished},
            {"failures", rep.failures},
            {"span_s", rep.spanSeconds},
            {"e2e_ms", quantilesJson(rep.totalMs, {{"p50", 0.5}, {"p99", 0.99}})},
            {"kv_blocks", {{"peak", rep.load.kvBlocksPeak},
                           {"total", rep.load.kvBlocksTotal},
                           {"peak_pct", percentOf(rep.load.kvBlocksPeak, rep.load.kvBlocksTotal)}}},
            {"preemptions", rep.load.preemptions},
            {"overlapped_steps", rep.load.overlappedSteps},
            {"engine_steps", engineStepsJson(rep.load)}};
}

nlohmann::json poissonJson(const ServingReport& rep, const PoissonOptions& p)
{
    const double p50 = percentile(rep.totalMs, 0.5);
    const auto& load = rep.load;
    return {{"requests", rep.requests},
            {"seed", p.seed},
            {"new_tokens_range", p.newTokensMin > 0 ? nlohmann::json({p.newTokensMin, p.newTokensMax}) : nlohmann::json(nullptr)},
            {"offered_req_per_s", p.rate},
            {"drawn_req_per_s", realizedRate(rep)},
            {"achieved_req_per_s", perSecond(rep.finished, rep.spanSeconds)},
            {"finished", rep.finished},
            {"failures", rep.failures},
            {"span_s", rep.spanSeconds},
            {"arrival_span_s", rep.submitSeconds},
            {"max_submit_lag_ms", rep.maxSubmitLagMs},
            {"e2e_ms", quantilesJson(rep.totalMs, {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1.0}})},
            {"p99_over_p50", p50 > 0 ? nlohmann::json(percentile(rep.totalMs, 0.99) / p50) : nlohmann::json(nullptr)},
            {"first_token_ms", quantilesJson(rep.firstTokenMs, {{"p50", 0.5}, {"p99", 0.99}})},
            {"per_token_ms", quantilesJson(rep.perTokenMs, {{"p50", 0.5}})},
            {"generated_tokens_per_s", perSecond(rep.generatedTokens, rep.spanSeconds)},
            {"kv_blocks", {{"mean", load.kvBlocksMean},
                           {"peak", load.kvBlocksPeak},
                           {"total", load.kvBlocksTotal},
                           {"mean_pct", percentOf(load.kvBlocksMean, load.kvBlocksTotal)},
                           {"peak_pct", percentOf(load.kvBlocksPeak, load.kvBlocksTotal)},
                           {"samples", load.samples}}},
            {"preemptions", load.preemptions},
            {"overlapped_steps", load.overlappedSteps},
            {"engine_steps", engineStepsJson(load)}};
}

void printBurst(const ServingReport& rep, int copies, size_t numImages, int repeat)
{
    std::printf("\nthroughput (%d requests at once: %zu images x %d copies x %d passes): %.2f images/s\n", rep.requests,
                numImages, copies, repeat, perSecond(rep.finished, rep.spanSeconds));
    if (rep.generatedTokens > 0) std::printf("generated tokens: %.0f tokens/s\n", perSecond(rep.generatedTokens, rep.spanSeconds));
    std::printf("end-to-end ms p50 / p99: %s / %s\n", msText(rep.totalMs, 0.5).c_str(), msText(rep.totalMs, 0.99).c_str());
    std::printf("KV blocks in use: peak %d of %d (%s), preemptions %d, overlapped decode steps %lld\n",
                rep.load.kvBlocksPeak, rep.load.kvBlocksTotal, percentText(rep.load.kvBlocksPeak, rep.load.kvBlocksTotal).c_str(),
                rep.load.preemptions, rep.load.overlappedSteps);
    if (hasEngineSteps(rep.load)) std::printf("engine steps: %s\n", engineStepsText(rep.load).c_str());
}

void printPoisson(const ServingReport& rep, const PoissonOptions& p, int templateMaxNewTokens)
{
    const auto& load = rep.load;
    const double p50 = percentile(rep.totalMs, 0.5);
    std::string tokens = p.newTokensMin > 0 ? std::to_string(p.newTokensMin) + ".." + std::to_string(p.newTokensMax)
                                            : std::to_string(templateMaxNewTokens);
    std::printf("\npoisson stream (open loop, seed %llu, max new tokens %s, images cycled)\n",
                static_cast<unsigned long long>(p.seed), tokens.c_str());
    auto row = [](const char* name, const std::string& value) { std::printf("  %-30s %s\n", name, value.c_str()); };
    char buf[160];
    row("requests", std::to_string(rep.requests));
    std::snprintf(buf, sizeof buf, "%.2f req/s (drawn: %.2f req/s over %.2f s; worst submit lag %.1f ms)", p.rate,
                  realizedRate(rep), rep.submitSeconds, rep.maxSubmitLagMs);
    row("offered rate", buf);
    std::snprintf(buf, sizeof buf, "%.2f req/s (%d finished in %.2f s)", perSecond(rep.finished, rep.spanSeconds),
                  rep.finished, rep.spanSeconds);
    row("achieved throughput", buf);
    row("end-to-end ms p50/p90/p99/max", msText(rep.totalMs, 0.5) + " / " + msText(rep.totalMs, 0.9) + " / " +
                                             msText(rep.totalMs, 0.99) + " / " + msText(rep.totalMs, 1.0));
    std::snprintf(buf, sizeof buf, "%.2f", p50 > 0 ? percentile(rep.totalMs, 0.99) / p50 : 0.0);
    row("p99 / p50", p50 > 0 ? buf : "-");
    row("first token ms p50/p99", msText(rep.firstTokenMs, 0.5) + " / " + msText(rep.firstTokenMs, 0.99));
    row("per token ms p50", msText(rep.perTokenMs, 0.5));
    std::snprintf(buf, sizeof buf, "%.0f tokens/s (%lld tokens)", perSecond(rep.generatedTokens, rep.spanSeconds),
                  static_cast<long long>(rep.generatedTokens));
    row("generated tokens", buf);
    std::snprintf(buf, sizeof buf, "mean %.1f (%s), peak %d (%s) of %d", load.kvBlocksMean,
                  percentText(load.kvBlocksMean, load.kvBlocksTotal).c_str(), load.kvBlocksPeak,
                  percentText(load.kvBlocksPeak, load.kvBlocksTotal).c_str(), load.kvBlocksTotal);
    row("KV blocks in use", buf);
    row("preemptions", std::to_string(load.preemptions));
    row("overlapped decode steps", std::to_string(load.overlappedSteps));
    if (hasEngineSteps(load)) row("engine steps", engineStepsText(load));
    row("failures", std::to_string(rep.failures));
}

// Everything one `bench` run measured, for printJson / printTable.
struct BenchReport {
    engine::EngineInfo info;
    int threads = 0;
    size_t numImages = 0;
    int repeat = 1, warmup = 1, failures = 0, templateMaxNewTokens = 0;
    double loadMs = 0;  // Engine::create: weights, tuning, graphs, warm-up pages
    ServingArgs serving;
    LatencyRun latency;
    std::optional<ServingReport> burst, stream;
};

void printJson(const BenchReport& r)
{
    nlohmann::json j;
    j["model"] = r.info.model;
    j["device"] = r.info.device;
    j["dtype"] = r.info.dtype;
    j["threads"] = r.threads;
    j["load_ms"] = r.loadMs;
    j["images"] = r.numImages;
    j["repeat"] = r.repeat;
    j["failures"] = r.failures;
    for (const auto& st : r.latency.stageOrder) {
        const auto s = statsOf(r.latency.stages.at(st));
        j["stages_ms"][st] = {{"median", s.median}, {"p90", s.p90}, {"mean", s.mean}, {"max", s.max}};
    }
    if (const auto& b = r.burst) {
        j["throughput_img_per_s"] = perSecond(b->finished, b->spanSeconds);
        if (b->generatedTokens > 0) j["generated_tokens_per_s"] = perSecond(b->generatedTokens, b->spanSeconds);
        j["throughput"] = burstJson(*b, r.serving.copies);
    }
    if (r.stream) j["poisson"] = poissonJson(*r.stream, *r.serving.poisson);
    std::cout << j.dump(2) << "\n";
}

void printTable(const BenchReport& r)
{
    std::printf("lector-cli bench: %s on %s (%s), %d threads, %zu images x %d passes (+%d warm-up), loaded in %.0f ms\n",
                r.info.model.c_str(), r.info.device.c_str(), r.info.dtype.c_str(), r.threads, r.numImages, r.repeat,
                r.warmup, r.loadMs);
    if (!r.latency.stageOrder.empty())
        std::printf("\n%-16s %10s %10s %10s %10s\n", "stage", "median ms", "p90 ms", "mean ms", "max ms");
    for (const auto& st : r.latency.stageOrder) {
        const auto s = statsOf(r.latency.stages.at(st));
        std::printf("%-16s %10.1f %10.1f %10.1f %10.1f\n", st.c_str(), s.median, s.p90, s.mean, s.max);
    }
    if (r.burst) printBurst(*r.burst, r.serving.copies, r.numImages, r.repeat);
    if (r.stream) printPoisson(*r.stream, *r.serving.poisson, r.templateMaxNewTokens);
    if (r.failures) std::printf("\n%d requests failed\n", r.failures);
}

}  // namespace

int runBench(const std::vector<std::string>& argv)
{
    auto specs = engineOptionSpecs();
    specs.push_back({"warmup", "N", "warm-up passes over the images, one at a time, not measured (default 1)"});
    specs.push_back({"repeat", "N", "measured passes (default 1)"});
    specs.push_back({"no-throughput", "", "skip the all-at-once throughput run"});
    specs.push_back({"no-latency", "", "skip the measured one-at-a-time passes (warm-up still runs)"});
    specs.push_back({"copies", "N", "throughput run: submit every image N times at once (default 1)"});
    specs.push_back({"warmup-burst", "", "throughput run: one unmeasured burst of the same requests first"});
    specs.push_back({"poisson", "RATE", "then an open-loop stream: Poisson arrivals at RATE requests/s"});
    specs.push_back({"count", "N", "--poisson: requests in the stream, images cycled (default 64)"});
    specs.push_back({"new-tokens-range", "A:B", "--poisson: max new tokens per request, uniform in [A, B] (default --max-new-tokens)"});
    specs.push_back({"arrival-seed", "N", "--poisson: seed of the arrival gaps and new-token draws (default 1)"});
    specs.push_back({"json", "", "print JSON instead of a table"});
    specs.push_back({"results", "FILE", "also write the last measured pass's results as JSON Lines (for scoring)"});
    specs.push_back({"help", "", "show this help"});
    Args args(specs);
    if (auto err = args.parse(argv)) {
        std::fprintf(stderr, "lector-cli bench: %s\n", err->c_str());
        return 2;
    }
    if (args.has("help")) {
        std::printf("usage: lector-cli bench [FILE|DIR]... [options]\n\n%s", args.help().c_str());
        return 0;
    }
    engine::EngineConfig config;
    engine::Request tmpl;
    ServingArgs serving;
    int warmup = 1, repeat = 1;
    if (auto e = engineConfigFromArgs(args, config)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = requestTemplateFromArgs(args, tmpl)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = args.intValue("warmup", 1, 0, 100, warmup)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = args.intValue("repeat", 1, 1, 1000, repeat)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = servingArgsFrom(args, serving)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;

    std::vector<std::string> inputs = args.positional();
    if (inputs.empty()) inputs.push_back((resourcesDir() / "samples").string());
    BenchImages images;
    if (auto rc = loadImages(inputs, images)) return *rc;

    const auto loadStart = std::chrono::steady_clock::now();
    auto engine = engine::Engine::create(config);
    if (!engine.ok()) return std::fprintf(stderr, "lector-cli: %s\n", engine.error().message.c_str()), 3;
    const double loadMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart).count();
    const auto info = (*engine)->info();

    LatencyRun latency = runLatency(**engine, tmpl, images, warmup, args.has("no-latency") ? 0 : repeat);
    int failures = latency.failures;
    std::optional<ServingReport> burst, stream;
    if (!args.has("no-throughput")) {
        // A burst's first sights (the allocator's growth, the first products of its shapes) stay out of
        // the measured one; a burst right after loading pays them.
        if (args.has("warmup-burst")) failures += runBurst(**engine, tmpl, images, repeat, serving.copies).failures;
        burst = runBurst(**engine, tmpl, images, repeat, serving.copies);
        printErrors(*burst);
        failures += burst->failures;
    }
    if (serving.poisson) {
        stream = runPoisson(**engine, tmpl, images, *serving.poisson);
        printErrors(*stream);
        failures += stream->failures;
    }
    (*engine)->shutdown();

    if (args.has("results")) {
        const std::string path = args.value("results");
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        for (const auto& r : latency.lastPass) out << doc::toJsonLine(r) << "\n";
        out.flush();
        if (!out) return std::fprintf(stderr, "lector-cli bench: %s: cannot write the results\n", path.c_str()), 1;
    }

    BenchReport report{info, config.threads, images.size(), repeat, warmup, failures, tmpl.sampling.maxNewTokens, loadMs,
                       serving, std::move(latency), std::move(burst), std::move(stream)};
    if (args.has("json")) printJson(report);
    else printTable(report);
    return failures ? 1 : 0;
}

}  // namespace lector::cli
