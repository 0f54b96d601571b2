#include "app/cli/engine_options.h"

#include <cstdlib>
#include <thread>

namespace lector::cli {

std::vector<OptionSpec> engineOptionSpecs()
{
    return {
        {"model", "NAME", "ppocr-v4 (default) or hunyuan-ocr"},
        {"model-dir", "DIR", "model folder (default: the fetched PP-OCR models; required for hunyuan-ocr)"},
        {"device", "cpu|cuda", "where the model runs (default cpu)"},
        {"dtype", "TYPE", "float32 | float16 | bfloat16 (default float32 on cpu, float16 on cuda)"},
        {"threads", "N", "CPU threads for inference (default: all cores)"},
        {"preset", "NAME", "text (default), card, invoice, receipt, translate, parse, subtitle, spotting, custom"},
        {"prompt", "TEXT", "custom prompt for prompt-driven models (overrides the preset's)"},
        {"fields", "A,B,..", "fields to extract (card / invoice / receipt presets)"},
        {"language", "LANG", "target language of the translate preset (default English)"},
        {"max-new-tokens", "N", "generation limit of prompt-driven models (default 4096)"},
        {"temperature", "T", "sampling temperature (default 0 = greedy)"},
        {"top-k", "K", "top-k sampling (default off)"},
        {"top-p", "P", "nucleus sampling (default off)"},
        {"repetition-penalty", "R", "repetition penalty (default 1.03, 1 = off)"},
        {"ignore-eos", "", "benchmarks: generate exactly --max-new-tokens (stop ids do not end)"},
        {"kv-cache-tokens", "N", "hunyuan-ocr: KV cache size in tokens (default 16384 on cpu; on cuda from --gpu-memory-utilization)"},
        {"gpu-memory-utilization", "F", "hunyuan-ocr on cuda: fraction of the GPU's memory to fill with weights + KV cache (default 0.9)"},
        {"runner", "NAME", "hunyuan-ocr decoder: auto (fused kernels + CUDA graphs on cuda, reference on cpu), fused (on cpu: scalar kernel references, for tests), reference"},
        {"no-cuda-graphs", "", "hunyuan-ocr on cuda: run decode steps eagerly (for comparison)"},
        {"persistent-decode", "MODE", "hunyuan-ocr on cuda: single-sequence decode steps as one persistent kernel: auto (where it measures faster at load, default), on, off"},
        {"decode-graph-steps", "N", "hunyuan-ocr: decode steps of a lone request per CUDA graph replay (default 8, 1 = one a replay)"},
        {"max-tokens-per-step", "N", "hunyuan-ocr: prefill + decode tokens per engine step (default 8192)"},
        {"vision-images-per-step", "N", "hunyuan-ocr: images through the vision tower per engine step (default 8)"},
        {"retune", "", "hunyuan-ocr on cuda: measure the runner's tuning at load again and keep it for later starts"},
        {"no-load-warmup", "", "on cuda: skip the warm-up pages at load (the first requests pay the first sights)"},
    };
}

namespace {
std::optional<std::string> floatValue(const Args& args, const std::string& name, float& out, float min, float max)
{
    if (!args.has(name)) return std::nullopt;
    const std::string s = args.value(name);
    char* end = nullptr;
    const float v = std::strtof(s.c_str(), &end);
    if (s.empty() || *end != '\0' || v < min || v > max)
        return "--" + name + " expects a number in [" + std::to_string(min) + ", " + std::to_string(max) + "], got '" + s + "'";
    out = v;
    return std::nullopt;
}
}  // namespace

std::optional<std::string> engineConfigFromArgs(const Args& args, engine::EngineConfig& config)
{
    config.model = args.value("model", "ppocr-v4");
    if (config.model != "ppocr-v4" && config.model != "hunyuan-ocr")
        return "--model expects ppocr-v4 or hunyuan-ocr, got '" + config.model + "'";
    config.modelDir = args.value("model-dir");
    if (config.model == "hunyuan-ocr" && config.modelDir.empty()) return "--model hunyuan-ocr needs --model-dir DIR";
    config.device = args.value("device", "cpu");
    if (config.device != "cpu" && config.device != "cuda") return "--device expects cpu or cuda, got '" + config.device + "'";
    config.dtype = args.value("dtype");
    if (!config.dtype.empty() && config.dtype != "float32" && config.dtype != "float16" && config.dtype != "bfloat16")
        return "--dtype expects float32, float16 or bfloat16, got '" + config.dtype + "'";
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (auto e = args.intValue("threads", 0, 0, 1024, config.threads)) return e;
    if (config.threads == 0) config.threads = cores;
    if (auto e = args.intValue("kv-cache-tokens", 0, 16, 1 << 26, config.kvCacheTokens)) return e;
    // (without the option, EngineConfig's defaults stand)
    if (auto e = args.intValue("max-tokens-per-step", config.maxTokensPerStep, 1, 1 << 20, config.maxTokensPerStep)) return e;
    if (auto e = args.intValue("vision-images-per-step", config.maxVisionImagesPerStep, 1, 256, config.maxVisionImagesPerStep)) return e;
    if (auto e = args.intValue("decode-graph-steps", config.decodeGraphSteps, 1, 64, config.decodeGraphSteps)) return e;
    float utilization = static_cast<float>(config.gpuMemoryUtilization);
    if (auto e = floatValue(args, "gpu-memory-utilization", utilization, 0.05f, 0.99f)) return e;
    config.gpuMemoryUtilization = utilization;
    config.hunyuanRunner = args.value("runner", "auto");
    if (config.hunyuanRunner != "auto" && config.hunyuanRunner != "fused" && config.hunyuanRunner != "reference")
        return "--runner expects auto, fused or reference, got '" + config.hunyuanRunner + "'";
    config.cudaGraphs = !args.has("no-cuda-graphs");
    if (args.has("no-load-warmup")) config.warmUpPages = 0;
    if (args.has("retune")) config.retune = true;
    config.persistentDecode = args.value("persistent-decode", "auto");
    if (config.persistentDecode != "auto" && config.persistentDecode != "on" && config.persistentDecode != "off")
        return "--persistent-decode expects auto, on or off, got '" + config.persistentDecode + "'";
    return std::nullopt;
}

std::optional<std::string> requestTemplateFromArgs(const Args& args, engine::Request& request)
{
    request.preset = args.value("preset", "text");
    request.prompt = args.value("prompt");
    if (!request.prompt.empty() && !args.has("preset")) request.preset = "custom";
    request.fieldNames = splitList(args.value("fields"));
    request.targetLanguage = args.value("language", "English");
    auto& s = request.sampling;
    if (auto e = args.intValue("max-new-tokens", s.maxNewTokens, 1, 32768, s.maxNewTokens)) return e;
    if (auto e = args.intValue("top-k", 0, 0, 1000000, s.topK)) return e;
    if (auto e = floatValue(args, "temperature", s.temperature, 0.0f, 100.0f)) return e;
    if (auto e = floatValue(args, "top-p", s.topP, 0.0f, 1.0f)) return e;
    if (auto e = floatValue(args, "repetition-penalty", s.repetitionPenalty, 0.01f, 100.0f)) return e;
    s.ignoreEos = args.has("ignore-eos");
    return std::nullopt;
}

std::vector<std::string> splitList(const std::string& s)
{
    std::vector<std::string> out;
    std::string cur;
    auto flush = [&] {
        const auto b = cur.find_first_not_of(" \t");
        const auto e = cur.find_last_not_of(" \t");
        if (b != std::string::npos) out.push_back(cur.substr(b, e - b + 1));
        cur.clear();
    };
    for (char c : s) {
        if (c == ',') flush();
        else cur.push_back(c);
    }
    flush();
    return out;
}

}  // namespace lector::cli
