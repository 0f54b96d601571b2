// bench_hunyuan_text: CPU timing of the HunyuanOCR text side (prefill ms, ms per decode step).
// Not a test. Default: the tiny fixture model with the receipt_zh prompt and image_embeds from its
// golden file. With --model DIR (e.g. the --size full random model of tools/hunyuan_reference.py) and no
// golden file, the image rows are random and the grid comes from --grid.
//   bench_hunyuan_text [--model DIR] [--golden FILE] [--grid HxW] [--new-tokens N] [--repeats R]
//                      [--threads T] [--penalty P]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/decoder.h"
#include "core/model/hunyuan/generation.h"
#include "core/model/hunyuan/prompt.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/safetensors.h"

#ifndef LECTOR_SOURCE_DIR
#define LECTOR_SOURCE_DIR "."
#endif

using namespace lector::model::hunyuan;
namespace fs = std::filesystem;

namespace {

const std::vector<int> kSpottingPromptIds = {5055, 951, 9977, 12858, 1843, 9738, 270, 934, 8433, 4699, 68216, 8287, 292};

fs::path sharedDir()
{
    if (const char* env = std::getenv("LECTOR_SHARED_DIR")) return env;
    return fs::path(LECTOR_SOURCE_DIR) / ".." / "shared";
}

struct Options {
    fs::path modelDir = sharedDir() / "fixtures/hunyuan/tiny_model";
    fs::path golden = sharedDir() / "fixtures/hunyuan/golden_receipt_zh.safetensors";
    bool goldenGiven = false;
    bool modelGiven = false;
    ImageGrid grid{30, 40};
    int newTokens = 128;
    int repeats = 3;
    int threads = 0;
    float penalty = 1.03f;
};

bool parse(int argc, char** argv, Options& o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (a == "--model" && (v = next())) o.modelDir = v, o.modelGiven = true;
        else if (a == "--golden" && (v = next())) o.golden = v, o.goldenGiven = true;
        else if (a == "--grid" && (v = next())) {
            if (std::sscanf(v, "%dx%d", &o.grid.gridH, &o.grid.gridW) != 2) return false;
        } else if (a == "--new-tokens" && (v = next())) o.newTokens = std::atoi(v);
        else if (a == "--repeats" && (v = next())) o.repeats = std::max(1, std::atoi(v));
        else if (a == "--threads" && (v = next())) o.threads = std::atoi(v);
        else if (a == "--penalty" && (v = next())) o.penalty = static_cast<float>(std::atof(v));
        else return false;
    }
    return true;
}

}  // namespace

int main(int argc, char** argv)
{
    Options opt;
    if (!parse(argc, argv, opt)) {
        std::fprintf(stderr, "usage: %s [--model DIR] [--golden FILE] [--grid HxW] [--new-tokens N] "
                             "[--repeats R] [--threads T] [--penalty P]\n", argv[0]);
        return 2;
    }
    if (opt.threads > 0) at::set_num_threads(opt.threads);
    auto config = loadConfig(opt.modelDir);
    if (!config.ok()) return std::fprintf(stderr, "%s\n", config.error().message.c_str()), 1;
    auto store = WeightStore::open(opt.modelDir);
    if (!store.ok()) return std::fprintf(stderr, "%s\n", store.error().message.c_str()), 1;
    auto decoder = TextDecoder::load(*store, config->text);
    if (!decoder.ok()) return std::fprintf(stderr, "%s\n", decoder.error().message.c_str()), 1;

    // Image rows: the fixture's (tiny model) or random ones for the grid.
    at::Tensor imageEmbeds;
    ImageGrid grid = opt.grid;
    const bool useGolden = opt.goldenGiven || !opt.modelGiven;
    if (useGolden) {
        auto g = lector::model::SafetensorsFile::open(opt.golden);
        if (!g.ok()) return std::fprintf(stderr, "%s\n", g.error().message.c_str()), 1;
        imageEmbeds = (*g)->tensor("image_embeds").clone();
        const at::Tensor thw = (*g)->tensor("image_grid_thw").to(at::kLong);
        grid = ImageGrid{static_cast<int>(thw[0][1].item<int64_t>()), static_cast<int>(thw[0][2].item<int64_t>())};
    } else {
        at::manual_seed(0);
        imageEmbeds = at::randn({imageTokenCount(grid), config->text.hiddenSize});
    }
    auto layout = imagePromptLayout(*config, kSpottingPromptIds, grid);
    if (!layout.ok()) return std::fprintf(stderr, "%s\n", layout.error().message.c_str()), 1;
    PrefillInput in;
    in.ids = layout->ids;
    in.positionIds = layout->positionIds;
    in.imageEmbeds = imageEmbeds;
    in.imageTokenId = config->tokens.image;

    GenerationConfig gen;
    gen.sampling.repetitionPenalty = opt.penalty;
    gen.maxNewTokens = opt.newTokens;
    gen.ignoreEos = true;
    gen.repeatGuard.enabled = false;

    std::printf("model %s: hidden %d, layers %d, heads %d/%d, head_dim %d; prompt %zu tokens (grid %dx%d), "
                "%d new tokens, %d threads\n",
                opt.modelDir.string().c_str(), config->text.hiddenSize, config->text.numLayers,
                config->text.numHeads, config->text.numKvHeads, config->text.headDim, in.ids.size(), grid.gridH,
                grid.gridW, opt.newTokens, at::get_num_threads());
    std::vector<double> prefill, perStep;
    for (int r = 0; r <= opt.repeats; ++r) {  // run 0 warms up
        const std::clock_t cpu0 = std::clock();
        auto res = generate(*decoder, in, gen);
        const double cpuMs = 1000.0 * static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
        if (!res.ok()) return std::fprintf(stderr, "%s\n", res.error().message.c_str()), 1;
        if (r == 0) continue;
        prefill.push_back(res->timings.prefillMs);
        perStep.push_back(res->timings.msPerDecodeStep());
        // CPU time of the process (all threads) shows how much of the wall time a loaded machine took away.
        std::printf("run %d: prefill %.2f ms, decode %.2f ms for %d steps = %.3f ms/step (wall); "
                    "process CPU %.1f ms\n", r, res->timings.prefillMs, res->timings.decodeMs,
                    res->timings.numDecodeSteps, res->timings.msPerDecodeStep(), cpuMs);
    }
    std::sort(prefill.begin(), prefill.end());
    std::sort(perStep.begin(), perStep.end());
    std::printf("median: prefill %.2f ms, %.3f ms per decode step (%.1f tokens/s)\n", prefill[prefill.size() / 2],
                perStep[perStep.size() / 2], 1000.0 / perStep[perStep.size() / 2]);
    return 0;
}
