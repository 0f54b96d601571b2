// bench_hunyuan_vision: milliseconds of HunyuanOCR preprocessing (smart resize + Pillow bicubic +
// patchify) and of the vision encoder (embed, ViT blocks, merger) per image. Not a test.
//
//   bench_hunyuan_vision [--model-dir DIR] [--device cpu|cuda] [--dtype f32|bf16|f16] [--repeat N]
//                        [--synthetic WxH]... [IMAGE]...
// Defaults: the fixture model (../shared/fixtures/hunyuan/tiny_model) and the two fixture images.
// --synthetic adds a noise image of that size (e.g. 2048x2048 = 16384 patches, the largest input).
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/image/decode.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/safetensors.h"

namespace hy = lector::model::hunyuan;
namespace fs = std::filesystem;

namespace {

struct Input {
    std::string name;
    lector::Image image;
};

double msSince(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

fs::path sharedDir()
{
    if (const char* env = std::getenv("LECTOR_SHARED_DIR")) return env;
    return fs::path(LECTOR_SOURCE_DIR) / ".." / "shared";
}

// A fixture image: decoded from its PNG, or (builds without a decoder) the reference's resized pixels.
bool loadFixtureImage(const std::string& stem, Input& out)
{
    const auto dir = sharedDir() / "fixtures" / "hunyuan";
    if (lector::image::imageDecodingAvailable()) {
        auto img = lector::image::decodeImageFile(dir / (stem + ".png"));
        if (!img) return std::fprintf(stderr, "%s\n", img.error().message.c_str()), false;
        out = {stem, std::move(*img)};
        return true;
    }
    auto f = lector::model::SafetensorsFile::open(dir / ("golden_" + stem + ".safetensors"));
    if (!f) return std::fprintf(stderr, "%s\n", f.error().message.c_str()), false;
    const auto rgb = (*f)->tensor("resized_rgb").contiguous();
    lector::Image img(static_cast<int>(rgb.size(1)), static_cast<int>(rgb.size(0)));
    std::memcpy(img.rgb.data(), rgb.data_ptr<std::uint8_t>(), img.rgb.size());
    out = {stem + " (pre-resized)", std::move(img)};
    return true;
}

lector::Image noiseImage(int w, int h)
{
    lector::Image img(w, h);
    std::mt19937 rng(7);
    for (auto& v : img.rgb) v = static_cast<std::uint8_t>(rng());
    return img;
}

at::ScalarType parseDtype(const std::string& s)
{
    if (s == "bf16") return at::kBFloat16;
    if (s == "f16") return at::kHalf;
    return at::kFloat;
}

}  // namespace

int main(int argc, char** argv)
{
    fs::path modelDir = sharedDir() / "fixtures" / "hunyuan" / "tiny_model";
    std::string device = "cpu", dtype = "f32";
    int repeat = 3;
    std::vector<Input> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--model-dir" && hasValue) modelDir = argv[++i];
        else if (a == "--device" && hasValue) device = argv[++i];
        else if (a == "--dtype" && hasValue) dtype = argv[++i];
        else if (a == "--repeat" && hasValue) repeat = std::max(1, std::atoi(argv[++i]));
        else if (a == "--synthetic" && hasValue) {
            int w = 0, h = 0;
            if (std::sscanf(argv[++i], "%dx%d", &w, &h) != 2 || w <= 0 || h <= 0)
                return std::fprintf(stderr, "bad --synthetic size %s\n", argv[i]), 2;
            inputs.push_back({"noise " + std::string(argv[i]), noiseImage(w, h)});
        } else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr, "usage: %s [--model-dir DIR] [--device cpu|cuda] [--dtype f32|bf16|f16] "
                                 "[--repeat N] [--synthetic WxH]... [IMAGE]...\n", argv[0]);
            return 2;
        } else {
            auto img = lector::image::decodeImageFile(a);
            if (!img) return std::fprintf(stderr, "%s\n", img.error().message.c_str()), 1;
            inputs.push_back({fs::path(a).filename().string(), std::move(*img)});
        }
    }
    if (inputs.empty()) {
        for (const char* stem : {"receipt_zh", "doc_en"}) {
            Input in;
            if (!loadFixtureImage(stem, in)) return 1;
            inputs.push_back(std::move(in));
        }
    }

    const auto t0 = std::chrono::steady_clock::now();
    auto cfg = hy::loadConfig(modelDir);
    if (!cfg) return std::fprintf(stderr, "%s\n", cfg.error().message.c_str()), 1;
    auto ws = hy::WeightStore::open(modelDir);
    if (!ws) return std::fprintf(stderr, "%s\n", ws.error().message.c_str()), 1;
    const at::Device dev(device == "cuda" ? at::kCUDA : at::kCPU);
    auto enc = hy::VisionEncoder::load(*ws, *cfg, parseDtype(dtype), dev);
    if (!enc) return std::fprintf(stderr, "%s\n", enc.error().message.c_str()), 1;
    std::printf("model %s: vision %d layers x %d wide, load %.1f ms, %s %s, %d intra-op threads\n",
                modelDir.string().c_str(), cfg->vision.numLayers, cfg->vision.hiddenSize, msSince(t0),
                device.c_str(), dtype.c_str(), at::get_num_threads());
    std::printf("%-24s %11s %8s %8s %12s %12s\n", "image", "resized", "patches", "tokens", "preproc ms",
                "vision ms");

    c10::InferenceMode guard;
    for (const auto& in : inputs) {
        double preMs = 1e30, visMs = 1e30;
        hy::PreprocessedImage pre;
        for (int r = 0; r < repeat; ++r) {  // best of N: the least disturbed run
            auto t = std::chrono::steady_clock::now();
            auto p = hy::preprocessImage(in.image, cfg->preprocess);
            if (!p) return std::fprintf(stderr, "%s: %s\n", in.name.c_str(), p.error().message.c_str()), 1;
            preMs = std::min(preMs, msSince(t));
            pre = std::move(*p);
            t = std::chrono::steady_clock::now();
            auto out = enc->encode(pre);
            (void)out.sum().item<float>();  // waits for the device
            visMs = std::min(visMs, msSince(t));
        }
        const std::string size = std::to_string(pre.resizedWidth) + "x" + std::to_string(pre.resizedHeight);
        std::printf("%-24s %11s %8lld %8lld %12.1f %12.1f\n", in.name.c_str(), size.c_str(),
                    static_cast<long long>(pre.numPatches()),
                    static_cast<long long>(pre.numImageTokens(cfg->vision.spatialMergeSize)), preMs, visMs);
    }
    return 0;
}
