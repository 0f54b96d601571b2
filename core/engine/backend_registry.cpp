// The one table of model families the engine can run (docs/style.md §6.8: one registration point).
#include "core/engine/backend.h"
#include "core/engine/hunyuan_backend.h"
#include "core/engine/ppocr_backend.h"

namespace lector::engine {
namespace {

struct BackendEntry {
    const char* name;
    Result<std::unique_ptr<Backend>> (*create)(const EngineConfig&);
};

constexpr BackendEntry kBackends[] = {
    {"ppocr-v4", &PpOcrBackend::create},
    {"hunyuan-ocr", &HunyuanBackend::create},
};

}  // namespace

Result<std::unique_ptr<Backend>> createBackend(const EngineConfig& config)
{
    for (const auto& b : kBackends)
        if (config.model == b.name) return b.create(config);
    std::string known;
    for (const auto& b : kBackends) known += std::string(known.empty() ? "" : ", ") + b.name;
    return makeError("bad_config", "unknown model '" + config.model + "' (known: " + known + ")");
}

}  // namespace lector::engine
