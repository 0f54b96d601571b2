// bench_hunyuan_vision: milliseconds of HunyuanOCR preprocessing (smart resize + Pillow bicubic +
// patchify) and of the vision encoder (embed, ViT blocks, merger) per image. Not a test.
//
//   bench_hunyuan_vision [--model-dir DIR] [--device cpu|cuda] [--dtype f32|bf16|f16] [--repeat N]
//                        [--synthetic WxH]... [IMAGE]...
//   bench_hunyuan_vision --make-random-model DIR
// Defaults: the fixture model (../shared/fixtures/hunyuan/tiny_model) and the two fixture images.
// --synthetic adds a noise image of that size (e.g. 2048x2048 = 16384 patches, the largest input).
// --make-random-model writes a vision-only checkpoint of the published 1.0 size (27 x 1152, random
// bf16 weights, about 0.9 GB) to DIR, for timing the real shapes without the real weights.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/common/timing.h"
#include "core/image/decode.h"
#include "core/model/hunyuan/config.h"
#include "core/model/hunyuan/preprocess.h"
#include "core/model/hunyuan/vision_tower.h"
#include "core/model/hunyuan/weights.h"
#include "core/model/safetensors.h"

namespace hy = lector::model::hunyuan;
namespace fs = std::filesystem;
using lector::msSince;

namespace {

struct Input {
    std::string name;
    lector::Image image;
};

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

// Random weights with the published shapes (spec §10); std 0.02 keeps activations in a sane range.
int makeRandomModel(const fs::path& dir)
{
    const hy::VisionConfig v;  // the 1.0 defaults
    const hy::TextConfig t;
    fs::create_directories(dir);
    nlohmann::json cfg = {
        {"architectures", {"HunYuanVLForConditionalGeneration"}}, {"model_type", "hunyuan_vl"},
        {"hidden_size", t.hiddenSize}, {"num_hidden_layers", t.numLayers},
        {"num_attention_heads", t.numHeads}, {"num_key_value_heads", t.numKvHeads}, {"head_dim", t.headDim},
        {"intermediate_size", t.intermediateSize}, {"vocab_size", t.vocabSize},
        {"vision_config",
         {{"hidden_size", v.hiddenSize}, {"num_hidden_layers", v.numLayers},
          {"num_attention_heads", v.numHeads}, {"intermediate_size", v.intermediateSize},
          {"patch_size", v.patchSize}, {"spatial_merge_size", v.spatialMergeSize},
          {"out_hidden_size", v.outHiddenSize}, {"max_image_size", v.maxImageSize},
          {"rms_norm_eps", v.layerNormEps}, {"add_patchemb_bias", true}}}};
    std::ofstream(dir / "config.json") << cfg.dump(2);
    const int64_t c = v.hiddenSize, p = v.patchSize, inter = v.intermediateSize, out = v.outHiddenSize;
    const int64_t g = v.posGridSize();
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    auto add = [&](const std::string& name, std::vector<int64_t> shape, bool isNormWeight = false) {
        auto x = isNormWeight ? at::ones(shape) : at::randn(shape) * 0.02;
        tensors.emplace_back(name, x.to(at::kBFloat16).contiguous());
    };
    at::manual_seed(0);
    add("vit.embeddings.patch_embedding.weight", {c, 3, p, p});
    add("vit.embeddings.patch_embedding.bias", {c});
    add("vit.embeddings.position_embedding.weight", {g * g + 1, c});
    for (int i = 0; i < v.numLayers; ++i) {
        const std::string pre = "vit.layers." + std::to_string(i) + ".";
        for (const char* n : {"input_layernorm", "post_attention_layernorm"}) {
            add(pre + n + ".weight", {c}, true);
            add(pre + n + ".bias", {c});
        }
        for (const char* n : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
            add(pre + "self_attn." + n + ".weight", {c, c});
            add(pre + "self_attn." + n + ".bias", {c});
        }
        add(pre + "mlp.dense_h_to_4h.weight", {inter, c});
        add(pre + "mlp.dense_h_to_4h.bias", {inter});
        add(pre + "mlp.dense_4h_to_h.weight", {c, inter});
        add(pre + "mlp.dense_4h_to_h.bias", {c});
    }
    add("vit.perceive.before_rms.weight", {c}, true);
    add("vit.perceive.proj.0.weight", {2 * c, c, 2, 2});
    add("vit.perceive.proj.0.bias", {2 * c});
    add("vit.perceive.proj.2.weight", {4 * c, 2 * c, 1, 1});
    add("vit.perceive.proj.2.bias", {4 * c});
    add("vit.perceive.mlp.weight", {out, 4 * c});
    add("vit.perceive.mlp.bias", {out});
    add("vit.perceive.after_rms.weight", {out}, true);
    for (const char* n : {"image_begin", "image_end", "image_sep"}) add(std::string("vit.perceive.") + n, {out});
    add("vit.perceive.image_newline", {4 * c});
    auto w = lector::model::writeSafetensors(dir / "model.safetensors", tensors);
    if (!w) return std::fprintf(stderr, "%s\n", w.error().message.c_str()), 1;
    std::printf("wrote %s (%zu tensors)\n", dir.string().c_str(), tensors.size());
    return 0;
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
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows appear as they are measured, even through a pipe
    fs::path modelDir = sharedDir() / "fixtures" / "hunyuan" / "tiny_model";
    std::string device = "cpu", dtype = "f32";
    int repeat = 3;
    std::vector<Input> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--make-random-model" && hasValue) return makeRandomModel(argv[++i]);
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
            if (std::getenv("LECTOR_BENCH_STAGES")) {  // where the time goes, stage by stage
                t = std::chrono::steady_clock::now();
                auto e = enc->embed(pre.pixelValues, pre.gridH, pre.gridW);
                (void)e.sum().item<float>();
                const double embedMs = msSince(t);
                t = std::chrono::steady_clock::now();
                auto x = enc->runBlocks(e);
                (void)x.sum().item<float>();
                const double blocksMs = msSince(t);
                t = std::chrono::steady_clock::now();
                (void)enc->merge(x, pre.gridH, pre.gridW).sum().item<float>();
                std::printf("  stages: embed %.1f ms, blocks %.1f ms, merge %.1f ms\n", embedMs, blocksMs,
                            msSince(t));
            }
        }
        const std::string size = std::to_string(pre.resizedWidth) + "x" + std::to_string(pre.resizedHeight);
        std::printf("%-24s %11s %8lld %8lld %12.1f %12.1f\n", in.name.c_str(), size.c_str(),
                    static_cast<long long>(pre.numPatches()),
                    static_cast<long long>(pre.numImageTokens(cfg->vision.spatialMergeSize)), preMs, visMs);
    }
    return 0;
}
