// Timings of onnx::Graph on the PP-OCR graphs at 2 threads: det on a 960x960 input, rec on a batch
// of 8 crops of 48x320, cls on a batch of 8. Prints medians and the per-operator split; label bench
// (not in the default run). Set LECTOR_ONNX_BENCH_RUNS to change the number of timed runs.
#include "tests/support/lector_test.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "core/model/onnx/graph.h"
#include "core/model/safetensors.h"
#include "tests/model/tst_onnx_util.h"

using lector::model::onnx::Graph;
namespace fs = std::filesystem;

namespace {

int numRuns()
{
    const char* env = std::getenv("LECTOR_ONNX_BENCH_RUNS");
    return env ? std::max(1, std::atoi(env)) : 10;
}

Graph load(const std::string& file, bool optimize = true)
{
    lector::model::onnx::LoadOptions options;
    options.optimize = optimize;
    const auto start = std::chrono::steady_clock::now();
    auto g = lector::test::onnx::loadPpocrGraph(file, options);
    std::printf("  load %s%s: %.1f ms, %zu steps\n", file.c_str(), optimize ? "" : " (plain)",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(), g.numSteps());
    return g;
}

// CPU time of the whole process: on a shared, loaded machine it moves much less than wall time.
double cpuMs()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double timeRuns(const Graph& g, const at::Tensor& x, const char* label)
{
    for (int i = 0; i < 2; ++i) g.run({x});  // warm-up: oneDNN primitive caches, allocator
    std::vector<double> ms, cpu;
    for (int i = 0, n = numRuns(); i < n; ++i) {
        const auto start = std::chrono::steady_clock::now();
        const double cpuStart = cpuMs();
        g.run({x});
        cpu.push_back(cpuMs() - cpuStart);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    std::printf("  %-34s median %8.2f ms   min %8.2f ms   cpu median %8.2f ms   (%zu runs)\n", label, ms[ms.size() / 2],
                ms.front(), cpu[cpu.size() / 2], ms.size());
    return ms[ms.size() / 2];
}

void printProfile(Graph& g, const at::Tensor& x)
{
    g.setProfiling(true);
    g.run({x});
    for (const auto& t : g.profile()) std::printf("      %-22s %4lld calls %8.2f ms\n", t.opType.c_str(), static_cast<long long>(t.calls), t.ms);
    g.setProfiling(false);
}

at::Tensor lineBatch(int64_t n, int64_t width)
{
    auto f = lector::model::SafetensorsFile::open(lector::test::fixture("fixtures/ppocr/ppocr_receipt_zh.safetensors"));
    LECTOR_CHECK(f.ok());
    std::vector<at::Tensor> crops;
    for (int64_t i = 0; (*f)->contains("rec_input_bgr_u8_" + std::to_string(i)) && static_cast<int64_t>(crops.size()) < n; ++i) {
        auto x = (*f)->tensor("rec_input_bgr_u8_" + std::to_string(i)).to(at::kFloat).div(127.5).sub(1.0).permute({2, 0, 1});
        x = x.size(2) >= width ? x.narrow(2, 0, width) : at::constant_pad_nd(x, {0, width - x.size(2)}, 0.0);
        crops.push_back(x);
    }
    while (static_cast<int64_t>(crops.size()) < n) crops.push_back(crops[crops.size() % 2].flip(2));
    return at::stack(crops).contiguous();  // [n, 3, 48, width]
}

}  // namespace

LECTOR_TEST(benchmarkPpocrGraphsAtTwoThreads)
{
    at::set_num_threads(2);
    std::printf("threads %d, oneDNN %s\n", at::get_num_threads(), at::hasMKLDNN() ? "yes" : "no");
    auto f = lector::model::SafetensorsFile::open(lector::test::fixture("fixtures/ppocr/ppocr_doc_en.safetensors"));
    LECTOR_CHECK(f.ok());
    auto img = (*f)->tensor("det_input_bgr_u8").to(at::kFloat).permute({2, 0, 1}).unsqueeze(0);
    auto det960 = at::upsample_bilinear2d(img, {960, 960}, false).div(255.0f);
    det960 = det960.sub(at::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1})).div(at::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1})).contiguous();
    auto rec8 = lineBatch(8, 320);
    auto cls8 = lineBatch(8, 192);

    Graph det = load("ch_PP-OCRv4_det_infer.onnx");
    Graph rec = load("ch_PP-OCRv4_rec_infer.onnx");
    Graph cls = load("ch_ppocr_mobile_v2.0_cls_infer.onnx");
    timeRuns(det, det960, "det [1,3,960,960]");
    printProfile(det, det960);
    timeRuns(rec, rec8, "rec [8,3,48,320]");
    printProfile(rec, rec8);
    timeRuns(rec, rec8.narrow(0, 0, 1).contiguous(), "rec [1,3,48,320]");
    timeRuns(cls, cls8, "cls [8,3,48,192]");
    if (const char* dump = std::getenv("LECTOR_ONNX_BENCH_DUMP")) {  // the same inputs for other runtimes
        auto w = lector::model::writeSafetensors(dump, {{"det", det960}, {"rec", rec8}, {"cls", cls8}});
        LECTOR_CHECK(w.ok());
    }
    if (at::hasCUDA()) {
        lector::model::onnx::LoadOptions options;
        options.device = at::Device(at::kCUDA, 0);
        options.dtype = at::kHalf;
        auto load = [&](const char* file) { return lector::test::onnx::loadPpocrGraph(file, options); };
        Graph detHalf = load("ch_PP-OCRv4_det_infer.onnx"), recHalf = load("ch_PP-OCRv4_rec_infer.onnx");
        // Outputs come back to the CPU inside the timing, as the pipeline needs them there.
        auto timeCuda = [&](const Graph& g, const at::Tensor& x, const char* label) {
            auto xc = x.to(options.device);
            for (int i = 0; i < 3; ++i) g.run({xc}).at(0).cpu();
            std::vector<double> ms;
            for (int i = 0; i < 20; ++i) {
                const auto start = std::chrono::steady_clock::now();
                g.run({xc}).at(0).cpu();
                ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
            }
            std::sort(ms.begin(), ms.end());
            std::printf("  %-34s median %8.3f ms   min %8.3f ms\n", label, ms[ms.size() / 2], ms.front());
        };
        timeCuda(detHalf, det960, "cuda fp16 det [1,3,960,960]");
        timeCuda(recHalf, rec8, "cuda fp16 rec [8,3,48,320]");
        timeCuda(recHalf, rec8.narrow(0, 0, 1).contiguous(), "cuda fp16 rec [1,3,48,320]");
    }
    if (std::getenv("LECTOR_ONNX_BENCH_PLAIN")) {
        Graph detPlain = load("ch_PP-OCRv4_det_infer.onnx", false);
        Graph recPlain = load("ch_PP-OCRv4_rec_infer.onnx", false);
        timeRuns(detPlain, det960, "det plain (no load-time rewrites)");
        timeRuns(recPlain, rec8, "rec plain (no load-time rewrites)");
    }
}
