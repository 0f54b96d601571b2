// ppocr_eval: accuracy / speed driver for the PP-OCR pipeline on an evaluation folder (gt.jsonl +
// images/, e.g. shared/eval-dev/sroie2019-dev). Writes one result per image as JSON Lines in the form
// shared/tools/score.py reads: {"image", "text", "lines": [{"text", "box", "confidence"}], "timing_ms"}.
// Timing per image = decode + detect + recognize + assemble, after one warm-up image. Not installed,
// not a test: a developer tool for tuning PipelineOptions.
//
//   ppocr_eval --data DIR --out FILE.jsonl [--threads 2] [--models DIR] [--limit N]
//              [--det-max-pixels N] [--det-thresh F] [--box-thresh F] [--unclip F] [--drop-score F]
//              [--space-prob F] [--no-spaces] [--no-cls] [--rec-batch N] [--shape-bucket N]
#include <ATen/Parallel.h>

#include <algorithm>
#include <ctime>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/paths.h"
#include "core/image/decode.h"
#include "core/ocr/pipeline.h"

using namespace lector;
namespace fs = std::filesystem;

namespace {

// CPU seconds of this process (all threads): on a shared, loaded machine wall time overstates the
// cost, while CPU time / threads approximates the wall time of an idle machine.
double cpuSeconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double percentile(std::vector<double> v, double q)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

int usage()
{
    std::cerr << "usage: ppocr_eval --data DIR --out FILE.jsonl [--threads N] [--models DIR] [--limit N]\n"
                 "  [--det-max-pixels N] [--det-thresh F] [--box-thresh F] [--unclip F] [--drop-score F]\n"
                 "  [--space-prob F] [--no-spaces] [--no-cls] [--rec-batch N] [--shape-bucket N]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv)
{
    fs::path data, out, models = lector::modelsDir() / "ppocr-v4";
    int threads = 2, limit = 0;
    pipeline::PipelineOptions opt;
    std::map<std::string, std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--no-spaces") opt.recoverSpaces = false;
        else if (a == "--no-cls") opt.useAngleClassifier = false;
        else if (a.rfind("--", 0) == 0 && i + 1 < argc) args[a] = argv[++i];
        else return usage();
    }
    try {
        for (const auto& [k, v] : args) {
            if (k == "--data") data = v;
            else if (k == "--out") out = v;
            else if (k == "--models") models = v;
            else if (k == "--threads") threads = std::stoi(v);
            else if (k == "--limit") limit = std::stoi(v);
            else if (k == "--det-max-pixels") opt.detMaxPixels = std::stoll(v);
            else if (k == "--shape-bucket") opt.shapeBucket = std::stoi(v);
            else if (k == "--det-thresh") opt.detThreshold = std::stof(v);
            else if (k == "--box-thresh") opt.boxThreshold = std::stof(v);
            else if (k == "--unclip") opt.unclipRatio = std::stof(v);
            else if (k == "--drop-score") opt.dropScore = std::stof(v);
            else if (k == "--space-prob") opt.spaceProbThreshold = std::stof(v);
            else if (k == "--rec-batch") opt.recMaxBatch = std::stoi(v);
            else return usage();
        }
    } catch (const std::exception&) {
        return usage();
    }
    if (data.empty() || out.empty()) return usage();
    at::set_num_threads(threads);

    auto loaded = pipeline::PpOcrPipeline::load(models, {}, opt);
    if (!loaded.ok()) {
        std::cerr << loaded.error().code << ": " << loaded.error().message << "\n";
        return 1;
    }
    const pipeline::PpOcrPipeline& ocr = *loaded;

    std::vector<std::string> images;
    std::ifstream gt(data / "gt.jsonl");
    for (std::string line; std::getline(gt, line);)
        if (!line.empty()) images.push_back(nlohmann::json::parse(line).at("image").get<std::string>());
    if (limit > 0 && static_cast<int>(images.size()) > limit) images.resize(static_cast<size_t>(limit));
    if (images.empty()) {
        std::cerr << "no images listed in " << (data / "gt.jsonl") << "\n";
        return 1;
    }

    {  // warm-up (allocator, thread pool, first-call costs), excluded from the timings
        auto img = image::decodeImageFile(data / images[0]);
        if (img.ok()) (void)ocr.run(*img);
    }
    std::ofstream os(out);
    std::vector<double> totals, cpuTotals;
    std::map<std::string, double> stageSums;
    for (const auto& name : images) {
        const auto start = std::chrono::steady_clock::now();
        const double cpuStart = cpuSeconds();
        auto img = image::decodeImageFile(data / name);
        const double decodeMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        nlohmann::json j;
        j["image"] = name;
        if (!img.ok()) {
            j["error"] = {{"code", img.error().code}, {"message", img.error().message}};
            os << j.dump() << "\n";
            continue;
        }
        const doc::OcrResult r = ocr.run(*img);
        const double totalMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const double cpu = cpuSeconds() - cpuStart;
        j["width"] = r.width;
        j["height"] = r.height;
        j["text"] = r.text;
        j["lines"] = nlohmann::json::array();
        for (const auto& l : r.lines)
            j["lines"].push_back({{"text", l.text}, {"box", l.box}, {"confidence", l.confidence.value_or(0.0f)}});
        nlohmann::json timing = {{"decode", decodeMs}};
        for (const auto& [stage, ms] : r.timingMs) {
            if (stage == "total") continue;
            timing[stage] = ms;
            stageSums[stage] += ms;
        }
        stageSums["decode"] += decodeMs;
        timing["total"] = totalMs;
        timing["cpu"] = cpu * 1000.0;
        j["timing_ms"] = timing;
        os << j.dump() << "\n";
        os.flush();
        totals.push_back(totalMs / 1000.0);
        cpuTotals.push_back(cpu);
        std::fprintf(stderr, "%s %dx%d: %zu lines, %.2f s (cpu %.2f s)\n", name.c_str(), r.width, r.height, r.lines.size(),
                     totalMs / 1000.0, cpu);
    }
    std::fprintf(stderr, "images %zu  median %.3f s  p90 %.3f s  max %.3f s\n", totals.size(), percentile(totals, 0.5),
                 percentile(totals, 0.9), percentile(totals, 1.0));
    std::fprintf(stderr, "cpu seconds / %d threads: median %.3f  p90 %.3f  max %.3f\n", threads,
                 percentile(cpuTotals, 0.5) / threads, percentile(cpuTotals, 0.9) / threads, percentile(cpuTotals, 1.0) / threads);
    for (const auto& [stage, ms] : stageSums)
        std::fprintf(stderr, "  %-12s mean %8.1f ms\n", stage.c_str(), ms / static_cast<double>(std::max<size_t>(1, totals.size())));
    return 0;
}
