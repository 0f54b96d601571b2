// lector-cli bench [FILE|DIR]... : per-stage latency over a set of images, one request at a time
// (latency) and then all at once (throughput). Warm-up runs are excluded. Prints a table; --json
// prints the same figures as JSON for scripts under bench/.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "app/cli/batch_runner.h"
#include "app/cli/commands.h"
#include "app/cli/engine_options.h"
#include "app/cli/folder_scan.h"
#include "core/common/paths.h"
#include "core/doc/export_json.h"
#include "core/image/decode.h"

namespace lector::cli {
namespace {

struct Stats {
    double median = 0, p90 = 0, mean = 0, max = 0;
};

Stats statsOf(std::vector<double> v)
{
    Stats s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
        const double pos = q * (v.size() - 1);
        const auto lo = static_cast<size_t>(pos);
        const auto hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (v[hi] - v[lo]) * (pos - lo);
    };
    s.median = at(0.5);
    s.p90 = at(0.9);
    for (double x : v) s.mean += x;
    s.mean /= v.size();
    s.max = v.back();
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

}  // namespace

int runBench(const std::vector<std::string>& argv)
{
    auto specs = engineOptionSpecs();
    specs.push_back({"warmup", "N", "warm-up passes over the images, not measured (default 1)"});
    specs.push_back({"repeat", "N", "measured passes (default 1)"});
    specs.push_back({"no-throughput", "", "skip the all-at-once throughput run"});
    specs.push_back({"no-latency", "", "skip the one-at-a-time latency passes (throughput run only)"});
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
    int warmup = 1, repeat = 1;
    if (auto e = engineConfigFromArgs(args, config)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = requestTemplateFromArgs(args, tmpl)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = args.intValue("warmup", 1, 0, 100, warmup)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;
    if (auto e = args.intValue("repeat", 1, 1, 1000, repeat)) return std::fprintf(stderr, "lector-cli bench: %s\n", e->c_str()), 2;

    std::vector<std::string> inputs = args.positional();
    if (inputs.empty()) inputs.push_back((resourcesDir() / "samples").string());
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
    std::vector<std::pair<std::string, std::shared_ptr<const Image>>> images;
    for (const auto& it : items) {
        auto img = image::decodeImageFile(it.path);
        if (!img.ok()) return std::fprintf(stderr, "lector-cli bench: %s\n", img.error().message.c_str()), 1;
        images.emplace_back(it.name, std::make_shared<const Image>(std::move(img).value()));
    }
    if (images.empty()) return std::fprintf(stderr, "lector-cli bench: no images\n"), 2;

    auto engine = engine::Engine::create(config);
    if (!engine.ok()) return std::fprintf(stderr, "lector-cli: %s\n", engine.error().message.c_str()), 3;
    const auto info = (*engine)->info();

    std::vector<std::string> stageOrder;
    std::map<std::string, std::vector<double>> stages;
    int failures = 0;
    std::vector<doc::OcrResult> lastPass;  // for --results: accuracy of exactly the runs timed here
    const int latencyPasses = args.has("no-latency") ? 0 : warmup + repeat;
    for (int pass = 0; pass < latencyPasses; ++pass) {
        lastPass.clear();
        for (const auto& [name, img] : images) {
            engine::Request req = tmpl;
            req.imageName = name;
            req.image = img;
            auto r = recognizeOne(**engine, std::move(req));
            lastPass.push_back(r);
            if (r.failed()) {
                ++failures;
                std::fprintf(stderr, "lector-cli bench: %s\n", r.error->message.c_str());
                continue;
            }
            if (pass < warmup) continue;
            for (const auto& [stage, ms] : r.timingMs) {
                if (!stages.count(stage)) stageOrder.push_back(stage);
                stages[stage].push_back(ms);
            }
        }
    }

    double throughput = 0, tokensPerSecond = 0;
    if (!args.has("no-throughput")) {
        std::vector<std::future<doc::OcrResult>> futures;
        std::vector<std::shared_ptr<std::promise<doc::OcrResult>>> promises;
        const auto t0 = engine::Clock::now();
        for (int pass = 0; pass < repeat; ++pass) {
            for (const auto& [name, img] : images) {
                auto p = std::make_shared<std::promise<doc::OcrResult>>();
                futures.push_back(p->get_future());
                engine::Request req = tmpl;
                req.imageName = name;
                req.image = img;
                engine::Callbacks cb;
                cb.onFinished = [p](engine::RequestId, doc::OcrResult r) { p->set_value(std::move(r)); };
                if (!(*engine)->submit(std::move(req), std::move(cb)).ok()) futures.pop_back();
            }
        }
        std::int64_t generated = 0;
        for (auto& f : futures) {
            const doc::OcrResult r = f.get();
            if (r.tokens) generated += r.tokens->generated;
            if (r.failed()) ++failures;
        }
        const double s = std::chrono::duration<double>(engine::Clock::now() - t0).count();
        throughput = futures.size() / std::max(s, 1e-9);
        tokensPerSecond = generated / std::max(s, 1e-9);
    }
    (*engine)->shutdown();

    if (args.has("results")) {
        const std::string path = args.value("results");
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        for (const auto& r : lastPass) out << doc::toJsonLine(r) << "\n";
        out.flush();
        if (!out) return std::fprintf(stderr, "lector-cli bench: %s: cannot write the results\n", path.c_str()), 1;
    }

    if (args.has("json")) {
        nlohmann::json j;
        j["model"] = info.model;
        j["device"] = info.device;
        j["dtype"] = info.dtype;
        j["threads"] = config.threads;
        j["images"] = images.size();
        j["repeat"] = repeat;
        j["failures"] = failures;
        for (const auto& st : stageOrder) {
            const auto s = statsOf(stages[st]);
            j["stages_ms"][st] = {{"median", s.median}, {"p90", s.p90}, {"mean", s.mean}, {"max", s.max}};
        }
        j["throughput_img_per_s"] = throughput;
        if (tokensPerSecond > 0) j["generated_tokens_per_s"] = tokensPerSecond;
        std::cout << j.dump(2) << "\n";
    } else {
        std::printf("lector-cli bench: %s on %s (%s), %d threads, %zu images x %d passes (+%d warm-up)\n\n",
                    info.model.c_str(), info.device.c_str(), info.dtype.c_str(), config.threads, images.size(), repeat, warmup);
        std::printf("%-16s %10s %10s %10s %10s\n", "stage", "median ms", "p90 ms", "mean ms", "max ms");
        for (const auto& st : stageOrder) {
            const auto s = statsOf(stages[st]);
            std::printf("%-16s %10.1f %10.1f %10.1f %10.1f\n", st.c_str(), s.median, s.p90, s.mean, s.max);
        }
        if (throughput > 0) std::printf("\nthroughput (all submitted at once): %.2f images/s\n", throughput);
        if (tokensPerSecond > 0) std::printf("generated tokens: %.0f tokens/s\n", tokensPerSecond);
        if (failures) std::printf("\n%d requests failed\n", failures);
    }
    return failures ? 1 : 0;
}

}  // namespace lector::cli
